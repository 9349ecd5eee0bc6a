/* sample.c — VHEAP_SAMPLE: Poisson sampling by bytes, and the set of the
 * blocks that were sampled.
 *
 * Each byte a thread allocates is a sampling point with probability 1/R
 * (R = the rate, mean bytes between samples): a per-thread countdown of
 * bytes drawn from the exponential distribution, as tcmalloc and jemalloc
 * do. An allocation of s bytes is then sampled with probability
 * 1 - exp(-s/R), which the analyzer inverts. An unsampled call costs the
 * countdown's subtraction and one branch: no walk, no record.
 *
 * Frees are recorded only for sampled blocks, so the shim keeps their
 * addresses: a set of cache-line buckets (7 keys and a flag word each),
 * lock-free: a key goes in by CAS into an empty slot of its bucket or, if
 * the bucket is full, of the next ones (the flag says "look further");
 * a key leaves by CAS back to empty, so there are no tombstones and a free
 * of an unsampled block reads one line of it. Before that, a free looks at
 * a 64 KiB array of counts of the keys in the set by a hash of theirs
 * (mostly in cache): a zero answers "not sampled", the common case, without
 * touching the set. Keys are the address, mixed with the heap id for
 * custom heaps. */
#include <string.h>
#include <sys/mman.h>

#include "preload/internal.h"
#include "preload/ln.h"

uint64_t vh_sample_rate;           /* 0: every call is recorded              */

#define BUCKET_BITS 15u            /* 32K lines (2 MiB, 229K keys): small
                                      enough to stay in cache, the common
                                      free reads one line of it           */
#define NBUCKETS (1u << BUCKET_BITS)
#define KEYS 7u
#define SPILL 16u                  /* buckets a key may move on to          */

struct bucket {
    uint64_t key[KEYS];            /* atomic; 0 = empty                      */
    uint64_t spilled;              /* atomic: a key of this bucket is further */
};
_Static_assert(sizeof(struct bucket) == 64, "one cache line");

static struct bucket *set;
uint8_t vh_sample_counts[VH_SAMPLE_COUNTS]; /* atomic; 255 sticks: always look
                                               (bootstrap blocks' slots too) */
#define counts vh_sample_counts

int vh_sample_init(uint64_t rate)
{
    void *p = vh_sys_mmap(NULL, (size_t)NBUCKETS * sizeof *set, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    set = p;
    vh_sample_rate = rate;
    return 0;
}

/* A fork child starts with no sampled blocks of its own recorded. Counts
 * stuck at 255 stay: they mark bootstrap blocks too (bootstrap.c), which
 * the child may free; for others, one look in the set too many. */
void vh_sample_fork_child(void)
{
    if (set)
        memset(set, 0, (size_t)NBUCKETS * sizeof *set);
    for (uint32_t i = 0; i < VH_SAMPLE_COUNTS; i++)
        if (counts[i] != 255)
            counts[i] = 0;
}

/* A key being moved by a sweep carries this bit (user addresses stay below
 * it); the hash leaves it out, so clearing it keeps the key's bucket. */
#define MOVING (1ull << 47)

/* The set's hash (MOVING left out). */
static inline uint64_t mix(uint64_t key)
{
    key &= ~MOVING;
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return key;
}

static void count(uint64_t key, int up)
{
    uint8_t *c = &counts[vh_sample_slot(key)];   /* MOVING: not in the slot's bits */
    uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);
    while (v != 255 && (up || v) &&
           !__atomic_compare_exchange_n(c, &v, (uint8_t)(up ? v + 1 : v - 1), 1,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

int vh_sampled_add(uint64_t key)
{
    uint64_t h = mix(key);
    uint32_t b = (uint32_t)(h >> (64 - BUCKET_BITS));
    count(key, 1);                 /* before the key: a take finds it counted */
    for (unsigned n = 0; n < SPILL; n++, b = (b + 1) & (NBUCKETS - 1)) {
        struct bucket *B = &set[b];
        for (unsigned i = 0; i < KEYS; i++) {
            uint64_t cur = __atomic_load_n(&B->key[i], __ATOMIC_RELAXED);
            if (cur == key) {
                count(key, 0);     /* still there: a custom heap's stale key */
                return 1;
            }
            if (cur == 0 && __atomic_compare_exchange_n(&B->key[i], &cur, key, 0,
                                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                return 1;
        }
        __atomic_store_n(&B->spilled, 1, __ATOMIC_RELAXED);
    }
    count(key, 0);
    return 0;
}

int vh_sampled_take(uint64_t key)
{
    if (vh_likely(!vh_sampled_maybe(key)))
        return 0;
    uint64_t h = mix(key);
    uint32_t b = (uint32_t)(h >> (64 - BUCKET_BITS));
    for (unsigned n = 0; n < SPILL; n++, b = (b + 1) & (NBUCKETS - 1)) {
        struct bucket *B = &set[b];
        for (unsigned i = 0; i < KEYS; i++) {
            uint64_t cur = key;
            if (__atomic_load_n(&B->key[i], __ATOMIC_RELAXED) == key &&
                __atomic_compare_exchange_n(&B->key[i], &cur, 0, 0, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED)) {
                count(key, 0);
                return 1;
            }
        }
        if (!__atomic_load_n(&B->spilled, __ATOMIC_RELAXED))
            return 0;
    }
    return 0;
}

/* ---- the countdown ----------------------------------------------------------- */
static inline uint64_t next_random(struct vh_tls *t)
{
    uint64_t x = t->rng;           /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    t->rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* Bytes to the next sampling point: exponential with mean R. */
static int64_t interval(struct vh_tls *t)
{
    double u = ((double)(next_random(t) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double v = -vh_ln(u) * (double)vh_sample_rate;
    return v < 1.0 ? 1 : v > 9.0e18 ? INT64_MAX / 2 : (int64_t)v;
}

VH_NOINLINE int vh_sample_due(struct vh_tls *t, uint64_t size)
{
    if (vh_unlikely(!t->rng)) {
        /* A thread's first draw: its countdown starts now, so its first
         * allocation is sampled no more often than any other. */
        t->rng = (uint64_t)(uintptr_t)t ^ vh_tsc(0) ^ 0x9e3779b97f4a7c15ull;
        if (!t->rng)
            t->rng = 1;
        uint64_t left = (uint64_t)interval(t);
        if (size < left) {
            t->sample_left = left - size;
            return 0;
        }
    }
    /* One sample however many points the allocation spans. The points
     * are a Poisson process: the distance from the allocation's end to
     * the next one is a fresh exponential draw, whatever came before. */
    t->sample_left = (uint64_t)interval(t);
    return 1;
}

/* ---- sweeps (custom heaps: a heap destroyed, a range freed or moved) ------ */
void vh_sampled_sweep(uint64_t (*fn)(uint64_t key, void *arg), void *arg)
{
    if (!set)
        return;
    /* Keys moved are re-added marked, so this pass never moves one twice
     * (a range may slide onto itself); the second pass unmarks them. */
    for (uint32_t b = 0; b < NBUCKETS; b++) {
        for (unsigned i = 0; i < KEYS; i++) {
            uint64_t k = __atomic_load_n(&set[b].key[i], __ATOMIC_RELAXED);
            if (!k || (k & MOVING))
                continue;
            uint64_t nk = fn(k, arg);
            if (nk == k || !__atomic_compare_exchange_n(&set[b].key[i], &k, 0, 0,
                                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                continue;
            count(k, 0);
            if (nk)
                vh_sampled_add(nk | MOVING);
        }
    }
    for (uint32_t b = 0; b < NBUCKETS; b++)
        for (unsigned i = 0; i < KEYS; i++) {
            uint64_t k = __atomic_load_n(&set[b].key[i], __ATOMIC_RELAXED);
            if (k & MOVING)
                __atomic_compare_exchange_n(&set[b].key[i], &k, k & ~MOVING, 0,
                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        }
}
