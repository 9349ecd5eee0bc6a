/* owner_frag.h — fragmentation by owner (`frag --by owner`): at an
 * ownership snapshot, how each owner's blocks lie in pages: pages touched,
 * their occupancy by the owner's usable bytes, pages shared with other
 * owners, and slack. Computed from owned_blocks in address order. */
#ifndef VHEAP_OWNER_FRAG_H
#define VHEAP_OWNER_FRAG_H

#include <sqlite3.h>
#include <stdint.h>

#include "analyze/render/output.h"

/* Renders the "owners" rows of snapshot `snapshot` (0: the last) into out,
 * most pages first, at most `limit` (0: all). 0, or -errno printed with
 * `cmd` (-EINVAL: no snapshot). */
int vh_owner_frag(const char *cmd, sqlite3 *db, int64_t snapshot, uint64_t page_size,
                  int64_t limit, struct out *out);

#endif
