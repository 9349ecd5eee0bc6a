/* frag.c — the fragmentation numbers of frag.h: frag__analyze() walks one
 * sorted live set (regions, holes, pages, size classes, stacks), fragtrack
 * keeps the headline numbers current through single block changes. Both
 * classify gaps and count pages with the same small functions, so that the
 * two give equal totals for equal sets (tests/unit/test_frag.c checks). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/query/frag.h"
#include "analyze/util/bptree.h"
#include "analyze/util/cmp.h"
#include "analyze/util/grow.h"
#include "analyze/util/map.h"

const uint64_t frag_fit_sizes[FRAG_NFIT] = { 64, 4096, 1u << 20 };

#define NCLASS 61                 /* [0,16], (16,32], ... (2^63, 2^64)      */

void frag_opts__default(struct frag_opts *o)
{
    memset(o, 0, sizeof *o);
    o->page_size = 4096;
    o->sparse_pct = 25;
    o->cluster_gap = 1u << 20;
}

static int opts_ok(const struct frag_opts *o)
{
    uint64_t p = o->page_size;
    uint64_t q = o->pack_page;
    return p >= 16 && p <= (1ull << 40) && !(p & (p - 1)) && o->sparse_pct <= 100 &&
           (!q || (q >= 16 && q <= (1ull << 40) && !(q & (q - 1)) && o->pack_small <= q &&
                   o->pack_head < q));
}

static uint64_t min_hole_of(const struct frag_opts *o, int bounded)
{
    return o->min_hole ? o->min_hole : bounded ? 1 : 32;
}

static uint64_t sparse_below(const struct frag_opts *o)
{
    return o->page_size * o->sparse_pct / 100;
}

static inline uint64_t end_of(uint64_t addr, uint64_t usable)
{
    return usable > UINT64_MAX - addr ? UINT64_MAX : addr + usable;
}

/* ---- gaps ------------------------------------------------------------------
 * A gap is the space between a block's usable end and the next block (or a
 * bound). Its kind decides where it is counted. */
enum gap_kind { GAP_NONE, GAP_OVERHEAD, GAP_HOLE, GAP_SEP };

struct gapsum {
    uint64_t free, holes, overhead, unusable, seps;
    uint64_t fit[FRAG_NFIT];
};

static enum gap_kind gap_kind(uint64_t g, int bounded, uint64_t min_hole, uint64_t cluster_gap)
{
    if (!g)
        return GAP_NONE;
    if (!bounded && g > cluster_gap)
        return GAP_SEP;
    return g >= min_hole ? GAP_HOLE : GAP_OVERHEAD;
}

/* sign +1 adds, -1 takes away (unsigned wrap-around cancels). */
static void gapsum_add(struct gapsum *s, uint64_t g, enum gap_kind k, uint64_t page, int sign)
{
    uint64_t m = sign > 0 ? 1 : (uint64_t)-1;
    switch (k) {
    case GAP_NONE:
        return;
    case GAP_OVERHEAD:
        s->overhead += m * g;
        return;
    case GAP_SEP:
        s->seps += m;
        return;
    case GAP_HOLE:
        s->free += m * g;
        s->holes += m;
        s->unusable += m * (g & (page - 1));
        for (int i = 0; i < FRAG_NFIT; i++)
            s->fit[i] += m * (g / frag_fit_sizes[i] * frag_fit_sizes[i]);
        return;
    }
}

/* The part of [lo, hi) inside [base, end). */
static uint64_t clamp_gap(uint64_t lo, uint64_t hi, uint64_t base, uint64_t end)
{
    if (lo < base)
        lo = base;
    if (hi > end)
        hi = end;
    return hi > lo ? hi - lo : 0;
}

/* ---- pages -------------------------------------------------------------------
 * A block [a, a + u) adds its overlap to its first and last page; the pages
 * strictly inside it are full, and only counted. A page's occupancy is the
 * sum of what blocks add to it, at most P. */
typedef void (*page_fn)(void *arg, uint64_t page, size_t i, uint64_t overlap);

static void block_pages(uint64_t a, uint64_t u, uint64_t P, size_t i, page_fn edge,
                        uint64_t *full, void *arg)
{
    uint64_t e = end_of(a, u), pf = a / P, pl = (e - 1) / P;
    if (!u)
        return;
    if (pf == pl) {
        edge(arg, pf, i, u);
        return;
    }
    edge(arg, pf, i, (pf + 1) * P - a);
    *full += pl - pf - 1;
    edge(arg, pl, i, e - pl * P);
}

/* ---- stacks (frag__analyze) -------------------------------------------------- */

struct smap {
    struct vh_map *map;           /* (heap, stack) -> index into v          */
    struct frag_stack *v;
    size_t n;
};

static int smap_init(struct smap *m, size_t want)
{
    m->map = vh_map__new();
    m->v = calloc(want ? want : 1, sizeof *m->v);
    m->n = 0;
    return m->map && m->v ? 0 : -ENOMEM;
}

static void smap_free(struct smap *m)
{
    vh_map__free(m->map);
    free(m->v);
}

/* The entry of (heap, stack); created when `create` (room was made by
 * smap_init for one entry per block). NULL if absent, or out of memory. */
static struct frag_stack *smap_get(struct smap *m, uint32_t heap, uint32_t stack, int create)
{
    struct vh_map_ent *e;
    int existed;

    if (!create)
        return (e = vh_map__find(m->map, heap, stack)) ? &m->v[e->v1] : NULL;
    if (!(e = vh_map__insert(m->map, heap, stack, &existed)))
        return NULL;
    if (existed)
        return &m->v[e->v1];
    e->v1 = m->n;
    struct frag_stack *s = &m->v[m->n++];
    s->heap_id = heap;
    s->stack_id = stack;
    return s;
}

/* ---- page scan (frag__analyze) ---------------------------------------------- */

struct member {
    size_t i;
    uint64_t ov;
};

struct pscan {
    uint64_t P, thr;
    uint64_t pages, used, sparse, pinned, full;
    const struct vh_block *b;
    struct smap *charge;          /* NULL: no charging to stacks            */
    uint64_t cur, occ;
    int have, oom;
    struct member *m;
    size_t nm, cap;
};

static void ps_flush(struct pscan *s)
{
    uint64_t occ, freeb, given = 0;
    if (!s->have)
        return;
    occ = s->occ > s->P ? s->P : s->occ;
    s->pages++;
    s->used += occ;
    if (occ < s->thr) {
        freeb = s->P - occ;
        s->sparse++;
        s->pinned += freeb;
        /* shares by occupied bytes; the last block takes the remainder */
        for (size_t k = 0; s->charge && k < s->nm; k++) {
            const struct vh_block *b = &s->b[s->m[k].i];
            uint64_t part = k + 1 == s->nm
                                ? freeb - given
                                : (uint64_t)((unsigned __int128)freeb * s->m[k].ov / s->occ);
            struct frag_stack *st = smap_get(s->charge, b->heap_id, b->stack_id, 0);
            given += part;
            if (st)
                st->pinned += part;
        }
    }
    s->have = 0;
    s->occ = 0;
    s->nm = 0;
}

static void ps_edge(void *arg, uint64_t page, size_t i, uint64_t ov)
{
    struct pscan *s = arg;
    if (s->have && page != s->cur)
        ps_flush(s);
    s->cur = page;
    s->have = 1;
    s->occ += ov;
    if (!s->charge)
        return;
    if (vh_grow(&s->m, &s->cap, s->nm, sizeof *s->m, 64)) {
        s->oom = 1;
        return;
    }
    s->m[s->nm++] = (struct member){ i, ov };
}

struct contrib {
    uint64_t page, ov;
    size_t i;
};

struct cbuf {
    struct contrib *c;
    size_t n, cap;
    int oom;
};

static void cb_edge(void *arg, uint64_t page, size_t i, uint64_t ov)
{
    struct cbuf *c = arg;
    if (vh_grow(&c->c, &c->cap, c->n, sizeof *c->c, 1024)) {
        c->oom = 1;
        return;
    }
    c->c[c->n++] = (struct contrib){ page, ov, i };
}

static int by_page(const void *x, const void *y)
{
    const struct contrib *a = x, *b = y;
    return vh_cmp2(a->page, b->page, a->i, b->i);
}

/* Pages of blocks b[idx[k]] (or b[k] when idx is NULL), k < n, in address
 * order. Blocks that overlap (a pool carved from another heap's block) send
 * pages out of order: those sets go through a sorted list instead. */
static int pages_scan(struct pscan *s, const size_t *idx, size_t n)
{
    uint64_t last_end = 0;
    int ordered = 1;
    for (size_t k = 0; k < n; k++) {
        const struct vh_block *x = &s->b[idx ? idx[k] : k];
        if (!x->usable)
            continue;
        if (x->addr < last_end) {
            ordered = 0;
            break;
        }
        last_end = end_of(x->addr, x->usable);
    }
    if (ordered) {
        for (size_t k = 0; k < n; k++) {
            size_t i = idx ? idx[k] : k;
            block_pages(s->b[i].addr, s->b[i].usable, s->P, i, ps_edge, &s->full, s);
        }
    } else {
        struct cbuf c = { 0 };
        for (size_t k = 0; k < n && !c.oom; k++) {
            size_t i = idx ? idx[k] : k;
            block_pages(s->b[i].addr, s->b[i].usable, s->P, i, cb_edge, &s->full, &c);
        }
        if (c.oom) {
            free(c.c);
            return -ENOMEM;
        }
        if (c.n)
            qsort(c.c, c.n, sizeof *c.c, by_page);
        for (size_t k = 0; k < c.n; k++)
            ps_edge(s, c.c[k].page, c.c[k].i, c.c[k].ov);
        free(c.c);
    }
    ps_flush(s);
    s->pages += s->full;
    s->used += s->full * s->P;
    s->full = 0;
    return s->oom ? -ENOMEM : 0;
}

/* ---- frag__analyze ----------------------------------------------------------- */

struct rbuf {
    struct frag_region *r;
    size_t n, cap;
};

static struct frag_region *region_new(struct rbuf *rb, uint32_t heap, int bounded, uint64_t lo)
{
    if (vh_grow(&rb->r, &rb->cap, rb->n, sizeof *rb->r, 16))
        return NULL;
    struct frag_region *r = &rb->r[rb->n++];
    memset(r, 0, sizeof *r);
    r->heap_id = heap;
    r->bounded = bounded;
    r->lo = lo;
    r->hi = lo;
    return r;
}

static void region_gap(struct frag_region *r, struct frag_hist *hist, uint64_t g, uint64_t at,
                       enum gap_kind k, uint64_t P)
{
    struct gapsum s = { 0 };
    if (k != GAP_HOLE && k != GAP_OVERHEAD)
        return;
    gapsum_add(&s, g, k, P, 1);
    r->free += s.free;
    r->holes += s.holes;
    r->overhead += s.overhead;
    r->unusable += s.unusable;
    for (int i = 0; i < FRAG_NFIT; i++)
        r->fit[i] += s.fit[i];
    if (k == GAP_HOLE) {
        int b = 63 - __builtin_clzll(g);
        hist[b].holes++;
        hist[b].bytes += g;
        if (g > r->largest) {
            r->largest = g;
            r->largest_at = at;
        }
    }
}

static int region_pages(struct frag_region *r, const struct vh_block *blocks, size_t first,
                        size_t n, const struct frag_opts *o)
{
    struct pscan s = { .P = o->page_size, .thr = sparse_below(o), .b = blocks + first };
    int rc = pages_scan(&s, NULL, n);
    r->pages = s.pages;
    r->page_bytes_used = s.used;
    r->sparse_pages = s.sparse;
    r->pinned = s.pinned;
    return rc;
}

/* A nested heap's region, occupied space in its parent's. */
struct carve {
    uint32_t parent;
    uint64_t lo, hi;
};

static int by_carve(const void *x, const void *y)
{
    const struct carve *a = x, *b = y;
    return vh_cmp2(a->parent, b->parent, a->lo, b->lo);
}

/* ---- the paged compaction model (frag_opts.pack_page) ------------------- */
/* Chunks of `size` bytes one page holds, its header's chunks taken out. */
static uint64_t chunks_per_page(const struct frag_opts *o, uint64_t size)
{
    uint64_t total = o->pack_page / size;
    uint64_t head = o->pack_head + (total + 31) / 32 * 4;
    if (size > 2 * head)
        return total;              /* the header lives off the page */
    uint64_t taken = (head + size - 1) / size;
    return total > taken ? total - taken : 1;
}

/* Pages the live blocks b[0 .. n) take once compacted. */
static uint64_t packed_pages(const struct frag_opts *o, const struct vh_block *b, size_t n)
{
    uint64_t per_class[64] = { 0 }, pages = 0, P = o->pack_page;
    for (size_t i = 0; i < n; i++) {
        uint64_t u = b[i].usable ? b[i].usable : 1;
        if (u > o->pack_small) {
            pages += (u + P - 1) / P;
            continue;
        }
        int k = 63 - __builtin_clzll(u);
        per_class[k + ((u & (u - 1)) != 0)]++;   /* rounded up to its class */
    }
    for (int k = 0; k < 64; k++) {
        if (!per_class[k])
            continue;
        uint64_t per = chunks_per_page(o, 1ull << k);
        pages += (per_class[k] + per - 1) / per;
    }
    return pages;
}

/* What the paged compaction gives back in a heap [base, end): its pages
 * up to its top (the first declared region at or above the last block's
 * end, the gap a heap grows into; else that end, rounded up to a page),
 * less the declared regions below the top (metadata, kept) and the packed
 * blocks. */
static uint64_t paged_reclaim(const struct frag_opts *o, const struct vh_block *b, size_t n,
                              uint64_t base, const struct carve *carves, size_t nc)
{
    uint64_t P = o->pack_page, last = end_of(b[n - 1].addr, b[n - 1].usable);
    uint64_t top = UINT64_MAX, kept = 0;
    for (size_t k = 0; k < nc; k++)
        if (carves[k].lo >= last && carves[k].lo < top)
            top = carves[k].lo;
    if (top == UINT64_MAX)
        top = base + (last - base + P - 1) / P * P;
    for (size_t k = 0; k < nc; k++)
        if (carves[k].lo < top)
            kept += ((carves[k].hi < top ? carves[k].hi : top) - carves[k].lo + P - 1) / P;
    uint64_t before = (top - base + P - 1) / P, after = kept + packed_pages(o, b, n);
    return before > after ? (before - after) * P : 0;
}

/* Regions of one heap: its blocks are blocks[first .. first + n); with
 * bounds, the regions of heaps nested in it are carves[0 .. nc). */
static int heap_regions(struct rbuf *rb, struct frag_hist *hist, const struct vh_block *blocks,
                        size_t first, size_t n, uint32_t heap, const struct frag_heap *h,
                        int nested, const struct carve *carves, size_t nc,
                        const struct frag_opts *o)
{
    const struct vh_block *b = blocks + first;
    uint64_t P = o->page_size;
    struct frag_region *r;
    int bounded = h && h->size;

    if (bounded) {
        uint64_t base = h->base, end = end_of(h->base, h->size), mh = min_hole_of(o, 1);
        uint64_t prev = base, g, lo, hi;
        size_t bi = 0, ci = 0;
        if (!(r = region_new(rb, heap, 1, base)))
            return -ENOMEM;
        r->hi = end;
        r->nested = nested;
        /* blocks and nested regions in address order; gaps between them */
        while (bi < n || ci < nc) {
            if (ci < nc && (bi == n || carves[ci].lo < b[bi].addr)) {
                lo = carves[ci].lo;
                hi = carves[ci++].hi;
            } else {
                lo = b[bi].addr;
                hi = end_of(b[bi].addr, b[bi].usable);
                r->blocks++;
                r->requested += b[bi].size;
                r->usable += b[bi++].usable;
            }
            g = clamp_gap(prev, lo, base, end);
            region_gap(r, hist, g, prev < base ? base : prev, gap_kind(g, 1, mh, 0), P);
            if (hi > prev)             /* carves may overlap or nest */
                prev = hi;
        }
        g = clamp_gap(prev, end, base, end);
        region_gap(r, hist, g, prev < base ? base : prev, gap_kind(g, 1, mh, 0), P);
        if (n) {
            uint64_t inside = 0, first = b[0].addr, last = b[n - 1].addr;
            for (size_t k = 0; k < nc; k++)
                if (carves[k].lo > first && carves[k].lo < last)
                    inside += carves[k].hi - carves[k].lo;
            r->span = end_of(b[n - 1].addr, b[n - 1].usable) - first;
            r->reclaim = r->span > r->usable + inside ? r->span - r->usable - inside : 0;
            if (o->pack_page)
                r->reclaim = paged_reclaim(o, b, n, base, carves, nc);
        }
        return region_pages(r, blocks, first, n, o);
    }
    uint64_t mh = min_hole_of(o, 0);
    size_t start = 0;
    r = NULL;
    for (size_t i = 0; i < n; i++) {
        uint64_t e = end_of(b[i].addr, b[i].usable);
        if (r) {
            uint64_t pend = end_of(b[i - 1].addr, b[i - 1].usable);
            uint64_t g = b[i].addr > pend ? b[i].addr - pend : 0;
            enum gap_kind k = gap_kind(g, 0, mh, o->cluster_gap);
            if (k == GAP_SEP) {
                if (region_pages(r, blocks, first + start, i - start, o))
                    return -ENOMEM;
                r = NULL;
            } else {
                region_gap(r, hist, g, pend, k, P);
            }
        }
        if (!r) {
            if (!(r = region_new(rb, heap, 0, b[i].addr)))
                return -ENOMEM;
            start = i;
        }
        r->blocks++;
        r->requested += b[i].size;
        r->usable += b[i].usable;
        if (e > r->hi)
            r->hi = e;
    }
    return r ? region_pages(r, blocks, first + start, n - start, o) : 0;
}

static int by_heap_id(const void *x, const void *y)
{
    const struct frag_heap *a = x, *b = y;
    return vh_cmp(a->id, b->id);
}

/* The blocks in address order across heaps: the heaps' runs (each sorted)
 * merged pairwise. Returns NULL on ENOMEM. */
static size_t *address_order(const struct vh_block *b, size_t n)
{
    size_t *idx = malloc((n ? n : 1) * sizeof *idx), *tmp = malloc((n ? n : 1) * sizeof *tmp);
    size_t *runs = malloc((n + 1) * sizeof *runs), nruns = 0;
    if (!idx || !tmp || !runs)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        idx[i] = i;
        if (!i || b[i].heap_id != b[i - 1].heap_id)
            runs[nruns++] = i;
    }
    runs[nruns] = n;
    while (nruns > 1) {
        size_t w = 0, k;
        for (k = 0; k + 1 < nruns; k += 2) {
            size_t lo = runs[k], mid = runs[k + 1], hi = runs[k + 2], x = lo, y = mid, o = lo;
            while (x < mid && y < hi)
                tmp[o++] = b[idx[y]].addr < b[idx[x]].addr ? idx[y++] : idx[x++];
            while (x < mid)
                tmp[o++] = idx[x++];
            while (y < hi)
                tmp[o++] = idx[y++];
            runs[w++] = lo;
        }
        if (k < nruns) {
            memcpy(tmp + runs[k], idx + runs[k], (runs[k + 1] - runs[k]) * sizeof *idx);
            runs[w++] = runs[k];
        }
        runs[w] = n;
        nruns = w;
        size_t *x = idx;
        idx = tmp;
        tmp = x;
    }
    free(tmp);
    free(runs);
    return idx;
fail:
    free(idx);
    free(tmp);
    free(runs);
    return NULL;
}

static int by_waste(const void *x, const void *y)
{
    const struct frag_stack *a = x, *b = y;
    uint64_t wa = a->usable - a->requested + a->pinned, wb = b->usable - b->requested + b->pinned;
    if (wa != wb)
        return wa > wb ? -1 : 1;
    if (a->usable != b->usable)
        return a->usable > b->usable ? -1 : 1;
    return vh_cmp2(a->heap_id, b->heap_id, a->stack_id, b->stack_id);
}

static int class_of(uint64_t size)
{
    if (size <= 16)
        return 0;
    return 64 - __builtin_clzll(size - 1) - 4;
}

int frag__analyze(const struct vh_block *blocks, size_t n, const struct frag_heap *heaps,
                  size_t nheaps, const struct frag_opts *o, struct frag_report **out)
{
    struct frag_report *r = NULL;
    struct frag_heap *hs = NULL;
    struct rbuf rb = { 0 };
    struct smap sm = { 0 };
    struct frag_class cls[NCLASS];
    struct carve *carves = NULL;
    size_t *order = NULL, nc = 0;
    int *nested = NULL, rc = -EINVAL;

    *out = NULL;
    if (!opts_ok(o))
        return -EINVAL;
    for (size_t i = 1; i < n; i++)
        if (blocks[i].heap_id < blocks[i - 1].heap_id ||
            (blocks[i].heap_id == blocks[i - 1].heap_id && blocks[i].addr <= blocks[i - 1].addr))
            return -EINVAL;
    rc = -ENOMEM;
    if (!(r = calloc(1, sizeof *r)) || !(hs = malloc((nheaps ? nheaps : 1) * sizeof *hs)) ||
        smap_init(&sm, n))
        goto out;
    if (nheaps) {
        memcpy(hs, heaps, nheaps * sizeof *hs);
        qsort(hs, nheaps, sizeof *hs, by_heap_id);
    }

    /* slack: totals, size classes, stacks */
    memset(cls, 0, sizeof cls);
    for (size_t i = 0; i < n; i++) {
        const struct vh_block *b = &blocks[i];
        struct frag_stack *s = smap_get(&sm, b->heap_id, b->stack_id, 1);
        struct frag_class *c = &cls[class_of(b->size)];
        if (!s)
            goto out;                  /* rc: -ENOMEM */
        r->t.blocks++;
        r->t.requested += b->size;
        r->t.usable += b->usable;
        s->blocks++;
        s->requested += b->size;
        s->usable += b->usable;
        c->blocks++;
        c->requested += b->size;
        c->usable += b->usable;
    }

    /* nested heaps with bounds, carved from their parents' regions */
    if (!(carves = malloc((nheaps ? nheaps : 1) * sizeof *carves)) ||
        !(nested = calloc(nheaps ? nheaps : 1, sizeof *nested)))
        goto out;
    for (size_t k = 0; k < nheaps; k++) {
        struct frag_heap key = { .id = (uint32_t)hs[k].parent };
        const struct frag_heap *p;
        if (!hs[k].size || hs[k].parent < 0 || hs[k].parent > UINT32_MAX ||
            hs[k].parent == hs[k].id ||
            !(p = bsearch(&key, hs, nheaps, sizeof *hs, by_heap_id)) || !p->size)
            continue;
        nested[k] = 1;
        carves[nc++] = (struct carve){ p->id, hs[k].base, end_of(hs[k].base, hs[k].size) };
    }
    qsort(carves, nc, sizeof *carves, by_carve);

    /* regions, heap by heap: the listed heaps merged with the blocks' */
    size_t i = 0, h = 0, c0 = 0;
    while (i < n || h < nheaps) {
        uint32_t id = i < n && (h == nheaps || blocks[i].heap_id <= hs[h].id) ? blocks[i].heap_id
                                                                           : hs[h].id;
        const struct frag_heap *fh = h < nheaps && hs[h].id == id ? &hs[h] : NULL;
        size_t j = i, c1;
        while (j < n && blocks[j].heap_id == id)
            j++;
        while (c0 < nc && carves[c0].parent < id)
            c0++;
        for (c1 = c0; c1 < nc && carves[c1].parent == id; c1++)
            ;
        if ((!fh || !fh->region) &&
            (rc = heap_regions(&rb, r->hist, blocks, i, j - i, id, fh, fh && nested[h],
                               carves + c0, c1 - c0, o)))
            goto out;
        i = j;
        while (h < nheaps && hs[h].id == id)
            h++;
    }
    for (size_t k = 0; k < rb.n; k++) {
        const struct frag_region *g = &rb.r[k];
        r->t.regions++;
        if (!g->nested)
            r->t.footprint += g->hi - g->lo;
        r->t.free += g->free;
        r->t.holes += g->holes;
        r->t.overhead += g->overhead;
        r->t.unusable += g->unusable;
        r->t.reclaim += g->reclaim;
        for (int f = 0; f < FRAG_NFIT; f++)
            r->t.fit[f] += g->fit[f];
        if (g->largest > r->t.largest)
            r->t.largest = g->largest;
    }

    /* pages of everything together, free bytes of sparse pages charged */
    int one_heap = !n || blocks[0].heap_id == blocks[n - 1].heap_id;
    if (!one_heap && !(order = address_order(blocks, n))) {
        rc = -ENOMEM;
        goto out;
    }
    struct pscan ps = { .P = o->page_size, .thr = sparse_below(o), .b = blocks, .charge = &sm };
    rc = pages_scan(&ps, order, n);
    free(ps.m);
    if (rc)
        goto out;
    r->t.pages = ps.pages;
    r->t.page_bytes_used = ps.used;
    r->t.sparse_pages = ps.sparse;
    r->t.pinned = ps.pinned;

    qsort(sm.v, sm.n, sizeof *sm.v, by_waste);
    r->stacks = sm.v;
    r->nstacks = sm.n;
    sm.v = NULL;
    r->regions = rb.r;
    r->nregions = rb.n;
    rb.r = NULL;
    rc = -ENOMEM;
    if (!(r->classes = calloc(NCLASS, sizeof *r->classes)))
        goto out;
    for (int c = 0; c < NCLASS; c++) {
        if (!cls[c].blocks)
            continue;
        cls[c].lo = c ? (1ull << (c + 3)) + 1 : 0;
        cls[c].hi = c == NCLASS - 1 ? UINT64_MAX : 1ull << (c + 4);
        r->classes[r->nclasses++] = cls[c];
    }
    *out = r;
    r = NULL;
    rc = 0;
out:
    frag_report__free(r);
    free(hs);
    free(rb.r);
    free(order);
    free(carves);
    free(nested);
    smap_free(&sm);
    return rc;
}

void frag_report__free(struct frag_report *r)
{
    if (!r)
        return;
    free(r->regions);
    free(r->classes);
    free(r->stacks);
    free(r);
}
/* ---- fragtrack ---------------------------------------------------------------- */

struct theap {
    uint32_t id;
    int bounded, exists;
    int region;                    /* a declared region: carved, no more    */
    int64_t parent;                /* id, -1 for none                       */
    int carved;                    /* its region is an entry in the parent's */
    uint64_t nested_bytes;         /* nested regions in its own blocks      */
    uint64_t base, end, min_hole;
    struct btree blocks, holes;
    uint64_t n, requested, usable;
    struct gapsum g;
};

/* The hole counts and the edge pages below are hash tables of 16-byte
 * slots with linear probing, a slot empty while all zero. Only the slot and
 * where its key hashes to (home) differ: growing, and deleting by backward
 * shift (which keeps probe chains whole), are these, inlined with the
 * table's kind. */
struct oa_kind {
    size_t size;                                   /* of a slot             */
    size_t (*home)(const void *slot, size_t mask); /* where its key hashes  */
    int (*used)(const void *slot);
};

/* Room for k more entries in the table *s of *mask + 1 slots holding
 * `count` (none yet: *s NULL), kept at most half full. 0 or -ENOMEM. */
static inline int oa_reserve(void **s, size_t *mask, size_t count, size_t k,
                             const struct oa_kind *kd)
{
    size_t cap = *s ? *mask + 1 : 0;
    if (cap && (count + k) * 2 <= cap)
        return 0;
    size_t n = cap ? cap * 2 : 1024;
    while ((count + k) * 2 > n)
        n *= 2;
    char *ns = calloc(n, kd->size), *os = *s;
    if (!ns)
        return -ENOMEM;
    for (size_t i = 0; i < cap; i++) {
        const char *e = os + i * kd->size;
        if (!kd->used(e))
            continue;
        size_t j = kd->home(e, n - 1);
        while (kd->used(ns + j * kd->size))
            j = (j + 1) & (n - 1);
        memcpy(ns + j * kd->size, e, kd->size);
    }
    free(*s);
    *s = ns;
    *mask = n - 1;
    return 0;
}

/* Empties slot i and moves the later entries of its probe chain back. */
static inline void oa_remove(void *s, size_t mask, size_t i, const struct oa_kind *kd)
{
    char *b = s;
    memset(b + i * kd->size, 0, kd->size);
    for (size_t j = (i + 1) & mask; kd->used(b + j * kd->size); j = (j + 1) & mask) {
        size_t k = kd->home(b + j * kd->size, mask);
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
            memcpy(b + i * kd->size, b + j * kd->size, kd->size);
            memset(b + j * kd->size, 0, kd->size);
            i = j;
        }
    }
}

struct pslot {                     /* key and value side by side: one miss  */
    uint64_t key;                  /* page + 1; 0 = empty                   */
    uint64_t occ;
};

struct pmap {                      /* edge page -> occupied bytes           */
    struct pslot *s;
    size_t mask, count;
};

/* (heap, hole size) -> how many: the counts change with nearly every
 * block change, so they live in a hash table (one probe) and the heap's
 * holes tree holds only the distinct sizes, for the largest. */
struct hcount {
    uint64_t size;
    uint32_t heap;                 /* index into fragtrack.h                */
    uint32_t n;                    /* 0 = empty slot                        */
};

struct hmap {
    struct hcount *s;
    size_t mask, count;
};

static inline size_t hm_slot(uint64_t size, uint32_t heap, size_t mask)
{
    return (size_t)(((size ^ (uint64_t)heap << 40) * 0x9e3779b97f4a7c15ull) >> 24) & mask;
}

static size_t hm_home(const void *slot, size_t mask)
{
    const struct hcount *c = slot;
    return hm_slot(c->size, c->heap, mask);
}

static int hm_used(const void *slot)
{
    return ((const struct hcount *)slot)->n != 0;
}

static const struct oa_kind hm_kind = { sizeof(struct hcount), hm_home, hm_used };

/* Room for k more sizes. */
static int hm_reserve(struct hmap *m, size_t k)
{
    return oa_reserve((void **)&m->s, &m->mask, m->count, k, &hm_kind);
}

/* One more (sign > 0) or one fewer hole of `size` in heap `heap`: 1 when
 * that size is new, -1 when its last one went, else 0. Room reserved. */
static int hm_count(struct hmap *m, uint32_t heap, uint64_t size, int sign)
{
    size_t i = hm_slot(size, heap, m->mask);
    while (m->s[i].n && (m->s[i].size != size || m->s[i].heap != heap))
        i = (i + 1) & m->mask;
    if (sign > 0) {
        if (m->s[i].n++)
            return 0;
        m->s[i].size = size;
        m->s[i].heap = heap;
        m->count++;
        return 1;
    }
    if (!m->s[i].n || --m->s[i].n)
        return 0;
    m->count--;                    /* the last one */
    oa_remove(m->s, m->mask, i, &hm_kind);
    return -1;
}

struct fragtrack {
    struct frag_opts o;
    uint64_t thr;
    struct bpool pool;
    struct hmap hm;
    struct theap *h;
    size_t nh, caph;
    uint32_t *hidx;                /* heap id hash: index + 1               */
    size_t hmask;
    struct pmap pm;
    uint64_t full;                 /* pages inside blocks                   */
    uint64_t blocks, requested, usable;
    uint64_t pages, used, sparse, pinned;   /* of the edge pages            */
};

/* Pool room for one block change: at most four insertions (a move: one
 * hole as the block leaves, two holes and the block where it lands), each
 * splitting at most a leaf and every level above it. */
static int pool_room(struct fragtrack *t)
{
    return bpool_reserve(&t->pool, 4, 4 * (MAXH + 1)) || hm_reserve(&t->hm, 4) ? -ENOMEM : 0;
}

int fragtrack__new(const struct frag_opts *o, struct fragtrack **out)
{
    struct fragtrack *t;
    *out = NULL;
    if (!opts_ok(o))
        return -EINVAL;
    if (!(t = calloc(1, sizeof *t)))
        return -ENOMEM;
    t->o = *o;
    t->thr = sparse_below(o);
    t->hmask = 63;
    t->pm.mask = 1023;
    if (!(t->hidx = calloc(t->hmask + 1, sizeof *t->hidx)) ||
        !(t->pm.s = calloc(t->pm.mask + 1, sizeof *t->pm.s)) || pool_room(t)) {
        fragtrack__free(t);
        return -ENOMEM;
    }
    *out = t;
    return 0;
}

void fragtrack__free(struct fragtrack *t)
{
    if (!t)
        return;
    free(t->pool.l);
    free(t->pool.in);
    free(t->hm.s);
    free(t->h);
    free(t->hidx);
    free(t->pm.s);
    free(t);
}

static inline size_t hslot(uint32_t id, size_t mask)
{
    return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 23) & mask;
}

static struct theap *heap_find(const struct fragtrack *t, uint32_t id)
{
    for (size_t i = hslot(id, t->hmask); t->hidx[i]; i = (i + 1) & t->hmask)
        if (t->h[t->hidx[i] - 1].id == id)
            return &t->h[t->hidx[i] - 1];
    return NULL;
}

/* A new heap without bounds, existing. NULL on ENOMEM. */
static struct theap *heap_add(struct fragtrack *t, uint32_t id)
{
    if ((t->nh + 1) * 2 > t->hmask + 1) {
        size_t m = t->hmask * 2 + 1;
        uint32_t *x = calloc(m + 1, sizeof *x);
        if (!x)
            return NULL;
        for (size_t k = 0; k < t->nh; k++) {
            size_t i = hslot(t->h[k].id, m);
            while (x[i])
                i = (i + 1) & m;
            x[i] = (uint32_t)k + 1;
        }
        free(t->hidx);
        t->hidx = x;
        t->hmask = m;
    }
    if (vh_grow(&t->h, &t->caph, t->nh, sizeof *t->h, 8))
        return NULL;
    struct theap *h = &t->h[t->nh];
    memset(h, 0, sizeof *h);
    h->id = id;
    h->exists = 1;
    h->parent = -1;
    h->min_hole = min_hole_of(&t->o, 0);
    size_t i = hslot(id, t->hmask);
    while (t->hidx[i])
        i = (i + 1) & t->hmask;
    t->hidx[i] = (uint32_t)++t->nh;
    return h;
}

/* One end of a gap: an entry of the blocks (a block or a nested region). */
struct nb {
    int has;
    uint64_t addr, usable;
};

static inline struct nb nb_at(const struct bpool *p, uint32_t leaf, uint32_t i)
{
    struct nb n = { 0, 0, 0 };
    if (leaf) {
        n.has = 1;
        n.addr = LF(p, leaf)->key[i];
        n.usable = LF(p, leaf)->a[i];
    }
    return n;
}

/* The gap between entries p and s (none: a bound, or nothing). */
static void gap_account(struct fragtrack *t, struct theap *h, struct nb p, struct nb s, int sign)
{
    struct bpool *pl = &t->pool;
    struct bpos pos;
    uint64_t g;
    enum gap_kind k;

    if (h->bounded) {
        uint64_t lo = p.has ? end_of(p.addr, p.usable) : h->base;
        uint64_t hi = s.has ? s.addr : h->end;
        g = clamp_gap(lo, hi, h->base, h->end);
        k = gap_kind(g, 1, h->min_hole, 0);
    } else {
        if (!p.has || !s.has)
            return;
        uint64_t pend = end_of(p.addr, p.usable);
        g = s.addr > pend ? s.addr - pend : 0;
        k = gap_kind(g, 0, h->min_hole, t->o.cluster_gap);
    }
    gapsum_add(&h->g, g, k, t->o.page_size, sign);
    if (k != GAP_HOLE)
        return;
    /* holes: counted by size; the tree has each size present once */
    switch (hm_count(&t->hm, (uint32_t)(h - t->h), g, sign)) {
    case 1:
        if (!bt_seek(pl, &h->holes, g, &pos))
            bt_insert(pl, &h->holes, &pos, g, 0, 0, 0);
        break;
    case -1:
        if (bt_seek(pl, &h->holes, g, &pos))
            bt_delete(pl, &h->holes, &pos);
        break;
    }
}

static void link_entry(struct fragtrack *t, struct theap *h, uint64_t addr, uint64_t size,
                       uint64_t usable, int pseudo);
static void unlink_entry(struct fragtrack *t, struct theap *h, struct bpos *pos);

/* The bounded parent an existing bounded heap is nested in, or NULL: its
 * region is inside the parent's, whether carved from it or (a block of the
 * parent in the way) not. */
static struct theap *nested_in(const struct fragtrack *t, const struct theap *h)
{
    struct theap *p = h->exists && h->bounded && h->parent >= 0 && h->parent <= UINT32_MAX &&
                              h->parent != h->id
                          ? heap_find(t, (uint32_t)h->parent) : NULL;
    return p && p->bounded ? p : NULL;
}

/* Puts an existing nested heap's region into its parent's blocks, or takes
 * it out when the heap stops existing. */
static int carve(struct fragtrack *t, struct theap *h)
{
    struct theap *p = h->parent >= 0 && h->parent <= UINT32_MAX && h->parent != h->id
                          ? heap_find(t, (uint32_t)h->parent) : NULL;
    int want = nested_in(t, h) != NULL;
    struct bpos pos;

    if (want == h->carved)
        return 0;
    if (pool_room(t))
        return -ENOMEM;
    if (!want) {
        if (p && bt_seek(&t->pool, &p->blocks, h->base, &pos) &&
            LF(&t->pool, pos.leaf)->f[pos.i])
            unlink_entry(t, p, &pos);
        h->carved = 0;
        return 0;
    }
    /* a block of the parent is there: the region is inside the parent
     * (nested_in), but not an entry of its own (tried again at the next
     * declaration) */
    if (bt_seek(&t->pool, &p->blocks, h->base, &pos))
        return 0;
    link_entry(t, p, h->base, 0, h->end - h->base, 1);
    h->carved = 1;
    return 0;
}

int fragtrack__heap(struct fragtrack *t, const struct frag_heap *fh, int exists)
{
    struct theap *h = heap_find(t, fh->id);
    int bounded = fh->size != 0;
    if (h) {
        if (h->bounded != bounded || (bounded && (h->base != fh->base ||
                                                  h->end != end_of(fh->base, fh->size))))
            return -EINVAL;
        h->exists = exists;
        return carve(t, h);
    }
    if (pool_room(t) || !(h = heap_add(t, fh->id)))
        return -ENOMEM;
    h->exists = exists;
    h->parent = fh->parent;
    if (fh->region && bounded) {       /* no holes of its own */
        h->region = h->bounded = 1;
        h->base = fh->base;
        h->end = end_of(fh->base, fh->size);
    } else if (bounded) {
        struct nb none = { 0, 0, 0 };
        h->bounded = 1;
        h->base = fh->base;
        h->end = end_of(fh->base, fh->size);
        h->min_hole = min_hole_of(&t->o, 1);
        gap_account(t, h, none, none, 1);  /* empty: one hole, the whole region */
    }
    return carve(t, h);
}

/* ---- pages ---- */

static inline size_t pslot(uint64_t k, size_t mask)
{
    return (size_t)((k * 0x9e3779b97f4a7c15ull) >> 20) & mask;
}

static size_t pm_home(const void *slot, size_t mask)
{
    return pslot(((const struct pslot *)slot)->key, mask);
}

static int pm_used(const void *slot)
{
    return ((const struct pslot *)slot)->key != 0;
}

static const struct oa_kind pm_kind = { sizeof(struct pslot), pm_home, pm_used };

static int pmap_reserve(struct pmap *m, size_t k)
{
    return oa_reserve((void **)&m->s, &m->mask, m->count, k, &pm_kind);
}

/* What a page with raw occupancy `occ` adds to the page numbers. */
static void page_count(struct fragtrack *t, uint64_t occ, int sign)
{
    uint64_t P = t->o.page_size, m = sign > 0 ? 1 : (uint64_t)-1;
    if (!occ)
        return;
    if (occ > P)
        occ = P;
    t->pages += m;
    t->used += m * occ;
    if (occ < t->thr) {
        t->sparse += m;
        t->pinned += m * (P - occ);
    }
}

struct pedit {
    struct fragtrack *t;
    int sign;
};

static void pm_edge(void *arg, uint64_t page, size_t i, uint64_t ov)
{
    struct pedit *e = arg;
    struct fragtrack *t = e->t;
    struct pmap *m = &t->pm;
    uint64_t k = page + 1;
    size_t s = pslot(k, m->mask);
    (void)i;
    while (m->s[s].key && m->s[s].key != k)
        s = (s + 1) & m->mask;
    if (!m->s[s].key) {
        if (e->sign < 0)
            return;                /* not there: nothing to take away */
        m->s[s].key = k;
        m->s[s].occ = 0;
        m->count++;
    }
    page_count(t, m->s[s].occ, -1);
    m->s[s].occ += e->sign > 0 ? ov : (uint64_t)-ov;
    page_count(t, m->s[s].occ, 1);
    if (m->s[s].occ)
        return;
    m->count--;                    /* empty */
    oa_remove(m->s, m->mask, s, &pm_kind);
}

static void block_pages_edit(struct fragtrack *t, uint64_t addr, uint64_t usable, int sign)
{
    struct pedit e = { t, sign };
    uint64_t full = 0;
    block_pages(addr, usable, t->o.page_size, 0, pm_edge, &full, &e);
    t->full += sign > 0 ? full : (uint64_t)-full;
}

/* ---- block changes ---- */

static void count_block(struct fragtrack *t, struct theap *h, uint64_t addr, uint64_t size,
                        uint64_t usable, int sign)
{
    uint64_t m = sign > 0 ? 1 : (uint64_t)-1;
    block_pages_edit(t, addr, usable, sign);
    h->n += m;
    h->requested += m * size;
    h->usable += m * usable;
    t->blocks += m;
    t->requested += m * size;
    t->usable += m * usable;
}

/* Takes out the entry at pos (found by bt_seek). */
static void unlink_entry(struct fragtrack *t, struct theap *h, struct bpos *pos)
{
    struct bpool *p = &t->pool;
    const struct bleaf *l = LF(p, pos->leaf);
    uint64_t addr = l->key[pos->i], usable = l->a[pos->i], size = l->b[pos->i];
    int pseudo = l->f[pos->i];
    uint32_t pl, pi = 0, sl, si = 0;

    pl = bt_before(p, pos->leaf, pos->i, &pi);
    sl = bt_from(p, pos->leaf, pos->i + 1, &si);
    struct nb pr = nb_at(p, pl, pi), x = { 1, addr, usable }, su = nb_at(p, sl, si);
    gap_account(t, h, pr, x, -1);
    gap_account(t, h, x, su, -1);
    gap_account(t, h, pr, su, 1);
    /* the holes' changes left the blocks tree as it was: pos holds */
    bt_delete(p, &h->blocks, pos);
    if (pseudo)
        h->nested_bytes -= usable;
    else
        count_block(t, h, addr, size, usable, -1);
}

/* Room was reserved by the caller; addr is not in the blocks. */
static void link_entry(struct fragtrack *t, struct theap *h, uint64_t addr, uint64_t size,
                       uint64_t usable, int pseudo)
{
    struct bpool *p = &t->pool;
    struct bpos pos;
    uint32_t pl, pi = 0, sl, si = 0;

    bt_seek(p, &h->blocks, addr, &pos);
    pl = bt_before(p, pos.leaf, pos.i, &pi);
    sl = bt_from(p, pos.leaf, pos.i, &si);
    struct nb pr = nb_at(p, pl, pi), x = { 1, addr, usable }, su = nb_at(p, sl, si);
    gap_account(t, h, pr, su, -1);
    gap_account(t, h, pr, x, 1);
    gap_account(t, h, x, su, 1);
    bt_insert(p, &h->blocks, &pos, addr, usable, size, (uint8_t)pseudo);
    if (pseudo)
        h->nested_bytes += usable;
    else
        count_block(t, h, addr, size, usable, 1);
}

/* The block (not a nested region) at addr: 1 with pos set, or 0. */
static int block_at(const struct fragtrack *t, const struct theap *h, uint64_t addr,
                    struct bpos *pos)
{
    return h && bt_seek(&t->pool, &h->blocks, addr, pos) && !LF(&t->pool, pos->leaf)->f[pos->i];
}

/* Node and page room for one block change (a block spans at most two edge
 * pages; a change adds at most one block and two holes). */
static int reserve(struct fragtrack *t)
{
    return pool_room(t) || pmap_reserve(&t->pm, 2) ? -ENOMEM : 0;
}

int fragtrack__add(struct fragtrack *t, const struct vh_block *b)
{
    struct theap *h = heap_find(t, b->heap_id);
    struct bpos pos;
    if (reserve(t) || (!h && !(h = heap_add(t, b->heap_id))))
        return -ENOMEM;
    if (bt_seek(&t->pool, &h->blocks, b->addr, &pos))
        return -EEXIST;
    link_entry(t, h, b->addr, b->size, b->usable, 0);
    return 0;
}

int fragtrack__remove(struct fragtrack *t, uint32_t heap, uint64_t addr)
{
    struct theap *h = heap_find(t, heap);
    struct bpos pos;
    if (!block_at(t, h, addr, &pos))
        return -ENOENT;
    if (reserve(t))                    /* the gap it leaves may be a new hole */
        return -ENOMEM;
    unlink_entry(t, h, &pos);
    return 0;
}

/* In place: the block keeps its address, so only the gap after it and its
 * pages change. */
int fragtrack__resize(struct fragtrack *t, uint32_t heap, uint64_t addr, uint64_t size,
                      uint64_t usable)
{
    struct theap *h = heap_find(t, heap);
    struct bpool *p = &t->pool;
    struct bpos pos;
    uint32_t sl, si = 0;
    if (!block_at(t, h, addr, &pos))
        return -ENOENT;
    if (reserve(t))
        return -ENOMEM;
    struct bleaf *l = LF(p, pos.leaf);
    uint64_t osize = l->b[pos.i], ousable = l->a[pos.i];
    sl = bt_from(p, pos.leaf, pos.i + 1, &si);
    struct nb su = nb_at(p, sl, si), was = { 1, addr, ousable }, now = { 1, addr, usable };
    gap_account(t, h, was, su, -1);
    gap_account(t, h, now, su, 1);
    l = LF(p, pos.leaf);
    l->a[pos.i] = usable;
    l->b[pos.i] = size;
    count_block(t, h, addr, osize, ousable, -1);
    count_block(t, h, addr, size, usable, 1);
    return 0;
}

int fragtrack__move(struct fragtrack *t, uint32_t heap, uint64_t from, uint64_t to)
{
    struct theap *h = heap_find(t, heap);
    struct bpos pos, dst;
    uint64_t size, usable;
    if (!block_at(t, h, from, &pos))
        return -ENOENT;
    if (from == to)
        return 0;
    if (bt_seek(&t->pool, &h->blocks, to, &dst))
        return -EEXIST;
    if (reserve(t))                    /* (positions are indices: they hold) */
        return -ENOMEM;
    size = LF(&t->pool, pos.leaf)->b[pos.i];
    usable = LF(&t->pool, pos.leaf)->a[pos.i];
    unlink_entry(t, h, &pos);
    link_entry(t, h, to, size, usable, 0);
    return 0;
}

/* Reads the way down to where addr is or would go, and starts loading the
 * lines that a change there reads: the leaf's keys and the page slots of
 * [addr, addr + usable). The inner nodes are few and mostly in cache; the
 * leaves and the pages are not, and a caller that hints a few events ahead
 * has them arrive while it works on earlier ones. */
void fragtrack__prefetch(const struct fragtrack *t, uint32_t heap, uint64_t addr, uint64_t usable,
                         int near)
{
    const struct theap *h = heap_find(t, heap);
    const struct bpool *p = &t->pool;
    const struct pmap *m = &t->pm;
    uint64_t P = t->o.page_size, pf = addr / P, pl = (end_of(addr, usable) - 1) / P;
    uint32_t x, d;

    if (near) {
        __builtin_prefetch(&m->s[pslot(pf + 1, m->mask)]);
        if (usable && pl != pf)
            __builtin_prefetch(&m->s[pslot(pl + 1, m->mask)]);
    }
    if (!h || !(x = h->blocks.root))
        return;
    /* far: down to the lowest inner level, whose nodes are many; near (that
     * node has arrived): down to the leaf */
    for (d = h->blocks.height; d > (near ? 0u : 1u); d--) {
        const struct binner *in = IN(p, x);
        x = in->child[count_upto(in->key, in->n, addr)];
    }
    const char *node = d ? (const char *)&p->in[x] : (const char *)&p->l[x];
    size_t size = d ? sizeof p->in[x] : sizeof p->l[x];
    for (size_t o = 0; o < size; o += 64)
        __builtin_prefetch(node + o);
}

void fragtrack__totals(const struct fragtrack *t, struct frag_totals *out)
{
    const struct bpool *p = &t->pool;
    memset(out, 0, sizeof *out);
    out->blocks = t->blocks;
    out->requested = t->requested;
    out->usable = t->usable;
    out->pages = t->pages + t->full;
    out->page_bytes_used = t->used + t->full * t->o.page_size;
    out->sparse_pages = t->sparse;
    out->pinned = t->pinned;
    for (size_t i = 0; i < t->nh; i++) {
        const struct theap *h = &t->h[i];
        if (!h->exists || h->region)
            continue;
        if (h->bounded) {
            /* a nested heap is in its parent's footprint, carved or not
             * (frag_loomsim: a road declared while the loom held a block
             * at its base counted twice, about 1 run in 12) */
            const struct theap *ph = nested_in(t, h);
            out->regions++;
            if (!ph || !ph->exists)
                out->footprint += h->end - h->base;
            if (h->n) {
                /* the own blocks at both ends, nested regions passed over
                 * (h->n > 0: both walks stop at a block) */
                uint64_t outside = 0, span, inside;
                uint32_t lo = h->blocks.first, li = 0, hi = h->blocks.last, hj;
                for (; LF(p, lo)->f[li]; lo = bt_from(p, lo, li + 1, &li))
                    outside += LF(p, lo)->a[li];
                hj = LF(p, hi)->n - 1;
                for (; LF(p, hi)->f[hj]; hi = bt_before(p, hi, hj, &hj))
                    outside += LF(p, hi)->a[hj];
                span = end_of(LF(p, hi)->key[hj], LF(p, hi)->a[hj]) - LF(p, lo)->key[li];
                inside = h->nested_bytes - outside;
                out->reclaim += span > h->usable + inside ? span - h->usable - inside : 0;
            }
        } else if (h->n) {
            out->regions += h->g.seps + 1;
            out->footprint += h->usable + h->g.overhead + h->g.free;
        }
        out->free += h->g.free;
        out->holes += h->g.holes;
        out->overhead += h->g.overhead;
        out->unusable += h->g.unusable;
        for (int f = 0; f < FRAG_NFIT; f++)
            out->fit[f] += h->g.fit[f];
        if (h->holes.last) {
            const struct bleaf *l = LF(p, h->holes.last);
            if (l->key[l->n - 1] > out->largest)
                out->largest = l->key[l->n - 1];
        }
    }
}
