/* idxmap.h — the loader's counters by (heap, stack, tag): a (u64, u64) ->
 * u32 map of its own, not util/map, because this lookup is on the path of
 * every event of a custom heap or a tag (all of a Vere ship's) and
 * stream.c prefetches its slot events ahead: a 24-byte slot holding its
 * own "empty" mark is one cache miss where util/map's entry and used byte
 * are two, and its find inlines. Threads, frames and stacks seen, looked
 * up off that path, are util/map's (on compileall, the stack-heaviest
 * bench capture, frames through util/map cost 1.7 % of the load's samples
 * against 1.2 % here). Insert-only open addressing. */
#ifndef VHEAP_LOAD_IDXMAP_H
#define VHEAP_LOAD_IDXMAP_H

#include <stddef.h>
#include <stdint.h>

struct idx_slot {
    uint64_t a, b;
    uint32_t v;                        /* value + 1; 0 = empty slot          */
};

struct idxmap {
    struct idx_slot *s;
    size_t mask, count;
};

/* The hash of a key: idxmap's, and the call tree's node map's. */
static inline uint64_t idxmap__mix(uint64_t a, uint64_t b)
{
    uint64_t x = a ^ (b * 0xff51afd7ed558ccdull) ^ (b >> 29);
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* The value stored for (a, b), or UINT32_MAX when there is none. */
static inline uint32_t idxmap__get(const struct idxmap *m, uint64_t a, uint64_t b)
{
    if (!m->s)
        return UINT32_MAX;
    for (size_t i = idxmap__mix(a, b) & m->mask;; i = (i + 1) & m->mask) {
        const struct idx_slot *s = &m->s[i];
        if (!s->v)
            return UINT32_MAX;
        if (s->a == a && s->b == b)
            return s->v - 1;
    }
}

/* Adds (a, b) -> v; (a, b) must be absent. 0 or -ENOMEM. */
int idxmap__put(struct idxmap *m, uint64_t a, uint64_t b, uint32_t v);

/* Frees the slots; the map is empty and usable again. */
void idxmap__clear(struct idxmap *m);

#endif
