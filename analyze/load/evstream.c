/* evstream.c — a heap's live blocks as the event stream wants them: in
 * address order, for the checkpoints (every live block, now and then)
 * and for a destroyed heap's frees. The events themselves are emitted
 * inline where blocks change (loader.h: emit_block). */
#include <errno.h>
#include <stdlib.h>

#include "analyze/load/loader.h"

/* In-place MSD radix sort by address (American flag sort) on the byte at
 * `shift`, then on the lower bytes down to bit `lo` (below it, addresses
 * are all alike); small runs by insertion. */
static void addr_sort(struct vh_live_block *a, size_t n, int shift, int lo)
{
    size_t count[256] = { 0 }, next[256], end[256], sum = 0;

    if (n <= 24) {
        for (size_t i = 1; i < n; i++) {
            struct vh_live_block x = a[i];
            size_t j = i;
            for (; j && a[j - 1].addr > x.addr; j--)
                a[j] = a[j - 1];
            a[j] = x;
        }
        return;
    }
    for (size_t i = 0; i < n; i++)
        count[(a[i].addr >> shift) & 0xff]++;
    for (unsigned d = 0; d < 256; d++) {
        next[d] = sum;
        sum += count[d];
        end[d] = sum;
    }
    /* each block goes to the bucket of its digit, displacing the block
     * there, which goes on to its own bucket: every block moves once */
    for (unsigned d = 0; d < 256; d++) {
        while (next[d] < end[d]) {
            struct vh_live_block x = a[next[d]];
            unsigned e = (unsigned)(x.addr >> shift) & 0xff;
            while (e != d) {
                struct vh_live_block y = a[next[e]];
                a[next[e]++] = x;
                x = y;
                e = (unsigned)(x.addr >> shift) & 0xff;
            }
            a[next[d]++] = x;
        }
    }
    if (shift > lo)
        for (unsigned d = 0; d < 256; d++)
            if (count[d] > 1)
                addr_sort(a + end[d] - count[d], count[d], shift >= 8 ? shift - 8 : 0, lo);
}

/* The blocks live in heap h, copied out of its live map in address order:
 * checkpoints store them so and a destroy frees them so. The map is read in
 * slot order, twice (sequential reads are cheap; random ones are not): for
 * a histogram of the top 11 bits where addresses differ, and to copy each
 * block into its bucket — 2048 streams of writes, each sequential. The
 * buckets, small enough for the caches, are then sorted in place. The
 * result lives in L->es.scratch, kept between calls (no page faults for each
 * checkpoint); *n blocks. NULL when out of memory. */
static struct vh_live_block *sorted_blocks(struct loader *L, struct heap *h, size_t *n)
{
    size_t cnt = h->live ? livemap__count(h->live) : 0, pos, k = 0, sum = 0;
    struct vh_live_block *a, *b;
    uint64_t any = 0, all = ~0ull, diff;
    size_t *next;
    int lo, hi, shift, width;

    *n = 0;
    if (cnt > L->es.scratch_cap || !L->es.scratch) {     /* NULL only for failure */
        size_t cap = cnt + cnt / 4 + 1024;
        free(L->es.scratch);
        if (!(L->es.scratch = malloc(cap * sizeof *L->es.scratch))) {
            L->es.scratch_cap = 0;
            loader__fail(L, -ENOMEM, "out of memory");
            return NULL;
        }
        L->es.scratch_cap = cap;
    }
    a = L->es.scratch;
    if (cnt <= 512) {                  /* most heaps: one pass, in place */
        for (pos = 0; k < cnt && (b = livemap__next(h->live, &pos));) {
            a[k++] = *b;
            any |= b->addr;
            all &= b->addr;
        }
        diff = any ^ all;
        if (diff)
            addr_sort(a, k, (63 - __builtin_clzll(diff)) & ~7, __builtin_ctzll(diff));
        *n = k;
        return a;
    }
    if (!(next = calloc(2049, sizeof *next))) {
        loader__fail(L, -ENOMEM, "out of memory");
        return NULL;
    }
    diff = h->addr_or ^ h->addr_and;   /* a superset of what differs now */
    lo = diff ? __builtin_ctzll(diff) : 0;
    hi = diff ? 64 - __builtin_clzll(diff) : 0;
    width = hi - lo < 11 ? hi - lo : 11;
    shift = hi - width;
#define DIGIT(x) ((size_t)((x) >> shift) & (((size_t)1 << width) - 1))
    for (pos = 0; (b = livemap__next(h->live, &pos));)
        next[DIGIT(b->addr) + 1]++;
    for (size_t d = 0; d < 2048; d++) {
        sum += next[d + 1];
        next[d + 1] = sum;
    }
    for (pos = 0; k < cnt && (b = livemap__next(h->live, &pos)); k++)
        a[next[DIGIT(b->addr)]++] = *b;
#undef DIGIT
    /* next[d] is now the end of bucket d */
    for (size_t d = 0, from = 0; shift > lo && d < 2048; from = next[d++])
        if (next[d] - from > 1)
            addr_sort(a + from, next[d] - from, shift >= 8 ? shift - 8 : 0, lo);
    free(next);
    *n = k;
    return a;
}

/* Every block of heap h leaves it (destroyed, or its id reused): one FREE
 * flagged DESTROY each, in address order, and when `gone` the accounting
 * of block_gone(). 0 or -ENOMEM. */
int evstream__destroy(struct loader *L, struct heap *h, const struct vh_event *ev, int gone)
{
    size_t n;
    struct vh_live_block *k = sorted_blocks(L, h, &n);

    if (!k)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        emit_block(L, VH_EV_FREE, VH_EVF_DESTROY, h, ev->tid, ev->time, &k[i], 0, 0);
        if (gone)
            block_gone(L, h, &k[i], ev->time);
    }
    return 0;
}

/* Every live block into a checkpoint, heaps by DB id, addresses ascending.
 * Called between two records, when the live maps are what the events
 * emitted so far leave. */
void evstream__checkpoint(struct loader *L)
{
    struct vh_block batch[512];
    int rc = evwriter__checkpoint_begin(L->es.evw);

    for (size_t id = 0; !rc && id < L->hp.nbyid; id++) {
        struct heap *h = L->hp.byid[id];
        struct vh_live_block *k;
        size_t n, m = 0;

        if (!h || !h->live || !livemap__count(h->live))
            continue;
        if (!(k = sorted_blocks(L, h, &n)))
            return;
        for (size_t i = 0; !rc && i < n; i++) {
            const struct agg *a = &L->lv.aggs[k[i].agg];
            batch[m++] = (struct vh_block){ .addr = k[i].addr, .size = k[i].size,
                                            .usable = k[i].size + k[i].slack, .time = k[i].time,
                                            .heap_id = h->id, .stack_id = a->stack,
                                            .tag_id = a->tag, .tid = k[i].tid };
            if (m == sizeof batch / sizeof batch[0] || i + 1 == n) {
                rc = evwriter__checkpoint_add(L->es.evw, batch, m);
                m = 0;
            }
        }
    }
    if (!rc)
        rc = evwriter__checkpoint_end(L->es.evw);
    if (rc)
        loader__fail(L, rc, "event stream: %s", evwriter__error(L->es.evw));
}


int evstream__init(struct loader *L)
{
    struct evwriter_opts eo = { .block_events = L->opts->event_block,
                                .checkpoint_events = L->opts->checkpoint_events };
    char msg[256];
    if (L->opts->no_events) {
        L->es.cp_at = UINT64_MAX;      /* no checkpoint is ever due */
        return 0;
    }
    int rc = evwriter__new(L->db, &eo, &L->es.evw, msg, sizeof msg);

    if (rc)
        loader__fail(L, rc, "event stream: %s", msg);
    return rc;
}

void evstream__finish(struct loader *L)
{
    int rc;

    if (!L->failed)
        evstream__checkpoint(L);       /* the live set at the end */
    if (!L->failed && (rc = evwriter__finish(L->es.evw, &L->es.evst)))
        loader__fail(L, rc, "event stream: %s", evwriter__error(L->es.evw));
}

void evstream__free(struct loader *L)
{
    evwriter__free(L->es.evw);
    L->es.evw = NULL;
    free(L->es.scratch);
    L->es.scratch = NULL;
    L->es.scratch_cap = 0;
}
