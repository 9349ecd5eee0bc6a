/* reach.h — the reachability scan's records (REACH, REACH_END) as the
 * loader collects them: each classified block's class by address, and the
 * scan's totals for the `reach` table. */
#ifndef VHEAP_LOAD_REACH_H
#define VHEAP_LOAD_REACH_H

#include <sqlite3.h>
#include <stdint.h>

#include "common/capture_format.h"

struct reach {
    uint64_t *entry;               /* address | class, sorted once ended   */
    size_t n, cap;
    int ended;                     /* a REACH_END was read                 */
    struct vh_rec_reach_end end;
};

/* A REACH record of `size` bytes: its entries kept. 0 or -ENOMEM; a record
 * shorter than its count says is skipped (-EINVAL). */
int reach__add(struct reach *r, const struct vh_rec_reach *rec, size_t size);
/* A REACH_END: the totals kept, the entries sorted for reach__class. */
void reach__end(struct reach *r, const struct vh_rec_reach_end *rec);
/* The class (enum vh_reach_class) of the system-heap block at addr, or -1:
 * no complete scan, or the block was not in it. */
int reach__class(const struct reach *r, uint64_t addr);
/* The `reach` row, if the capture had a scan. 0 or an SQLite error code. */
int reach__write(const struct reach *r, sqlite3 *db);
void reach__free(struct reach *r);

#endif
