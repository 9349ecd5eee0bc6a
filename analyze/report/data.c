/* report/data.c — the data of the HTML report (report.h), as one JSON
 * object: the process, heaps and tags, the call tree with every measure
 * (and live-set snapshots over time, or a baseline run's measures), memory
 * over time per heap with RSS and marks, the top stacks and fragmentation at
 * the end and at the peak. The timeline and the snapshots come from one
 * replay of the event stream. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/store/events.h"
#include "analyze/store/tlayout.h"
#include "analyze/query/frag.h"
#include "analyze/util/cmp.h"
#include "common/leb128.h"
#include "analyze/util/fmt.h"
#include "analyze/util/grow.h"
#include "analyze/query/recording.h"
#include "analyze/report/report.h"
#include "analyze/util/weight.h"

static int dbfail(sqlite3 *db, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(db));
    return -EIO;
}

static uint32_t key_of(const struct vh_rkeys *k, int64_t id, const char *name, const char *none)
{
    int added;
    if (!k->keys)
        return (uint32_t)id;
    if (!name)
        name = none;
    return vh_strtab__intern(k->keys, name, strlen(name), &added);
}

uint32_t vh_rkey_heap(const struct vh_rkeys *k, int64_t id, const char *name)
{
    return key_of(k, id, name, "?");
}

uint32_t vh_rkey_tag(const struct vh_rkeys *k, int64_t id, const char *label)
{
    if (k->no_tags || (!label && k->keys))
        return 0;                  /* by label: no tag is 0 in every run */
    return key_of(k, id, label, "");
}

int vh_report_add_stats(struct vh_ctree *t, sqlite3 *db, const struct vh_snames *sn, size_t col0,
                        const struct vh_rkeys *k,
                        int (*row)(void *arg, int64_t trow, int64_t heap, int64_t stack,
                                   int64_t tag),
                        void *arg, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    struct vh_sname *path = NULL;
    size_t cap = 0;
    int rc;
    if (sqlite3_prepare_v2(db,
                           "SELECT s.heap_id, h.name, s.stack_id, s.tag_id, t.label,"
                           "       sum(s.allocations), sum(s.bytes_allocated), sum(s.temporary),"
                           "       sum(s.peak_bytes), sum(s.leaked_bytes)"
                           " FROM stack_stats s LEFT JOIN heaps h ON h.id = s.heap_id"
                           " LEFT JOIN tags t ON t.id = s.tag_id AND s.tag_id != 0"
                           " GROUP BY s.heap_id, s.stack_id, s.tag_id",
                           -1, &st, NULL) != SQLITE_OK)
        return dbfail(db, "reading stack_stats", err, errlen);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int n = vh_snames__stack(sn, sqlite3_column_int64(st, 2), 0, &path, &cap);
        int64_t r = n < 0 ? n
                          : vh_ctree__row(t, path, (size_t)n, sn,
                                          vh_rkey_heap(k, sqlite3_column_int64(st, 0),
                                                       (const char *)sqlite3_column_text(st, 1)),
                                          vh_rkey_tag(k, sqlite3_column_int64(st, 3),
                                                      (const char *)sqlite3_column_text(st, 4)));
        if (r < 0) {
            rc = -ENOMEM;
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        uint64_t *v = vh_ctree__vals(t, r) + col0;
        for (int m = 0; m < VH_RM_N; m++) {
            int64_t x = sqlite3_column_int64(st, 5 + m);
            v[m] += x > 0 ? (uint64_t)x : 0;
        }
        if (row && (rc = row(arg, r, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 2),
                             sqlite3_column_int64(st, 3)))) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
    }
    rc = rc == SQLITE_DONE ? 0 : dbfail(db, "reading stack_stats", err, errlen);
out:
    sqlite3_finalize(st);
    free(path);
    return rc;
}

/* ---- small readers ----------------------------------------------------------- */

static int64_t one_int(sqlite3 *db, const char *sql, int64_t dflt)
{
    sqlite3_stmt *st = NULL;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* JSON text copied, '<' (only ever inside its strings) as \u003c, so that
 * it can sit inside an HTML <script>. */
static void json_text(struct vh_xout *o, const char *s)
{
    for (const char *lt; (lt = strchr(s, '<')); s = lt + 1) {
        vh_xout__write(o, s, (size_t)(lt - s));
        vh_xout__puts(o, "\\u003c");
    }
    vh_xout__puts(o, s);
}

/* Every row of `sql` as a JSON array of arrays (integers, reals, strings,
 * null; a column named json_* is copied as JSON text). */
static int rows_json(sqlite3 *db, const char *sql, struct vh_xout *o, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc, first = 1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return dbfail(db, "reading the database", err, errlen);
    vh_xout__puts(o, "[");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        vh_xout__puts(o, first ? "[" : ",[");
        first = 0;
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            if (c)
                vh_xout__puts(o, ",");
            switch (sqlite3_column_type(st, c)) {
            case SQLITE_INTEGER:
                vh_xout__printf(o, "%" PRId64, (int64_t)sqlite3_column_int64(st, c));
                break;
            case SQLITE_FLOAT:
                vh_xout__printf(o, "%.17g", sqlite3_column_double(st, c));
                break;
            case SQLITE_NULL:
                vh_xout__puts(o, "null");
                break;
            default:
                if (!strncmp(sqlite3_column_name(st, c), "json_", 5))
                    json_text(o, (const char *)sqlite3_column_text(st, c));
                else
                    vh_xout__json_str(o, (const char *)sqlite3_column_text(st, c));
            }
        }
        vh_xout__puts(o, "]");
    }
    vh_xout__puts(o, "]");
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : dbfail(db, "reading the database", err, errlen);
}

static int process_json(sqlite3 *db, const char *name, struct vh_xout *o, char *err,
                        size_t errlen)
{
    vh_xout__puts(o, "{\"db\":");
    vh_xout__json_str(o, name);
    vh_xout__puts(o, ",\"process\":");
    return rows_json(db,
                     "SELECT pid, exe, coalesce(argv, '[]') AS json_argv, runtime_ns, ended,"
                     " peak_rss, peak_rss_time, start_realtime_ns, dropped_events, nested_events,"
                     " stack_table_full,"
                     " (SELECT value FROM meta WHERE key = 'coarse_clock_ns'),"
                     " (SELECT value FROM meta WHERE key = 'damage'), sample_rate,"
                     " (SELECT count(*) FROM windows),"
                     " (SELECT coalesce(sum(end_time - start_time), 0) FROM windows)"
                     " FROM processes WHERE id = 1",
                     o, err, errlen);
}

/* ---- the timeline and the snapshots: one replay -------------------------------- */

#define TL_HEAPS 24                /* heaps with a series of their own       */

struct stackrow {                  /* (heap, stack, tag) -> tree row         */
    struct vh_map *map;
    struct vh_ctree *t;
    const struct vh_snames *sn;
    const struct vh_rkeys *k;
};

static int remember_row(void *arg, int64_t trow, int64_t heap, int64_t stack, int64_t tag)
{
    struct stackrow *s = arg;
    int existed;
    struct vh_map_ent *e = vh_map__insert(s->map, (uint64_t)heap << 32 | (uint32_t)tag,
                                          (uint64_t)stack, &existed);
    if (!e)
        return -ENOMEM;
    e->v1 = (uint64_t)trow;
    return 0;
}

/* The tree row of a block: a (heap, stack, tag) stack_stats lacks gets one. */
static int64_t row_of(struct stackrow *s, uint32_t heap, uint32_t stack, uint32_t tag)
{
    struct vh_map_ent *e = vh_map__find(s->map, (uint64_t)heap << 32 | tag, stack);
    struct vh_sname *path = NULL;
    size_t cap = 0;
    if (e)
        return (int64_t)e->v1;
    int n = vh_snames__stack(s->sn, stack, 0, &path, &cap);
    int64_t r = n < 0 ? -ENOMEM
                      : vh_ctree__row(s->t, path, (size_t)n, s->sn,
                                      vh_rkey_heap(s->k, heap, NULL), vh_rkey_tag(s->k, tag, NULL));
    free(path);
    if (r >= 0 && remember_row(s, r, heap, stack, tag))
        r = -ENOMEM;
    return r;
}

/* An RSS sample (v: bytes) or a mark (label), and the point it falls in. */
struct instant {
    uint64_t time;
    int64_t v;
    char *label;
    unsigned point;
};

struct timeline {
    unsigned points;
    int by_event;                  /* x is the event count, not time         */
    uint64_t width;                /* ns (or events) per point               */
    uint64_t nevents, runtime;
    size_t nser;                   /* TL_HEAPS at most, + "other", + total   */
    int64_t heap_of_ser[TL_HEAPS + 1];
    uint64_t *live, *max;          /* nser x points                          */
    uint8_t *seen;                 /* points with an event                   */
    int64_t *rss;                  /* per point, -1 none                     */
    uint64_t *snap_point;          /* per snapshot: its point                */
    uint64_t *snap_time;
    struct instant *rs, *mk;       /* RSS samples and marks, by time         */
    size_t nrs, nmk, irs, imk;
};

static unsigned point_of(const struct timeline *tl, const struct vh_ev *ev)
{
    uint64_t x = tl->by_event ? ev->seq : ev->time;
    uint64_t p = x / tl->width;
    return p >= tl->points ? tl->points - 1 : (unsigned)p;
}

/* The series a heap's bytes go to: its own (the TL_HEAPS largest peaks),
 * else "other heaps" (index TL_HEAPS). */
static size_t ser_of(const struct timeline *tl, struct vh_map *hs, uint32_t heap)
{
    struct vh_map_ent *e = vh_map__find(hs, heap, 0);
    return e ? (size_t)e->v1 : TL_HEAPS;
}

struct replay {
    struct timeline *tl;
    struct stackrow *sr;
    struct vh_ctree *t;
    size_t col0;                   /* the first snapshot column              */
    unsigned nsnap, next_snap;
    uint64_t *rowlive;             /* per tree row: live bytes now           */
    size_t nrowlive;
    struct vh_map *blocks;         /* (heap, addr) -> (row, size)            */
    struct vh_map *hs;             /* heap -> series                         */
    int64_t *hlive;                /* per series: live now                   */
    int64_t total;                 /* every heap: live now                   */
    uint64_t rate;                 /* sampled capture: a block weighs 1/p    */
};

static int rowlive_add(struct replay *r, int64_t row, int64_t delta)
{
    if (vh_reserve_zeroed(&r->rowlive, &r->nrowlive, (size_t)row + 1, sizeof *r->rowlive, 1024))
        return -ENOMEM;
    r->rowlive[row] += (uint64_t)delta;
    return 0;
}

/* Snapshots due before point p: the live bytes of every row into their
 * columns. */
static void take_snaps(struct replay *r, unsigned p)
{
    while (r->next_snap < r->nsnap && r->tl->snap_point[r->next_snap] < p) {
        for (size_t i = 0; i < r->nrowlive; i++)
            if (r->rowlive[i])
                vh_ctree__vals(r->t, (int64_t)i)[r->col0 + r->next_snap] = r->rowlive[i];
        r->next_snap++;
    }
}

/* Opening point p: every series' live bytes so far are its floor there. */
static void open_point(struct replay *r, unsigned p)
{
    struct timeline *tl = r->tl;
    for (size_t s = 0; s < tl->nser; s++) {
        int64_t v = s == tl->nser - 1 ? r->total : r->hlive[s];
        tl->max[s * tl->points + p] = v > 0 ? (uint64_t)v : 0;
    }
    tl->seen[p] = 1;
}

/* Closing it: the live bytes at its end. */
static void close_point(struct replay *r, unsigned p)
{
    struct timeline *tl = r->tl;
    for (size_t s = 0; s < tl->nser; s++) {
        int64_t v = s == tl->nser - 1 ? r->total : r->hlive[s];
        tl->live[s * tl->points + p] = v > 0 ? (uint64_t)v : 0;
    }
}

/* After an event in series `ser`: the highs of it and of the total. */
static void touch(struct replay *r, unsigned p, size_t ser)
{
    struct timeline *tl = r->tl;
    uint64_t *m = &tl->max[ser * tl->points + p];
    uint64_t *mt = &tl->max[(tl->nser - 1) * tl->points + p];
    if (r->hlive[ser] > 0 && (uint64_t)r->hlive[ser] > *m)
        *m = (uint64_t)r->hlive[ser];
    if (r->total > 0 && (uint64_t)r->total > *mt)
        *mt = (uint64_t)r->total;
}

static void live_add(struct replay *r, size_t ser, int64_t d)
{
    r->hlive[ser] += d;
    r->total += d;
}

_Static_assert(VH_REPORT_SIZE_CLASSES == VH_TL_SIZE_CLASSES, "the loader counts these classes");

/* An allocation (ALLOC or RESIZE) into the sparse columns: its window's
 * bytes and calls (between the snapshots around it), its size class's
 * calls and bytes. Estimates, in a sampled capture. */
static int count_alloc(struct replay *r, int64_t row, uint64_t size, uint64_t bytes)
{
    uint64_t calls = size ? (bytes + size / 2) / size : 1;
    uint32_t w = r->next_snap < r->nsnap ? r->next_snap : r->nsnap - 1;
    uint32_t h = 2 * r->nsnap + 2 * vh_tl_size_class(size);
    if (r->nsnap && (vh_ctree__xadd(r->t, row, 2 * w, bytes) ||
                     vh_ctree__xadd(r->t, row, 2 * w + 1, calls)))
        return -ENOMEM;
    return vh_ctree__xadd(r->t, row, h, calls) || vh_ctree__xadd(r->t, row, h + 1, bytes)
               ? -ENOMEM
               : 0;
}

static int cmp_u64(const void *a, const void *b)
{
    return vh_cmp(*(const uint64_t *)a, *(const uint64_t *)b);
}

static int replay_event(struct replay *r, const struct vh_ev *ev, size_t ser)
{
    int existed;
    struct vh_map_ent *e;
    int64_t row;
    switch (ev->kind) {
    case VH_EV_ALLOC:
        if ((row = row_of(r->sr, ev->heap_id, ev->stack_id, ev->tag_id)) < 0 ||
            !(e = vh_map__insert(r->blocks, ev->heap_id, ev->addr, &existed)))
            return -ENOMEM;
        if (existed)               /* not in a sound stream; undo the old one */
            r->rowlive[e->v1] -= e->v2, live_add(r, ser, -(int64_t)e->v2);
        e->v1 = (uint64_t)row;
        e->v2 = vh_weigh_bytes(ev->size, r->rate);     /* the block's estimate */
        live_add(r, ser, (int64_t)e->v2);
        return count_alloc(r, row, ev->size, e->v2) || rowlive_add(r, row, (int64_t)e->v2);
    case VH_EV_FREE:
        if ((e = vh_map__find(r->blocks, ev->heap_id, ev->addr))) {
            r->rowlive[e->v1] -= e->v2;
            live_add(r, ser, -(int64_t)e->v2);
            vh_map__remove(r->blocks, e);
        }
        return 0;
    case VH_EV_RESIZE:
        if ((row = row_of(r->sr, ev->heap_id, ev->stack_id, ev->tag_id)) < 0 ||
            !(e = vh_map__insert(r->blocks, ev->heap_id, ev->addr, &existed)))
            return -ENOMEM;
        if (existed)
            r->rowlive[e->v1] -= e->v2, live_add(r, ser, -(int64_t)e->v2);
        e->v1 = (uint64_t)row;
        e->v2 = vh_weigh_bytes(ev->size, r->rate);
        live_add(r, ser, (int64_t)e->v2);
        return count_alloc(r, row, ev->size, e->v2) || rowlive_add(r, row, (int64_t)e->v2);
    case VH_EV_MOVE:
        if ((e = vh_map__find(r->blocks, ev->heap_id, ev->addr))) {
            uint64_t rw = e->v1, sz = e->v2;
            vh_map__remove(r->blocks, e);
            if (!(e = vh_map__insert(r->blocks, ev->heap_id, ev->to, &existed)))
                return -ENOMEM;
            if (existed)
                r->rowlive[e->v1] -= e->v2, live_add(r, ser, -(int64_t)e->v2);
            e->v1 = rw;
            e->v2 = sz;
        }
        return 0;
    default:
        return 0;
    }
}

/* The RSS samples and marks up to `time` fall in point p: by their own
 * time on a time axis, where the events stand on an axis of events. */
static void place(struct timeline *tl, uint64_t time, unsigned p)
{
    struct instant *lists[2] = { tl->rs, tl->mk };
    size_t n[2] = { tl->nrs, tl->nmk }, *at[2] = { &tl->irs, &tl->imk };
    for (int k = 0; k < 2; k++)
        for (; *at[k] < n[k] && lists[k][*at[k]].time <= time; (*at[k])++) {
            uint64_t q = lists[k][*at[k]].time / tl->width;
            lists[k][*at[k]].point = tl->by_event ? p : q < tl->points ? (unsigned)q
                                                                        : tl->points - 1;
        }
}

static int replay(sqlite3 *db, struct replay *r, char *err, size_t errlen)
{
    struct evstream *es = NULL;
    struct vh_ev ev;
    int rc, p_last = -1;
    if ((rc = evstream__open(db, 0, &es, err, errlen)))
        return rc;
    while ((rc = evstream__next(es, &ev)) == 1) {
        unsigned p = point_of(r->tl, &ev);
        if ((int)p != p_last) {
            if (p_last >= 0)
                close_point(r, (unsigned)p_last);
            take_snaps(r, p);
            open_point(r, p);
            p_last = (int)p;
        }
        size_t ser = ser_of(r->tl, r->hs, ev.heap_id);
        place(r->tl, ev.time, p);
        if ((rc = replay_event(r, &ev, ser))) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        touch(r, p, ser);
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s", evstream__error(es));
        goto out;
    }
    if (p_last >= 0)
        close_point(r, (unsigned)p_last);
    place(r->tl, UINT64_MAX, r->tl->points - 1);
    take_snaps(r, r->tl->points + 1);
    rc = 0;
out:
    evstream__close(es);
    return rc;
}

/* ---- or the same numbers as the loader counted them (load/rtl.c) ------------ */

static int loaded_layout(sqlite3 *db, const struct replay *r, const struct vh_report_opts *opt)
{
    const struct timeline *tl = r->tl;
    return !opt->has_range && !tl->by_event && r->nsnap == VH_TL_SNAPSHOTS &&
           one_int(db, "SELECT value FROM meta WHERE key = 'report_points'", -1) == tl->points &&
           one_int(db, "SELECT value FROM meta WHERE key = 'report_width'", -1) ==
               (int64_t)tl->width &&
           one_int(db, "SELECT value FROM meta WHERE key = 'report_snapshots'", -1) ==
               VH_TL_SNAPSHOTS;
}

/* A heap of its own series: its value at every point, carried between
 * its rows (from..to-1). */
static void carry(struct timeline *tl, size_t ser, unsigned from, unsigned to, uint64_t v)
{
    for (unsigned p = from; p < to; p++)
        tl->live[ser * tl->points + p] = tl->max[ser * tl->points + p] = v;
}

/* "other heaps": their live bytes add up. Their high in a point is exact
 * where no heap with a series of its own but malloc had events there
 * (every heap's high but malloc's, less those heaps' constant bytes; or
 * every heap's, where malloc has no series and none of them had any), or
 * where one of them had events (its rise); else the sum of their rises, at
 * most every heap's high (docs/schema.md). own: bit 1, a heap of its own
 * but malloc had events; bit 2, malloc did. */
static void other_series(struct timeline *tl, const int64_t *dlive, const uint64_t *rise,
                         const uint8_t *own, const uint64_t *cmax, int malloc_own)
{
    size_t o = TL_HEAPS * tl->points, all = (tl->nser - 1) * tl->points;
    int64_t run = 0;
    for (unsigned p = 0; p < tl->points; p++) {
        uint64_t open = run > 0 ? (uint64_t)run : 0, mx = tl->max[all + p], rest = 0;
        int exact = malloc_own ? !(own[p] & 1) : !own[p];
        run += dlive[p];
        tl->live[o + p] = run > 0 ? (uint64_t)run : 0;
        for (size_t s = 0; exact && s < TL_HEAPS; s++)
            if (!malloc_own || tl->heap_of_ser[s] != 0)
                rest += tl->live[s * tl->points + p];
        if (exact && malloc_own)
            mx = cmax[p] > rest ? cmax[p] - rest : 0;
        else if (exact)
            mx = mx > rest ? mx - rest : 0;
        else if (open + rise[p] < mx)
            mx = open + rise[p];
        tl->max[o + p] = mx > tl->live[o + p] ? mx : tl->live[o + p];
    }
}

/* One report_timeline row (heap h's, its series ser) into the series. */
static void timeline_row(struct timeline *tl, size_t ser, unsigned p, uint64_t live, uint64_t max,
                         uint64_t *had, unsigned *next, int64_t *dlive, uint64_t *rise,
                         uint8_t *own)
{
    if (ser == tl->nser - 1) {
        tl->seen[p] = 1;
    } else if (ser == TL_HEAPS) {
        dlive[p] += (int64_t)(live - *had);
        rise[p] += max - *had;
        *had = live;
        return;
    } else {
        carry(tl, ser, *next, p, *had);
        own[p] |= tl->heap_of_ser[ser] ? 1 : 2;
    }
    tl->live[ser * tl->points + p] = live;
    tl->max[ser * tl->points + p] = max;
    *had = live;
    *next = p + 1;
}

static int loaded_timeline(sqlite3 *db, struct replay *r, char *err, size_t errlen)
{
    struct timeline *tl = r->tl;
    sqlite3_stmt *st = NULL;
    int64_t *dlive = calloc(tl->points, sizeof *dlive), heap = INT64_MIN;
    uint64_t *rise = calloc(tl->points, sizeof *rise), had = 0;
    uint64_t *cmax = calloc(tl->points, sizeof *cmax);      /* all heaps' but malloc's */
    uint8_t *own = calloc(tl->points, 1);      /* heaps of their own had events */
    unsigned next = 0;
    size_t ser = 0;
    int rc = -ENOMEM;
    if (!dlive || !rise || !own || !cmax)
        goto out;
    if (sqlite3_prepare_v2(db, "SELECT heap_id, point, live_bytes, max_live_bytes FROM "
                               "report_timeline ORDER BY heap_id, point", -1, &st, NULL)) {
        rc = dbfail(db, "reading report_timeline", err, errlen);
        goto out;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t h = sqlite3_column_int64(st, 0), p = sqlite3_column_int64(st, 1);
        if (h == -2) {
            if (p >= 0 && p < tl->points)
                cmax[p] = (uint64_t)sqlite3_column_int64(st, 3);
            continue;
        }
        if (h != heap) {
            if (ser < TL_HEAPS)
                carry(tl, ser, next, tl->points, had);
            heap = h, had = 0, next = 0;
            ser = h < 0 ? tl->nser - 1 : ser_of(tl, r->hs, (uint32_t)h);
        }
        if (p >= 0 && p < tl->points)
            timeline_row(tl, ser, (unsigned)p, (uint64_t)sqlite3_column_int64(st, 2),
                         (uint64_t)sqlite3_column_int64(st, 3), &had, &next, dlive, rise, own);
    }
    if (rc != SQLITE_DONE) {
        rc = dbfail(db, "reading report_timeline", err, errlen);
        goto out;
    }
    if (ser < TL_HEAPS)
        carry(tl, ser, next, tl->points, had);
    int malloc_own = 0;
    for (size_t s = 0; s < TL_HEAPS; s++)
        malloc_own |= tl->heap_of_ser[s] == 0;
    other_series(tl, dlive, rise, own, cmax, malloc_own);
    rc = 0;
out:
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    sqlite3_finalize(st);
    free(dlive);
    free(rise);
    free(own);
    free(cmax);
    return rc;
}

/* A report_stacks row's cells into its tree row. */
static int stack_cells(struct replay *r, int64_t row, const uint8_t *p, const uint8_t *end)
{
    uint64_t col, v, last = 0, s = 0, *vals = vh_ctree__vals(r->t, row) + r->col0;
    while (p < end) {
        if (vh_uleb_get(&p, end, &col) || vh_uleb_get(&p, end, &v))
            return -EINVAL;
        if (col < VH_TL_CELL_SNAP) {
            if (vh_ctree__xadd(r->t, row, (uint32_t)col, v))
                return -ENOMEM;
        } else if (col < VH_TL_CELL_RUN) {
            if ((s = col - VH_TL_CELL_SNAP) >= r->nsnap)
                return -EINVAL;
            vals[s++] += last = v;
        } else {                   /* a run: snapshots s..col - RUN keep it */
            if (col - VH_TL_CELL_RUN >= r->nsnap)
                return -EINVAL;
            for (; s <= col - VH_TL_CELL_RUN; s++)
                vals[s] += last;
        }
    }
    return 0;
}

static int loaded_stacks(sqlite3 *db, struct replay *r, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(db, "SELECT heap_id, stack_id, tag_id, cells FROM report_stacks", -1,
                           &st, NULL))
        return dbfail(db, "reading report_stacks", err, errlen);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const uint8_t *p = sqlite3_column_blob(st, 3);
        int64_t row = row_of(r->sr, (uint32_t)sqlite3_column_int64(st, 0),
                             (uint32_t)sqlite3_column_int64(st, 1),
                             (uint32_t)sqlite3_column_int64(st, 2));
        if (row < 0 || (rc = stack_cells(r, row, p, p + sqlite3_column_bytes(st, 3)))) {
            sqlite3_finalize(st);
            snprintf(err, errlen, row < 0 || rc == -ENOMEM ? "out of memory"
                                                           : "report_stacks: a damaged row");
            return row < 0 ? -ENOMEM : rc;
        }
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : dbfail(db, "reading report_stacks", err, errlen);
}

/* The replay's results from the loader's rows: 1, or 0 when it counted
 * another layout (the report replays then). */
static int loaded(sqlite3 *db, struct replay *r, const struct vh_report_opts *opt, char *err,
                  size_t errlen)
{
    int rc;
    if (!loaded_layout(db, r, opt))
        return 0;
    if ((rc = loaded_timeline(db, r, err, errlen)) || (rc = loaded_stacks(db, r, err, errlen)))
        return rc;
    place(r->tl, UINT64_MAX, r->tl->points - 1);
    return 1;
}

static int instants(sqlite3 *db, const char *sql, struct instant **out, size_t *n, char *err,
                    size_t errlen)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return dbfail(db, "reading rss and marks", err, errlen);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *l = sqlite3_column_text(st, 2);
        if (vh_grow(out, &cap, *n, sizeof **out, 256) || (l && !(l = (const unsigned char *)
                                                                      strdup((const char *)l)))) {
            sqlite3_finalize(st);
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        int64_t t = sqlite3_column_int64(st, 0);
        (*out)[(*n)++] = (struct instant){ t > 0 ? (uint64_t)t : 0, sqlite3_column_int64(st, 1),
                                           (char *)l, 0 };
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : dbfail(db, "reading rss and marks", err, errlen);
}

/* RSS per point: the last sample in it, carried forward. */
static void rss_points(struct timeline *tl)
{
    for (unsigned i = 0; i < tl->points; i++)
        tl->rss[i] = -1;
    for (size_t i = 0; i < tl->nrs; i++)
        tl->rss[tl->rs[i].point] = tl->rs[i].v;
    for (unsigned i = 1; i < tl->points; i++)
        if (tl->rss[i] < 0)
            tl->rss[i] = tl->rss[i - 1];
}

static void u64s(struct vh_xout *o, const uint64_t *v, size_t n)
{
    vh_xout__puts(o, "[");
    for (size_t i = 0; i < n; i++)
        vh_xout__printf(o, "%s%" PRIu64, i ? "," : "", v[i]);
    vh_xout__puts(o, "]");
}

static void timeline_json(const struct timeline *tl, struct vh_xout *o, unsigned nsnap)
{
    vh_xout__printf(o, "{\"points\":%u,\"by_event\":%s,\"width\":%" PRIu64 ",\"events\":%" PRIu64
                       ",\"runtime\":%" PRIu64 ",\"series\":[",
                    tl->points, tl->by_event ? "true" : "false", tl->width, tl->nevents,
                    tl->runtime);
    for (size_t s = 0; s < tl->nser; s++) {
        vh_xout__printf(o, "%s{\"heap\":", s ? "," : "");
        if (s == tl->nser - 1)
            vh_xout__puts(o, "\"all\"");
        else if (s == TL_HEAPS)
            vh_xout__puts(o, "\"other\"");
        else
            vh_xout__printf(o, "%" PRId64, tl->heap_of_ser[s]);
        vh_xout__puts(o, ",\"live\":");
        u64s(o, tl->live + s * tl->points, tl->points);
        vh_xout__puts(o, ",\"max\":");
        u64s(o, tl->max + s * tl->points, tl->points);
        vh_xout__puts(o, "}");
    }
    vh_xout__puts(o, "],\"rss\":[");
    for (unsigned i = 0; i < tl->points; i++)
        vh_xout__printf(o, "%s%" PRId64, i ? "," : "", tl->rss[i]);
    vh_xout__puts(o, "],\"snapshots\":");
    u64s(o, tl->snap_point, nsnap);
    vh_xout__puts(o, ",\"snapshot_times\":");
    u64s(o, tl->snap_time, nsnap);
    vh_xout__puts(o, ",\"marks\":[");
    for (size_t i = 0; i < tl->nmk; i++) {
        vh_xout__printf(o, "%s[%" PRIu64 ",", i ? "," : "", tl->mk[i].time);
        vh_xout__json_str(o, tl->mk[i].label);
        vh_xout__printf(o, ",%u]", tl->mk[i].point);
    }
    vh_xout__puts(o, "]}");
}

/* Snapshots at the ends of evenly spread points, the last at the end; a
 * range asked for (--from, --to) takes the last two, moved to its ends:
 * the point before the one --from falls in, the one --to falls in. */
static int place_snaps(struct timeline *tl, unsigned nsnap, const struct vh_report_opts *opt,
                       char *err, size_t errlen)
{
    unsigned even = nsnap - (opt->has_range ? 2 : 0);
    char a[32], b[32];
    for (unsigned s = 0; s < even; s++)
        tl->snap_point[s] = vh_tl_snap_point(s, even, tl->points);
    if (opt->has_range) {
        vh_fmt_secs(opt->from, 3, a, sizeof a);
        vh_fmt_secs(tl->runtime, 3, b, sizeof b);
        if (tl->by_event) {
            snprintf(err, errlen, "--from/--to: this run (%s) is too short for its coarse clock to"
                     " place events in time (record with VHEAP_CLOCK=precise)", b);
            return -ERANGE;
        }
        if (opt->from >= tl->runtime) {
            snprintf(err, errlen, "--from %s is past the end of the run (%s)", a, b);
            return -ERANGE;
        }
        uint64_t pf = opt->from / tl->width, pt = opt->to / tl->width;
        tl->snap_point[even] = pf ? pf - 1 : 0;
        tl->snap_point[even + 1] = pt < tl->points ? pt : tl->points - 1;
        if (nsnap > 1)
            qsort(tl->snap_point, nsnap, sizeof *tl->snap_point, cmp_u64);
    }
    for (unsigned s = 0; s < nsnap; s++)
        tl->snap_time[s] = (tl->snap_point[s] + 1) * tl->width;
    return 0;
}

/* Chooses the axis and the series, replays, writes "timeline". */
static int timeline(sqlite3 *db, struct replay *r, const struct vh_report_opts *opt,
                    struct vh_xout *o, char *err, size_t errlen)
{
    struct timeline *tl = r->tl;
    sqlite3_stmt *st = NULL;
    int rc = -ENOMEM, existed;
    int64_t coarse = one_int(db, "SELECT value FROM meta WHERE key = 'coarse_clock_ns'", 0);
    int64_t precise_from = one_int(db, "SELECT value FROM meta WHERE key = 'precise_from'", 0);
    tl->runtime = (uint64_t)one_int(db, "SELECT max(runtime_ns, 0) FROM processes", 0);
    tl->nevents = (uint64_t)one_int(db, "SELECT sum(count) FROM events", 0);
    struct vh_tl_layout lay = vh_tl_layout(opt->points, tl->nevents, tl->runtime, coarse,
                                           precise_from);
    tl->points = lay.points;
    tl->by_event = lay.by_event;
    tl->width = lay.width;

    if (!(r->hs = vh_map__new()))
        return -ENOMEM;
    if (sqlite3_prepare_v2(db, "SELECT id FROM heaps ORDER BY peak_bytes DESC, id LIMIT 24", -1,
                           &st, NULL) != SQLITE_OK)
        return dbfail(db, "reading heaps", err, errlen);
    size_t n = 0;
    while (sqlite3_step(st) == SQLITE_ROW && n < TL_HEAPS) {
        struct vh_map_ent *e = vh_map__insert(r->hs, (uint64_t)sqlite3_column_int64(st, 0), 0,
                                              &existed);
        if (!e) {
            sqlite3_finalize(st);
            return -ENOMEM;
        }
        e->v1 = n;
        tl->heap_of_ser[n++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    for (; n < TL_HEAPS; n++)
        tl->heap_of_ser[n] = -1;
    tl->nser = TL_HEAPS + 2;
    r->nsnap = opt->snapshots;
    if (!(tl->live = calloc(tl->nser * tl->points, sizeof *tl->live)) ||
        !(tl->max = calloc(tl->nser * tl->points, sizeof *tl->max)) ||
        !(tl->seen = calloc(tl->points, 1)) ||
        !(tl->rss = calloc(tl->points, sizeof *tl->rss)) ||
        !(tl->snap_point = calloc(r->nsnap + 1, sizeof *tl->snap_point)) ||
        !(tl->snap_time = calloc(r->nsnap + 1, sizeof *tl->snap_time)) ||
        !(r->hlive = calloc(tl->nser, sizeof *r->hlive)) || !(r->blocks = vh_map__new()))
        return -ENOMEM;
    if ((rc = place_snaps(tl, r->nsnap, opt, err, errlen)) ||
        (rc = instants(db, "SELECT time, bytes, NULL FROM rss ORDER BY time", &tl->rs, &tl->nrs,
                       err, errlen)) ||
        (rc = instants(db, "SELECT time, 0, label FROM marks ORDER BY time LIMIT 2000", &tl->mk,
                       &tl->nmk, err, errlen)) ||
        (rc = loaded(db, r, opt, err, errlen)) < 0 || (!rc && (rc = replay(db, r, err, errlen))))
        return rc;
    rss_points(tl);
    /* points without an event keep the live bytes of the point before */
    for (unsigned p = 1; p < tl->points; p++)
        if (!tl->seen[p])
            for (size_t s = 0; s < tl->nser; s++)
                tl->live[s * tl->points + p] = tl->max[s * tl->points + p] =
                    tl->live[s * tl->points + p - 1];
    vh_xout__puts(o, ",\"timeline\":");
    timeline_json(tl, o, r->nsnap);
    /* the tree's extra columns: windows between snapshots, size classes */
    vh_xout__printf(o, ",\"xcols\":{\"windows\":%u,\"size_classes\":%d}", r->nsnap,
                    VH_REPORT_SIZE_CLASSES);
    if (opt->has_range)            /* the page opens on it */
        vh_xout__printf(o, ",\"range\":[%" PRIu64 ",%" PRIu64 "]", opt->from,
                        opt->to < tl->runtime ? opt->to : tl->runtime);
    return 0;
}

/* ---- fragmentation at the end and at the peak ----------------------------------- */

static int frag_at(sqlite3 *db, uint64_t t, const char *what, struct vh_xout *o, char *err,
                   size_t errlen)
{
    struct liveset *ls = NULL;
    struct frag_report *fr = NULL;
    struct frag_heap *fh = NULL;
    struct frag_opts fo;
    sqlite3_stmt *st = NULL;
    size_t n = 0, cap = 0;
    int rc;

    frag_opts__default(&fo);
    if ((rc = liveset__at(db, t, -1, &ls, err, errlen)))
        return rc;
    if (sqlite3_prepare_v2(db,
                           /* The heaps, then their declared regions, that exist
                            * at ?1, as `frag --at` takes them. */
                           "SELECT id, coalesce(base, 0), coalesce(size, 0),"
                           " coalesce(parent_id, -1), 0"
                           " FROM heaps WHERE create_time <= ?1 AND"
                           " (destroy_time IS NULL OR destroy_time > ?1)"
                           " UNION ALL SELECT ?2 + r.rowid, r.base, r.size, r.heap_id, 1"
                           " FROM regions r JOIN heaps h ON h.id = r.heap_id"
                           " WHERE r.start_time <= ?1 AND (r.end_time IS NULL OR r.end_time > ?1)"
                           " AND h.create_time <= ?1 AND"
                           " (h.destroy_time IS NULL OR h.destroy_time > ?1) ORDER BY 1",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = dbfail(db, "reading heaps", err, errlen);
        goto out;
    }
    sqlite3_bind_int64(st, 1, (int64_t)t);
    sqlite3_bind_int64(st, 2, FRAG_REGION_ID0);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (vh_grow(&fh, &cap, n, sizeof *fh, 64)) {
            rc = -ENOMEM;
            goto out;
        }
        fh[n++] = (struct frag_heap){ .id = (uint32_t)sqlite3_column_int64(st, 0),
                                      .base = (uint64_t)sqlite3_column_int64(st, 1),
                                      .size = (uint64_t)sqlite3_column_int64(st, 2),
                                      .parent = sqlite3_column_int64(st, 3),
                                      .region = sqlite3_column_int(st, 4) };
    }
    if (rc != SQLITE_DONE) {
        rc = dbfail(db, "reading heaps", err, errlen);
        goto out;
    }
    if ((rc = frag__analyze(ls->blocks, ls->n, fh, n, &fo, &fr))) {
        snprintf(err, errlen, "fragmentation: %s", rc == -ENOMEM ? "out of memory"
                                                                 : "the live set is not in order");
        goto out;
    }
    const struct frag_totals *x = &fr->t;
    vh_xout__printf(o, "{\"what\":\"%s\",\"time\":%" PRIu64 ",\"blocks\":%" PRIu64
                       ",\"requested\":%" PRIu64 ",\"usable\":%" PRIu64 ",\"pages\":%" PRIu64
                       ",\"page_bytes_used\":%" PRIu64 ",\"page_size\":%" PRIu64
                       ",\"sparse_pages\":%" PRIu64 ",\"pinned\":%" PRIu64
                       ",\"regions\":%" PRIu64 ",\"footprint\":%" PRIu64 ",\"free\":%" PRIu64
                       ",\"holes\":%" PRIu64 ",\"largest_hole\":%" PRIu64 ",\"unusable\":%" PRIu64
                       "}",
                    what, t, x->blocks, x->requested, x->usable, x->pages, x->page_bytes_used,
                    fo.page_size, x->sparse_pages, x->pinned, x->regions, x->footprint, x->free,
                    x->holes, x->largest, x->unusable);
    rc = 0;
out:
    sqlite3_finalize(st);
    liveset__free(ls);
    frag_report__free(fr);
    free(fh);
    return rc;
}

static int frag_json(sqlite3 *db, struct vh_xout *o, char *err, size_t errlen)
{
    int64_t end = one_int(db, "SELECT runtime_ns FROM processes WHERE id = 1", 0);
    int64_t peak = one_int(db, "SELECT peak_time FROM heaps ORDER BY peak_bytes DESC, id LIMIT 1",
                           -1);
    const char *why = vh_rec_no_frag(db);
    int rc;
    if (why) {                     /* the page says why there is no table */
        vh_xout__puts(o, ",\"frag_refused\":\"");
        json_text(o, why);         /* (no quote or backslash in it) */
        vh_xout__puts(o, "\",\"frag\":[]");
        return 0;
    }
    vh_xout__puts(o, ",\"frag\":[");
    if ((rc = frag_at(db, end > 0 ? (uint64_t)end : 0, "end", o, err, errlen)))
        return rc;
    if (peak >= 0 && peak != end) {
        vh_xout__puts(o, ",");
        if ((rc = frag_at(db, (uint64_t)peak, "peak", o, err, errlen)))
            return rc;
    }
    vh_xout__puts(o, "]");
    return 0;
}

/* ---- the top stacks ------------------------------------------------------------- */

static int top_json(sqlite3 *db, const struct vh_snames *sn, unsigned limit, struct vh_xout *o,
                    char *err, size_t errlen)
{
    static const char *const by[] = { "allocations", "bytes_allocated", "temporary", "peak_bytes",
                                      "leaked_bytes", "max_live_bytes" };
    char sql[2048];
    int n = snprintf(sql, sizeof sql, "SELECT heap_id, stack_id, tag_id, allocations,"
                                      " bytes_allocated, temporary, peak_bytes, leaked_bytes,"
                                      " max_live_bytes, frees FROM stack_stats"
                                      " WHERE (heap_id, stack_id, tag_id) IN (");
    for (size_t i = 0; i < sizeof by / sizeof by[0]; i++)
        n += snprintf(sql + n, sizeof sql - (size_t)n,
                      "%sSELECT * FROM (SELECT heap_id, stack_id, tag_id FROM stack_stats"
                      " WHERE %s > 0"
                      " ORDER BY %s DESC LIMIT %u)",
                      i ? " UNION " : "", by[i], by[i], limit);
    snprintf(sql + n, sizeof sql - (size_t)n, ")");
    sqlite3_stmt *st = NULL;
    struct vh_sname *path = NULL;
    size_t cap = 0;
    int rc, first = 1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return dbfail(db, "reading stack_stats", err, errlen);
    vh_xout__puts(o, ",\"top\":[");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        vh_xout__puts(o, first ? "[" : ",[");
        first = 0;
        for (int c = 0; c < 10; c++)
            vh_xout__printf(o, "%s%" PRId64, c ? "," : "", (int64_t)sqlite3_column_int64(st, c));
        int k = vh_snames__stack(sn, sqlite3_column_int64(st, 1), 0, &path, &cap);
        vh_xout__puts(o, ",[");
        for (int i = k; i-- > 0;) {    /* innermost first, as the tables show */
            vh_xout__puts(o, i + 1 < k ? ",[" : "[");
            vh_xout__json_str(o, vh_snames__str(sn, path[i].name));
            vh_xout__puts(o, ",");
            vh_xout__json_str(o, vh_snames__str(sn, path[i].where));
            vh_xout__puts(o, ",");
            vh_xout__json_str(o, vh_snames__str(sn, path[i].module));
            vh_xout__puts(o, "]");
        }
        /* the frame that names the row (innermost first), by frame_rule.h */
        vh_xout__printf(o, "],%zu]", k > 0 ? (size_t)k - 1 - vh_snames__naming(path, (size_t)k) : 0);
        if (k < 0) {
            rc = -ENOMEM;
            break;
        }
    }
    vh_xout__puts(o, "]");
    sqlite3_finalize(st);
    free(path);
    if (rc == -ENOMEM) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    return rc == SQLITE_DONE ? 0 : dbfail(db, "reading stack_stats", err, errlen);
}

/* ---- heaps and tags ------------------------------------------------------------- */

/* Heaps: id (or, in a diff, the key of its name), name, parent, created,
 * destroyed, calls, bytes, peak, peak time, live, leaked, leaked blocks, frees. */
static int heaps_json(sqlite3 *db, const struct vh_rkeys *k, struct vh_xout *o, char *err,
                      size_t errlen)
{
    int rc;
    vh_xout__puts(o, ",\"heaps\":");
    if ((rc = rows_json(db,
                        "SELECT id, name, parent_id, create_time, destroy_time, allocations,"
                        " bytes_allocated, peak_bytes, peak_time, live_bytes, leaked_bytes,"
                        " leaked_blocks, frees, temporary FROM heaps ORDER BY id LIMIT 5000",
                        o, err, errlen)))
        return rc;
    /* Reachability at exit: [class (4: none), blocks, bytes], only after a
     * finished scan (leaks.class, docs/schema.md). */
    vh_xout__puts(o, ",\"reach\":");
    if ((rc = rows_json(db,
                        "SELECT coalesce(class, 4), count(*), sum(size) FROM leaks"
                        " WHERE EXISTS (SELECT 1 FROM reach WHERE status = 'done')"
                        " GROUP BY 1 ORDER BY 1 DESC",
                        o, err, errlen)))
        return rc;
    /* The least headroom of each outermost custom heap with a size (Vere's
     * loom and its roads): [name, size, most in use, when, the heap that
     * reached it, the event then] (heaps.tree_peak_*, event_spans). */
    vh_xout__puts(o, ",\"headroom\":");
    if ((rc = rows_json(db,
                        "SELECT h.name, h.size, h.tree_peak_bytes, h.tree_peak_time,"
                        " (SELECT p.name || ' ' || p.id FROM heaps p WHERE p.id = h.tree_peak_heap_id),"
                        " (SELECT e.label FROM event_spans e WHERE e.end_time >= h.tree_peak_time"
                        "  AND e.start_time <= h.tree_peak_time ORDER BY e.end_time LIMIT 1)"
                        " FROM heaps h WHERE h.tree_peak_bytes IS NOT NULL AND h.size > 0"
                        " ORDER BY h.id LIMIT 20",
                        o, err, errlen)))
        return rc;
    vh_xout__puts(o, ",\"heaps_total\":");
    vh_xout__printf(o, "%" PRId64, one_int(db, "SELECT count(*) FROM heaps", 0));
    vh_xout__puts(o, ",\"tags\":");
    if ((rc = rows_json(db, "SELECT id, label FROM tags ORDER BY id", o, err, errlen)))
        return rc;
    if (k->keys) {                 /* the keys the tree's rows use, by id */
        sqlite3_stmt *st = NULL;
        vh_xout__puts(o, ",\"heap_keys\":{");
        if (sqlite3_prepare_v2(db, "SELECT id, name FROM heaps ORDER BY id LIMIT 5000", -1, &st,
                               NULL) != SQLITE_OK)
            return dbfail(db, "reading heaps", err, errlen);
        for (int first = 1; sqlite3_step(st) == SQLITE_ROW; first = 0)
            vh_xout__printf(o, "%s\"%" PRId64 "\":%" PRIu32, first ? "" : ",",
                            (int64_t)sqlite3_column_int64(st, 0),
                            vh_rkey_heap(k, sqlite3_column_int64(st, 0),
                                         (const char *)sqlite3_column_text(st, 1)));
        sqlite3_finalize(st);
        vh_xout__puts(o, "}");
    }
    return 0;
}

/* Ownership snapshots (owner_totals, docs/schema.md), only when the run
 * has some: "owners": {snapshots: [id, label, start_time, complete,
 * walk_bytes, bytes, blocks], rows: [snapshot, owner, path, depth,
 * walk_bytes, bytes, blocks]}, at most 4000 rows in the walk's order. */
static int owners_json(sqlite3 *db, struct vh_xout *o, char *err, size_t errlen)
{
    int rc;
    if (one_int(db, "SELECT count(*) FROM owner_snapshots", 0) <= 0)
        return 0;
    vh_xout__puts(o, ",\"owners\":{\"snapshots\":");
    if ((rc = rows_json(db, "SELECT id, label, start_time, complete, walk_bytes, bytes, blocks"
                            " FROM owner_snapshots ORDER BY id", o, err, errlen)))
        return rc;
    vh_xout__puts(o, ",\"rows\":");
    if ((rc = rows_json(db, "SELECT t.snapshot_id, coalesce(t.owner_id, 0),"
                            " coalesce(w.path, '(no owner)'), coalesce(w.depth, 1), t.walk_bytes,"
                            " t.bytes, t.blocks FROM owner_totals t LEFT JOIN owners w"
                            " ON w.id = t.owner_id ORDER BY t.snapshot_id, coalesce(t.owner_id, 0)"
                            " LIMIT 4000", o, err, errlen)))
        return rc;
    vh_xout__puts(o, "}");
    return 0;
}

static void keys_json(const struct vh_rkeys *k, struct vh_xout *o)
{
    vh_xout__puts(o, ",\"keys\":[null");
    for (uint32_t i = 1; k->keys && i <= vh_strtab__count(k->keys); i++) {
        vh_xout__puts(o, ",");
        vh_xout__json_str(o, vh_strtab__get(k->keys, i));
    }
    vh_xout__puts(o, "]");
}

int vh_report_json(sqlite3 *db, sqlite3 *base, const char *db_name, const char *base_name,
                   const struct vh_report_opts *opt, struct vh_xout *o, char *err, size_t errlen)
{
    struct vh_snames *sn = NULL, *bsn = NULL;
    struct vh_ctree *t = NULL;
    struct vh_rkeys k = { 0 };
    struct timeline tl = { 0 };
    struct replay r = { 0 };
    struct stackrow sr = { 0 };
    struct vh_ctree_stats stats;
    unsigned nsnap = base ? 0 : opt->snapshots + (opt->has_range ? 2 : 0);
    size_t ncols = VH_RM_N + (base ? VH_RM_N : nsnap);
    int rc = -ENOMEM;

    if (base && !(k.keys = vh_strtab__new()))
        goto nomem;
    if ((rc = vh_snames__load(db, &sn, err, errlen)) ||
        (base && (rc = vh_snames__load_mapped(base, opt->modmap, &bsn, err, errlen))))
        goto out;
    if (!(t = vh_ctree__new(ncols)) || !(sr.map = vh_map__new()))
        goto nomem;
    sr = (struct stackrow){ sr.map, t, sn, &k };
    /* a diff: the baseline's columns first, then this run's */
    if (base && (rc = vh_report_add_stats(t, base, bsn, 0, &k, NULL, NULL, err, errlen)))
        goto out;
    if ((rc = vh_report_add_stats(t, db, sn, base ? VH_RM_N : 0, &k, remember_row, &sr, err,
                                  errlen)))
        goto out;

    vh_xout__puts(o, "{\"run\":");
    if ((rc = process_json(db, db_name, o, err, errlen)))
        goto out;
    if ((rc = heaps_json(db, &k, o, err, errlen)))
        goto out;
    vh_xout__puts(o, "}");
    if (base) {
        vh_xout__puts(o, ",\"base\":");
        if ((rc = process_json(base, base_name, o, err, errlen)) ||
            (rc = heaps_json(base, &k, o, err, errlen)))
            goto out;
        vh_xout__puts(o, "}");
    }
    keys_json(&k, o);
    r = (struct replay){ .tl = &tl, .sr = &sr, .t = t, .col0 = VH_RM_N,
                         .rate = (uint64_t)vh_rec_sample_rate(db) };
    if ((rc = timeline(db, &r, &(struct vh_report_opts){ .points = opt->points,
                                                         .snapshots = nsnap,
                                                         .has_range = opt->has_range,
                                                         .from = opt->from, .to = opt->to },
                       o, err, errlen)))
        goto out;
    if ((rc = top_json(db, sn, opt->top, o, err, errlen)) || (rc = frag_json(db, o, err, errlen)) ||
        (rc = owners_json(db, o, err, errlen)))
        goto out;
    vh_xout__puts(o, ",\"tree\":");
    if ((rc = vh_ctree__write_json(t, o, base ? 2 * VH_RM_N : VH_RM_N, opt->prune, opt->max_nodes,
                                   &stats)))
        goto nomem;
    vh_xout__puts(o, "}");
    rc = 0;
    goto out;
nomem:
    rc = -ENOMEM;
    snprintf(err, errlen, "out of memory");
out:
    vh_snames__free(sn);
    vh_snames__free(bsn);
    vh_ctree__free(t);
    vh_strtab__free(k.keys);
    vh_map__free(sr.map);
    vh_map__free(r.blocks);
    vh_map__free(r.hs);
    free(r.rowlive);
    free(r.hlive);
    free(tl.live);
    free(tl.max);
    free(tl.seen);
    free(tl.rss);
    free(tl.snap_point);
    free(tl.snap_time);
    for (size_t i = 0; i < tl.nmk; i++)
        free(tl.mk[i].label);
    free(tl.mk);
    free(tl.rs);
    return rc;
}
