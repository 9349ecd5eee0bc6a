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

/* *arr (any T *, passed as &ptr) holds n of *cap elements of `elem` bytes.
 * When n == *cap, reallocates to twice *cap (or `first`). 0, or -ENOMEM
 * with the array and *cap unchanged. */
static inline int vh_grow(void *arr, size_t *cap, size_t n, size_t elem, size_t first)
{
    void *old, *p;
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : first;
    if (c < *cap || c > SIZE_MAX / elem)
        return -ENOMEM;
    memcpy(&old, arr, sizeof old); /* the pointer, whatever its type */
    if (!(p = realloc(old, c * elem)))
        return -ENOMEM;
    memcpy(arr, &p, sizeof p);
    *cap = c;
    return 0;
}

#endif
