/* util/cmp.h — ordering: three-way comparisons for qsort comparators (-1,
 * 0 or 1 on unsigned keys, one key or two, the second breaking ties of the
 * first), so that a comparator says which keys it orders by and nothing
 * else; and the binary search over an array so ordered. */
#ifndef VHEAP_CMP_H
#define VHEAP_CMP_H

#include <stddef.h>
#include <stdint.h>

static inline int vh_cmp(uint64_t a, uint64_t b)
{
    return (a > b) - (a < b);
}

/* (a1, a2) against (b1, b2). */
static inline int vh_cmp2(uint64_t a1, uint64_t b1, uint64_t a2, uint64_t b2)
{
    return a1 != b1 ? vh_cmp(a1, b1) : vh_cmp(a2, b2);
}

/* The binary search: the first index `i` in [0, n) at which `pred`, an
 * expression in i, is false, where pred holds for a prefix of the indexes
 * and for no index after it; n when it holds throughout (C++'s
 * partition_point). The last element at or before x in an ascending array
 * a is at VH_PARTITION_POINT(i, n, a[i] <= x) - 1, if that is not 0; the
 * first element at or after x at VH_PARTITION_POINT(i, n, a[i] < x). */
#define VH_PARTITION_POINT(i, n, pred)                                                   \
    __extension__({                                                                    \
        size_t vh_lo_ = 0, vh_hi_ = (n);                                               \
        while (vh_lo_ < vh_hi_) {                                                      \
            size_t i = vh_lo_ + (vh_hi_ - vh_lo_) / 2;                                 \
            if (pred)                                                                  \
                vh_lo_ = i + 1;                                                        \
            else                                                                       \
                vh_hi_ = i;                                                            \
        }                                                                              \
        vh_lo_;                                                                        \
    })

#endif
