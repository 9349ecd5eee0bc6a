/* query/frag_rows.h — frag's numbers as rows of render/output.h
 * (frag_rows.c): what `frag` prints in table, JSON or CSV. */
#ifndef VHEAP_FRAG_ROWS_H
#define VHEAP_FRAG_ROWS_H

#include "analyze/query/frag_run.h"
#include "analyze/render/output.h"

/* One moment: the summary, regions (sorted in place, largest first), hole
 * sizes, size classes and stacks, at most `limit` regions and stacks (0:
 * all) of `depth` frames (0: all). 0 or -errno, printed. */
int frag_rows__moment(const struct frag_run *run, const struct frag_opts *fo,
                      const struct frag_moment *m, int64_t limit, int64_t depth, struct out *o);

/* The points over time, one row each, after a section `replay` with the
 * events the replay could not apply when there were any. 0 or -errno,
 * printed. */
int frag_rows__series(const struct frag_run *run, const struct frag_opts *fo,
                      const struct frag_point *pts, size_t npts,
                      const struct frag_misses *miss, struct out *o);

#endif
