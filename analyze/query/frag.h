/* frag.h — fragmentation of a live set (docs/fragmentation.md): internal
 * slack, page occupancy, holes in heap regions and footprint. Two routes to
 * the same headline numbers: frag__analyze() looks at one moment in detail
 * (regions, hole sizes, size classes, stacks), and a fragtrack is kept up to
 * date block by block, for those numbers over time. Pure computation on
 * struct vh_block — no database — so unit tests feed it synthetic sets. */
#ifndef VHEAP_FRAG_H
#define VHEAP_FRAG_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/store/events.h"

struct frag_opts {
    uint64_t page_size;           /* P: a power of two                       */
    unsigned sparse_pct;          /* a page is sparse when less than this
                                     percentage of it is occupied (0..100)   */
    uint64_t cluster_gap;         /* heaps without bounds: a gap wider than
                                     this separates two regions              */
    uint64_t min_hole;            /* gaps narrower are overhead (headers,
                                     alignment), not holes; 0 = the default:
                                     32 B without bounds (glibc's smallest
                                     chunk), 1 B for heaps with bounds       */
    /* How compaction is modelled for `reclaim` of a heap with bounds
     * (--compaction). pack_page 0, "slide": the live blocks slide together,
     * byte for byte. Else "pages": a paged allocator (Vere's loom) whose
     * compactor packs each size class's chunks into as few pages as hold
     * them and slides whole pages down: blocks up to pack_small bytes are
     * chunks of their usable size (a power of two); a chunk page holds
     * pack_page / size chunks, less those its header takes (pack_head
     * bytes and a bit a chunk, in 4-byte words), kept in the page when it
     * is at least half a chunk; a larger block takes whole pages. The heap
     * ends where the declared region above its last block begins. */
    uint64_t pack_page, pack_small, pack_head;
};

/* P = 4 KiB, sparse below 25 %, regions split at gaps above 1 MiB. */
void frag_opts__default(struct frag_opts *o);

/* A heap whose region is known: [base, base + size). size 0: no bounds
 * known; its regions are clusters of its blocks. A heap with bounds nested
 * in another with bounds (a road in the loom) is carved from its parent's
 * space: its region counts as occupied in the parent, and not again in the
 * footprint. */
struct frag_heap {
    uint32_t id;
    uint64_t base, size;
    int64_t parent;               /* the enclosing heap's id, -1 for none    */
    int region;                   /* 1: not a heap but a part of `parent`
                                     that holds no blocks (vheap_region: its
                                     metadata, a stack, a gap): carved from
                                     the parent like a nested heap, with no
                                     region, holes or footprint of its own;
                                     id is any number no block carries      */
};

/* Ids given to declared regions (struct frag_heap.region): above any heap's. */
#define FRAG_REGION_ID0 0x80000000u

#define FRAG_NFIT 3
/* How much free space could hold blocks of these sizes: 64 B, 4 KiB, 1 MiB. */
extern const uint64_t frag_fit_sizes[FRAG_NFIT];

/* The headline numbers. Holes are gaps between live blocks (usable ends to
 * the next block) inside regions; a region is a heap's bounds, or for a heap
 * without bounds a run of blocks with no gap wider than cluster_gap. */
struct frag_totals {
    uint64_t blocks, requested, usable;          /* R, U: slack is U - R    */
    uint64_t pages;               /* T: pages touched by a live block        */
    uint64_t page_bytes_used;     /* occupied bytes of those (each page at
                                     most P): utilization = this / (T * P)   */
    uint64_t sparse_pages;        /* touched, occupied below sparse_pct      */
    uint64_t pinned;              /* free bytes of the sparse pages          */
    uint64_t regions;
    uint64_t footprint;           /* H: sum of region sizes                  */
    uint64_t free;                /* F: bytes in holes                       */
    uint64_t holes, largest;      /* count, and M: the largest hole          */
    uint64_t overhead;            /* gaps below min_hole                     */
    uint64_t unusable;            /* free bytes in pieces smaller than P:
                                     sum over holes of (hole mod P)          */
    uint64_t fit[FRAG_NFIT];      /* sum over holes of floor(h / k) * k      */
    uint64_t reclaim;             /* heaps with bounds: what compaction would
                                     give back: the span of the heap's own
                                     blocks (lowest start to highest end)
                                     - their usable bytes - nested regions
                                     inside it                               */
};

struct frag_region {
    uint32_t heap_id;
    int bounded;                  /* [lo, hi) are the heap's bounds          */
    int nested;                   /* inside its parent's region: occupied
                                     there, not in the footprint             */
    uint64_t lo, hi;
    uint64_t blocks, requested, usable;
    uint64_t free, holes, largest, largest_at, overhead, unusable;
    uint64_t fit[FRAG_NFIT];
    uint64_t span, reclaim;       /* bounded: highest end - lowest start of
                                     the heap's own blocks; see frag_totals  */
    uint64_t pages, page_bytes_used, sparse_pages, pinned;
};

/* Holes of [2^i, 2^(i+1)) bytes. */
struct frag_hist {
    uint64_t holes, bytes;
};

/* Blocks whose requested size lies in [lo, hi]. */
struct frag_class {
    uint64_t lo, hi;
    uint64_t blocks, requested, usable;
};

struct frag_stack {
    uint32_t heap_id, stack_id;
    uint64_t blocks, requested, usable;
    uint64_t pinned;              /* free bytes of sparse pages, charged to
                                     the blocks on them by occupied bytes    */
};

struct frag_report {
    struct frag_totals t;
    struct frag_region *regions;  /* by heap id, then address                */
    size_t nregions;
    struct frag_hist hist[64];
    struct frag_class *classes;   /* non-empty classes, smallest first       */
    size_t nclasses;
    struct frag_stack *stacks;    /* by slack + pinned, largest first        */
    size_t nstacks;
};

/* Analyzes the n blocks (sorted by heap id, then address, as a liveset is).
 * `heaps` are the heaps that exist at that moment; a heap with bounds gets
 * its region even with no block live. Blocks of heaps not listed count as
 * heaps without bounds. Returns 0, -EINVAL (blocks out of order, bad
 * options) or -ENOMEM. */
int frag__analyze(const struct vh_block *blocks, size_t n, const struct frag_heap *heaps,
                  size_t nheaps, const struct frag_opts *o, struct frag_report **out);
void frag_report__free(struct frag_report *r);

/* ---- the same headline numbers, kept up to date ------------------------- *
 * Blocks ordered by address per heap and the holes between them ordered by
 * size (both B+ trees), and the occupancy of the pages at the ends of blocks
 * (pages inside a block are full and only counted): each change costs
 * O(log n), and fragtrack__totals() O(heaps). For a set of blocks it gives
 * the totals that frag__analyze() gives for it. */
struct fragtrack;

int fragtrack__new(const struct frag_opts *o, struct fragtrack **out);
/* Declares a heap (as struct frag_heap; declare a parent before the heaps
 * nested in it) and whether it exists now: only existing heaps have regions
 * and holes in the totals, and only an existing nested heap is carved from
 * its parent. Called again, changes whether it exists. Blocks may be added
 * to undeclared heaps (no bounds, existing). 0, -EINVAL (bounds changed) or
 * -ENOMEM. */
int fragtrack__heap(struct fragtrack *t, const struct frag_heap *h, int exists);
/* 0, -EEXIST (a block at that address in that heap), -ENOMEM. */
int fragtrack__add(struct fragtrack *t, const struct vh_block *b);
/* 0, -ENOENT or -ENOMEM (the gap it leaves may need a node). */
int fragtrack__remove(struct fragtrack *t, uint32_t heap, uint64_t addr);
/* In place: new requested and usable sizes. 0, -ENOENT or -ENOMEM. */
int fragtrack__resize(struct fragtrack *t, uint32_t heap, uint64_t addr, uint64_t size,
                      uint64_t usable);
/* The block at `from` now lives at `to`. 0, -ENOENT, -EEXIST or -ENOMEM. */
int fragtrack__move(struct fragtrack *t, uint32_t heap, uint64_t from, uint64_t to);
/* A hint: a change at addr (a block of `usable` bytes) comes soon. Given
 * twice, first with near = 0 some events ahead, then with near = 1 fewer
 * events ahead, it has the memory that change reads arrive in time. */
void fragtrack__prefetch(const struct fragtrack *t, uint32_t heap, uint64_t addr,
                         uint64_t usable, int near);
void fragtrack__totals(const struct fragtrack *t, struct frag_totals *out);
void fragtrack__free(struct fragtrack *t);

#endif
