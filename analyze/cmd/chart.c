/* cmd/chart.c — `vheap-analyze chart`: `series` that writes only the
 * charts (cmd/series.h); the drawing is report/chart.c. */
#include "analyze/cmd/cli.h"
#include "analyze/cmd/series.h"

static const char usage[] =
    "usage: vheap-analyze chart [OPTIONS] DB|CAPTURE -o FILE.svg\n"
    "\n"
    "Draws heap memory over time for a web browser: FILE.svg shows the consumed\n"
    "(live) bytes as a stacked area of the top stacks plus all others, RSS as a\n"
    "line and marks (vheap_mark) as labelled vertical lines; FILE-allocs.svg\n"
    "shows allocation calls (temporary ones apart) above the axis and frees\n"
    "below it, per interval. Hovering over an area shows its whole stack.\n"
    "Charts are 1200x600; a long run is drawn at about one point per pixel.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE  the memory chart; the calls chart goes beside it\n"
    "  --interval T       100ms, 1s, 250us, or 'event' (default: a few hundred\n"
    "                     points)\n"
    "  --top N            stacks drawn on their own (default 5, at most 100;\n"
    "                     12 colours, then they repeat)\n"
    "  --by MEASURE       how they are chosen: peak (default), max-live,\n"
    "                     allocations, bytes, leaked\n"
    "  --from T, --to T   only this window of time since the program started\n"
    "  --heap NAME        only this heap ('malloc' is the system allocator)\n"
    "  -h, --help         this text\n"
    "\n"
    "`vheap-analyze series DB --svg FILE` draws the same and prints the numbers.\n"
    "\n"
    "examples:\n"
    "  vheap-analyze chart run.sqlite -o mem.svg\n"
    "  vheap-analyze chart run.sqlite -o mem.svg --top 8 --by max-live\n"
    "  vheap-analyze chart run.sqlite -o zoom.svg --from 1.2s --to 1.3s --interval 1ms\n"
    "  vheap-analyze chart vheap.myprog.1234.vhcap -o loom.svg --heap loom\n";

static int run(int argc, char **argv);

VH_COMMAND(cmd_chart, {
    .name = "chart",
    .summary = "draw memory over time by stack, RSS and marks as SVG charts",
    .usage = usage,
    .run = run,
    .order = 61,
});

static int run(int argc, char **argv)
{
    return vh_series_main(&cmd_chart, VH_SERIES_CHART, argc, argv);
}
