/* report/frag_chart.h — fragmentation over time as an SVG chart (`frag
 * --series --svg`; frag_chart.c). */
#ifndef VHEAP_FRAG_CHART_H
#define VHEAP_FRAG_CHART_H

#include "analyze/query/frag_run.h"

/* Draws the n points of `run` (pages of page_size bytes) into `path` and
 * says so on stderr. 0 or -errno, printed as run->cmd's. */
int frag_chart__write(const struct frag_run *run, uint64_t page_size, const struct frag_point *p,
                      size_t n, const char *path);

#endif
