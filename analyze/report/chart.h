/* chart.h — memory over time as SVG charts (`chart`, `series --svg`). */
#ifndef VHEAP_CHART_H
#define VHEAP_CHART_H

#include "analyze/query/series.h"

/* Draws `s` into `path` (memory by stack, RSS, marks) and into
 * PATH-allocs.svg (calls per interval), and says so on stderr. Errors are
 * printed as command `cmd`'s. Returns 0 or -errno. */
int vh_series_draw(const char *cmd, const struct vh_series *s, const char *path);

#endif
