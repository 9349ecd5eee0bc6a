/* cmd/series.c — `vheap-analyze series`: memory over time, per interval or
 * per event, split by the top stacks, with RSS and marks. Also computes the
 * numbers that `chart` draws (series.h; the drawing is in cmd/chart.c).
 *
 * Two sources give the same numbers. The `series` table (fixed buckets
 * written by the loader) answers totals at multiples of its bucket width
 * instantly; the event stream (events.h) answers everything else — any
 * interval, single events, the split by stack — by replaying the events of
 * the window from the live set at its start. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/store/db.h"
#include "analyze/store/events.h"
#include "analyze/export/export.h"
#include "analyze/cmd/query.h"
#include "analyze/query/frame_rule.h"
#include "analyze/query/recording.h"
#include "analyze/query/series.h"
#include "analyze/cmd/series.h"
#include "analyze/report/chart.h"
#include "analyze/util/weight.h"
#include "analyze/util/grow.h"
#include "analyze/util/fmt.h"

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
    "  --top N          split live bytes by the N top stacks (default 5; 0 = no\n"
    "                   split; at most 100)\n"
    "  --by MEASURE     how the top stacks are chosen: peak (bytes live at the\n"
    "                   heap's peak, default), max-live, allocations, bytes,\n"
    "                   leaked\n"
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
    "  vheap-analyze series vheap.myprog.1234.vhcap --heap loom --format json\n";

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
#define MAX_INTERVALS 10000000u
#define EVENT_ROWS_DEFAULT 1000000u

/* ---- options ------------------------------------------------------------ */

struct sopts {
    struct vh_query q;
    uint64_t interval;             /* ns; 0 = default                       */
    int per_event;
    int64_t top;
    uint64_t from, to;
    int has_from, has_to;
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
    o->has_from = from != NULL;
    o->has_to = to != NULL;
    if (from && to && o->to <= o->from) {
        return vh_query__usage(&o->q, "--to (%s) must be after --from (%s)", to, from);
    }
    if (o->svg && !*o->svg) {
        return vh_query__usage(&o->q, "an empty file name for the chart");
    }
    return 0;
}

/* ---- state ----------------------------------------------------------------- */

/* What naming a top stack needs besides its public part (series.h). */
struct top {
    char *first, *second;    /* the naming frame, and the next one     */
    int64_t line;            /* the naming frame's line, 0 if unknown  */
    struct out_stack *stack; /* until handed to the renderer           */
};

struct topkey {
    uint32_t heap, stack;
    int k;
};

struct ctx {
    const struct vh_command *cmd;
    enum vh_series_mode mode;
    struct sopts o;
    sqlite3 *db;
    const struct measure *by;
    int have_events;
    uint64_t bucket_ns, runtime, from, to, iv;
    int64_t pid;
    char *exe;

    uint8_t *heap_on;              /* by heap id                             */
    size_t nheap_ids;
    int64_t *hsel;                 /* the chosen heap ids                    */
    size_t nsel;

    struct vh_series_top *pub;     /* the top stacks, as series.h shows them */
    struct top *tops;              /* and what naming them needed            */
    size_t ntop, nstacks_total;
    struct topkey *keys;

    struct vh_series_row *rows;
    size_t nrows, cap;
    uint64_t *slive;               /* nrows x ntop                           */
    uint64_t init_live, *init_slive;
    uint64_t live, *cur;           /* replay state                           */
    uint64_t rate;                 /* sampled capture: events weigh 1/p     */
    struct vh_map *blocks;         /* live blocks of the top stacks (bmap_) */
    int coarse, truncated;

    struct vh_series_mark *marks;
    size_t nmarks;

    struct out_col stack_cols[6];  /* the renderer keeps pointers to these */
    char measure_key[32];
};

static const struct measure {
    const char *name, *expr, *what, *legend;
    int bytes;
} measures[] = {
    { "peak", "sum(s.peak_bytes)", "bytes live at the peak", "peak", 1 },
    { "max-live", "max(s.max_live_bytes)", "largest live bytes", "max live", 1 },
    { "allocations", "sum(s.allocations)", "allocation calls", "calls", 0 },
    { "bytes", "sum(s.bytes_allocated)", "bytes allocated", "allocated", 1 },
    { "leaked", "sum(s.leaked_bytes)", "bytes leaked", "leaked", 1 },
};

/* ---- the block map -------------------------------------------------------- */

/* Live blocks of the top stacks: (addr, heap) -> top index, in a vh_map
 * made on first use. Only what the split needs that an event does not
 * carry: an in-place resize names the new stack, not the one the block had. */
static int bmap_put(struct vh_map **m, uint64_t addr, uint32_t heap, int k)
{
    int existed;
    struct vh_map_ent *e;
    if ((!*m && !(*m = vh_map__new())) || !(e = vh_map__insert(*m, addr, heap, &existed)))
        return -ENOMEM;
    e->v1 = (uint64_t)k;
    return 0;
}

/* Removes (addr, heap) and returns its top index, or -1 if absent. */
static int bmap_take(struct vh_map *m, uint64_t addr, uint32_t heap)
{
    struct vh_map_ent *e = m ? vh_map__find(m, addr, heap) : NULL;
    if (!e)
        return -1;
    int k = (int)e->v1;
    vh_map__remove(m, e);
    return k;
}

/* ---- small helpers ---------------------------------------------------------- */

static int by_key(const void *a, const void *b)
{
    const struct topkey *x = a, *y = b;
    if (x->heap != y->heap)
        return x->heap < y->heap ? -1 : 1;
    return (x->stack > y->stack) - (x->stack < y->stack);
}

static inline int top_of(const struct ctx *c, uint32_t heap, uint32_t stack)
{
    size_t lo = 0, hi = c->ntop;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const struct topkey *k = &c->keys[mid];
        if (k->heap == heap && k->stack == stack)
            return k->k;
        if (k->heap < heap || (k->heap == heap && k->stack < stack))
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static inline int heap_on(const struct ctx *c, uint32_t heap)
{
    return heap < c->nheap_ids && c->heap_on[heap];
}

/* OV_S of a local array (OV_S's NULL test would warn). */
static struct out_val ov_text(const char *s)
{
    return OV_S(s);
}

/* A duration for people: "5 ms", "250 µs", "1.5 s". */
static void fmt_dur(uint64_t ns, char *buf, size_t len)
{
    static const struct { uint64_t div; const char *unit; } u[] = {
        { 1000000000, "s" }, { 1000000, "ms" }, { 1000, "\xc2\xb5s" }, { 1, "ns" },
    };
    for (size_t i = 0; i < 4; i++) {
        if (ns >= u[i].div || i == 3) {
            snprintf(buf, len, "%.*f %s", ns % u[i].div ? 1 : 0, (double)ns / (double)u[i].div,
                     u[i].unit);
            return;
        }
    }
}

/* Seconds with as many decimals as the interval needs (table output). */
static void fmt_secs(uint64_t ns, int dec, char *buf, size_t len)
{
    uint64_t div = 1;
    for (int i = dec; i < 9; i++)
        div *= 10;
    snprintf(buf, len, "%" PRIu64 ".%0*" PRIu64 "s", ns / 1000000000u, dec,
             (ns % 1000000000u) / div);
}

static int query_int(struct ctx *c, const char *sql, int64_t *v)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_prepare(c->cmd->name, c->db, sql, &st);
    if (rc)
        return rc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *v = sqlite3_column_int64(st, 0);
        rc = 0;
    } else {
        vh_errorf(c->cmd->name, "query failed: %s", sqlite3_errmsg(c->db));
        rc = -EIO;
    }
    sqlite3_finalize(st);
    return rc;
}

/* ---- naming stacks ------------------------------------------------------------ */

static char *frame_name(const struct vh_lframe *f)
{
    char buf[512];
    vh_frame_name(f, buf, sizeof buf);
    return strdup(buf);
}

static int name_top(struct top *t, struct vh_series_top *pub)
{
    struct vh_lframe lf[256];
    size_t n = vh_lframes(t->stack, lf, 256), pick[2];
    size_t npick = vh_naming_frames(lf, n, pick, 2);

    if (npick) {
        const struct vh_lframe *f = &lf[pick[0]];
        t->line = f->line;
        if (!(t->first = frame_name(f)))
            return -ENOMEM;
        if (npick > 1 && !(t->second = frame_name(&lf[pick[1]])))
            return -ENOMEM;
        if (f->file &&
            !(pub->where = f->line > 0
                               ? vh_xasprintf("%s:%" PRId64, vh_base_name(f->file), f->line)
                               : strdup(vh_base_name(f->file))))
            return -ENOMEM;
    } else if (!(t->first = strdup("(no stack recorded)"))) {
        return -ENOMEM;
    }
    /* the tooltip: every frame */
    size_t cap = 256, len = 0;
    char *text = malloc(cap);
    if (!text)
        return -ENOMEM;
    text[0] = 0;
    for (size_t i = 0; i < n; i++) {
        char line[1024];
        int l;
        if (lf[i].function)
            l = snprintf(line, sizeof line, "%s%s", i ? "\n" : "", lf[i].function);
        else
            l = snprintf(line, sizeof line, "%s0x%" PRIx64, i ? "\n" : "",
                         (uint64_t)lf[i].address);
        if (l >= (int)sizeof line)
            l = sizeof line - 1;
        if (lf[i].file && l < (int)sizeof line - 1)
            l += snprintf(line + l, sizeof line - (size_t)l, lf[i].line > 0 ? " (%s:%" PRId64 ")" : " (%s)",
                          vh_base_name(lf[i].file), lf[i].line);
        if (l >= (int)sizeof line)
            l = sizeof line - 1;
        if (vh_reserve(&text, &cap, len + (size_t)l + 1, 1, 256)) {
            free(text);
            return -ENOMEM;
        }
        memcpy(text + len, line, (size_t)l + 1);
        len += (size_t)l;
    }
    pub->text = text;
    return 0;
}

/* Legend names must tell the stacks apart. Stacks that share a name get
 * their caller ("hold <- first_hill"); then, where the line tells them
 * apart, the line ("fmap_init:1292 <- pack"); then the stack id. All of a
 * group are renamed alike. */
static int unique_names(struct ctx *c)
{
    uint8_t *dup = calloc(c->ntop ? c->ntop : 1, 1);
    int rc = -ENOMEM;
    if (!dup)
        return rc;
    for (size_t i = 0; i < c->ntop; i++)
        if (!(c->pub[i].name = strdup(c->tops[i].first)))
            goto out;
    for (int pass = 0; pass < 3; pass++) {
        for (size_t i = 0; i < c->ntop; i++) {
            dup[i] = 0;
            for (size_t j = 0; j < c->ntop; j++) {
                if (j == i || strcmp(c->pub[i].name, c->pub[j].name))
                    continue;
                dup[i] |= 1;
                if (c->tops[i].line == c->tops[j].line)
                    dup[i] |= 2;           /* the line does not help */
            }
        }
        for (size_t i = 0; i < c->ntop; i++) {
            struct top *t = &c->tops[i];
            struct vh_series_top *p = &c->pub[i];
            char *n;
            if (!dup[i])
                continue;
            if (pass == 0 && t->second)
                n = vh_xasprintf("%s <- %s", t->first, t->second);
            else if (pass == 1 && !(dup[i] & 2) && t->line > 0)
                n = t->second ? vh_xasprintf("%s:%" PRId64 " <- %s", t->first, t->line, t->second)
                              : vh_xasprintf("%s:%" PRId64, t->first, t->line);
            else if (pass == 2)
                n = vh_xasprintf("%s [stack %" PRId64 "]", p->name, p->stack_id);
            else
                continue;
            if (!n)
                goto out;
            free(p->name);
            p->name = n;
        }
    }
    rc = 0;
out:
    free(dup);
    return rc;
}

/* ---- reading the database ------------------------------------------------------ */

static int read_basics(struct ctx *c)
{
    sqlite3_stmt *st = NULL;
    int64_t v;
    int rc;

    if ((rc = query_int(c, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND"
                           " name = 'events'", &v)))
        return rc;
    c->have_events = v > 0;
    c->bucket_ns = (uint64_t)db__meta_int(c->db, "bucket_ns", 0);
    if ((rc = vh_prepare(c->cmd->name, c->db,
                         "SELECT max(coalesce(runtime_ns, 0)), max(pid), max(exe) FROM processes",
                         &st)))
        return rc;
    if (sqlite3_step(st) == SQLITE_ROW) {
        c->runtime = (uint64_t)sqlite3_column_int64(st, 0);
        c->pid = sqlite3_column_int64(st, 1);
        const unsigned char *exe = sqlite3_column_text(st, 2);
        if (exe && !(c->exe = strdup((const char *)exe)))
            rc = -ENOMEM;
    }
    sqlite3_finalize(st);
    if (rc)
        return rc;
    /* events can outlast the END time by a little (other threads) */
    if ((rc = query_int(c, "SELECT coalesce(max(bucket), 0) FROM series", &v)))
        return rc;
    if (c->bucket_ns && (uint64_t)v * c->bucket_ns > c->runtime)
        c->runtime = (uint64_t)v * c->bucket_ns + c->bucket_ns - 1;

    /* the chosen heaps */
    if ((rc = query_int(c, "SELECT coalesce(max(id), 0) FROM heaps", &v)))
        return rc;
    c->nheap_ids = (size_t)v + 1;
    if (!(c->heap_on = calloc(c->nheap_ids, 1)) || !(c->hsel = calloc(c->nheap_ids, sizeof *c->hsel)))
        return -ENOMEM;
    if ((rc = vh_prepare(c->cmd->name, c->db,
                         "SELECT h.id FROM heaps h"
                         " WHERE " VH_HEAP_SEL("h.id", "?1"),
                         &st)))
        return rc;
    vh_bind_heap(st, 1, &c->o.q.o);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id >= 0 && (size_t)id < c->nheap_ids && !c->heap_on[id]) {
            c->heap_on[id] = 1;
            c->hsel[c->nsel++] = id;
        }
    }
    rc = rc == SQLITE_DONE ? 0 : -EIO;
    sqlite3_finalize(st);
    return rc;
}

static int read_tops(struct ctx *c)
{
    sqlite3_stmt *st = NULL, *cnt = NULL;
    struct vh_stacks *stacks = NULL;
    char sql[1024];
    int rc;

    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM (SELECT 1 FROM stack_stats s JOIN heaps h ON h.id = s.heap_id"
             " WHERE " VH_HEAP_SEL("h.id", "?1")
             " GROUP BY s.heap_id, s.stack_id HAVING sum(s.max_live_bytes) > 0)");
    if ((rc = vh_prepare(c->cmd->name, c->db, sql, &cnt)))
        goto out;
    vh_bind_heap(cnt, 1, &c->o.q.o);
    if (sqlite3_step(cnt) == SQLITE_ROW)
        c->nstacks_total = (size_t)sqlite3_column_int64(cnt, 0);
    if (!c->o.top)
        goto out;
    snprintf(sql, sizeof sql,
             "SELECT s.heap_id, s.stack_id, %s AS m, h.name FROM stack_stats s"
             " JOIN heaps h ON h.id = s.heap_id"
             " WHERE " VH_HEAP_SEL("h.id", "?1")
             " GROUP BY s.heap_id, s.stack_id HAVING m > 0 AND sum(s.max_live_bytes) > 0"
             " ORDER BY m DESC, max(s.max_live_bytes) DESC, s.heap_id, s.stack_id LIMIT ?2",
             c->by->expr);
    if ((rc = vh_prepare(c->cmd->name, c->db, sql, &st)))
        goto out;
    vh_bind_heap(st, 1, &c->o.q.o);
    sqlite3_bind_int64(st, 2, c->o.top);
    if (!(c->tops = calloc((size_t)c->o.top, sizeof *c->tops)) ||
        !(c->pub = calloc((size_t)c->o.top, sizeof *c->pub)) ||
        !(c->keys = calloc((size_t)c->o.top, sizeof *c->keys))) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = vh_stacks__open(c->cmd->name, c->db, c->o.q.o.depth, &stacks)))
        goto out;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct top *t = &c->tops[c->ntop];
        struct vh_series_top *p = &c->pub[c->ntop];
        int err;
        p->heap_id = sqlite3_column_int64(st, 0);
        p->stack_id = sqlite3_column_int64(st, 1);
        p->measure = sqlite3_column_int64(st, 2);
        const unsigned char *hn = sqlite3_column_text(st, 3);
        c->keys[c->ntop] = (struct topkey){ (uint32_t)p->heap_id, (uint32_t)p->stack_id,
                                            (int)c->ntop };
        c->ntop++;
        if (!(p->heap = strdup(hn ? (const char *)hn : "?"))) {
            rc = -ENOMEM;
            goto out;
        }
        if (!(t->stack = vh_stacks__get(stacks, p->stack_id, &err))) {
            vh_errorf(c->cmd->name, "reading stack %" PRId64 " failed", p->stack_id);
            rc = err ? err : -EIO;
            goto out;
        }
        if ((rc = name_top(t, p)))
            goto out;
    }
    if (rc != SQLITE_DONE) {
        vh_errorf(c->cmd->name, "query failed: %s", sqlite3_errmsg(c->db));
        rc = -EIO;
        goto out;
    }
    qsort(c->keys, c->ntop, sizeof *c->keys, by_key);
    rc = unique_names(c);
out:
    vh_stacks__free(stacks);
    sqlite3_finalize(st);
    sqlite3_finalize(cnt);
    return rc;
}

static int read_marks(struct ctx *c)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = vh_prepare(c->cmd->name, c->db,
                        "SELECT time, tid, label FROM marks WHERE time >= ?1 AND time < ?2"
                        " ORDER BY time, rowid",
                        &st);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)c->from);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)c->to);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (vh_grow(&c->marks, &cap, c->nmarks, sizeof *c->marks, 16)) {
            rc = -ENOMEM;
            goto out;
        }
        const unsigned char *l = sqlite3_column_text(st, 2);
        struct vh_series_mark *m = &c->marks[c->nmarks];
        m->time = (uint64_t)sqlite3_column_int64(st, 0);
        m->tid = sqlite3_column_int64(st, 1);
        if (!(m->label = strdup(l ? (const char *)l : ""))) {
            rc = -ENOMEM;
            goto out;
        }
        c->nmarks++;
    }
    rc = rc == SQLITE_DONE ? 0 : -EIO;
out:
    sqlite3_finalize(st);
    return rc;
}

/* ---- rows ------------------------------------------------------------------- */

static int rows_reserve(struct ctx *c, size_t n)
{
    if (n <= c->cap)
        return 0;
    size_t ncap = c->cap ? c->cap : 256;
    while (ncap < n)
        ncap *= 2;
    struct vh_series_row *nr = realloc(c->rows, ncap * sizeof *nr);
    if (!nr)
        return -ENOMEM;
    c->rows = nr;
    if (c->ntop) {
        uint64_t *ns = realloc(c->slive, ncap * c->ntop * sizeof *ns);
        if (!ns)
            return -ENOMEM;
        c->slive = ns;
    }
    c->cap = ncap;
    return 0;
}

/* The fixed intervals of [from, to): every row made up front. */
static int rows_intervals(struct ctx *c)
{
    uint64_t n = (c->to - c->from - 1) / c->iv + 1;
    if (c->o.q.o.limit && (uint64_t)c->o.q.o.limit < n) {
        n = (uint64_t)c->o.q.o.limit;
        c->to = c->from + n * c->iv;
    }
    if (n > MAX_INTERVALS) {
        vh_errorf(c->cmd->name, "%" PRIu64 " intervals are too many (at most %u): choose a "
                                "longer --interval or a shorter --from/--to window",
                  n, MAX_INTERVALS);
        return -E2BIG;
    }
    if (rows_reserve(c, (size_t)n))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        struct vh_series_row *r = &c->rows[i];
        memset(r, 0, sizeof *r);
        r->start = c->from + i * c->iv;
        r->end = r->start + c->iv < c->to ? r->start + c->iv : c->to;
        r->rss = -1;
    }
    if (c->ntop)
        memset(c->slive, 0, (size_t)n * c->ntop * sizeof *c->slive);
    c->nrows = (size_t)n;
    return 0;
}

/* Fills row i with the state at its end. */
static void row_close(struct ctx *c, size_t i)
{
    c->rows[i].live = c->live;
    if (c->rows[i].max_live < c->live)
        c->rows[i].max_live = c->live;
    if (c->ntop)
        memcpy(&c->slive[i * c->ntop], c->cur, c->ntop * sizeof *c->cur);
}

/* ---- the coarse path: the series table -------------------------------------- */

static int collect_coarse(struct ctx *c)
{
    sqlite3_stmt *st = NULL;
    uint64_t w = c->bucket_ns;
    uint64_t *hlive = calloc(c->nheap_ids, sizeof *hlive), *hmax = calloc(c->nheap_ids, sizeof *hmax);
    uint8_t *touched = calloc(c->nheap_ids, 1);
    size_t i = 0;
    int rc = -ENOMEM;

    if (!hlive || !hmax || !touched || (rc = rows_intervals(c)))
        goto out;
    /* each heap's live bytes at `from`: its last bucket before */
    if ((rc = vh_prepare(c->cmd->name, c->db,
                         "SELECT s.heap_id, s.live_bytes FROM series s WHERE s.bucket ="
                         " (SELECT max(bucket) FROM series t WHERE t.heap_id = s.heap_id"
                         "  AND t.bucket < ?1)",
                         &st)))
        goto out;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)(c->from / w));
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t h = sqlite3_column_int64(st, 0);
        if (h >= 0 && heap_on(c, (uint32_t)h))
            hlive[h] = (uint64_t)sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc != SQLITE_DONE)
        goto fail;
    for (size_t k = 0; k < c->nsel; k++)
        c->init_live += hlive[c->hsel[k]];

    if ((rc = vh_prepare(c->cmd->name, c->db,
                         "SELECT heap_id, bucket, allocations, frees, temporary, bytes_allocated,"
                         "       bytes_freed, live_bytes, max_live_bytes FROM series"
                         " WHERE bucket >= ?1 AND bucket < ?2 ORDER BY bucket, heap_id",
                         &st)))
        goto out;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)(c->from / w));
    sqlite3_bind_int64(st, 2, (sqlite3_int64)((c->to + w - 1) / w));
    for (;;) {
        rc = sqlite3_step(st);
        int done = rc != SQLITE_ROW;
        int64_t h = done ? 0 : sqlite3_column_int64(st, 0);
        uint64_t t = done ? c->to : (uint64_t)sqlite3_column_int64(st, 1) * w;
        if (!done && (h < 0 || !heap_on(c, (uint32_t)h)))
            continue;
        /* close the intervals before this bucket */
        while (i < c->nrows && (done || t >= c->rows[i].end)) {
            uint64_t live = 0, mx = 0;
            for (size_t k = 0; k < c->nsel; k++) {
                int64_t id = c->hsel[k];
                live += hlive[id];
                mx += touched[id] ? hmax[id] : hlive[id];
                touched[id] = 0;
            }
            c->rows[i].live = live;
            c->rows[i].max_live = mx > live ? mx : live;
            i++;
        }
        if (done)
            break;
        if (i >= c->nrows)
            continue;
        struct vh_series_row *r = &c->rows[i];
        r->allocs += (uint64_t)sqlite3_column_int64(st, 2);
        r->frees += (uint64_t)sqlite3_column_int64(st, 3);
        r->temporary += (uint64_t)sqlite3_column_int64(st, 4);
        r->bytes_alloc += (uint64_t)sqlite3_column_int64(st, 5);
        r->bytes_freed += (uint64_t)sqlite3_column_int64(st, 6);
        hlive[h] = (uint64_t)sqlite3_column_int64(st, 7);
        uint64_t m = (uint64_t)sqlite3_column_int64(st, 8);
        if (!touched[h] || m > hmax[h])
            hmax[h] = m;
        touched[h] = 1;
    }
fail:
    if (rc != SQLITE_DONE) {
        vh_errorf(c->cmd->name, "reading the series table: %s", sqlite3_errmsg(c->db));
        rc = -EIO;
        goto out;
    }
    c->coarse = 1;
    rc = 0;
out:
    sqlite3_finalize(st);
    free(hlive);
    free(hmax);
    free(touched);
    return rc;
}

/* ---- the fine path: the event stream ----------------------------------------- */

/* What a recorded block of `size` bytes stands for (weight.h): itself in a
 * full capture. Bytes by size alone, so that a free takes away exactly what
 * its allocation added; counts (only ever added) dithered by `salt`. */
static inline uint64_t wbytes(const struct ctx *c, uint64_t size)
{
    return vh_weigh_bytes(size, c->rate);
}

static inline uint64_t wcount(const struct ctx *c, uint64_t size, uint64_t salt)
{
    return c->rate ? vh_weigh(size, c->rate, (uint32_t)(salt ^ salt >> 32)).count : 1;
}

static int apply(struct ctx *c, const struct vh_ev *ev, struct vh_series_row *r)
{
    uint64_t size = wbytes(c, ev->size), old_size, n = wcount(c, ev->size, ev->addr ^ ev->time);
    int k;
    switch (ev->kind) {
    case VH_EV_ALLOC:
        c->live += size;
        r->allocs += n;
        r->bytes_alloc += size;
        if ((k = top_of(c, ev->heap_id, ev->stack_id)) >= 0) {
            c->cur[k] += size;
            if (bmap_put(&c->blocks, ev->addr, ev->heap_id, k))
                return -ENOMEM;
        }
        break;
    case VH_EV_FREE:
        c->live -= size < c->live ? size : c->live;
        r->bytes_freed += size;
        /* realloc halves, heap destroys and implied frees are no free() */
        if (!(ev->flags & (VH_EVF_REALLOC | VH_EVF_DESTROY | VH_EVF_IMPLICIT)))
            r->frees += n;
        if ((k = bmap_take(c->blocks, ev->addr, ev->heap_id)) >= 0)
            c->cur[k] -= size < c->cur[k] ? size : c->cur[k];
        break;
    case VH_EV_RESIZE:
        old_size = wbytes(c, ev->old_size);
        c->live -= old_size < c->live ? old_size : c->live;
        c->live += size;
        r->allocs += n;
        r->bytes_alloc += size;
        r->bytes_freed += old_size;
        if ((k = bmap_take(c->blocks, ev->addr, ev->heap_id)) >= 0)
            c->cur[k] -= old_size < c->cur[k] ? old_size : c->cur[k];
        /* the block now counts for the realloc's stack, as in stack_stats */
        if ((k = top_of(c, ev->heap_id, ev->stack_id)) >= 0) {
            c->cur[k] += size;
            if (bmap_put(&c->blocks, ev->addr, ev->heap_id, k))
                return -ENOMEM;
        }
        break;
    case VH_EV_MOVE:
        if ((k = bmap_take(c->blocks, ev->addr, ev->heap_id)) >= 0 &&
            bmap_put(&c->blocks, ev->to, ev->heap_id, k))
            return -ENOMEM;
        break;
    default:
        break;
    }
    if (ev->flags & VH_EVF_TEMPORARY)
        r->temporary += n;
    if (c->live > r->max_live)
        r->max_live = c->live;
    return 0;
}

/* The state just before `from`: the live set there, from a checkpoint. */
static int replay_start(struct ctx *c)
{
    struct liveset *ls = NULL;
    char err[512];
    int64_t heap = c->nsel == 1 ? c->hsel[0] : -1;
    int rc;

    if (!c->from)
        return 0;
    if ((rc = liveset__at(c->db, c->from - 1, heap, &ls, err, sizeof err))) {
        vh_errorf(c->cmd->name, "the live set at %" PRIu64 " ns: %s", c->from - 1, err);
        return rc;
    }
    for (size_t i = 0; i < ls->n; i++) {
        const struct vh_block *b = &ls->blocks[i];
        if (!heap_on(c, b->heap_id))
            continue;
        c->live += wbytes(c, b->size);
        int k = top_of(c, b->heap_id, b->stack_id);
        if (k >= 0) {
            c->cur[k] += wbytes(c, b->size);
            if ((rc = bmap_put(&c->blocks, b->addr, b->heap_id, k)))
                break;
        }
    }
    liveset__free(ls);
    return rc;
}

static int collect_events(struct ctx *c)
{
    struct evstream *s = NULL;
    struct vh_ev ev;
    char err[512];
    size_t i = 0;
    uint64_t max_rows = c->o.q.o.limit ? (uint64_t)c->o.q.o.limit : EVENT_ROWS_DEFAULT;
    int rc;

    if (c->ntop && !(c->cur = calloc(c->ntop, sizeof *c->cur)))
        return -ENOMEM;
    if (!c->o.per_event && (rc = rows_intervals(c)))
        return rc;
    if ((rc = replay_start(c)))
        return rc;
    c->init_live = c->live;
    if (c->ntop && !(c->init_slive = malloc(c->ntop * sizeof *c->init_slive)))
        return -ENOMEM;
    if (c->ntop)
        memcpy(c->init_slive, c->cur, c->ntop * sizeof *c->cur);
    if ((rc = evstream__open(c->db, c->from, &s, err, sizeof err))) {
        vh_errorf(c->cmd->name, "the event stream: %s", err);
        return rc;
    }
    if (c->nrows)
        c->rows[0].max_live = c->live;
    while ((rc = evstream__next(s, &ev)) == 1) {
        if (ev.time >= c->to)
            break;
        if (!heap_on(c, ev.heap_id))
            continue;
        if (c->o.per_event) {
            if (c->nrows == max_rows) {
                c->truncated = 1;
                break;
            }
            if ((rc = rows_reserve(c, c->nrows + 1)))
                break;
            struct vh_series_row *r = &c->rows[c->nrows];
            memset(r, 0, sizeof *r);
            r->start = ev.time;
            r->end = c->to;
            r->rss = -1;
            r->kind = ev.kind;
            r->size = ev.size;
            r->addr = ev.addr;
            if (c->nrows)
                c->rows[c->nrows - 1].end = ev.time;
            if ((rc = apply(c, &ev, r)))
                break;
            r->max_live = c->live;
            c->nrows++;
            row_close(c, c->nrows - 1);
            continue;
        }
        while (ev.time >= c->rows[i].end) {
            row_close(c, i++);
            c->rows[i].max_live = c->live;
        }
        if ((rc = apply(c, &ev, &c->rows[i])))
            break;
    }
    if (rc < 0) {
        if (rc != -ENOMEM)
            vh_errorf(c->cmd->name, "the event stream: %s", evstream__error(s));
    } else {
        rc = 0;
        for (; !c->o.per_event && i < c->nrows; i++) {
            row_close(c, i);
            if (i + 1 < c->nrows)
                c->rows[i + 1].max_live = c->live;
        }
    }
    evstream__close(s);
    if (c->truncated)
        vh_errorf(c->cmd->name, "warning: stopped after %" PRIu64 " events; use --limit, "
                                "--from and --to for more", max_rows);
    return rc;
}

/* RSS (the last sample before each row's end) and marks (each in the row
 * whose span holds it) into the rows. */
static int attach(struct ctx *c)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_prepare(c->cmd->name, c->db, "SELECT time, bytes FROM rss ORDER BY time", &st);
    int64_t last = -1;
    size_t i = 0;
    if (rc)
        return rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && i < c->nrows) {
        uint64_t t = (uint64_t)sqlite3_column_int64(st, 0);
        while (i < c->nrows && t >= c->rows[i].end)
            c->rows[i++].rss = last;
        last = sqlite3_column_int64(st, 1);
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        vh_errorf(c->cmd->name, "reading RSS samples: %s", sqlite3_errmsg(c->db));
        sqlite3_finalize(st);
        return -EIO;
    }
    sqlite3_finalize(st);
    for (; i < c->nrows; i++)
        c->rows[i].rss = last;

    /* marks are sorted by time, rows by start */
    size_t r = 0;
    for (size_t m = 0; m < c->nmarks && c->nrows; m++) {
        while (r + 1 < c->nrows && c->marks[m].time >= c->rows[r + 1].start)
            r++;
        if (c->marks[m].time >= c->rows[c->nrows - 1].end && c->truncated)
            break;
        if (!c->rows[r].nmarks)
            c->rows[r].mark0 = (uint32_t)m;
        c->rows[r].nmarks++;
    }
    return 0;
}

/* ---- table, JSON and CSV ------------------------------------------------------ */

static const char *kind_name(uint8_t k)
{
    switch (k) {
    case VH_EV_ALLOC: return "alloc";
    case VH_EV_FREE: return "free";
    case VH_EV_RESIZE: return "resize";
    case VH_EV_MOVE: return "move";
    case VH_EV_FAILED: return "failed";
    }
    return "?";
}

static int time_decimals(const struct ctx *c)
{
    if (c->o.per_event)
        return 6;
    return c->iv % 1000000 == 0 && c->from % 1000000 == 0 ? 3
         : c->iv % 1000 == 0 && c->from % 1000 == 0   ? 6
                                                       : 9;
}

static int emit_stacks(struct ctx *c, struct out *o)
{
    enum { S_RANK, S_NAME, S_WHERE, S_HEAP, S_MEASURE, S_STACK, S_N };
    _Static_assert(S_N == sizeof c->stack_cols / sizeof c->stack_cols[0], "stack columns");
    struct out_col *cols = c->stack_cols;     /* must outlive `o` */
    char title[200];
    int rc;

    snprintf(c->measure_key, sizeof c->measure_key, "%s", c->by->name);
    for (char *p = c->measure_key; *p; p++)
        if (*p == '-')
            *p = '_';
    cols[S_RANK] = (struct out_col){ "rank", "#", OUT_INT, 0 };
    cols[S_NAME] = (struct out_col){ "name", "function", OUT_TEXT, 0 };
    cols[S_WHERE] = (struct out_col){ "where", "where", OUT_TEXT, 0 };
    cols[S_HEAP] = (struct out_col){ "heap", "heap", OUT_TEXT, OUT_F_HIDE_SAME };
    cols[S_MEASURE] = (struct out_col){ c->measure_key, c->by->legend,
                                        c->by->bytes ? OUT_BYTES : OUT_INT, 0 };
    cols[S_STACK] = (struct out_col){ "stack_id", "stack", OUT_INT, 0 };
    snprintf(title, sizeof title, "top %zu of %zu stacks by %s (columns #1..#%zu; the rest is 'other')",
             c->ntop, c->nstacks_total, c->by->what, c->ntop);
    if ((rc = out__section(o, "stacks", OUT_LIST, title, cols, S_N)))
        return rc;
    for (size_t i = 0; i < c->ntop; i++) {
        struct top *tp = &c->tops[i];
        struct vh_series_top *t = &c->pub[i];
        struct out_val v[S_N] = {
            [S_RANK] = OV_I(i + 1),     [S_NAME] = OV_S(t->name),  [S_WHERE] = OV_S(t->where),
            [S_HEAP] = OV_S(t->heap),   [S_MEASURE] = OV_I(t->measure),
            [S_STACK] = OV_I(t->stack_id),
        };
        /* whole stacks only where a script reads them: tables stay short */
        struct out_stack *st = c->o.q.o.format == OUT_JSON ? tp->stack : NULL;
        if (st)
            tp->stack = NULL;
        if ((rc = out__row(o, v, st)))
            return rc;
    }
    return 0;
}

static int emit_marks(struct ctx *c, struct out *o, int dec)
{
    static const struct out_col json_cols[] = {
        { "time_ns", "time", OUT_NS, 0 }, { "tid", "thread", OUT_INT, 0 },
        { "label", "mark", OUT_TEXT, 0 },
    };
    static const struct out_col table_cols[] = {
        { "time", "time", OUT_TEXT, 0 }, { "tid", "thread", OUT_INT, 0 },
        { "label", "mark", OUT_TEXT, 0 },
    };
    int table = c->o.q.o.format == OUT_TABLE, rc;
    if ((rc = out__section(o, "marks", OUT_LIST, "marks", table ? table_cols : json_cols, 3)))
        return rc;
    for (size_t i = 0; i < c->nmarks; i++) {
        char t[40];
        fmt_secs(c->marks[i].time, dec, t, sizeof t);
        struct out_val v[3] = { table ? ov_text(t) : OV_I(c->marks[i].time), OV_I(c->marks[i].tid),
                                OV_S(c->marks[i].label) };
        if ((rc = out__row(o, v, NULL)))
            return rc;
    }
    return 0;
}

/* The series columns, in order; some only per event, some only in JSON. */
enum {
    R_TIME, R_END, R_EVENT, R_SIZE, R_LIVE, R_MAX, R_ALLOCS, R_FREES, R_TEMP, R_BALLOC,
    R_BFREED, R_RSS, R_STACKS, R_OTHER, R_MARKS, R_N
};

static int emit_rows(struct ctx *c, struct out *o)
{
    int table = c->o.q.o.format == OUT_TABLE, json = c->o.q.o.format == OUT_JSON;
    int per_event = c->o.per_event, dec = time_decimals(c), rc = -ENOMEM;
    size_t ncols = 0, pos[R_N] = { 0 };
    struct out_col *cols = calloc(R_N + c->ntop, sizeof *cols);
    struct out_val *v = calloc(R_N + c->ntop, sizeof *v);
    char **keys = calloc(c->ntop * 2 + 1, sizeof *keys);
    const char **words = calloc(c->nmarks + 1, sizeof *words);
    char *joined = NULL, title[160], dur[32];

    if (!cols || !v || !keys || !words)
        goto fail;
    /* one event per row: the counts and the maximum say nothing `event`
     * does not, so tables leave them out */
    unsigned in_events = per_event ? OUT_F_NO_TABLE : 0;
#define COL(id, ...) (pos[id] = ncols, cols[ncols++] = (struct out_col){ __VA_ARGS__ })
    if (table)
        COL(R_TIME, "time", "time", OUT_TEXT, 0);
    else
        COL(R_TIME, "time_ns", "time", OUT_NS, 0);
    COL(R_END, "end_ns", "end", OUT_NS, OUT_F_NO_TABLE);
    if (per_event) {
        COL(R_EVENT, "event", "event", OUT_TEXT, 0);
        COL(R_SIZE, "size", "size", OUT_BYTES, 0);
    }
    COL(R_LIVE, "live_bytes", "live", OUT_BYTES, 0);
    COL(R_MAX, "max_live_bytes", "max live", OUT_BYTES, in_events);
    COL(R_ALLOCS, "allocations", "allocs", OUT_INT, in_events);
    COL(R_FREES, "frees", "frees", OUT_INT, in_events);
    COL(R_TEMP, "temporary", "temporary", OUT_INT, per_event ? OUT_F_NO_TABLE : OUT_F_HIDE_ZERO);
    COL(R_BALLOC, "bytes_allocated", "allocated", OUT_BYTES, OUT_F_NO_TABLE);
    COL(R_BFREED, "bytes_freed", "freed", OUT_BYTES, OUT_F_NO_TABLE);
    COL(R_RSS, "rss_bytes", "RSS", OUT_BYTES, 0);
    pos[R_STACKS] = ncols;
    for (size_t k = 0; k < c->ntop; k++) {
        if (!(keys[2 * k] = vh_xasprintf("stack_%zu", k + 1)) ||
            !(keys[2 * k + 1] = vh_xasprintf("#%zu", k + 1)))
            goto fail;
        cols[ncols++] = (struct out_col){ keys[2 * k], keys[2 * k + 1], OUT_BYTES, 0 };
    }
    if (c->ntop)
        COL(R_OTHER, "other_bytes", "other", OUT_BYTES, 0);
    COL(R_MARKS, "marks", "marks", json ? OUT_WORDS : OUT_TEXT, OUT_F_HIDE_SAME);
#undef COL

    fmt_dur(c->iv, dur, sizeof dur);
    if (per_event)
        snprintf(title, sizeof title, "%zu events", c->nrows);
    else
        snprintf(title, sizeof title, "%zu intervals of %s", c->nrows, dur);
    if ((rc = out__section(o, "series", OUT_LIST, title, cols, ncols)))
        goto fail;
    for (size_t i = 0; i < c->nrows; i++) {
        const struct vh_series_row *r = &c->rows[i];
        char t[40];
        fmt_secs(r->start, dec, t, sizeof t);
        v[pos[R_TIME]] = table ? ov_text(t) : OV_I(r->start);
        v[pos[R_END]] = OV_I(r->end);
        if (per_event) {
            v[pos[R_EVENT]] = OV_S(kind_name(r->kind));
            v[pos[R_SIZE]] = OV_I(r->size);
        }
        v[pos[R_LIVE]] = OV_I(r->live);
        v[pos[R_MAX]] = OV_I(r->max_live);
        v[pos[R_ALLOCS]] = OV_I(r->allocs);
        v[pos[R_FREES]] = OV_I(r->frees);
        v[pos[R_TEMP]] = OV_I(r->temporary);
        v[pos[R_BALLOC]] = OV_I(r->bytes_alloc);
        v[pos[R_BFREED]] = OV_I(r->bytes_freed);
        v[pos[R_RSS]] = r->rss >= 0 ? OV_I(r->rss) : OV_NULLV;
        uint64_t sum = 0;
        for (size_t k = 0; k < c->ntop; k++) {
            uint64_t b = c->slive[i * c->ntop + k];
            sum += b;
            v[pos[R_STACKS] + k] = OV_I(b);
        }
        if (c->ntop)
            v[pos[R_OTHER]] = OV_I(r->live > sum ? r->live - sum : 0);
        struct out_val *mv = &v[pos[R_MARKS]];
        free(joined);
        joined = NULL;
        if (!r->nmarks) {
            *mv = OV_NULLV;
        } else if (json) {
            for (uint32_t m = 0; m < r->nmarks; m++)
                words[m] = c->marks[r->mark0 + m].label;
            *mv = (struct out_val){ .kind = OV_WORDS, .words = words, .nwords = r->nmarks };
        } else {
            /* "a; b": labels may hold spaces, so a space cannot separate.
             * A table row with many shows the first and last and a count. */
            uint32_t nm = r->nmarks, show = table && nm > 3 ? 2 : nm;
            size_t len = 32;
            for (uint32_t m = 0; m < nm; m++)
                len += strlen(c->marks[r->mark0 + m].label) + 2;
            if (!(joined = malloc(len)))
                goto fail;
            joined[0] = 0;
            for (uint32_t m = 0; m < show; m++) {
                uint32_t k = show < nm && m == 1 ? nm - 1 : m;
                if (m)
                    strcat(joined, show < nm ? " ... " : "; ");
                strcat(joined, c->marks[r->mark0 + k].label);
            }
            if (show < nm)
                sprintf(joined + strlen(joined), " (%u marks)", nm);
            *mv = OV_S(joined);
        }
        if ((rc = out__row(o, v, NULL)))
            goto fail;
    }
    /* the renderer holds pointers into cols and keys until out__end() */
    if ((rc = out__end(o)) == -EIO)
        vh_errorf(c->cmd->name, "writing the output failed");
    o = NULL;
    goto out;
fail:
    out__abort(o);
    rc = rc ? rc : -ENOMEM;
out:
    free(joined);
    free(words);
    for (size_t k = 0; keys && k < c->ntop * 2; k++)
        free(keys[k]);
    free(keys);
    free(cols);
    free(v);
    return rc;
}

static int print_output(struct ctx *c)
{
    struct out *o = vh_query__take_out(&c->o.q);
    int rc;
    if (!o)
        return -ENOMEM;
    if ((c->ntop && (rc = emit_stacks(c, o))) ||
        (rc = emit_marks(c, o, time_decimals(c)))) {
        out__abort(o);
        return rc;
    }
    return emit_rows(c, o);
}

/* ---- the command ----------------------------------------------------------------- */

/* A 1-2-5 step giving at most 600 intervals; a multiple of the series
 * table's buckets when those can answer. */
static uint64_t default_interval(const struct ctx *c, int coarse_ok)
{
    uint64_t span = c->to - c->from;
    for (uint64_t scale = 1000; scale < UINT64_MAX / 10; scale *= 10)
        for (int i = 0; i < 3; i++) {
            uint64_t iv = (uint64_t[]){ 1, 2, 5 }[i] * scale;
            if (coarse_ok && (iv < c->bucket_ns || iv % c->bucket_ns))
                continue;
            if (span / iv < 600)
                return iv;
        }
    return span;
}

int vh_series_main(const struct vh_command *cmd, enum vh_series_mode mode, int argc, char **argv)
{
    struct ctx c = { .cmd = cmd, .mode = mode };
    int rc;

    if ((rc = parse_opts(cmd, mode, argc, argv, &c.o)))
        goto out;
    c.by = &measures[0];
    if (c.o.q.o.by) {
        c.by = NULL;
        for (size_t i = 0; i < sizeof measures / sizeof measures[0]; i++)
            if (!strcmp(c.o.q.o.by, measures[i].name))
                c.by = &measures[i];
        if (!c.by) {
            rc = vh_query__usage(&c.o.q, "--by: '%s' is not one of peak, max-live, allocations, "
                                         "bytes, leaked", c.o.q.o.by);
            goto out;
        }
    }
    if (mode == VH_SERIES_CHART && !c.o.svg) {
        rc = vh_query__usage(&c.o.q, "-o FILE.svg is needed (see vheap-analyze %s --help)",
                             cmd->name);
        goto out;
    }
    if ((rc = vh_query__open(&c.o.q, mode == VH_SERIES_TABLE ? VH_QUERY_OUTPUT : 0)))
        goto out;
    c.db = c.o.q.db;
    c.rate = (uint64_t)vh_rec_sample_rate(c.db);
    if ((rc = read_basics(&c)))
        goto out;

    /* the window */
    c.from = c.o.from;
    c.to = c.o.has_to ? c.o.to : c.runtime + 1;
    if (c.to > c.runtime + 1)
        c.to = c.runtime + 1;
    if (c.from >= c.to) {
        char r[40];
        fmt_secs(c.runtime, 3, r, sizeof r);
        vh_errorf(cmd->name, "--from is at or after the end of the recording (%s)", r);
        rc = -ERANGE;
        goto out;
    }
    if (!c.have_events && (c.o.per_event || c.o.top)) {
        if (c.o.per_event) {
            vh_errorf(cmd->name, "this database has no event stream (made by an older vheap?): "
                                 "reload the capture with `vheap-analyze load` for --interval "
                                 "event");
            rc = -ENOTSUP;
            goto out;
        }
        if (c.o.top)
            vh_errorf(cmd->name, "warning: this database has no event stream: no split by stack "
                                 "(reload the capture with `vheap-analyze load`)");
        c.o.top = 0;
    }
    /* The series table answers when no split is asked for, its buckets
     * tile the intervals, and one heap is involved (its per-bucket maximum
     * does not add up across heaps); the event stream answers the rest. */
    uint64_t w = c.bucket_ns;
    int coarse_ok = w && !c.o.per_event && !c.o.top && c.from % w == 0 &&
                    (!c.o.has_to || c.to % w == 0 || c.to > c.runtime);
    if (coarse_ok && c.have_events && c.nsel > 1) {
        /* (without an event stream, the sum of each heap's maximum stands
         * in for the maximum of the sum) */
        size_t used = 0;
        sqlite3_stmt *st = NULL;
        if ((rc = vh_prepare(cmd->name, c.db, "SELECT DISTINCT heap_id FROM series", &st)))
            goto out;
        while (sqlite3_step(st) == SQLITE_ROW) {
            int64_t h = sqlite3_column_int64(st, 0);
            used += h >= 0 && heap_on(&c, (uint32_t)h);
        }
        sqlite3_finalize(st);
        coarse_ok = used <= 1;
    }
    /* a default the buckets can answer, unless they are too coarse for it */
    int coarse_dflt = coarse_ok && (!c.have_events || (c.to - c.from) / w >= 100);
    c.iv = c.o.per_event ? 0 : c.o.interval ? c.o.interval : default_interval(&c, coarse_dflt);
    if (c.iv && w && c.iv % w)
        coarse_ok = 0;
    if (!coarse_ok && !c.have_events) {
        char b[32];
        fmt_dur(w, b, sizeof b);
        vh_errorf(cmd->name, "this database has no event stream: intervals must be multiples "
                             "of %s, and --from/--to too", b);
        rc = -ENOTSUP;
        goto out;
    }
    if (c.o.per_event)
        c.iv = 0;
    if ((rc = read_tops(&c)) || (rc = read_marks(&c)))
        goto out;
    rc = coarse_ok ? collect_coarse(&c) : collect_events(&c);
    if (rc || (rc = attach(&c)))
        goto out;
    if (c.o.per_event && c.nrows) {
        /* for the table title and the chart bins */
        c.iv = (c.to - c.from) / c.nrows ? (c.to - c.from) / c.nrows : 1;
    }
    if (mode == VH_SERIES_TABLE && (rc = print_output(&c)))
        goto out;
    if (c.o.svg) {
        /* a coarse-clock run's times were spread over the clock's ticks by
         * the loader (coarse.c): the axis says so */
        char xt[160] = "time since the program started";
        long long ticks = db__meta_int(c.db, "coarse_ticks", 0);
        long long res = db__meta_int(c.db, "coarse_clock_ns", 0);
        if (ticks > 0 && res > 0)
            snprintf(xt, sizeof xt, "time since the program started (interpolated between "
                     "clock ticks %g ms apart)", (double)res / 1e6);
        struct vh_series vs = {
            .from = c.from, .to = c.to, .interval = c.iv, .per_event = c.o.per_event,
            .exe = c.exe, .pid = c.pid, .heap = c.o.q.o.heap, .nheaps = c.nsel,
            .measure_what = c.by->what, .measure_legend = c.by->legend,
            .measure_bytes = c.by->bytes, .tops = c.pub, .ntop = c.ntop,
            .nstacks = c.nstacks_total, .rows = c.rows, .nrows = c.nrows, .slive = c.slive,
            .init_live = c.init_live, .init_slive = c.init_slive, .marks = c.marks,
            .nmarks = c.nmarks, .x_title = xt,
        };
        if (vh_series_draw(cmd->name, &vs, c.o.svg))
            rc = -EIO;                 /* said already */
    }
out:
    if (rc == -ENOMEM)
        vh_errorf(cmd->name, "out of memory");
    for (size_t i = 0; i < c.ntop; i++) {
        free(c.pub[i].name);
        free(c.pub[i].where);
        free(c.pub[i].text);
        free(c.pub[i].heap);
        free(c.tops[i].first);
        free(c.tops[i].second);
        out_stack__free(c.tops[i].stack);
    }
    free(c.pub);
    for (size_t i = 0; i < c.nmarks; i++)
        free(c.marks[i].label);
    free(c.marks);
    free(c.tops);
    free(c.keys);
    free(c.rows);
    free(c.slive);
    free(c.init_slive);
    free(c.cur);
    vh_map__free(c.blocks);
    free(c.heap_on);
    free(c.hsel);
    free(c.exe);
    return vh_query__finish(&c.o.q, rc);
}
