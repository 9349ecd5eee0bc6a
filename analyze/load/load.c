/* load.c — one pass over a capture's event stream into SQLite. Memory holds
 * the live blocks (a livemap per heap), counters per (heap, stack, tag),
 * threads, modules and distinct frames; rows stream out as they are final
 * (the normalized events and live-set checkpoints through events.h's
 * writer), the rest at the end in one transaction. The capture is read on
 * a thread of its own (the feeder); small cross-thread misorders of the
 * records' times are settled on the way (settle()). Definitions:
 * docs/schema.md. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyze/capture/reader.h"
#include "analyze/util/diag.h"
#include "analyze/util/fmt.h"
#include "analyze/util/json.h"
#include "analyze/capture/coarse.h"
#include "analyze/store/db.h"
#include "analyze/store/events.h"
#include "analyze/util/grow.h"
#include "analyze/load/livemap.h"
#include "analyze/load/reach.h"
#include "analyze/load/load.h"
#include "analyze/load/rowq.h"
#include "analyze/util/trend.h"
#include "analyze/util/weight.h"

#if __has_include("analyze/symbols/symbols.h")
#include "analyze/symbols/symbols.h"
#define HAVE_SYMBOLS 1
#else
#define HAVE_SYMBOLS 0
#endif


#define MAX_HEAPS 65536u              /* ALLOC/FREE carry the heap in 16 bits */
#define SERIES_TARGET 20000u          /* at most about this many buckets     */
#define MIN_BUCKET_NS 1000000ull      /* 1 ms                                */
#define SMALL_CAPTURE (64ull << 20)   /* a capture file below this size gets
                                         a DB of 1 KiB pages (load__capture) */
#define PROGRESS_EVERY 0xffffu        /* records between progress checks     */
#define AHEAD 16u                     /* events read ahead, to prefetch      */
#define BATCH 1024u                   /* events handed over at once: the ring
                                         stays in the caches (80 KiB each)   */
#define NBATCH 8u                     /* batches in flight                   */
#define SETTLE_NS 50000ull            /* how far ahead settle() looks (50
                                         us): across threads, times may be
                                         misordered by a memory latency      */
#define MAX_MISSING_STACKS 1000000u   /* (heap, stack, tag) counters kept for
                                         stack ids never described; beyond,
                                         such ids count as stack 0, so that a
                                         damaged or hostile capture naming
                                         ids at random cannot grow the
                                         counters with its event count      */
#define VH_STR_(x) #x
#define VH_STR(x) VH_STR_(x)

/* ---- a small (u64, u64) -> u32 map -------------------------------------- */

struct idx_slot {
    uint64_t a, b;
    uint32_t v;                        /* value + 1; 0 = empty slot          */
};

struct idxmap {
    struct idx_slot *s;
    size_t mask, count;
};

static inline uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t x = a ^ (b * 0xff51afd7ed558ccdull) ^ (b >> 29);
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* The value stored for (a, b), or UINT32_MAX when there is none. */
static inline uint32_t idx_get(const struct idxmap *m, uint64_t a, uint64_t b)
{
    if (!m->s)
        return UINT32_MAX;
    for (size_t i = mix(a, b) & m->mask;; i = (i + 1) & m->mask) {
        const struct idx_slot *s = &m->s[i];
        if (!s->v)
            return UINT32_MAX;
        if (s->a == a && s->b == b)
            return s->v - 1;
    }
}

/* Adds (a, b) -> v; (a, b) must be absent. 0 or -ENOMEM. */
static int idx_put(struct idxmap *m, uint64_t a, uint64_t b, uint32_t v)
{
    if ((m->count + 1) * 2 > m->mask + 1 || !m->s) {
        size_t n = m->s ? (m->mask + 1) * 2 : 1024;
        struct idx_slot *s = vh_calloc_table(n, sizeof *s);
        if (!s)
            return -ENOMEM;
        for (size_t i = 0; m->s && i <= m->mask; i++) {
            if (!m->s[i].v)
                continue;
            size_t j = mix(m->s[i].a, m->s[i].b) & (n - 1);
            while (s[j].v)
                j = (j + 1) & (n - 1);
            s[j] = m->s[i];
        }
        free(m->s);
        m->s = s;
        m->mask = n - 1;
    }
    size_t i = mix(a, b) & m->mask;
    while (m->s[i].v)
        i = (i + 1) & m->mask;
    m->s[i] = (struct idx_slot){ .a = a, .b = b, .v = v + 1 };
    m->count++;
    return 0;
}

/* ---- the call tree's nodes: (parent, frame) -> node ----------------------
 * Millions of entries probed at random (compileall: 2.1M), so a slot is
 * 16 bytes, the key one word, and a miss becomes the insert at the slot it
 * ended on: one probe sequence a new node, not two. */
struct node_slot {
    uint64_t key;                      /* parent << 32 | frame; 0: empty
                                          (frame ids start at 1)            */
    uint32_t id;
};

struct nodemap {
    struct node_slot *s;
    size_t mask, count;
};

static inline size_t nodemap_home(const struct nodemap *m, uint64_t key)
{
    return mix(key, 0) & m->mask;
}

/* Adds key -> id, known to be absent, with room reserved. */
static inline void nodemap_add(struct nodemap *m, uint64_t key, uint32_t id)
{
    size_t i = nodemap_home(m, key);
    while (m->s[i].key)
        i = (i + 1) & m->mask;
    m->s[i] = (struct node_slot){ .key = key, .id = id };
    m->count++;
}

/* Twice the slots, every node added again. */
static int nodemap_grow(struct nodemap *m)
{
    struct nodemap old = *m;
    size_t n = m->s ? (m->mask + 1) * 2 : 4096;

    if (!(m->s = vh_calloc_table(n, sizeof *m->s))) {
        *m = old;
        return -ENOMEM;
    }
    m->mask = n - 1;
    m->count = 0;
    for (size_t i = 0; old.s && i <= old.mask; i++)
        if (old.s[i].key)
            nodemap_add(m, old.s[i].key, old.s[i].id);
    free(old.s);
    return 0;
}

/* The node of (parent, frame): its id, or, when there is none, the id
 * `next` given to it (*made = 1). UINT32_MAX when out of memory. */
static inline uint32_t nodemap_get(struct nodemap *m, uint32_t parent, uint32_t frame,
                                   uint32_t next, int *made)
{
    uint64_t key = (uint64_t)parent << 32 | frame;
    size_t i;

    *made = 0;
    /* grown at 5/8 full: linear probes stay short */
    if (!m->s || (m->count + 1) * 8 > (m->mask + 1) * 5) {
        if (nodemap_grow(m))
            return UINT32_MAX;
    }
    for (i = nodemap_home(m, key); m->s[i].key; i = (i + 1) & m->mask)
        if (m->s[i].key == key)
            return m->s[i].id;
    m->s[i] = (struct node_slot){ .key = key, .id = next };
    m->count++;
    *made = 1;
    return next;
}

/* Room for `more` new nodes without growing. 0 or -ENOMEM. */
static int nodemap_reserve(struct nodemap *m, size_t more)
{
    while (!m->s || (m->count + more) * 8 > (m->mask + 1) * 5)
        if (nodemap_grow(m))
            return -ENOMEM;
    return 0;
}

/* ---- loader state -------------------------------------------------------- */

/* Activity of one heap in the current series bucket. */
struct bucket_acc {
    uint64_t allocations, frees, temporary, bytes_allocated, bytes_freed, max_live;
};

struct heap {
    uint32_t id, parent;               /* DB ids (see heap_new)              */
    int destroyed, has_parent, has_create, has_peak;
    char *name;
    uint64_t base, size, create_time, destroy_time;
    uint64_t allocations, failed, frees, temporary, bytes_allocated, unknown_frees;
    uint64_t live_bytes, live_blocks, peak_bytes, peak_blocks, peak_time;
    uint64_t epoch;                    /* bumped at each new peak            */
    uint64_t addr_or, addr_and;        /* of every address ever live here:
                                          the bits that may differ          */
    struct livemap *live;
    struct heap *up, *child, *next, *prev;  /* nesting among live heaps      */
    int64_t bucket;                    /* series bucket in progress, or -1   */
    uint64_t bucket_start;             /* its first ns                       */
    struct bucket_acc acc;
};

/* Counters of one (heap, stack, tag). peak_* hold the values at the heap's
 * peak once `epoch` matches the heap's; until then the current values are
 * the at-peak ones (nothing changed since): see agg_sync(). */
struct agg {
    uint32_t heap, stack;
    uint16_t tag;
    uint64_t allocations, failed, bytes, usable, frees, temporary;
    uint64_t live_blocks, live_bytes, max_live_bytes;
    uint64_t peak_blocks, peak_bytes, epoch;
    struct trend tr;                   /* live_bytes over recorded time: the
                                          growth table's line               */
    uint64_t first_time;               /* of its first allocation            */
};

struct thread {
    uint32_t tid;
    int exited;
    uint64_t first_time, last_time, allocations, frees;
    uint64_t last_addr;                /* its latest allocation, if nothing */
    uint32_t last_serial, last_heap;   /* of its own came after; serial 0:
                                          none                              */
};

/* A region of a heap (REGION records) until it is replaced or ends. */
struct open_region {
    uint32_t heap, id;                 /* DB heap id, the program's number   */
    uint8_t kind;
    uint64_t base, size, start;
};

struct module {
    char *path;
    char build_id[65];
    int unloaded, is_main;
    uint64_t bias, lo, hi, load_time, unload_time;
};

struct loader {
    struct capture *cap;
    sqlite3 *db;
    const struct load_opts *opts;

    struct heap **heaps;               /* by capture id, MAX_HEAPS entries:
                                          the heap that id names now        */
    struct heap **byid;                /* every heap by DB id, nbyid entries */
    size_t nbyid, reused_ids;
    struct agg *aggs;
    size_t naggs, capaggs;
    struct idxmap agg_map;             /* (heap<<48 | tag<<32 | stack) -> agg */
    uint32_t *agg_sys;                 /* the system heap's untagged counters
                                          by stack id below nagg_sys (the
                                          capture's dense ids; most events):
                                          an array, not agg_map; UINT32_MAX
                                          none yet                          */
    uint32_t nagg_sys;
    struct thread *threads;
    size_t nthreads, capthreads;
    struct idxmap thread_map;
    struct thread *last_thread;
    struct module *mods;
    size_t nmods, capmods;
    uint32_t *active;                  /* loaded modules, sorted by lo       */
    size_t nactive;
    struct idxmap frame_map;           /* (address, module id) -> frame id   */
    uint64_t nframes;
    uint64_t *seen_bits;               /* stack ids below seen_n with a row
                                          written, a bit each (ids are dense:
                                          the capture's largest id bounds
                                          them); larger ids in stack_seen  */
    uint32_t seen_n;
    struct idxmap stack_seen;          /* stack ids with a row written: a set,
                                          since ids in a damaged capture may
                                          be anything                        */
    uint64_t nstacks;
    struct nodemap node_map;           /* (parent node, frame id) -> node id */
    uint64_t nnodes;
    uint64_t *prev_addr;               /* the latest STACK's frames from the */
    uint32_t *prev_node;               /* outermost in, and their nodes: the */
    uint32_t *chain_frame;             /* (on_stack's new frames' ids)       */
    size_t prev_n, prev_cap;           /* next stack mostly shares its outer
                                          frames (see on_stack)              */

    uint64_t serial, records, last_time, bucket_ns;
    uint64_t coarse_groups;            /* ticks the coarse times spread over */
    uint64_t implicit_frees, unknown_moves, unknown_records, implicit_heaps, bad_heap_records;
    uint64_t heap_reuses, missing_stacks, leaks;
    struct reach reach;                /* the scan at exit (load/reach.h)   */
    uint64_t missing_aggs;             /* counters made for undescribed ids  */
    uint64_t missing_merged;           /* events counted under stack 0 since */
    uint64_t nesting_steps;            /* heaps visited by heap_link's checks */
    uint64_t peak_rss, peak_rss_time;
    int ended, has_rss;
    uint64_t rate;                     /* the header's sample_rate: blocks
                                          weigh 1/p (weight.h); 0 none     */
    struct window { uint64_t start, end; } *windows;   /* recording on    */
    size_t nwindows, capwindows;
    int recording_off;                 /* a WINDOW 0 came last             */
    int windows_seen;
    uint64_t pause_start, paused_ns;   /* the pause in progress; time paused
                                          so far: recorded time = time - it */

    struct rows *node_rows, *stack_rows;   /* stack_nodes, stacks: many rows
                                          a statement (rows_open)            */
    struct rowq *rowq;                 /* their writer thread while streaming */
#if HAVE_SYMBOLS
    struct symbols *sym;               /* resolving frames on its own thread
                                          as they are made; NULL: not asked */
#endif
    sqlite3_stmt *ins_frame, *ins_rss, *ins_mark, *ins_tag,
        *ins_series, *ins_region;
    struct open_region *regions;       /* declared and not ended yet         */
    size_t nregions, capregions;
    struct vh_live_block *range_buf;   /* the blocks one RANGE record names  */
    size_t caprange;
    struct evwriter *evw;              /* the normalized event stream        */
    struct evwriter_stats evst;
    uint64_t emitted, cp_at;           /* events so far; when to ask whether
                                          a checkpoint is due               */
    uint32_t hint_agg;                 /* the record's aggregate as looked up
                                          ahead (see prefetch_agg), or
                                          UINT32_MAX                        */
    size_t hint_slot;                  /* a FREE's block's live map slot as
                                          looked up ahead, or SIZE_MAX      */
    struct feeder *feed;               /* where settle() looks ahead: the    */
    struct batch *cur_b;               /* batch in progress, its number and  */
    uint64_t cur_k;                    /* the record's index in it           */
    size_t cur_j;
    int settling;                      /* a moved record is being processed */
    uint64_t reordered;                /* records moved by settle()          */
    struct vh_live_block *scratch;     /* sorted_blocks(): the largest heap's */
    size_t scratch_cap;                /* live blocks                        */
    int failed;                        /* -errno of the first failure        */
    char errmsg[256];
};

__attribute__((format(printf, 3, 4)))
static void fail(struct loader *L, int rc, const char *fmt, ...)
{
    va_list ap;
    if (L->failed)
        return;
    L->failed = rc;
    va_start(ap, fmt);
    vsnprintf(L->errmsg, sizeof L->errmsg, fmt, ap);
    va_end(ap);
}

/* Steps an INSERT; the first failure is kept and ends the load. */
static void run(struct loader *L, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        fail(L, -EIO, "sqlite: %s", sqlite3_errmsg(L->db));
    sqlite3_reset(st);
}

static int exec(struct loader *L, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(L->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fail(L, -EIO, "sqlite: %s", msg ? msg : sqlite3_errmsg(L->db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static sqlite3_stmt *prep(struct loader *L, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(L->db, sql, -1, &st, NULL) != SQLITE_OK)
        fail(L, -EIO, "sqlite: %s", sqlite3_errmsg(L->db));
    return st;
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* A value that only some rows have (a destroy time, the peak's time). */
static void bind_int_if(sqlite3_stmt *st, int i, int has, uint64_t v)
{
    if (has)
        sqlite3_bind_int64(st, i, (sqlite3_int64)v);
    else
        sqlite3_bind_null(st, i);
}

/* A string field at the end of a record: up to its NUL or the record's end. */
static char *rec_string(struct loader *L, const struct vh_event *ev, size_t at)
{
    const char *p = (const char *)ev->rec + at;
    size_t max = ev->size > at ? ev->size - at : 0;
    char *s = strndup(max ? p : "", strnlen(p, max));
    if (!s)
        fail(L, -ENOMEM, "out of memory");
    return s;
}

/* ---- heaps, threads, aggregates ----------------------------------------- */

/* A heap for capture id `id`, which it names from now on. Its DB id is the
 * capture id, except when a destroyed heap's id is reused (the capture's ids
 * are 16-bit): then it is the next id from MAX_HEAPS up, so that every heap
 * is its own row. */
static struct heap *heap_new(struct loader *L, uint32_t id, uint64_t time)
{
    struct heap *h = calloc(1, sizeof *h);
    uint32_t dbid = id;
    char name[32];

    if (h && L->byid[id]) {
        dbid = MAX_HEAPS + (uint32_t)L->reused_ids;
        if (dbid >= L->nbyid) {
            size_t n = L->nbyid * 2;
            struct heap **p = realloc(L->byid, n * sizeof *p);
            if (!p) {
                free(h);
                fail(L, -ENOMEM, "out of memory");
                return NULL;
            }
            memset(p + L->nbyid, 0, (n - L->nbyid) * sizeof *p);
            L->byid = p;
            L->nbyid = n;
        }
    }
    if (h) {
        h->live = livemap__new();
        if (id == VH_HEAP_SYSTEM)
            snprintf(name, sizeof name, "malloc");
        else
            snprintf(name, sizeof name, "heap %u", id);
        h->name = strdup(name);
    }
    if (!h || !h->live || !h->name) {
        if (h) {
            livemap__free(h->live);
            free(h->name);
        }
        free(h);
        fail(L, -ENOMEM, "out of memory");
        return NULL;
    }
    h->id = dbid;
    h->create_time = time;
    h->bucket = -1;
    h->addr_and = ~0ull;
    L->heaps[id] = h;
    L->byid[dbid] = h;
    if (dbid != id)
        L->reused_ids++;
    return h;
}

/* The heap an event names; one never announced is created on first use. */
static inline struct heap *heap_get(struct loader *L, uint32_t id, uint64_t time)
{
    struct heap *h = L->heaps[id];
    if (__builtin_expect(h != NULL, 1))
        return h;
    L->implicit_heaps++;
    return heap_new(L, id, time);
}

static __attribute__((noinline)) struct thread *thread_find(struct loader *L, uint32_t tid,
                                                            uint64_t time)
{
    uint32_t i = idx_get(&L->thread_map, tid, 0);

    if (i == UINT32_MAX) {
        if (L->nthreads == L->capthreads) {
            size_t n = L->capthreads ? L->capthreads * 2 : 64;
            struct thread *p = realloc(L->threads, n * sizeof *p);
            if (!p) {
                fail(L, -ENOMEM, "out of memory");
                return NULL;
            }
            L->threads = p;
            L->capthreads = n;
        }
        i = (uint32_t)L->nthreads;
        if (idx_put(&L->thread_map, tid, 0, i)) {
            fail(L, -ENOMEM, "out of memory");
            return NULL;
        }
        L->threads[L->nthreads++] = (struct thread){ .tid = tid, .first_time = time };
    }
    return L->last_thread = &L->threads[i];
}

/* Records come in runs of one thread's: the last one is the likely one. */
static inline __attribute__((always_inline)) struct thread *thread_get(struct loader *L,
                                                                       uint32_t tid,
                                                                       uint64_t time)
{
    struct thread *t = L->last_thread;

    if (__builtin_expect(!t || t->tid != tid, 0) && !(t = thread_find(L, tid, time)))
        return NULL;
    t->last_time = time;
    return t;
}

/* Whether stack id has its stacks row (stack_mark). */
static inline int stack_seen(const struct loader *L, uint32_t id)
{
    if (id < L->seen_n)
        return (int)(L->seen_bits[id / 64] >> (id % 64) & 1);
    return idx_get(&L->stack_seen, id, 0) != UINT32_MAX;
}

/* Aggregates are keyed (tag << 32 | stack, DB heap id). */
static inline uint64_t agg_key(uint16_t tag, uint32_t stack)
{
    return (uint64_t)tag << 32 | stack;
}

/* Where (heap, stack, tag)'s counters' index is in agg_sys, or NULL: it
 * is in agg_map. */
static inline uint32_t *agg_sys_at(const struct loader *L, uint32_t heap, uint32_t stack,
                                   uint16_t tag)
{
    return (heap | tag) == 0 && stack < L->nagg_sys ? &L->agg_sys[stack] : NULL;
}

/* The index of (heap, stack, tag)'s counters, or UINT32_MAX. */
static inline uint32_t agg_find(const struct loader *L, uint32_t heap, uint32_t stack,
                                uint16_t tag)
{
    const uint32_t *at = agg_sys_at(L, heap, stack, tag);
    return at ? *at : idx_get(&L->agg_map, agg_key(tag, stack), heap);
}

static inline uint32_t agg_get(struct loader *L, uint32_t heap, uint32_t stack, uint16_t tag)
{
    uint64_t key = agg_key(tag, stack);
    uint32_t i = agg_find(L, heap, stack, tag), *at;

    if (__builtin_expect(i != UINT32_MAX, 1))
        return i;
    if (stack && !stack_seen(L, stack)) {
        if (L->missing_aggs >= (L->opts->max_missing_stacks ? L->opts->max_missing_stacks
                                                            : MAX_MISSING_STACKS)) {
            L->missing_merged++;
            return agg_get(L, heap, 0, tag);
        }
        L->missing_aggs++;
    }
    if (L->naggs == L->capaggs) {
        size_t n = L->capaggs ? L->capaggs * 2 : 1024;
        struct agg *p = realloc(L->aggs, n * sizeof *p);
        if (!p)
            goto oom;
        L->aggs = p;
        L->capaggs = n;
    }
    i = (uint32_t)L->naggs;
    if ((at = agg_sys_at(L, heap, stack, tag)))
        *at = i;
    else if (idx_put(&L->agg_map, key, heap, i))
        goto oom;
    /* Born at the heap's current epoch with nothing live: it held nothing
     * at the latest peak, which is what peak_* = 0 says. */
    L->aggs[L->naggs++] = (struct agg){ .heap = heap, .stack = stack, .tag = tag,
                                        .epoch = L->byid[heap]->epoch };
    /* every stack's line over the same window: recorded time from 0 */
    trend__start(&L->aggs[i].tr, 0);
    return i;
oom:
    fail(L, -ENOMEM, "out of memory");
    return UINT32_MAX;
}

/* Before an aggregate's live numbers change: if the heap reached a new peak
 * since they last changed, they are what was live at that peak. */
static inline void agg_sync(struct agg *a, const struct heap *h)
{
    if (a->epoch != h->epoch) {
        a->peak_bytes = a->live_bytes;
        a->peak_blocks = a->live_blocks;
        a->epoch = h->epoch;
    }
}

/* ---- series -------------------------------------------------------------- */

static void series_flush(struct loader *L, struct heap *h)
{
    sqlite3_stmt *st = L->ins_series;
    if (h->bucket < 0)
        return;
    sqlite3_bind_int64(st, 1, h->id);
    sqlite3_bind_int64(st, 2, h->bucket);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)h->acc.allocations);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)h->acc.frees);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)h->acc.temporary);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)h->acc.bytes_allocated);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)h->acc.bytes_freed);
    sqlite3_bind_int64(st, 8, (sqlite3_int64)h->live_bytes);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)h->live_blocks);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)h->acc.max_live);
    run(L, st);
    h->bucket = -1;
}

/* Called before an event changes heap h: closes the bucket in progress when
 * the event belongs to a later one. Buckets without activity get no row. */
static inline void series_touch(struct loader *L, struct heap *h, uint64_t time)
{
    int64_t b;

    if (__builtin_expect(h->bucket >= 0 && time - h->bucket_start < L->bucket_ns, 1))
        return;
    b = (int64_t)(time / L->bucket_ns);
    if (h->bucket > b)                 /* cannot happen in a merged stream */
        return;
    series_flush(L, h);
    memset(&h->acc, 0, sizeof h->acc);
    h->acc.max_live = h->live_bytes;
    h->bucket = b;
    h->bucket_start = (uint64_t)b * L->bucket_ns;
}

/* ---- blocks --------------------------------------------------------------- */

/* Time with the pauses so far left out (the growth table's axis): a
 * stack that leaks while recorded grows on a line across the windows. */
static inline uint64_t rec_time(const struct loader *L, uint64_t time)
{
    return time > L->paused_ns ? time - L->paused_ns : 0;
}

/* What block b stands for in the counters: itself in a full capture, 1/p
 * of it in a sampled one (weight.h). Its free takes away the same. */
static inline struct vh_weight block_weight(const struct loader *L, uint64_t size, uint32_t serial)
{
    if (__builtin_expect(!L->rate, 1))
        return (struct vh_weight){ 1, size };
    return vh_weigh(size, L->rate, serial);
}

/* A live block leaves heap h (free, realloc, implicit free, destroy). */
static inline void block_gone(struct loader *L, struct heap *h, const struct vh_live_block *b,
                              uint64_t time)
{
    struct agg *a = &L->aggs[b->agg];
    struct vh_weight w = block_weight(L, b->size, b->serial);
    agg_sync(a, h);
    a->live_bytes -= w.bytes;
    a->live_blocks -= w.count;
    trend__set(&a->tr, rec_time(L, time), (double)a->live_bytes);
    h->live_bytes -= w.bytes;
    h->live_blocks -= w.count;
    h->acc.bytes_freed += w.bytes;
}

/* heaptrack's temporary: a free of the block that is this thread's latest
 * allocation, with nothing else by this thread in between. */
static inline int check_temporary(struct loader *L, struct heap *h, struct thread *t,
                                  const struct vh_live_block *b)
{
    int temporary = 0;

    if (t->last_serial && t->last_serial == b->serial && t->last_addr == b->addr &&
        t->last_heap == h->id) {
        uint64_t n = block_weight(L, b->size, b->serial).count;
        L->aggs[b->agg].temporary += n;
        h->temporary += n;
        h->acc.temporary += n;
        temporary = 1;
    }
    t->last_serial = 0;
    return temporary;
}

/* Fills a fresh slot and accounts the allocation (ALLOC or RESIZE). */
static inline void block_new(struct loader *L, struct heap *h, struct thread *t,
                             struct vh_live_block *b, uint32_t ai,
                             const struct vh_rec_alloc *r, uint64_t time)
{
    struct agg *a = &L->aggs[ai];
    struct vh_weight w;

    b->size = r->size;
    b->slack = r->slack;
    b->time = time;
    if (!(b->serial = (uint32_t)++L->serial))
        b->serial = (uint32_t)++L->serial;      /* 0 means none */
    b->agg = ai;
    b->tid = t->tid;
    w = block_weight(L, r->size, b->serial);

    agg_sync(a, h);
    if (__builtin_expect(!a->allocations, 0))
        a->first_time = time;
    a->allocations += w.count;
    a->bytes += w.bytes;
    a->usable += w.bytes + r->slack * w.count;
    a->live_bytes += w.bytes;
    a->live_blocks += w.count;
    if (a->live_bytes > a->max_live_bytes)
        a->max_live_bytes = a->live_bytes;
    trend__set(&a->tr, rec_time(L, time), (double)a->live_bytes);

    h->allocations += w.count;
    h->bytes_allocated += w.bytes;
    h->live_bytes += w.bytes;
    h->live_blocks += w.count;
    h->acc.allocations += w.count;
    h->acc.bytes_allocated += w.bytes;
    if (h->live_bytes > h->acc.max_live)
        h->acc.max_live = h->live_bytes;
    if (h->live_bytes > h->peak_bytes || !h->has_peak) {
        h->has_peak = 1;
        h->peak_bytes = h->live_bytes;
        h->peak_blocks = h->live_blocks;
        h->peak_time = time;
        h->epoch++;                    /* every aggregate is now at-peak     */
    }
    t->allocations += w.count;
    t->last_serial = b->serial;
    t->last_addr = b->addr;
    t->last_heap = h->id;
}

/* ---- the normalized event stream (events.h) ------------------------------ */

static void emit(struct loader *L, const struct vh_ev *e)
{
    int rc;
    L->emitted++;
    if (__builtin_expect(!L->failed, 1) && (rc = evwriter__add(L->evw, e)))
        fail(L, rc, "event stream: %s", evwriter__error(L->evw));
}

/* An event about live block b of heap h, by thread tid. */
static inline void emit_block(struct loader *L, uint8_t kind, uint8_t flags, const struct heap *h,
                              uint32_t tid, uint64_t time, const struct vh_live_block *b,
                              uint64_t old_size, uint64_t to)
{
    const struct agg *a = &L->aggs[b->agg];
    struct vh_ev e = { .time = time, .addr = b->addr, .to = to, .size = b->size,
                       .old_size = old_size, .usable = b->size + b->slack, .heap_id = h->id,
                       .stack_id = a->stack, .tag_id = a->tag, .tid = tid, .kind = kind,
                       .flags = flags };
    emit(L, &e);
}

/* In-place MSD radix sort by address (American flag sort) on the byte at
 * `shift`, then on the lower bytes down to bit `lo` (below it, addresses
 * are all alike); small runs by insertion. */
static void addr_sort(struct vh_live_block *a, size_t n, int shift, int lo)
{
    size_t count[256] = { 0 }, next[256], end[256], sum = 0;

    if (n <= 24) {
        for (size_t i = 1; i < n; i++) {
            struct vh_live_block x = a[i];
            size_t j = i;
            for (; j && a[j - 1].addr > x.addr; j--)
                a[j] = a[j - 1];
            a[j] = x;
        }
        return;
    }
    for (size_t i = 0; i < n; i++)
        count[(a[i].addr >> shift) & 0xff]++;
    for (unsigned d = 0; d < 256; d++) {
        next[d] = sum;
        sum += count[d];
        end[d] = sum;
    }
    /* each block goes to the bucket of its digit, displacing the block
     * there, which goes on to its own bucket: every block moves once */
    for (unsigned d = 0; d < 256; d++) {
        while (next[d] < end[d]) {
            struct vh_live_block x = a[next[d]];
            unsigned e = (unsigned)(x.addr >> shift) & 0xff;
            while (e != d) {
                struct vh_live_block y = a[next[e]];
                a[next[e]++] = x;
                x = y;
                e = (unsigned)(x.addr >> shift) & 0xff;
            }
            a[next[d]++] = x;
        }
    }
    if (shift > lo)
        for (unsigned d = 0; d < 256; d++)
            if (count[d] > 1)
                addr_sort(a + end[d] - count[d], count[d], shift >= 8 ? shift - 8 : 0, lo);
}

/* The blocks live in heap h, copied out of its live map in address order:
 * checkpoints store them so and a destroy frees them so. The map is read in
 * slot order, twice (sequential reads are cheap; random ones are not): for
 * a histogram of the top 11 bits where addresses differ, and to copy each
 * block into its bucket — 2048 streams of writes, each sequential. The
 * buckets, small enough for the caches, are then sorted in place. The
 * result lives in L->scratch, kept between calls (no page faults for each
 * checkpoint); *n blocks. NULL when out of memory. */
static struct vh_live_block *sorted_blocks(struct loader *L, struct heap *h, size_t *n)
{
    size_t cnt = h->live ? livemap__count(h->live) : 0, pos, k = 0, sum = 0;
    struct vh_live_block *a, *b;
    uint64_t any = 0, all = ~0ull, diff;
    size_t *next;
    int lo, hi, shift, width;

    *n = 0;
    if (cnt > L->scratch_cap || !L->scratch) {     /* NULL only for failure */
        size_t cap = cnt + cnt / 4 + 1024;
        free(L->scratch);
        if (!(L->scratch = malloc(cap * sizeof *L->scratch))) {
            L->scratch_cap = 0;
            fail(L, -ENOMEM, "out of memory");
            return NULL;
        }
        L->scratch_cap = cap;
    }
    a = L->scratch;
    if (cnt <= 512) {                  /* most heaps: one pass, in place */
        for (pos = 0; k < cnt && (b = livemap__next(h->live, &pos));) {
            a[k++] = *b;
            any |= b->addr;
            all &= b->addr;
        }
        diff = any ^ all;
        if (diff)
            addr_sort(a, k, (63 - __builtin_clzll(diff)) & ~7, __builtin_ctzll(diff));
        *n = k;
        return a;
    }
    if (!(next = calloc(2049, sizeof *next))) {
        fail(L, -ENOMEM, "out of memory");
        return NULL;
    }
    diff = h->addr_or ^ h->addr_and;   /* a superset of what differs now */
    lo = diff ? __builtin_ctzll(diff) : 0;
    hi = diff ? 64 - __builtin_clzll(diff) : 0;
    width = hi - lo < 11 ? hi - lo : 11;
    shift = hi - width;
#define DIGIT(x) ((size_t)((x) >> shift) & (((size_t)1 << width) - 1))
    for (pos = 0; (b = livemap__next(h->live, &pos));)
        next[DIGIT(b->addr) + 1]++;
    for (size_t d = 0; d < 2048; d++) {
        sum += next[d + 1];
        next[d + 1] = sum;
    }
    for (pos = 0; k < cnt && (b = livemap__next(h->live, &pos)); k++)
        a[next[DIGIT(b->addr)]++] = *b;
#undef DIGIT
    /* next[d] is now the end of bucket d */
    for (size_t d = 0, from = 0; shift > lo && d < 2048; from = next[d++])
        if (next[d] - from > 1)
            addr_sort(a + from, next[d] - from, shift >= 8 ? shift - 8 : 0, lo);
    free(next);
    *n = k;
    return a;
}

/* Every block of heap h leaves it (destroyed, or its id reused): one FREE
 * flagged DESTROY each, in address order, and when `gone` the accounting
 * of block_gone(). 0 or -ENOMEM. */
static int emit_destroy(struct loader *L, struct heap *h, const struct vh_event *ev, int gone)
{
    size_t n;
    struct vh_live_block *k = sorted_blocks(L, h, &n);

    if (!k)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        emit_block(L, VH_EV_FREE, VH_EVF_DESTROY, h, ev->tid, ev->time, &k[i], 0, 0);
        if (gone)
            block_gone(L, h, &k[i], ev->time);
    }
    return 0;
}

/* Every live block into a checkpoint, heaps by DB id, addresses ascending.
 * Called between two records, when the live maps are what the events
 * emitted so far leave. */
static void write_checkpoint(struct loader *L)
{
    struct vh_block batch[512];
    int rc = evwriter__checkpoint_begin(L->evw);

    for (size_t id = 0; !rc && id < L->nbyid; id++) {
        struct heap *h = L->byid[id];
        struct vh_live_block *k;
        size_t n, m = 0;

        if (!h || !h->live || !livemap__count(h->live))
            continue;
        if (!(k = sorted_blocks(L, h, &n)))
            return;
        for (size_t i = 0; !rc && i < n; i++) {
            const struct agg *a = &L->aggs[k[i].agg];
            batch[m++] = (struct vh_block){ .addr = k[i].addr, .size = k[i].size,
                                            .usable = k[i].size + k[i].slack, .time = k[i].time,
                                            .heap_id = h->id, .stack_id = a->stack,
                                            .tag_id = a->tag, .tid = k[i].tid };
            if (m == sizeof batch / sizeof batch[0] || i + 1 == n) {
                rc = evwriter__checkpoint_add(L->evw, batch, m);
                m = 0;
            }
        }
    }
    if (!rc)
        rc = evwriter__checkpoint_end(L->evw);
    if (rc)
        fail(L, rc, "event stream: %s", evwriter__error(L->evw));
}

/* ---- capture records -------------------------------------------------------- */

static int settle(struct loader *L, const struct vh_event *ev, uint16_t heap, uint64_t addr,
                  uint8_t want);

static void on_alloc(struct loader *L, const struct vh_event *ev, int resize)
{
    const struct vh_rec_alloc *r = (const struct vh_rec_alloc *)ev->rec;
    struct heap *h = heap_get(L, r->h.a, ev->time);
    struct thread *t = thread_get(L, ev->tid, ev->time);
    struct vh_live_block *b;
    uint64_t old_size = 0;
    uint32_t ai;
    uint8_t flags = 0;
    int existed;

    if (!h || !t)
        return;
    ai = L->hint_agg;                  /* still the right one? (cheap: this
                                          aggregate is read below anyway)  */
    if (ai == UINT32_MAX || L->aggs[ai].heap != h->id || L->aggs[ai].stack != r->h.b ||
        L->aggs[ai].tag != r->tag)
        ai = agg_get(L, h->id, r->h.b, r->tag);
    if (ai == UINT32_MAX)
        return;
    series_touch(L, h, ev->time);
    if ((r->h.flags & VH_RF_FAILED) || !r->addr) {
        uint64_t n = block_weight(L, r->size, (uint32_t)L->records).count;
        L->aggs[ai].failed += n;
        h->failed += n;
        emit(L, &(struct vh_ev){ .time = ev->time, .size = r->size, .heap_id = h->id,
                                 .stack_id = L->aggs[ai].stack, .tag_id = r->tag, .tid = ev->tid,
                                 .kind = VH_EV_FAILED });
        return;
    }
    b = livemap__insert(h->live, r->addr, &existed);
    h->addr_or |= r->addr;
    h->addr_and &= r->addr;
    if (!b) {
        fail(L, -ENOMEM, "out of memory");
        return;
    }
    if (existed && !resize && settle(L, ev, r->h.a, r->addr, VH_REC_FREE)) {
        /* the FREE that truly came first went first: x is free now */
        if (!(t = thread_get(L, ev->tid, ev->time)))
            return;
        if (!(b = livemap__insert(h->live, r->addr, &existed))) {
            fail(L, -ENOMEM, "out of memory");
            return;
        }
    }
    if (existed) {
        if (resize) {
            /* heaptrack sees a realloc as '-' old then '+' new: the RESIZE
             * carries the temporary flag of its '-' */
            flags = check_temporary(L, h, t, b) ? VH_EVF_TEMPORARY : 0;
            old_size = b->size;
        } else {
            L->implicit_frees++;       /* its free was never recorded */
            emit_block(L, VH_EV_FREE, VH_EVF_IMPLICIT, h, ev->tid, ev->time, b, 0, 0);
        }
        block_gone(L, h, b, ev->time);
    } else if (resize) {
        h->unknown_frees++;            /* resized a block we never saw */
    }
    block_new(L, h, t, b, ai, r, ev->time);
    if (existed && resize)
        emit_block(L, VH_EV_RESIZE, flags, h, ev->tid, ev->time, b, old_size, 0);
    else    /* a resize of an unknown block is where it starts for us */
        emit_block(L, VH_EV_ALLOC,
                   resize || (r->h.flags & VH_RF_REALLOC) ? VH_EVF_REALLOC : 0, h, ev->tid,
                   ev->time, b, 0, 0);
}

static void free_live(struct loader *L, struct heap *h, struct thread *t,
                      const struct vh_event *ev, struct vh_live_block *b, int realloc_half);

static void on_free(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_free *r = (const struct vh_rec_free *)ev->rec;
    struct heap *h = heap_get(L, r->h.a, ev->time);
    struct thread *t = thread_get(L, ev->tid, ev->time);
    struct vh_live_block *b;

    if (!h || !t)
        return;
    b = livemap__find_at(h->live, r->addr, L->hint_slot);
    if (!b && settle(L, ev, r->h.a, r->addr, VH_REC_ALLOC)) {
        /* the ALLOC that truly came first went first */
        if (!(t = thread_get(L, ev->tid, ev->time)))
            return;
        b = livemap__find(h->live, r->addr);
    }
    if (!b) {
        h->unknown_frees++;
        return;
    }
    free_live(L, h, t, ev, b, r->h.flags & VH_RF_REALLOC);
}

/* Live block b of h is freed by thread t (a FREE, or a RANGE that frees). */
static void free_live(struct loader *L, struct heap *h, struct thread *t,
                      const struct vh_event *ev, struct vh_live_block *b, int realloc_half)
{
    series_touch(L, h, ev->time);
    emit_block(L, VH_EV_FREE,
               (check_temporary(L, h, t, b) ? VH_EVF_TEMPORARY : 0) |
                   (realloc_half ? VH_EVF_REALLOC : 0),
               h, ev->tid, ev->time, b, 0, 0);
    block_gone(L, h, b, ev->time);
    if (!realloc_half) {
        /* the free half of a moving realloc is not a call to free */
        uint64_t n = block_weight(L, b->size, b->serial).count;
        L->aggs[b->agg].frees += n;
        h->frees += n;
        h->acc.frees += n;
        t->frees += n;
    }
    livemap__remove(h->live, b);
}

static void land_block(struct loader *L, struct heap *h, const struct vh_event *ev,
                       const struct vh_live_block *keep, uint64_t to);

static void on_move(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_move *r = (const struct vh_rec_move *)ev->rec;
    struct heap *h = heap_get(L, r->h.a, ev->time);
    struct vh_live_block *b, keep;

    if (!h || r->from == r->to)
        return;
    b = livemap__find(h->live, r->from);
    if (!b || !r->to) {
        L->unknown_moves++;
        return;
    }
    keep = *b;                         /* stack, time, tag, size go along */
    livemap__remove(h->live, b);
    land_block(L, h, ev, &keep, r->to);
}

/* Block `keep`, taken out of h's live map, lands at `to` (a move): a block
 * still live there was freed without a record. */
static void land_block(struct loader *L, struct heap *h, const struct vh_event *ev,
                       const struct vh_live_block *keep, uint64_t to)
{
    struct vh_live_block *b;
    int existed;

    b = livemap__insert(h->live, to, &existed);
    h->addr_or |= to;
    h->addr_and &= to;
    if (!b) {
        fail(L, -ENOMEM, "out of memory");
        return;
    }
    if (existed) {
        series_touch(L, h, ev->time);
        L->implicit_frees++;
        emit_block(L, VH_EV_FREE, VH_EVF_IMPLICIT, h, ev->tid, ev->time, b, 0, 0);
        block_gone(L, h, b, ev->time);
    }
    *b = *keep;
    b->addr = to;
    emit_block(L, VH_EV_MOVE, 0, h, ev->tid, ev->time, keep, 0, to);
}

/* The live blocks of h whose address lies in [lo, lo + len), copied into
 * L->range_buf; their number, or (size_t)-1 when out of memory. A small
 * range is probed address by address at the heap's alignment (every
 * address it ever held is a multiple of it); a large one scans the map. */
static size_t range_collect(struct loader *L, struct heap *h, uint64_t lo, uint64_t len)
{
    uint64_t hi = lo + len < lo ? UINT64_MAX : lo + len;
    uint64_t step = h->addr_or ? h->addr_or & (0 - h->addr_or) : 1;
    size_t n = 0, cnt = livemap__count(h->live), pos = 0;
    struct vh_live_block *b;

    if (!cnt)
        return 0;
    if (len / step <= 4 * (uint64_t)cnt) {
        for (uint64_t a = (lo + step - 1) & ~(step - 1); a >= lo && a < hi; a += step) {
            if (!(b = livemap__find(h->live, a)))
                continue;
            if (vh_grow(&L->range_buf, &L->caprange, n, sizeof *b, 64))
                return (size_t)-1;
            L->range_buf[n++] = *b;
        }
        return n;
    }
    while ((b = livemap__next(h->live, &pos)))
        if (b->addr >= lo && b->addr < hi) {
            if (vh_grow(&L->range_buf, &L->caprange, n, sizeof *b, 64))
                return (size_t)-1;
            L->range_buf[n++] = *b;
        }
    return n;
}

/* RANGE: every live block in [from, from + len) moves by to - from, or is
 * freed. Moves take all of them out first, so that a range moved onto an
 * overlapping one lands whole. */
static void on_range(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_range *r = (const struct vh_rec_range *)ev->rec;
    struct heap *h;
    struct thread *t;
    size_t n;

    if (r->h.b == VH_HEAP_SYSTEM || r->h.b >= MAX_HEAPS || r->h.flags > VH_RANGE_FREE) {
        L->bad_heap_records++;
        return;
    }
    if (!(h = heap_get(L, (uint16_t)r->h.b, ev->time)) || !(t = thread_get(L, ev->tid, ev->time)))
        return;
    if ((n = range_collect(L, h, r->from, r->len)) == (size_t)-1) {
        fail(L, -ENOMEM, "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        struct vh_live_block *b = livemap__find(h->live, L->range_buf[i].addr);
        if (r->h.flags == VH_RANGE_FREE)
            free_live(L, h, t, ev, b, 0);
        else
            livemap__remove(h->live, b);
    }
    if (r->h.flags == VH_RANGE_MOVE)
        for (size_t i = 0; i < n && !L->failed; i++)
            land_block(L, h, ev, &L->range_buf[i], L->range_buf[i].addr + (r->to - r->from));
}

/* ---- regions (REGION records) ------------------------------------------------ */

static void region_write(struct loader *L, const struct open_region *o, int ended, uint64_t end)
{
    sqlite3_stmt *st = L->ins_region;
    sqlite3_bind_int64(st, 1, o->heap);
    sqlite3_bind_int64(st, 2, o->id);
    sqlite3_bind_text(st, 3, o->kind == VH_REGION_META ? "meta" : "unused", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)o->base);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)o->size);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)o->start);
    bind_int_if(st, 7, ended, end);
    run(L, st);
}

/* Writes the row of every open region that `keep` refuses (NULL: all),
 * ended at `end` (or still there when `ended` is 0), and forgets it. */
static void regions_close(struct loader *L, int (*keep)(struct loader *, const struct open_region *),
                          int ended, uint64_t end)
{
    size_t j = 0;
    for (size_t i = 0; i < L->nregions; i++) {
        if (keep && keep(L, &L->regions[i]))
            L->regions[j++] = L->regions[i];
        else
            region_write(L, &L->regions[i], ended, end);
    }
    L->nregions = j;
}

static int region_heap_alive(struct loader *L, const struct open_region *o)
{
    return o->heap < L->nbyid && L->byid[o->heap] && !L->byid[o->heap]->destroyed;
}

static void on_region(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_region *r = (const struct vh_rec_region *)ev->rec;
    struct heap *h;
    size_t i;

    if (r->h.b == VH_HEAP_SYSTEM || r->h.b >= MAX_HEAPS || r->h.flags > VH_REGION_KIND_MAX) {
        L->bad_heap_records++;
        return;
    }
    if (!(h = heap_get(L, (uint16_t)r->h.b, ev->time)))
        return;
    for (i = 0; i < L->nregions; i++)
        if (L->regions[i].heap == h->id && L->regions[i].id == r->id)
            break;
    if (i < L->nregions) {             /* replaced or ended */
        region_write(L, &L->regions[i], 1, ev->time);
        L->regions[i] = L->regions[--L->nregions];
    }
    if (r->h.flags == VH_REGION_NONE || !r->size)
        return;
    if (vh_grow(&L->regions, &L->capregions, L->nregions, sizeof *L->regions, 8)) {
        fail(L, -ENOMEM, "out of memory");
        return;
    }
    L->regions[L->nregions++] = (struct open_region){ .heap = h->id, .id = r->id,
                                                      .kind = r->h.flags, .base = r->base,
                                                      .size = r->size, .start = ev->time };
}

/* ---- heap nesting --------------------------------------------------------- */

static void heap_unlink(struct heap *h)
{
    if (h->prev)
        h->prev->next = h->next;
    else if (h->up)
        h->up->child = h->next;
    if (h->next)
        h->next->prev = h->prev;
    h->up = h->next = h->prev = NULL;
}

/* Nests h (unlinked) in parent. A cycle is refused: parent must not be h or
 * inside h, which only a heap with nested heaps of its own can have; the
 * walk up from parent that checks it is for those alone (a new heap has
 * none), so a chain of N nested heaps costs N steps, not N^2 / 2. */
static void heap_link(struct loader *L, struct heap *h, struct heap *parent)
{
    for (struct heap *p = h->child ? parent : NULL; p; p = p->up) {
        L->nesting_steps++;
        if (p == h)
            return;
    }
    if (parent == h)
        return;
    h->up = parent;
    h->next = parent->child;
    if (parent->child)
        parent->child->prev = h;
    parent->child = h;
}

static void on_heap_create(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_heap *r = (const struct vh_rec_heap *)ev->rec;
    struct heap *h, *p;
    char *name;

    if (r->h.b == VH_HEAP_SYSTEM || r->h.b >= MAX_HEAPS || ev->size < sizeof *r) {
        L->bad_heap_records++;
        return;
    }
    h = L->heaps[r->h.b];
    if (h && h->destroyed) {
        L->heap_reuses++;              /* same id again: a new heap, own row */
        /* no event reaches the old one now: what it still holds (allocated
         * after its destroy) leaves the event stream's live set too */
        if (h->live && livemap__count(h->live) && emit_destroy(L, h, ev, 0))
            return;
        livemap__free(h->live);
        h->live = NULL;
        h = NULL;
    }
    if (!h && !(h = heap_new(L, r->h.b, ev->time)))
        return;
    name = rec_string(L, ev, sizeof *r);
    if (!name)
        return;
    free(h->name);
    h->name = name;
    if (!h->has_create)
        h->create_time = ev->time;
    h->has_create = 1;
    h->base = r->base;
    h->size = r->size;
    h->parent = 0;
    h->has_parent = 0;
    p = NULL;
    if (r->parent && r->parent < MAX_HEAPS && r->parent != r->h.b &&
        !(p = heap_get(L, r->parent, ev->time)))
        return;
    if (p && p == h->up) {             /* announced again, nested as it was */
        h->parent = p->id;
        h->has_parent = 1;
        return;
    }
    heap_unlink(h);
    if (p) {
        heap_link(L, h, p);
        h->parent = p->id;
        h->has_parent = 1;
    }
}

/* Frees every block of the heap and of the heaps nested in it, at once:
 * these blocks are gone, not leaked. */
static void on_heap_destroy(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_time *r = (const struct vh_rec_time *)ev->rec;
    struct heap *h, **todo = NULL;
    size_t n = 0, cap = 0;

    if (r->h.a == VH_HEAP_SYSTEM) {
        L->bad_heap_records++;
        return;
    }
    h = heap_get(L, r->h.a, ev->time);
    if (!h || h->destroyed)
        return;
    heap_unlink(h);
    for (;;) {
        series_touch(L, h, ev->time);
        if (emit_destroy(L, h, ev, 1))
            break;
        livemap__free(h->live);
        h->live = livemap__new();
        if (!h->live) {
            fail(L, -ENOMEM, "out of memory");
            break;
        }
        h->destroyed = 1;
        h->destroy_time = ev->time;
        for (struct heap *c = h->child; c; c = c->next) {
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                struct heap **p = realloc(todo, cap * sizeof *p);
                if (!p) {
                    fail(L, -ENOMEM, "out of memory");
                    goto out;
                }
                todo = p;
            }
            todo[n++] = c;
        }
        h->child = NULL;
        if (!n)
            break;
        h = todo[--n];
        h->up = h->next = h->prev = NULL;
    }
out:
    free(todo);
    if (L->nregions)                   /* a heap's regions end with it */
        regions_close(L, region_heap_alive, 1, ev->time);
}

/* ---- many rows per INSERT --------------------------------------------------
 * The big tables (stack_tree and stacks while streaming; leaks and
 * stack_totals at the end: a row per live block, per (heap, stack, tag))
 * go ROWS rows per statement: a statement's own cost (start,
 * halt, reset) is about a third of a one-row insert. While streaming, a
 * writer thread steps them (rowq.h), when there is one. */
#define ROWS VH_ROWS

struct rows {
    struct loader *L;
    sqlite3_stmt *many, *one;
    struct rowq *q;                    /* the writer thread, or NULL         */
    struct vh_rowcols cols;            /* REAL and NULL-able columns: set
                                          after rows_open                   */
    int k;
    union vh_rowv v[ROWS * VH_ROWS_MAX_COLS];
};

/* sql: "INSERT INTO t(a, b, ...) VALUES " for `cols` integer columns. */
static int rows_open(struct loader *L, struct rows *r, const char *sql, int cols)
{
    size_t n = strlen(sql), len = n + (size_t)ROWS * (2 + 2 * (size_t)cols) + 1;
    char *q = malloc(len), *p;

    memset(r, 0, sizeof *r);
    r->L = L;
    r->cols.n = cols;
    if (!q) {
        fail(L, -ENOMEM, "out of memory");
        return -1;
    }
    memcpy(q, sql, n);
    p = q + n;
    for (int i = 0; i < ROWS; i++) {
        *p++ = i ? ',' : ' ';
        *p++ = '(';
        for (int c = 0; c < cols; c++) {
            *p++ = c ? ',' : '?';
            if (c)
                *p++ = '?';
        }
        *p++ = ')';
        if (!i) {
            *p = 0;
            r->one = prep(L, q);
        }
    }
    *p = 0;
    r->many = prep(L, q);
    free(q);
    return r->one && r->many ? 0 : -1;
}

static inline void rows_set(struct rows *r, int col, int64_t v)
{
    r->v[r->k * r->cols.n + col].i = v;
}

/* A REAL column (r->cols.real says which). */
static inline void rows_set_real(struct rows *r, int col, double v)
{
    r->v[r->k * r->cols.n + col].d = v;
}

/* NULL, in a column r->cols.null allows. */
static inline void rows_set_null(struct rows *r, int col)
{
    if (r->cols.real >> col & 1)
        rows_set_real(r, col, NAN);
    else
        rows_set(r, col, VH_ROWV_NULL);
}

static void rows_step(struct rows *r, sqlite3_stmt *st, const union vh_rowv *v, int n)
{
    char msg[256];

    if (r->q)
        rowq__put(r->q, st, r->cols, v, n);
    else if (rowq__step(r->L->db, st, r->cols, v, n, msg, sizeof msg))
        fail(r->L, -EIO, "%s", msg);
}

static void rows_next(struct rows *r)
{
    if (++r->k < ROWS)
        return;
    rows_step(r, r->many, r->v, ROWS * r->cols.n);
    r->k = 0;
}

/* Ends the writer thread, once what it was given is stored; the rows
 * that follow are stepped where they are made. */
static void rows_unqueue(struct loader *L)
{
    char msg[256];

    if (!L->rowq)
        return;
    if (rowq__stop(L->rowq, msg, sizeof msg))
        fail(L, -EIO, "%s", msg);
    L->rowq = NULL;
    L->node_rows->q = L->stack_rows->q = NULL;
}

/* The rows left, one by one (never queued); then the statements go. */
static void rows_close(struct rows *r)
{
    r->q = NULL;
    for (int i = 0; r->one && i < r->k && !r->L->failed; i++)
        rows_step(r, r->one, r->v + i * r->cols.n, r->cols.n);
    sqlite3_finalize(r->one);
    sqlite3_finalize(r->many);
    r->one = r->many = NULL;
}

/* ---- modules, stacks, frames ----------------------------------------------- */

static int by_lo(const void *a, const void *b, void *arg)
{
    const struct module *m = arg;
    uint64_t x = m[*(const uint32_t *)a].lo, y = m[*(const uint32_t *)b].lo;
    return (x > y) - (x < y);
}

static void active_rebuild(struct loader *L)
{
    L->nactive = 0;
    for (size_t i = 0; i < L->nmods; i++)
        if (!L->mods[i].unloaded)
            L->active[L->nactive++] = (uint32_t)i;
    qsort_r(L->active, L->nactive, sizeof *L->active, by_lo, L->mods);
    L->prev_n = 0;                     /* an address's frame may differ now */
}

static void on_module(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_module *r = (const struct vh_rec_module *)ev->rec;
    struct module *m;
    unsigned idlen;

    if (ev->size < sizeof *r) {
        L->unknown_records++;
        return;
    }
    if (L->nmods == L->capmods) {
        size_t n = L->capmods ? L->capmods * 2 : 64;
        struct module *p = realloc(L->mods, n * sizeof *p);
        uint32_t *a = p ? realloc(L->active, n * sizeof *a) : NULL;
        if (p)
            L->mods = p;
        if (!p || !a) {
            fail(L, -ENOMEM, "out of memory");
            return;
        }
        L->active = a;
        L->capmods = n;
    }
    m = &L->mods[L->nmods];
    memset(m, 0, sizeof *m);
    m->path = rec_string(L, ev, sizeof *r);
    if (!m->path)
        return;
    idlen = r->h.b < sizeof r->build_id ? r->h.b : sizeof r->build_id;
    for (unsigned i = 0; i < idlen; i++)
        snprintf(m->build_id + 2 * i, 3, "%02x", r->build_id[i]);
    m->bias = r->bias;
    m->lo = r->lo;
    m->hi = r->hi;
    m->load_time = ev->time;
    m->is_main = !!(r->h.flags & VH_RF_MAIN_EXE);
    L->nmods++;
#if HAVE_SYMBOLS
    symbols__module(L->sym, (int64_t)L->nmods, m->path, m->build_id);
#endif
    active_rebuild(L);
}

static void on_module_unload(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_value *r = (const struct vh_rec_value *)ev->rec;

    /* the latest load with that bias is the one going away */
    for (size_t i = L->nmods; i-- > 0;) {
        struct module *m = &L->mods[i];
        if (!m->unloaded && m->bias == r->value) {
            m->unloaded = 1;
            m->unload_time = ev->time;
            active_rebuild(L);
            return;
        }
    }
    L->unknown_records++;
}

/* Module id (1-based) of the loaded module mapping addr, or 0. */
static uint32_t module_of(const struct loader *L, uint64_t addr)
{
    size_t lo = 0, hi = L->nactive;

    while (lo < hi) {                  /* first module with lo > addr */
        size_t mid = (lo + hi) / 2;
        if (L->mods[L->active[mid]].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (lo-- > 0) {                 /* overlapping ranges: look further */
        const struct module *m = &L->mods[L->active[lo]];
        if (addr < m->hi)
            return L->active[lo] + 1;
        if (lo + 8 < L->nactive && m->lo + (1ull << 40) < addr)
            break;
    }
    return 0;
}

static uint64_t frame_id(struct loader *L, uint64_t addr)
{
    uint32_t mod = module_of(L, addr);
    uint32_t id = idx_get(&L->frame_map, addr, mod);
    sqlite3_stmt *st = L->ins_frame;
    uint64_t off = mod ? addr - L->mods[mod - 1].bias : 0;   /* in the module's ELF */

    if (id != UINT32_MAX)
        return id;
    id = (uint32_t)++L->nframes;
    if (idx_put(&L->frame_map, addr, mod, id)) {
        fail(L, -ENOMEM, "out of memory");
        return 0;
    }
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)addr);
    if (mod) {
        sqlite3_bind_int64(st, 3, mod);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)off);
    } else {
        sqlite3_bind_null(st, 3);
        sqlite3_bind_null(st, 4);
    }
    run(L, st);
#if HAVE_SYMBOLS
    symbols__frame(L->sym, id, mod, off);
#endif
    return id;
}

/* Marks stack id as written; 1 if it already was. */
static int stack_mark(struct loader *L, uint32_t id)
{
    if (stack_seen(L, id))
        return 1;
    if (id < L->seen_n) {
        L->seen_bits[id / 64] |= 1ull << (id % 64);
        return 0;
    }
    if (idx_put(&L->stack_seen, id, 0, 0)) {
        fail(L, -ENOMEM, "out of memory");
        return 1;
    }
    return 0;
}

static void stack_row(struct loader *L, uint32_t id, uint32_t depth, int truncated,
                      uint32_t node)
{
    rows_set(L->stack_rows, 0, id);
    rows_set(L->stack_rows, 1, depth);
    rows_set(L->stack_rows, 2, truncated);
    rows_set(L->stack_rows, 3, node);
    rows_next(L->stack_rows);
    L->nstacks++;
}

/* The call-tree node of the frame at addr under node `parent` (0: an
 * outermost frame); a new one gets its row. 0 on failure. */
static uint32_t node_get(struct loader *L, uint32_t parent, uint64_t addr, int *made)
{
    uint32_t frame = (uint32_t)frame_id(L, addr), id;

    *made = 0;
    if (L->failed)
        return 0;
    if (L->nnodes >= UINT32_MAX - 1) {
        fail(L, -EOVERFLOW, "more than %u distinct call-tree nodes", UINT32_MAX - 2);
        return 0;
    }
    id = nodemap_get(&L->node_map, parent, frame, (uint32_t)L->nnodes + 1, made);
    if (id == UINT32_MAX) {
        fail(L, -ENOMEM, "out of memory");
        return 0;
    }
    if (!*made)
        return id;
    L->nnodes++;
    rows_set(L->node_rows, 0, id);
    rows_set(L->node_rows, 1, (int64_t)id - parent);   /* stack_tree.up */
    rows_set(L->node_rows, 2, frame);
    rows_next(L->node_rows);
    return id;
}

/* Below a node just made, every node is new: frames k.. of the stack at
 * fr (depth frames, innermost first) under node `node`. Their ids follow
 * one another, so every key is known before any is stored: all their
 * slots are fetched at once, then filled, instead of one cache miss after
 * the other. The last node's id, 0 on failure. */
static uint32_t node_chain(struct loader *L, const uint8_t *fr, uint32_t depth, size_t k,
                           uint32_t node)
{
    struct nodemap *m = &L->node_map;
    size_t n = depth - k;

    if (L->nnodes + n >= UINT32_MAX - 1) {
        fail(L, -EOVERFLOW, "more than %u distinct call-tree nodes", UINT32_MAX - 2);
        return 0;
    }
    if (nodemap_reserve(m, n)) {
        fail(L, -ENOMEM, "out of memory");
        return 0;
    }
    for (size_t j = k; j < depth; j++) {
        uint64_t addr;
        memcpy(&addr, fr + 8 * (size_t)(depth - 1 - j), sizeof addr);
        L->chain_frame[j] = (uint32_t)frame_id(L, addr);
        L->prev_addr[j] = addr;
        L->prev_node[j] = (uint32_t)(L->nnodes + 1 + (j - k));
        __builtin_prefetch(&m->s[nodemap_home(m, (uint64_t)(j > k ? L->prev_node[j - 1] : node)
                                                        << 32 | L->chain_frame[j])], 1);
    }
    if (L->failed)
        return 0;
    for (size_t j = k; j < depth; j++) {
        uint32_t parent = j > k ? L->prev_node[j - 1] : node;
        nodemap_add(m, (uint64_t)parent << 32 | L->chain_frame[j], L->prev_node[j]);
        rows_set(L->node_rows, 0, L->prev_node[j]);
        rows_set(L->node_rows, 1, (int64_t)L->prev_node[j] - parent);   /* up */
        rows_set(L->node_rows, 2, L->chain_frame[j]);
        rows_next(L->node_rows);
    }
    L->nnodes += n;
    return L->prev_node[depth - 1];
}

/* A stack becomes a path in the call tree, from its outermost frame in.
 * Stacks recorded one after the other mostly share their outer frames (the
 * same caller allocating from another place), so the frames it shares with
 * the previous STACK record, compared as raw addresses, take that one's
 * nodes without a lookup; module changes reset that (active_rebuild). The
 * next frames are looked up, until one is new: from there on node_chain. */
static void on_stack(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_stack *r = (const struct vh_rec_stack *)ev->rec;
    const uint8_t *fr = (const uint8_t *)r + sizeof *r;
    uint32_t depth, node = 0;
    size_t k = 0;
    int made = 0;

    if (ev->size < sizeof *r || stack_mark(L, r->h.b))
        return;
    depth = (uint32_t)((ev->size - sizeof *r) / 8);
    if (depth > L->prev_cap) {
        uint64_t *a = realloc(L->prev_addr, depth * sizeof *a);
        uint32_t *n = a ? realloc(L->prev_node, depth * sizeof *n) : NULL;
        uint32_t *f = n ? realloc(L->chain_frame, depth * sizeof *f) : NULL;
        if (a)
            L->prev_addr = a;
        if (n)
            L->prev_node = n;
        if (!f) {
            fail(L, -ENOMEM, "out of memory");
            return;
        }
        L->chain_frame = f;
        L->prev_cap = depth;
    }
    for (; k < depth && !made; k++) {  /* frame k from the outermost */
        uint64_t addr;
        memcpy(&addr, fr + 8 * (size_t)(depth - 1 - k), sizeof addr);
        if (k < L->prev_n && L->prev_addr[k] == addr) {
            node = L->prev_node[k];
            continue;
        }
        L->prev_n = k;                 /* from here on the path is new */
        if (!(node = node_get(L, node, addr, &made)))
            return;
        L->prev_addr[k] = addr;
        L->prev_node[k] = node;
    }
    if (k < depth && !(node = node_chain(L, fr, depth, k, node)))
        return;
    L->prev_n = depth;
    stack_row(L, r->h.b, depth, !!(r->h.flags & VH_RF_TRUNCATED), node);
}

/* ---- other records -------------------------------------------------------- */

static void on_label(struct loader *L, const struct vh_event *ev, int is_tag)
{
    const struct vh_rec_label *r = (const struct vh_rec_label *)ev->rec;
    sqlite3_stmt *st = is_tag ? L->ins_tag : L->ins_mark;
    char *label = rec_string(L, ev, sizeof *r);

    if (!label)
        return;
    sqlite3_bind_int64(st, 1, is_tag ? r->h.b : ev->time);
    if (is_tag) {
        sqlite3_bind_text(st, 2, label, -1, SQLITE_TRANSIENT);
    } else {
        sqlite3_bind_int64(st, 2, ev->tid);
        sqlite3_bind_text(st, 3, label, -1, SQLITE_TRANSIENT);
    }
    run(L, st);
    free(label);
}

static void on_rss(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_value *r = (const struct vh_rec_value *)ev->rec;

    sqlite3_bind_int64(L->ins_rss, 1, (sqlite3_int64)ev->time);
    sqlite3_bind_int64(L->ins_rss, 2, (sqlite3_int64)r->value);
    run(L, L->ins_rss);
    if (!L->has_rss || r->value > L->peak_rss) {
        L->peak_rss = r->value;
        L->peak_rss_time = ev->time;
        L->has_rss = 1;
    }
}

/* WINDOW: recording on (a = 1) or paused (0) from here on. L->windows
 * starts with one window open from time 0. A process started paused
 * (VHEAP_START=paused) writes a WINDOW 0 at its start, before any event (a
 * fork child of a paused parent too); a first "on" says the same of a
 * writer that wrote none: either way that first window never was. */
static void on_window(struct loader *L, const struct vh_event *ev)
{
    int on = ev->rec->a != 0;

    if (!L->windows_seen) {
        L->windows_seen = 1;
        if (on || L->emitted == 0) {
            L->nwindows = 0;
            L->recording_off = 1;      /* paused from 0 (pause_start) */
            L->pause_start = 0;
        }
    }
    if (on && L->recording_off) {
        if (L->nwindows == L->capwindows) {
            size_t n = L->capwindows * 2;
            struct window *p = realloc(L->windows, n * sizeof *p);
            if (!p) {
                fail(L, -ENOMEM, "out of memory");
                return;
            }
            L->windows = p;
            L->capwindows = n;
        }
        L->windows[L->nwindows++] = (struct window){ ev->time, UINT64_MAX };
        L->recording_off = 0;
        L->paused_ns += ev->time - L->pause_start;
    } else if (!on && !L->recording_off) {
        L->windows[L->nwindows - 1].end = ev->time;
        L->recording_off = 1;
        L->pause_start = ev->time;
    }
}

static void on_thread(struct loader *L, const struct vh_event *ev)
{
    thread_get(L, ev->rec->b, ev->time);
}

static void on_thread_exit(struct loader *L, const struct vh_event *ev)
{
    struct thread *t = thread_get(L, ev->rec->b, ev->time);
    if (t)
        t->exited = 1;
}

static void on_mark(struct loader *L, const struct vh_event *ev)
{
    on_label(L, ev, 0);
}

static void on_tag(struct loader *L, const struct vh_event *ev)
{
    on_label(L, ev, 1);
}

static void on_reach(struct loader *L, const struct vh_event *ev)
{
    int rc = reach__add(&L->reach, (const struct vh_rec_reach *)ev->rec, ev->size);
    if (rc == -ENOMEM)
        fail(L, rc, "out of memory");
    else if (rc < 0)
        L->unknown_records++;
}

static void on_reach_end(struct loader *L, const struct vh_event *ev)
{
    if (ev->size >= sizeof(struct vh_rec_reach_end))
        reach__end(&L->reach, (const struct vh_rec_reach_end *)ev->rec);
    else
        L->unknown_records++;
}

static void on_end(struct loader *L, const struct vh_event *ev)
{
    (void)ev;
    L->ended = 1;
}

/* What every record type but the three of nearly every event does to the
 * loader. A type without an entry is a newer writer's: counted, skipped. */
static void (*const on_record[])(struct loader *L, const struct vh_event *ev) = {
    [VH_REC_STACK] = on_stack,
    [VH_REC_RSS] = on_rss,
    [VH_REC_THREAD] = on_thread,
    [VH_REC_THREAD_EXIT] = on_thread_exit,
    [VH_REC_MODULE] = on_module,
    [VH_REC_MODULE_UNLOAD] = on_module_unload,
    [VH_REC_HEAP_CREATE] = on_heap_create,
    [VH_REC_HEAP_DESTROY] = on_heap_destroy,
    [VH_REC_MOVE] = on_move,
    [VH_REC_RANGE] = on_range,
    [VH_REC_REGION] = on_region,
    [VH_REC_MARK] = on_mark,
    [VH_REC_TAG] = on_tag,
    [VH_REC_END] = on_end,
    [VH_REC_REACH] = on_reach,
    [VH_REC_REACH_END] = on_reach_end,
    [VH_REC_WINDOW] = on_window,
};

static void on_event(struct loader *L, const struct vh_event *ev)
{
    unsigned type = ev->rec->type;

    if (ev->time > L->last_time)
        L->last_time = ev->time;
    if (type == VH_REC_ALLOC)
        on_alloc(L, ev, 0);
    else if (type == VH_REC_FREE)
        on_free(L, ev);
    else if (type == VH_REC_RESIZE)
        on_alloc(L, ev, 1);
    else if (type < sizeof on_record / sizeof on_record[0] && on_record[type])
        on_record[type](L, ev);
    else
        L->unknown_records++;
}

_Static_assert(offsetof(struct vh_rec_alloc, addr) == offsetof(struct vh_rec_free, addr),
               "prefetch reads addr at one offset");

/* Read-ahead, stage 1 (an event enters the window): start loading the hash
 * slots it will probe. */
static inline void prefetch(const struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_hdr *h = ev->rec;
    const struct heap *hp;

    if (h->type == VH_REC_ALLOC || h->type == VH_REC_RESIZE || h->type == VH_REC_FREE) {
        hp = L->heaps[h->a];
        if (hp)    /* ALLOC, RESIZE and FREE all have addr at offset 16 */
            livemap__prefetch(hp->live, ((const struct vh_rec_alloc *)h)->addr);
        if (hp && h->type != VH_REC_FREE) {
            const struct vh_rec_alloc *r = (const struct vh_rec_alloc *)h;
            const uint32_t *at = agg_sys_at(L, hp->id, h->b, r->tag);
            if (at)
                __builtin_prefetch(at);
            else if (L->agg_map.s)
                __builtin_prefetch(
                    &L->agg_map.s[mix(agg_key(r->tag, h->b), hp->id) & L->agg_map.mask]);
        }
    }
}

/* Stage 2 (half a window later; the slots have arrived): start loading the
 * aggregate the event will update. Returns it (UINT32_MAX if none yet): an
 * allocation uses it when it is processed, once checked. */
static inline uint32_t prefetch_agg(struct loader *L, const struct vh_event *ev, size_t *slot)
{
    const struct vh_rec_hdr *h = ev->rec;
    uint32_t i = UINT32_MAX;

    if ((h->type == VH_REC_ALLOC || h->type == VH_REC_RESIZE) && L->heaps[h->a]) {
        i = agg_find(L, L->heaps[h->a]->id, h->b, ((const struct vh_rec_alloc *)h)->tag);
    } else if (h->type == VH_REC_FREE && L->heaps[h->a]) {
        struct livemap *m = L->heaps[h->a]->live;
        const struct vh_live_block *b = livemap__find(m, ((const struct vh_rec_free *)h)->addr);
        if (b) {
            i = b->agg;
            *slot = livemap__slot(m, b);
        }
    }
    if (i != UINT32_MAX)
        __builtin_prefetch(&L->aggs[i], 1);
    return i;
}

/* ---- the feeder: the capture is read on a thread of its own ----------------
 * Decoding and merging the capture's per-thread streams costs about as
 * much as everything the loader then does with an event, so a second
 * thread reads it: capture__next() straight into batches of BATCH events,
 * NBATCH of them in a ring. An event's rec points into the mapping (which
 * lives as long as the capture) or into the event's own `dec`, so an event
 * stays usable in its batch slot until the batch is released; a record
 * found anywhere else is copied out. Without a thread the loader's own
 * thread fills each batch when it first needs it. The loader may take
 * batch k + 1 before it releases k (settle() looks ahead); a batch taken
 * again is handed out as it is. */
struct batch {
    struct vh_event ev[BATCH];
    size_t n;
    int last;                          /* the stream ends with this batch    */
    uint64_t done, total;              /* capture__progress() after it       */
    void **copies;                     /* records copied out, freed with it  */
    size_t ncopies, capcopies;
    size_t nskip;                      /* records settle() processed ahead of */
    uint8_t skip[BATCH];               /* their turn: 1 at their index; the
                                          loader's own (it clears them before
                                          releasing the batch)               */
};

struct feeder {
    struct capture *cap;
    struct coarse_map *coarse;         /* NULL: times are taken as they are  */
    const char *lo, *hi;               /* the mapping                        */
    struct batch *b;                   /* NBATCH                             */
    uint64_t filled, released;         /* batches, counting from 0           */
    int threaded, quit, oom;
    int pwait, cwait;                  /* the feeder / the loader is waiting */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static void batch_clear(struct batch *b)
{
    for (size_t i = 0; i < b->ncopies; i++)
        free(b->copies[i]);
    b->ncopies = 0;
}

/* Keeps ev->rec valid for as long as the batch: 0 or -ENOMEM. */
static int batch_keep(struct feeder *F, struct batch *b, struct vh_event *ev)
{
    const char *r = (const char *)ev->rec;
    size_t size;
    void *copy;

    if ((r >= F->lo && r < F->hi) ||
        (r >= (const char *)&ev->dec && r < (const char *)(&ev->dec + 1)))
        return 0;
    size = vh_record_size(ev->rec);
    if (size < ev->size)
        size = ev->size;
    if (size < sizeof(struct vh_rec_hdr))
        size = sizeof(struct vh_rec_hdr);
    if (b->ncopies == b->capcopies) {
        size_t n = b->capcopies ? b->capcopies * 2 : 16;
        void **p = realloc(b->copies, n * sizeof *p);
        if (!p)
            return -ENOMEM;
        b->copies = p;
        b->capcopies = n;
    }
    if (!(copy = malloc(size)))
        return -ENOMEM;
    memcpy(copy, r, size);
    b->copies[b->ncopies++] = copy;
    ev->rec = copy;
    return 0;
}

static void batch_fill(struct feeder *F, struct batch *b)
{
    size_t n = 0;
    int more = 1;

    batch_clear(b);
    while (n < BATCH && (more = capture__next(F->cap, &b->ev[n]) == 1)) {
        if (F->coarse)
            b->ev[n].time = coarse__map(F->coarse, b->ev[n].time);
        if (batch_keep(F, b, &b->ev[n])) {
            F->oom = 1;
            more = 0;
            break;
        }
        n++;
    }
    b->n = n;
    b->last = !more;
    b->done = capture__progress(F->cap, &b->total);
}

static void *feeder_main(void *arg)
{
    struct feeder *F = arg;

    for (uint64_t k = 0;; k++) {
        int quit;
        pthread_mutex_lock(&F->mu);
        while (!F->quit && k - F->released >= NBATCH) {
            F->pwait = 1;
            pthread_cond_wait(&F->cv, &F->mu);
        }
        F->pwait = 0;
        quit = F->quit;
        pthread_mutex_unlock(&F->mu);
        if (quit)
            break;
        struct batch *b = &F->b[k % NBATCH];
        batch_fill(F, b);
        pthread_mutex_lock(&F->mu);
        F->filled = k + 1;
        if (F->cwait)
            pthread_cond_broadcast(&F->cv);
        pthread_mutex_unlock(&F->mu);
        if (b->last)
            break;
    }
    return NULL;
}

/* 0 or -ENOMEM; a feeder without a thread is not an error. */
static int feeder_start(struct feeder *F, struct capture *cap)
{
    memset(F, 0, sizeof *F);
    F->cap = cap;
    F->lo = (const char *)capture__header(cap);
    F->hi = F->lo + capture__file_size(cap);
    if (!(F->b = calloc(NBATCH, sizeof *F->b)) || coarse__build(cap, &F->coarse))
        return -ENOMEM;
    if (pthread_mutex_init(&F->mu, NULL))
        return 0;
    if (pthread_cond_init(&F->cv, NULL)) {
        pthread_mutex_destroy(&F->mu);
        return 0;
    }
    if (pthread_create(&F->thread, NULL, feeder_main, F)) {
        pthread_cond_destroy(&F->cv);
        pthread_mutex_destroy(&F->mu);
        return 0;
    }
    F->threaded = 1;
    return 0;
}

/* Batch k, once it is complete. */
static struct batch *feeder_take(struct feeder *F, uint64_t k)
{
    struct batch *b = &F->b[k % NBATCH];

    if (!F->threaded) {
        while (F->filled <= k) {
            batch_fill(F, &F->b[F->filled % NBATCH]);
            F->filled++;
        }
        return b;
    }
    pthread_mutex_lock(&F->mu);
    while (F->filled <= k) {
        F->cwait = 1;
        pthread_cond_wait(&F->cv, &F->mu);
    }
    F->cwait = 0;
    pthread_mutex_unlock(&F->mu);
    return b;
}

static void feeder_release(struct feeder *F, uint64_t k)
{
    struct batch *b = &F->b[k % NBATCH];

    if (b->nskip) {
        memset(b->skip, 0, sizeof b->skip);
        b->nskip = 0;
    }
    if (!F->threaded)
        return;
    /* a waiting feeder is woken when half the ring is free, not for each
     * batch: fewer sleeps and wake-ups on both sides */
    pthread_mutex_lock(&F->mu);
    F->released = k + 1;
    if (F->pwait && F->filled - F->released <= NBATCH / 2)
        pthread_cond_broadcast(&F->cv);
    pthread_mutex_unlock(&F->mu);
}

/* Stops the thread (wherever it is) and frees the batches. */
static void feeder_stop(struct feeder *F)
{
    if (F->threaded) {
        pthread_mutex_lock(&F->mu);
        F->quit = 1;
        pthread_cond_broadcast(&F->cv);
        pthread_mutex_unlock(&F->mu);
        pthread_join(F->thread, NULL);
        pthread_cond_destroy(&F->cv);
        pthread_mutex_destroy(&F->mu);
        F->threaded = 0;
    }
    for (size_t i = 0; F->b && i < NBATCH; i++) {
        batch_clear(&F->b[i]);
        free(F->b[i].copies);
    }
    free(F->b);
    F->b = NULL;
    coarse__free(F->coarse);
    F->coarse = NULL;
}

/* ---- settling cross-thread misorders ---------------------------------------
 * An allocation's time is read without a fence, so it may come before the
 * real allocator's load that found the block: up to a memory latency
 * before another thread's free of that same block (docs/capture-format.md,
 * ordering rule 4). Within one thread records are in program order; across
 * threads, two such misorders show up as anomalies:
 *  A. an ALLOC onto an address still live, whose FREE by another thread
 *     follows within SETTLE_NS;
 *  B. a FREE of an address not live, whose ALLOC by another thread follows
 *     within SETTLE_NS.
 * settle() then processes that later record first, at the current time (so
 * emitted times never go back), and marks it to be skipped at its turn. It
 * runs only on an anomaly, so the common path pays one test per record. */

/* 1 when the record is an ALLOC, RESIZE or FREE: it changes its thread's
 * "latest allocation" (what check_temporary() reads). */
static inline int is_block_call(const struct vh_rec_hdr *h)
{
    return h->type == VH_REC_ALLOC || h->type == VH_REC_RESIZE || h->type == VH_REC_FREE;
}

/* A record settle() may look at: ALLOC / RESIZE / FREE of (heap, addr).
 * 1: touches it (a failed allocation does not). */
static inline int touches(const struct vh_rec_hdr *h, uint16_t heap, uint64_t addr)
{
    return is_block_call(h) && h->a == heap && ((const struct vh_rec_free *)h)->addr == addr &&
           !(h->type != VH_REC_FREE && (h->flags & VH_RF_FAILED));
}

/* ev (the current record, processed by on_alloc / on_free) found an anomaly
 * on (heap, addr): looks in the rest of this batch and in the next for the
 * first later record about that address; when it is a `want` (VH_REC_FREE
 * for case A, VH_REC_ALLOC for B) of another thread within SETTLE_NS, it is
 * processed now. Returns 1 if so. */
static __attribute__((noinline)) int settle(struct loader *L, const struct vh_event *ev,
                                            uint16_t heap, uint64_t addr, uint8_t want)
{
    struct batch *bs[2] = { L->cur_b, NULL };
    uint64_t limit = ev->time < UINT64_MAX - SETTLE_NS ? ev->time + SETTLE_NS : UINT64_MAX;
    struct vh_event moved;
    struct thread *t;
    uint32_t hint_agg = L->hint_agg, last_serial, last_heap;
    size_t hint_slot = L->hint_slot, fj = 0, j;
    uint64_t last_addr;
    int fb = -1, own = 0;

    if (L->settling || !addr || !bs[0])
        return 0;
    for (int i = 0; i < 2 && fb < 0; i++) {
        struct batch *b = bs[i];
        for (j = i ? 0 : L->cur_j + 1; j < b->n; j++) {
            const struct vh_event *e = &b->ev[j];
            const struct vh_rec_hdr *h = e->rec;
            if (e->time > limit)
                return 0;
            if (b->skip[j])
                continue;
            if (touches(h, heap, addr)) {
                if (h->type != want || e->tid == ev->tid)
                    return 0;
                fb = i;
                fj = j;
                break;
            }
            /* the address changes hands, or the heap's blocks go: stop */
            if (h->type == VH_REC_MOVE && h->a == heap &&
                (((const struct vh_rec_move *)h)->from == addr ||
                 ((const struct vh_rec_move *)h)->to == addr))
                return 0;
            if ((h->type == VH_REC_HEAP_CREATE || h->type == VH_REC_HEAP_DESTROY ||
                 h->type == VH_REC_RANGE) &&
                heap != VH_HEAP_SYSTEM)
                return 0;
        }
        if (fb < 0 && (i || b->last))
            return 0;
        if (fb < 0)
            bs[1] = feeder_take(L->feed, L->cur_k + 1);
    }

    /* Does the moved record overtake calls of its own thread? Then the
     * thread's latest allocation (heaptrack's temporary) is kept as its
     * program order has it: saved now, restored after; at its turn the
     * moved record leaves it as it would have (settled()). */
    moved = bs[fb]->ev[fj];
    for (int i = 0; i <= fb && !own; i++)
        for (j = i ? 0 : L->cur_j + 1; j < (i == fb ? fj : bs[i]->n); j++)
            if (!bs[i]->skip[j] && bs[i]->ev[j].tid == moved.tid &&
                is_block_call(bs[i]->ev[j].rec)) {
                own = 1;
                break;
            }
    moved.time = ev->time;
    if (!(t = thread_get(L, moved.tid, moved.time)))
        return 0;
    bs[fb]->skip[fj] = 1;
    bs[fb]->nskip++;
    last_serial = t->last_serial;
    last_addr = t->last_addr;
    last_heap = t->last_heap;
    if (own)                           /* a call of its own came in between:
                                          not temporary                     */
        t->last_serial = 0;
    L->settling = 1;
    L->hint_agg = UINT32_MAX;
    L->hint_slot = SIZE_MAX;
    if (want == VH_REC_FREE)
        on_free(L, &moved);
    else
        on_alloc(L, &moved, 0);
    L->settling = 0;
    L->hint_agg = hint_agg;
    L->hint_slot = hint_slot;
    if ((t = thread_get(L, moved.tid, moved.time))) {
        t->last_serial = last_serial;
        t->last_addr = last_addr;
        t->last_heap = last_heap;
    }
    L->reordered++;
    return 1;
}

/* A record's turn, after settle() processed it ahead: what it would have
 * done to its thread then. A moved FREE would have cleared the thread's
 * latest allocation; a moved ALLOC would have made its block the latest,
 * but that block is gone by now (the FREE that settle() ran for freed it),
 * and a latest that is gone is the same as none. */
static void settled(struct loader *L, const struct vh_event *ev)
{
    struct thread *t;

    if (ev->time > L->last_time)
        L->last_time = ev->time;
    if ((t = thread_get(L, ev->tid, ev->time)))
        t->last_serial = 0;
}

/* ---- the end: everything kept in memory goes to the DB ------------------- */

static int by_key(const void *x, const void *y, void *arg)
{
    const struct agg *aggs = arg;
    const struct agg *a = &aggs[*(const uint32_t *)x], *b = &aggs[*(const uint32_t *)y];
    if (a->heap != b->heap)
        return a->heap < b->heap ? -1 : 1;
    if (a->stack != b->stack)
        return a->stack < b->stack ? -1 : 1;
    return (a->tag > b->tag) - (a->tag < b->tag);
}

/* Aggregate indices in (heap, stack, tag) order: the primary key order of
 * stack_stats, so its rows append to the B-tree. NULL when out of memory. */
static uint32_t *agg_order(struct loader *L)
{
    uint32_t *order = malloc((L->naggs ? L->naggs : 1) * sizeof *order);

    if (!order) {
        fail(L, -ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < L->naggs; i++)
        order[i] = (uint32_t)i;
    qsort_r(order, L->naggs, sizeof *order, by_key, L->aggs);
    return order;
}

/* One leaked block, copied out of the live map so that writing rows in key
 * order reads memory sequentially. */
struct leak_row {
    uint64_t addr, size, time;
    uint32_t stack, tid, slack, heap;
    uint16_t tag;
};

static int by_addr(const void *x, const void *y)
{
    uint64_t a = ((const struct leak_row *)x)->addr, b = ((const struct leak_row *)y)->addr;
    return (a > b) - (a < b);
}

/* The next live block of any heap not destroyed, heap by heap: start
 * with *id = *pos = 0; NULL after the last. */
static struct vh_live_block *live_next(const struct loader *L, size_t *id, size_t *pos)
{
    for (; *id < L->nbyid; (*id)++, *pos = 0) {
        struct heap *h = L->byid[*id];
        struct vh_live_block *b;
        if (h && !h->destroyed && (b = livemap__next(h->live, pos)))
            return b;
    }
    return NULL;
}

/* The live blocks of heaps that still exist, in (heap, stack, address)
 * order: a counting sort by (heap, stack) group, then each group by
 * address. Linear but for the small per-group sorts. */
static void write_leaks(struct loader *L, const uint32_t *order)
{
    struct rows rw;                    /* 8 KiB */
    int ok = !rows_open(L, &rw, "INSERT INTO leaks(heap_id, address, size, usable, stack_id, "
                                "tag_id, tid, time, class) VALUES", 9);
    rw.cols.null = 1u << 8;            /* class: not classified */
    uint32_t *group = malloc((L->naggs ? L->naggs : 1) * sizeof *group);
    size_t ngroups = 0, total = 0;
    size_t *start = NULL;
    struct leak_row *rows = NULL;
    struct vh_live_block *b;

    if (!group)
        goto oom;
    for (size_t k = 0; k < L->naggs; k++) {
        const struct agg *a = &L->aggs[order[k]], *p = k ? &L->aggs[order[k - 1]] : NULL;
        if (!p || p->heap != a->heap || p->stack != a->stack)
            ngroups++;
        group[order[k]] = (uint32_t)ngroups - 1;
    }
    start = calloc(ngroups + 1, sizeof *start);
    if (!start)
        goto oom;
    for (size_t id = 0, pos = 0; (b = live_next(L, &id, &pos)); total++)
        start[group[b->agg] + 1]++;
    for (size_t g = 0; g < ngroups; g++)
        start[g + 1] += start[g];
    rows = malloc((total ? total : 1) * sizeof *rows);
    if (!rows)
        goto oom;
    for (size_t id = 0, pos = 0; (b = live_next(L, &id, &pos));) {
        const struct agg *a = &L->aggs[b->agg];
        rows[start[group[b->agg]]++] = (struct leak_row){
            .addr = b->addr, .size = b->size, .time = b->time, .stack = a->stack,
            .tid = b->tid, .slack = b->slack, .heap = a->heap, .tag = a->tag };
    }
    /* start[g] is now the end of group g, i.e. the start of g + 1 */
    for (size_t g = 0, from = 0; g < ngroups; from = start[g++])
        if (start[g] - from > 1)
            qsort(rows + from, start[g] - from, sizeof *rows, by_addr);
    for (size_t i = 0; ok && i < total && !L->failed; i++) {
        const struct leak_row *r = &rows[i];
        rows_set(&rw, 0, r->heap);
        rows_set(&rw, 1, (sqlite3_int64)r->addr);
        rows_set(&rw, 2, (sqlite3_int64)r->size);
        rows_set(&rw, 3, (sqlite3_int64)(r->size + r->slack));
        rows_set(&rw, 4, r->stack);
        rows_set(&rw, 5, r->tag);
        rows_set(&rw, 6, r->tid);
        rows_set(&rw, 7, (sqlite3_int64)r->time);
        int cls = r->heap == VH_HEAP_SYSTEM ? reach__class(&L->reach, r->addr) : -1;
        if (cls < 0)
            rows_set_null(&rw, 8);
        else
            rows_set(&rw, 8, cls);
        rows_next(&rw);
    }
    L->leaks = total;
    goto out;
oom:
    fail(L, -ENOMEM, "out of memory");
out:
    rows_close(&rw);
    free(group);
    free(start);
    free(rows);
}

/* A WITHOUT ROWID table filled in key order by INSERTs keeps its pages
 * about 88% full (SQLite splits a full leaf, as it must for inserts
 * anywhere); one copied whole by `INSERT INTO t SELECT * FROM u` from a
 * table of the same definition goes through SQLite's transfer
 * optimization, which fills them (as VACUUM does): 11% fewer pages for
 * stack_totals. So `table` is first filled as temp.vh_bulk (in memory:
 * temp_store), created here with its definition, then bulk_end copies it
 * over. Should SQLite not transfer, the copy is an ordinary INSERT: the
 * same rows, only less packed. */
static int bulk_begin(struct loader *L, const char *table)
{
    sqlite3_stmt *st = prep(L, "SELECT sql FROM main.sqlite_schema WHERE type = 'table' AND name = ?");
    const char *sql;
    char *create = NULL;
    size_t n = strlen(table);
    int rc = -1;

    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    /* "CREATE TABLE <table> (" becomes "CREATE TEMP TABLE vh_bulk (" */
    if (sqlite3_step(st) == SQLITE_ROW && (sql = (const char *)sqlite3_column_text(st, 0)) &&
        !strncmp(sql, "CREATE TABLE ", 13) && !strncmp(sql + 13, table, n) &&
        sql[13 + n] == ' ') {
        create = sqlite3_mprintf("CREATE TEMP TABLE vh_bulk%s", sql + 13 + n);
        if (!create)
            fail(L, -ENOMEM, "out of memory");
        else
            rc = exec(L, create);
    } else {
        fail(L, -EIO, "sqlite: no table %s to fill", table);
    }
    sqlite3_free(create);
    sqlite3_finalize(st);
    return rc;
}

static void bulk_end(struct loader *L, const char *table)
{
    char sql[160];

    snprintf(sql, sizeof sql, "INSERT INTO main.%s SELECT * FROM temp.vh_bulk; DROP TABLE temp.vh_bulk",
             table);
    if (!L->failed)
        exec(L, sql);
}

/* stack_totals: per (heap, stack, tag) the totals (the stack_stats view)
 * and the fit of its live bytes to a line over the recorded time (trend.h;
 * 0 before its first allocation: the growth view). Heaps destroyed before
 * the end hold nothing and get no fit (NULL: no growth row), nor do
 * (heap, stack, tag)s that never allocated. */
static void write_stack_totals(struct loader *L, const uint32_t *order)
{
    struct rows *rw = malloc(sizeof *rw);
    /* the fit ends where recording did: at the end, or where it paused */
    uint64_t rec_end = rec_time(L, L->recording_off ? L->pause_start : L->last_time);

    if (!rw || bulk_begin(L, "stack_totals")) {
        if (!rw)
            fail(L, -ENOMEM, "out of memory");
        free(rw);
        return;
    }
    int ok = !rows_open(L, rw,
                        "INSERT INTO temp.vh_bulk(heap_id, stack_id, tag_id, allocations, failed, "
                        "bytes_allocated, usable_allocated, frees, temporary, peak_blocks, "
                        "peak_bytes, max_live_bytes, leaked_blocks, leaked_bytes, first_time, "
                        "mean_bytes, bytes_per_hour, r2) VALUES",
                        18);
    rw->cols.real = 1u << 16 | 1u << 17;
    rw->cols.null = 0xfu << 14;        /* the fit's four */
    for (size_t k = 0; ok && k < L->naggs && !L->failed; k++) {
        struct agg *a = &L->aggs[order[k]];
        const struct heap *h = L->byid[a->heap];
        int leaked = !h->destroyed;

        agg_sync(a, h);                /* untouched since the peak: current */
        if (a->stack && !stack_mark(L, a->stack)) {
            stack_row(L, a->stack, 0, 0, 0);   /* referenced, never described */
            L->missing_stacks++;
        }
        rows_set(rw, 0, a->heap);
        rows_set(rw, 1, a->stack);
        rows_set(rw, 2, a->tag);
        rows_set(rw, 3, (sqlite3_int64)a->allocations);
        rows_set(rw, 4, (sqlite3_int64)a->failed);
        rows_set(rw, 5, (sqlite3_int64)a->bytes);
        rows_set(rw, 6, (sqlite3_int64)a->usable);
        rows_set(rw, 7, (sqlite3_int64)a->frees);
        rows_set(rw, 8, (sqlite3_int64)a->temporary);
        rows_set(rw, 9, (sqlite3_int64)a->peak_blocks);
        rows_set(rw, 10, (sqlite3_int64)a->peak_bytes);
        rows_set(rw, 11, (sqlite3_int64)a->max_live_bytes);
        rows_set(rw, 12, leaked ? (sqlite3_int64)a->live_blocks : 0);
        rows_set(rw, 13, leaked ? (sqlite3_int64)a->live_bytes : 0);
        if (leaked && a->tr.first != UINT64_MAX) {
            struct trend_fit f = trend__fit(&a->tr, rec_end);
            rows_set(rw, 14, (sqlite3_int64)a->first_time);
            rows_set(rw, 15, (sqlite3_int64)llround(f.mean));
            rows_set_real(rw, 16, f.slope * 3600.0);
            rows_set_real(rw, 17, f.r2);
        } else {
            for (int c = 14; c < 18; c++)
                rows_set_null(rw, c);
        }
        rows_next(rw);
    }
    rows_close(rw);
    free(rw);
    bulk_end(L, "stack_totals");
}

/* When recording was on (WINDOW records; one window from 0 when none). */
static void write_windows(struct loader *L)
{
    sqlite3_stmt *st = prep(L, "INSERT INTO windows(start_time, end_time) VALUES (?,?)");

    for (size_t i = 0; st && i < L->nwindows && !L->failed; i++) {
        uint64_t end = L->windows[i].end;
        sqlite3_bind_int64(st, 1, (sqlite3_int64)L->windows[i].start);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)(end == UINT64_MAX ? L->last_time : end));
        run(L, st);
    }
    sqlite3_finalize(st);
}

static void write_heaps(struct loader *L)
{
    sqlite3_stmt *st = prep(L, "INSERT INTO heaps(id, name, parent_id, base, size, create_time, "
                               "destroy_time, allocations, failed, frees, temporary, "
                               "bytes_allocated, peak_bytes, peak_blocks, peak_time, live_bytes, "
                               "live_blocks, leaked_bytes, leaked_blocks, unknown_frees) "
                               "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!st)
        return;
    for (size_t id = 0; id < L->nbyid && !L->failed; id++) {
        struct heap *h = L->byid[id];
        if (!h)
            continue;
        series_flush(L, h);
        sqlite3_bind_int64(st, 1, h->id);
        sqlite3_bind_text(st, 2, h->name, -1, SQLITE_STATIC);
        if (h->has_parent)
            sqlite3_bind_int64(st, 3, h->parent);
        else
            sqlite3_bind_null(st, 3);
        if (h->base || h->size) {
            sqlite3_bind_int64(st, 4, (sqlite3_int64)h->base);
            sqlite3_bind_int64(st, 5, (sqlite3_int64)h->size);
        } else {
            sqlite3_bind_null(st, 4);
            sqlite3_bind_null(st, 5);
        }
        sqlite3_bind_int64(st, 6, (sqlite3_int64)h->create_time);
        bind_int_if(st, 7, h->destroyed, h->destroy_time);
        sqlite3_bind_int64(st, 8, (sqlite3_int64)h->allocations);
        sqlite3_bind_int64(st, 9, (sqlite3_int64)h->failed);
        sqlite3_bind_int64(st, 10, (sqlite3_int64)h->frees);
        sqlite3_bind_int64(st, 11, (sqlite3_int64)h->temporary);
        sqlite3_bind_int64(st, 12, (sqlite3_int64)h->bytes_allocated);
        sqlite3_bind_int64(st, 13, (sqlite3_int64)h->peak_bytes);
        sqlite3_bind_int64(st, 14, (sqlite3_int64)h->peak_blocks);
        bind_int_if(st, 15, h->has_peak, h->peak_time);
        sqlite3_bind_int64(st, 16, (sqlite3_int64)h->live_bytes);
        sqlite3_bind_int64(st, 17, (sqlite3_int64)h->live_blocks);
        sqlite3_bind_int64(st, 18, h->destroyed ? 0 : (sqlite3_int64)h->live_bytes);
        sqlite3_bind_int64(st, 19, h->destroyed ? 0 : (sqlite3_int64)h->live_blocks);
        sqlite3_bind_int64(st, 20, (sqlite3_int64)h->unknown_frees);
        run(L, st);
    }
    sqlite3_finalize(st);
}

static void write_threads_modules(struct loader *L)
{
    sqlite3_stmt *st = prep(L, "INSERT INTO threads(tid, first_time, last_time, allocations, "
                               "frees, exited) VALUES (?,?,?,?,?,?)");
    for (size_t i = 0; st && i < L->nthreads; i++) {
        const struct thread *t = &L->threads[i];
        sqlite3_bind_int64(st, 1, t->tid);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)t->first_time);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)t->last_time);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)t->allocations);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)t->frees);
        sqlite3_bind_int64(st, 6, t->exited);
        run(L, st);
    }
    sqlite3_finalize(st);

    st = prep(L, "INSERT INTO modules(id, path, build_id, bias, lo, hi, load_time, "
                 "unload_time, is_main) VALUES (?,?,?,?,?,?,?,?,?)");
    for (size_t i = 0; st && i < L->nmods; i++) {
        const struct module *m = &L->mods[i];
        sqlite3_bind_int64(st, 1, (sqlite3_int64)i + 1);
        sqlite3_bind_text(st, 2, m->path, -1, SQLITE_STATIC);
        bind_text_or_null(st, 3, m->build_id[0] ? m->build_id : NULL);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)m->bias);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)m->lo);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)m->hi);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)m->load_time);
        bind_int_if(st, 8, m->unloaded, m->unload_time);
        sqlite3_bind_int64(st, 9, m->is_main);
        run(L, st);
    }
    sqlite3_finalize(st);
}

/* The header's NUL-separated argv as a JSON array of strings. */
static char *argv_json(struct loader *L)
{
    struct out_buf b = { 0 };
    size_t alen = 0;
    const char *a = capture__argv(L->cap, &alen);

    out_buf__add(&b, "[", 1);
    for (size_t i = 0; a && i < alen;) {
        size_t k = strnlen(a + i, alen - i);
        if (i)
            out_buf__add(&b, ",", 1);
        vh_json_str(out_buf__sink, &b, a + i, k, 0);
        i += k + 1;
    }
    out_buf__add(&b, "]", 1);
    if (b.oom) {
        free(b.p);
        fail(L, -ENOMEM, "out of memory");
        return NULL;
    }
    return b.p;
}

static void write_process(struct loader *L)
{
    const struct vh_capture_header *hd = capture__header(L->cap);
    sqlite3_stmt *st = prep(L, "INSERT INTO processes(id, pid, ppid, exe, argv, "
                               "start_realtime_ns, runtime_ns, ended, forked, exec_generation, "
                               "page_size, phys_pages, max_depth, unwind, dropped_events, "
                               "nested_events, stack_table_full, peak_rss, peak_rss_time, "
                               "sample_rate) VALUES (1,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    char exe[VH_EXE_MAX + 1];
    char *argv = argv_json(L);

    if (!st || !argv)
        goto out;
    memcpy(exe, hd->exe, VH_EXE_MAX);
    exe[VH_EXE_MAX] = 0;
    sqlite3_bind_int64(st, 1, hd->pid);
    sqlite3_bind_int64(st, 2, hd->ppid);
    sqlite3_bind_text(st, 3, exe, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, argv, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)hd->start_realtime_ns);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)L->last_time);
    sqlite3_bind_int64(st, 7, L->ended || (hd->flags & (VH_HDR_ENDED | VH_HDR_EXITED)));
    sqlite3_bind_int64(st, 8, !!(hd->flags & VH_HDR_FORKED));
    sqlite3_bind_int64(st, 9, hd->exec_generation);
    sqlite3_bind_int64(st, 10, hd->page_size);
    sqlite3_bind_int64(st, 11, (sqlite3_int64)hd->phys_pages);
    sqlite3_bind_int64(st, 12, hd->max_depth);
    sqlite3_bind_text(st, 13, hd->unwind == VH_UNWIND_FP ? "fp" : "libunwind", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 14, (sqlite3_int64)hd->dropped_events);
    sqlite3_bind_int64(st, 15, (sqlite3_int64)hd->nested_events);
    sqlite3_bind_int64(st, 16, (sqlite3_int64)hd->stack_table_full);
    if (L->has_rss) {
        sqlite3_bind_int64(st, 17, (sqlite3_int64)L->peak_rss);
        sqlite3_bind_int64(st, 18, (sqlite3_int64)L->peak_rss_time);
    } else {
        sqlite3_bind_null(st, 17);
        sqlite3_bind_null(st, 18);
    }
    sqlite3_bind_int64(st, 19, (sqlite3_int64)L->rate);
    run(L, st);
out:
    free(argv);
    sqlite3_finalize(st);
}

static void meta_int(struct loader *L, sqlite3_stmt *st, const char *key, uint64_t v)
{
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)v);
    run(L, st);
}

static void meta_text(struct loader *L, sqlite3_stmt *st, const char *key, const char *v)
{
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    bind_text_or_null(st, 2, v);
    run(L, st);
}

/* What load__ensure() compares to decide whether a DB is up to date. */
struct capture_stamp {
    uint64_t size, mtime_ns, chunks, last_time, flags;
    uint64_t coarse_res_ns, precise_from;
    char path[PATH_MAX];
};

static void write_meta(struct loader *L, const struct capture_stamp *cs, const char *damage,
                       unsigned damage_count)
{
    sqlite3_stmt *st = prep(L, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)");
    char when[32];
    struct tm tm;
    time_t now = time(NULL);

    if (!st)
        return;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    meta_int(L, st, "schema_version", VH_SCHEMA_VERSION);
    meta_text(L, st, "vheap_version", VHEAP_VERSION);
    meta_text(L, st, "capture_path", cs->path);
    meta_int(L, st, "capture_size", cs->size);
    meta_int(L, st, "capture_mtime_ns", cs->mtime_ns);
    meta_int(L, st, "capture_chunks", cs->chunks);
    meta_int(L, st, "capture_last_time", cs->last_time);
    meta_int(L, st, "capture_flags", cs->flags);
    meta_int(L, st, "coarse_clock_ns", cs->coarse_res_ns);
    if (cs->coarse_res_ns)
        meta_int(L, st, "precise_from", cs->precise_from);   /* UINT64_MAX: -1 */
    /* coarse times spread over their ticks (coarse.c): what charts say */
    meta_text(L, st, "times", L->coarse_groups ? "interpolated" : "exact");
    if (L->coarse_groups)
        meta_int(L, st, "coarse_ticks", L->coarse_groups);
    meta_text(L, st, "loaded_at", when);
    /* the growth view's start_time and end_time, the same in every row */
    meta_int(L, st, "growth_start_time", L->nwindows ? L->windows[0].start : 0);
    meta_int(L, st, "growth_end_time", L->last_time);
    meta_int(L, st, "records", L->records);
    meta_text(L, st, "damage", damage_count ? damage : NULL);
    meta_int(L, st, "damage_count", damage_count);
    meta_int(L, st, "bucket_ns", L->bucket_ns);
    meta_int(L, st, "implicit_frees", L->implicit_frees);
    meta_int(L, st, "reordered", L->reordered);
    meta_int(L, st, "unknown_moves", L->unknown_moves);
    meta_int(L, st, "unknown_records", L->unknown_records);
    meta_int(L, st, "implicit_heaps", L->implicit_heaps);
    meta_int(L, st, "bad_heap_records", L->bad_heap_records);
    meta_int(L, st, "heap_reuses", L->heap_reuses);
    meta_int(L, st, "missing_stacks", L->missing_stacks);
    meta_int(L, st, "missing_stacks_merged", L->missing_merged);
    meta_int(L, st, "events", L->evst.events);
    meta_int(L, st, "event_blocks", L->evst.blocks);
    meta_int(L, st, "event_bytes", L->evst.event_bytes);
    meta_int(L, st, "checkpoints", L->evst.checkpoints);
    meta_int(L, st, "checkpoint_bytes", L->evst.checkpoint_bytes);
    meta_int(L, st, "checkpoint_events", L->opts->checkpoint_events ? L->opts->checkpoint_events
                                                                    : VH_CHECKPOINT_EVENTS);
    sqlite3_finalize(st);
}

/* Bucket width: a 1-2-5 step of milliseconds giving at most SERIES_TARGET
 * buckets over the runtime the header announces. */
static uint64_t pick_bucket(const struct vh_capture_header *h)
{
    static const uint64_t steps[] = { 1, 2, 5 };
    uint64_t run_ns = h->end_time > h->last_time ? h->end_time : h->last_time;
    if (h->exact_end > run_ns)
        run_ns = h->exact_end;

    for (uint64_t scale = MIN_BUCKET_NS; scale < UINT64_MAX / 10; scale *= 10)
        for (size_t i = 0; i < 3; i++)
            if (run_ns / (steps[i] * scale) < SERIES_TARGET)
                return steps[i] * scale;
    return UINT64_MAX / 2;
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

static void progress(struct loader *L, int *last_pct, int final, uint64_t done, uint64_t total)
{
    int pct = final ? 100 : total ? (int)(done * 100 / total) : 0;

    if (pct == *last_pct)
        return;
    *last_pct = pct;
    fprintf(stderr, "\rloading: %3d%% %llu records", pct, (unsigned long long)L->records);
    if (final)
        fputs("\r\033[K", stderr);
    fflush(stderr);
}

/* Frees the in-memory state and statements; idempotent, so the DB handle
 * can go on (symbols, indexes) with the memory already returned. */
/* The call tree's lookup: needed while STACK records come, not after. */
static void nodes_free(struct loader *L)
{
    free(L->node_map.s);
    free(L->prev_addr);
    free(L->prev_node);
    free(L->chain_frame);
    L->chain_frame = NULL;
    L->node_map.s = NULL;
    L->node_map.count = 0;
    L->prev_addr = NULL;
    L->prev_node = NULL;
    L->prev_n = L->prev_cap = 0;
}

static void loader_free(struct loader *L)
{
    free(L->windows);
    L->windows = NULL;
    L->nwindows = L->capwindows = 0;
    struct rows **rws[] = { &L->node_rows, &L->stack_rows };
    for (size_t i = 0; i < sizeof rws / sizeof rws[0]; i++) {
        if (*rws[i])
            rows_close(*rws[i]);       /* finalizes; the rows left are
                                          written unless the load failed */
        free(*rws[i]);
        *rws[i] = NULL;
    }
    sqlite3_stmt **sts[] = { &L->ins_frame, &L->ins_rss, &L->ins_mark,
                             &L->ins_tag, &L->ins_series, &L->ins_region };
    for (size_t i = 0; i < sizeof sts / sizeof sts[0]; i++) {
        sqlite3_finalize(*sts[i]);
        *sts[i] = NULL;
    }
    evwriter__free(L->evw);
    L->evw = NULL;
    free(L->scratch);
    L->scratch = NULL;
    L->scratch_cap = 0;
    for (size_t i = 0; L->byid && i < L->nbyid; i++) {
        if (!L->byid[i])
            continue;
        livemap__free(L->byid[i]->live);
        free(L->byid[i]->name);
        free(L->byid[i]);
    }
    free(L->byid);
    L->byid = NULL;
    L->nbyid = 0;
    for (size_t i = 0; i < L->nmods; i++)
        free(L->mods[i].path);
    free(L->heaps);
    free(L->aggs);
    free(L->agg_map.s);
    free(L->agg_sys);
    L->agg_sys = NULL;
    L->nagg_sys = 0;
    free(L->threads);
    free(L->thread_map.s);
    free(L->mods);
    free(L->active);
    free(L->frame_map.s);
    free(L->stack_seen.s);
    free(L->seen_bits);
    L->seen_bits = NULL;
    L->seen_n = 0;
    nodes_free(L);
    free(L->regions);
    free(L->range_buf);
    L->regions = NULL;
    L->range_buf = NULL;
    L->nregions = L->capregions = L->caprange = 0;
    L->heaps = NULL;
    L->aggs = NULL;
    L->agg_map.s = L->thread_map.s = L->frame_map.s = NULL;
    L->agg_map.count = L->thread_map.count = L->frame_map.count = L->stack_seen.count = 0;
    L->threads = NULL;
    L->mods = NULL;
    L->active = NULL;
    L->stack_seen.s = NULL;
    L->naggs = L->nthreads = L->nmods = L->nactive = 0;
    L->last_thread = NULL;
}

int load__capture(const char *capture, const char *db_path, const struct load_opts *opts,
                  struct load_stats *stats, char *err, size_t errlen)
{
    static const struct load_opts defaults = { .progress = -1 };
    struct loader L = { .opts = opts ? opts : &defaults };
    struct capture_stamp cs = { 0 };
    struct db_new dbn = { 0 };
    struct feeder F = { 0 };
    uint32_t hint[AHEAD];
    size_t hint_slot[AHEAD];
    struct stat sb;
    const char *damage = NULL;
    unsigned damage_count;
    char msg[256];
    double t0 = now_s(), t1, t2, t3, cpu0;
    uint32_t *order;
    int rc, show, last_pct = -1;
    size_t n;

    memset(stats, 0, sizeof *stats);
    opts = L.opts;
    /* the stamp is taken before reading: a capture that changes while we
     * load it looks out of date afterwards, as it is */
    if (stat(capture, &sb)) {
        rc = -errno;
        snprintf(err, errlen, "%s: %s", capture, strerror(errno));
        return rc;
    }
    rc = capture__open(capture, &L.cap, msg, sizeof msg);
    if (rc) {
        snprintf(err, errlen, "%s: %s", capture, msg);
        return rc;
    }
    const struct vh_capture_header *hd = capture__header(L.cap);
    cs.size = (uint64_t)sb.st_size;
    cs.mtime_ns = (uint64_t)sb.st_mtim.tv_sec * 1000000000ull + (uint64_t)sb.st_mtim.tv_nsec;
    cs.chunks = __atomic_load_n(&hd->chunks_claimed, __ATOMIC_ACQUIRE);
    cs.last_time = __atomic_load_n(&hd->last_time, __ATOMIC_ACQUIRE);
    cs.flags = __atomic_load_n(&hd->flags, __ATOMIC_ACQUIRE);
    cs.coarse_res_ns = hd->coarse_res_ns;
    cs.precise_from = __atomic_load_n(&hd->precise_from, __ATOMIC_ACQUIRE);
    if (!realpath(capture, cs.path))
        snprintf(cs.path, sizeof cs.path, "%s", capture);

    rc = db__create(db_path, &dbn, err, errlen);
    if (rc)
        goto out;
    L.db = dbn.db;
    L.heaps = calloc(MAX_HEAPS, sizeof *L.heaps);
    L.byid = calloc(MAX_HEAPS, sizeof *L.byid);
    L.nbyid = MAX_HEAPS;
    if (!L.heaps || !L.byid) {
        rc = -ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    L.bucket_ns = pick_bucket(hd);
    L.rate = hd->sample_rate;
    if (!(L.windows = malloc(8 * sizeof *L.windows))) {
        rc = -ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    L.capwindows = 8;
    L.windows[L.nwindows++] = (struct window){ 0, UINT64_MAX };
    /* A small capture's DB holds a few pages per table and index, mostly
     * empty at SQLite's default 4 KiB: 1 KiB pages make it a fifth smaller
     * (bench's sqlite workload: 729 -> 598 KB). Big DBs keep 4 KiB, where
     * the page size changes the size by well under 1% and reading a blob
     * follows four times fewer overflow pages. */
    if (exec(&L, cs.size < SMALL_CAPTURE ? "PRAGMA page_size = 1024" : "PRAGMA page_size = 4096") ||
        exec(&L, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; "
                 "PRAGMA locking_mode = EXCLUSIVE; PRAGMA temp_store = MEMORY; "
                 "PRAGMA cache_size = -65536; PRAGMA application_id = 1986553185; "
                 "PRAGMA user_version = " VH_STR(VH_SCHEMA_VERSION) "; BEGIN"))
        goto fail;
    rc = vh_schema_apply(L.db, VH_SCHEMA_TABLES, msg, sizeof msg);
    if (rc) {
        fail(&L, rc, "%s", msg);
        goto fail;
    }
    if (!(L.node_rows = calloc(1, sizeof *L.node_rows)) ||
        !(L.stack_rows = calloc(1, sizeof *L.stack_rows))) {
        fail(&L, -ENOMEM, "out of memory");
        goto fail;
    }
    if (rows_open(&L, L.node_rows, "INSERT INTO stack_tree(id, up, frame_id) VALUES", 3) ||
        rows_open(&L, L.stack_rows, "INSERT INTO stacks(id, depth, truncated, node) VALUES", 4))
        goto fail;
    L.rowq = L.node_rows->q = L.stack_rows->q = rowq__start(L.db);
#if HAVE_SYMBOLS
    /* frames are resolved on a thread of their own as they are made (the
     * stream's thread only queues them); without a thread, at the end */
    if (!opts->no_symbols && (L.sym = symbols__new(opts->symbols)))
        symbols__start(L.sym);
#endif
    L.ins_frame = prep(&L, "INSERT INTO frames(id, address, module_id, module_offset) "
                           "VALUES (?,?,?,?)");
    L.ins_rss = prep(&L, "INSERT INTO rss(time, bytes) VALUES (?,?)");
    L.ins_mark = prep(&L, "INSERT INTO marks(time, tid, label) VALUES (?,?,?)");
    L.ins_tag = prep(&L, "INSERT OR REPLACE INTO tags(id, label) VALUES (?,?)");
    L.ins_region = prep(&L, "INSERT INTO regions(heap_id, region, kind, base, size, "
                            "start_time, end_time) VALUES (?,?,?,?,?,?,?)");
    L.ins_series = prep(&L, "INSERT INTO series(heap_id, bucket, allocations, frees, temporary, "
                            "bytes_allocated, bytes_freed, live_bytes, live_blocks, "
                            "max_live_bytes) VALUES (?,?,?,?,?,?,?,?,?,?)");
    if (L.failed || !heap_new(&L, VH_HEAP_SYSTEM, 0))
        goto fail;
    {
        struct evwriter_opts eo = { .block_events = opts->event_block,
                                    .checkpoint_events = opts->checkpoint_events };
        rc = evwriter__new(L.db, &eo, &L.evw, msg, sizeof msg);
        if (rc) {
            fail(&L, rc, "event stream: %s", msg);
            goto fail;
        }
    }
    /* The capture's ids are dense (the recorder counts them up): arrays
     * by id up to its largest, unless that is absurd (a damaged capture's
     * ids may be anything; then, and for ids beyond, the hashes). */
    L.seen_n = L.nagg_sys = capture__dense_stacks(L.cap);
    if (L.seen_n) {
        L.seen_bits = calloc((L.seen_n + 63) / 64, sizeof *L.seen_bits);
        L.agg_sys = malloc(L.nagg_sys * sizeof *L.agg_sys);
        if (!L.seen_bits || !L.agg_sys) {
            fail(&L, -ENOMEM, "out of memory");
            goto fail;
        }
        memset(L.agg_sys, 0xff, L.nagg_sys * sizeof *L.agg_sys);
    }
    stack_mark(&L, 0);
    stack_row(&L, 0, 0, 0, 0);         /* 0: no stack recorded */
    L.nstacks = 0;

    show = opts->progress < 0 ? isatty(2) : opts->progress;
    cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    /* A window of AHEAD events: each one's hash slot is prefetched when it
     * enters, and is in cache by the time it is processed. With a live set
     * far larger than the caches this more than halves the time per event.
     * The window stays within a batch (its first events go unhinted). */
    if (feeder_start(&F, L.cap)) {
        fail(&L, -ENOMEM, "out of memory");
        goto fail;
    }
    for (n = 0; n < AHEAD; n++) {
        hint[n] = UINT32_MAX;
        hint_slot[n] = SIZE_MAX;
    }
    L.feed = &F;
    L.coarse_groups = coarse__groups(F.coarse);
    for (uint64_t k = 0; !L.failed; k++) {
        struct batch *b = feeder_take(&F, k);
        struct vh_event *e = b->ev;
        size_t m = b->n;
        int last = b->last;

        L.cur_b = b;
        L.cur_k = k;
        if (F.oom)
            fail(&L, -ENOMEM, "out of memory");
        for (n = 0; n < m && n < AHEAD; n++)
            prefetch(&L, &e[n]);
        for (size_t j = 0; j < m && !L.failed; j++) {
            if (j + AHEAD / 2 < m)
                hint[(j + AHEAD / 2) % AHEAD] =
                    prefetch_agg(&L, &e[j + AHEAD / 2], &hint_slot[(j + AHEAD / 2) % AHEAD]);
            L.records++;
            L.hint_agg = hint[j % AHEAD];
            L.hint_slot = hint_slot[j % AHEAD];
            hint[j % AHEAD] = UINT32_MAX;
            hint_slot[j % AHEAD] = SIZE_MAX;
            L.cur_j = j;
            if (__builtin_expect(b->nskip != 0, 0) && b->skip[j])
                settled(&L, &e[j]);    /* processed ahead of its turn */
            else
                on_event(&L, &e[j]);
            /* a checkpoint goes between two records, when one may be due */
            if (L.emitted >= L.cp_at && !L.failed) {
                if (evwriter__checkpoint_due(L.evw))
                    write_checkpoint(&L);
                L.cp_at = L.emitted + evwriter__due_in(L.evw);
            }
            if (j + AHEAD < m)
                prefetch(&L, &e[j + AHEAD]);
            if (show && !(L.records & PROGRESS_EVERY))
                progress(&L, &last_pct, 0, b->done, b->total);
        }
        feeder_release(&F, k);
        if (last)
            break;
    }
    L.cur_b = NULL;
    feeder_stop(&F);                   /* capture__damage() is ours again */
    rows_unqueue(&L);
    if (show)
        progress(&L, &last_pct, 1, 0, 0);
    t1 = now_s();
    stats->stream_seconds = t1 - t0;
    stats->stream_cpu_seconds = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;

    /* the live set at the end, then the last block of events */
    if (!L.failed)
        write_checkpoint(&L);
    if (!L.failed && (rc = evwriter__finish(L.evw, &L.evst)))
        fail(&L, rc, "event stream: %s", evwriter__error(L.evw));
    damage_count = capture__damage(L.cap, &damage);
    nodes_free(&L);                    /* room for stack_totals' copy */
    order = agg_order(&L);
    if (order) {
        write_leaks(&L, order);
        write_stack_totals(&L, order);
    }
    write_windows(&L);
    if (!L.failed && (rc = reach__write(&L.reach, L.db)) != SQLITE_OK)
        fail(&L, -EIO, "reach: %s", sqlite3_errmsg(L.db));
    reach__free(&L.reach);
    free(order);
    regions_close(&L, NULL, 0, 0);     /* still there at the end */
    write_heaps(&L);
    write_threads_modules(&L);
    write_process(&L);
    write_meta(&L, &cs, damage, damage_count);
    rows_close(L.node_rows);           /* their last rows */
    rows_close(L.stack_rows);
    if (L.failed)
        goto fail;
    loader_free(&L);                   /* the live set is not needed now */
    if (exec(&L, "COMMIT"))
        goto fail;
    t2 = now_s();
    stats->write_seconds = t2 - t1;

    if (opts->no_symbols) {
        snprintf(stats->symbols, sizeof stats->symbols, "skipped");
    } else {
#if HAVE_SYMBOLS
        /* what the thread found, written now: a failure leaves the frames
         * unresolved, the load's rows committed and the reason in meta */
        if (!L.sym)
            snprintf(stats->symbols, sizeof stats->symbols, "symbols: out of memory");
        else if (symbols__finish(L.sym, msg, sizeof msg) < 0 ||
                 symbols__write_db(L.sym, L.db, msg, sizeof msg) < 0)
            snprintf(stats->symbols, sizeof stats->symbols, "%s", msg);
        symbols__free(L.sym);
        L.sym = NULL;
#else
        snprintf(stats->symbols, sizeof stats->symbols, "no symbolizer in this build");
#endif
    }
    t3 = now_s();
    stats->symbols_seconds = t3 - t2;
    rc = vh_schema_apply(L.db, VH_SCHEMA_INDEXES, msg, sizeof msg);
    if (rc) {
        fail(&L, rc, "%s", msg);
        goto fail;
    }
    stats->seconds = now_s() - t0;
    stats->index_seconds = stats->seconds - (t3 - t0);
    {
        sqlite3_stmt *st = prep(&L, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)");
        if (st) {
            meta_text(&L, st, "symbols", stats->symbols[0] ? stats->symbols : "resolved");
            sqlite3_bind_text(st, 1, "load_seconds", -1, SQLITE_STATIC);
            sqlite3_bind_double(st, 2, stats->seconds);
            run(&L, st);
        }
        sqlite3_finalize(st);
    }
    if (L.failed)
        goto fail;
    rc = db__publish(&dbn, err, errlen);
    if (rc)
        goto out;

    stats->records = L.records;
    stats->stacks = L.nstacks;
    stats->frames = L.nframes;
    stats->leaks = L.leaks;
    stats->reordered = L.reordered;
    stats->nesting_steps = L.nesting_steps;
    stats->damage_count = damage_count;
    if (damage_count)
        snprintf(stats->damage, sizeof stats->damage, "%s", damage ? damage : "damaged");
    goto out;
fail:
    rc = L.failed ? L.failed : -EIO;
    snprintf(err, errlen, "%s: %s", capture, L.errmsg[0] ? L.errmsg : "load failed");
out:
    feeder_stop(&F);
    rows_unqueue(&L);
    loader_free(&L);
#if HAVE_SYMBOLS
    symbols__free(L.sym);
#endif
    if (dbn.db || dbn.tmp[0])
        db__discard(&dbn);
    capture__close(L.cap);
    return rc;
}
