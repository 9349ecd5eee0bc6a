/* stack_diff.h — the body of a STACK_DIFF record (capture_format.h, 0x8f):
 * a stack written as what differs from an earlier one, its base. The shim
 * encodes (preload/stacks.c), the reader decodes (analyze/capture/reader.c).
 *
 * Why: a sampled boot of Vere's serf writes ~22K new stacks, nearly all cut
 * at 64 frames deep in nock, 190 bytes each packed (4.3 MB of a 7.3 MB
 * capture). Consecutive ones share neither end (the cut slides along the
 * recursion) but share long runs at shifted places, and the recursion
 * repeats itself within a stack: copies from the base and from the stack's
 * own frames take about a fifth of the bytes.
 *
 * After struct vh_rec_stack (h.b the id), unsigned LEB128 varints:
 *   base distance d (>= 1): the base is stack id h.b - d
 *   frame count n (<= VH_MAX_DEPTH)
 *   ops, until n frames are out; the window is the base's frames followed
 *   by the frames out so far, innermost first:
 *     op even: a literal run of op/2 + 1 frames, each a zigzag delta from
 *              the frame before it (the first frame out's from the base's
 *              first frame, or 0 for a base of no frames)
 *     op odd:  a copy of op/2 + VH_DIFF_MIN_COPY frames from the window,
 *              starting s + 1 frames back from the next frame out (s the
 *              varint after op); it may overlap what it produces
 * A run or a copy past n frames, a copy from before the window, or a base
 * distance reaching id 0, is damage. */
#ifndef VHEAP_STACK_DIFF_H
#define VHEAP_STACK_DIFF_H

#include <stdint.h>
#include <string.h>

#include "common/capture_format.h"

#define VH_DIFF_MIN_COPY 2u
#define VH_DIFF_HASH 256u               /* heads of the encoder's match chains */
#define VH_DIFF_TRIES 4u                /* candidates a frame tries           */
/* The longest body: two varints, then per frame at most a literal's op
 * (2 bytes) and delta (10). */
#define VH_DIFF_MAX (2u * VH_ULEB_MAX + 12u * VH_MAX_DEPTH)

/* The encoder's work space (a thread's, not on the stack of the hook). */
struct vh_diff_work {
    uint64_t win[2 * VH_MAX_DEPTH];     /* the base's frames, the stack's   */
    uint16_t head[VH_DIFF_HASH];        /* window position + 1, or 0        */
    uint16_t chain[2 * VH_MAX_DEPTH];   /* the previous position + 1 alike  */
};

static inline unsigned vh_diff_hash(uint64_t f)
{
    return (unsigned)((f * 0x9e3779b97f4a7c15ull) >> 56);
}

/* Window position j: the base's frames, then the stack's. */
static inline uint64_t vh_diff_win(const uint64_t *base, uint32_t bn, const uint64_t *f,
                                   uint32_t j)
{
    return j < bn ? base[j] : f[j - bn];
}

static inline void vh_diff_note(struct vh_diff_work *w, uint32_t j)
{
    unsigned h = vh_diff_hash(w->win[j]);
    w->chain[j] = w->head[h];
    w->head[h] = (uint16_t)(j + 1);
}

/* The literal run f[from, to) at p, deltas from *prev. */
static inline uint8_t *vh_diff_literals(uint8_t *p, const uint64_t *f, uint32_t from,
                                        uint32_t to, uint64_t *prev)
{
    if (from == to)
        return p;
    p = vh_uleb_put(p, (uint64_t)(to - from - 1) << 1);
    for (uint32_t k = from; k < to; k++) {
        p = vh_uleb_put(p, vh_zigzag(f[k] - *prev));
        *prev = f[k];
    }
    return p;
}

/* The longest match for the window's frames [p, end) among the last
 * VH_DIFF_TRIES positions before p holding the same frame: its length, its
 * start in *from. */
static inline uint32_t vh_diff_match(const struct vh_diff_work *w, uint32_t p, uint32_t end,
                                     uint32_t *from)
{
    const uint64_t *v = w->win;
    uint32_t best = 0;
    unsigned tries = 0;
    for (uint32_t j = w->head[vh_diff_hash(v[p])]; j && tries < VH_DIFF_TRIES && p + best < end;
         j = w->chain[j - 1], tries++) {
        uint32_t s = j - 1, len = 0;
        /* a candidate that cannot be longer fails here, at once */
        if (best && v[s + best] != v[p + best])
            continue;
        while (p + len < end && v[s + len] == v[p + len])
            len++;
        if (len > best) {
            best = len;
            *from = s;
        }
    }
    return best;
}

/* Encodes stack `id` of frames f[0..n) against base (id base_id, frames
 * base[0..bn)), both at most VH_MAX_DEPTH frames, at out (room for
 * VH_DIFF_MAX bytes): greedy, each frame taking the longest of a few
 * matches. Returns the end of the body. */
static inline uint8_t *vh_diff_encode(struct vh_diff_work *w, uint8_t *out, uint32_t id,
                                      const uint64_t *f, uint32_t n, uint32_t base_id,
                                      const uint64_t *base, uint32_t bn)
{
    uint8_t *p = vh_uleb_put(out, id - base_id);
    uint64_t prev = bn ? base[0] : 0;
    uint32_t lit = 0, i = 0;

    p = vh_uleb_put(p, n);
    if (bn)                        /* (a stack of no frames may be NULL) */
        memcpy(w->win, base, (size_t)bn * sizeof *base);
    if (n)
        memcpy(w->win + bn, f, (size_t)n * sizeof *f);
    memset(w->head, 0, sizeof w->head);
    for (uint32_t j = 0; j < bn; j++)
        vh_diff_note(w, j);
    while (i < n) {
        uint32_t from = 0, len = vh_diff_match(w, bn + i, bn + n, &from);
        if (len < VH_DIFF_MIN_COPY) {
            vh_diff_note(w, bn + i++);
            continue;
        }
        p = vh_diff_literals(p, f, lit, i, &prev);
        p = vh_uleb_put(p, (uint64_t)(len - VH_DIFF_MIN_COPY) << 1 | 1);
        p = vh_uleb_put(p, bn + i - from - 1);
        for (uint32_t k = 0; k < len; k++)
            vh_diff_note(w, bn + i + k);
        i += len;
        lit = i;
        prev = f[i - 1];
    }
    return vh_diff_literals(p, f, lit, n, &prev);
}

/* The head of the body at [p, end): the base distance and the frame count.
 * 0, or -1 when they are cut or out of range (a base before id 1, more
 * than VH_MAX_DEPTH frames). *p moves past them. */
static inline int vh_diff_head(const uint8_t **p, const uint8_t *end, uint32_t id,
                               uint32_t *base_id, uint32_t *n)
{
    uint64_t d, count;
    if (vh_uleb_get(p, end, &d) || vh_uleb_get(p, end, &count) || d == 0 || d >= id ||
        count > VH_MAX_DEPTH)
        return -1;
    *base_id = id - (uint32_t)d;
    *n = (uint32_t)count;
    return 0;
}

/* Decodes the ops at [p, end) into out[0..n) against base[0..bn). With
 * base NULL only checks what can be checked without it (bn is then taken
 * as unbounded) and writes nothing. 0, or -1 when malformed. */
static inline int vh_diff_ops(const uint8_t *p, const uint8_t *end, const uint64_t *base,
                              uint32_t bn, uint64_t *out, uint32_t n)
{
    uint64_t prev = base && bn ? base[0] : 0, op, v;
    uint32_t i = 0;
    while (i < n) {
        if (vh_uleb_get(&p, end, &op))
            return -1;
        uint64_t len = (op >> 1) + ((op & 1) ? VH_DIFF_MIN_COPY : 1);
        if (len > n - i)
            return -1;
        if (!(op & 1)) {
            for (uint64_t k = 0; k < len; k++, i++) {
                if (vh_uleb_get(&p, end, &v))
                    return -1;
                prev += vh_unzigzag(v);
                if (base)
                    out[i] = prev;
            }
            continue;
        }
        if (vh_uleb_get(&p, end, &v))
            return -1;
        if (!base) {
            i += (uint32_t)len;
            continue;
        }
        if (v >= (uint64_t)bn + i)
            return -1;             /* from before the window */
        uint32_t s = bn + i - (uint32_t)v - 1;
        for (uint64_t k = 0; k < len; k++, i++, s++)
            out[i] = vh_diff_win(base, bn, out, s);
        prev = out[i - 1];
    }
    return 0;
}

#endif
