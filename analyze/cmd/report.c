/* cmd/report.c — `vheap-analyze report`: one self-contained HTML page of a
 * run (or of a run against a baseline, --diff): the page's markup, styles and
 * script are built into the binary (the files in analyze/report/, `.incbin`), the run's
 * data (report/data.c) is embedded as JSON, nothing is fetched. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/cmd/query.h"
#include "analyze/query/modmap.h"
#include "analyze/report/report.h"
#include "analyze/util/parse_time.h"

/* The page's parts, NUL-terminated (make runs from the repository root). */
#define VH_EMBED(sym, file)                                                    \
    __asm__(".pushsection .rodata\n.global " #sym "\n.type " #sym ", @object\n" \
            ".balign 8\n" #sym ":\n.incbin \"" file "\"\n.byte 0\n"             \
            ".size " #sym ", . - " #sym "\n.popsection\n")
VH_EMBED(vh_report_html, "analyze/report/report.html");
VH_EMBED(vh_report_css, "analyze/report/report.css");
VH_EMBED(vh_report_js, "analyze/report/report.js");
extern const char vh_report_html[], vh_report_css[], vh_report_js[];

static const char usage[] =
    "usage: vheap-analyze report [OPTIONS] DB|CAPTURE -o FILE.html\n"
    "\n"
    "Writes one self-contained HTML page (no network: its script and styles\n"
    "are inline) to open in a browser:\n"
    "  - a flame graph of the call stacks by bytes at the peak, leaked, bytes\n"
    "    allocated, temporary allocations or allocation calls, top-down or\n"
    "    bottom-up (callees first); click a frame to zoom and to list its\n"
    "    function's callers and callees; search by function, filter by heap\n"
    "    and by tag;\n"
    "  - memory over time per heap, with RSS and marks; a click on a time shows\n"
    "    the flame graph of what was live then (from precomputed snapshots), a\n"
    "    drag selects a time window: what was allocated, or live, in it;\n"
    "  - allocation sizes (calls and bytes per power of two), of the run or of\n"
    "    the zoomed frame's stacks;\n"
    "  - the top stacks in a table sortable by every measure, the heaps as a\n"
    "    tree, fragmentation at the end and at the peak.\n"
    "The call tree is pruned: call paths below a share (--prune) of every\n"
    "measure are merged into '[smaller stacks]' frames, so that a run of\n"
    "500000 stacks still opens at once. The page says what was pruned.\n"
    "\n"
    "With --diff BASE, the flame graph is differential: widths are this run's,\n"
    "colours the change from BASE (red grew, blue shrank), stacks matched by\n"
    "their functions' names and modules, not addresses, BASE's main program\n"
    "taken as this run's (see `diff`, and its --map-module, taken here too).\n"
    "\n"
    "options:\n"
    "  -o, --output FILE  the page (written under a temporary name, then renamed)\n"
    "  --diff BASE        a baseline run (DB or capture) to compare with\n"
    "  --map-module OLD=NEW[,OLD=NEW...]\n"
    "                     with --diff: BASE's module OLD is this run's NEW\n"
    "  --snapshots N      live sets precomputed over time (default 24, 0..200)\n"
    "  --prune PCT        keep call paths holding at least PCT % of some\n"
    "                     measure (default 0.05, doubled until at most 40000\n"
    "                     nodes are kept; 0 keeps every path, however many)\n"
    "  --limit N          rows per measure in the top table (default 100)\n"
    "  --from T, --to T   open the page on the time window T..T since the\n"
    "                     start (1.5s, 200ms; one alone: from the start, or\n"
    "                     to the end); a window past the run's end: exit 1\n"
    "  -h, --help         this text\n"
    "\n"
    "examples:\n"
    "  vheap-analyze report run.sqlite -o report.html && xdg-open report.html\n"
    "  vheap-analyze report vheap.myprog.1234.vhcap -o report.html --snapshots 50\n"
    "  vheap-analyze report new.sqlite --diff old.sqlite -o diff.html\n"
    "  vheap-analyze report run.sqlite -o report.html --prune 0.5\n"
    "  vheap-analyze report run.sqlite -o window.html --from 2s --to 3.5s\n"
    "\n"
    "The page reads its state from the URL's fragment too, so a view can be\n"
    "shared: report.html#cost=leaked&search=cache_line&heap=malloc&t=0.5\n"
    "(also view=bottom, fn=NAME, from=T&to=T, rmode=live).\n";

static int run(int argc, char **argv);

VH_COMMAND(cmd_report, {
    .name = "report",
    .summary = "one self-contained HTML page: flame graph, memory over time, tables",
    .usage = usage,
    .run = run,
    .order = 62,
});

/* The template with @CSS@, @JS@, @DATA@ and @TITLE@ in it. */
static int write_page(const struct vh_command *cmd, sqlite3 *db, sqlite3 *base,
                      const struct vh_qopts *o, const char *base_name,
                      const struct vh_report_opts *ro, struct vh_xout *x)
{
    const char *p = vh_report_html;
    char err[512] = "";
    int rc;
    for (;;) {
        const char *at = strchr(p, '@');
        if (!at) {
            vh_xout__puts(x, p);
            return 0;
        }
        vh_xout__write(x, p, (size_t)(at - p));
        if (!strncmp(at, "@CSS@", 5)) {
            vh_xout__puts(x, vh_report_css);
            p = at + 5;
        } else if (!strncmp(at, "@JS@", 4)) {
            vh_xout__puts(x, vh_report_js);
            p = at + 4;
        } else if (!strncmp(at, "@TITLE@", 7)) {
            /* the JSON string's text without quotes is safe in a title */
            vh_xout__puts(x, "vheap report");
            p = at + 7;
        } else if (!strncmp(at, "@DATA@", 6)) {
            if ((rc = vh_report_json(db, base, o->input, base_name, ro, x, err, sizeof err))) {
                vh_errorf(cmd->name, "%s", err);
                return rc;
            }
            p = at + 6;
        } else {
            vh_xout__write(x, at, 1);
            p = at + 1;
        }
    }
}

static int parse_num(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || v < lo || v > hi || v != v)
        return -EINVAL;
    *out = v;
    return 0;
}

/* --from and --to: the window the page opens on (one alone: from the
 * start, or to the end). Past the run is the data's fault: data.c says. */
static int parse_range(struct vh_query *q, const char *from, const char *to, const char *diff,
                       struct vh_report_opts *ro)
{
    if (!from && !to)
        return 0;
    if (diff)
        return vh_query__usage(q, "--from and --to are for one run, not --diff");
    ro->to = UINT64_MAX;
    if (from && vh_parse_time(from, &ro->from))
        return vh_query__usage(q, "--from: '%s' is not a time like 1.5s or 200ms", from);
    if (to && vh_parse_time(to, &ro->to))
        return vh_query__usage(q, "--to: '%s' is not a time like 1.5s or 200ms", to);
    if (ro->to <= ro->from)
        return vh_query__usage(q, "--to must be after --from");
    ro->has_range = 1;
    return 0;
}

static int run(int argc, char **argv)
{
    const char *out = NULL, *diff = NULL, *snaps = NULL, *prune = NULL, *map_spec = NULL;
    const char *from = NULL, *to = NULL;
    const struct vh_opt own[] = {
        VH_OPT_VALUE("-o", &out),           VH_OPT_VALUE("--output", &out),
        VH_OPT_VALUE("--diff", &diff),      VH_OPT_VALUE("--snapshots", &snaps),
        VH_OPT_VALUE("--prune", &prune),    VH_OPT_REFUSE_VALUE("--format"),
        VH_OPT_VALUE("--map-module", &map_spec),
        VH_OPT_REFUSE_VALUE("--heap"),      VH_OPT_REFUSE_VALUE("--depth"),
        VH_OPT_REFUSE_FLAG("--bytes"),
        VH_OPT_VALUE("--from", &from),      VH_OPT_VALUE("--to", &to),
    };
    struct vh_report_opts ro = { .snapshots = 24, .points = 1000, .top = 100, .prune = 0.0005,
                                 .max_nodes = 40000 };
    struct vh_query q;
    struct vh_modmap *map = NULL;
    sqlite3 *base = NULL;
    struct vh_xout *x = NULL;
    char err[512];
    double v;
    int rc;
    /* the time said at the end is the command's: loading a CAPTURE included */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);

    if ((rc = vh_query__parse(&q, &cmd_report, 0, VH_OPTS(own), argc, argv)))
        goto done;
    if (!out) {
        rc = vh_query__usage(&q, "-o FILE.html is needed (see vheap-analyze report --help)");
        goto done;
    }
    if (snaps) {
        if (parse_num(snaps, 0, 200, &v) || v != (unsigned)v) {
            rc = vh_query__usage(&q, "--snapshots: '%s' is not a count from 0 to 200", snaps);
            goto done;
        }
        ro.snapshots = (unsigned)v;
    }
    if (prune) {
        if (parse_num(prune, 0, 100, &v)) {
            rc = vh_query__usage(&q, "--prune: '%s' is not a percentage from 0 to 100", prune);
            goto done;
        }
        ro.prune = v / 100;
    }
    if ((rc = parse_range(&q, from, to, diff, &ro)))
        goto done;
    if (map_spec && !diff) {
        rc = vh_query__usage(&q, "--map-module is for --diff BASE");
        goto done;
    }
    if (diff && !(map = vh_modmap__new())) {
        rc = -ENOMEM;
        vh_errorf(cmd_report.name, "out of memory");
        goto done;
    }
    if (map_spec && (rc = vh_modmap__parse(map, map_spec))) {
        if (rc == -ENOMEM)
            vh_errorf(cmd_report.name, "out of memory");
        else
            rc = vh_query__usage(&q, "--map-module: '%s' is not OLD=NEW[,OLD=NEW...]", map_spec);
        goto done;
    }
    if (q.o.limit_given)
        ro.top = q.o.limit ? (unsigned)(q.o.limit > 100000 ? 100000 : q.o.limit) : 100000;
    if ((rc = vh_query__open(&q, 0)) || (diff && (rc = vh_query__open_also(&q, diff, &base))))
        goto done;
    if (base && (rc = vh_modmap__mains(map, base, q.db, err, sizeof err))) {
        vh_errorf(cmd_report.name, "%s", err);
        goto done;
    }
    ro.modmap = map;
    if ((rc = vh_xout__open(out, &x, err, sizeof err))) {
        vh_errorf(cmd_report.name, "%s", err);
        goto done;
    }
    if ((rc = write_page(&cmd_report, q.db, base, &q.o, diff, &ro, x))) {
        vh_xout__discard(x);
        goto done;
    }
    uint64_t bytes = vh_xout__bytes(x);
    if ((rc = vh_xout__commit(x, err, sizeof err))) {
        vh_errorf(cmd_report.name, "%s", err);
        goto done;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    vh_errorf(cmd_report.name, "%s: %.1f MB written in %.2f s; open it in a browser", out,
              (double)bytes / 1e6,
              (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
done:
    vh_modmap__free(map);
    return vh_query__finish(&q, rc);
}
