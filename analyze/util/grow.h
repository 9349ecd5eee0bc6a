/* grow.h — room for one more element in an array that doubles when full.
 *
 * The analyzer's tables, rows and lists all grow the same way; this is that
 * one way, with the overflow check the copies lacked. */
#ifndef VHEAP_GROW_H
#define VHEAP_GROW_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* *arr (any T *, passed as &ptr) has room for *cap elements of `elem`
 * bytes. When `need` elements do not fit, reallocates to *cap doubled (or
 * `first`, at least 1) as often as it takes. 0, or -ENOMEM with the array
 * and *cap unchanged. */
static inline int vh_reserve(void *arr, size_t *cap, size_t need, size_t elem, size_t first)
{
    void *old, *p;
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : (first ? first : 1);
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return -ENOMEM;
        c *= 2;
    }
    if (c > SIZE_MAX / elem)
        return -ENOMEM;
    memcpy(&old, arr, sizeof old); /* the pointer, whatever its type */
    if (!(p = realloc(old, c * elem)))
        return -ENOMEM;
    memcpy(arr, &p, sizeof p);
    *cap = c;
    return 0;
}

/* vh_reserve() for an array indexed by id: the new elements are zeroed. */
static inline int vh_reserve_zeroed(void *arr, size_t *cap, size_t need, size_t elem,
                                    size_t first)
{
    size_t had = *cap;
    char *p;
    if (vh_reserve(arr, cap, need, elem, first))
        return -ENOMEM;
    memcpy(&p, arr, sizeof p);
    if (p && *cap > had)
        memset(p + had * elem, 0, (*cap - had) * elem);
    return 0;
}

/* Room for one more element: *arr holds n of *cap. When n == *cap,
 * reallocates to twice *cap (or `first`). 0, or -ENOMEM with the array and
 * *cap unchanged. */
static inline int vh_grow(void *arr, size_t *cap, size_t n, size_t elem, size_t first)
{
    return n < *cap ? 0 : vh_reserve(arr, cap, n + 1, elem, first);
}

/* calloc for a hash table probed at random: from 4 MiB up, it asks for
 * transparent huge pages (the kernel's default is often "madvise"), so a
 * probe's page walk hits the TLB instead of missing it as well as the
 * cache (compileall's 2M call-tree nodes: about a tenth of the load). */
static inline void *vh_calloc_table(size_t n, size_t elem)
{
    void *p = calloc(n, elem);
#ifdef MADV_HUGEPAGE
    size_t bytes = n * elem;
    if (p && bytes >= ((size_t)4 << 20)) {
        uintptr_t lo = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
        uintptr_t hi = ((uintptr_t)p + bytes) & ~(uintptr_t)4095;
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);   /* a hint only */
    }
#endif
    return p;
}

#endif
