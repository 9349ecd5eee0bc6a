/* size_parse.h — the one way vheap reads a size, in the shim (VHEAP_SAMPLE,
 * VHEAP_CHUNK_SIZE, ...) and in the analyzer (--min-bytes, --page-size, ...):
 * digits, then optionally a unit. K, M, G, T (any case) are powers of 1000,
 * as in the sizes vheap prints ("2.20K") and as heaptrack_print writes them;
 * Ki, Mi, Gi, Ti are powers of 1024; a B may follow either ("4KB", "4KiB")
 * or stand alone ("123B"). Header-only and free of libc state so that the
 * shim can use it before anything is set up. */
#ifndef VHEAP_SIZE_PARSE_H
#define VHEAP_SIZE_PARSE_H

#include <stdint.h>

/* 0 and *out = the value, or -1 when `s` is not such a size or its value is
 * above `max` (leading signs and spaces are not sizes). With units == 0
 * only plain digits are taken. */
static inline int vh_parse_size(const char *s, int units, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10))
            return -1;
        v = v * 10 + d;
    }
    if (*p && units) {
        static const char letters[] = "kmgt";
        unsigned power = 0;
        for (unsigned i = 0; letters[i]; i++)
            if ((*p | 0x20) == letters[i])
                power = i + 1;
        uint64_t base = 1000;
        if (power) {
            p++;
            if ((*p | 0x20) == 'i') {
                base = 1024;
                p++;
            }
        }
        if ((*p | 0x20) == 'b')
            p++;
        for (unsigned i = 0; i < power; i++) {
            if (v > UINT64_MAX / base)
                return -1;
            v *= base;
        }
    }
    if (*p || v > max)
        return -1;
    *out = v;
    return 0;
}

#endif
