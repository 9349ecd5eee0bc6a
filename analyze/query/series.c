/* query/series.c — memory over time (series.h): per interval or per event,
 * split by the top stacks, with RSS and marks, as `series` prints it and
 * `chart` draws it. The options are cmd/series.c's; the rows are written by
 * series_rows.c; this file computes the numbers.
 *
 * Two sources give the same numbers. The `series` table (fixed buckets
 * written by the loader) answers totals at multiples of its bucket width
 * instantly; the event stream (events.h) answers everything else — any
 * interval, single events, the split by stack — by replaying the events of
 * the window from the live set at its start. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/store/db.h"
#include "analyze/store/events.h"
#include "analyze/store/sql.h"
#include "analyze/query/frame_rule.h"
#include "analyze/query/heap_sel.h"
#include "analyze/query/recording.h"
#include "analyze/query/series.h"
#include "analyze/query/stacks.h"
#include "analyze/util/cmp.h"
#include "analyze/util/diag.h"
#include "analyze/util/fmt.h"
#include "analyze/util/grow.h"
#include "analyze/util/map.h"
#include "analyze/util/weight.h"

#define MAX_INTERVALS 10000000u
#define EVENT_ROWS_DEFAULT 1000000u

/* ---- state ----------------------------------------------------------------- */

/* What naming a top stack needs besides its public part (series.h). */
struct top {
    char *first, *second;    /* the naming frame, and the next one     */
    int64_t line;            /* the naming frame's line, 0 if unknown  */
};

struct topkey {
    uint32_t heap, stack;
    int k;
};

struct ctx {
    const char *cmd;
    const struct vh_series_ask *a;
    sqlite3 *db;
    const struct vh_series_measure *by;
    int64_t top;                   /* a->top, 0 without an event stream     */
    int have_events;
    uint64_t bucket_ns, runtime, from, to, iv;
    int64_t pid;
    char *exe;

    uint8_t *heap_on;              /* by heap id                             */
    size_t nheap_ids;
    int64_t *hsel;                 /* the chosen heap ids                    */
    size_t nsel;

    struct vh_series_top *pub;     /* the top stacks, as series.h shows them */
    size_t ntop, nstacks_total;
    struct topkey *keys;

    struct vh_series_row *rows;
    size_t nrows, cap;
    uint64_t *slive;               /* nrows x ntop                           */
    uint64_t init_live, *init_slive;
    uint64_t live, *cur;           /* replay state                           */
    uint64_t rate;                 /* sampled capture: events weigh 1/p     */
    struct vh_map *blocks;         /* live blocks of the top stacks (bmap_) */
    int truncated;

    struct vh_series_mark *marks;
    size_t nmarks;
};

static const struct vh_series_measure measures[] = {
    { "peak", "sum(s.peak_bytes)", "bytes live at the peak", "peak", 1, 0, "stacks" },
    { "max-live", "max(s.max_live_bytes)", "largest live bytes", "max live", 1, 0, "stacks" },
    { "allocations", "sum(s.allocations)", "allocation calls", "calls", 0, 0, "stacks" },
    { "bytes", "sum(s.bytes_allocated)", "bytes allocated", "allocated", 1, 0, "stacks" },
    { "leaked", "sum(s.leaked_bytes)", "bytes leaked", "leaked", 1, 0, "stacks" },
    { "heap", "h.peak_bytes", "the heap's peak", "peak", 1, 1, "heaps" },
};

const struct vh_series_measure *vh_series_measure(const char *name)
{
    if (!name)
        return &measures[0];
    for (size_t i = 0; i < sizeof measures / sizeof measures[0]; i++)
        if (!strcmp(name, measures[i].name))
            return &measures[i];
    return NULL;
}

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
    return vh_cmp2(x->heap, y->heap, x->stack, y->stack);
}

static inline int top_of(const struct ctx *c, uint32_t heap, uint32_t stack)
{
    const struct topkey *k = c->keys;
    size_t i = VH_PARTITION_POINT(j, c->ntop, vh_cmp2(k[j].heap, heap, k[j].stack, stack) < 0);
    return i < c->ntop && k[i].heap == heap && k[i].stack == stack ? k[i].k : -1;
}

/* The column of a block of (heap, stack): under --by heap, its heap's. */
static inline int top_for(const struct ctx *c, uint32_t heap, uint32_t stack)
{
    return top_of(c, heap, c->by->heaps ? 0 : stack);
}

static inline int heap_on(const struct ctx *c, uint32_t heap)
{
    return heap < c->nheap_ids && c->heap_on[heap];
}

/* A step that did not end in a row or SQLITE_DONE, said: -EIO. */
static int query_failed(const struct ctx *c)
{
    vh_errorf(c->cmd, "query failed: %s", sqlite3_errmsg(c->db));
    return -EIO;
}

static int query_int(struct ctx *c, const char *sql, int64_t *v)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_prepare(c->cmd, c->db, sql, &st);
    if (rc)
        return rc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *v = sqlite3_column_int64(st, 0);
        rc = 0;
    } else {
        rc = query_failed(c);
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
    size_t n = vh_lframes(pub->stack, lf, 256), pick[2];
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
static int unique_names(struct ctx *c, const struct top *tops)
{
    uint8_t *dup = calloc(c->ntop ? c->ntop : 1, 1);
    int rc = -ENOMEM;
    if (!dup)
        return rc;
    for (size_t i = 0; i < c->ntop; i++)
        if (!(c->pub[i].name = strdup(tops[i].first)))
            goto out;
    for (int pass = 0; pass < 3; pass++) {
        for (size_t i = 0; i < c->ntop; i++) {
            dup[i] = 0;
            for (size_t j = 0; j < c->ntop; j++) {
                if (j == i || strcmp(c->pub[i].name, c->pub[j].name))
                    continue;
                dup[i] |= 1;
                if (tops[i].line == tops[j].line)
                    dup[i] |= 2;           /* the line does not help */
            }
        }
        for (size_t i = 0; i < c->ntop; i++) {
            const struct top *t = &tops[i];
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
    if ((rc = vh_prepare(c->cmd, c->db,
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
    if ((rc = vh_prepare(c->cmd, c->db,
                         "SELECT h.id FROM heaps h"
                         " WHERE " VH_HEAP_SEL("h.id", "?1"),
                         &st)))
        return rc;
    vh_bind_heap_sel(st, 1, c->a->heap);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id >= 0 && (size_t)id < c->nheap_ids && !c->heap_on[id]) {
            c->heap_on[id] = 1;
            c->hsel[c->nsel++] = id;
        }
    }
    rc = rc == SQLITE_DONE ? 0 : query_failed(c);
    sqlite3_finalize(st);
    return rc;
}

/* The stacks of the heaps chosen (?1), one row each; those that held
 * memory are HAVING sum(s.max_live_bytes) > 0. */
#define STACKS_OF_HEAPS                                                                   \
    " FROM stack_stats s JOIN heaps h ON h.id = s.heap_id WHERE " VH_HEAP_SEL("h.id", "?1") \
    " GROUP BY s.heap_id, s.stack_id"

/* The statements that count and rank the columns: the stacks of the
 * chosen heaps by the measure, or under --by heap the heaps themselves. */
static int tops_sql(struct ctx *c, sqlite3_stmt **cnt, sqlite3_stmt **st)
{
    char sql[1024];
    int rc;
    if (c->by->heaps) {
        rc = vh_prepare(c->cmd, c->db,
                        "SELECT count(*) FROM heaps h WHERE " VH_HEAP_SEL("h.id", "?1")
                        " AND h.peak_bytes > 0", cnt);
        snprintf(sql, sizeof sql,
                 "SELECT h.id, 0, %s AS m, h.name FROM heaps h WHERE " VH_HEAP_SEL("h.id", "?1")
                 " AND m > 0 ORDER BY m DESC, h.id LIMIT ?2", c->by->expr);
    } else {
        rc = vh_prepare(c->cmd, c->db,
                        "SELECT count(*) FROM (SELECT 1" STACKS_OF_HEAPS
                        " HAVING sum(s.max_live_bytes) > 0)", cnt);
        snprintf(sql, sizeof sql,
                 "SELECT s.heap_id, s.stack_id, %s AS m, h.name" STACKS_OF_HEAPS
                 " HAVING m > 0 AND sum(s.max_live_bytes) > 0"
                 " ORDER BY m DESC, max(s.max_live_bytes) DESC, s.heap_id, s.stack_id LIMIT ?2",
                 c->by->expr);
    }
    if (rc || (rc = vh_prepare(c->cmd, c->db, sql, st)))
        return rc;
    vh_bind_heap_sel(*cnt, 1, c->a->heap);
    vh_bind_heap_sel(*st, 1, c->a->heap);
    sqlite3_bind_int64(*st, 2, c->top);
    return 0;
}

/* A heap's column is named by the heap, and by its id too where another
 * column has the same name (a heap made again after it was destroyed). */
static int name_heaps(struct ctx *c)
{
    for (size_t i = 0; i < c->ntop; i++) {
        struct vh_series_top *p = &c->pub[i];
        int twin = 0;
        for (size_t j = 0; j < c->ntop; j++)
            twin |= j != i && !strcmp(c->pub[j].heap, p->heap);
        if (!(p->name = twin ? vh_xasprintf("%s #%" PRId64, p->heap, p->heap_id)
                             : strdup(p->heap)) ||
            !(p->text = strdup(p->name)))
            return -ENOMEM;
    }
    return 0;
}

static int read_tops(struct ctx *c)
{
    sqlite3_stmt *st = NULL, *cnt = NULL;
    struct vh_stacks *stacks = NULL;
    struct top *tops = NULL;       /* what naming them needs, until named */
    int rc;

    if (!c->top)                   /* the count is said beside the top only */
        return 0;
    if ((rc = tops_sql(c, &cnt, &st)))
        goto out;
    if (sqlite3_step(cnt) != SQLITE_ROW) {
        rc = query_failed(c);
        goto out;
    }
    c->nstacks_total = (size_t)sqlite3_column_int64(cnt, 0);
    if (!(tops = calloc((size_t)c->top, sizeof *tops)) ||
        !(c->pub = calloc((size_t)c->top, sizeof *c->pub)) ||
        !(c->keys = calloc((size_t)c->top, sizeof *c->keys))) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = vh_stacks__open(c->cmd, c->db, c->a->depth, &stacks)))
        goto out;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct top *t = &tops[c->ntop];
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
        if (c->by->heaps)
            continue;
        if (!(p->stack = vh_stacks__get(stacks, p->stack_id, &err))) {
            vh_errorf(c->cmd, "reading stack %" PRId64 " failed", p->stack_id);
            rc = err ? err : -EIO;
            goto out;
        }
        if ((rc = name_top(t, p)))
            goto out;
    }
    if (rc != SQLITE_DONE) {
        rc = query_failed(c);
        goto out;
    }
    qsort(c->keys, c->ntop, sizeof *c->keys, by_key);
    rc = c->by->heaps ? name_heaps(c) : unique_names(c, tops);
out:
    for (size_t i = 0; tops && i < c->ntop; i++) {
        free(tops[i].first);
        free(tops[i].second);
    }
    free(tops);
    vh_stacks__free(stacks);
    sqlite3_finalize(st);
    sqlite3_finalize(cnt);
    return rc;
}

static int read_marks(struct ctx *c)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = vh_prepare(c->cmd, c->db,
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
    rc = rc == SQLITE_DONE ? 0 : query_failed(c);
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
    if (c->a->limit && (uint64_t)c->a->limit < n) {
        n = (uint64_t)c->a->limit;
        c->to = c->from + n * c->iv;
    }
    if (n > MAX_INTERVALS) {
        vh_errorf(c->cmd, "%" PRIu64 " intervals are too many (at most %u): choose a "
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
    if ((rc = vh_prepare(c->cmd, c->db,
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

    if ((rc = vh_prepare(c->cmd, c->db,
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
        vh_errorf(c->cmd, "reading the series table: %s", sqlite3_errmsg(c->db));
        rc = -EIO;
        goto out;
    }
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
        if ((k = top_for(c, ev->heap_id, ev->stack_id)) >= 0) {
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
        if ((k = top_for(c, ev->heap_id, ev->stack_id)) >= 0) {
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
        vh_errorf(c->cmd, "the live set at %" PRIu64 " ns: %s", c->from - 1, err);
        return rc;
    }
    for (size_t i = 0; i < ls->n; i++) {
        const struct vh_block *b = &ls->blocks[i];
        if (!heap_on(c, b->heap_id))
            continue;
        c->live += wbytes(c, b->size);
        int k = top_for(c, b->heap_id, b->stack_id);
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
    uint64_t max_rows = c->a->limit ? (uint64_t)c->a->limit : EVENT_ROWS_DEFAULT;
    int rc;

    if (c->ntop && !(c->cur = calloc(c->ntop, sizeof *c->cur)))
        return -ENOMEM;
    if (!c->a->per_event && (rc = rows_intervals(c)))
        return rc;
    if ((rc = replay_start(c)))
        return rc;
    c->init_live = c->live;
    if (c->ntop && !(c->init_slive = malloc(c->ntop * sizeof *c->init_slive)))
        return -ENOMEM;
    if (c->ntop)
        memcpy(c->init_slive, c->cur, c->ntop * sizeof *c->cur);
    if ((rc = evstream__open(c->db, c->from, &s, err, sizeof err))) {
        vh_errorf(c->cmd, "the event stream: %s", err);
        return rc;
    }
    if (c->nrows)
        c->rows[0].max_live = c->live;
    while ((rc = evstream__next(s, &ev)) == 1) {
        if (ev.time >= c->to)
            break;
        if (!heap_on(c, ev.heap_id))
            continue;
        if (c->a->per_event) {
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
            vh_errorf(c->cmd, "the event stream: %s", evstream__error(s));
    } else {
        rc = 0;
        for (; !c->a->per_event && i < c->nrows; i++) {
            row_close(c, i);
            if (i + 1 < c->nrows)
                c->rows[i + 1].max_live = c->live;
        }
    }
    evstream__close(s);
    if (c->truncated)
        vh_errorf(c->cmd, "warning: stopped after %" PRIu64 " events; use --limit, "
                                "--from and --to for more", max_rows);
    return rc;
}

/* RSS (the last sample before each row's end) and marks (each in the row
 * whose span holds it) into the rows. */
static int attach(struct ctx *c)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_prepare(c->cmd, c->db, "SELECT time, bytes FROM rss ORDER BY time", &st);
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
        vh_errorf(c->cmd, "reading RSS samples: %s", sqlite3_errmsg(c->db));
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

/* ---- the series ----------------------------------------------------------------- */

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

/* The window, and which source answers: c->iv and whether the series
 * table can (1) or the event stream must (0); or -errno, printed. */
static int plan(struct ctx *c)
{
    const struct vh_series_ask *a = c->a;

    c->from = a->from;
    c->to = a->has_to ? a->to : c->runtime + 1;
    if (c->to > c->runtime + 1)
        c->to = c->runtime + 1;
    if (c->from >= c->to) {
        char r[40];
        vh_fmt_secs(c->runtime, 3, r, sizeof r);
        vh_errorf(c->cmd, "--from is at or after the end of the recording (%s)", r);
        return -ERANGE;
    }
    if (!c->have_events && (a->per_event || c->top)) {
        if (a->per_event) {
            vh_errorf(c->cmd, "this database has no event stream (made by an older vheap?): "
                              "reload the capture with `vheap-analyze load` for --interval "
                              "event");
            return -ENOTSUP;
        }
        vh_errorf(c->cmd, "warning: this database has no event stream: no split by stack "
                          "(reload the capture with `vheap-analyze load`)");
        c->top = 0;
    }
    /* The series table answers when no split is asked for, its buckets
     * tile the intervals, and one heap is involved (its per-bucket maximum
     * does not add up across heaps); the event stream answers the rest. */
    uint64_t w = c->bucket_ns;
    int coarse_ok = w && !a->per_event && !c->top && c->from % w == 0 &&
                    (!a->has_to || c->to % w == 0 || c->to > c->runtime);
    if (coarse_ok && c->have_events && c->nsel > 1) {
        /* (without an event stream, the sum of each heap's maximum stands
         * in for the maximum of the sum) */
        size_t used = 0;
        sqlite3_stmt *st = NULL;
        int rc = vh_prepare(c->cmd, c->db, "SELECT DISTINCT heap_id FROM series", &st);
        if (rc)
            return rc;
        while (sqlite3_step(st) == SQLITE_ROW) {
            int64_t h = sqlite3_column_int64(st, 0);
            used += h >= 0 && heap_on(c, (uint32_t)h);
        }
        sqlite3_finalize(st);
        coarse_ok = used <= 1;
    }
    /* a default the buckets can answer, unless they are too coarse for it */
    int coarse_dflt = coarse_ok && (!c->have_events || (c->to - c->from) / w >= 100);
    c->iv = a->per_event ? 0 : a->interval ? a->interval : default_interval(c, coarse_dflt);
    if (c->iv && w && c->iv % w)
        coarse_ok = 0;
    if (!coarse_ok && !c->have_events) {
        char b[32];
        vh_fmt_duration(w, 0, b, sizeof b);
        vh_errorf(c->cmd, "this database has no event stream: intervals must be multiples "
                          "of %s, and --from/--to too", b);
        return -ENOTSUP;
    }
    if (a->per_event)
        c->iv = 0;
    return coarse_ok;
}

int vh_series__read(const struct vh_series_ask *a, struct vh_series *s)
{
    struct ctx c = { .cmd = a->cmd, .a = a, .db = a->db, .by = a->by, .top = a->top };
    char x_title[sizeof s->x_title] = "";
    int rc;

    memset(s, 0, sizeof *s);
    c.rate = (uint64_t)vh_rec_sample_rate(c.db);
    if ((rc = read_basics(&c)) || (rc = plan(&c)) < 0)
        goto out;
    int coarse_ok = rc;
    if ((rc = read_tops(&c)) || (rc = read_marks(&c)))
        goto out;
    rc = coarse_ok ? collect_coarse(&c) : collect_events(&c);
    if (rc || (rc = attach(&c)))
        goto out;
    if (a->per_event && c.nrows) {
        /* for the table title and the chart bins */
        c.iv = (c.to - c.from) / c.nrows ? (c.to - c.from) / c.nrows : 1;
    }
    /* a coarse-clock run's times were spread over the clock's ticks by
     * the loader (coarse.c): the axis says so */
    snprintf(x_title, sizeof x_title, "time since the program started");
    long long ticks = db__meta_int(c.db, "coarse_ticks", 0);
    long long res = db__meta_int(c.db, "coarse_clock_ns", 0);
    if (ticks > 0 && res > 0)
        snprintf(x_title, sizeof x_title, "time since the program started (interpolated "
                 "between clock ticks %g ms apart)", (double)res / 1e6);
out:
    /* what the series shows is handed over, success or not */
    *s = (struct vh_series){
        .from = c.from, .to = c.to, .interval = c.iv, .per_event = a->per_event,
        .exe = c.exe, .pid = c.pid, .heap = a->heap, .nheaps = c.nsel, .by = c.by,
        .tops = c.pub, .ntop = c.ntop, .nstacks = c.nstacks_total, .rows = c.rows,
        .nrows = c.nrows, .slive = c.slive, .init_live = c.init_live,
        .init_slive = c.init_slive, .marks = c.marks, .nmarks = c.nmarks, .rate = c.rate,
    };
    memcpy(s->x_title, x_title, sizeof x_title);
    free(c.keys);
    free(c.cur);
    vh_map__free(c.blocks);
    free(c.heap_on);
    free(c.hsel);
    return rc;
}

void vh_series__free(struct vh_series *s)
{
    for (size_t i = 0; i < s->ntop; i++) {
        free(s->tops[i].name);
        free(s->tops[i].where);
        free(s->tops[i].text);
        free(s->tops[i].heap);
        out_stack__free(s->tops[i].stack);
    }
    free(s->tops);
    for (size_t i = 0; i < s->nmarks; i++)
        free(s->marks[i].label);
    free(s->marks);
    free(s->rows);
    free(s->slive);
    free(s->init_slive);
    free(s->exe);
    memset(s, 0, sizeof *s);
}
