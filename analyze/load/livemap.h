/* livemap.h — the blocks live in one heap, by address, while loading: linear
 * probing with backward-shift deletion (no tombstones, so endless alloc/free
 * never degrades it), one map per heap so that destroying a heap visits only
 * its blocks. Address 0 marks an empty slot: no live block has it. */
#ifndef VHEAP_LIVEMAP_H
#define VHEAP_LIVEMAP_H

#include <stddef.h>
#include <stdint.h>

struct vh_live_block {             /* 40 bytes: the loader's main memory  */
    uint64_t addr;
    uint64_t size;                 /* requested bytes                       */
    uint64_t time;                 /* when it was allocated                 */
    uint32_t agg;                  /* the loader's (heap, stack, tag) index */
    uint32_t slack;                /* usable - requested                    */
    uint32_t tid;
    uint32_t serial;               /* which allocation (mod 2^32): with the
                                      address, tells a block from a later
                                      one at the same address               */
};

/* Defined here so that the lookups below inline into the loader's loop
 * (they run several times per event); only livemap.c changes the fields. */
struct livemap {
    struct vh_live_block *slots;
    size_t mask;                       /* slots - 1                        */
    size_t count;
    size_t limit;                      /* grow beyond this count           */
    unsigned shift;                    /* 64 - log2(slots)                 */
};

/* NULL when out of memory. */
struct livemap *livemap__new(void);
void livemap__free(struct livemap *m);

/* Fibonacci hashing of the address (blocks are 16-aligned: the low bits
 * carry nothing; a multiply spreads the rest into the top bits we keep). */
static inline size_t livemap__home(const struct livemap *m, uint64_t addr)
{
    return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> m->shift);
}

/* The live block at addr, or NULL. */
static inline struct vh_live_block *livemap__find(struct livemap *m, uint64_t addr)
{
    size_t i = livemap__home(m, addr);
    for (;;) {
        struct vh_live_block *b = &m->slots[i];
        if (b->addr == addr)
            return addr ? b : NULL;
        if (!b->addr)
            return NULL;
        i = (i + 1) & m->mask;
    }
}

/* The same, trying slot `hint` first (where an earlier find saw it; blocks
 * move when others are inserted or removed, so it is checked). */
static inline struct vh_live_block *livemap__find_at(struct livemap *m, uint64_t addr, size_t hint)
{
    if (hint <= m->mask && m->slots[hint].addr == addr && addr)
        return &m->slots[hint];
    return livemap__find(m, addr);
}

/* The slot of a block returned by find/insert. */
static inline size_t livemap__slot(const struct livemap *m, const struct vh_live_block *b)
{
    return (size_t)(b - m->slots);
}

/* The slot for addr (addr must not be 0): the existing block with *existed
 * = 1, or a new slot holding only addr with *existed = 0. NULL when out of
 * memory. Invalidates pointers returned earlier. */
struct vh_live_block *livemap__insert(struct livemap *m, uint64_t addr, int *existed);

/* Removes a block returned by find/insert. Invalidates other pointers. */
void livemap__remove(struct livemap *m, struct vh_live_block *b);

/* Hints that addr will be looked up soon (the loader reads ahead). */
static inline void livemap__prefetch(const struct livemap *m, uint64_t addr)
{
    __builtin_prefetch(&m->slots[livemap__home(m, addr)], 1);
}

size_t livemap__count(const struct livemap *m);

/* Iteration: start with *pos = 0; NULL at the end. No changes meanwhile. */
struct vh_live_block *livemap__next(struct livemap *m, size_t *pos);

#endif
