/* frag.c — the fragmentation numbers of frag.h: frag__analyze() walks one
 * sorted live set (regions, holes, pages, size classes, stacks), fragtrack
 * keeps the headline numbers current through single block changes. Both
 * classify gaps and count pages with the same small functions, so that the
 * two give equal totals for equal sets (tests/unit/test_frag.c checks). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/frag.h"

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
    return p >= 16 && p <= (1ull << 40) && !(p & (p - 1)) && o->sparse_pct <= 100;
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
    uint64_t *keys;               /* (heap << 32 | stack) + 1; 0 = empty   */
    uint32_t *idx;
    size_t mask;
    struct frag_stack *v;
    size_t n;
};

static int smap_init(struct smap *m, size_t want)
{
    size_t cap = 64;
    while (cap < want * 2)
        cap *= 2;
    m->mask = cap - 1;
    m->keys = calloc(cap, sizeof *m->keys);
    m->idx = calloc(cap, sizeof *m->idx);
    m->v = calloc(want ? want : 1, sizeof *m->v);
    m->n = 0;
    return m->keys && m->idx && m->v ? 0 : -ENOMEM;
}

static void smap_free(struct smap *m)
{
    free(m->keys);
    free(m->idx);
    free(m->v);
}

/* The entry of (heap, stack); created when `create` (room was made by
 * smap_init for one entry per block). NULL if absent. */
static struct frag_stack *smap_get(struct smap *m, uint32_t heap, uint32_t stack, int create)
{
    uint64_t k = ((uint64_t)heap << 32 | stack) + 1;
    size_t i = (size_t)((k * 0x9e3779b97f4a7c15ull) >> 17) & m->mask;
    for (; m->keys[i]; i = (i + 1) & m->mask)
        if (m->keys[i] == k)
            return &m->v[m->idx[i]];
    if (!create)
        return NULL;
    m->keys[i] = k;
    m->idx[i] = (uint32_t)m->n;
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
    if (s->nm == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct member *m = realloc(s->m, cap * sizeof *m);
        if (!m) {
            s->oom = 1;
            return;
        }
        s->m = m;
        s->cap = cap;
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
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1024;
        struct contrib *p = realloc(c->c, cap * sizeof *p);
        if (!p) {
            c->oom = 1;
            return;
        }
        c->c = p;
        c->cap = cap;
    }
    c->c[c->n++] = (struct contrib){ page, ov, i };
}

static int by_page(const void *x, const void *y)
{
    const struct contrib *a = x, *b = y;
    if (a->page != b->page)
        return a->page < b->page ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
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
    if (rb->n == rb->cap) {
        size_t cap = rb->cap ? rb->cap * 2 : 16;
        struct frag_region *p = realloc(rb->r, cap * sizeof *p);
        if (!p)
            return NULL;
        rb->r = p;
        rb->cap = cap;
    }
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
    if (a->parent != b->parent)
        return a->parent < b->parent ? -1 : 1;
    return (a->lo > b->lo) - (a->lo < b->lo);
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
    return (a->id > b->id) - (a->id < b->id);
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
    if (a->heap_id != b->heap_id)
        return a->heap_id < b->heap_id ? -1 : 1;
    return (a->stack_id > b->stack_id) - (a->stack_id < b->stack_id);
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
        if ((rc = heap_regions(&rb, r->hist, blocks, i, j - i, id, fh, fh && nested[h],
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

/* ---- treaps -----------------------------------------------------------------
 * Nodes in one pool, addressed by index (0 = none), so that growing the pool
 * moves nothing that a caller holds. Blocks: key = address, a = usable,
 * b = requested. Holes: key = size (duplicates allowed). */
struct tnode {
    uint64_t key, a, b;
    uint32_t l, r, pri;
    uint32_t pseudo;               /* a nested heap's region, not a block   */
};

struct pool {
    struct tnode *n;
    uint32_t len, cap, free, nfree;
    uint32_t seed;
};

#define N(p, x) ((p)->n[x])

/* Room for `k` more nodes, so that an update cannot fail halfway. */
static int pool_reserve(struct pool *p, uint32_t k)
{
    if (p->cap - p->len + p->nfree >= k)
        return 0;
    if (p->cap > UINT32_MAX / 2 - k)
        return -ENOMEM;
    uint32_t cap = p->cap ? p->cap * 2 : 1024;
    while (cap - p->len < k)
        cap *= 2;
    struct tnode *nn = realloc(p->n, (size_t)cap * sizeof *nn);
    if (!nn)
        return -ENOMEM;
    p->n = nn;
    p->cap = cap;
    if (!p->len)
        p->len = 1;                /* index 0 is "none" */
    return 0;
}

static uint32_t node_new(struct pool *p, uint64_t key, uint64_t a, uint64_t b)
{
    uint32_t x;
    if (p->free) {
        x = p->free;
        p->free = N(p, x).l;
        p->nfree--;
    } else {
        x = p->len++;
    }
    p->seed ^= p->seed << 13;
    p->seed ^= p->seed >> 17;
    p->seed ^= p->seed << 5;
    N(p, x) = (struct tnode){ .key = key, .a = a, .b = b, .pri = p->seed };
    return x;
}

static void node_free(struct pool *p, uint32_t x)
{
    N(p, x).l = p->free;
    p->free = x;
    p->nfree++;
}

/* t into keys < key (*a) and keys >= key (*b). */
static void split(struct pool *p, uint32_t t, uint64_t key, uint32_t *a, uint32_t *b)
{
    if (!t) {
        *a = *b = 0;
        return;
    }
    if (N(p, t).key < key) {
        split(p, N(p, t).r, key, &N(p, t).r, b);
        *a = t;
    } else {
        split(p, N(p, t).l, key, a, &N(p, t).l);
        *b = t;
    }
}

/* Every key of a <= every key of b. */
static uint32_t merge(struct pool *p, uint32_t a, uint32_t b)
{
    if (!a || !b)
        return a ? a : b;
    if (N(p, a).pri > N(p, b).pri) {
        N(p, a).r = merge(p, N(p, a).r, b);
        return a;
    }
    N(p, b).l = merge(p, a, N(p, b).l);
    return b;
}

/* Inserts x (its key not in the tree): down to where its priority
 * belongs, then the subtree there is split around it. */
static void t_insert(struct pool *p, uint32_t *root, uint32_t x)
{
    uint32_t *link = root;
    uint64_t key = N(p, x).key;
    while (*link && N(p, *link).pri >= N(p, x).pri)
        link = key < N(p, *link).key ? &N(p, *link).l : &N(p, *link).r;
    split(p, *link, key, &N(p, x).l, &N(p, x).r);
    *link = x;
}

/* Takes the node with `key` out (keys are unique); returns it, not freed,
 * or 0. */
static uint32_t t_erase(struct pool *p, uint32_t *root, uint64_t key)
{
    uint32_t *link = root, x;
    while (*link && N(p, *link).key != key)
        link = key < N(p, *link).key ? &N(p, *link).l : &N(p, *link).r;
    if (!(x = *link))
        return 0;
    *link = merge(p, N(p, x).l, N(p, x).r);
    return x;
}

/* The node with `key` (or 0), and its neighbours, in one descent. */
static uint32_t t_locate(const struct pool *p, uint32_t t, uint64_t key, uint32_t *pred,
                         uint32_t *succ)
{
    uint32_t pr = 0, su = 0, x = 0;
    while (t) {
        if (key < N(p, t).key) {
            su = t;
            t = N(p, t).l;
        } else if (key > N(p, t).key) {
            pr = t;
            t = N(p, t).r;
        } else {
            x = t;
            break;
        }
    }
    if (x && (t = N(p, x).l)) {
        while (N(p, t).r)
            t = N(p, t).r;
        pr = t;
    }
    if (x && (t = N(p, x).r)) {
        while (N(p, t).l)
            t = N(p, t).l;
        su = t;
    }
    *pred = pr;
    *succ = su;
    return x;
}

static uint32_t t_find(const struct pool *p, uint32_t t, uint64_t key)
{
    while (t && N(p, t).key != key)
        t = key < N(p, t).key ? N(p, t).l : N(p, t).r;
    return t;
}

static uint32_t t_pred(const struct pool *p, uint32_t t, uint64_t key)
{
    uint32_t best = 0;
    while (t) {
        if (N(p, t).key < key) {
            best = t;
            t = N(p, t).r;
        } else {
            t = N(p, t).l;
        }
    }
    return best;
}

static uint32_t t_succ(const struct pool *p, uint32_t t, uint64_t key)
{
    uint32_t best = 0;
    while (t) {
        if (N(p, t).key > key) {
            best = t;
            t = N(p, t).l;
        } else {
            t = N(p, t).r;
        }
    }
    return best;
}

static uint32_t t_min(const struct pool *p, uint32_t t)
{
    while (t && N(p, t).l)
        t = N(p, t).l;
    return t;
}

static uint32_t t_max(const struct pool *p, uint32_t t)
{
    while (t && N(p, t).r)
        t = N(p, t).r;
    return t;
}

/* ---- fragtrack ---------------------------------------------------------------- */

struct theap {
    uint32_t id;
    int bounded, exists;
    int64_t parent;                /* id, -1 for none                       */
    int carved;                    /* its region is a node in the parent's  */
    uint64_t nested_bytes;         /* nested regions in its own blocks      */
    uint64_t base, end, min_hole;
    uint32_t blocks, holes;        /* treap roots                           */
    uint64_t n, requested, usable;
    struct gapsum g;
};

struct pmap {                      /* edge page -> occupied bytes           */
    uint64_t *key;                 /* page + 1; 0 = empty                   */
    uint64_t *occ;
    size_t mask, count;
};

struct fragtrack {
    struct frag_opts o;
    uint64_t thr;
    struct pool pool;
    struct theap *h;
    size_t nh, caph;
    uint32_t *hidx;                /* heap id hash: index + 1               */
    size_t hmask;
    struct pmap pm;
    uint64_t full;                 /* pages inside blocks                   */
    uint64_t blocks, requested, usable;
    uint64_t pages, used, sparse, pinned;   /* of the edge pages            */
};

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
    t->pool.seed = 0x9e3779b9u;
    t->hmask = 63;
    t->pm.mask = 1023;
    if (!(t->hidx = calloc(t->hmask + 1, sizeof *t->hidx)) ||
        !(t->pm.key = calloc(t->pm.mask + 1, sizeof *t->pm.key)) ||
        !(t->pm.occ = calloc(t->pm.mask + 1, sizeof *t->pm.occ)) || pool_reserve(&t->pool, 8)) {
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
    free(t->pool.n);
    free(t->h);
    free(t->hidx);
    free(t->pm.key);
    free(t->pm.occ);
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
    if (t->nh == t->caph) {
        size_t cap = t->caph ? t->caph * 2 : 8;
        struct theap *nh = realloc(t->h, cap * sizeof *nh);
        if (!nh)
            return NULL;
        t->h = nh;
        t->caph = cap;
    }
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

/* The gap between block nodes p and s (0 = a bound, or none). */
static void gap_account(struct fragtrack *t, struct theap *h, uint32_t p, uint32_t s, int sign)
{
    struct pool *pl = &t->pool;
    uint64_t g;
    enum gap_kind k;

    if (h->bounded) {
        uint64_t lo = p ? end_of(N(pl, p).key, N(pl, p).a) : h->base;
        uint64_t hi = s ? N(pl, s).key : h->end;
        g = clamp_gap(lo, hi, h->base, h->end);
        k = gap_kind(g, 1, h->min_hole, 0);
    } else {
        if (!p || !s)
            return;
        uint64_t pend = end_of(N(pl, p).key, N(pl, p).a);
        g = N(pl, s).key > pend ? N(pl, s).key - pend : 0;
        k = gap_kind(g, 0, h->min_hole, t->o.cluster_gap);
    }
    gapsum_add(&h->g, g, k, t->o.page_size, sign);
    if (k != GAP_HOLE)
        return;
    /* holes: one node per distinct size, `a` counting them */
    uint32_t x = t_find(pl, h->holes, g);
    if (sign > 0) {
        if (x)
            N(pl, x).a++;
        else
            t_insert(pl, &h->holes, node_new(pl, g, 1, 0));
    } else if (x && !--N(pl, x).a) {
        t_erase(pl, &h->holes, g);
        node_free(pl, x);
    }
}

static void link_node(struct fragtrack *t, struct theap *h, uint64_t addr, uint64_t size,
                      uint64_t usable, int pseudo);
static void unlink_node(struct fragtrack *t, struct theap *h, uint32_t x);

/* Puts an existing nested heap's region into its parent's blocks, or takes
 * it out when the heap stops existing. */
static int carve(struct fragtrack *t, struct theap *h)
{
    struct theap *p = h->parent >= 0 && h->parent <= UINT32_MAX && h->parent != h->id
                          ? heap_find(t, (uint32_t)h->parent) : NULL;
    int want = h->exists && h->bounded && p && p->bounded;
    uint32_t x;

    if (want == h->carved)
        return 0;
    if (!want) {
        x = p ? t_find(&t->pool, p->blocks, h->base) : 0;
        if (x && N(&t->pool, x).pseudo)
            unlink_node(t, p, x);
        h->carved = 0;
        return 0;
    }
    if (pool_reserve(&t->pool, 4))
        return -ENOMEM;
    if (t_find(&t->pool, p->blocks, h->base))
        return 0;                    /* a block of the parent is there */
    link_node(t, p, h->base, 0, h->end - h->base, 1);
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
    if (pool_reserve(&t->pool, 4) || !(h = heap_add(t, fh->id)))
        return -ENOMEM;
    h->exists = exists;
    h->parent = fh->parent;
    if (bounded) {
        h->bounded = 1;
        h->base = fh->base;
        h->end = end_of(fh->base, fh->size);
        h->min_hole = min_hole_of(&t->o, 1);
        gap_account(t, h, 0, 0, 1);      /* empty: one hole, the whole region */
    }
    return carve(t, h);
}

/* ---- pages ---- */

static inline size_t pslot(uint64_t k, size_t mask)
{
    return (size_t)((k * 0x9e3779b97f4a7c15ull) >> 20) & mask;
}

static int pmap_reserve(struct pmap *m, size_t k)
{
    if ((m->count + k) * 2 <= m->mask + 1)
        return 0;
    size_t n = (m->mask + 1) * 2;
    while ((m->count + k) * 2 > n)
        n *= 2;
    uint64_t *key = calloc(n, sizeof *key), *occ = calloc(n, sizeof *occ);
    if (!key || !occ) {
        free(key);
        free(occ);
        return -ENOMEM;
    }
    for (size_t i = 0; i <= m->mask; i++) {
        if (!m->key[i])
            continue;
        size_t j = pslot(m->key[i], n - 1);
        while (key[j])
            j = (j + 1) & (n - 1);
        key[j] = m->key[i];
        occ[j] = m->occ[i];
    }
    free(m->key);
    free(m->occ);
    m->key = key;
    m->occ = occ;
    m->mask = n - 1;
    return 0;
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
    while (m->key[s] && m->key[s] != k)
        s = (s + 1) & m->mask;
    if (!m->key[s]) {
        if (e->sign < 0)
            return;                /* not there: nothing to take away */
        m->key[s] = k;
        m->occ[s] = 0;
        m->count++;
    }
    page_count(t, m->occ[s], -1);
    m->occ[s] += e->sign > 0 ? ov : (uint64_t)-ov;
    page_count(t, m->occ[s], 1);
    if (m->occ[s])
        return;
    /* empty: backward-shift deletion keeps probe chains whole */
    size_t i0 = s;
    m->key[i0] = 0;
    m->count--;
    for (size_t j = (i0 + 1) & m->mask; m->key[j]; j = (j + 1) & m->mask) {
        size_t h = pslot(m->key[j], m->mask);
        if ((j > i0 && (h <= i0 || h > j)) || (j < i0 && (h <= i0 && h > j))) {
            m->key[i0] = m->key[j];
            m->occ[i0] = m->occ[j];
            m->key[j] = 0;
            i0 = j;
        }
    }
}

static void block_pages_edit(struct fragtrack *t, uint64_t addr, uint64_t usable, int sign)
{
    struct pedit e = { t, sign };
    uint64_t full = 0;
    block_pages(addr, usable, t->o.page_size, 0, pm_edge, &full, &e);
    t->full += sign > 0 ? full : (uint64_t)-full;
}

/* ---- block changes ---- */

static void unlink_node(struct fragtrack *t, struct theap *h, uint32_t x)
{
    struct pool *p = &t->pool;
    uint64_t addr = N(p, x).key;
    uint32_t pr, su;
    t_locate(p, h->blocks, addr, &pr, &su);
    gap_account(t, h, pr, x, -1);
    gap_account(t, h, x, su, -1);
    gap_account(t, h, pr, su, 1);
    t_erase(p, &h->blocks, addr);
    if (N(p, x).pseudo)
        h->nested_bytes -= N(p, x).a;
    else {
        block_pages_edit(t, addr, N(p, x).a, -1);
        h->n--;
        h->requested -= N(p, x).b;
        h->usable -= N(p, x).a;
        t->blocks--;
        t->requested -= N(p, x).b;
        t->usable -= N(p, x).a;
    }
    node_free(p, x);
}

/* Room was reserved by the caller. */
static void link_node(struct fragtrack *t, struct theap *h, uint64_t addr, uint64_t size,
                      uint64_t usable, int pseudo)
{
    struct pool *p = &t->pool;
    uint32_t pr, su;
    t_locate(p, h->blocks, addr, &pr, &su);
    uint32_t x = node_new(p, addr, usable, size);
    N(p, x).pseudo = (uint32_t)pseudo;
    gap_account(t, h, pr, su, -1);
    gap_account(t, h, pr, x, 1);
    gap_account(t, h, x, su, 1);
    t_insert(p, &h->blocks, x);
    if (pseudo) {
        h->nested_bytes += usable;
        return;
    }
    block_pages_edit(t, addr, usable, 1);
    h->n++;
    h->requested += size;
    h->usable += usable;
    t->blocks++;
    t->requested += size;
    t->usable += usable;
}

/* The block (not a nested region) at addr, or 0. */
static uint32_t block_at(const struct fragtrack *t, const struct theap *h, uint64_t addr)
{
    uint32_t x = h ? t_find(&t->pool, h->blocks, addr) : 0;
    return x && !N(&t->pool, x).pseudo ? x : 0;
}

/* Node and page room for one block change (a block spans at most two edge
 * pages; a change adds at most one block and two holes). */
static int reserve(struct fragtrack *t)
{
    return pool_reserve(&t->pool, 4) || pmap_reserve(&t->pm, 2) ? -ENOMEM : 0;
}

int fragtrack__add(struct fragtrack *t, const struct vh_block *b)
{
    struct theap *h = heap_find(t, b->heap_id);
    if (reserve(t) || (!h && !(h = heap_add(t, b->heap_id))))
        return -ENOMEM;
    if (t_find(&t->pool, h->blocks, b->addr))
        return -EEXIST;
    link_node(t, h, b->addr, b->size, b->usable, 0);
    return 0;
}

int fragtrack__remove(struct fragtrack *t, uint32_t heap, uint64_t addr)
{
    struct theap *h = heap_find(t, heap);
    uint32_t x = block_at(t, h, addr);
    if (!x)
        return -ENOENT;
    unlink_node(t, h, x);
    return 0;
}

int fragtrack__resize(struct fragtrack *t, uint32_t heap, uint64_t addr, uint64_t size,
                      uint64_t usable)
{
    struct theap *h = heap_find(t, heap);
    uint32_t x = block_at(t, h, addr);
    if (!x)
        return -ENOENT;
    if (reserve(t))
        return -ENOMEM;
    unlink_node(t, h, x);
    link_node(t, h, addr, size, usable, 0);
    return 0;
}

int fragtrack__move(struct fragtrack *t, uint32_t heap, uint64_t from, uint64_t to)
{
    struct theap *h = heap_find(t, heap);
    uint32_t x = block_at(t, h, from);
    uint64_t size, usable;
    if (!x)
        return -ENOENT;
    if (from == to)
        return 0;
    if (t_find(&t->pool, h->blocks, to))
        return -EEXIST;
    if (reserve(t))
        return -ENOMEM;
    size = N(&t->pool, x).b;
    usable = N(&t->pool, x).a;
    unlink_node(t, h, x);
    link_node(t, h, to, size, usable, 0);
    return 0;
}

void fragtrack__totals(const struct fragtrack *t, struct frag_totals *out)
{
    const struct pool *p = &t->pool;
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
        uint32_t m;
        if (!h->exists)
            continue;
        if (h->bounded) {
            const struct theap *ph = h->carved ? heap_find(t, (uint32_t)h->parent) : NULL;
            out->regions++;
            if (!ph || !ph->exists)
                out->footprint += h->end - h->base;
            if (h->n) {
                /* the own blocks at both ends, nested regions passed over */
                uint64_t outside = 0, span, inside;
                uint32_t lo = t_min(p, h->blocks), hi = t_max(p, h->blocks);
                for (; N(p, lo).pseudo; lo = t_succ(p, h->blocks, N(p, lo).key))
                    outside += N(p, lo).a;
                for (; N(p, hi).pseudo; hi = t_pred(p, h->blocks, N(p, hi).key))
                    outside += N(p, hi).a;
                span = end_of(N(p, hi).key, N(p, hi).a) - N(p, lo).key;
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
        if ((m = t_max(p, h->holes)) && N(p, m).key > out->largest)
            out->largest = N(p, m).key;
    }
}
