/* bptree.h — B+ trees: ordered maps from a u64 key to (a, b, f). frag's
 * hold a heap's blocks by address (a = usable, b = requested, f = 1 for a
 * nested heap's region rather than a block) and its holes by size (a = how
 * many). Wide nodes: with a million
 * blocks a lookup reads about four nodes, the upper ones hot in cache, where
 * a binary tree reads twenty-odd scattered ones — the cost of `frag
 * --series`. Nodes live in two pools addressed by index (0 = none); room is
 * reserved before a change, so that none fails halfway. Leaves are chained
 * in key order for a position's neighbours; an empty leaf is freed at once,
 * and a node below a quarter full is merged into a sibling when the two fit
 * in three quarters of one, which keeps the pools bounded by the live set. */
#ifndef VHEAP_BPTREE_H
#define VHEAP_BPTREE_H

#include <stddef.h>
#include <stdint.h>

#define LCAP 30u                   /* entries per leaf                       */
#define ICAP 30u                   /* keys per inner node                    */
#define MAXH 24                    /* levels: far more than 2^32 entries need */

/* The count and the keys first, nodes 64-aligned: a search reads only the
 * first four cache lines (the spare entry, used just before a split, ends
 * the fourth). */
struct bleaf {
    uint32_t n, pad;
    uint64_t key[LCAP + 1];        /* one spare entry, before a split        */
    uint64_t a[LCAP + 1], b[LCAP + 1];
    uint32_t prev, next;           /* next: also the free list               */
    uint8_t f[LCAP + 1];
} __attribute__((aligned(64)));

struct binner {
    uint32_t n;                    /* keys; n + 1 children                   */
    uint32_t pad;
    uint64_t key[ICAP + 1];        /* child[i] < key[i] <= child[i + 1]      */
    uint32_t child[ICAP + 2];      /* child[0]: also the free list           */
} __attribute__((aligned(64)));

_Static_assert(offsetof(struct bleaf, key) + sizeof(uint64_t) * (LCAP + 1) <= 256 &&
               offsetof(struct binner, key) + sizeof(uint64_t) * (ICAP + 1) <= 256, "searches read four lines");

struct bpool {
    struct bleaf *l;
    struct binner *in;
    uint32_t nl, capl, freel, nfreel;
    uint32_t ni, capi, freei, nfreei;
};

struct btree {
    uint32_t root, height;         /* height 0: the root is a leaf           */
    uint32_t first, last;          /* leaves at both ends                    */
};

/* A position: entry `i` of leaf `leaf` (0: none), and the way down to it. */
struct bpos {
    uint32_t leaf, i;
    int depth;
    uint32_t node[MAXH], slot[MAXH];
};

#define LF(p, x) (&(p)->l[x])
#define IN(p, x) (&(p)->in[x])


/* Room for `leaves` new leaves and `inners` new inner nodes: a change made
 * after it cannot fail. 0 or -ENOMEM. */
int bpool_reserve(struct bpool *p, uint32_t leaves, uint32_t inners);
/* Inserts (key, a, b, f) at pos (from bt_seek: key absent), room reserved. */
void bt_insert(struct bpool *p, struct btree *t, struct bpos *pos, uint64_t key, uint64_t a,
               uint64_t b, uint8_t f);
/* Takes out the entry at pos (from bt_seek: key present). */
void bt_delete(struct bpool *p, struct btree *t, struct bpos *pos);

/* Entries of a sorted array below / at most key. */
static inline uint32_t count_below(const uint64_t *k, uint32_t n, uint64_t key)
{
    uint32_t lo = 0;
    while (n > 1) {
        uint32_t half = n / 2;
        lo = k[lo + half - 1] < key ? lo + half : lo;
        n -= half;
    }
    return lo + (n == 1 && k[lo] < key);
}

static inline uint32_t count_upto(const uint64_t *k, uint32_t n, uint64_t key)
{
    uint32_t lo = 0;
    while (n > 1) {
        uint32_t half = n / 2;
        lo = k[lo + half - 1] <= key ? lo + half : lo;
        n -= half;
    }
    return lo + (n == 1 && k[lo] <= key);
}

/* The entry before position (leaf, i) in key order: 0 if none. */
static inline uint32_t bt_before(const struct bpool *p, uint32_t leaf, uint32_t i, uint32_t *j)
{
    if (!leaf)
        return 0;
    if (i) {
        *j = i - 1;
        return leaf;
    }
    leaf = LF(p, leaf)->prev;
    if (leaf)
        *j = LF(p, leaf)->n - 1;
    return leaf;
}

/* The entry at or after position (leaf, i): 0 if none. */
static inline uint32_t bt_from(const struct bpool *p, uint32_t leaf, uint32_t i, uint32_t *j)
{
    if (!leaf)
        return 0;
    if (i < LF(p, leaf)->n) {
        *j = i;
        return leaf;
    }
    leaf = LF(p, leaf)->next;
    *j = 0;
    return leaf;
}

/* Down to the leaf whose range holds key; pos->i is the first entry >= key
 * there. Returns 1 if that entry is key. Inline: frag's every block change
 * starts with one. */
static inline int bt_seek(const struct bpool *p, const struct btree *t, uint64_t key, struct bpos *pos)
{
    uint32_t x = t->root;
    const struct bleaf *l;

    pos->depth = 0;
    if (!x) {
        pos->leaf = pos->i = 0;
        return 0;
    }
    for (uint32_t h = t->height; h; h--) {
        const struct binner *in = IN(p, x);
        uint32_t s = count_upto(in->key, in->n, key);
        pos->node[pos->depth] = x;
        pos->slot[pos->depth++] = s;
        x = in->child[s];
    }
    l = LF(p, x);
    pos->leaf = x;
    pos->i = count_below(l->key, l->n, key);
    return pos->i < l->n && l->key[pos->i] == key;
}

#endif
