/* series.h — `series` and `chart` are one command with two outputs:
 * `chart` is `series` that writes only the charts (cmd/series.c). */
#ifndef VHEAP_CMD_SERIES_H
#define VHEAP_CMD_SERIES_H

#include "analyze/cmd/cli.h"

enum vh_series_mode {
    VH_SERIES_TABLE,      /* `series`: rows on stdout, charts with --svg     */
    VH_SERIES_CHART,      /* `chart`: charts only, -o FILE                   */
};

/* Runs `series` or `chart` (argv[0] is the command's name); an exit code. */
int vh_series_main(const struct vh_command *cmd, enum vh_series_mode mode, int argc,
                   char **argv);

#endif
