/* cmd/series.c — `vheap-analyze series`, and `chart` with it (series.h):
 * memory over time, per interval or per event, split by the top stacks,
 * with RSS and marks. Here: the options; the numbers are query/series.c's,
 * the rows query/series_rows.c's, the charts report/chart.c's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/cmd/query.h"
#include "analyze/cmd/series.h"
#include "analyze/cmd/top_event.h"
#include "analyze/query/series.h"
#include "analyze/report/chart.h"

static const char usage[] =
    "usage: vheap-analyze series [OPTIONS] DB|CAPTURE\n"
    "\n"
    "Heap memory over time. For each interval: its start, the consumed (live,\n"
    "requested) bytes at its end, the most live within it, allocation calls,\n"
    "frees, temporary allocations, RSS (the last sample up to its end), the\n"
    "live bytes of each of the top stacks and of all others, and the marks\n"
    "(vheap_mark) that fall in it. With several heaps, live bytes are summed\n"
    "over the heaps chosen (--heap picks one).\n"
    "\n"
    "options:\n"
    "  --interval T     interval length: 100ms, 1s, 250us, 5000ns (a bare number\n"
    "                   is seconds), or 'event' for one row per event.\n"
    "                   Default: a 1-2-5 step giving a few hundred rows\n"
    "  --by-event       one row per event the program marked as it committed\n"
    "                   ('event N ...', 'replay N ...', 'boot ...': Vere's, see\n"
    "                   docs/vere.md), in time order: calls, bytes, the home\n"
    "                   road's growth, the most in use in the loom and its\n"
    "                   roads while it ran and the headroom that left (JSON:\n"
    "                   least_headroom); see top --by-event\n"
    "  --top N          split live bytes by the N top stacks (default 5; 0 = no\n"
    "                   split; at most 100)\n"
    "  --by MEASURE     how the top stacks are chosen: peak (bytes live at the\n"
    "                   heap's peak, default), max-live, allocations, bytes,\n"
    "                   leaked; or heap: a column a heap instead of a stack,\n"
    "                   the largest peaks first (malloc beside the mmap heap,\n"
    "                   a custom heap)\n"
    "  --from T, --to T only this window of time since the program started\n"
    "  --heap NAME      only this heap ('malloc' is the system allocator)\n"
    "  --limit N        at most N rows (default: all; with --interval event at\n"
    "                   most 1000000 unless --limit is given)\n"
    "  --svg FILE       also draw the charts: FILE (memory by stack, RSS,\n"
    "                   marks) and FILE-allocs.svg (calls per interval)\n"
    "  --format FMT     table (default), json or csv\n"
    "  --bytes          exact byte counts instead of 2.20K-style sizes\n"
    "  --depth N        frames per stack in JSON output (default: all)\n"
    "  -h, --help       this text\n"
    "\n"
    "Stacks are named by their innermost frame outside the allocator: frames in\n"
    "libc, libstdc++, ld.so, libvheap, jemalloc or tcmalloc, standard-library\n"
    "template code (std::, __gnu_cxx::, /usr/include) and allocation wrappers\n"
    "(a function whose name ends in 'alloc', like xmalloc) are passed over.\n"
    "\n"
    "examples:\n"
    "  vheap-analyze series run.sqlite\n"
    "  vheap-analyze series run.sqlite --interval 10ms --top 3 --format csv\n"
    "  vheap-analyze series run.sqlite --interval event --from 1.2s --to 1.25s\n"
    "  vheap-analyze series run.sqlite --by allocations --svg mem.svg\n"
    "  vheap-analyze series run.sqlite --by heap --top 3\n"
    "  vheap-analyze series vheap.myprog.1234.vhcap --heap loom --format json\n"
    "  vheap-analyze series serf.sqlite --by-event --format csv\n";

static int run(int argc, char **argv);

VH_COMMAND(cmd_series, {
    .name = "series",
    .summary = "memory over time by interval or event, split by top stacks (--svg)",
    .usage = usage,
    .run = run,
    .order = 60,
});

static int run(int argc, char **argv)
{
    return vh_series_main(&cmd_series, VH_SERIES_TABLE, argc, argv);
}

#define MAX_TOP 100

/* ---- options ------------------------------------------------------------ */

struct sopts {
    struct vh_query q;
    uint64_t interval;             /* ns; 0 = default                       */
    int per_event;
    int by_event;                  /* --by-event: the marked events instead */
    int64_t top;
    uint64_t from, to;
    int has_to;
    const char *svg;
};

/* Takes this command's own options out of argv and hands the rest to the
 * shared parser, so that the common ones behave as in every command. */
static int parse_opts(const struct vh_command *cmd, enum vh_series_mode mode, int argc,
                      char **argv, struct sopts *o)
{
    const char *interval = NULL, *top = NULL, *from = NULL, *to = NULL;
    int chart = mode == VH_SERIES_CHART;
    const struct vh_opt own[] = {
        VH_OPT_VALUE("--interval", &interval), VH_OPT_VALUE("--top", &top),
        VH_OPT_VALUE("--from", &from),         VH_OPT_VALUE("--to", &to),
        /* series draws the charts on request, chart always */
        VH_OPT_VALUE(chart ? "-o" : "--svg", &o->svg),
        VH_OPT_VALUE(chart ? "--output" : NULL, &o->svg),
        VH_OPT_FLAG(chart ? NULL : "--by-event", &o->by_event),
    };

    memset(o, 0, sizeof *o);
    o->top = 5;
    int rc = vh_query__parse(&o->q, cmd, VH_QOPT_BY, VH_OPTS(own), argc, argv);
    if (rc)
        return rc;
    if (!o->q.o.limit_given)
        o->q.o.limit = 0;
    if (interval && !strcmp(interval, "event")) {
        o->per_event = 1;
    } else if (interval && (vh_parse_time(interval, &o->interval) || !o->interval)) {
        return vh_query__usage(&o->q,
                               "--interval: '%s' is not a duration like 100ms, 1s, 250us or "
                               "'event'",
                               interval);
    }
    if (top) {
        char *end;
        errno = 0;
        long long v = strtoll(top, &end, 10);
        if (errno || end == top || *end || v < 0 || v > MAX_TOP) {
            return vh_query__usage(&o->q, "--top: '%s' is not a count from 0 to %d", top, MAX_TOP);
        }
        o->top = v;
    }
    if (from && vh_parse_time(from, &o->from)) {
        return vh_query__usage(&o->q, "--from: '%s' is not a time like 1.5s or 200ms", from);
    }
    if (to && vh_parse_time(to, &o->to)) {
        return vh_query__usage(&o->q, "--to: '%s' is not a time like 1.5s or 200ms", to);
    }
    o->has_to = to != NULL;
    if (from && to && o->to <= o->from) {
        return vh_query__usage(&o->q, "--to (%s) must be after --from (%s)", to, from);
    }
    if (o->svg && !*o->svg) {
        return vh_query__usage(&o->q, "an empty file name for the chart");
    }
    return 0;
}

/* ---- the command ----------------------------------------------------------------- */

int vh_series_main(const struct vh_command *cmd, enum vh_series_mode mode, int argc, char **argv)
{
    struct sopts o;
    struct vh_series s = { 0 };
    const struct vh_series_measure *by = NULL;
    int rc;

    if ((rc = parse_opts(cmd, mode, argc, argv, &o)))
        goto out;
    if (o.by_event) {
        if (!(rc = vh_query__open(&o.q, VH_QUERY_OUTPUT)))
            rc = vh_top_events(&o.q, NULL, 1);
        goto out;
    }
    if (!(by = vh_series_measure(o.q.o.by))) {
        rc = vh_query__usage(&o.q, "--by: '%s' is not one of peak, max-live, allocations, "
                                   "bytes, leaked, heap", o.q.o.by);
        goto out;
    }
    if (mode == VH_SERIES_CHART && !o.svg) {
        rc = vh_query__usage(&o.q, "-o FILE.svg is needed (see vheap-analyze %s --help)",
                             cmd->name);
        goto out;
    }
    if ((rc = vh_query__open(&o.q, mode == VH_SERIES_TABLE ? VH_QUERY_OUTPUT : 0)))
        goto out;
    struct vh_series_ask ask = {
        .cmd = cmd->name, .db = o.q.db, .heap = o.q.o.heap, .limit = o.q.o.limit,
        .depth = o.q.o.depth, .interval = o.interval, .per_event = o.per_event, .top = o.top,
        .from = o.from, .to = o.to, .has_to = o.has_to, .by = by,
    };
    if ((rc = vh_series__read(&ask, &s)))
        goto out;
    if (mode == VH_SERIES_TABLE) {
        struct out *out = vh_query__take_out(&o.q);
        if (!out)
            rc = -ENOMEM;
        else
            rc = vh_series__print(cmd->name, &s, o.q.o.format, out);
        if (rc)
            goto out;
    }
    if (o.svg && vh_series_draw(cmd->name, &s, o.svg))
        rc = -EIO;                     /* said already */
out:
    if (rc == -ENOMEM)
        vh_errorf(cmd->name, "out of memory");
    vh_series__free(&s);
    return vh_query__finish(&o.q, rc);
}
