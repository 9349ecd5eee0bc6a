/* rtl.c — the report's timeline and per-stack columns, counted as the
 * events are emitted, at the report's default layout (store/tlayout.h):
 * each heap's live bytes and high per point (report_timeline), and per
 * (heap, stack, tag) the live bytes at each snapshot, the bytes and calls of
 * each window between snapshots and of each size class (report_stacks). The
 * report reads these rows instead of replaying every event, and replays only
 * when its layout is another one (its options, or a run that did not end
 * where its header said). The counting is the replay's (report/data.c), on
 * the same events, so the two give the same numbers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/load/loader.h"
#include "common/leb128.h"
#include "analyze/util/cmp.h"
#include "analyze/util/grow.h"


struct rtl_heap {
    int64_t live;
    uint64_t max;
    uint64_t point1;                   /* the point in progress + 1; 0 none  */
};

static uint64_t pos(int64_t v)
{
    return v > 0 ? (uint64_t)v : 0;
}

/* The layout is the report's for the runtime the header announces (with
 * at least VH_TL_POINTS events); rtl__write checks the run's own. */
int rtl__init(struct loader *L)
{
    const struct vh_capture_header *hd = capture__header(L->cap);
    uint64_t runtime = hd->end_time > hd->last_time ? hd->end_time : hd->last_time;
    struct ld_rtl *R = &L->rt;
    /* coarse times are spread up to the exact end (capture/coarse.c) */
    if (hd->coarse_res_ns && hd->exact_end > runtime)
        runtime = hd->exact_end;
    R->old_agg = UINT32_MAX;
    R->lay = vh_tl_layout(VH_TL_POINTS, VH_TL_POINTS, runtime, 0, 0);
    for (unsigned s = 0; s < VH_TL_SNAPSHOTS; s++)
        R->snap_point[s] = vh_tl_snap_point(s, VH_TL_SNAPSHOTS, R->lay.points);
    R->ins_tl = loader__prep(L, "INSERT INTO report_timeline(heap_id, point, live_bytes, "
                                "max_live_bytes) VALUES (?,?,?,?)");
    R->on = !L->failed;
    return L->failed ? -1 : 0;
}

static void oom(struct loader *L)
{
    L->rt.on = 0;
    loader__fail(L, -ENOMEM, "out of memory");
}

static int cell(struct rtl_agg *a, uint64_t col, uint64_t v)
{
    if (vh_reserve(&a->cells, &a->capcells, a->ncells + 20, 1, 16))
        return -ENOMEM;
    a->ncells = (size_t)(vh_uleb_put(vh_uleb_put(a->cells + a->ncells, col), v) - a->cells);
    return 0;
}

static void tl_row(struct loader *L, int64_t heap, uint64_t point, int64_t live, uint64_t max)
{
    sqlite3_stmt *st = L->rt.ins_tl;
    sqlite3_bind_int64(st, 1, heap);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)point);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)pos(live));
    sqlite3_bind_int64(st, 4, (sqlite3_int64)max);
    loader__run(L, st);
}

/* Snapshot w's live bytes: a block live across snapshots keeps its bytes,
 * so the same bytes as at snapshot w - 1 extend a run (one cell, rewritten
 * in place while nothing follows it) instead of a cell each (bench's
 * many_stacks, 2^17 stacks: cells 3.1 -> 1.4 MB, the DB 20.4 -> 18.4 MB). */
static int snap_cell(struct rtl_agg *a, unsigned w)
{
    int same = a->snap_cov == w && a->live == a->snap_v && w;
    a->snap_cov = (uint8_t)(w + 1);
    if (!same) {
        a->snap_v = a->live;
        return cell(a, VH_TL_CELL_SNAP + w, a->live);
    }
    if (a->run_end && a->run_end == a->ncells)
        a->ncells -= 3;            /* the run's cell: 2 bytes, value 0 */
    if (cell(a, VH_TL_CELL_RUN + w, 0))
        return -ENOMEM;
    a->run_end = (uint32_t)a->ncells;
    return 0;
}

/* Snapshots due before point p: the windows' counts, then every stack's
 * live bytes. */
static int take_snaps(struct loader *L, uint64_t p)
{
    struct ld_rtl *R = &L->rt;
    while (R->next_snap < VH_TL_SNAPSHOTS && R->snap_point[R->next_snap] < p) {
        unsigned w = R->next_snap;
        for (size_t i = 0; i < R->ndirty; i++) {
            struct rtl_agg *a = &L->lv.aggs[R->dirty[i]].rt;
            if (cell(a, 2 * w, a->wbytes) || cell(a, 2 * w + 1, a->wcalls))
                return -ENOMEM;
            a->wbytes = a->wcalls = 0;
            a->dirty = 0;
        }
        R->ndirty = 0;
        for (size_t i = 0; i < L->lv.naggs; i++)
            if (L->lv.aggs[i].rt.live && snap_cell(&L->lv.aggs[i].rt, w))
                return -ENOMEM;
        R->next_snap++;
    }
    return 0;
}

/* A size class's counters: calls (at most 2^58) with the class above
 * them. Most stacks allocate in one class, kept in the aggregate. */
#define CLASS_SHIFT 58

static int class_add(struct rtl_agg *a, uint32_t c, uint64_t calls, uint64_t bytes)
{
    struct rtl_cls *e = NULL;
    if (!a->c1.cc || a->c1.cc >> CLASS_SHIFT == c)
        e = &a->c1;
    for (uint8_t i = 0; !e && i < a->nmore; i++)
        if (a->more[i].cc >> CLASS_SHIFT == c)
            e = &a->more[i];
    if (!e) {
        if (!(a->nmore & (a->nmore - 1))) {         /* 0, 1, 2, 4...: full */
            struct rtl_cls *m = realloc(a->more, (a->nmore ? 2u * a->nmore : 1) * sizeof *m);
            if (!m)
                return -ENOMEM;
            a->more = m;
        }
        e = &a->more[a->nmore++];
        *e = (struct rtl_cls){ 0, 0 };
    }
    e->cc = ((uint64_t)c << CLASS_SHIFT) + (e->cc & ~(~0ull << CLASS_SHIFT)) + calls;
    e->bytes += bytes;
    return 0;
}

/* The replay's count_alloc: the window's and the size class's counts. */
static int count_alloc(struct loader *L, uint32_t ai, uint64_t size, uint64_t bytes)
{
    struct ld_rtl *R = &L->rt;
    struct rtl_agg *a = &L->lv.aggs[ai].rt;
    uint32_t c = vh_tl_size_class(size);
    if (!a->dirty) {
        if (vh_grow(&R->dirty, &R->capdirty, R->ndirty, sizeof *R->dirty, 1024))
            return -ENOMEM;
        R->dirty[R->ndirty++] = ai;
        a->dirty = 1;
    }
    a->wbytes += bytes;
    a->wcalls += size ? (bytes + size / 2) / size : 1;
    return class_add(a, c, size ? (bytes + size / 2) / size : 1, bytes);
}

/* The point in progress closes: every heap's row (-1) and every heap's but
 * malloc's (-2: the report's "other heaps" where malloc has a series). */
static void close_point(struct loader *L)
{
    struct ld_rtl *R = &L->rt;
    tl_row(L, -1, R->point1 - 1, R->total, R->total_max);
    tl_row(L, -2, R->point1 - 1, R->custom, R->custom_max);
}

/* Point p opens: the one before closes (its row of every heap), and the
 * snapshots due are taken. */
static void next_point(struct loader *L, uint64_t p)
{
    struct ld_rtl *R = &L->rt;
    if (R->point1)
        close_point(L);
    if (take_snaps(L, p)) {
        oom(L);
        return;
    }
    R->point1 = p + 1;
    R->total_max = pos(R->total);
    R->custom_max = pos(R->custom);
}

static struct rtl_heap *heap_at(struct loader *L, uint32_t id, uint64_t p)
{
    struct ld_rtl *R = &L->rt;
    if (vh_reserve_zeroed(&R->heaps, &R->nheaps, (size_t)id + 1, sizeof *R->heaps, 64))
        return NULL;
    struct rtl_heap *h = &R->heaps[id];
    if (h->point1 != p + 1) {
        if (h->point1)
            tl_row(L, id, h->point1 - 1, h->live, h->max);
        h->point1 = p + 1;
        h->max = pos(h->live);
    }
    return h;
}

static void add(struct loader *L, struct rtl_heap *h, uint32_t ai, int64_t d)
{
    struct ld_rtl *R = &L->rt;
    L->lv.aggs[ai].rt.live += (uint64_t)d;
    h->live += d;
    R->total += d;
    R->custom += h == R->heaps ? 0 : d;
}

/* Event e (its block's aggregate ai, and before a RESIZE old_ai), as the
 * stream stores it (times never go back). */
void rtl__event(struct loader *L, const struct vh_ev *e, uint32_t ai, uint32_t old_ai)
{
    struct ld_rtl *R = &L->rt;
    uint64_t time = e->time > R->last_time ? e->time : R->last_time, p;
    struct rtl_heap *h;
    R->last_time = time;
    R->nevents++;
    if (!R->on)
        return;
    p = time / R->lay.width;
    if (p >= R->lay.points)
        p = R->lay.points - 1;
    if (p + 1 != R->point1)
        next_point(L, p);
    if (!R->on || !(h = heap_at(L, e->heap_id, p))) {
        if (R->on)
            oom(L);
        return;
    }
    uint64_t w = vh_weigh_bytes(e->size, L->lv.rate);
    switch (e->kind) {
    case VH_EV_RESIZE:
        add(L, h, old_ai, -(int64_t)vh_weigh_bytes(e->old_size, L->lv.rate));
        /* fall through */
    case VH_EV_ALLOC:
        add(L, h, ai, (int64_t)w);
        if (count_alloc(L, ai, e->size, w))
            oom(L);
        break;
    case VH_EV_FREE:
        add(L, h, ai, -(int64_t)w);
        break;
    default:
        break;
    }
    if (pos(h->live) > h->max)
        h->max = pos(h->live);
    if (pos(R->total) > R->total_max)
        R->total_max = pos(R->total);
    if (pos(R->custom) > R->custom_max)
        R->custom_max = pos(R->custom);
}

static int class_cell(struct rtl_agg *a, const struct rtl_cls *e)
{
    uint64_t c = e->cc >> CLASS_SHIFT;
    return cell(a, 2 * VH_TL_SNAPSHOTS + 2 * c, e->cc & ~(~0ull << CLASS_SHIFT)) ||
           cell(a, 2 * VH_TL_SNAPSHOTS + 2 * c + 1, e->bytes);
}

/* The size classes' cells, after the windows' and snapshots'. */
static int class_cells(struct rtl_agg *a)
{
    if (a->c1.cc && class_cell(a, &a->c1))
        return -ENOMEM;
    for (uint8_t i = 0; i < a->nmore; i++)
        if (class_cell(a, &a->more[i]))
            return -ENOMEM;
    return 0;
}

struct rtl_key {
    uint64_t heap_stack;
    uint32_t tag, agg;
};

static int by_key(const void *a, const void *b)
{
    const struct rtl_key *x = a, *y = b;
    return vh_cmp2(x->heap_stack, y->heap_stack, x->tag, y->tag);
}

/* In key order, the way SQLite's B-tree takes rows fastest. */
static void write_stacks(struct loader *L)
{
    size_t n = 0, m = L->lv.naggs;
    struct rtl_key *k = malloc((m ? m : 1) * sizeof *k);
    sqlite3_stmt *st = loader__prep(L, "INSERT INTO report_stacks(heap_id, stack_id, tag_id, "
                                       "cells) VALUES (?,?,?,?)");
    for (size_t i = 0; k && i < m; i++) {
        const struct agg *g = &L->lv.aggs[i];
        if (class_cells(&L->lv.aggs[i].rt)) {
            free(k);
            k = NULL;
        } else if (L->lv.aggs[i].rt.ncells) {
            k[n++] = (struct rtl_key){ (uint64_t)g->heap << 32 | g->stack, g->tag, (uint32_t)i };
        }
    }
    if (!k) {
        sqlite3_finalize(st);
        oom(L);
        return;
    }
    qsort(k, n, sizeof *k, by_key);
    for (size_t i = 0; st && i < n && !L->failed; i++) {
        const struct rtl_agg *a = &L->lv.aggs[k[i].agg].rt;
        sqlite3_bind_int64(st, 1, (sqlite3_int64)(k[i].heap_stack >> 32));
        sqlite3_bind_int64(st, 2, (uint32_t)k[i].heap_stack);
        sqlite3_bind_int64(st, 3, k[i].tag);
        sqlite3_bind_blob(st, 4, a->cells, (int)a->ncells, SQLITE_STATIC);
        loader__run(L, st);
    }
    sqlite3_finalize(st);
    free(k);
}

static void write_meta(struct loader *L)
{
    static const char *const keys[] = { "report_points", "report_width", "report_snapshots" };
    uint64_t v[] = { L->rt.lay.points, L->rt.lay.width, VH_TL_SNAPSHOTS };
    sqlite3_stmt *st = loader__prep(L, "INSERT INTO meta(key, value) VALUES (?,?)");
    for (size_t i = 0; st && i < 3; i++) {
        sqlite3_bind_text(st, 1, keys[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)v[i]);
        loader__run(L, st);
    }
    sqlite3_finalize(st);
}

/* At the stream's end: the rows, if the run's own layout (its last time,
 * its events, its clock: what the report reads) is the one counted in;
 * else none, and the report replays. */
void rtl__write(struct loader *L, int64_t coarse_ns, int64_t precise_from)
{
    struct ld_rtl *R = &L->rt;
    struct vh_tl_layout l = vh_tl_layout(VH_TL_POINTS, R->nevents, L->tl.last_time, coarse_ns,
                                         precise_from);
    if (!R->on || L->failed)
        return;
    if (l.points != R->lay.points || l.width != R->lay.width || l.by_event || !R->nevents) {
        loader__exec(L, "DELETE FROM report_timeline");
        return;
    }
    if (R->point1)
        close_point(L);
    for (size_t i = 0; i < R->nheaps; i++)
        if (R->heaps[i].point1)
            tl_row(L, (int64_t)i, R->heaps[i].point1 - 1, R->heaps[i].live, R->heaps[i].max);
    if (take_snaps(L, (uint64_t)R->lay.points + 1)) {
        oom(L);
        return;
    }
    write_stacks(L);
    write_meta(L);
}

void rtl__free(struct loader *L)
{
    struct ld_rtl *R = &L->rt;
    for (size_t i = 0; L->lv.aggs && i < L->lv.naggs; i++) {
        free(L->lv.aggs[i].rt.more);
        free(L->lv.aggs[i].rt.cells);
        L->lv.aggs[i].rt = (struct rtl_agg){ 0 };
    }
    free(R->heaps);
    free(R->dirty);
    sqlite3_finalize(R->ins_tl);
    memset(R, 0, sizeof *R);
}
