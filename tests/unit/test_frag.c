/* test_frag.c — analyze/query/frag.c on synthetic live sets: slack and size
 * classes, page occupancy and pinned bytes charged to stacks, holes in a
 * heap with bounds and in clusters of a heap without, nested heaps carved
 * from their parent, bad input; and fragtrack, kept up to date through
 * random allocations, frees, resizes, moves and heap lifetimes, giving the
 * totals frag__analyze() gives for the same set at every step. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/query/frag.h"

static struct vh_block blk(uint32_t heap, uint64_t addr, uint64_t size, uint64_t usable,
                           uint32_t stack)
{
    return (struct vh_block){ .addr = addr, .size = size, .usable = usable, .heap_id = heap,
                              .stack_id = stack };
}

static void same_totals(const struct frag_totals *x, const struct frag_totals *y)
{
#define SAME(f) assert_int_equal(x->f, y->f)
    SAME(blocks); SAME(requested); SAME(usable);
    SAME(pages); SAME(page_bytes_used); SAME(sparse_pages); SAME(pinned);
    SAME(regions); SAME(footprint); SAME(free); SAME(holes); SAME(largest);
    SAME(overhead); SAME(unusable); SAME(fit[0]); SAME(fit[1]); SAME(fit[2]); SAME(reclaim);
#undef SAME
}

/* frag__analyze, and a fragtrack fed the same set must agree with it. */
static struct frag_report *analyze(const struct vh_block *b, size_t n, const struct frag_heap *h,
                                   size_t nh, const struct frag_opts *o)
{
    struct frag_report *r = NULL;
    struct fragtrack *t = NULL;
    struct frag_totals x;
    assert_int_equal(frag__analyze(b, n, h, nh, o, &r), 0);
    assert_non_null(r);
    assert_int_equal(fragtrack__new(o, &t), 0);
    for (size_t i = 0; i < nh; i++)
        assert_int_equal(fragtrack__heap(t, &h[i], 1), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(fragtrack__add(t, &b[i]), 0);
    fragtrack__totals(t, &x);
    same_totals(&x, &r->t);
    fragtrack__free(t);
    return r;
}

static const struct frag_stack *stack_of(const struct frag_report *r, uint32_t id)
{
    for (size_t i = 0; i < r->nstacks; i++)
        if (r->stacks[i].stack_id == id)
            return &r->stacks[i];
    fail_msg("no stack %u", id);
    return NULL;
}

static void test_slack_and_classes(void **state)
{
    (void)state;
    struct frag_opts o;
    frag_opts__default(&o);
    const struct vh_block b[] = {
        blk(0, 0x1000, 10, 24, 1),  blk(0, 0x1020, 16, 24, 1), blk(0, 0x1040, 17, 24, 2),
        blk(0, 0x1060, 100, 104, 2), blk(0, 0x2000, 5000, 5008, 3),
    };
    struct frag_report *r = analyze(b, 5, NULL, 0, &o);
    assert_int_equal(r->t.blocks, 5);
    assert_int_equal(r->t.requested, 10 + 16 + 17 + 100 + 5000);
    assert_int_equal(r->t.usable, 24 + 24 + 24 + 104 + 5008);
    /* classes: [0,16] holds 10 and 16; (16,32] 17; (64,128] 100; (4K,8K] 5000 */
    assert_int_equal(r->nclasses, 4);
    assert_int_equal(r->classes[0].lo, 0);
    assert_int_equal(r->classes[0].hi, 16);
    assert_int_equal(r->classes[0].blocks, 2);
    assert_int_equal(r->classes[0].usable - r->classes[0].requested, 22);
    assert_int_equal(r->classes[1].lo, 17);
    assert_int_equal(r->classes[1].hi, 32);
    assert_int_equal(r->classes[2].lo, 65);
    assert_int_equal(r->classes[2].hi, 128);
    assert_int_equal(r->classes[3].lo, 4097);
    assert_int_equal(r->classes[3].hi, 8192);
    assert_int_equal(r->classes[3].requested, 5000);
    /* stacks by slack + pinned: stack 1 has slack 22, stack 2 11, stack 3 8 */
    assert_int_equal(r->nstacks, 3);
    assert_int_equal(stack_of(r, 1)->blocks, 2);
    assert_int_equal(stack_of(r, 1)->usable - stack_of(r, 1)->requested, 22);
    frag_report__free(r);
}

/* Pages of 4 KiB, sparse below 25 % (1024 B):
 *   page 1: two blocks of 100 B (stacks 1 and 2): 200 used, sparse
 *   pages 2-3: one block of 200 B across the boundary: 96 + 104, both sparse
 *   pages 4-6: one block of 12 KiB from a page start: full (6 edge, 5 inside)
 */
static void test_pages(void **state)
{
    (void)state;
    struct frag_opts o;
    frag_opts__default(&o);
    const struct vh_block b[] = {
        blk(0, 4096, 100, 100, 1), blk(0, 4096 + 200, 100, 100, 2),
        blk(0, 8192 + 4000, 200, 200, 3), blk(0, 16384, 12288, 12288, 4),
    };
    struct frag_report *r = analyze(b, 4, NULL, 0, &o);
    assert_int_equal(r->t.pages, 6);
    assert_int_equal(r->t.page_bytes_used, 200 + 96 + 104 + 3 * 4096);
    assert_int_equal(r->t.sparse_pages, 3);
    assert_int_equal(r->t.pinned, 3896 + 4000 + 3992);
    /* page 1's free bytes split by occupied bytes: 1948 each */
    assert_int_equal(stack_of(r, 1)->pinned, 1948);
    assert_int_equal(stack_of(r, 2)->pinned, 1948);
    assert_int_equal(stack_of(r, 3)->pinned, 4000 + 3992);
    assert_int_equal(stack_of(r, 4)->pinned, 0);
    /* the same with 2 MiB pages: one page, sparse */
    o.page_size = 2u << 20;
    frag_report__free(r);
    r = analyze(b, 4, NULL, 0, &o);
    assert_int_equal(r->t.pages, 1);
    assert_int_equal(r->t.sparse_pages, 1);
    assert_int_equal(r->t.pinned, (2u << 20) - (200 + 200 + 12288));
    /* --sparse 0: nothing is sparse */
    o.page_size = 4096;
    o.sparse_pct = 0;
    frag_report__free(r);
    r = analyze(b, 4, NULL, 0, &o);
    assert_int_equal(r->t.sparse_pages, 0);
    assert_int_equal(r->t.pinned, 0);
    frag_report__free(r);
}

/* Bounds [0x10000, 0x20000): blocks at 0x10000 (0x100), 0x10400 (0x100) and
 * 0x1f000 (0x1000). Holes: 0x300 = 768 and 0x1f000 - 0x10500 = 60160. */
static void test_holes_bounded(void **state)
{
    (void)state;
    struct frag_opts o;
    frag_opts__default(&o);
    const struct vh_block b[] = {
        blk(1, 0x10000, 0x100, 0x100, 1), blk(1, 0x10400, 0x100, 0x100, 1),
        blk(1, 0x1f000, 0x1000, 0x1000, 2),
    };
    const struct frag_heap h = { 1, 0x10000, 0x10000, -1, 0 };
    struct frag_report *r = analyze(b, 3, &h, 1, &o);
    assert_int_equal(r->nregions, 1);
    const struct frag_region *g = &r->regions[0];
    assert_true(g->bounded);
    assert_int_equal(g->lo, 0x10000);
    assert_int_equal(g->hi, 0x20000);
    assert_int_equal(g->free, 768 + 60160);
    assert_int_equal(g->holes, 2);
    assert_int_equal(g->largest, 60160);
    assert_int_equal(g->largest_at, 0x10500);
    assert_int_equal(g->fit[0], 768 + 60160);
    assert_int_equal(g->fit[1], 14 * 4096);
    assert_int_equal(g->fit[2], 0);
    assert_int_equal(g->unusable, 768 + (60160 - 14 * 4096));
    assert_int_equal(g->span, 0x10000);
    assert_int_equal(g->reclaim, 0x10000 - 0x1200);
    assert_int_equal(r->hist[9].holes, 1);          /* [512, 1024) */
    assert_int_equal(r->hist[15].holes, 1);         /* [32 KiB, 64 KiB) */
    assert_int_equal(r->hist[15].bytes, 60160);
    assert_int_equal(r->t.footprint, 0x10000);
    assert_int_equal(r->t.free, 768 + 60160);
    assert_int_equal(r->t.largest, 60160);
    frag_report__free(r);

    /* an empty heap with bounds is one hole; a heap not listed has none */
    r = analyze(NULL, 0, &h, 1, &o);
    assert_int_equal(r->nregions, 1);
    assert_int_equal(r->t.free, 0x10000);
    assert_int_equal(r->t.holes, 1);
    assert_int_equal(r->t.reclaim, 0);
    frag_report__free(r);
}

/* No bounds: runs of blocks split at gaps over 1 MiB; gaps under 32 B are
 * overhead (a glibc chunk header is 8 B). */
static void test_clusters(void **state)
{
    (void)state;
    struct frag_opts o;
    frag_opts__default(&o);
    /* gaps: 8 (overhead), 44, 31 (overhead), 32 (a hole: exactly
     * min-hole), 1 MiB (a hole: exactly the cluster gap), then 1 MiB + 1 */
    const uint64_t far = 1200 + (1u << 20);
    const struct vh_block b[] = {
        blk(0, 1000, 20, 24, 1),       blk(0, 1032, 20, 24, 1),
        blk(0, 1100, 20, 24, 1),       blk(0, 1155, 1, 1, 1),
        blk(0, 1188, 8, 12, 1),        blk(0, far, 8, 8, 1),
        blk(0, far + 8 + (1u << 20) + 1, 100, 104, 1),
    };
    struct frag_report *r = analyze(b, 7, NULL, 0, &o);
    assert_int_equal(r->nregions, 2);
    assert_int_equal(r->t.regions, 2);
    assert_int_equal(r->t.overhead, 8 + 31);
    assert_int_equal(r->t.holes, 3);
    assert_int_equal(r->t.free, 44 + 32 + (1u << 20));
    assert_int_equal(r->t.largest, 1u << 20);
    assert_int_equal(r->regions[0].lo, 1000);
    assert_int_equal(r->regions[0].hi, far + 8);
    assert_int_equal(r->regions[1].lo, far + 8 + (1u << 20) + 1);
    assert_int_equal(r->regions[1].hi, far + 8 + (1u << 20) + 1 + 104);
    assert_int_equal(r->t.footprint, (far + 8 - 1000) + 104);
    /* --min-hole 1: the 8 B and 31 B gaps are holes too */
    o.min_hole = 1;
    frag_report__free(r);
    r = analyze(b, 7, NULL, 0, &o);
    assert_int_equal(r->t.overhead, 0);
    assert_int_equal(r->t.holes, 5);
    /* --min-hole 33, --cluster-gap 1 MiB - 1: one hole fewer each */
    o.min_hole = 33;
    o.cluster_gap = (1u << 20) - 1;
    frag_report__free(r);
    r = analyze(b, 7, NULL, 0, &o);
    assert_int_equal(r->t.holes, 1);
    assert_int_equal(r->t.regions, 3);
    frag_report__free(r);
}

/* Declared regions (vheap_region): the loom's directory and the unused
 * space around a road are occupied, not holes, and no regions of their
 * own; a region overlapping a nested road (a stale gap) counts once. */
static void test_declared_regions(void **state)
{
    (void)state;
    struct frag_opts o;
    frag_opts__default(&o);
    const struct vh_block b[] = {
        blk(1, 0x101000, 0x1000, 0x1000, 1), blk(1, 0x110000, 0x1000, 0x1000, 1),
        blk(2, 0x1bf000, 0x800, 0x1000, 2),
    };
    const struct frag_heap h[] = {
        { 1, 0x100000, 0x100000, -1, 0 },
        { 2, 0x180000, 0x40000, 1, 0 },
        { 0x80000000u, 0x100000, 0x1000, 1, 1 },        /* directory */
        { 0x80000001u, 0x111000, 0x6f000, 1, 1 },       /* gap below the road */
        { 0x80000002u, 0x1c0000, 0x40000, 1, 1 },       /* stack above it */
    };
    struct frag_report *r = analyze(b, 3, h, 5, &o);
    assert_int_equal(r->nregions, 2);                 /* the loom and the road */
    assert_int_equal(r->t.footprint, 0x100000);
    const struct frag_region *loom = &r->regions[0];
    assert_int_equal(loom->heap_id, 1);
    assert_int_equal(loom->holes, 1);                 /* 0x102000-0x110000 */
    assert_int_equal(loom->free, 0xe000);
    assert_int_equal(r->t.free, 0xe000 + 0x3f000);    /* and the road's own */
    frag_report__free(r);

    /* one stale gap over the road: the same holes (the snapshot only) */
    const struct frag_heap h2[] = {
        { 1, 0x100000, 0x100000, -1, 0 },
        { 2, 0x180000, 0x40000, 1, 0 },
        { 0x80000000u, 0x100000, 0x1000, 1, 1 },
        { 0x80000001u, 0x111000, 0xef000, 1, 1 },
    };
    assert_int_equal(frag__analyze(b, 3, h2, 4, &o, &r), 0);
    assert_int_equal(r->regions[0].free, 0xe000);
    assert_int_equal(r->regions[0].holes, 1);
    frag_report__free(r);
}

/* The paged compaction model (--compaction pages:16KiB,8KiB,12, Vere's
 * loom) on a heap whose compacted size is known by construction. A 16 KiB
 * page of 16-byte chunks keeps 9 of them for its header (12 bytes and a
 * 1024-bit map: 140 bytes), holding 1015; of 32-byte chunks 509 (76 bytes:
 * 3 chunks); of 64-byte ones 255; 128-byte pages keep their header off the
 * page (28 bytes, less than half a chunk) and hold 128. Vere's _init_once
 * gives the same (ful_s). */
static int by_addr(const void *x, const void *y)
{
    const struct vh_block *a = x, *b = y;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static uint64_t paged(const struct vh_block *b, size_t n, const struct frag_heap *h, size_t nh)
{
    struct frag_opts o;
    struct frag_report *r = NULL;
    frag_opts__default(&o);
    o.pack_page = 0x4000;
    o.pack_small = 0x2000;
    o.pack_head = 12;
    assert_int_equal(frag__analyze(b, n, h, nh, &o, &r), 0);
    assert_int_equal(r->regions[0].reclaim, r->t.reclaim);
    uint64_t got = r->t.reclaim;
    frag_report__free(r);
    return got;
}

#define PG(i) (0x100000 + (uint64_t)(i) * 0x4000)

static void test_paged_compaction(void **state)
{
    (void)state;
    enum { N16 = 1016, N128 = 129 };
    struct vh_block b[N16 + N128 + 2];
    size_t n = 0;
    /* 1,016 16-byte chunks spread over pages 1-3: two pages once packed */
    for (int i = 0; i < N16; i++)
        b[n++] = blk(1, PG(1 + i % 3) + 16 * (uint64_t)(i / 3), 16, 16, 1);
    b[n++] = blk(1, PG(4), 20, 24, 1);            /* a 32-byte chunk: one page */
    /* 129 128-byte chunks over pages 5-8: two pages */
    for (int i = 0; i < N128; i++)
        b[n++] = blk(1, PG(5 + i % 4) + 128 * (uint64_t)(i / 4), 128, 128, 1);
    b[n++] = blk(1, PG(10), 20000, 20480, 1);     /* a page run: two pages */
    qsort(b, n, sizeof *b, by_addr);
    const struct frag_heap h[] = {
        { 1, PG(0), 0x100000, -1, 0 },
        { FRAG_REGION_ID0, PG(0), 0x4000, 1, 1 },        /* the directory: kept */
        { FRAG_REGION_ID0 + 1, PG(20), PG(64) - PG(20), 1, 1 },   /* the gap: the top */
    };
    /* 20 pages up to the top; 1 + 2 + 1 + 2 + 2 once packed */
    assert_int_equal(paged(b, n, h, 3), 12 * 0x4000);
    /* no region above the last block: the top is its end, rounded up */
    assert_int_equal(paged(b, n, h, 2), 4 * 0x4000);
    /* one 16-byte chunk fewer: 1,015 fit one page */
    memmove(b, b + 1, (n - 1) * sizeof *b);
    assert_int_equal(paged(b, n - 1, h, 3), 13 * 0x4000);
    /* packed already: nothing to gain */
    struct vh_block p[4] = { blk(1, PG(1), 16, 16, 1), blk(1, PG(2), 64, 64, 1),
                             blk(1, PG(3), 9000, 16384, 1), blk(1, PG(4), 40000, 49152, 1) };
    assert_int_equal(paged(p, 4, h, 3), (20 - 7) * 0x4000);
    const struct frag_heap top7[] = { h[0], h[1], { FRAG_REGION_ID0 + 1, PG(7), PG(64) - PG(7), 1, 1 } };
    assert_int_equal(paged(p, 4, top7, 3), 0);
}

/* The loom [0x100000, 0x200000) with a road [0x180000, 0x1c0000) nested in
 * it: the road's region is occupied space for the loom, counted once. */
static void test_nested(void **state)
{
    (void)state;
    struct frag_opts o;
    frag_opts__default(&o);
    const struct vh_block b[] = {
        blk(1, 0x100000, 0x1000, 0x1000, 1), blk(1, 0x110000, 0x1000, 0x1000, 1),
        blk(2, 0x1bf000, 0x800, 0x1000, 2),
    };
    const struct frag_heap h[] = { { 1, 0x100000, 0x100000, -1, 0 },
                                   { 2, 0x180000, 0x40000, 1, 0 } };
    struct frag_report *r = analyze(b, 3, h, 2, &o);
    assert_int_equal(r->nregions, 2);
    assert_int_equal(r->t.footprint, 0x100000);
    const struct frag_region *loom = &r->regions[0], *road = &r->regions[1];
    assert_int_equal(loom->heap_id, 1);
    assert_false(loom->nested);
    assert_true(road->nested);
    /* loom holes: 0x101000-0x110000, 0x111000-0x180000, 0x1c0000-0x200000 */
    assert_int_equal(loom->holes, 3);
    assert_int_equal(loom->free, 0xf000 + 0x6f000 + 0x40000);
    assert_int_equal(loom->reclaim, 0xf000);       /* between its own blocks only */
    /* road: 0x180000-0x1bf000 */
    assert_int_equal(road->free, 0x3f000);
    assert_int_equal(road->reclaim, 0);
    assert_int_equal(r->t.free, loom->free + road->free);
    frag_report__free(r);

    /* the road alone (its parent not chosen): not nested */
    r = analyze(b + 2, 1, h + 1, 1, &o);
    assert_false(r->regions[0].nested);
    assert_int_equal(r->t.footprint, 0x40000);
    frag_report__free(r);
}

/* A nested heap declared while its parent holds a block at its base cannot
 * be carved there (the block is in the way) but is inside the parent all
 * the same: the footprint is the parent's bounds, once, as it was before
 * the child came and after it goes (frag_loomsim saw the loom counted
 * twice at one point of its series, about one run in twelve). */
static void test_nested_on_block(void **state)
{
    (void)state;
    struct frag_opts o;
    struct fragtrack *t = NULL;
    struct frag_totals x;
    frag_opts__default(&o);
    const struct frag_heap loom = { 1, 0x100000, 0x100000, -1, 0 },
                           road = { 2, 0x180000, 0x40000, 1, 0 };
    struct vh_block b = blk(1, 0x180000, 0x100, 0x100, 1);
    assert_int_equal(fragtrack__new(&o, &t), 0);
    assert_int_equal(fragtrack__heap(t, &loom, 1), 0);
    assert_int_equal(fragtrack__heap(t, &road, 0), 0);
    assert_int_equal(fragtrack__add(t, &b), 0);
    assert_int_equal(fragtrack__heap(t, &road, 1), 0);
    fragtrack__totals(t, &x);
    assert_int_equal(x.footprint, 0x100000);
    assert_int_equal(fragtrack__remove(t, 1, 0x180000), 0);
    assert_int_equal(fragtrack__heap(t, &road, 1), 0);   /* carved now */
    fragtrack__totals(t, &x);
    assert_int_equal(x.footprint, 0x100000);
    assert_int_equal(fragtrack__heap(t, &road, 0), 0);
    fragtrack__totals(t, &x);
    assert_int_equal(x.footprint, 0x100000);
    fragtrack__free(t);
}

static void test_bad_input(void **state)
{
    (void)state;
    struct frag_opts o;
    struct frag_report *r = (struct frag_report *)1;
    struct fragtrack *t = NULL;
    frag_opts__default(&o);
    const struct vh_block unsorted[] = { blk(0, 0x2000, 1, 8, 0), blk(0, 0x1000, 1, 8, 0) };
    const struct vh_block heaps_back[] = { blk(1, 0x1000, 1, 8, 0), blk(0, 0x2000, 1, 8, 0) };
    const struct vh_block twice[] = { blk(0, 0x1000, 1, 8, 0), blk(0, 0x1000, 1, 8, 0) };
    assert_int_equal(frag__analyze(unsorted, 2, NULL, 0, &o, &r), -EINVAL);
    assert_null(r);
    assert_int_equal(frag__analyze(heaps_back, 2, NULL, 0, &o, &r), -EINVAL);
    assert_int_equal(frag__analyze(twice, 2, NULL, 0, &o, &r), -EINVAL);
    o.page_size = 3000;
    assert_int_equal(frag__analyze(NULL, 0, NULL, 0, &o, &r), -EINVAL);
    assert_int_equal(fragtrack__new(&o, &t), -EINVAL);
    frag_opts__default(&o);
    o.sparse_pct = 101;
    assert_int_equal(frag__analyze(NULL, 0, NULL, 0, &o, &r), -EINVAL);

    /* fragtrack refuses what cannot happen */
    frag_opts__default(&o);
    assert_int_equal(fragtrack__new(&o, &t), 0);
    struct vh_block x = blk(0, 0x1000, 10, 16, 1);
    assert_int_equal(fragtrack__add(t, &x), 0);
    assert_int_equal(fragtrack__add(t, &x), -EEXIST);
    assert_int_equal(fragtrack__remove(t, 0, 0x2000), -ENOENT);
    assert_int_equal(fragtrack__remove(t, 7, 0x1000), -ENOENT);
    assert_int_equal(fragtrack__move(t, 0, 0x2000, 0x3000), -ENOENT);
    assert_int_equal(fragtrack__resize(t, 0, 0x2000, 1, 8), -ENOENT);
    const struct frag_heap h = { 3, 0x10000, 0x1000, -1, 0 }, h2 = { 3, 0x10000, 0x2000, -1, 0 };
    assert_int_equal(fragtrack__heap(t, &h, 1), 0);
    assert_int_equal(fragtrack__heap(t, &h2, 1), -EINVAL);
    assert_int_equal(fragtrack__remove(t, 0, 0x1000), 0);
    struct frag_totals tt;
    fragtrack__totals(t, &tt);
    assert_int_equal(tt.blocks, 0);
    assert_int_equal(tt.pages, 0);
    assert_int_equal(tt.free, 0x1000);
    fragtrack__free(t);
}

/* ---- fragtrack against frag__analyze ------------------------------------- */

#define SLOTS 96
#define NHEAPS 4

/* A model: per heap a grid of slots, at most one block per slot, so blocks
 * never overlap. Heap 0 has no bounds and slots spread over far-apart
 * areas (several regions); heap 1 has bounds; heap 2 has bounds inside heap
 * 1's (nested); heap 3 has bounds and comes and goes. */
struct slot {
    int live;
    uint64_t off, size, usable;
    uint32_t stack;
};

static struct slot model[NHEAPS][SLOTS];
static const struct frag_heap mheaps[NHEAPS] = {
    { 0, 0, 0, -1, 0 },
    { 1, 0x40000000, 0x100000, -1, 0 },
    { 2, 0x40080000, 0x40000, 1, 0 },
    { 3, 0x50000000, 0x20000, -1, 0 },
};
static int exists3;

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(uint64_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return n ? rng % n : 0;
}

static uint64_t slot_base(int h, int s)
{
    switch (h) {
    case 0: return 0x10000000ull + (uint64_t)(s / 32) * (3u << 20) + (uint64_t)(s % 32) * 0x2000;
    case 1: return 0x40000000ull + (uint64_t)(s < SLOTS / 2 ? s : s - SLOTS / 2) * 0x1000 +
                   (s >= SLOTS / 2 ? 0xc0000 : 0);     /* stays clear of heap 2 */
    case 2: return 0x40080000ull + (uint64_t)s * 0x800;
    default: return 0x50000000ull + (uint64_t)s * 0x400;
    }
}

static uint64_t slot_room(int h)
{
    return h == 0 ? 0x2000 : h == 1 ? 0x1000 : h == 2 ? 0x800 : 0x400;
}

static void random_block(int h, struct slot *s)
{
    uint64_t room = slot_room(h);
    s->off = rnd(4) ? rnd(room / 2) & ~15ull : 0;
    s->usable = 1 + rnd(room - s->off);
    if (!rnd(16))
        s->usable = room - s->off;                      /* touches the next slot */
    if (!rnd(32))
        s->usable = 0;
    s->size = s->usable ? s->usable - rnd(s->usable < 24 ? s->usable : 24) : 0;
    s->stack = (uint32_t)rnd(5);
}

static size_t model_blocks(struct vh_block *out)
{
    size_t n = 0;
    for (int h = 0; h < NHEAPS; h++)
        for (int s = 0; s < SLOTS; s++)
            if (model[h][s].live)
                out[n++] = blk((uint32_t)h, slot_base(h, s) + model[h][s].off, model[h][s].size,
                               model[h][s].usable, model[h][s].stack);
    return n;
}

static void compare(struct fragtrack *t, const struct frag_opts *o)
{
    static struct vh_block b[NHEAPS * SLOTS];
    struct frag_heap hs[NHEAPS];
    size_t n = model_blocks(b), nh = 0;
    struct frag_totals x;
    for (int h = 0; h < NHEAPS; h++)
        if (h != 3 || exists3)
            hs[nh++] = mheaps[h];
    struct frag_report *r = analyze(b, n, hs, nh, o);
    fragtrack__totals(t, &x);
    same_totals(&x, &r->t);
    /* pinned bytes are charged exactly: the stacks add up to the total */
    uint64_t pinned = 0;
    for (size_t i = 0; i < r->nstacks; i++)
        pinned += r->stacks[i].pinned;
    assert_int_equal(pinned, r->t.pinned);
    frag_report__free(r);
}

static void run_random(uint64_t page, unsigned sparse, uint64_t min_hole, uint64_t gap, int steps)
{
    struct frag_opts o;
    struct fragtrack *t = NULL;
    frag_opts__default(&o);
    o.page_size = page;
    o.sparse_pct = sparse;
    o.min_hole = min_hole;
    o.cluster_gap = gap;
    memset(model, 0, sizeof model);
    exists3 = 1;
    assert_int_equal(fragtrack__new(&o, &t), 0);
    for (int h = 0; h < NHEAPS; h++)
        if (h)
            assert_int_equal(fragtrack__heap(t, &mheaps[h], 1), 0);
    compare(t, &o);
    for (int step = 0; step < steps; step++) {
        int h = (int)rnd(NHEAPS), s = (int)rnd(SLOTS);
        struct slot *sl = &model[h][s];
        uint64_t at = slot_base(h, s);
        if (h == 3 && !exists3) {
            /* a heap that does not exist has no blocks; it may come back */
            if (!rnd(4)) {
                exists3 = 1;
                assert_int_equal(fragtrack__heap(t, &mheaps[3], 1), 0);
            }
        } else if (!sl->live) {
            random_block(h, sl);
            sl->live = 1;
            struct vh_block b = blk((uint32_t)h, at + sl->off, sl->size, sl->usable, sl->stack);
            assert_int_equal(fragtrack__add(t, &b), 0);
        } else {
            switch (rnd(4)) {
            case 0:
            case 1:
                assert_int_equal(fragtrack__remove(t, (uint32_t)h, at + sl->off), 0);
                sl->live = 0;
                break;
            case 2: {                                   /* in place */
                uint64_t room = slot_room(h) - sl->off;
                sl->usable = rnd(room + 1);
                sl->size = sl->usable ? sl->usable - rnd(sl->usable) : 0;
                assert_int_equal(fragtrack__resize(t, (uint32_t)h, at + sl->off, sl->size,
                                                   sl->usable), 0);
                break;
            }
            default: {                                  /* to a free slot */
                int d = (int)rnd(SLOTS);
                struct slot *to = &model[h][d];
                if (to->live || d == s)
                    break;
                uint64_t off = sl->usable <= slot_room(h) / 2 ? rnd(slot_room(h) / 2) & ~15ull
                                                              : 0;
                assert_int_equal(fragtrack__move(t, (uint32_t)h, at + sl->off,
                                                 slot_base(h, d) + off), 0);
                *to = *sl;
                to->off = off;
                sl->live = 0;
                break;
            }
            }
        }
        /* heap 3 goes away when empty, now and then */
        if (exists3 && !rnd(8)) {
            int any = 0;
            for (int k = 0; k < SLOTS; k++)
                any |= model[3][k].live;
            if (!any) {
                exists3 = 0;
                assert_int_equal(fragtrack__heap(t, &mheaps[3], 0), 0);
            }
        }
        if (step % 7 == 0)
            compare(t, &o);
    }
    compare(t, &o);
    /* everything freed: nothing but the empty regions' holes is left */
    for (int h = 0; h < NHEAPS; h++)
        for (int s = 0; s < SLOTS; s++)
            if (model[h][s].live) {
                assert_int_equal(fragtrack__remove(t, (uint32_t)h,
                                                   slot_base(h, s) + model[h][s].off), 0);
                model[h][s].live = 0;
            }
    compare(t, &o);
    struct frag_totals x;
    fragtrack__totals(t, &x);
    assert_int_equal(x.pages, 0);
    assert_int_equal(x.blocks, 0);
    fragtrack__free(t);
}

static void test_track_4k(void **state)
{
    (void)state;
    run_random(4096, 25, 0, 1u << 20, 3000);
}

static void test_track_small_pages(void **state)
{
    (void)state;
    /* 256 B pages: blocks span many pages (full pages inside them) */
    run_random(256, 60, 0, 1u << 20, 3000);
}

static void test_track_options(void **state)
{
    (void)state;
    run_random(2u << 20, 100, 64, 0x4000, 2000);    /* small cluster gap: many regions */
    run_random(4096, 0, 1, 1u << 30, 2000);
}

/* Many blocks: the tracker's trees split and merge nodes at every level
 * (the random runs above stay within a few leaves). Blocks go in and out in
 * random order; at each stage the totals must be frag__analyze()'s for what
 * is left, and in the end nothing is left. */
static void test_track_many(void **state)
{
    enum { N = 40000 };
    static struct vh_block all[N], left[N];
    static uint32_t order[N];
    static int live[N];
    struct frag_opts o;
    struct fragtrack *t = NULL;
    const struct frag_heap bounded = { 1, 0x400000000ull, (uint64_t)N * 0x100, -1, 0 };
    (void)state;

    frag_opts__default(&o);
    assert_int_equal(fragtrack__new(&o, &t), 0);
    assert_int_equal(fragtrack__heap(t, &bounded, 1), 0);
    for (uint32_t i = 0; i < N; i++) {
        /* heap 0 in clusters 1 MiB apart, heap 1 inside its bounds */
        uint32_t h = i & 1, k = i / 2;
        uint64_t at = h ? bounded.base + (uint64_t)k * 0x200
                        : 0x10000000ull + (uint64_t)k * 0x100 + (uint64_t)(k / 500) * (2u << 20);
        uint64_t usable = 16 + rnd(0xe0) / 16 * 16;
        all[i] = blk(h, at, usable - rnd(16), usable, (uint32_t)rnd(7));
        order[i] = i;
    }
    for (int round = 0; round < 3; round++) {
        size_t n = 0;
        for (uint32_t i = N - 1; i > 0; i--) {          /* shuffle */
            uint32_t j = (uint32_t)rnd(i + 1), x = order[i];
            order[i] = order[j];
            order[j] = x;
        }
        for (uint32_t i = 0; i < N; i++) {
            uint32_t b = order[i];
            int want = round == 2 ? 0 : round == 0 ? 1 : (int)rnd(2);
            if (want && !live[b])
                assert_int_equal(fragtrack__add(t, &all[b]), 0);
            else if (!want && live[b])
                assert_int_equal(fragtrack__remove(t, all[b].heap_id, all[b].addr), 0);
            live[b] = want;
        }
        for (uint32_t h = 0; h < 2; h++)                 /* sorted by heap, address */
            for (uint32_t i = h; i < N; i += 2)
                if (live[i])
                    left[n++] = all[i];
        struct frag_report *r = NULL;
        struct frag_totals x;
        assert_int_equal(frag__analyze(left, n, &bounded, 1, &o, &r), 0);
        fragtrack__totals(t, &x);
        same_totals(&x, &r->t);
        assert_int_equal(x.blocks, n);
        frag_report__free(r);
    }
    fragtrack__free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slack_and_classes),
        cmocka_unit_test(test_pages),
        cmocka_unit_test(test_declared_regions),
        cmocka_unit_test(test_paged_compaction),
        cmocka_unit_test(test_nested_on_block),
        cmocka_unit_test(test_holes_bounded),
        cmocka_unit_test(test_clusters),
        cmocka_unit_test(test_nested),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_track_4k),
        cmocka_unit_test(test_track_small_pages),
        cmocka_unit_test(test_track_options),
        cmocka_unit_test(test_track_many),
    };
    return cmocka_run_group_tests_name("frag", tests, NULL, NULL);
}
