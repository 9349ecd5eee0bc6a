/* partition.h — the one binary search, shared by the shim (its tables of
 * mappings and ranges in address order) and the analyzer (util/cmp.h
 * includes it for its sorted arrays). A statement expression: no call, no
 * allocation, usable inside a hook. */
#ifndef VHEAP_PARTITION_H
#define VHEAP_PARTITION_H

#include <stddef.h>

/* The first index `i` in [0, n) at which `pred`, an expression in i, is
 * false, where pred holds for a prefix of the indexes and for no index
 * after it; n when it holds throughout (C++'s partition_point). The last
 * element at or before x in an ascending array a is at
 * VH_PARTITION_POINT(i, n, a[i] <= x) - 1, if that is not 0; the first
 * element at or after x at VH_PARTITION_POINT(i, n, a[i] < x); the first
 * range [lo, hi) ending above x at VH_PARTITION_POINT(i, n, r[i].hi <= x). */
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
