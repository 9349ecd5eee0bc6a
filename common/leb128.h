/* leb128.h — the one LEB128 varint codec: the capture's compact records
 * (capture_format.h: the shim writes them, the analyzer's reader reads
 * them), the analyzer's event store and its protobuf encoder. Unsigned
 * LEB128: 7 bits a byte, least significant group first, high bit set on
 * every byte but the last; at most 10 bytes, a 10th byte holding only bit
 * 63. zigzag maps a signed delta to unsigned (0, -1, 1, -2 -> 0, 1, 2, 3).
 * All inline: the shim's hooks encode with it on every call. */
#ifndef VHEAP_LEB128_H
#define VHEAP_LEB128_H

#include <stdint.h>

#define VH_ULEB_MAX 10u                   /* bytes of the longest varint    */

static inline uint64_t vh_zigzag(uint64_t delta)
{
    return (delta << 1) ^ (uint64_t)((int64_t)delta >> 63);
}

static inline uint64_t vh_unzigzag(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

/* Writes v at p (room for VH_ULEB_MAX bytes); returns the byte after it. */
static inline uint8_t *vh_uleb_put(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Why a varint, or a compact record (capture_format.h), could not be
 * decoded. */
enum vh_dec_error {
    VH_DEC_CUT = -1,               /* runs past the end of the valid bytes   */
    VH_DEC_VARINT = -2,            /* a varint longer than 10 bytes / 64 bits */
    VH_DEC_RANGE = -3,             /* a field out of its range, unknown bits */
};

/* vh_uleb_get for a varint known to lie before the end of the valid bytes
 * (at least VH_ULEB_MAX of them left): no bound check. */
static inline int vh_uleb_get_near(const uint8_t **p, uint64_t *v)
{
    const uint8_t *q = *p;
    uint64_t r = q[0], b;

    if (__builtin_expect(r < 0x80, 1)) {
        *v = r;
        *p = q + 1;
        return 0;
    }
    r &= 0x7f;
    for (unsigned i = 1; i < VH_ULEB_MAX - 1; i++) {
        b = q[i];
        r |= (b & 0x7f) << (7 * i);
        if (b < 0x80) {
            *p = q + i + 1;
            *v = r;
            return 0;
        }
    }
    if (q[VH_ULEB_MAX - 1] > 1)
        return VH_DEC_VARINT;
    *v = r | (uint64_t)q[VH_ULEB_MAX - 1] << 63;
    *p = q + VH_ULEB_MAX;
    return 0;
}

/* Reads the varint at *p (before end) into *v and moves *p past it; 0, or
 * VH_DEC_CUT / VH_DEC_VARINT (*p unchanged). */
static inline int vh_uleb_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    const uint8_t *q = *p;
    uint64_t r, b;

    if (__builtin_expect(q < end && *q < 0x80, 1)) {   /* most fields: one byte */
        *v = *q;
        *p = q + 1;
        return 0;
    }
    if (end - q >= (long)VH_ULEB_MAX)
        return vh_uleb_get_near(p, v);   /* room for the longest: no bound checks */
    r = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (q >= end)
            return VH_DEC_CUT;
        b = *q++;
        if (shift == 63 && b > 1)
            return VH_DEC_VARINT;
        r |= (b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    *p = q;
    *v = r;
    return 0;
}

#endif
