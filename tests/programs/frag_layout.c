/* frag_layout.c — a heap with a known layout, for `vheap-analyze frag`
 * (tests/integration/frag_layout.sh). A second thread (so its blocks sit in
 * a glibc arena of their own, far from the main heap) allocates 512 blocks
 * of 64 B, 256 of 1000 B and 8 of 40000 B, then frees every other small
 * block, all but every 16th medium one (each survivor alone on its pages:
 * sparse pages) and the four middle large ones (one big hole). Then main
 * marks "layout done" (vheap.h) and prints what vheap must find there,
 * computed from the addresses and usable sizes the program got, with the
 * definitions of docs/fragmentation.md:
 *   frag P=<page> lo= hi= blocks= requested= usable= free= holes= largest=
 *        largest_at= small_gaps= unusable= fit_64= fit_4k= fit_1m= pages=
 *        page_used= sparse_pages= pinned=
 *   stack fn=<allocating function> blocks= requested= usable= pinned=
 * (pinned per stack for 4 KiB pages). After the mark it frees the medium
 * survivors and two large blocks, so the end differs from the mark. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload/vheap.h"

#define NSMALL 512
#define NMED 256
#define NLARGE 8
#define SMALL 64
#define MED 1000
#define LARGE 40000
#define MIN_HOLE 32                 /* frag's default without heap bounds */
#define CLUSTER_GAP (1u << 20)
#define SPARSE_PCT 25

static void *small[NSMALL], *med[NMED], *large[NLARGE];

/* Not inlined, and the call is not the last thing they do (no tail call):
 * each stays a frame of its own, so the blocks have three distinct stacks. */
__attribute__((noinline)) void alloc_small(int i)
{
    small[i] = malloc(SMALL);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void alloc_medium(int i)
{
    med[i] = malloc(MED);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void alloc_large(int i)
{
    large[i] = malloc(LARGE);
    __asm__ volatile("" ::: "memory");
}

static void *layout(void *arg)
{
    (void)arg;
    for (int i = 0; i < NSMALL; i++)
        alloc_small(i);
    for (int i = 0; i < NMED; i++)
        alloc_medium(i);
    for (int i = 0; i < NLARGE; i++)
        alloc_large(i);
    for (int i = 0; i < NSMALL; i++)
        if (i % 2) {
            free(small[i]);
            small[i] = NULL;
        }
    for (int i = 0; i < NMED; i++)
        if (i % 16) {
            free(med[i]);
            med[i] = NULL;
        }
    for (int i = 2; i < 6; i++) {
        free(large[i]);
        large[i] = NULL;
    }
    return NULL;
}

struct blk {
    uint64_t addr, size, usable;
    int kind;                       /* 0 small, 1 medium, 2 large */
};

static const char *const fn[3] = { "alloc_small", "alloc_medium", "alloc_large" };

static int by_addr(const void *x, const void *y)
{
    const struct blk *a = x, *b = y;
    return (a->addr > b->addr) - (a->addr < b->addr);
}

/* Occupied bytes per page, pages [first, first + n). */
static void page_occ(const struct blk *b, size_t nb, uint64_t P, uint64_t first, uint64_t *occ)
{
    for (size_t i = 0; i < nb; i++)
        for (uint64_t a = b[i].addr; a < b[i].addr + b[i].usable;) {
            uint64_t pg = a / P, next = (pg + 1) * P, e = b[i].addr + b[i].usable;
            uint64_t part = (next < e ? next : e) - a;
            occ[pg - first] += part;
            a += part;
        }
}

static int report(const struct blk *b, size_t nb, uint64_t P, uint64_t *pinned_by_kind)
{
    static const uint64_t fits[3] = { 64, 4096, 1u << 20 };
    uint64_t requested = 0, usable = 0, freeb = 0, holes = 0, largest = 0, largest_at = 0;
    uint64_t gaps = 0, unusable = 0, fit[3] = { 0 }, hi = 0;
    uint64_t pages = 0, used = 0, sparse = 0, pinned = 0;

    for (size_t i = 0; i < nb; i++) {
        requested += b[i].size;
        usable += b[i].usable;
        if (b[i].addr + b[i].usable > hi)
            hi = b[i].addr + b[i].usable;
        if (!i)
            continue;
        uint64_t pend = b[i - 1].addr + b[i - 1].usable;
        uint64_t g = b[i].addr > pend ? b[i].addr - pend : 0;
        if (g > CLUSTER_GAP) {
            printf("skip the blocks are not one region (gap of %" PRIu64 " bytes)\n", g);
            return 1;
        }
        if (g >= MIN_HOLE) {
            freeb += g;
            holes++;
            unusable += g % P;
            for (int k = 0; k < 3; k++)
                fit[k] += g / fits[k] * fits[k];
            if (g > largest) {
                largest = g;
                largest_at = pend;
            }
        } else {
            gaps += g;
        }
    }
    uint64_t first = b[0].addr / P, npages = (hi - 1) / P - first + 1;
    uint64_t *occ = calloc(npages, sizeof *occ);
    if (!occ)
        return 1;
    page_occ(b, nb, P, first, occ);
    for (uint64_t p = 0; p < npages; p++) {
        if (!occ[p])
            continue;
        pages++;
        used += occ[p];
        if (occ[p] >= P * SPARSE_PCT / 100)
            continue;
        sparse++;
        pinned += P - occ[p];
        if (!pinned_by_kind)
            continue;
        /* charged by occupied bytes, the last block on the page (by
         * address) taking what rounding down left over */
        uint64_t freeb_p = P - occ[p], given = 0, lo = (first + p) * P, hi_p = lo + P;
        size_t last = nb;
        for (size_t i = 0; i < nb; i++)
            if (b[i].addr < hi_p && b[i].addr + b[i].usable > lo)
                last = i;
        for (size_t i = 0; i < nb; i++) {
            uint64_t s = b[i].addr > lo ? b[i].addr : lo;
            uint64_t e = b[i].addr + b[i].usable < hi_p ? b[i].addr + b[i].usable : hi_p;
            if (e <= s)
                continue;
            uint64_t part = i == last ? freeb_p - given
                                      : (uint64_t)((unsigned __int128)freeb_p * (e - s) / occ[p]);
            given += part;
            pinned_by_kind[b[i].kind] += part;
        }
    }
    free(occ);
    printf("frag P=%" PRIu64 " lo=0x%" PRIx64 " hi=0x%" PRIx64 " blocks=%zu requested=%" PRIu64
           " usable=%" PRIu64 " free=%" PRIu64 " holes=%" PRIu64 " largest=%" PRIu64
           " largest_at=0x%" PRIx64 " small_gaps=%" PRIu64 " unusable=%" PRIu64
           " fit_64=%" PRIu64 " fit_4k=%" PRIu64 " fit_1m=%" PRIu64 " pages=%" PRIu64
           " page_used=%" PRIu64 " sparse_pages=%" PRIu64 " pinned=%" PRIu64 "\n",
           P, b[0].addr, hi, nb, requested, usable, freeb, holes, largest, largest_at, gaps,
           unusable, fit[0], fit[1], fit[2], pages, used, sparse, pinned);
    return 0;
}

int main(void)
{
    static struct blk b[NSMALL + NMED + NLARGE];
    uint64_t pinned[3] = { 0 }, nblk[3] = { 0 }, req[3] = { 0 }, use[3] = { 0 };
    size_t nb = 0;
    pthread_t t;
    void *probe = malloc(16);       /* an address in the main arena */

    if (pthread_create(&t, NULL, layout, NULL) || pthread_join(t, NULL)) {
        fprintf(stderr, "frag_layout: thread failed\n");
        return 1;
    }
    vheap_mark("layout done");
    for (int i = 0; i < NSMALL; i++)
        if (small[i])
            b[nb++] = (struct blk){ (uintptr_t)small[i], SMALL, malloc_usable_size(small[i]), 0 };
    for (int i = 0; i < NMED; i++)
        if (med[i])
            b[nb++] = (struct blk){ (uintptr_t)med[i], MED, malloc_usable_size(med[i]), 1 };
    for (int i = 0; i < NLARGE; i++)
        if (large[i])
            b[nb++] = (struct blk){ (uintptr_t)large[i], LARGE, malloc_usable_size(large[i]), 2 };
    qsort(b, nb, sizeof *b, by_addr);
    uint64_t pa = (uintptr_t)probe;
    if ((pa > b[0].addr ? pa - b[0].addr : b[0].addr - pa) < 4 * CLUSTER_GAP) {
        printf("skip the thread's blocks are next to the main heap\n");
        return 0;
    }
    for (size_t i = 0; i < nb; i++) {
        nblk[b[i].kind]++;
        req[b[i].kind] += b[i].size;
        use[b[i].kind] += b[i].usable;
    }
    if (report(b, nb, 4096, pinned) || report(b, nb, 2u << 20, NULL))
        return 0;
    for (int k = 0; k < 3; k++)
        printf("stack fn=%s blocks=%" PRIu64 " requested=%" PRIu64 " usable=%" PRIu64
               " pinned=%" PRIu64 "\n",
               fn[k], nblk[k], req[k], use[k], pinned[k]);
    fflush(stdout);

    /* after the mark: the medium survivors and two large blocks go */
    for (int i = 0; i < NMED; i++)
        free(med[i]);
    free(large[1]);
    free(large[6]);
    vheap_mark("after");
    free(probe);
    return 0;
}
