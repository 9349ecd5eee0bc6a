/* stacks.c — identical call stacks are recorded once and referred to by id.
 *
 * A lock-free open-addressing table of {64-bit hash of the frames and the
 * module generation, id}. The thread that wins the slot (CAS on the hash)
 * takes the next id, writes the STACK record into its own chunk and only
 * then release-stores the id: whoever reads a non-zero id can rely on the
 * record being in the capture with an earlier time, provided it reads the
 * clock only after that load completed (vh_time_after_loads: the TSC is
 * read unfenced). If the record could not be written (recording is being
 * disabled: another thread may still be finishing an event in room it
 * had), the id is never stored: the slot stays "in progress" for good and
 * the caller gets stack 0. A reader that finds its hash with id 0 keeps
 * probing and may insert a duplicate with its own id — harmless. The table
 * grows by generations (each 4x bigger, from mmap, never malloc); lookups
 * go newest to oldest. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "common/leb128.h"
#include "common/stack_diff.h"
#include "preload/internal.h"
#include "preload/lock.h"

struct slot {
    uint64_t hash;                 /* atomic; 0 = empty */
    uint32_t id;                   /* atomic; 0 = being inserted */
    uint32_t pad;
};

struct gen {
    struct slot *slots;
    uint64_t mask;
    uint64_t used;                 /* atomic */
};

#define GENS 5                     /* 64K, 256K, 1M, 4M, 16M slots */
#define GEN0_SLOTS (1ull << 16)
#define MAX_PROBE 256u

static struct gen gens[GENS];
static int ngens;                  /* atomic */
static uint32_t next_id = 1;       /* atomic */
static vh_lock_t grow_lock;

/* A per-thread, direct-mapped cache of recent {hash, id} in front of the
 * shared table: most events repeat a stack the thread had a moment ago, and
 * this saves the probe into a table of megabytes. Ids never change while
 * the table lives (the module generation is in the hash); the table is only
 * reset in a fork child, which bumps `epoch` and so empties every cache.
 * Mapped at the thread's first event, not in static TLS (which glibc takes
 * from every thread's stack); a thread without one probes the table. */
#define IDC_SLOTS 2048u
struct idc {
    uint64_t hash;
    uint32_t id;
    uint32_t epoch;
};
/* The last stack this thread wrote, the base of its next STACK_DIFF
 * record while both are in one run of its chunk (vh_tls.runs): a reader
 * decodes a run from its THREAD record on, so a base there is never lost
 * when the record that names it is not. */
struct diff_base {
    uint32_t valid;                /* 0 while being replaced              */
    uint32_t run;                  /* vh_tls.runs when it was written     */
    uint32_t id, n;
    uint64_t f[VH_MAX_DEPTH];
    struct vh_diff_work work;
    uint8_t body[VH_DIFF_MAX];
};
struct vh_ids {
    struct idc c[IDC_SLOTS];
    struct diff_base base;
};
static uint32_t epoch = 1;         /* atomic */

void vh_stacks_thread(struct vh_tls *t)
{
    if (!t->ids)
        t->ids = vh_thread_map(sizeof(struct vh_ids));
}

void vh_stacks_thread_end(struct vh_tls *t)
{
    struct vh_ids *I = t->ids;
    t->ids = NULL;
    vh_thread_unmap(I, sizeof *I);
}

/* ---- hashing -----------------------------------------------------------------
 * The hash is internal.h's (a fold from the outermost frame inwards): cfi.c
 * hands over the fold of a walk it could reuse, so only its new frames were
 * hashed; any other walk is folded here, to the same value. */
static uint64_t hash_frames(const uint64_t *f, uint32_t n, int truncated, uint32_t gen,
                            uint64_t fold)
{
    if (!fold)
        fold = vh_hash_fold(f, n);
    return vh_hash_final(fold, n, truncated, gen);
}

/* ---- table --------------------------------------------------------------------- */
static int new_gen(int g)
{
    uint64_t slots = GEN0_SLOTS << (2 * g);
    void *p = vh_sys_mmap(NULL, slots * sizeof(struct slot), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -ENOMEM;
    gens[g].slots = p;
    gens[g].mask = slots - 1;
    gens[g].used = 0;
    __atomic_store_n(&ngens, g + 1, __ATOMIC_RELEASE);
    return 0;
}

int vh_stacks_init(void)
{
    return ngens ? 0 : new_gen(0);
}

void vh_stacks_reset(void)
{
    for (int g = 0; g < ngens; g++) {
        vh_sys_munmap(gens[g].slots, (gens[g].mask + 1) * sizeof(struct slot));
        gens[g].slots = NULL;
    }
    ngens = 0;
    next_id = 1;
    __atomic_fetch_add(&epoch, 1, __ATOMIC_RELAXED);
    grow_lock = 0;
    new_gen(0);
}

void vh_stacks_fork_prepare(void)
{
    vh_lock(&grow_lock);
}

void vh_stacks_fork_parent(void)
{
    vh_unlock(&grow_lock);
}

/* Adds a generation if `seen` is still the newest; 0 if there is one now. */
static int grow(int seen)
{
    int rc = 0;
    vh_lock(&grow_lock);
    if (__atomic_load_n(&ngens, __ATOMIC_ACQUIRE) == seen)
        rc = seen < GENS ? new_gen(seen) : -ENOSPC;
    vh_unlock(&grow_lock);
    return rc;
}

/* Puts an id already published elsewhere into generation g too, so the
 * next lookup finds it at once. Best effort. */
static void copy_into(struct gen *G, uint64_t h, uint32_t id)
{
    uint64_t i = h & G->mask;
    for (unsigned p = 0; p < 16; p++, i = (i + 1) & G->mask) {
        struct slot *s = &G->slots[i];
        uint64_t cur = __atomic_load_n(&s->hash, __ATOMIC_RELAXED);
        if (cur == h)
            return;
        if (cur == 0) {
            if (__atomic_compare_exchange_n(&s->hash, &cur, h, 0, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED)) {
                __atomic_fetch_add(&G->used, 1, __ATOMIC_RELAXED);
                __atomic_store_n(&s->id, id, __ATOMIC_RELEASE);
                return;
            }
            if (cur == h)
                return;
        }
    }
}

static uint32_t lookup(uint64_t h)
{
    int ng = __atomic_load_n(&ngens, __ATOMIC_ACQUIRE);
    for (int g = ng - 1; g >= 0; g--) {
        struct gen *G = &gens[g];
        uint64_t i = h & G->mask;
        for (unsigned p = 0; p < MAX_PROBE; p++, i = (i + 1) & G->mask) {
            uint64_t cur = __atomic_load_n(&G->slots[i].hash, __ATOMIC_RELAXED);
            if (cur == 0)
                break;
            if (cur != h)
                continue;
            uint32_t id = __atomic_load_n(&G->slots[i].id, __ATOMIC_ACQUIRE);
            if (!id)
                continue;
            if (g != ng - 1 && gens[ng - 1].used * 2 <= gens[ng - 1].mask)
                copy_into(&gens[ng - 1], h, id);
            return id;
        }
    }
    return 0;
}

/* Bytes of the packed frames (VH_REC_STACK_PACKED): return addresses of
 * one module lie within a few MiB of each other, so a delta takes 3-4
 * bytes where a frame took 8 (a sampled boot of Vere's serf, 64-frame
 * stacks deep in nock: 5.7 MB of STACK records became 2.1 MB). */
static size_t packed_size(const uint64_t *f, uint32_t n)
{
    uint8_t tmp[VH_ULEB_MAX];
    size_t bytes = (size_t)(vh_uleb_put(tmp, n) - tmp);
    for (uint32_t i = 0; i < n; i++)
        bytes += (size_t)(vh_uleb_put(tmp, vh_zigzag(f[i] - (i ? f[i - 1] : 0))) - tmp);
    return bytes;
}

static uint8_t *pack_frames(uint8_t *p, const uint64_t *f, uint32_t n)
{
    p = vh_uleb_put(p, n);
    for (uint32_t i = 0; i < n; i++)
        p = vh_uleb_put(p, vh_zigzag(f[i] - (i ? f[i - 1] : 0)));
    return p;
}

static size_t words(size_t body)
{
    return (sizeof(struct vh_rec_stack) + body + 7) & ~(size_t)7;
}

/* The STACK_DIFF body against the thread's base, in B->body: its length,
 * or 0 when there is no base in this run. */
static size_t diff_body(struct vh_tls *t, struct diff_base *B, uint32_t id, const uint64_t *f,
                        uint32_t n)
{
    if (!B || !B->valid || B->run != t->runs || n > VH_MAX_DEPTH)
        return 0;
    return (size_t)(vh_diff_encode(&B->work, B->body, id, f, n, B->id, B->f, B->n) - B->body);
}

/* The stack just written becomes the base (valid only once whole: a
 * fault's handler may leave the shim midway). */
static void diff_rebase(struct vh_tls *t, struct diff_base *B, uint32_t id, const uint64_t *f,
                        uint32_t n)
{
    if (!B || n > VH_MAX_DEPTH)
        return;
    B->valid = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memcpy(B->f, f, (size_t)n * sizeof *f);
    B->n = n;
    B->id = id;
    B->run = t->runs;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    B->valid = 1;
}

/* 0 when the STACK record is committed, -1 when it is not in the capture.
 * Written as a STACK_DIFF against the thread's last stack when that is
 * shorter and the base is still in the run the record lands in (room for
 * the packed form, the longer, is taken first: a new chunk would start a
 * new run). */
static int write_stack(struct vh_tls *t, uint32_t id, const uint64_t *f, uint32_t n,
                       int truncated)
{
    struct diff_base *B = t->ids ? &t->ids->base : NULL;
    /* Libraries that appeared since the last look (a new stack is the first
     * place their addresses can show up) get their MODULE records first. */
    vh_modules_poll(t);
    size_t packed = words(packed_size(f, n)), diff = diff_body(t, B, id, f, n);
    size_t size = diff && words(diff) < packed ? words(diff) : packed;
    uint32_t run = t->runs;
    uint64_t now = vh_now();
    struct vh_rec_stack *r = vh_rec_begin(t, packed, now);
    if (!r)
        return -1;
    int use_diff = size != packed && t->runs == run;
    if (size != packed && !use_diff)
        size = packed;
    r->h = (struct vh_rec_hdr){ .type = use_diff ? VH_REC_STACK_DIFF : VH_REC_STACK_PACKED,
                                .flags = truncated ? VH_RF_TRUNCATED : 0,
                                .a = (uint16_t)(size / 8),
                                .b = id };
    r->time = now;
    uint8_t *p = (uint8_t *)r->frames, *end = (uint8_t *)r + size;
    if (use_diff) {
        memcpy(p, B->body, diff);
        p += diff;
    } else {
        p = pack_frames(p, f, n);
    }
    while (p < end)
        *p++ = 0;
    vh_rec_commit(t, size);
    diff_rebase(t, B, id, f, n);
    return 0;
}

/* The id of a new stack; 0 with *full set when the table has no room, 0
 * alone when its record could not be written. */
static uint32_t insert(struct vh_tls *t, uint64_t h, const uint64_t *f, uint32_t n,
                       int truncated, int *full)
{
    *full = 1;
    for (;;) {
        int ng = __atomic_load_n(&ngens, __ATOMIC_ACQUIRE);
        if (ng == 0)
            return 0;
        struct gen *G = &gens[ng - 1];
        uint64_t used = __atomic_load_n(&G->used, __ATOMIC_RELAXED);
        uint64_t cap = G->mask + 1;
        if (used * 2 > cap && ng < GENS) {
            if (grow(ng) < 0)
                return 0;
            continue;
        }
        if (used * 4 > cap * 3)
            return 0;              /* the last generation is full */
        uint64_t i = h & G->mask;
        for (unsigned p = 0; p < MAX_PROBE; p++, i = (i + 1) & G->mask) {
            struct slot *s = &G->slots[i];
            uint64_t cur = __atomic_load_n(&s->hash, __ATOMIC_RELAXED);
            if (cur == 0 && __atomic_compare_exchange_n(&s->hash, &cur, h, 0,
                                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
                __atomic_fetch_add(&G->used, 1, __ATOMIC_RELAXED);
                uint32_t id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
                if (write_stack(t, id, f, n, truncated) < 0) {
                    *full = 0;
                    return 0;      /* never published: see the top */
                }
                __atomic_store_n(&s->id, id, __ATOMIC_RELEASE);
                return id;
            }
            if (cur == h) {
                uint32_t id = __atomic_load_n(&s->id, __ATOMIC_ACQUIRE);
                if (id)
                    return id;     /* someone else just inserted it */
            }
        }
        if (ng >= GENS || grow(ng) < 0)
            return 0;              /* probe limit in the last generation */
    }
}

/* A signal handler returns into the shim's trampoline (signals.c), which
 * is not the program's and would not be there without the shim: its frame
 * is dropped (the leading frames of the shim the walk skipped already).
 * Walks known from before never get here twice. */
static uint32_t drop_trampoline(uint64_t *f, uint32_t n, uint64_t *fold)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!(f[i] >= vh_self_lo && f[i] < vh_self_hi))
            f[k++] = f[i];
    if (k != n)
        *fold = 0;                 /* the walk's fold covered the frame */
    return k;
}

VH_NOINLINE uint32_t vh_stack_here(struct vh_tls *t)
{
    /* A dlclose is running: its library may already be gone and another
     * mapped in its place, before the unload bumped the generation that
     * the cached unwind rules and the hash below depend on. */
    if (vh_unlikely(__atomic_load_n(&vh_modules_closing, __ATOMIC_ACQUIRE)))
        vh_modules_poll(t);
    uint32_t max = vh_opt.depth;
    uint64_t buf[vh_unwind_want(max)];
    uint32_t ep = __atomic_load_n(&epoch, __ATOMIC_RELAXED);
    struct vh_walk w = { .buf = buf, .max = max, .era = ep };
    uint32_t n = vh_unwind(t, (uintptr_t)__builtin_frame_address(0), &w);
    uint64_t *tag = w.tag;
    /* A walk known from before (cfi.c): its id is kept with it. */
    if (tag && *tag >> 32 == ep)
        return (uint32_t)*tag;
    uint64_t *f = buf + w.skip;
    n = drop_trampoline(f, n, &w.fold);
    uint64_t h = hash_frames(f, n, w.truncated,
                             __atomic_load_n(&vh_module_gen, __ATOMIC_ACQUIRE), w.fold);
    struct idc *c = t->ids ? &t->ids->c[(h >> 32) & (IDC_SLOTS - 1)] : NULL;
    /* A program with more stacks than the cache holds (a ship: 300K and
     * more, cut walks of the nock interpreter) misses both the cache and
     * the table's slot; the slot's load starts now, beside the cache's. */
    int ng = __atomic_load_n(&ngens, __ATOMIC_ACQUIRE);
    if (ng)
        __builtin_prefetch(&gens[ng - 1].slots[h & gens[ng - 1].mask]);
    uint32_t id;
    if (vh_likely(c && c->hash == h && c->epoch == ep)) {
        id = c->id;
    } else {
        id = lookup(h);
        if (!id) {
            int full;
            id = insert(t, h, f, n, w.truncated, &full);
            if (!id) {
                if (full && vh_cap.hdr)
                    vh_count(&vh_cap.hdr->stack_table_full);
                return 0;
            }
        }
        /* The id may be another thread's, published after the time of its
         * STACK record: this event's time must not be read before that. */
        vh_time_after_loads();
        if (c)
            *c = (struct idc){ .hash = h, .id = id, .epoch = ep };
    }
    if (tag)
        *tag = (uint64_t)ep << 32 | id;
    return id;
}
