/* util/cmp.h — ordering: three-way comparisons for qsort comparators (-1,
 * 0 or 1 on unsigned keys, one key or two, the second breaking ties of the
 * first), so that a comparator says which keys it orders by and nothing
 * else; and the binary search over an array so ordered. */
#ifndef VHEAP_CMP_H
#define VHEAP_CMP_H

#include <stddef.h>
#include <stdint.h>

#include "common/partition.h"   /* the binary search, VH_PARTITION_POINT */

static inline int vh_cmp(uint64_t a, uint64_t b)
{
    return (a > b) - (a < b);
}

/* (a1, a2) against (b1, b2). */
static inline int vh_cmp2(uint64_t a1, uint64_t b1, uint64_t a2, uint64_t b2)
{
    return a1 != b1 ? vh_cmp(a1, b1) : vh_cmp(a2, b2);
}

#endif
