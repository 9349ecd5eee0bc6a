/* cmd/frag.c — `vheap-analyze frag`: why the heap takes more memory than its
 * live blocks (docs/fragmentation.md). One moment in detail (--at), the
 * headline numbers over time (--series), or a picture of one heap's
 * address space (--map). Here: the options and the calls. The run is read
 * by query/frag_run.c, replayed over time by query/frag_series.c, its
 * numbers computed by query/frag.c and printed by query/frag_rows.c; the
 * pictures are report/frag_heap_map.c's and report/frag_chart.c's. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/size_parse.h"
#include "analyze/cmd/cli.h"
#include "analyze/cmd/query.h"
#include "analyze/query/frag_rows.h"
#include "analyze/query/frag_run.h"
#include "analyze/report/frag_chart.h"
#include "analyze/report/frag_map.h"

static const char usage[] =
    "usage: vheap-analyze frag [OPTIONS] DB|CAPTURE\n"
    "\n"
    "Fragmentation of the live blocks at one moment: internal slack (usable -\n"
    "requested bytes) in total, by requested size and by stack; page occupancy\n"
    "(pages touched, their utilization, sparse pages and the free bytes they pin,\n"
    "charged to the stacks of the blocks keeping them); holes between blocks in\n"
    "each heap region (a custom heap's bounds, or runs of system-heap blocks):\n"
    "free bytes, largest hole, external fragmentation 1 - largest/free, hole\n"
    "sizes, what compaction would reclaim; and RSS against live bytes.\n"
    "docs/fragmentation.md defines every number.\n"
    "\n"
    "options:\n"
    "  --at WHEN        end (default: the last event), peak (the largest peak of\n"
    "                   the heaps chosen), a time since start (1.5s, 200ms; a bare\n"
    "                   number is seconds) or mark:LABEL (the first vheap_mark\n"
    "                   with that label)\n"
    VH_HELP_HEAP
    "  --page-size P    page size for occupancy: 4KiB (default) or 2MiB (any\n"
    "                   power of two)\n"
    "  --sparse PCT     a page is sparse below PCT % occupied (default 25)\n"
    "  --min-hole SIZE  narrower gaps are allocator overhead, not holes (default\n"
    "                   32 for heaps without bounds, 1 with bounds)\n"
    "  --cluster-gap SIZE  heaps without bounds: a wider gap between blocks\n"
    "                   starts a new region (default 1MiB)\n"
    "  --series         the headline numbers over time instead, one row per\n"
    "                   interval (replayed from the event stream)\n"
    "  --interval T     --series: interval length (default: about 200 rows)\n"
    "  --from T, --to T --series: only this window\n"
    "  --svg FILE       --series: also draw live bytes, slack, free-but-unusable\n"
    "                   bytes, footprint and RSS over time\n"
    "  --map FILE       also draw one heap's address space at --at (the first\n"
    "                   heap chosen with live blocks; pick one with --heap)\n"
    "  --color BY       --map: colour blocks by stack (default) or age\n"
    "  --limit N        at most N stacks and regions (default 10; 0 = all)\n"
    VH_HELP_DEPTH
    "  --format FMT     table (default), json or csv (csv: the stacks, or the\n"
    "                   series rows)\n"
    VH_HELP_BYTES_HELP
    "\n"
    "A sampled capture (VHEAP_SAMPLE) is refused (exit 1): holes and page use\n"
    "depend on where every block lies, which a sample of blocks does not say.\n"
    "\n"
    "examples:\n"
    "  vheap-analyze frag run.sqlite\n"
    "  vheap-analyze frag run.sqlite --at peak --page-size 2MiB\n"
    "  vheap-analyze frag run.sqlite --heap loom --at 'mark:pack end' --map loom.svg\n"
    "  vheap-analyze frag run.sqlite --series --interval 100ms --svg frag.svg\n"
    "  vheap-analyze frag run.sqlite --format json | jq '.frag.external_fragmentation_pct'\n";

static int run(int argc, char **argv);

VH_COMMAND(cmd_frag, {
    .name = "frag",
    .summary = "fragmentation: slack, sparse pages, holes, footprint (--series, --map)",
    .usage = usage,
    .run = run,
    .order = 55,
});

/* ---- options ------------------------------------------------------------ */

struct fopts {
    struct vh_query q;
    const char *at;
    struct frag_opts fo;
    int series, has_from, has_to, by_age;
    uint64_t interval, from, to;
    const char *svg, *map;
};

/* "4096", "4KiB", "2MiB", "1M" (1000-based without the i, as elsewhere). */
static int parse_size(const char *s, uint64_t *out)
{
    return vh_parse_size(s, 1, UINT64_MAX / 2, out) ? -EINVAL : 0;
}

/* Parses argv into o->q (this command's options and the shared ones). */
static int parse_opts(const struct vh_command *cmd, int argc, char **argv, struct fopts *o)
{
    enum { V_AT, V_PAGE, V_SPARSE, V_MINHOLE, V_GAP, V_INTERVAL, V_FROM, V_TO, V_SVG, V_MAP,
           V_COLOR, V_N };
    const char *val[V_N] = { 0 };
    const struct vh_opt own[] = {
        VH_OPT_FLAG("--series", &o->series),
        VH_OPT_VALUE("--at", &val[V_AT]),           VH_OPT_VALUE("--page-size", &val[V_PAGE]),
        VH_OPT_VALUE("--sparse", &val[V_SPARSE]),   VH_OPT_VALUE("--min-hole", &val[V_MINHOLE]),
        VH_OPT_VALUE("--cluster-gap", &val[V_GAP]), VH_OPT_VALUE("--interval", &val[V_INTERVAL]),
        VH_OPT_VALUE("--from", &val[V_FROM]),       VH_OPT_VALUE("--to", &val[V_TO]),
        VH_OPT_VALUE("--svg", &val[V_SVG]),         VH_OPT_VALUE("--map", &val[V_MAP]),
        VH_OPT_VALUE("--color", &val[V_COLOR]),
    };
    uint64_t v;
    int rc;

    memset(o, 0, sizeof *o);
    frag_opts__default(&o->fo);
    if ((rc = vh_query__parse(&o->q, cmd, 0, VH_OPTS(own), argc, argv)))
        return rc;
    o->at = val[V_AT];
    if (o->at && strcmp(o->at, "end") && strcmp(o->at, "peak") && strncmp(o->at, "mark:", 5) &&
        vh_parse_time(o->at, &v)) {
        return vh_query__usage(&o->q, "--at: '%s' is not end, peak, mark:LABEL or a time like 1.5s",
                               o->at);
    }
    if (val[V_PAGE] && (parse_size(val[V_PAGE], &v) || v < 256 || v > (1ull << 30) ||
                        (v & (v - 1)))) {
        return vh_query__usage(&o->q,
                               "--page-size: '%s' is not a power of two from 256 B to 1 GiB, "
                               "like 4KiB or 2MiB",
                               val[V_PAGE]);
    } else if (val[V_PAGE]) {
        o->fo.page_size = v;
    }
    if (val[V_SPARSE]) {
        char *end;
        errno = 0;
        unsigned long p = strtoul(val[V_SPARSE], &end, 10);
        if (errno || end == val[V_SPARSE] || (*end && strcmp(end, "%")) || p > 100 ||
            *val[V_SPARSE] == '-') {
            return vh_query__usage(&o->q, "--sparse: '%s' is not a percentage from 0 to 100",
                                   val[V_SPARSE]);
        }
        o->fo.sparse_pct = (unsigned)p;
    }
    if (val[V_MINHOLE] && (parse_size(val[V_MINHOLE], &o->fo.min_hole) || !o->fo.min_hole)) {
        return vh_query__usage(&o->q, "--min-hole: '%s' is not a size of at least 1 byte",
                               val[V_MINHOLE]);
    }
    if (val[V_GAP] && parse_size(val[V_GAP], &o->fo.cluster_gap)) {
        return vh_query__usage(&o->q, "--cluster-gap: '%s' is not a size like 1MiB", val[V_GAP]);
    }
    if (val[V_INTERVAL] && (vh_parse_time(val[V_INTERVAL], &o->interval) || !o->interval)) {
        return vh_query__usage(&o->q, "--interval: '%s' is not a duration like 100ms, 1s or 250us",
                               val[V_INTERVAL]);
    }
    if (val[V_FROM] && vh_parse_time(val[V_FROM], &o->from)) {
        return vh_query__usage(&o->q, "--from: '%s' is not a time like 1.5s or 200ms", val[V_FROM]);
    }
    if (val[V_TO] && vh_parse_time(val[V_TO], &o->to)) {
        return vh_query__usage(&o->q, "--to: '%s' is not a time like 1.5s or 200ms", val[V_TO]);
    }
    o->has_from = !!val[V_FROM];
    o->has_to = !!val[V_TO];
    o->svg = val[V_SVG];
    o->map = val[V_MAP];
    if (val[V_COLOR]) {
        if (!strcmp(val[V_COLOR], "age")) {
            o->by_age = 1;
        } else if (strcmp(val[V_COLOR], "stack")) {
            return vh_query__usage(&o->q, "--color: '%s' is not stack or age", val[V_COLOR]);
        }
    }
    if (o->series && (o->at || o->map)) {
        return vh_query__usage(&o->q,
                               "--series shows a time range: --at and --map are for one moment");
    }
    if (!o->series && (o->svg || val[V_INTERVAL] || o->has_from || o->has_to)) {
        return vh_query__usage(&o->q, "--svg, --interval, --from and --to go with --series");
    }
    if (o->has_from && o->has_to && o->to <= o->from) {
        return vh_query__usage(&o->q, "--to must be after --from");
    }
    if (val[V_COLOR] && !o->map) {
        return vh_query__usage(&o->q, "--color goes with --map");
    }
    return 0;
}

/* ---- the command ------------------------------------------------------------ */

static int run_moment(struct fopts *o, const struct frag_run *run)
{
    struct frag_moment m;
    int rc = frag_run__moment(run, o->at, &o->fo, &m);
    if (!rc && o->map)
        rc = frag_map__moment(run, &m, o->by_age, o->map);
    if (!rc) {
        struct out *out = vh_query__take_out(&o->q);
        rc = frag_rows__moment(run, &o->fo, &m, o->q.o.limit, o->q.o.depth, out);
        rc = rc ? (out__abort(out), rc) : vh_out_end(o->q.cmd, out);
    }
    frag_moment__free(&m);
    return rc;
}

static int run_series(struct fopts *o, const struct frag_run *run)
{
    struct frag_point *pts = NULL;
    struct frag_misses miss;
    size_t n = 0;
    int rc = frag_run__series(run, &o->fo, o->has_from ? o->from : 0,
                              o->has_to ? o->to : UINT64_MAX, o->interval, &pts, &n, &miss);
    if (!rc && (miss.onto_live || miss.unknown))
        vh_errorf(cmd_frag.name, "warning: the replay met %" PRIu64 " allocation%s onto a block it "
                            "held and %" PRIu64 " free%s, resize%s or move%s of a block it did "
                            "not hold: the DB's event stream disagrees with itself (damaged?), "
                            "the numbers after them may be off",
                  miss.onto_live, miss.onto_live == 1 ? "" : "s", miss.unknown,
                  miss.unknown == 1 ? "" : "s", miss.unknown == 1 ? "" : "s",
                  miss.unknown == 1 ? "" : "s");
    if (!rc && o->svg)
        rc = frag_chart__write(run, o->fo.page_size, pts, n, o->svg);
    if (!rc) {
        struct out *out = vh_query__take_out(&o->q);
        rc = frag_rows__series(run, &o->fo, pts, n, &miss, out);
        rc = rc ? (out__abort(out), rc) : vh_out_end(o->q.cmd, out);
    }
    free(pts);
    return rc;
}

static int run(int argc, char **argv)
{
    struct fopts o;
    struct frag_run run = { 0 };
    int rc;

    if (!(rc = parse_opts(&cmd_frag, argc, argv, &o)) &&
        !(rc = vh_query__open(&o.q, VH_QUERY_OUTPUT)) &&
        !(rc = frag_run__open(cmd_frag.name, o.q.db, o.q.o.heap, &run)))
        rc = o.series ? run_series(&o, &run) : run_moment(&o, &run);
    frag_run__free(&run);
    return vh_query__finish(&o.q, rc);
}
