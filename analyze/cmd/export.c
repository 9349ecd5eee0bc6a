/* cmd/export.c — `vheap-analyze export`: the recording in another tool's
 * format (heaptrack, flame-graph folded stacks, massif, Chrome trace
 * events, pprof). This file owns the command line, the chosen heaps, the process
 * facts every format needs, and the helpers of export.h: the output file
 * with its compression, and the hash tables. The formats are export_*.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "analyze/store/db.h"
#include "analyze/export/export.h"
#include "analyze/cmd/query.h"
#include "analyze/util/grow.h"

static const char usage_head[] =
    "usage: vheap-analyze export --format FORMAT [OPTIONS] DB|CAPTURE -o FILE\n"
    "\n"
    "Writes the recording in another tool's format, so that it can be read with\n"
    "the tools people already use. FORMAT is one of:\n";

static const char usage_tail[] =
    "A CAPTURE is loaded into CAPTURE.sqlite first (reused while up to date).\n"
    "\n"
    "options:\n"
    "  --format F, -f F  the format (required)\n"
    "  -o FILE           where to write ('-' = stdout, uncompressed). FILE is\n"
    "                    written under a temporary name and renamed when complete\n"
    "                    (mode 0600, like the capture)\n"
    "  --heap NAME       which heaps: a name, an id, or NAME/* with the heaps\n"
    "                    nested in it. heaptrack, massif and dhat hold one heap:\n"
    "                    default 'malloc' (the system allocator); several heaps\n"
    "                    chosen are merged into one. flamegraph, chrome-trace and\n"
    "                    pprof default to every heap (a flame graph of several heaps\n"
    "                    gets one root frame per heap, '[heap NAME]')\n"
    "  --cost C          flamegraph: what a stack's value is: allocations\n"
    "                    (calls, default), bytes (allocated), leaked (bytes),\n"
    "                    peak (bytes live at the heap's peak), temporary (calls),\n"
    "                    owned (the last ownership snapshot's bytes, as its walk\n"
    "                    counted them: the owner path's frames, then each block's\n"
    "                    allocation stack; vheap-analyze owners)\n"
    "  --depth N         flamegraph, massif, dhat: at most the N innermost frames of\n"
    "                    each stack (default: all recorded)\n"
    "  --clock C         chrome-trace: 'wall' (default) gives ts in microseconds\n"
    "                    since the Unix epoch, like `urbit -j` traces, so the two\n"
    "                    line up; 'start' in microseconds since the process started\n"
    "  --merge TRACE     chrome-trace: also copy the events of TRACE, a JSON array\n"
    "                    trace such as urbit -j writes (.urbit/put/trace/N.json,\n"
    "                    finished or not), so that one file shows both\n"
    "  -h, --help        this text\n"
    "\n"
    "What a format cannot hold is said on stderr (heaptrack: block addresses,\n"
    "threads, usable sizes, failed calls, times finer than 1 ms, other heaps).\n"
    "A sampled capture (VHEAP_SAMPLE) is exported as estimates, in every format\n"
    "(each recorded block stands for s/p bytes), and stderr says so; heaptrack's\n"
    "call counts are the sample's own.\n"
    "\n"
    "examples:\n"
    "  vheap-analyze export --format heaptrack run.sqlite -o run.heaptrack.zst\n"
    "  heaptrack_print run.heaptrack.zst       # or: heaptrack_gui run.heaptrack.zst\n"
    "  vheap-analyze export -f flamegraph --cost leaked run.sqlite -o - | flamegraph.pl >leaks.svg\n"
    "  vheap-analyze export -f massif run.sqlite -o massif.out.1234 && ms_print massif.out.1234\n"
    "  vheap-analyze export -f chrome-trace vheap.urbit.99.vhcap --heap 'loom/*' -o mem.json\n"
    "  vheap-analyze export -f pprof run.sqlite -o run.pb.gz\n"
    "  vheap-analyze export -f dhat run.sqlite -o dhat.json  # dh_view.html: Load...\n"
    "  go tool pprof -top -sample_index=alloc_space run.pb.gz\n"
    "  vheap-analyze export -f chrome-trace vheap.urbit.99.vhcap --merge pier/.urbit/put/trace/0.json -o both.json\n";


/* The usage text: usage_head, a paragraph a format (formats[]), usage_tail;
 * and the summary, the formats' names: made once, before main (VH_COMMAND's
 * texts are a constant's). */
static char usage[sizeof usage_head + sizeof usage_tail + 2048];
static char summary[160];

static int run(int argc, char **argv);

VH_COMMAND(cmd_export, {
    .name = "export",
    .summary = summary,
    .usage = usage,
    .run = run,
    .order = 80,
});

/* ---- options ------------------------------------------------------------------- */

/* The options only some formats take. */
enum { O_COST = 1, O_DEPTH = 2, O_CLOCK = 4, O_MERGE = 8 };

/* One row a format: adding one is a row here and its vh_export_FORMAT
 * (export/FORMAT.c); the usage, the messages, the checks and the dispatch
 * read the table. */
static const struct format {
    const char *name;
    int (*write)(struct vh_export *x);
    unsigned opts;                 /* O_*: which of its options apply       */
    int one_heap;                  /* holds one heap: --heap defaults to the
                                      system allocator's                    */
    const char *help;              /* the usage's paragraph, wrapped at 62  */
    /* Said on stderr after a sampled capture's export: what its numbers
     * are, where the format itself has no place (or not enough) to say it. */
    const char *sampled;
} formats[] = {
    { "heaptrack", vh_export_heaptrack, 0, 1,
      "heaptrack's data file, for heaptrack_print and heaptrack_gui:\n"
      "every allocation and free in order, stacks with inlined\n"
      "frames, RSS. Compressed by FILE's suffix: .gz (gzip), .zst\n"
      "(zstd), else plain text. heaptrack_print reads regular files\n"
      "only, not pipes",
      "sampled capture: sizes are estimates (each recorded block is written as "
      "the s/p bytes it stands for, p its chance of being sampled); heaptrack "
      "counts one call per block written, so its call and temporary counts are "
      "the sample's own, not estimates" },
    { "flamegraph", vh_export_flamegraph, O_COST | O_DEPTH, 0,
      "folded stacks, one 'outer;...;inner VALUE' line per stack, for\n"
      "flamegraph.pl, inferno and speedscope",
      "sampled capture: the values are estimates (the folded format has no "
      "place to say so)" },
    { "massif", vh_export_massif, O_DEPTH, 1,
      "a massif.out file for valgrind's ms_print and\n"
      "massif-visualizer: memory over time in about 100 snapshots,\n"
      "the peak and every 10th in detail (the stack tree)",
      "sampled capture: every size is an estimate (each recorded block counts the "
      "s/p bytes it stands for; massif has no place to say so)" },
    { "chrome-trace", vh_export_chrome, O_CLOCK | O_MERGE, 0,
      "Trace Event JSON for Perfetto and chrome://tracing: live bytes\n"
      "of each heap and RSS as counter tracks, marks as instant\n"
      "events",
      "sampled capture: the heap counters are estimates (each recorded block counts "
      "the s/p bytes it stands for; their names end in \"(estimate)\")" },
    { "pprof", vh_export_pprof, 0, 0,
      "gzipped profile.proto for go tool pprof, Pyroscope, Parca\n"
      "and Grafana: per stack, calls and bytes allocated, blocks\n"
      "and bytes leaked",
      "sampled capture: the values are estimates (the profile's comment says so)" },
    { "dhat", vh_export_dhat, O_DEPTH, 1,
      "valgrind DHAT's JSON, for dh_view.html and the Firefox\n"
      "Profiler: per stack the bytes and blocks allocated, their\n"
      "lifetimes, its own maximum, what was live at the peak and at\n"
      "the end; times in microseconds; a sampled capture's numbers\n"
      "are estimates and its 'mode' says so",
      "sampled capture: every number is an estimate (each recorded block counts "
      "1/p times, p its chance of being sampled; the file's 'mode' says so)" },
};
#define NFORMATS (sizeof formats / sizeof formats[0])

/* The names of the formats that take every option of `opts` (0: every
 * format), as "a, b and c" (sep = " and ") or "a, b or c" (" or "). */
static void format_names(char *buf, size_t len, unsigned opts, const char *sep)
{
    size_t n = 0, k = 0, at = 0;

    for (size_t i = 0; i < NFORMATS; i++)
        n += (formats[i].opts & opts) == opts;
    buf[0] = 0;
    for (size_t i = 0; i < NFORMATS && at < len; i++) {
        if ((formats[i].opts & opts) != opts)
            continue;
        at += (size_t)snprintf(buf + at, len - at, "%s%s", !k ? "" : k + 1 < n ? ", " : sep,
                               formats[i].name);
        k++;
    }
}

__attribute__((constructor)) static void usage_build(void)
{
    char names[128];
    format_names(names, sizeof names, 0, " or ");
    snprintf(summary, sizeof summary, "write %s files", names);
    size_t at = (size_t)snprintf(usage, sizeof usage, "%s", usage_head);

    for (size_t i = 0; i < NFORMATS && at < sizeof usage; i++) {
        at += (size_t)snprintf(usage + at, sizeof usage - at, "  %-13s ", formats[i].name);
        for (const char *p = formats[i].help; *p && at + 18 < sizeof usage; p++) {
            usage[at++] = *p;
            if (*p == '\n')
                at += (size_t)snprintf(usage + at, sizeof usage - at, "%16s", "");
        }
        if (at + 1 < sizeof usage)
            usage[at++] = '\n';
    }
    if (at < sizeof usage)
        snprintf(usage + at, sizeof usage - at, "%s", usage_tail);
}

static const char *const costs[] = {
    [VH_COST_ALLOCATIONS] = "allocations", [VH_COST_BYTES] = "bytes",
    [VH_COST_LEAKED] = "leaked",           [VH_COST_PEAK] = "peak",
    [VH_COST_TEMPORARY] = "temporary", [VH_COST_OWNED] = "owned",
};

struct eopts {
    struct vh_query q;
    const struct format *fmt;
    const char *out;
    struct vh_export x;
};

/* An option the chosen format does not take is a usage error. */
static int applies(struct eopts *o, unsigned opt, const char *name, int given)
{
    char names[256];

    if (!given || (o->fmt->opts & opt))
        return 0;
    format_names(names, sizeof names, opt, " and ");
    return vh_query__usage(&o->q, "%s applies to --format %s only", name, names);
}

/* Takes export's own options out of argv and hands the rest (--heap,
 * --depth, the operand) to the shared parser. */
static int parse_opts(int argc, char **argv, struct eopts *o)
{
    const char *format = NULL, *cost = NULL, *clock = NULL, *merge = NULL;
    const struct vh_command *cmd = &cmd_export;
    char names[256];
    const struct vh_opt own[] = {
        VH_OPT_VALUE("--format", &format), VH_OPT_VALUE("-f", &format),
        VH_OPT_VALUE("-o", &o->out),       VH_OPT_VALUE("--output", &o->out),
        VH_OPT_VALUE("--cost", &cost),     VH_OPT_VALUE("--clock", &clock),
        VH_OPT_VALUE("--merge", &merge),
        /* one file, not a list, and not a table */
        VH_OPT_REFUSE_VALUE("--limit"),    VH_OPT_REFUSE_FLAG("--bytes"),
    };
    int rc = vh_query__parse(&o->q, cmd, 0, VH_OPTS(own), argc, argv);
    if (rc)
        return rc;
    if (!format) {
        format_names(names, sizeof names, 0, " or ");
        return vh_query__usage(&o->q, "--format is needed: %s", names);
    }
    for (size_t i = 0; i < NFORMATS; i++)
        if (!strcmp(format, formats[i].name))
            o->fmt = &formats[i];
    if (!o->fmt) {
        format_names(names, sizeof names, 0, " or ");
        return vh_query__usage(&o->q, "--format: '%s' is not %s", format, names);
    }
    if (!o->out || !*o->out) {
        return vh_query__usage(&o->q, "-o FILE is needed ('-' writes to stdout)");
    }
    if ((rc = applies(o, O_COST, "--cost", cost != NULL)) ||
        (rc = applies(o, O_DEPTH, "--depth", o->q.o.depth != 0)) ||
        (rc = applies(o, O_CLOCK, "--clock", clock != NULL)) ||
        (rc = applies(o, O_MERGE, "--merge", merge != NULL)))
        return rc;
    if (cost) {
        size_t i;
        for (i = 0; i < sizeof costs / sizeof costs[0]; i++)
            if (!strcmp(cost, costs[i]))
                break;
        if (i == sizeof costs / sizeof costs[0]) {
            return vh_query__usage(&o->q,
                                   "--cost: '%s' is not allocations, bytes, leaked, peak, "
                                   "temporary or owned",
                                   cost);
        }
        o->x.cost = (enum vh_cost)i;
        o->x.cost_given = 1;
    }
    if (clock) {
        if (!strcmp(clock, "wall"))
            o->x.clock = VH_CLOCK_WALL;
        else if (!strcmp(clock, "start"))
            o->x.clock = VH_CLOCK_START;
        else {
            return vh_query__usage(&o->q, "--clock: '%s' is not wall or start", clock);
        }
        o->x.clock_given = 1;
    }
    if (merge) {
        if (clock && o->x.clock != VH_CLOCK_WALL) {
            return vh_query__usage(&o->q, "--merge needs --clock wall: urbit -j traces count "
                                          "microseconds since the Unix epoch");
        }
        o->x.merge = merge;
    }
    return 0;
}

/* ---- what every format needs ------------------------------------------------------ */

static char *col_strdup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? strdup((const char *)t) : NULL;
}

static int read_process(struct vh_export *x)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_export_prepare(x,
                               "SELECT pid, exe, start_realtime_ns, runtime_ns, page_size,"
                               "       phys_pages, sample_rate FROM processes ORDER BY id LIMIT 1",
                               &st);
    if (rc)
        return rc;
    if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
        vh_errorf(x->cmd, rc == SQLITE_DONE ? "the DB describes no process"
                                                  : "reading processes: %s",
                  sqlite3_errmsg(x->db));
        sqlite3_finalize(st);
        return -EIO;
    }
    x->pid = sqlite3_column_int64(st, 0);
    x->exe = col_strdup(st, 1);
    x->start_realtime_ns = sqlite3_column_int64(st, 2);
    int64_t rt = sqlite3_column_int64(st, 3);
    x->runtime_ns = rt > 0 ? (uint64_t)rt : 0;
    x->page_size = sqlite3_column_int64(st, 4);
    x->phys_pages = sqlite3_column_int64(st, 5);
    int64_t rate = sqlite3_column_int64(st, 6);
    x->rate = rate > 0 ? (uint64_t)rate : 0;
    sqlite3_finalize(st);

    /* argv is a JSON array; a DB edited by hand may hold anything */
    if (sqlite3_prepare_v2(x->db,
                           "SELECT group_concat(v, ' ') FROM"
                           " (SELECT j.value AS v FROM processes p, json_each(p.argv) j"
                           "  WHERE p.id = (SELECT min(id) FROM processes)"
                           "    AND json_valid(p.argv) AND json_type(p.argv) = 'array'"
                           "  ORDER BY j.key)",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        x->argv_text = col_strdup(st, 0);
    sqlite3_finalize(st);
    return 0;
}

/* Loads the chosen heaps (temp.vh_heap_sel after --heap, else all). */
static int read_heaps(struct vh_export *x, const char *heap, int defaulted)
{
    sqlite3_stmt *st = NULL;
    char *name = NULL;
    int rc = vh_export_prepare(x,
                               heap ? "SELECT s.id, h.name FROM temp.vh_heap_sel s"
                                      " JOIN heaps h ON h.id = s.id ORDER BY s.id"
                                    : "SELECT id, name FROM heaps ORDER BY id",
                               &st);
    if (rc)
        return rc;
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id < 0 || id > UINT32_MAX - 1)
            continue;
        if (vh_reserve_zeroed(&x->heap_on, &cap, (size_t)id + 1, 1, 64)) {
            rc = -ENOMEM;
            goto out;
        }
        x->heap_on[id] = 1;
        if ((uint32_t)id > x->heap_max)
            x->heap_max = (uint32_t)id;
        if (!x->nheaps++)
            name = col_strdup(st, 1);
    }
    if (rc != SQLITE_DONE) {
        vh_errorf(x->cmd, "reading heaps: %s", sqlite3_errmsg(x->db));
        rc = -EIO;
        goto out;
    }
    rc = 0;
    if (!x->heap_on) {              /* no heaps at all: an empty recording */
        if (!(x->heap_on = calloc(1, 1))) {
            rc = -ENOMEM;
            goto out;
        }
    }
    size_t n = 64 + (heap ? strlen(heap) : 0) + (name ? strlen(name) : 0);
    if (!(x->heap_desc = malloc(n))) {
        rc = -ENOMEM;
        goto out;
    }
    if (x->nheaps == 1 && name)
        snprintf(x->heap_desc, n, "%s", name);
    else if (heap && !defaulted)
        snprintf(x->heap_desc, n, "%s (%u heaps)", heap, x->nheaps);
    else
        snprintf(x->heap_desc, n, "every heap (%u)", x->nheaps);
out:
    free(name);
    sqlite3_finalize(st);
    return rc;
}

/* -o must not name the DB (or the capture) being read. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int run(int argc, char **argv)
{
    struct eopts o;
    struct vh_export *x = &o.x;
    char err[512], dbpath[4200];
    int rc, defaulted = 0;

    memset(&o, 0, sizeof o);
    x->cmd = cmd_export.name;
    if ((rc = parse_opts(argc, argv, &o)))
        goto out;
    x->out_path = o.out;
    x->heap = o.q.o.heap;
    x->depth = o.q.o.depth;
    snprintf(dbpath, sizeof dbpath, "%s%s", o.q.o.input, VH_DB_SUFFIX);
    if (strcmp(o.out, "-") && (same_file(o.out, o.q.o.input) || same_file(o.out, dbpath))) {
        rc = vh_query__usage(&o.q, "-o %s is the file being read", o.out);
        goto out;
    }
    /* heaptrack and massif describe one heap: the system allocator unless
     * --heap says otherwise. */
    if (!o.q.o.heap && o.fmt->one_heap) {
        o.q.o.heap = "0";
        defaulted = 1;
    }
    if ((rc = vh_query__open(&o.q, 0)))
        goto out;
    x->db = o.q.db;
    rc = read_process(x);
    if (!rc)
        rc = read_heaps(x, o.q.o.heap, defaulted);
    if (rc)
        goto out;
    if (!x->clock_given && !x->start_realtime_ns)
        x->clock = VH_CLOCK_START;
    if (x->merge && !x->start_realtime_ns) {
        vh_errorf(x->cmd, "--merge: the recording has no wall-clock start time to line "
                                "up with another trace");
        rc = -EINVAL;
        goto out;
    }
    x->notes_f = open_memstream(&x->notes, &x->notes_len);    /* else: stderr */
    if ((rc = vh_xout__open(o.out, &x->out, err, sizeof err))) {
        vh_errorf(x->cmd, "%s", err);
        goto out;
    }
    rc = o.fmt->write(x);
    if (rc == -ENOMEM)             /* the exporters say every other error */
        vh_errorf(x->cmd, "out of memory");
    if (rc) {
        vh_xout__discard(x->out);
        goto out;
    }
    if ((rc = vh_xout__commit(x->out, err, sizeof err)))
        vh_errorf(x->cmd, "%s", err);
    else if (x->notes_f && !fflush(x->notes_f) && x->notes)
        fputs(x->notes, stderr);
    if (!rc && x->rate)
        vh_errorf(x->cmd, "%s", o.fmt->sampled);
out:
    if (x->notes_f)
        fclose(x->notes_f);
    free(x->notes);
    free(x->heap_on);
    free(x->heap_desc);
    free(x->exe);
    free(x->argv_text);
    return vh_query__finish(&o.q, rc);
}
