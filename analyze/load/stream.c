/* stream.c — the hot path: every record of the capture, in time order,
 * through the live maps (a livemap per heap) into the counters per (heap,
 * stack, tag), the threads, and the normalized event stream. Everything an
 * ALLOC, FREE or RESIZE touches is here or inline (loader.h), so that no
 * event crosses a file but into the event store; other records go to their
 * part's handler (on_record). Small cross-thread misorders of the
 * records' times are settled on the way (settle()). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/capture/coarse.h"
#include "analyze/load/feeder.h"
#include "analyze/load/loader.h"
#include "analyze/util/grow.h"

#define PROGRESS_EVERY 0xffffu        /* records between progress checks     */
#define AHEAD 16u                     /* events read ahead, to prefetch      */
#define SETTLE_NS 50000ull            /* how far ahead settle() looks (50
                                         us): across threads, times may be
                                         misordered by a memory latency      */

/* ---- threads and counters ------------------------------------------------ */

static __attribute__((noinline)) struct thread *thread_find(struct loader *L, uint32_t tid,
                                                            uint64_t time)
{
    int existed;
    struct vh_map_ent *e = vh_map__insert(L->lv.thread_map, tid, 0, &existed);

    if (!e) {
        loader__fail(L, -ENOMEM, "out of memory");
        return NULL;
    }
    if (!existed) {
        if (L->lv.nthreads == L->lv.capthreads) {
            size_t n = L->lv.capthreads ? L->lv.capthreads * 2 : 64;
            struct thread *p = realloc(L->lv.threads, n * sizeof *p);
            if (!p) {
                loader__fail(L, -ENOMEM, "out of memory");
                return NULL;
            }
            L->lv.threads = p;
            L->lv.capthreads = n;
        }
        e->v1 = L->lv.nthreads;
        L->lv.threads[L->lv.nthreads++] = (struct thread){ .tid = tid, .first_time = time };
    }
    return L->lv.last_thread = &L->lv.threads[e->v1];
}

/* Records come in runs of one thread's: the last one is the likely one. */
static inline __attribute__((always_inline)) struct thread *thread_get(struct loader *L,
                                                                       uint32_t tid,
                                                                       uint64_t time)
{
    struct thread *t = L->lv.last_thread;

    if (__builtin_expect(!t || t->tid != tid, 0) && !(t = thread_find(L, tid, time)))
        return NULL;
    t->last_time = time;
    return t;
}

/* Aggregates are keyed (tag << 32 | stack, DB heap id). */
static inline uint64_t agg_key(uint16_t tag, uint32_t stack)
{
    return (uint64_t)tag << 32 | stack;
}

/* Where (heap, stack, tag)'s counters' index is in agg_sys, or NULL: it
 * is in agg_map. */
static inline uint32_t *agg_sys_at(const struct loader *L, uint32_t heap, uint32_t stack,
                                   uint16_t tag)
{
    return (heap | tag) == 0 && stack < L->lv.nagg_sys ? &L->lv.agg_sys[stack] : NULL;
}

/* The index of (heap, stack, tag)'s counters, or UINT32_MAX. */
static inline uint32_t agg_find(const struct loader *L, uint32_t heap, uint32_t stack,
                                uint16_t tag)
{
    const uint32_t *at = agg_sys_at(L, heap, stack, tag);
    return at ? *at : idxmap__get(&L->lv.agg_map, agg_key(tag, stack), heap);
}

static inline uint32_t agg_get(struct loader *L, uint32_t heap, uint32_t stack, uint16_t tag)
{
    uint64_t key = agg_key(tag, stack);
    uint32_t i = agg_find(L, heap, stack, tag), *at;

    if (__builtin_expect(i != UINT32_MAX, 1))
        return i;
    if (stack && !stack_seen(L, stack)) {
        if (L->lv.missing_aggs >= (L->opts->max_missing_stacks ? L->opts->max_missing_stacks
                                                            : MAX_MISSING_STACKS)) {
            L->lv.missing_merged++;
            return agg_get(L, heap, 0, tag);
        }
        L->lv.missing_aggs++;
    }
    if (L->lv.naggs == L->lv.capaggs) {
        size_t n = L->lv.capaggs ? L->lv.capaggs * 2 : 1024;
        struct agg *p = realloc(L->lv.aggs, n * sizeof *p);
        if (!p)
            goto oom;
        L->lv.aggs = p;
        L->lv.capaggs = n;
    }
    i = (uint32_t)L->lv.naggs;
    if ((at = agg_sys_at(L, heap, stack, tag)))
        *at = i;
    else if (idxmap__put(&L->lv.agg_map, key, heap, i))
        goto oom;
    /* Born at the heap's current epoch with nothing live: it held nothing
     * at the latest peak, which is what peak_* = 0 says. */
    L->lv.aggs[L->lv.naggs++] = (struct agg){ .heap = heap, .stack = stack, .tag = tag,
                                        .epoch = L->hp.byid[heap]->epoch };
    /* every stack's line over the same window: recorded time from 0 */
    trend__start(&L->lv.aggs[i].tr, 0);
    return i;
oom:
    loader__fail(L, -ENOMEM, "out of memory");
    return UINT32_MAX;
}

/* ---- blocks ------------------------------------------------------------- */

/* heaptrack's temporary: a free of the block that is this thread's latest
 * allocation, with nothing else by this thread in between. */
static inline int check_temporary(struct loader *L, struct heap *h, struct thread *t,
                                  const struct vh_live_block *b)
{
    int temporary = 0;

    if (t->last_serial && t->last_serial == b->serial && t->last_addr == b->addr &&
        t->last_heap == h->id) {
        uint64_t n = block_weight(L, b->size, b->serial).count;
        L->lv.aggs[b->agg].temporary += n;
        h->temporary += n;
        h->acc.temporary += n;
        temporary = 1;
    }
    t->last_serial = 0;
    return temporary;
}

/* Fills a fresh slot and accounts the allocation (ALLOC or RESIZE). */
static inline void block_new(struct loader *L, struct heap *h, struct thread *t,
                             struct vh_live_block *b, uint32_t ai,
                             const struct vh_rec_alloc *r, uint64_t time)
{
    struct agg *a = &L->lv.aggs[ai];
    struct vh_weight w;

    b->size = r->size;
    b->slack = r->slack;
    b->time = time;
    if (!(b->serial = (uint32_t)++L->lv.serial))
        b->serial = (uint32_t)++L->lv.serial;      /* 0 means none */
    b->agg = ai;
    b->tid = t->tid;
    w = block_weight(L, r->size, b->serial);
    tree_add(L, h, w.bytes + r->slack * w.count, w.count, w.bytes, time);

    agg_sync(a, h);
    if (__builtin_expect(!a->allocations, 0))
        a->first_time = time;
    a->allocations += w.count;
    a->bytes += w.bytes;
    a->usable += w.bytes + r->slack * w.count;
    a->live_bytes += w.bytes;
    a->live_blocks += w.count;
    if (a->live_bytes > a->max_live_bytes)
        a->max_live_bytes = a->live_bytes;
    trend__set(&a->tr, rec_time(L, time), (double)a->live_bytes);

    h->allocations += w.count;
    h->bytes_allocated += w.bytes;
    h->live_bytes += w.bytes;
    h->live_blocks += w.count;
    h->acc.allocations += w.count;
    h->acc.bytes_allocated += w.bytes;
    if (h->live_bytes > h->acc.max_live)
        h->acc.max_live = h->live_bytes;
    if (h->live_bytes > h->peak_bytes || !h->has_peak) {
        h->has_peak = 1;
        h->peak_bytes = h->live_bytes;
        h->peak_blocks = h->live_blocks;
        h->peak_time = time;
        h->epoch++;                    /* every aggregate is now at-peak     */
    }
    t->allocations += w.count;
    t->last_serial = b->serial;
    t->last_addr = b->addr;
    t->last_heap = h->id;
}

/* ---- capture records ------------------------------------------------------ */

static int settle(struct loader *L, const struct vh_event *ev, uint16_t heap, uint64_t addr,
                  uint8_t want);

static void on_alloc(struct loader *L, const struct vh_event *ev, int resize)
{
    const struct vh_rec_alloc *r = (const struct vh_rec_alloc *)ev->rec;
    struct heap *h = heap_get(L, r->h.a, ev->time);
    struct thread *t = thread_get(L, ev->tid, ev->time);
    struct vh_live_block *b;
    uint64_t old_size = 0;
    uint32_t ai;
    uint8_t flags = 0;
    int existed;

    if (!h || !t)
        return;
    ai = L->lv.hint_agg;                  /* still the right one? (cheap: this
                                          aggregate is read below anyway)  */
    if (ai == UINT32_MAX || L->lv.aggs[ai].heap != h->id || L->lv.aggs[ai].stack != r->h.b ||
        L->lv.aggs[ai].tag != r->tag)
        ai = agg_get(L, h->id, r->h.b, r->tag);
    if (ai == UINT32_MAX)
        return;
    series_touch(L, h, ev->time);
    if ((r->h.flags & VH_RF_FAILED) || !r->addr) {
        uint64_t n = block_weight(L, r->size, (uint32_t)L->records).count;
        L->lv.aggs[ai].failed += n;
        h->failed += n;
        emit(L, &(struct vh_ev){ .time = ev->time, .size = r->size, .heap_id = h->id,
                                 .stack_id = L->lv.aggs[ai].stack, .tag_id = r->tag, .tid = ev->tid,
                                 .kind = VH_EV_FAILED });
        return;
    }
    b = livemap__insert(h->live, r->addr, &existed);
    h->addr_or |= r->addr;
    h->addr_and &= r->addr;
    if (!b) {
        loader__fail(L, -ENOMEM, "out of memory");
        return;
    }
    if (existed && !resize && settle(L, ev, r->h.a, r->addr, VH_REC_FREE)) {
        /* the FREE that truly came first went first: x is free now */
        if (!(t = thread_get(L, ev->tid, ev->time)))
            return;
        if (!(b = livemap__insert(h->live, r->addr, &existed))) {
            loader__fail(L, -ENOMEM, "out of memory");
            return;
        }
    }
    if (existed) {
        if (resize) {
            /* heaptrack sees a realloc as '-' old then '+' new: the RESIZE
             * carries the temporary flag of its '-' */
            flags = check_temporary(L, h, t, b) ? VH_EVF_TEMPORARY : 0;
            old_size = b->size;
            L->rt.old_agg = b->agg;       /* the report's data moves it */
        } else {
            L->lv.implicit_frees++;       /* its free was never recorded */
            emit_block(L, VH_EV_FREE, VH_EVF_IMPLICIT, h, ev->tid, ev->time, b, 0, 0);
        }
        block_gone(L, h, b, ev->time);
    } else if (resize) {
        h->unknown_frees++;            /* resized a block we never saw */
    }
    block_new(L, h, t, b, ai, r, ev->time);
    if (existed && resize) {
        emit_block(L, VH_EV_RESIZE, flags, h, ev->tid, ev->time, b, old_size, 0);
        L->rt.old_agg = UINT32_MAX;
    }
    else    /* a resize of an unknown block is where it starts for us */
        emit_block(L, VH_EV_ALLOC,
                   resize || (r->h.flags & VH_RF_REALLOC) ? VH_EVF_REALLOC : 0, h, ev->tid,
                   ev->time, b, 0, 0);
}

static void free_live(struct loader *L, struct heap *h, struct thread *t,
                      const struct vh_event *ev, struct vh_live_block *b, int realloc_half);

static void on_free(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_free *r = (const struct vh_rec_free *)ev->rec;
    struct heap *h = heap_get(L, r->h.a, ev->time);
    struct thread *t = thread_get(L, ev->tid, ev->time);
    struct vh_live_block *b;

    if (!h || !t)
        return;
    b = livemap__find_at(h->live, r->addr, L->lv.hint_slot);
    if (!b && settle(L, ev, r->h.a, r->addr, VH_REC_ALLOC)) {
        /* the ALLOC that truly came first went first */
        if (!(t = thread_get(L, ev->tid, ev->time)))
            return;
        b = livemap__find(h->live, r->addr);
    }
    if (!b) {
        h->unknown_frees++;
        return;
    }
    free_live(L, h, t, ev, b, r->h.flags & VH_RF_REALLOC);
}

/* Live block b of h is freed by thread t (a FREE, or a RANGE that frees). */
static void free_live(struct loader *L, struct heap *h, struct thread *t,
                      const struct vh_event *ev, struct vh_live_block *b, int realloc_half)
{
    series_touch(L, h, ev->time);
    emit_block(L, VH_EV_FREE,
               (check_temporary(L, h, t, b) ? VH_EVF_TEMPORARY : 0) |
                   (realloc_half ? VH_EVF_REALLOC : 0),
               h, ev->tid, ev->time, b, 0, 0);
    block_gone(L, h, b, ev->time);
    if (!realloc_half) {
        /* the free half of a moving realloc is not a call to free */
        uint64_t n = block_weight(L, b->size, b->serial).count;
        L->lv.aggs[b->agg].frees += n;
        h->frees += n;
        h->acc.frees += n;
        t->frees += n;
    }
    livemap__remove(h->live, b);
}

static void land_block(struct loader *L, struct heap *h, const struct vh_event *ev,
                       const struct vh_live_block *keep, uint64_t to);

static void on_move(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_move *r = (const struct vh_rec_move *)ev->rec;
    struct heap *h = heap_get(L, r->h.a, ev->time);
    struct vh_live_block *b, keep;

    if (!h || r->from == r->to)
        return;
    b = livemap__find(h->live, r->from);
    if (!b || !r->to) {
        L->lv.unknown_moves++;
        return;
    }
    keep = *b;                         /* stack, time, tag, size go along */
    livemap__remove(h->live, b);
    land_block(L, h, ev, &keep, r->to);
}

/* Block `keep`, taken out of h's live map, lands at `to` (a move): a block
 * still live there was freed without a record. */
static void land_block(struct loader *L, struct heap *h, const struct vh_event *ev,
                       const struct vh_live_block *keep, uint64_t to)
{
    struct vh_live_block *b;
    int existed;

    b = livemap__insert(h->live, to, &existed);
    h->addr_or |= to;
    h->addr_and &= to;
    if (!b) {
        loader__fail(L, -ENOMEM, "out of memory");
        return;
    }
    if (existed) {
        series_touch(L, h, ev->time);
        L->lv.implicit_frees++;
        emit_block(L, VH_EV_FREE, VH_EVF_IMPLICIT, h, ev->tid, ev->time, b, 0, 0);
        block_gone(L, h, b, ev->time);
    }
    *b = *keep;
    b->addr = to;
    emit_block(L, VH_EV_MOVE, 0, h, ev->tid, ev->time, keep, 0, to);
}

/* The live blocks of h whose address lies in [lo, lo + len), copied into
 * L->lv.range_buf; their number, or (size_t)-1 when out of memory. A small
 * range is probed address by address at the heap's alignment (every
 * address it ever held is a multiple of it); a large one scans the map. */
static size_t range_collect(struct loader *L, struct heap *h, uint64_t lo, uint64_t len)
{
    uint64_t hi = lo + len < lo ? UINT64_MAX : lo + len;
    uint64_t step = h->addr_or ? h->addr_or & (0 - h->addr_or) : 1;
    size_t n = 0, cnt = livemap__count(h->live), pos = 0;
    struct vh_live_block *b;

    if (!cnt)
        return 0;
    if (len / step <= 4 * (uint64_t)cnt) {
        for (uint64_t a = (lo + step - 1) & ~(step - 1); a >= lo && a < hi; a += step) {
            if (!(b = livemap__find(h->live, a)))
                continue;
            if (vh_grow(&L->lv.range_buf, &L->lv.caprange, n, sizeof *b, 64))
                return (size_t)-1;
            L->lv.range_buf[n++] = *b;
        }
        return n;
    }
    while ((b = livemap__next(h->live, &pos)))
        if (b->addr >= lo && b->addr < hi) {
            if (vh_grow(&L->lv.range_buf, &L->lv.caprange, n, sizeof *b, 64))
                return (size_t)-1;
            L->lv.range_buf[n++] = *b;
        }
    return n;
}

/* RANGE: every live block in [from, from + len) moves by to - from, or is
 * freed. Moves take all of them out first, so that a range moved onto an
 * overlapping one lands whole. */
static void on_range(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_range *r = (const struct vh_rec_range *)ev->rec;
    struct heap *h;
    struct thread *t;
    size_t n;

    if (r->h.b == VH_HEAP_SYSTEM || r->h.b >= MAX_HEAPS || r->h.flags > VH_RANGE_FREE) {
        L->hp.bad_heap_records++;
        return;
    }
    if (!(h = heap_get(L, (uint16_t)r->h.b, ev->time)) || !(t = thread_get(L, ev->tid, ev->time)))
        return;
    if ((n = range_collect(L, h, r->from, r->len)) == (size_t)-1) {
        loader__fail(L, -ENOMEM, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        struct vh_live_block *b = livemap__find(h->live, L->lv.range_buf[i].addr);
        if (r->h.flags == VH_RANGE_FREE)
            free_live(L, h, t, ev, b, 0);
        else
            livemap__remove(h->live, b);
    }
    if (r->h.flags == VH_RANGE_MOVE)
        for (size_t i = 0; i < n && !L->failed; i++)
            land_block(L, h, ev, &L->lv.range_buf[i], L->lv.range_buf[i].addr + (r->to - r->from));
}

static void on_thread(struct loader *L, const struct vh_event *ev)
{
    thread_get(L, ev->rec->b, ev->time);
}

static void on_thread_exit(struct loader *L, const struct vh_event *ev)
{
    struct thread *t = thread_get(L, ev->rec->b, ev->time);
    if (t)
        t->exited = 1;
}

/* A scan on request took its snapshot here: the system heap's live blocks
 * now are what its classes are about. */
static void reach_snapshot(struct loader *L, uint64_t time)
{
    struct heap *h = L->hp.byid[VH_HEAP_SYSTEM];
    struct vh_live_block *b;
    reach__begin(&L->reach, time);
    for (size_t pos = 0; h && !h->destroyed && (b = livemap__next(h->live, &pos));) {
        const struct agg *a = &L->lv.aggs[b->agg];
        struct reach_row row = { .addr = b->addr, .size = b->size, .usable = b->size + b->slack,
                                 .time = b->time, .stack = a->stack, .tid = b->tid,
                                 .tag = a->tag };
        if (reach__keep(&L->reach, &row) < 0) {
            loader__fail(L, -ENOMEM, "out of memory");
            return;
        }
    }
}

static void on_reach(struct loader *L, const struct vh_event *ev)
{
    if (ev->size >= sizeof(struct vh_rec_reach) &&
        (((const struct vh_rec_hdr *)ev->rec)->flags & VH_REACH_F_BEGIN)) {
        reach_snapshot(L, ev->time);
        return;
    }
    int rc = reach__add(&L->reach, (const struct vh_rec_reach *)ev->rec, ev->size);
    if (rc == -ENOMEM)
        loader__fail(L, rc, "out of memory");
    else if (rc < 0)
        L->unknown_records++;
}

static void on_reach_end(struct loader *L, const struct vh_event *ev)
{
    if (ev->size >= sizeof(struct vh_rec_reach_end)) {
        if (reach__end(&L->reach, (const struct vh_rec_reach_end *)ev->rec) < 0)
            loader__fail(L, -ENOMEM, "out of memory");
    } else
        L->unknown_records++;
}

/* What every record type but the three of nearly every event does to the
 * loader. A type without an entry is a newer writer's: counted, skipped. */
static void (*const on_record[])(struct loader *L, const struct vh_event *ev) = {
    [VH_REC_STACK] = stacks__on_stack,
    [VH_REC_RSS] = timeline__on_rss,
    [VH_REC_THREAD] = on_thread,
    [VH_REC_THREAD_EXIT] = on_thread_exit,
    [VH_REC_MODULE] = stacks__on_module,
    [VH_REC_MODULE_UNLOAD] = stacks__on_module_unload,
    [VH_REC_HEAP_CREATE] = heaps__on_create,
    [VH_REC_HEAP_DESTROY] = heaps__on_destroy,
    [VH_REC_MOVE] = on_move,
    [VH_REC_RANGE] = on_range,
    [VH_REC_REGION] = heaps__on_region,
    [VH_REC_MARK] = timeline__on_mark,
    [VH_REC_TAG] = timeline__on_tag,
    [VH_REC_END] = timeline__on_end,
    [VH_REC_REACH] = on_reach,
    [VH_REC_REACH_END] = on_reach_end,
    [VH_REC_WINDOW] = timeline__on_window,
    [VH_REC_OWN_BEGIN] = owners__on_begin,
    [VH_REC_OWNER] = owners__on_owner,
    [VH_REC_OWNED] = owners__on_owned,
    [VH_REC_OWN_END] = owners__on_end,
};

static void on_event(struct loader *L, const struct vh_event *ev)
{
    unsigned type = ev->rec->type;

    if (ev->time > L->tl.last_time)
        L->tl.last_time = ev->time;
    if (type == VH_REC_ALLOC)
        on_alloc(L, ev, 0);
    else if (type == VH_REC_FREE)
        on_free(L, ev);
    else if (type == VH_REC_RESIZE)
        on_alloc(L, ev, 1);
    else if (type < sizeof on_record / sizeof on_record[0] && on_record[type])
        on_record[type](L, ev);
    else
        L->unknown_records++;
}

_Static_assert(offsetof(struct vh_rec_alloc, addr) == offsetof(struct vh_rec_free, addr),
               "prefetch reads addr at one offset");

/* Read-ahead, stage 1 (an event enters the window): start loading the hash
 * slots it will probe. */
static inline void prefetch(const struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_hdr *h = ev->rec;
    const struct heap *hp;

    if (h->type == VH_REC_ALLOC || h->type == VH_REC_RESIZE || h->type == VH_REC_FREE) {
        hp = L->hp.heaps[h->a];
        if (hp)    /* ALLOC, RESIZE and FREE all have addr at offset 16 */
            livemap__prefetch(hp->live, ((const struct vh_rec_alloc *)h)->addr);
        if (hp && h->type != VH_REC_FREE) {
            const struct vh_rec_alloc *r = (const struct vh_rec_alloc *)h;
            const uint32_t *at = agg_sys_at(L, hp->id, h->b, r->tag);
            if (at)
                __builtin_prefetch(at);
            else if (L->lv.agg_map.s)
                __builtin_prefetch(
                    &L->lv.agg_map.s[idxmap__mix(agg_key(r->tag, h->b), hp->id) & L->lv.agg_map.mask]);
        }
    }
}

/* Stage 2 (half a window later; the slots have arrived): start loading the
 * aggregate the event will update. Returns it (UINT32_MAX if none yet): an
 * allocation uses it when it is processed, once checked. */
static inline uint32_t prefetch_agg(struct loader *L, const struct vh_event *ev, size_t *slot)
{
    const struct vh_rec_hdr *h = ev->rec;
    uint32_t i = UINT32_MAX;

    if ((h->type == VH_REC_ALLOC || h->type == VH_REC_RESIZE) && L->hp.heaps[h->a]) {
        i = agg_find(L, L->hp.heaps[h->a]->id, h->b, ((const struct vh_rec_alloc *)h)->tag);
    } else if (h->type == VH_REC_FREE && L->hp.heaps[h->a]) {
        struct livemap *m = L->hp.heaps[h->a]->live;
        const struct vh_live_block *b = livemap__find(m, ((const struct vh_rec_free *)h)->addr);
        if (b) {
            i = b->agg;
            *slot = livemap__slot(m, b);
        }
    }
    if (i != UINT32_MAX)
        __builtin_prefetch(&L->lv.aggs[i], 1);
    return i;
}

/* ---- settling cross-thread misorders ---------------------------------------
 * An allocation's time is read without a fence, so it may come before the
 * real allocator's load that found the block: up to a memory latency
 * before another thread's free of that same block (docs/capture-format.md,
 * ordering rule 4). Within one thread records are in program order; across
 * threads, two such misorders show up as anomalies:
 *  A. an ALLOC onto an address still live, whose FREE by another thread
 *     follows within SETTLE_NS;
 *  B. a FREE of an address not live, whose ALLOC by another thread follows
 *     within SETTLE_NS.
 * settle() then processes that later record first, at the current time (so
 * emitted times never go back), and marks it to be skipped at its turn. It
 * runs only on an anomaly, so the common path pays one test per record. */

/* 1 when the record is an ALLOC, RESIZE or FREE: it changes its thread's
 * "latest allocation" (what check_temporary() reads). */
static inline int is_block_call(const struct vh_rec_hdr *h)
{
    return h->type == VH_REC_ALLOC || h->type == VH_REC_RESIZE || h->type == VH_REC_FREE;
}

/* A record settle() may look at: ALLOC / RESIZE / FREE of (heap, addr).
 * 1: touches it (a failed allocation does not). */
static inline int touches(const struct vh_rec_hdr *h, uint16_t heap, uint64_t addr)
{
    return is_block_call(h) && h->a == heap && ((const struct vh_rec_free *)h)->addr == addr &&
           !(h->type != VH_REC_FREE && (h->flags & VH_RF_FAILED));
}

/* The record settle() may move for ev's anomaly on (heap, addr): in the
 * rest of this batch or in the next, the first later record about that
 * address, when it is a `want` of another thread within SETTLE_NS.
 * 1 and its place (bs[*fb], *fj), or 0. */
static int settle_find(struct loader *L, const struct vh_event *ev, uint16_t heap, uint64_t addr,
                       uint8_t want, struct batch *bs[2], int *fb, size_t *fj)
{
    uint64_t limit = ev->time < UINT64_MAX - SETTLE_NS ? ev->time + SETTLE_NS : UINT64_MAX;

    for (int i = 0; i < 2; i++) {
        struct batch *b = bs[i];
        for (size_t j = i ? 0 : L->fd.cur_j + 1; j < b->n; j++) {
            const struct vh_event *e = &b->ev[j];
            const struct vh_rec_hdr *h = e->rec;
            if (e->time > limit)
                return 0;
            if (b->skip[j])
                continue;
            if (touches(h, heap, addr)) {
                if (h->type != want || e->tid == ev->tid)
                    return 0;
                *fb = i;
                *fj = j;
                return 1;
            }
            /* the address changes hands, or the heap's blocks go: stop */
            if (h->type == VH_REC_MOVE && h->a == heap &&
                (((const struct vh_rec_move *)h)->from == addr ||
                 ((const struct vh_rec_move *)h)->to == addr))
                return 0;
            if ((h->type == VH_REC_HEAP_CREATE || h->type == VH_REC_HEAP_DESTROY ||
                 h->type == VH_REC_RANGE) &&
                heap != VH_HEAP_SYSTEM)
                return 0;
        }
        if (i || b->last)
            return 0;
        bs[1] = feeder__take(L->fd.feed, L->fd.cur_k + 1);
    }
    return 0;
}

/* ev (the current record, processed by on_alloc / on_free) found an anomaly
 * on (heap, addr): when settle_find() finds the record that truly came
 * first (VH_REC_FREE for case A, VH_REC_ALLOC for B), it is processed now.
 * Returns 1 if so. */
static __attribute__((noinline)) int settle(struct loader *L, const struct vh_event *ev,
                                            uint16_t heap, uint64_t addr, uint8_t want)
{
    struct batch *bs[2] = { L->fd.cur_b, NULL };
    struct vh_event moved;
    struct thread *t;
    uint32_t hint_agg = L->lv.hint_agg, last_serial, last_heap;
    size_t hint_slot = L->lv.hint_slot, fj = 0, j;
    uint64_t last_addr;
    int fb = -1, own = 0;

    if (L->fd.settling || !addr || !bs[0] || !settle_find(L, ev, heap, addr, want, bs, &fb, &fj))
        return 0;

    /* Does the moved record overtake calls of its own thread? Then the
     * thread's latest allocation (heaptrack's temporary) is kept as its
     * program order has it: saved now, restored after; at its turn the
     * moved record leaves it as it would have (settled()). */
    moved = bs[fb]->ev[fj];
    for (int i = 0; i <= fb && !own; i++)
        for (j = i ? 0 : L->fd.cur_j + 1; j < (i == fb ? fj : bs[i]->n); j++)
            if (!bs[i]->skip[j] && bs[i]->ev[j].tid == moved.tid &&
                is_block_call(bs[i]->ev[j].rec)) {
                own = 1;
                break;
            }
    moved.time = ev->time;
    if (!(t = thread_get(L, moved.tid, moved.time)))
        return 0;
    bs[fb]->skip[fj] = 1;
    bs[fb]->nskip++;
    last_serial = t->last_serial;
    last_addr = t->last_addr;
    last_heap = t->last_heap;
    if (own)                           /* a call of its own came in between:
                                          not temporary                     */
        t->last_serial = 0;
    L->fd.settling = 1;
    L->lv.hint_agg = UINT32_MAX;
    L->lv.hint_slot = SIZE_MAX;
    if (want == VH_REC_FREE)
        on_free(L, &moved);
    else
        on_alloc(L, &moved, 0);
    L->fd.settling = 0;
    L->lv.hint_agg = hint_agg;
    L->lv.hint_slot = hint_slot;
    if ((t = thread_get(L, moved.tid, moved.time))) {
        t->last_serial = last_serial;
        t->last_addr = last_addr;
        t->last_heap = last_heap;
    }
    L->fd.reordered++;
    return 1;
}

/* A record's turn, after settle() processed it ahead: what it would have
 * done to its thread then. A moved FREE would have cleared the thread's
 * latest allocation; a moved ALLOC would have made its block the latest,
 * but that block is gone by now (the FREE that settle() ran for freed it),
 * and a latest that is gone is the same as none. */
static void settled(struct loader *L, const struct vh_event *ev)
{
    struct thread *t;

    if (ev->time > L->tl.last_time)
        L->tl.last_time = ev->time;
    if ((t = thread_get(L, ev->tid, ev->time)))
        t->last_serial = 0;
}

/* ---- the pass -------------------------------------------------------------- */

/* What prefetch_agg() found for the events of the window ahead, by index
 * modulo AHEAD. */
struct ahead {
    uint32_t agg[AHEAD];
    size_t slot[AHEAD];
};

static void progress(struct loader *L, int *last_pct, int final, uint64_t done, uint64_t total)
{
    int pct = final ? 100 : total ? (int)(done * 100 / total) : 0;

    if (pct == *last_pct)
        return;
    *last_pct = pct;
    fprintf(stderr, "\rloading: %3d%% %llu records", pct, (unsigned long long)L->records);
    if (final)
        fputs("\r\033[K", stderr);
    fflush(stderr);
}

/* The records of batch b, in order. A window of AHEAD events: each one's
 * hash slot is prefetched when it enters, and is in cache by the time it
 * is processed. With a live set far larger than the caches this more than
 * halves the time per event. The window stays within a batch (its first
 * events go unhinted). */
static void stream_batch(struct loader *L, struct batch *b, struct ahead *ah, int show,
                         int *last_pct)
{
    struct vh_event *e = b->ev;
    size_t m = b->n;

    for (size_t n = 0; n < m && n < AHEAD; n++)
        prefetch(L, &e[n]);
    for (size_t j = 0; j < m && !L->failed; j++) {
        if (j + AHEAD / 2 < m)
            ah->agg[(j + AHEAD / 2) % AHEAD] =
                prefetch_agg(L, &e[j + AHEAD / 2], &ah->slot[(j + AHEAD / 2) % AHEAD]);
        L->records++;
        L->lv.hint_agg = ah->agg[j % AHEAD];
        L->lv.hint_slot = ah->slot[j % AHEAD];
        ah->agg[j % AHEAD] = UINT32_MAX;
        ah->slot[j % AHEAD] = SIZE_MAX;
        L->fd.cur_j = j;
        if (__builtin_expect(b->nskip != 0, 0) && b->skip[j])
            settled(L, &e[j]);         /* processed ahead of its turn */
        else
            on_event(L, &e[j]);
        /* a checkpoint goes between two records, when one may be due */
        if (L->es.emitted >= L->es.cp_at && !L->failed) {
            if (evwriter__checkpoint_due(L->es.evw))
                evstream__checkpoint(L);
            L->es.cp_at = L->es.emitted + evwriter__due_in(L->es.evw);
        }
        if (j + AHEAD < m)
            prefetch(L, &e[j + AHEAD]);
        if (show && !(L->records & PROGRESS_EVERY))
            progress(L, last_pct, 0, b->done, b->total);
    }
}

int stream__run(struct loader *L)
{
    struct feeder F = { 0 };
    struct ahead ah;
    int show = L->opts->progress < 0 ? isatty(2) : L->opts->progress, last_pct = -1;

    if (feeder__start(&F, L->cap)) {
        feeder__stop(&F);
        loader__fail(L, -ENOMEM, "out of memory");
        return -1;
    }
    memset(ah.agg, 0xff, sizeof ah.agg);
    for (size_t n = 0; n < AHEAD; n++)
        ah.slot[n] = SIZE_MAX;
    L->fd.feed = &F;
    L->tl.coarse_groups = coarse__groups(F.coarse);
    for (uint64_t k = 0; !L->failed; k++) {
        struct batch *b = feeder__take(&F, k);
        int last = b->last;

        L->fd.cur_b = b;
        L->fd.cur_k = k;
        if (F.oom)
            loader__fail(L, -ENOMEM, "out of memory");
        stream_batch(L, b, &ah, show, &last_pct);
        feeder__release(&F, k);
        if (last)
            break;
    }
    L->fd.cur_b = NULL;
    L->fd.feed = NULL;
    feeder__stop(&F);                  /* capture__damage() is ours again */
    stacks__unqueue(L);
    if (show)
        progress(L, &last_pct, 1, 0, 0);
    return L->failed ? -1 : 0;
}

int stream__init(struct loader *L)
{
    L->lv.rate = capture__header(L->cap)->sample_rate;
    if (!(L->lv.thread_map = vh_map__new())) {
        loader__fail(L, -ENOMEM, "out of memory");
        return -1;
    }
    /* The capture's ids are dense (the recorder counts them up): an array
     * by id up to its largest, unless that is absurd (a damaged capture's
     * ids may be anything; then, and for ids beyond, the hash). */
    if ((L->lv.nagg_sys = capture__dense_stacks(L->cap))) {
        if (!(L->lv.agg_sys = malloc(L->lv.nagg_sys * sizeof *L->lv.agg_sys))) {
            loader__fail(L, -ENOMEM, "out of memory");
            return -1;
        }
        memset(L->lv.agg_sys, 0xff, L->lv.nagg_sys * sizeof *L->lv.agg_sys);
    }
    return 0;
}

void stream__free(struct loader *L)
{
    struct ld_live *lv = &L->lv;

    free(lv->aggs);
    free(lv->agg_sys);
    free(lv->threads);
    free(lv->range_buf);
    idxmap__clear(&lv->agg_map);
    vh_map__free(lv->thread_map);
    lv->thread_map = NULL;
    lv->aggs = NULL;
    lv->agg_sys = NULL;
    lv->threads = NULL;
    lv->range_buf = NULL;
    lv->naggs = lv->nthreads = lv->caprange = lv->nagg_sys = 0;
    lv->last_thread = NULL;
}
