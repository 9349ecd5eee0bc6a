/* cmd/frag.c — `vheap-analyze frag`: why the heap takes more memory than its
 * live blocks (docs/fragmentation.md). One moment in detail (--at), the
 * headline numbers over time (--series, replaying the event stream into a
 * fragtrack), or a picture of one heap's address space (--map). The numbers
 * themselves are computed in frag.c; this file reads the DB and renders. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/size_parse.h"
#include "analyze/cmd/cli.h"
#include "analyze/store/db.h"
#include "analyze/store/events.h"
#include "analyze/query/frag.h"
#include "analyze/report/frag_map.h"
#include "analyze/query/frame_rule.h"
#include "analyze/util/grow.h"
#include "analyze/cmd/query.h"
#include "analyze/render/svg.h"

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

#define SERIES_ROWS 200u
#define MAX_POINTS 1000000u
#define SERIES_AHEAD 16u              /* --series: events read ahead         */
#define MAP_STACKS 11

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

/* ---- the database --------------------------------------------------------- */

struct hinfo {
    uint32_t id;
    int64_t parent; /* -1: none                              */
    char *name;
    uint64_t base, size;           /* size 0: no bounds                     */
    int64_t create, destroy;       /* destroy -1: never                     */
    int64_t peak_bytes, peak_time;
};

struct rss {
    uint64_t time;
    int64_t bytes;
};

/* A declared region of a chosen heap (the regions table), for as long as
 * it lasted: fragmentation counts it as occupied. */
struct rinfo {
    uint32_t heap;
    uint64_t base, size;
    int64_t start, end;            /* end -1: still there at the end        */
};

/* Regions take frag_heap ids from here up (no block carries them). */
#define REGION_ID0 FRAG_REGION_ID0

struct ctx {
    const struct vh_command *cmd;
    struct fopts o;
    sqlite3 *db;
    struct hinfo *h;               /* the heaps chosen, by id               */
    size_t nh;
    uint64_t end_time;
    struct rss *rss;
    size_t nrss;
    struct rinfo *r;               /* regions of the chosen heaps           */
    size_t nr;
    char *exe;
    int64_t pid;
};

static int db_fail(struct ctx *c, const char *what)
{
    vh_errorf(c->cmd->name, "%s: %s", what, sqlite3_errmsg(c->db));
    return -EIO;
}

static int read_heaps(struct ctx *c)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc;

    if ((rc = vh_prepare(c->cmd->name, c->db,
                         "SELECT h.id, h.name, h.base, h.size, h.create_time, h.destroy_time,"
                         "       h.peak_bytes, h.peak_time, h.parent_id"
                         " FROM heaps h WHERE " VH_HEAP_SEL("h.id", "?1") " ORDER BY h.id",
                         &st)))
        return rc;
    vh_bind_heap(st, 1, &c->o.q.o);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (vh_grow(&c->h, &cap, c->nh, sizeof *c->h, 16)) {
            rc = -ENOMEM;
            goto out;
        }
        struct hinfo *h = &c->h[c->nh];
        int64_t id = sqlite3_column_int64(st, 0), base = sqlite3_column_int64(st, 2),
                size = sqlite3_column_int64(st, 3);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        if (id < 0 || id > UINT32_MAX)
            continue;
        memset(h, 0, sizeof *h);
        h->id = (uint32_t)id;
        if (!(h->name = strdup(name ? name : "?"))) {
            rc = -ENOMEM;
            goto out;
        }
        if (sqlite3_column_type(st, 2) != SQLITE_NULL && base > 0 && size > 0) {
            h->base = (uint64_t)base;
            h->size = (uint64_t)size;
        }
        h->create = sqlite3_column_int64(st, 4);
        h->destroy = sqlite3_column_type(st, 5) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 5);
        h->peak_bytes = sqlite3_column_int64(st, 6);
        h->peak_time = sqlite3_column_int64(st, 7);
        h->parent = sqlite3_column_type(st, 8) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 8);
        c->nh++;
    }
    rc = rc == SQLITE_DONE ? 0 : db_fail(c, "reading heaps");
out:
    sqlite3_finalize(st);
    if (rc == -ENOMEM)
        vh_errorf(c->cmd->name, "out of memory");
    return rc;
}

static int read_basics(struct ctx *c)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_prepare(c->cmd->name, c->db,
                        "SELECT coalesce((SELECT max(runtime_ns) FROM processes),"
                        "                (SELECT max(last_time) FROM events), 0),"
                        "       (SELECT exe FROM processes LIMIT 1),"
                        "       (SELECT pid FROM processes LIMIT 1)",
                        &st);
    if (rc)
        return rc;
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = db_fail(c, "reading the process");
    } else {
        int64_t t = sqlite3_column_int64(st, 0);
        const char *exe = (const char *)sqlite3_column_text(st, 1);
        c->end_time = t > 0 ? (uint64_t)t : 0;
        c->pid = sqlite3_column_int64(st, 2);
        if (exe && !(c->exe = strdup(exe)))
            rc = -ENOMEM;
    }
    sqlite3_finalize(st);
    if (rc == -ENOMEM)
        vh_errorf(c->cmd->name, "out of memory");
    if (rc)
        return rc;
    if ((rc = vh_prepare(c->cmd->name, c->db, "SELECT time, bytes FROM rss ORDER BY time", &st)))
        return rc;
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (vh_grow(&c->rss, &cap, c->nrss, sizeof *c->rss, 256)) {
            sqlite3_finalize(st);
            vh_errorf(c->cmd->name, "out of memory");
            return -ENOMEM;
        }
        int64_t t = sqlite3_column_int64(st, 0);
        c->rss[c->nrss++] = (struct rss){ t > 0 ? (uint64_t)t : 0, sqlite3_column_int64(st, 1) };
    }
    rc = rc == SQLITE_DONE ? 0 : db_fail(c, "reading RSS samples");
    sqlite3_finalize(st);
    return rc;
}

/* The last RSS sample at or before t, or NULL. */
static const struct rss *rss_at(const struct ctx *c, uint64_t t)
{
    size_t lo = 0, hi = c->nrss;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->rss[mid].time <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? &c->rss[lo - 1] : NULL;
}

static const struct hinfo *heap_info(const struct ctx *c, uint32_t id)
{
    size_t lo = 0, hi = c->nh;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->h[mid].id == id)
            return &c->h[mid];
        if (c->h[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int alive(const struct hinfo *h, uint64_t t)
{
    return (h->create <= 0 || (uint64_t)h->create <= t) &&
           (h->destroy < 0 || (uint64_t)h->destroy > t);
}

/* The regions of the chosen heaps, in declaration order. */
static int read_regions(struct ctx *c)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc;

    if ((rc = vh_prepare(c->cmd->name, c->db,
                         "SELECT heap_id, base, size, start_time, end_time FROM regions"
                         " ORDER BY rowid", &st)))
        return rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t heap = sqlite3_column_int64(st, 0), base = sqlite3_column_int64(st, 1),
                size = sqlite3_column_int64(st, 2);
        if (heap < 0 || heap > UINT32_MAX || !heap_info(c, (uint32_t)heap) || base <= 0 ||
            size <= 0 || c->nr >= UINT32_MAX - REGION_ID0)
            continue;
        if (vh_grow(&c->r, &cap, c->nr, sizeof *c->r, 16)) {
            rc = -ENOMEM;
            break;
        }
        c->r[c->nr++] = (struct rinfo){
            (uint32_t)heap, (uint64_t)base, (uint64_t)size, sqlite3_column_int64(st, 3),
            sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 4) };
    }
    if (rc != -ENOMEM)
        rc = rc == SQLITE_DONE ? 0 : db_fail(c, "reading regions");
    sqlite3_finalize(st);
    if (rc == -ENOMEM)
        vh_errorf(c->cmd->name, "out of memory");
    return rc;
}

/* Region i as frag sees it: a part of its heap, existing at t when both
 * it and its heap do. */
static struct frag_heap region_heap(const struct ctx *c, size_t i)
{
    return (struct frag_heap){ .id = REGION_ID0 + (uint32_t)i, .base = c->r[i].base,
                               .size = c->r[i].size, .parent = c->r[i].heap, .region = 1 };
}

static int region_alive(const struct ctx *c, size_t i, uint64_t t)
{
    const struct rinfo *r = &c->r[i];
    return (uint64_t)(r->start > 0 ? r->start : 0) <= t && (r->end < 0 || (uint64_t)r->end > t) &&
           alive(heap_info(c, r->heap), t);
}

/* --at: the instant, and how to name it. */
static int resolve_at(struct ctx *c, uint64_t *t, char *what, size_t len)
{
    const char *at = c->o.at ? c->o.at : "end";
    char tb[32];

    if (!strcmp(at, "end")) {
        *t = c->end_time;
        snprintf(what, len, "end");
        return 0;
    }
    if (!strcmp(at, "peak")) {
        const struct hinfo *best = NULL;
        for (size_t i = 0; i < c->nh; i++)
            if (c->h[i].peak_bytes > 0 && (!best || c->h[i].peak_bytes > best->peak_bytes))
                best = &c->h[i];
        if (!best) {
            vh_errorf(c->cmd->name, "--at peak: no allocation in the heaps chosen");
            return -ENOENT;
        }
        *t = best->peak_time > 0 ? (uint64_t)best->peak_time : 0;
        snprintf(what, len, "peak of heap %s", best->name);
        return 0;
    }
    if (!strncmp(at, "mark:", 5)) {
        sqlite3_stmt *st = NULL;
        int rc = vh_prepare(c->cmd->name, c->db,
                            "SELECT time FROM marks WHERE label = ?1 ORDER BY time LIMIT 1", &st);
        if (rc)
            return rc;
        sqlite3_bind_text(st, 1, at + 5, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            int64_t v = sqlite3_column_int64(st, 0);
            *t = v > 0 ? (uint64_t)v : 0;
            snprintf(what, len, "mark '%s'", at + 5);
            rc = 0;
        } else if (rc == SQLITE_DONE) {
            sqlite3_finalize(st);
            st = NULL;
            if (!vh_prepare(c->cmd->name, c->db,
                            "SELECT group_concat(label, ', ') FROM"
                            " (SELECT DISTINCT label FROM marks ORDER BY time LIMIT 20)",
                            &st) &&
                sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
                vh_errorf(c->cmd->name, "--at: no mark labelled '%s' (marks: %s)", at + 5,
                          (const char *)sqlite3_column_text(st, 0));
            else
                vh_errorf(c->cmd->name, "--at: no mark labelled '%s' (the capture has no marks)",
                          at + 5);
            rc = -ENOENT;
        } else {
            rc = db_fail(c, "reading marks");
        }
        sqlite3_finalize(st);
        return rc;
    }
    if (vh_parse_time(at, t)) {
        vh_errorf(c->cmd->name, "--at: '%s' is not end, peak, mark:LABEL or a time like 1.5s",
                  at);
        return -EINVAL;
    }
    if (*t > c->end_time) {
        char eb[32];
        vh_errorf(c->cmd->name, "--at %s is after the end of the run (%s): give a time "
                                "within it, or end", at,
                  out__human_ns((int64_t)c->end_time, eb, sizeof eb));
        return -ERANGE;
    }
    snprintf(what, len, "%s", out__human_ns((int64_t)*t, tb, sizeof tb));
    return 0;
}

/* The blocks of the chosen heaps live at t (sorted by heap, address). */
static int live_at(struct ctx *c, uint64_t t, struct liveset **out)
{
    char err[256];
    int64_t one = c->nh == 1 ? (int64_t)c->h[0].id : -1;
    struct liveset *ls;
    int rc = liveset__at(c->db, t, one, &ls, err, sizeof err);
    if (rc) {
        vh_errorf(c->cmd->name, "the live set at %" PRIu64 " ns: %s", t, err);
        return rc;
    }
    if (one < 0 && c->o.q.o.heap) {
        size_t k = 0;
        for (size_t i = 0; i < ls->n; i++)
            if (heap_info(c, ls->blocks[i].heap_id))
                ls->blocks[k++] = ls->blocks[i];
        ls->n = k;
    }
    *out = ls;
    return 0;
}

/* The chosen heaps that exist at t, with their bounds. */
static struct frag_heap *heaps_at(const struct ctx *c, uint64_t t, size_t *n)
{
    struct frag_heap *fh = malloc((c->nh + c->nr + 1) * sizeof *fh);
    *n = 0;
    for (size_t i = 0; fh && i < c->nh; i++)
        if (alive(&c->h[i], t))
            fh[(*n)++] = (struct frag_heap){ c->h[i].id, c->h[i].base, c->h[i].size,
                                             c->h[i].parent, 0 };
    for (size_t i = 0; fh && i < c->nr; i++)
        if (region_alive(c, i, t))
            fh[(*n)++] = region_heap(c, i);
    return fh;
}

/* ---- naming stacks -------------------------------------------------------- */

#define NAME_FRAMES 4

/* A stack for a legend: its first frames that are not machinery, the first
 * as "function (file.c:42)", and every frame one a line for the tooltip. */
struct sname {
    char *f[NAME_FRAMES];
    size_t n;
    char *text;
};

static void sname_free(struct sname *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->f[i]);
    free(s->text);
    memset(s, 0, sizeof *s);
}

static int sname_read(struct vh_stacks *s, uint32_t id, struct sname *out)
{
    int err = 0;
    struct out_stack *st = vh_stacks__get(s, id, &err);
    size_t len = 0, cap = 256;
    char buf[600];

    memset(out, 0, sizeof *out);
    if (!st || !(out->text = malloc(cap))) {
        out_stack__free(st);
        return err ? err : -ENOMEM;
    }
    out->text[0] = 0;
    for (size_t i = 0; i < st->n; i++) {
        const struct out_frame *f = &st->frames[i];
        if (f->function)
            snprintf(buf, sizeof buf, "%s", f->function);
        else
            snprintf(buf, sizeof buf, "0x%" PRIx64 " in %s", (uint64_t)f->address,
                     f->module ? vh_base_name(f->module) : "?");
        size_t n = strlen(buf);
        if (vh_reserve(&out->text, &cap, len + n + 2, 1, 256))
            break;
        memcpy(out->text + len, buf, n);
        len += n;
        out->text[len++] = '\n';
        out->text[len] = 0;
    }
    /* named as series names it (query/frame_rule.h) */
    struct vh_lframe lf[256];
    size_t pick[NAME_FRAMES], nl = vh_lframes(st, lf, 256);
    size_t np = vh_naming_frames(lf, nl, pick, NAME_FRAMES);
    for (size_t k = 0; k < np; k++) {
        const struct vh_lframe *f = &lf[pick[k]];
        vh_frame_name(f, buf, sizeof buf);
        size_t n = strlen(buf);
        if (!k && f->function && f->file && f->line > 0)
            snprintf(buf + n, sizeof buf - n, " (%s:%" PRId64 ")", vh_base_name(f->file), f->line);
        if (!(out->f[out->n] = strdup(buf)))
            break;
        out->n++;
    }
    out_stack__free(st);
    if (!out->n && !(out->f[out->n++] = strdup(id ? "(stack without frames)"
                                                  : "(no stack recorded)")))
        out->n = 0;
    return out->n ? 0 : -ENOMEM;
}

/* "f (f.c:1) < caller < its caller": the first `depth` frames. */
static char *sname_compose(const struct sname *s, size_t depth)
{
    size_t len = 1;
    if (depth > s->n)
        depth = s->n;
    for (size_t i = 0; i < depth; i++)
        len += strlen(s->f[i]) + 3;
    char *out = malloc(len);
    if (!out)
        return NULL;
    out[0] = 0;
    for (size_t i = 0; i < depth; i++) {
        if (i)
            strcat(out, " < ");
        strcat(out, s->f[i]);
    }
    return out;
}

/* ---- one moment ----------------------------------------------------------- */

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* A text cell from a buffer (OV_S tests its argument for NULL). */
static struct out_val ov_text(const char *s)
{
    return (struct out_val){ .kind = OV_TEXT, .s = s };
}

static struct out_val ov_pct(uint64_t part, uint64_t whole)
{
    return whole ? OV_R(round(pct(part, whole) * 100) / 100) : OV_NULLV;
}

enum {
    S_AT, S_TIME, S_HEAPS, S_PAGE, S_BLOCKS, S_REQ, S_USABLE, S_SLACK, S_SLACK_PCT,
    S_PAGES, S_PUSED, S_PUTIL, S_PFREE, S_SPARSE, S_PINNED, S_REGIONS, S_FOOT, S_UTIL, S_FREE,
    S_HOLES, S_LARGEST, S_EXT, S_UNUSABLE, S_FIT64, S_FIT4K, S_FIT1M, S_GAPS, S_RECLAIM,
    S_RSS, S_RSS_TIME, S_RSS_OVER, S_N
};

static const struct out_col scols[S_N] = {
    [S_AT] = { "at", "at", OUT_TEXT, 0 },
    [S_TIME] = { "time_ns", "time", OUT_NS, 0 },
    [S_HEAPS] = { "heaps", "heaps", OUT_WORDS, 0 },
    [S_PAGE] = { "page_size", "page size (bytes)", OUT_INT, 0 },
    [S_BLOCKS] = { "live_blocks", "live blocks", OUT_INT, 0 },
    [S_REQ] = { "requested", "live requested", OUT_BYTES, 0 },
    [S_USABLE] = { "usable", "live usable", OUT_BYTES, 0 },
    [S_SLACK] = { "slack", "internal slack (usable - requested)", OUT_BYTES, 0 },
    [S_SLACK_PCT] = { "slack_pct", "slack % of usable", OUT_REAL, OUT_F_NO_TABLE },
    [S_PAGES] = { "pages", "pages touched", OUT_INT, 0 },
    [S_PUSED] = { "page_bytes_used", "page bytes used", OUT_BYTES, OUT_F_NO_TABLE },
    [S_PUTIL] = { "page_utilization_pct", "page utilization %", OUT_REAL, 0 },
    [S_PFREE] = { "page_free", "free bytes on touched pages", OUT_BYTES, 0 },
    [S_SPARSE] = { "sparse_pages", "sparse pages", OUT_INT, 0 },
    [S_PINNED] = { "pinned", "pinned by sparse pages (their free bytes)", OUT_BYTES, 0 },
    [S_REGIONS] = { "regions", "regions", OUT_INT, 0 },
    [S_FOOT] = { "footprint", "footprint (size of the regions)", OUT_BYTES, 0 },
    [S_UTIL] = { "utilization_pct", "utilization % (usable / footprint)", OUT_REAL, 0 },
    [S_FREE] = { "free", "free in holes", OUT_BYTES, 0 },
    [S_HOLES] = { "holes", "holes", OUT_INT, 0 },
    [S_LARGEST] = { "largest_hole", "largest hole", OUT_BYTES, 0 },
    [S_EXT] = { "external_fragmentation_pct", "external fragmentation % (1 - largest/free)",
                OUT_REAL, 0 },
    [S_UNUSABLE] = { "unusable", "free in pieces smaller than a page", OUT_BYTES, 0 },
    [S_FIT64] = { "fit_64", "free that 64 B blocks could fill", OUT_BYTES, 0 },
    [S_FIT4K] = { "fit_4k", "free that 4 KiB blocks could fill", OUT_BYTES, 0 },
    [S_FIT1M] = { "fit_1m", "free that 1 MiB blocks could fill", OUT_BYTES, 0 },
    [S_GAPS] = { "small_gaps", "gaps narrower than --min-hole (headers)", OUT_BYTES,
                 OUT_F_HIDE_ZERO },
    [S_RECLAIM] = { "reclaim", "compaction would reclaim", OUT_BYTES, 0 },
    [S_RSS] = { "rss", "RSS", OUT_BYTES, 0 },
    [S_RSS_TIME] = { "rss_time_ns", "RSS sampled at", OUT_NS, OUT_F_NO_TABLE },
    [S_RSS_OVER] = { "rss_over_usable", "RSS - live usable", OUT_BYTES, 0 },
};

enum {
    R_HEAP, R_KIND, R_LO, R_HI, R_RANGE, R_SIZE, R_BLOCKS, R_REQ, R_USABLE, R_FREE, R_HOLES,
    R_LARGEST, R_LARGEST_AT, R_EXT, R_SPAN, R_RECLAIM, R_PAGES, R_PUSED, R_PUTIL, R_SPARSE, R_PINNED,
    R_GAPS, R_UNUSABLE, R_FIT64, R_FIT4K, R_FIT1M, R_N
};

static const struct out_col rcols[R_N] = {
    [R_HEAP] = { "heap", "heap", OUT_TEXT, OUT_F_HIDE_SAME },
    [R_KIND] = { "kind", "bounds", OUT_TEXT, OUT_F_HIDE_SAME },
    [R_LO] = { "lo", "lo", OUT_INT, OUT_F_NO_TABLE },
    [R_HI] = { "hi", "hi", OUT_INT, OUT_F_NO_TABLE },
    [R_RANGE] = { "range", "address range", OUT_TEXT, 0 },
    [R_SIZE] = { "size", "size", OUT_BYTES, 0 },
    [R_BLOCKS] = { "blocks", "blocks", OUT_INT, 0 },
    [R_REQ] = { "requested", "requested", OUT_BYTES, OUT_F_NO_TABLE },
    [R_USABLE] = { "usable", "usable", OUT_BYTES, 0 },
    [R_FREE] = { "free", "free", OUT_BYTES, 0 },
    [R_HOLES] = { "holes", "holes", OUT_INT, 0 },
    [R_LARGEST] = { "largest_hole", "largest", OUT_BYTES, 0 },
    [R_LARGEST_AT] = { "largest_hole_at", "largest at", OUT_INT, OUT_F_NO_TABLE },
    [R_EXT] = { "external_fragmentation_pct", "ext frag %", OUT_REAL, 0 },
    [R_SPAN] = { "span", "span", OUT_BYTES, OUT_F_NO_TABLE },
    [R_RECLAIM] = { "reclaim", "reclaim", OUT_BYTES, OUT_F_HIDE_ZERO },
    [R_PAGES] = { "pages", "pages", OUT_INT, 0 },
    [R_PUSED] = { "page_bytes_used", "page bytes used", OUT_BYTES, OUT_F_NO_TABLE },
    [R_PUTIL] = { "page_utilization_pct", "page util %", OUT_REAL, 0 },
    [R_SPARSE] = { "sparse_pages", "sparse", OUT_INT, 0 },
    [R_PINNED] = { "pinned", "pinned", OUT_BYTES, 0 },
    [R_GAPS] = { "small_gaps", "small gaps", OUT_BYTES, OUT_F_NO_TABLE },
    [R_UNUSABLE] = { "unusable", "unusable", OUT_BYTES, OUT_F_NO_TABLE },
    [R_FIT64] = { "fit_64", "fit 64 B", OUT_BYTES, OUT_F_NO_TABLE },
    [R_FIT4K] = { "fit_4k", "fit 4 KiB", OUT_BYTES, OUT_F_NO_TABLE },
    [R_FIT1M] = { "fit_1m", "fit 1 MiB", OUT_BYTES, OUT_F_NO_TABLE },
};

enum { H_RANGE, H_MIN, H_MAX, H_HOLES, H_BYTES, H_PCT, H_N };

static const struct out_col hcols[H_N] = {
    [H_RANGE] = { "range", "hole size", OUT_TEXT, 0 },
    [H_MIN] = { "min", "min", OUT_INT, OUT_F_NO_TABLE },
    [H_MAX] = { "max", "max", OUT_INT, OUT_F_NO_TABLE },
    [H_HOLES] = { "holes", "holes", OUT_INT, 0 },
    [H_BYTES] = { "bytes", "bytes", OUT_BYTES, 0 },
    [H_PCT] = { "free_pct", "% of free", OUT_REAL, 0 },
};

enum { C_RANGE, C_MIN, C_MAX, C_BLOCKS, C_REQ, C_USABLE, C_SLACK, C_PCT, C_N };

static const struct out_col ccols[C_N] = {
    [C_RANGE] = { "range", "requested size", OUT_TEXT, 0 },
    [C_MIN] = { "min", "min", OUT_INT, OUT_F_NO_TABLE },
    [C_MAX] = { "max", "max", OUT_INT, OUT_F_NO_TABLE },
    [C_BLOCKS] = { "blocks", "blocks", OUT_INT, 0 },
    [C_REQ] = { "requested", "requested", OUT_BYTES, 0 },
    [C_USABLE] = { "usable", "usable", OUT_BYTES, 0 },
    [C_SLACK] = { "slack", "slack", OUT_BYTES, 0 },
    [C_PCT] = { "slack_pct", "slack %", OUT_REAL, 0 },
};

enum { K_HEAP_ID, K_HEAP, K_STACK, K_BLOCKS, K_REQ, K_USABLE, K_SLACK, K_PCT, K_PINNED, K_WASTE,
       K_N };

static const struct out_col kcols[K_N] = {
    [K_HEAP_ID] = { "heap_id", "heap id", OUT_INT, OUT_F_NO_TABLE },
    [K_HEAP] = { "heap", "heap", OUT_TEXT, OUT_F_HIDE_SAME },
    [K_STACK] = { "stack_id", "stack", OUT_INT, OUT_F_NO_TABLE },
    [K_BLOCKS] = { "blocks", "blocks", OUT_INT, 0 },
    [K_REQ] = { "requested", "requested", OUT_BYTES, 0 },
    [K_USABLE] = { "usable", "usable", OUT_BYTES, 0 },
    [K_SLACK] = { "slack", "slack", OUT_BYTES, 0 },
    [K_PCT] = { "slack_pct", "slack %", OUT_REAL, 0 },
    [K_PINNED] = { "pinned", "pinned", OUT_BYTES, 0 },
    [K_WASTE] = { "waste", "slack + pinned", OUT_BYTES, 0 },
};

/* "64 B", "4 KiB", "2 MiB": a power of two in binary units. */
static void pow2_name(unsigned k, char *buf, size_t len)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    snprintf(buf, len, "%llu %s", 1ull << (k % 10), unit[k / 10]);
}

static const char *heap_name(const struct ctx *c, uint32_t id)
{
    const struct hinfo *h = heap_info(c, id);
    return h ? h->name : "?";
}

static int by_region_size(const void *x, const void *y)
{
    const struct frag_region *a = x, *b = y;
    uint64_t sa = a->hi - a->lo, sb = b->hi - b->lo;
    if (sa != sb)
        return sa > sb ? -1 : 1;
    if (a->heap_id != b->heap_id)
        return a->heap_id < b->heap_id ? -1 : 1;
    return (a->lo > b->lo) - (a->lo < b->lo);
}

static int emit_summary(struct ctx *c, struct out *o, const struct frag_report *r, uint64_t t,
                        const char *what, const struct frag_heap *fh, size_t nfh)
{
    const struct frag_totals *x = &r->t;
    struct out_val v[S_N];
    const char **names = calloc(nfh + 1, sizeof *names);
    char slack_note[64], sparse_note[64], rss_note[64], tb[32];
    int bounded = 0, rc;

    size_t nnames = 0;
    char more[48];
    if (!names)
        return -ENOMEM;
    for (size_t i = 0; i < nfh; i++) {
        /* a Vere run has thousands of roads: name a few */
        if (nnames < 12)
            names[nnames++] = heap_name(c, fh[i].id);
        bounded |= fh[i].size != 0;
    }
    if (nfh > nnames) {
        snprintf(more, sizeof more, "(and %zu more)", nfh - nnames);
        names[nnames++] = more;
    }
    for (int i = 0; i < S_N; i++)
        v[i] = OV_NULLV;
    v[S_AT] = OV_S(what);
    v[S_TIME] = OV_I(t);
    v[S_HEAPS] = (struct out_val){ .kind = OV_WORDS, .words = names, .nwords = nnames };
    v[S_PAGE] = OV_I(c->o.fo.page_size);
    v[S_BLOCKS] = OV_I(x->blocks);
    v[S_REQ] = OV_I(x->requested);
    v[S_USABLE] = OV_I(x->usable);
    v[S_SLACK] = OV_I(x->usable - x->requested);
    snprintf(slack_note, sizeof slack_note, "%.2f%% of usable", pct(x->usable - x->requested,
                                                                    x->usable));
    v[S_SLACK].note = slack_note;
    v[S_SLACK_PCT] = ov_pct(x->usable - x->requested, x->usable);
    v[S_PAGES] = OV_I(x->pages);
    v[S_PUSED] = OV_I(x->page_bytes_used);
    v[S_PUTIL] = ov_pct(x->page_bytes_used, x->pages * c->o.fo.page_size);
    v[S_PFREE] = OV_I(x->pages * c->o.fo.page_size - x->page_bytes_used);
    v[S_SPARSE] = OV_I(x->sparse_pages);
    snprintf(sparse_note, sizeof sparse_note, "less than %u%% used", c->o.fo.sparse_pct);
    v[S_SPARSE].note = sparse_note;
    v[S_PINNED] = OV_I(x->pinned);
    v[S_REGIONS] = OV_I(x->regions);
    v[S_FOOT] = OV_I(x->footprint);
    v[S_UTIL] = ov_pct(x->usable, x->footprint);
    v[S_FREE] = OV_I(x->free);
    v[S_HOLES] = OV_I(x->holes);
    v[S_LARGEST] = OV_I(x->largest);
    v[S_EXT] = x->free ? OV_R(round((1.0 - (double)x->largest / (double)x->free) * 10000) / 100)
                       : OV_NULLV;
    v[S_UNUSABLE] = OV_I(x->unusable);
    v[S_FIT64] = OV_I(x->fit[0]);
    v[S_FIT4K] = OV_I(x->fit[1]);
    v[S_FIT1M] = OV_I(x->fit[2]);
    v[S_GAPS] = OV_I(x->overhead);
    if (bounded)
        v[S_RECLAIM] = OV_I(x->reclaim);
    const struct rss *rs = rss_at(c, t);
    if (rs) {
        v[S_RSS] = OV_I(rs->bytes);
        snprintf(rss_note, sizeof rss_note, "sampled at %s",
                 out__human_ns((int64_t)rs->time, tb, sizeof tb));
        v[S_RSS].note = rss_note;
        v[S_RSS_TIME] = OV_I(rs->time);
        v[S_RSS_OVER] = OV_I(rs->bytes - (int64_t)x->usable);
    }
    rc = out__section(o, "frag", OUT_OBJECT, NULL, scols, S_N);
    if (!rc)
        rc = out__row(o, v, NULL);
    if (!rc && !x->blocks)
        rc = out__table_note(o, "nothing of the heaps chosen is live then; try --at peak, "
                                "--at TIME or --series");
    free(names);
    return rc;
}

static int emit_regions(struct ctx *c, struct out *o, struct frag_report *r)
{
    size_t n = r->nregions, lim = c->o.q.o.limit ? (size_t)c->o.q.o.limit : n;
    int rc;

    if (n)
        qsort(r->regions, n, sizeof *r->regions, by_region_size);
    if ((rc = out__section(o, "regions", OUT_LIST, "regions, largest first:", rcols, R_N)))
        return rc;
    for (size_t i = 0; i < n && i < lim; i++) {
        const struct frag_region *g = &r->regions[i];
        struct out_val v[R_N];
        char range[64];
        snprintf(range, sizeof range, "0x%" PRIx64 "-0x%" PRIx64, g->lo, g->hi);
        v[R_HEAP] = OV_S(heap_name(c, g->heap_id));
        v[R_KIND] = OV_S(g->bounded ? "heap bounds" : "blocks");
        v[R_LO] = OV_I(g->lo);
        v[R_HI] = OV_I(g->hi);
        v[R_RANGE] = ov_text(range);
        v[R_SIZE] = OV_I(g->hi - g->lo);
        v[R_BLOCKS] = OV_I(g->blocks);
        v[R_REQ] = OV_I(g->requested);
        v[R_USABLE] = OV_I(g->usable);
        v[R_FREE] = OV_I(g->free);
        v[R_HOLES] = OV_I(g->holes);
        v[R_LARGEST] = OV_I(g->largest);
        v[R_LARGEST_AT] = g->largest ? OV_I(g->largest_at) : OV_NULLV;
        v[R_EXT] = g->free ? OV_R(round((1.0 - (double)g->largest / (double)g->free) * 10000) /
                                  100)
                           : OV_NULLV;
        v[R_SPAN] = g->bounded ? OV_I(g->span) : OV_NULLV;
        v[R_RECLAIM] = g->bounded ? OV_I(g->reclaim) : OV_I(0);
        v[R_PAGES] = OV_I(g->pages);
        v[R_PUSED] = OV_I(g->page_bytes_used);
        v[R_PUTIL] = ov_pct(g->page_bytes_used, g->pages * c->o.fo.page_size);
        v[R_SPARSE] = OV_I(g->sparse_pages);
        v[R_PINNED] = OV_I(g->pinned);
        v[R_GAPS] = OV_I(g->overhead);
        v[R_UNUSABLE] = OV_I(g->unusable);
        v[R_FIT64] = OV_I(g->fit[0]);
        v[R_FIT4K] = OV_I(g->fit[1]);
        v[R_FIT1M] = OV_I(g->fit[2]);
        if ((rc = out__row(o, v, NULL)))
            return rc;
    }
    if (lim < n)
        return out__table_note(o, "showing %zu of %zu regions (--limit)", lim, n);
    return 0;
}

static int emit_holes(struct out *o, const struct frag_report *r)
{
    int rc = out__section(o, "hole_sizes", OUT_LIST, "holes by size:", hcols, H_N);
    for (unsigned k = 0; !rc && k < 64; k++) {
        const struct frag_hist *h = &r->hist[k];
        struct out_val v[H_N];
        char lo[24], hi[24], range[64];
        if (!h->holes)
            continue;
        pow2_name(k, lo, sizeof lo);
        if (k < 63) {
            pow2_name(k + 1, hi, sizeof hi);
            snprintf(range, sizeof range, "[%s, %s)", lo, hi);
        } else {
            snprintf(range, sizeof range, ">= %s", lo);
        }
        v[H_RANGE] = ov_text(range);
        v[H_MIN] = OV_I(1ull << k);
        v[H_MAX] = k < 63 ? OV_I((1ull << (k + 1)) - 1) : OV_NULLV;
        v[H_HOLES] = OV_I(h->holes);
        v[H_BYTES] = OV_I(h->bytes);
        v[H_PCT] = ov_pct(h->bytes, r->t.free);
        rc = out__row(o, v, NULL);
    }
    return rc;
}

static int emit_classes(struct out *o, const struct frag_report *r)
{
    int rc = out__section(o, "size_classes", OUT_LIST, "slack by requested size:", ccols, C_N);
    for (size_t i = 0; !rc && i < r->nclasses; i++) {
        const struct frag_class *k = &r->classes[i];
        struct out_val v[C_N];
        char lo[24], hi[24], range[64];
        unsigned b = k->hi == UINT64_MAX ? 64 : 63 - (unsigned)__builtin_clzll(k->hi);
        if (!k->lo) {
            pow2_name(b, hi, sizeof hi);
            snprintf(range, sizeof range, "[0, %s]", hi);
        } else if (b < 64) {
            pow2_name(b - 1, lo, sizeof lo);
            pow2_name(b, hi, sizeof hi);
            snprintf(range, sizeof range, "(%s, %s]", lo, hi);
        } else {
            snprintf(range, sizeof range, "> 8 EiB");
        }
        v[C_RANGE] = ov_text(range);
        v[C_MIN] = OV_I(k->lo);
        v[C_MAX] = k->hi > INT64_MAX ? OV_NULLV : OV_I(k->hi);
        v[C_BLOCKS] = OV_I(k->blocks);
        v[C_REQ] = OV_I(k->requested);
        v[C_USABLE] = OV_I(k->usable);
        v[C_SLACK] = OV_I(k->usable - k->requested);
        v[C_PCT] = ov_pct(k->usable - k->requested, k->usable);
        rc = out__row(o, v, NULL);
    }
    return rc;
}

static int emit_stacks(struct ctx *c, struct out *o, const struct frag_report *r)
{
    struct vh_stacks *stk = NULL;
    size_t lim = c->o.q.o.limit ? (size_t)c->o.q.o.limit : r->nstacks;
    int rc = vh_stacks__open(c->cmd->name, c->db, c->o.q.o.depth, &stk);
    if (rc)
        return rc;
    rc = out__section(o, "stacks", OUT_LIST, "stacks by slack + pinned bytes:", kcols, K_N);
    for (size_t i = 0; !rc && i < r->nstacks && i < lim; i++) {
        const struct frag_stack *s = &r->stacks[i];
        struct out_val v[K_N];
        int err = 0;
        struct out_stack *st = vh_stacks__get(stk, s->stack_id, &err);
        if (!st) {
            vh_errorf(c->cmd->name, "reading stack %u failed", s->stack_id);
            rc = err ? err : -EIO;
            break;
        }
        v[K_HEAP_ID] = OV_I(s->heap_id);
        v[K_HEAP] = OV_S(heap_name(c, s->heap_id));
        v[K_STACK] = OV_I(s->stack_id);
        v[K_BLOCKS] = OV_I(s->blocks);
        v[K_REQ] = OV_I(s->requested);
        v[K_USABLE] = OV_I(s->usable);
        v[K_SLACK] = OV_I(s->usable - s->requested);
        v[K_PCT] = ov_pct(s->usable - s->requested, s->usable);
        v[K_PINNED] = OV_I(s->pinned);
        v[K_WASTE] = OV_I(s->usable - s->requested + s->pinned);
        rc = out__row(o, v, st);
    }
    if (!rc && lim < r->nstacks)
        rc = out__table_note(o, "showing %zu of %zu stacks (--limit)", lim, r->nstacks);
    vh_stacks__free(stk);
    return rc;
}

/* ---- --map ---------------------------------------------------------------- */

static const char *const age_colors[8] = { "#440154", "#46327e", "#365c8d", "#277f8e",
                                           "#1fa187", "#4ac16d", "#a0da39", "#fde725" };

struct mapkey {
    uint32_t stack;
    uint64_t bytes;
};

static int by_key_bytes(const void *x, const void *y)
{
    const struct mapkey *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return (a->stack > b->stack) - (a->stack < b->stack);
}

static int write_map(struct ctx *c, const struct liveset *ls, const struct frag_report *r,
                     uint64_t t, const char *what)
{
    struct frag_map m = { 0 };
    struct frag_map_key keys[FRAG_MAP_MAX_KEYS];
    char *names[FRAG_MAP_MAX_KEYS] = { 0 };
    struct sname sn[FRAG_MAP_MAX_KEYS] = { 0 };
    char notes[FRAG_MAP_MAX_KEYS][96], title[256], sub[320], a[32], b[32], d[32];
    struct frag_region *regs = NULL;
    struct mapkey *mk = NULL;
    struct vh_stacks *stk = NULL;
    uint8_t *key = NULL;
    uint32_t heap = 0;
    size_t first = 0, n = 0, nregs = 0, nk = 0, nmk = 0, others = 0;
    int found = 0, rc = -ENOMEM;

    /* the first heap chosen (lowest id) that has a region then */
    for (size_t i = 0; i < r->nregions; i++) {
        uint32_t id = r->regions[i].heap_id;
        if (found && id != heap)
            others = 1;
        if (!found || id < heap) {
            heap = id;
            found = 1;
        }
    }
    if (others)
        vh_errorf("frag", "the map shows heap %s only (choose another with --heap)",
                  heap_name(c, heap));
    while (first < ls->n && ls->blocks[first].heap_id != heap)
        first++;
    while (first + n < ls->n && ls->blocks[first + n].heap_id == heap)
        n++;
    if (!(regs = malloc((r->nregions ? r->nregions : 1) * sizeof *regs)) ||
        !(key = calloc(n ? n : 1, 1)))
        goto out;
    for (size_t i = 0; i < r->nregions; i++)
        if (found && r->regions[i].heap_id == heap)
            regs[nregs++] = r->regions[i];
    if (c->o.by_age) {
        uint64_t tmin = t;
        for (size_t i = 0; i < n; i++)
            if (ls->blocks[first + i].time < tmin)
                tmin = ls->blocks[first + i].time;
        uint64_t span = t - tmin + 1;
        for (size_t i = 0; i < n; i++)
            key[i] = (uint8_t)((unsigned __int128)(ls->blocks[first + i].time - tmin) * 8 / span);
        for (int k = 0; k < 8; k++) {
            char t0[32], t1[32];
            out__human_ns((int64_t)(tmin + span * (uint64_t)k / 8), t0, sizeof t0);
            out__human_ns((int64_t)(tmin + span * (uint64_t)(k + 1) / 8), t1, sizeof t1);
            snprintf(notes[k], sizeof notes[k], "allocated %s - %s", t0, t1);
            keys[k] = (struct frag_map_key){ k == 0 ? "oldest" : k == 7 ? "newest" : "",
                                             notes[k], NULL, age_colors[k] };
        }
        nk = 8;
    } else {
        /* the stacks holding the most usable bytes of this heap */
        if (!(mk = calloc(r->nstacks ? r->nstacks : 1, sizeof *mk)))
            goto out;
        for (size_t i = 0; i < r->nstacks; i++)
            if (r->stacks[i].heap_id == heap)
                mk[nmk++] = (struct mapkey){ r->stacks[i].stack_id, r->stacks[i].usable };
        qsort(mk, nmk, sizeof *mk, by_key_bytes);
        if ((rc = vh_stacks__open(c->cmd->name, c->db, 0, &stk)))
            goto out;
        nk = nmk < MAP_STACKS ? nmk : MAP_STACKS;
        size_t depth[MAP_STACKS];
        for (size_t k = 0; k < nk; k++) {
            if ((rc = sname_read(stk, mk[k].stack, &sn[k])))
                goto out;
            depth[k] = 1;
        }
        /* stacks with the same first frame are told apart by their callers */
        for (int round = 0; round < NAME_FRAMES; round++) {
            int changed = 0;
            for (size_t k = 0; k < nk; k++) {
                free(names[k]);
                if (!(names[k] = sname_compose(&sn[k], depth[k]))) {
                    rc = -ENOMEM;
                    goto out;
                }
            }
            for (size_t k = 0; k < nk; k++)
                for (size_t j = k + 1; j < nk; j++)
                    if (!strcmp(names[k], names[j])) {
                        if (depth[k] < sn[k].n)
                            depth[k]++, changed = 1;
                        if (depth[j] < sn[j].n)
                            depth[j]++, changed = 1;
                    }
            if (!changed)
                break;
        }
        for (size_t k = 0; k < nk; k++) {
            snprintf(notes[k], sizeof notes[k], "%s live",
                     out__human_bytes((int64_t)mk[k].bytes, a, sizeof a));
            keys[k] = (struct frag_map_key){ names[k], notes[k], sn[k].text, svg_palette(k) };
        }
        if (nmk > nk) {
            uint64_t rest = 0;
            for (size_t k = nk; k < nmk; k++)
                rest += mk[k].bytes;
            snprintf(notes[nk], sizeof notes[nk], "%zu stacks, %s live", nmk - nk,
                     out__human_bytes((int64_t)rest, a, sizeof a));
            keys[nk] = (struct frag_map_key){ "other stacks", notes[nk], NULL, "#8c8c8c" };
            nk++;
        }
        for (size_t i = 0; i < n; i++) {
            uint32_t s = ls->blocks[first + i].stack_id;
            size_t k = 0;
            while (k < nk && k < MAP_STACKS && k < nmk && mk[k].stack != s)
                k++;
            key[i] = (uint8_t)(k < nmk && k < MAP_STACKS && mk[k].stack == s ? k : nk - 1);
        }
    }
    uint64_t usable = 0, freeb = 0;
    for (size_t i = 0; i < nregs; i++) {
        usable += regs[i].usable;
        freeb += regs[i].free;
    }
    snprintf(title, sizeof title, "heap %s at %s (%s)", found ? heap_name(c, heap) : "?", what,
             out__human_ns((int64_t)t, d, sizeof d));
    snprintf(sub, sizeof sub, "%s%s%zu blocks, %s usable, %s free in holes, %zu region%s; "
                              "coloured by %s",
             c->exe ? vh_base_name(c->exe) : "", c->exe ? ": " : "", n,
             out__human_bytes((int64_t)usable, a, sizeof a),
             out__human_bytes((int64_t)freeb, b, sizeof b), nregs, nregs == 1 ? "" : "s",
             c->o.by_age ? "age" : "allocating stack");
    m = (struct frag_map){ .title = title, .subtitle = sub, .regions = regs, .nregions = nregs,
                           .blocks = ls->blocks + first, .nblocks = n, .key = key, .keys = keys,
                           .nkeys = nk };
    if ((rc = frag_map__write(&m, c->o.map))) {
        vh_errorf(c->cmd->name, "writing %s: %s", c->o.map, strerror(-rc));
        goto out;
    }
    vh_errorf("frag", "wrote %s", c->o.map);
    rc = 0;
out:
    if (rc == -ENOMEM)
        vh_errorf(c->cmd->name, "out of memory");
    for (size_t k = 0; k < FRAG_MAP_MAX_KEYS; k++) {
        free(names[k]);
        sname_free(&sn[k]);
    }
    vh_stacks__free(stk);
    free(mk);
    free(key);
    free(regs);
    return rc;
}

static int run_moment(struct ctx *c)
{
    struct liveset *ls = NULL;
    struct frag_report *r = NULL;
    struct frag_heap *fh = NULL;
    struct out *o = NULL;
    char what[160];
    uint64_t t;
    size_t nfh;
    int rc;

    if ((rc = resolve_at(c, &t, what, sizeof what)) || (rc = live_at(c, t, &ls)))
        return rc;
    if (!(fh = heaps_at(c, t, &nfh)))
        goto oom;
    if ((rc = frag__analyze(ls->blocks, ls->n, fh, nfh, &c->o.fo, &r))) {
        if (rc == -ENOMEM)
            goto oom;
        vh_errorf(c->cmd->name, "the live set is not in address order (damaged DB?)");
        goto out;
    }
    if (c->o.map && (rc = write_map(c, ls, r, t, what)))
        goto out;
    o = vh_query__take_out(&c->o.q);
    if ((rc = emit_summary(c, o, r, t, what, fh, nfh)) || (rc = emit_regions(c, o, r)) ||
        (rc = emit_holes(o, r)) || (rc = emit_classes(o, r)) || (rc = emit_stacks(c, o, r))) {
        if (rc == -ENOMEM)
            goto oom;
        goto out;
    }
    rc = vh_out_end(c->cmd, o);
    o = NULL;
    goto out;
oom:
    rc = -ENOMEM;
    vh_errorf(c->cmd->name, "out of memory");
out:
    out__abort(o);
    frag_report__free(r);
    free(fh);
    liveset__free(ls);
    return rc;
}

/* ---- --series -------------------------------------------------------------- */

struct point {
    uint64_t time;
    struct frag_totals t;
    int64_t rss;                   /* -1: no sample yet                     */
};

enum {
    T_TIME, T_BLOCKS, T_LIVE, T_USABLE, T_SLACK, T_FOOT, T_FREE, T_LARGEST, T_EXT, T_UNUSABLE,
    T_PAGES, T_PAGE_BYTES, T_PUSED, T_PUTIL, T_SPARSE, T_PINNED, T_HOLES, T_REGIONS, T_RECLAIM, T_RSS,
    T_N
};

static const struct out_col tcols[T_N] = {
    [T_TIME] = { "time_ns", "time", OUT_NS, 0 },
    [T_BLOCKS] = { "blocks", "blocks", OUT_INT, 0 },
    [T_LIVE] = { "requested", "live", OUT_BYTES, 0 },
    [T_USABLE] = { "usable", "usable", OUT_BYTES, OUT_F_NO_TABLE },
    [T_SLACK] = { "slack", "slack", OUT_BYTES, 0 },
    [T_FOOT] = { "footprint", "footprint", OUT_BYTES, 0 },
    [T_FREE] = { "free", "free", OUT_BYTES, 0 },
    [T_LARGEST] = { "largest_hole", "largest", OUT_BYTES, 0 },
    [T_EXT] = { "external_fragmentation_pct", "ext frag %", OUT_REAL, 0 },
    [T_UNUSABLE] = { "unusable", "unusable", OUT_BYTES, 0 },
    [T_PAGES] = { "pages", "pages", OUT_INT, OUT_F_NO_TABLE },
    [T_PAGE_BYTES] = { "page_bytes", "touched", OUT_BYTES, 0 },
    [T_PUSED] = { "page_bytes_used", "page bytes used", OUT_BYTES, OUT_F_NO_TABLE },
    [T_PUTIL] = { "page_utilization_pct", "page util %", OUT_REAL, 0 },
    [T_SPARSE] = { "sparse_pages", "sparse", OUT_INT, 0 },
    [T_PINNED] = { "pinned", "pinned", OUT_BYTES, 0 },
    [T_HOLES] = { "holes", "holes", OUT_INT, OUT_F_NO_TABLE },
    [T_REGIONS] = { "regions", "regions", OUT_INT, OUT_F_NO_TABLE },
    [T_RECLAIM] = { "reclaim", "reclaim", OUT_BYTES, OUT_F_HIDE_ZERO },
    [T_RSS] = { "rss", "RSS", OUT_BYTES, 0 },
};

static uint64_t nice_interval(uint64_t span)
{
    uint64_t want = span / SERIES_ROWS, step = 1000;      /* at least 1 µs */
    static const uint64_t mul[] = { 1, 2, 5 };
    for (;;)
        for (int i = 0; i < 3; i++) {
            if (step * mul[i] >= want)
                return step * mul[i];
            if (i == 2)
                step *= 10;
        }
}

/* Declares the chosen heaps (parents first: ids grow with creation) as
 * they are at time t. Before any block: a block of an undeclared heap would
 * make it a heap without bounds. */
static int declare_heaps(struct ctx *c, struct fragtrack *ft, uint64_t t)
{
    for (size_t i = 0; i < c->nh; i++) {
        struct frag_heap fh = { c->h[i].id, c->h[i].base, c->h[i].size, c->h[i].parent, 0 };
        int rc = fragtrack__heap(ft, &fh, alive(&c->h[i], t));
        if (rc == -ENOMEM)
            return rc;
    }
    for (size_t i = 0; i < c->nr; i++) {
        struct frag_heap fh = region_heap(c, i);
        if (fragtrack__heap(ft, &fh, region_alive(c, i, t)) == -ENOMEM)
            return -ENOMEM;
    }
    return 0;
}

/* Brings the heaps' existence to time t, then reads the totals. */
static int take_point(struct ctx *c, struct fragtrack *ft, uint64_t t, struct point *p)
{
    if (declare_heaps(c, ft, t))
        return -ENOMEM;
    p->time = t;
    fragtrack__totals(ft, &p->t);
    const struct rss *r = rss_at(c, t);
    p->rss = r ? r->bytes : -1;
    return 0;
}

static void hint(const struct fragtrack *ft, const struct vh_ev *ev, int near)
{
    if (ev->kind == VH_EV_FAILED)
        return;
    fragtrack__prefetch(ft, ev->heap_id, ev->addr, ev->usable, near);
    if (ev->kind == VH_EV_MOVE)
        fragtrack__prefetch(ft, ev->heap_id, ev->to, ev->usable, near);
}

static int apply_event(struct fragtrack *ft, const struct vh_ev *ev)
{
    struct vh_block b;
    int rc = 0;
    switch (ev->kind) {
    case VH_EV_ALLOC:
        b = (struct vh_block){ .addr = ev->addr, .size = ev->size, .usable = ev->usable,
                               .time = ev->time, .heap_id = ev->heap_id,
                               .stack_id = ev->stack_id };
        rc = fragtrack__add(ft, &b);
        if (rc == -EEXIST) {           /* the loader frees first; be safe */
            rc = fragtrack__remove(ft, ev->heap_id, ev->addr);
            if (rc != -ENOMEM)
                rc = fragtrack__add(ft, &b);
        }
        break;
    case VH_EV_FREE:
        rc = fragtrack__remove(ft, ev->heap_id, ev->addr);
        break;
    case VH_EV_RESIZE:
        rc = fragtrack__resize(ft, ev->heap_id, ev->addr, ev->size, ev->usable);
        break;
    case VH_EV_MOVE:
        rc = fragtrack__move(ft, ev->heap_id, ev->addr, ev->to);
        break;
    default:
        break;
    }
    return rc == -ENOMEM ? rc : 0;
}

static int draw_series(struct ctx *c, const struct point *p, size_t n)
{
    double *x = malloc((n ? n : 1) * sizeof *x), *y[5];
    struct svg_chart *ch = NULL;
    char sub[320], pb[32];
    double stack_max = 0, line_max = 0;
    int rc = -ENOMEM;

    for (int k = 0; k < 5; k++)
        y[k] = malloc((n ? n : 1) * sizeof **y);
    if (!x || !y[0] || !y[1] || !y[2] || !y[3] || !y[4])
        goto out;
    for (size_t i = 0; i < n; i++) {
        const struct frag_totals *t = &p[i].t;
        x[i] = (double)p[i].time;
        y[0][i] = (double)t->requested;
        y[1][i] = (double)(t->usable - t->requested);
        y[2][i] = (double)t->unusable;
        y[3][i] = (double)t->footprint;
        y[4][i] = p[i].rss >= 0 ? (double)p[i].rss : NAN;
        if (y[0][i] + y[1][i] + y[2][i] > stack_max)
            stack_max = y[0][i] + y[1][i] + y[2][i];
        if (y[3][i] > line_max)
            line_max = y[3][i];
    }
    snprintf(sub, sizeof sub, "%s%s%zu heap%s%s%s; free-but-unusable: free bytes in holes, in "
                              "pieces smaller than a page (%s)",
             c->exe ? vh_base_name(c->exe) : "", c->exe ? ": " : "", c->nh, c->nh == 1 ? "" : "s",
             c->o.q.o.heap ? " chosen by --heap " : "", c->o.q.o.heap ? c->o.q.o.heap : "",
             out__human_bytes((int64_t)c->o.fo.page_size, pb, sizeof pb));
    struct svg_chart_opts co = { .title = "Fragmentation over time", .subtitle = sub,
                                 .x_title = "time since start", .y_title = "bytes",
                                 .x_axis = SVG_AXIS_TIME_NS, .y_axis = SVG_AXIS_BYTES };
    if (!(ch = svg_chart__new(&co)) || (rc = svg_chart__set_x(ch, x, n)))
        goto out;
    /* a footprint far above the live bytes (a loom reserved at full size)
     * or a large RSS is drawn clipped rather than flattening everything
     * else; its legend says how high it goes */
    double rss_max = 0;
    char foot_note[96], rss_note[96], hb[32];
    for (size_t i = 0; i < n; i++)
        if (p[i].rss > 0 && (double)p[i].rss > rss_max)
            rss_max = (double)p[i].rss;
    int foot_off = stack_max > 0 && line_max > 4 * stack_max;
    int rss_off = stack_max > 0 && rss_max > 4 * stack_max;
    snprintf(foot_note, sizeof foot_note, "heap regions%s%s%s",
             foot_off ? "; up to " : "",
             foot_off ? out__human_bytes((int64_t)line_max, hb, sizeof hb) : "",
             foot_off ? ", off the chart" : "");
    snprintf(rss_note, sizeof rss_note, "whole process%s%s%s", rss_off ? "; up to " : "",
             rss_off ? out__human_bytes((int64_t)rss_max, hb, sizeof hb) : "",
             rss_off ? ", off the chart" : "");
    struct svg_series s[5] = {
        { .style = SVG_AREA, .label = "live (requested)", .y = y[0] },
        { .style = SVG_AREA, .label = "slack (usable - requested)", .y = y[1] },
        { .style = SVG_AREA, .label = "free but unusable", .note = "holes: pieces < a page",
          .y = y[2] },
        { .style = SVG_LINE, .label = "footprint", .note = foot_note, .no_scale = foot_off,
          .dashed = 1, .y = y[3] },
        { .style = SVG_LINE, .label = "RSS", .note = rss_note, .no_scale = rss_off, .y = y[4] },
    };
    for (int k = 0; k < (c->nrss ? 5 : 4); k++)
        if ((rc = svg_chart__add(ch, &s[k])))
            goto out;
    /* the program's marks (vheap_mark) inside the window */
    sqlite3_stmt *mst = NULL;
    if (n && !vh_prepare(c->cmd->name, c->db,
                         "SELECT time, label FROM marks WHERE time BETWEEN ?1 AND ?2"
                         " ORDER BY time LIMIT 100",
                         &mst)) {
        sqlite3_bind_int64(mst, 1, (int64_t)p[0].time);
        sqlite3_bind_int64(mst, 2, (int64_t)p[n - 1].time);
        while (!rc && sqlite3_step(mst) == SQLITE_ROW)
            rc = svg_chart__add_mark(ch, (double)sqlite3_column_int64(mst, 0),
                                     (const char *)sqlite3_column_text(mst, 1));
        sqlite3_finalize(mst);
        if (rc)
            goto out;
    }
    if ((rc = svg_chart__write_file(ch, c->o.svg))) {
        vh_errorf(c->cmd->name, "writing %s: %s", c->o.svg, strerror(-rc));
        goto out;
    }
    vh_errorf("frag", "wrote %s", c->o.svg);
out:
    if (rc == -ENOMEM)
        vh_errorf(c->cmd->name, "out of memory");
    svg_chart__free(ch);
    free(x);
    for (int k = 0; k < 5; k++)
        free(y[k]);
    return rc;
}

static int run_series(struct ctx *c)
{
    struct fragtrack *ft = NULL;
    struct liveset *ls = NULL;
    struct evstream *es = NULL;
    struct point *pts = NULL;
    struct out *o = NULL;
    struct vh_ev ev, ring[SERIES_AHEAD];
    char err[256];
    uint64_t from = c->o.has_from ? c->o.from : 0;
    uint64_t to = c->o.has_to ? c->o.to : c->end_time, iv, npts, k = 0;
    size_t n, i;
    int rc;

    if (to < from)
        to = from;
    iv = c->o.interval ? c->o.interval : nice_interval(to - from);
    npts = (to - from + iv - 1) / iv + 1;
    if (npts > MAX_POINTS) {
        vh_errorf(c->cmd->name, "--interval: %" PRIu64 " rows is too many (at most %u): choose a "
                                "longer interval", npts, MAX_POINTS);
        return -EINVAL;
    }
    if ((rc = fragtrack__new(&c->o.fo, &ft)))
        goto oom;
    if (!(pts = calloc(npts, sizeof *pts)))
        goto oom;
    if (declare_heaps(c, ft, from))
        goto oom;
    if ((rc = live_at(c, from, &ls)))
        goto out;
    for (size_t i = 0; i < ls->n; i++)
        if (fragtrack__add(ft, &ls->blocks[i]) == -ENOMEM)
            goto oom;
    liveset__free(ls);
    ls = NULL;
    if (take_point(c, ft, from, &pts[k++]))
        goto oom;
    if ((rc = evstream__open(c->db, from + 1, &es, err, sizeof err))) {
        vh_errorf(c->cmd->name, "reading events: %s", err);
        goto out;
    }
    /* point k is at min(from + k * iv, to): the state after every event
     * up to and including that time. Events are read SERIES_AHEAD ahead of
     * the one applied, and each hints the tracker as it enters the window:
     * with a large live set its tree leaves and page slots are then in
     * cache when it is applied. */
    for (n = 0; n < SERIES_AHEAD && (rc = evstream__next(es, &ring[n])) == 1; n++)
        hint(ft, &ring[n], 0);
    for (i = 0; n && k < npts; i = (i + 1) % SERIES_AHEAD) {
        ev = ring[i];
        if (n > SERIES_AHEAD / 2)
            hint(ft, &ring[(i + SERIES_AHEAD / 2) % SERIES_AHEAD], 1);
        if (rc == 1 && (rc = evstream__next(es, &ring[i])) == 1)
            hint(ft, &ring[i], 0);
        else
            n--;
        while (k < npts && ev.time > (from + k * iv < to ? from + k * iv : to)) {
            if (take_point(c, ft, from + k * iv < to ? from + k * iv : to, &pts[k]))
                goto oom;
            k++;
        }
        if (k == npts)
            break;
        if (c->o.q.o.heap && !heap_info(c, ev.heap_id))
            continue;
        if (apply_event(ft, &ev))
            goto oom;
    }
    if (rc < 0) {
        vh_errorf(c->cmd->name, "reading events: %s", evstream__error(es));
        goto out;
    }
    for (; k < npts; k++)
        if (take_point(c, ft, from + k * iv < to ? from + k * iv : to, &pts[k]))
            goto oom;

    if (c->o.svg && (rc = draw_series(c, pts, npts)))
        goto out;
    o = vh_query__take_out(&c->o.q);
    if ((rc = out__section(o, "series", OUT_LIST, NULL, tcols, T_N)))
        goto out;
    int bounded = 0;
    for (size_t i = 0; i < c->nh; i++)
        bounded |= c->h[i].size != 0;
    for (size_t i = 0; i < npts; i++) {
        const struct frag_totals *t = &pts[i].t;
        struct out_val v[T_N];
        v[T_TIME] = OV_I(pts[i].time);
        v[T_BLOCKS] = OV_I(t->blocks);
        v[T_LIVE] = OV_I(t->requested);
        v[T_USABLE] = OV_I(t->usable);
        v[T_SLACK] = OV_I(t->usable - t->requested);
        v[T_FOOT] = OV_I(t->footprint);
        v[T_FREE] = OV_I(t->free);
        v[T_LARGEST] = OV_I(t->largest);
        v[T_EXT] = t->free ? OV_R(round((1.0 - (double)t->largest / (double)t->free) * 10000) /
                                  100)
                           : OV_NULLV;
        v[T_UNUSABLE] = OV_I(t->unusable);
        v[T_PAGES] = OV_I(t->pages);
        v[T_PAGE_BYTES] = OV_I(t->pages * c->o.fo.page_size);
        v[T_PUSED] = OV_I(t->page_bytes_used);
        v[T_PUTIL] = ov_pct(t->page_bytes_used, t->pages * c->o.fo.page_size);
        v[T_SPARSE] = OV_I(t->sparse_pages);
        v[T_PINNED] = OV_I(t->pinned);
        v[T_HOLES] = OV_I(t->holes);
        v[T_REGIONS] = OV_I(t->regions);
        v[T_RECLAIM] = bounded ? OV_I(t->reclaim) : OV_I(0);
        v[T_RSS] = pts[i].rss >= 0 ? OV_I(pts[i].rss) : OV_NULLV;
        if ((rc = out__row(o, v, NULL)))
            goto out;
    }
    rc = vh_out_end(c->cmd, o);
    o = NULL;
    goto out;
oom:
    rc = -ENOMEM;
    vh_errorf(c->cmd->name, "out of memory");
out:
    out__abort(o);
    evstream__close(es);
    liveset__free(ls);
    fragtrack__free(ft);
    free(pts);
    return rc;
}

/* ---- main ------------------------------------------------------------------- */

static int run(int argc, char **argv)
{
    struct ctx c = { .cmd = &cmd_frag };
    int rc;

    if ((rc = parse_opts(c.cmd, argc, argv, &c.o)) ||
        (rc = vh_query__open(&c.o.q, VH_QUERY_OUTPUT)))
        goto out;
    c.db = c.o.q.db;
    if ((rc = read_heaps(&c)) || (rc = read_regions(&c)) || (rc = read_basics(&c)))
        goto out;
    rc = c.o.series ? run_series(&c) : run_moment(&c);
out:
    for (size_t i = 0; i < c.nh; i++)
        free(c.h[i].name);
    free(c.h);
    free(c.r);
    free(c.rss);
    free(c.exe);
    return vh_query__finish(&c.o.q, rc);
}
