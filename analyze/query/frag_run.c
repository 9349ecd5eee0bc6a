/* query/frag_run.c — one run as `frag` reads it (frag_run.h): the heaps
 * chosen, their regions and the RSS samples, read once; --at resolved to an
 * instant; the live set there and the heaps existing then, handed to
 * frag__analyze(). The replay over time is frag_series.c's. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/query/frag_run.h"
#include "analyze/query/heap_sel.h"
#include "analyze/query/recording.h"
#include "analyze/render/output.h"
#include "analyze/store/sql.h"
#include "analyze/util/cmp.h"
#include "analyze/util/diag.h"
#include "analyze/util/grow.h"
#include "analyze/util/parse_time.h"

static int db_fail(const struct frag_run *c, const char *what)
{
    vh_errorf(c->cmd, "%s: %s", what, sqlite3_errmsg(c->db));
    return -EIO;
}

/* Runs sql (its ?1, if any, is --heap) and hands each row to `row`, which
 * grows its array with *cap (0 at first) and returns 0 or -ENOMEM. A
 * failure is printed: "out of memory", or `what` and SQLite's message. */
static int read_rows(struct frag_run *c, const char *sql, const char *what,
                     int (*row)(struct frag_run *c, sqlite3_stmt *st, size_t *cap))
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc;

    if ((rc = vh_prepare(c->cmd, c->db, sql, &st)))
        return rc;
    if (sqlite3_bind_parameter_count(st))
        vh_bind_heap_sel(st, 1, c->heap);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if ((rc = row(c, st, &cap)))
            break;
    if (rc == -ENOMEM)
        vh_errorf(c->cmd, "out of memory");
    else
        rc = rc == SQLITE_DONE ? 0 : db_fail(c, what);
    sqlite3_finalize(st);
    return rc;
}

static int heap_row(struct frag_run *c, sqlite3_stmt *st, size_t *cap)
{
    if (vh_grow(&c->h, cap, c->nh, sizeof *c->h, 16))
        return -ENOMEM;
    struct frag_hinfo *h = &c->h[c->nh];
    int64_t id = sqlite3_column_int64(st, 0), base = sqlite3_column_int64(st, 2),
            size = sqlite3_column_int64(st, 3);
    const char *name = (const char *)sqlite3_column_text(st, 1);
    if (id < 0 || id > UINT32_MAX)
        return 0;
    memset(h, 0, sizeof *h);
    h->id = (uint32_t)id;
    if (!(h->name = strdup(name ? name : "?")))
        return -ENOMEM;
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
    return 0;
}

static int rss_row(struct frag_run *c, sqlite3_stmt *st, size_t *cap)
{
    if (vh_grow(&c->rss, cap, c->nrss, sizeof *c->rss, 256))
        return -ENOMEM;
    int64_t t = sqlite3_column_int64(st, 0);
    c->rss[c->nrss++] = (struct frag_rss){ t > 0 ? (uint64_t)t : 0, sqlite3_column_int64(st, 1) };
    return 0;
}

static int read_basics(struct frag_run *c)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_prepare(c->cmd, c->db,
                        "SELECT coalesce((SELECT max(runtime_ns) FROM processes),"
                        "                (SELECT max(last_time) FROM events), 0),"
                        "       (SELECT exe FROM processes LIMIT 1)",
                        &st);
    if (rc)
        return rc;
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = db_fail(c, "reading the process");
    } else {
        int64_t t = sqlite3_column_int64(st, 0);
        const char *exe = (const char *)sqlite3_column_text(st, 1);
        c->end_time = t > 0 ? (uint64_t)t : 0;
        if (exe && !(c->exe = strdup(exe)))
            rc = -ENOMEM;
    }
    sqlite3_finalize(st);
    if (rc == -ENOMEM)
        vh_errorf(c->cmd, "out of memory");
    if (rc)
        return rc;
    return read_rows(c, "SELECT time, bytes FROM rss ORDER BY time", "reading RSS samples",
                     rss_row);
}

/* The last RSS sample at or before t, or NULL. */
const struct frag_rss *frag_run__rss_at(const struct frag_run *c, uint64_t t)
{
    size_t n = VH_PARTITION_POINT(i, c->nrss, c->rss[i].time <= t);
    return n ? &c->rss[n - 1] : NULL;
}

const struct frag_hinfo *frag_run__heap(const struct frag_run *c, uint32_t id)
{
    size_t i = VH_PARTITION_POINT(j, c->nh, c->h[j].id < id);
    return i < c->nh && c->h[i].id == id ? &c->h[i] : NULL;
}

static int alive(const struct frag_hinfo *h, uint64_t t)
{
    return (h->create <= 0 || (uint64_t)h->create <= t) &&
           (h->destroy < 0 || (uint64_t)h->destroy > t);
}

/* A region of a chosen heap (the regions, in declaration order). */
static int region_row(struct frag_run *c, sqlite3_stmt *st, size_t *cap)
{
    int64_t heap = sqlite3_column_int64(st, 0), base = sqlite3_column_int64(st, 1),
            size = sqlite3_column_int64(st, 2);
    if (heap < 0 || heap > UINT32_MAX || !frag_run__heap(c, (uint32_t)heap) || base <= 0 ||
        size <= 0 || c->nr >= UINT32_MAX - FRAG_REGION_ID0)
        return 0;
    if (vh_grow(&c->r, cap, c->nr, sizeof *c->r, 16))
        return -ENOMEM;
    c->r[c->nr++] = (struct frag_rinfo){
        (uint32_t)heap, (uint64_t)base, (uint64_t)size, sqlite3_column_int64(st, 3),
        sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 4) };
    return 0;
}

/* Region i as frag sees it: a part of its heap, existing at t when both
 * it and its heap do. */
static struct frag_heap region_heap(const struct frag_run *c, size_t i)
{
    return (struct frag_heap){ .id = FRAG_REGION_ID0 + (uint32_t)i, .base = c->r[i].base,
                               .size = c->r[i].size, .parent = c->r[i].heap, .region = 1 };
}

static int region_alive(const struct frag_run *c, size_t i, uint64_t t)
{
    const struct frag_rinfo *r = &c->r[i];
    return (uint64_t)(r->start > 0 ? r->start : 0) <= t && (r->end < 0 || (uint64_t)r->end > t) &&
           alive(frag_run__heap(c, r->heap), t);
}

/* --at: the instant, and how to name it. */
static int resolve_at(const struct frag_run *c, const char *at, uint64_t *t, char *what, size_t len)
{
    at = at ? at : "end";
    char tb[32];

    if (!strcmp(at, "end")) {
        *t = c->end_time;
        snprintf(what, len, "end");
        return 0;
    }
    if (!strcmp(at, "peak")) {
        const struct frag_hinfo *best = NULL;
        for (size_t i = 0; i < c->nh; i++)
            if (c->h[i].peak_bytes > 0 && (!best || c->h[i].peak_bytes > best->peak_bytes))
                best = &c->h[i];
        if (!best) {
            vh_errorf(c->cmd, "--at peak: no allocation in the heaps chosen");
            return -ENOENT;
        }
        *t = best->peak_time > 0 ? (uint64_t)best->peak_time : 0;
        snprintf(what, len, "peak of heap %s", best->name);
        return 0;
    }
    if (!strncmp(at, "mark:", 5)) {
        sqlite3_stmt *st = NULL;
        int rc = vh_prepare(c->cmd, c->db,
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
            if (!vh_prepare(c->cmd, c->db,
                            "SELECT group_concat(label, ', ') FROM"
                            " (SELECT DISTINCT label FROM marks ORDER BY time LIMIT 20)",
                            &st) &&
                sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
                vh_errorf(c->cmd, "--at: no mark labelled '%s' (marks: %s)", at + 5,
                          (const char *)sqlite3_column_text(st, 0));
            else
                vh_errorf(c->cmd, "--at: no mark labelled '%s' (the capture has no marks)",
                          at + 5);
            rc = -ENOENT;
        } else {
            rc = db_fail(c, "reading marks");
        }
        sqlite3_finalize(st);
        return rc;
    }
    if (vh_parse_time(at, t)) {
        vh_errorf(c->cmd, "--at: '%s' is not end, peak, mark:LABEL or a time like 1.5s",
                  at);
        return -EINVAL;
    }
    if (*t > c->end_time) {
        char eb[32];
        vh_errorf(c->cmd, "--at %s is after the end of the run (%s): give a time "
                                "within it, or end", at,
                  out__human_ns((int64_t)c->end_time, eb, sizeof eb));
        return -ERANGE;
    }
    snprintf(what, len, "%s", out__human_ns((int64_t)*t, tb, sizeof tb));
    return 0;
}

/* The blocks of the chosen heaps live at t (sorted by heap, address). */
int frag_run__live_at(const struct frag_run *c, uint64_t t, struct liveset **out)
{
    char err[256];
    int64_t one = c->nh == 1 ? (int64_t)c->h[0].id : -1;
    struct liveset *ls;
    int rc = liveset__at(c->db, t, one, &ls, err, sizeof err);
    if (rc) {
        vh_errorf(c->cmd, "the live set at %" PRIu64 " ns: %s", t, err);
        return rc;
    }
    if (one < 0 && c->heap) {
        size_t k = 0;
        for (size_t i = 0; i < ls->n; i++)
            if (frag_run__heap(c, ls->blocks[i].heap_id))
                ls->blocks[k++] = ls->blocks[i];
        ls->n = k;
    }
    *out = ls;
    return 0;
}

/* Chosen heap i as frag sees it. */
static struct frag_heap heap_of(const struct frag_run *c, size_t i)
{
    return (struct frag_heap){ c->h[i].id, c->h[i].base, c->h[i].size, c->h[i].parent, 0 };
}

/* The chosen heaps that exist at t, with their bounds. */
static struct frag_heap *heaps_at(const struct frag_run *c, uint64_t t, size_t *n)
{
    struct frag_heap *fh = malloc((c->nh + c->nr + 1) * sizeof *fh);
    *n = 0;
    for (size_t i = 0; fh && i < c->nh; i++)
        if (alive(&c->h[i], t))
            fh[(*n)++] = heap_of(c, i);
    for (size_t i = 0; fh && i < c->nr; i++)
        if (region_alive(c, i, t))
            fh[(*n)++] = region_heap(c, i);
    return fh;
}

/* Heap or region `what` (heaps 0 .. nh - 1, then the regions) declared to
 * ft as it is at time t. 0 or -ENOMEM. */
static int declare_one(const struct frag_run *c, struct fragtrack *ft, size_t what, uint64_t t)
{
    struct frag_heap fh = what < c->nh ? heap_of(c, what) : region_heap(c, what - c->nh);
    int exists = what < c->nh ? alive(&c->h[what], t) : region_alive(c, what - c->nh, t);
    return fragtrack__heap(ft, &fh, exists) == -ENOMEM ? -ENOMEM : 0;
}

/* Declares the chosen heaps (parents first: ids grow with creation) as
 * they are at time t. Before any block: a block of an undeclared heap would
 * make it a heap without bounds. */
int frag_run__declare(const struct frag_run *c, struct fragtrack *ft, uint64_t t)
{
    for (size_t i = 0; i < c->nh + c->nr; i++)
        if (declare_one(c, ft, i, t))
            return -ENOMEM;
    return 0;
}

/* Ends before starts at one time: a region ended and another begun at its
 * base in the same nanosecond must leave the base to the new one. */
static int change_cmp(const void *a, const void *b)
{
    const struct frag_change *x = a, *y = b;
    return vh_cmp2(x->time, y->time, x->start, y->start) ?: vh_cmp(x->what, y->what);
}

static void change_add(struct frag_change *ch, size_t *n, int64_t t, uint64_t after, size_t what,
                       int start)
{
    if (t > 0 && (uint64_t)t > after)
        ch[(*n)++] = (struct frag_change){ (uint64_t)t, (uint32_t)what, (uint8_t)start };
}

int frag_run__changes(const struct frag_run *c, uint64_t after, struct frag_change **out,
                      size_t *nout)
{
    struct frag_change *ch = malloc((2 * c->nh + 4 * c->nr + 1) * sizeof *ch);
    size_t n = 0;
    if (!ch)
        return -ENOMEM;
    for (size_t i = 0; i < c->nh; i++) {
        change_add(ch, &n, c->h[i].create, after, i, 1);
        change_add(ch, &n, c->h[i].destroy, after, i, 0);
    }
    /* a region exists while its heap does too */
    for (size_t i = 0; i < c->nr; i++) {
        const struct frag_hinfo *h = frag_run__heap(c, c->r[i].heap);
        change_add(ch, &n, c->r[i].start, after, c->nh + i, 1);
        change_add(ch, &n, c->r[i].end, after, c->nh + i, 0);
        change_add(ch, &n, h->create, after, c->nh + i, 1);
        change_add(ch, &n, h->destroy, after, c->nh + i, 0);
    }
    qsort(ch, n, sizeof *ch, change_cmp);
    *out = ch;
    *nout = n;
    return 0;
}

int frag_run__change(const struct frag_run *c, struct fragtrack *ft, const struct frag_change *ch)
{
    return declare_one(c, ft, ch->what, ch->time);
}

const char *frag_run__heap_name(const struct frag_run *c, uint32_t id)
{
    const struct frag_hinfo *h = frag_run__heap(c, id);
    return h ? h->name : "?";
}

int frag_run__open(const char *cmd, sqlite3 *db, const char *heap, struct frag_run *c)
{
    memset(c, 0, sizeof *c);
    c->cmd = cmd;
    c->db = db;
    c->heap = heap;
    const char *why = vh_rec_no_frag(db);
    if (why) {
        vh_errorf(cmd, "%s", why);
        return -EINVAL;
    }
    int rc = read_rows(c, "SELECT h.id, h.name, h.base, h.size, h.create_time, h.destroy_time,"
                          "       h.peak_bytes, h.peak_time, h.parent_id"
                          " FROM heaps h WHERE " VH_HEAP_SEL("h.id", "?1") " ORDER BY h.id",
                       "reading heaps", heap_row);
    if (!rc)
        rc = read_rows(c, "SELECT heap_id, base, size, start_time, end_time FROM regions"
                          " ORDER BY rowid", "reading regions", region_row);
    /* A heap nested in a chosen one and not chosen itself (Vere's inner road
     * under --heap loom) is its parent's occupied space while it lives, as a
     * declared region is: not a hole. */
    if (!rc)
        rc = read_rows(c, "SELECT h.parent_id, h.base, h.size, h.create_time, h.destroy_time"
                          " FROM heaps h WHERE NOT " VH_HEAP_SEL("h.id", "?1") " ORDER BY h.id",
                       "reading nested heaps", region_row);
    if (!rc)
        rc = read_basics(c);
    return rc;
}

void frag_run__free(struct frag_run *c)
{
    for (size_t i = 0; i < c->nh; i++)
        free(c->h[i].name);
    free(c->h);
    free(c->r);
    free(c->rss);
    free(c->exe);
    memset(c, 0, sizeof *c);
}

int frag_run__moment(const struct frag_run *c, const char *at, const struct frag_opts *fo,
                     struct frag_moment *m)
{
    int rc;

    memset(m, 0, sizeof *m);
    if ((rc = resolve_at(c, at, &m->t, m->what, sizeof m->what)) ||
        (rc = frag_run__live_at(c, m->t, &m->ls)))
        return rc;
    if (!(m->fh = heaps_at(c, m->t, &m->nfh))) {
        vh_errorf(c->cmd, "out of memory");
        return -ENOMEM;
    }
    if ((rc = frag__analyze(m->ls->blocks, m->ls->n, m->fh, m->nfh, fo, &m->r))) {
        if (rc == -ENOMEM)
            vh_errorf(c->cmd, "out of memory");
        else
            vh_errorf(c->cmd, "the live set is not in address order (damaged DB?)");
    }
    return rc;
}

void frag_moment__free(struct frag_moment *m)
{
    frag_report__free(m->r);
    free(m->fh);
    liveset__free(m->ls);
    memset(m, 0, sizeof *m);
}
