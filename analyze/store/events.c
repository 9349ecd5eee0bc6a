/* events.c — the normalized event stream stored in the DB (tables events and
 * checkpoints): the loader's writer, the block decoder behind evstream, and
 * the live set at any instant from the nearest checkpoint plus a replay.
 * The encoding is documented in docs/schema.md; every blob read is checked,
 * so a damaged DB gives an error message, never a crash. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "analyze/store/events.h"
#include "analyze/util/weight.h"

#define ENCODING 1                     /* checkpoints; event blocks read it  */
#define EV_ENCODING2 2                 /* event blocks by column: read       */
#define EV_ENCODING 3                  /* by column, with references: load
                                          writes it                         */
#define NCOL 8                         /* columns of encoding 2              */
#define NCOL3 11                       /* columns of encoding 3              */
#define LIFO_DEPTH 4                   /* freed addresses kept per (heap,
                                          thread, usable size)              */
#define SEL_FREED (2 + LIFO_DEPTH)     /* an ALLOC at the address of the
                                          FREE so many frees back           */
#define CONTIG_SLOTS 64                /* (thread, heap) contexts remembered
                                          for the "right after" guess       */
#ifndef ZLEVEL
#define ZLEVEL 1                       /* zstd level: fast; the varints are
                                          already compact                   */
#endif
#ifndef ZHASHLOG
#define ZHASHLOG 12                    /* level 1 with a 4K-entry match table:
                                          an eighth less time than its
                                          default for 1.6% more bytes on
                                          event columns                     */
#endif
#ifndef CP_LIVE_FACTOR
#define CP_LIVE_FACTOR 2               /* see evwriter__checkpoint_due()    */
#endif
#define EV_MAX_BYTES 104u              /* an encoded event is at most 98    */
#define EV_HEAD_BYTES 128u             /* encoding 2's column lengths: 70   */
#define CP_MAX_BYTES 64u               /* a checkpoint block at most 55     */
#define MAX_BLOCK_EVENTS (4u * VH_EVENT_BLOCK) /* bounds what a DB may claim:   */
#define MAX_PART_BLOCKS VH_CHECKPOINT_PART /* the writer never exceeds these  */

/* The most bytes an event puts in each column of encoding 3: what a reader
 * may accept. */
static const uint8_t ev_width[NCOL3] = { 1, 20, 10, 1, 3, 20, 20, 10, 5, 5, 3 };

/* ---- varints ---------------------------------------------------------------- */

static inline uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static uint8_t *put_long(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* LEB128; p has room (the buffers are sized for the worst case). Most
 * values take one or two bytes: those without a loop. */
static inline uint8_t *put(uint8_t *p, uint64_t v)
{
    if (__builtin_expect(v < 0x80, 1)) {
        *p = (uint8_t)v;
        return p + 1;
    }
    if (v < 0x4000) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)(v >> 7);
        return p + 2;
    }
    return put_long(p, v);
}

/* A read position; `bad` is set by a read past the end or a varint longer
 * than 10 bytes, and the value read is then 0. */
struct cur {
    const uint8_t *p, *end;
    int bad;
};

static inline uint64_t get(struct cur *c)
{
    uint64_t v = 0;

    if (__builtin_expect(c->p < c->end && *c->p < 0x80, 1))
        return *c->p++;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (c->p == c->end)
            break;
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    c->bad = 1;
    return 0;
}

/* A value that must fit 32 bits. */
static inline uint32_t get32(struct cur *c)
{
    uint64_t v = get(c);
    if (v > UINT32_MAX)
        c->bad = 1;
    return (uint32_t)v;
}

static inline int64_t clamp64(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* Decompresses one blob that must hold `count` items of at most `item_max`
 * bytes into *buf (grown as needed). 0, or -EIO / -ENOMEM with err set. */
static int unzip(ZSTD_DCtx *d, const void *z, size_t zlen, uint64_t count, size_t item_max,
                 size_t extra, uint8_t **buf, size_t *cap, size_t *len, char *err, size_t errlen)
{
    unsigned long long n;
    size_t got;

    if (!z || !zlen) {
        snprintf(err, errlen, "no data");
        return -EIO;
    }
    n = ZSTD_getFrameContentSize(z, zlen);
    if (n == ZSTD_CONTENTSIZE_ERROR) {
        snprintf(err, errlen, "not a zstd frame");
        return -EIO;
    }
    if (n == ZSTD_CONTENTSIZE_UNKNOWN || n > count * item_max + extra) {
        snprintf(err, errlen, "bad size in the zstd frame");
        return -EIO;
    }
    if (n + 1 > *cap) {
        size_t c = (size_t)n + 1;
        uint8_t *p = realloc(*buf, c);
        if (!p) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        *buf = p;
        *cap = c;
    }
    got = ZSTD_decompressDCtx(d, *buf, *cap, z, zlen);
    if (ZSTD_isError(got)) {
        snprintf(err, errlen, "zstd: %s", ZSTD_getErrorName(got));
        return -EIO;
    }
    if (got != n) {
        snprintf(err, errlen, "zstd frame shorter than it says");
        return -EIO;
    }
    *len = got;
    return 0;
}

/* Encoding 3 of event blocks stores each column as a zstd frame of its own: the byte lengths of all frames but the
 * last as varints, then the frames (an empty column: no bytes). Separate
 * frames compress a fifth better than one over the columns back to back
 * (each gets its own entropy tables), and faster. */

/* Compresses ncol columns into z (cap bytes). Returns the bytes written,
 * or a zstd error code (ZSTD_isError). */
static size_t zcols(ZSTD_CCtx *c, uint8_t *z, size_t cap, uint8_t *const col[],
                    const size_t len[], int ncol)
{
    enum { HEAD = 5 * NCOL3 };         /* varints of lengths below 2^35 */
    size_t zl[NCOL3], at = HEAD;
    uint8_t *p = z;

    for (int k = 0; k < ncol; k++) {
        zl[k] = 0;
        if (!len[k])
            continue;
        zl[k] = ZSTD_compress2(c, z + at, cap - at, col[k], len[k]);
        if (ZSTD_isError(zl[k]))
            return zl[k];
        at += zl[k];
    }
    for (int k = 0; k < ncol - 1; k++)
        p = put(p, zl[k]);
    memmove(p, z + HEAD, at - HEAD);
    return (size_t)(p - z) + at - HEAD;
}

/* The inverse: decompresses the columns of blob z into *buf (grown as
 * needed) and points c[0..ncol) at them. Column k may hold at most
 * count * width[k] bytes. 0, or -EIO / -ENOMEM with err set. */
static int unzcols(ZSTD_DCtx *d, const uint8_t *z, size_t zlen, uint64_t count,
                   const uint8_t width[], int ncol, uint8_t **buf, size_t *cap, struct cur c[],
                   char *err, size_t errlen)
{
    struct cur h = { .p = z, .end = z + (z ? zlen : 0) };
    uint64_t zl[NCOL3], n[NCOL3], total = 0;
    const uint8_t *f;
    size_t at = 0;

    for (int k = 0; k < ncol - 1; k++)
        zl[k] = get(&h);
    if (h.bad) {
        snprintf(err, errlen, "bad column lengths");
        return -EIO;
    }
    f = h.p;
    for (int k = 0; k < ncol; k++) {
        uint64_t room = (uint64_t)(h.end - f);
        if (k == ncol - 1)
            zl[k] = room;
        if (zl[k] > room) {
            snprintf(err, errlen, "column %d: past the end", k);
            return -EIO;
        }
        n[k] = 0;
        if (zl[k]) {
            unsigned long long cs = ZSTD_getFrameContentSize(f, (size_t)zl[k]);
            if (cs == ZSTD_CONTENTSIZE_ERROR || cs == ZSTD_CONTENTSIZE_UNKNOWN ||
                cs > count * width[k]) {
                snprintf(err, errlen, "column %d: %s", k,
                         cs == ZSTD_CONTENTSIZE_ERROR ? "not a zstd frame"
                                                      : "bad size in the zstd frame");
                return -EIO;
            }
            n[k] = cs;
        }
        total += n[k];
        f += zl[k];
    }
    if (total + 1 > *cap) {
        uint8_t *p = realloc(*buf, (size_t)total + 1);
        if (!p) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        *buf = p;
        *cap = (size_t)total + 1;
    }
    f = h.p;
    for (int k = 0; k < ncol; k++) {
        if (zl[k]) {
            size_t got = ZSTD_decompressDCtx(d, *buf + at, (size_t)n[k], f, (size_t)zl[k]);
            if (ZSTD_isError(got) || got != n[k]) {
                snprintf(err, errlen, "column %d: %s", k,
                         ZSTD_isError(got) ? ZSTD_getErrorName(got)
                                           : "zstd frame shorter than it says");
                return -EIO;
            }
        }
        c[k] = (struct cur){ .p = *buf + at, .end = *buf + at + n[k] };
        at += (size_t)n[k];
        f += zl[k];
    }
    return 0;
}

/* ---- encoding 3's model of the block, shared by writer and reader ---------
 *
 * Both sides replay the same state while going through a block, so that an
 * event can name a value by where it was seen instead of spelling it:
 *  - a FREE of a block whose allocation (ALLOC, RESIZE, or the MOVE that
 *    brought it there) is earlier in the same block names that event by its
 *    distance back and carries no address, size, usable, stack or tag;
 *  - an ALLOC at an address freed earlier in the block by the same thread
 *    with the same usable size (how malloc's per-thread caches reuse memory)
 *    names it by its rank among those, latest first (up to LIFO_DEPTH);
 *  - an ALLOC right after the previous allocation of its thread and heap
 *    (addr = that one's addr + usable + 8: glibc carving its top chunk)
 *    says so;
 *  - any other ALLOC at an address freed earlier in the block (in its
 *    heap) says how many frees back that was (other threads, other sizes:
 *    malloc's bins).
 * Tables are sized to the block and reset per block by a generation
 * counter, so a block decodes alone, from its row only. */

struct lifo {                          /* addresses freed, per key           */
    uint64_t usable;
    uint32_t heap, tid, gen;
    uint32_t n;
    uint64_t a[LIFO_DEPTH];            /* a[n - 1]: the latest               */
};

struct contig {
    uint32_t tid, heap;
    uint64_t next;                     /* 0: none                            */
};

struct model {
    struct lifo *lifo;
    size_t mask;                       /* lifo has mask + 1 slots            */
    uint32_t gen;
    struct contig contig[CONTIG_SLOTS];
};

/* Room for a block of n events (an event claims at most one list: at most
 * n keys, half the table). */
static int model_reserve(struct model *m, uint32_t n)
{
    size_t want = 64;

    while (want < (size_t)n * 2)
        want *= 2;
    if (m->lifo && m->mask + 1 >= want)
        return 0;
    free(m->lifo);
    m->lifo = calloc(want, sizeof *m->lifo);
    m->mask = want - 1;
    m->gen = 0;
    return m->lifo ? 0 : -ENOMEM;
}

static void model_reset(struct model *m)
{
    if (++m->gen == 0) {               /* wrapped: clear for real            */
        memset(m->lifo, 0, (m->mask + 1) * sizeof *m->lifo);
        m->gen = 1;
    }
    memset(m->contig, 0, sizeof m->contig);
}

static void model_free(struct model *m)
{
    free(m->lifo);
    m->lifo = NULL;
}

static inline uint64_t mix(uint64_t x)
{
    x *= 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 29);
}

/* The list of (heap, tid, usable), claimed if new. */
static struct lifo *lifo_get(struct model *m, uint32_t heap, uint32_t tid, uint64_t usable)
{
    size_t i = (size_t)mix(usable * 0xff51afd7ed558ccdull ^ ((uint64_t)heap << 32 | tid)) &
               m->mask;

    for (;; i = (i + 1) & m->mask) {
        struct lifo *l = &m->lifo[i];
        if (l->gen != m->gen) {
            *l = (struct lifo){ .usable = usable, .heap = heap, .tid = tid, .gen = m->gen };
            return l;
        }
        if (l->usable == usable && l->heap == heap && l->tid == tid)
            return l;
    }
}

static void lifo_push(struct lifo *l, uint64_t addr)
{
    if (l->n == LIFO_DEPTH) {
        memmove(l->a, l->a + 1, (LIFO_DEPTH - 1) * sizeof *l->a);
        l->n--;
    }
    l->a[l->n++] = addr;
}

/* Removes the entry of rank r (0: the latest) and returns it. */
static uint64_t lifo_take(struct lifo *l, uint32_t r)
{
    uint32_t i = l->n - 1 - r;
    uint64_t a = l->a[i];

    memmove(l->a + i, l->a + i + 1, (l->n - 1 - i) * sizeof *l->a);
    l->n--;
    return a;
}

static inline struct contig *contig_of(struct model *m, uint32_t tid, uint32_t heap)
{
    return &m->contig[mix((uint64_t)heap << 32 | tid) % CONTIG_SLOTS];
}

/* Where the writer last saw each (heap, address) set by an event of the
 * block being encoded: the event a FREE may refer back to. */
struct bref {
    uint64_t addr;
    uint32_t heap, idx, gen;
    uint32_t fidx;                     /* 1 + the number of the latest FREE
                                          there among the block's FREEs; 0:
                                          none                              */
};

struct encoder {
    struct model m;
    struct bref *ref;
    size_t refmask;
    uint32_t refgen;
    uint8_t *col;                      /* column scratch: a block's or a
                                          checkpoint part's worst case      */
    size_t colcap;
};

static int encoder_init(struct encoder *x, uint32_t n)
{
    size_t want = 64;

    /* an event claims at most two slots (a MOVE: from and to): at most
     * half full, so that probes stay short */
    while (want < (size_t)n * 4)
        want *= 2;
    x->ref = calloc(want, sizeof *x->ref);
    x->refmask = want - 1;
    x->colcap = (size_t)n * EV_MAX_BYTES;
    if (x->colcap < (size_t)VH_CHECKPOINT_PART * CP_MAX_BYTES)
        x->colcap = (size_t)VH_CHECKPOINT_PART * CP_MAX_BYTES;
    x->col = malloc(x->colcap);
    if (!x->ref || !x->col || model_reserve(&x->m, n))
        return -ENOMEM;
    return 0;
}

static void encoder_free(struct encoder *x)
{
    model_free(&x->m);
    free(x->ref);
    free(x->col);
}

static struct bref *bref_slot(struct encoder *x, uint32_t heap, uint64_t addr)
{
    /* direct-mapped by the address itself: a block's events cluster in a
     * few regions, so neighbours share cache lines; a collision replaces
     * the older entry (the writer then spells that free out) */
    struct bref *r = &x->ref[((addr >> 4) + (uint64_t)heap * 0x9e3779b1u) & x->refmask];

    if (r->gen != x->refgen || r->addr != addr || r->heap != heap)
        *r = (struct bref){ .addr = addr, .heap = heap, .idx = UINT32_MAX, .gen = x->refgen };
    return r;
}

/* Does event j leave, at addr, the block a FREE e names? */
static int same_block(const struct vh_ev *j, const struct vh_ev *e)
{
    uint64_t at = j->kind == VH_EV_MOVE ? j->to : j->addr;
    return (j->kind == VH_EV_ALLOC || j->kind == VH_EV_RESIZE || j->kind == VH_EV_MOVE) &&
           at == e->addr && j->size == e->size && j->usable == e->usable &&
           j->stack_id == e->stack_id && j->tag_id == e->tag_id;
}

/* ---- the writer ------------------------------------------------------------- */

/* One blob on its way to a row. The loader's thread collects the events of
 * one job (or a checkpoint part's blocks, as it walks its live set) while a
 * worker thread encodes and compresses the previous one, so neither costs
 * the loader time on a machine with a second core; rows are inserted by
 * the loader's thread only (SQLite stays on one thread), in order. */
struct job {
    struct vh_ev *ev;                  /* an event block's events, or       */
    uint32_t nev;
    struct vh_block *blk;              /* a checkpoint part's blocks        */
    uint32_t nblk;
    uint64_t cp_time;                  /* the checkpoint's time             */
    uint8_t *z;                        /* the blob                          */
    size_t zlen;
    int is_cp;
    int64_t v[5];                      /* the row: see insert()             */
};

struct evwriter {
    sqlite3 *db;
    sqlite3_stmt *ins_ev, *ins_cp;
    ZSTD_CCtx *cctx;
    uint32_t block_events;
    uint32_t part_max;                 /* blocks in a checkpoint part: at
                                          most VH_CHECKPOINT_PART, and no
                                          more than an event block's events
                                          (small in tests)                  */
    uint64_t cp_events;
    size_t zcap;
    struct encoder enc;                /* encode_events()' state (used by
                                          whichever thread compresses)      */

    struct job jobs[2];
    struct job *cur;                   /* being filled                      */
    struct job *busy;                  /* with the worker, or NULL          */
    int threaded, quit, work, done;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;

    /* the block being filled (in cur) */
    uint32_t n;
    uint64_t first_seq, first_time, prev_time;

    uint64_t seq, last_time, live;
    int64_t block;
    uint64_t cp_seq, cp_live;          /* the latest checkpoint: where, and
                                          the live blocks then              */
    int have_cp;

    /* the checkpoint being written (in cur) */
    int cp_open, cp_skip, cp_rows;
    uint64_t cp_time, cp_prev_addr;
    uint32_t cp_heap, cp_part, cp_n;
    int cp_has_heap;

    struct evwriter_stats st;
    int failed;
    char err[256];
};

__attribute__((format(printf, 3, 4)))
static int wfail(struct evwriter *w, int rc, const char *fmt, ...)
{
    va_list ap;
    if (w->failed)
        return w->failed;
    w->failed = rc;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof w->err, fmt, ap);
    va_end(ap);
    return rc;
}

/* An event block (times already made monotonic), encoding 3
 * (docs/schema.md): ten columns, each the fields of that kind of every
 * event in order — kind bytes; [tid, heap]; time deltas; ALLOC's address
 * guesses; FREE's references back; address deltas [and to - addr]; sizes
 * [and old sizes]; usable - size; stacks; tags; ALLOC's frees back — each
 * compressed on its
 * own (zcols). Alike values side by side compress better and faster; what
 * the model above predicts is not stored at all. The columns are written
 * into the encoder's scratch; start and len say where. */
static void encode_events(struct encoder *x, const struct vh_ev *ev, uint32_t n,
                          uint8_t *start[NCOL3], size_t len[NCOL3])
{
    uint8_t *c[NCOL3], *col = x->col;
    unsigned at = 0;
    uint64_t prev_time = n ? ev[0].time : 0, prev_addr = 0;
    uint32_t prev_tid = 0, prev_heap = 0, nfree = 0;

    _Static_assert(MAX_BLOCK_EVENTS < (1u << 21), "a reference back takes 3 bytes");
    model_reset(&x->m);
    if (++x->refgen == 0) {
        memset(x->ref, 0, (x->refmask + 1) * sizeof *x->ref);
        x->refgen = 1;
    }
    for (int k = 0; k < NCOL3; k++) {
        start[k] = c[k] = col + (size_t)n * at;
        at += ev_width[k];
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct vh_ev *e = &ev[i];
        int ctx = e->tid != prev_tid || e->heap_id != prev_heap;
        *c[0]++ = (uint8_t)(e->kind | e->flags << 3 | (ctx ? 0x80 : 0));
        if (ctx) {
            c[1] = put(c[1], e->tid);
            c[1] = put(c[1], e->heap_id);
            prev_tid = e->tid;
            prev_heap = e->heap_id;
        }
        c[2] = put(c[2], e->time - prev_time);
        prev_time = e->time;
        if (e->kind == VH_EV_ALLOC) {
            struct lifo *l = lifo_get(&x->m, e->heap_id, e->tid, e->usable);
            struct contig *g = contig_of(&x->m, e->tid, e->heap_id);
            uint32_t sel = 0;
            for (uint32_t r = 0; r < l->n; r++)
                if (l->a[l->n - 1 - r] == e->addr) {
                    lifo_take(l, r);
                    sel = 2 + r;
                    break;
                }
            struct bref *r = bref_slot(x, e->heap_id, e->addr);
            if (!sel && g->next && g->tid == e->tid && g->heap == e->heap_id &&
                g->next == e->addr)
                sel = 1;
            if (!sel && r->fidx) {
                sel = SEL_FREED;
                c[10] = put(c[10], nfree - r->fidx);
            }
            *c[3]++ = (uint8_t)sel;
            if (!sel)
                c[5] = put(c[5], zigzag((int64_t)(e->addr - prev_addr)));
            *g = (struct contig){ .tid = e->tid, .heap = e->heap_id,
                                  .next = e->addr + e->usable + 8 };
            r->idx = i;
            prev_addr = e->addr;
            c[6] = put(c[6], e->size);
            c[7] = put(c[7], zigzag((int64_t)(e->usable - e->size)));
            c[8] = put(c[8], e->stack_id);
            c[9] = put(c[9], e->tag_id);
            continue;
        }
        if (e->kind == VH_EV_FREE) {
            struct bref *r = bref_slot(x, e->heap_id, e->addr);
            uint32_t back = 0;
            if (r->idx < i && same_block(&ev[r->idx], e))
                back = i - r->idx;
            r->idx = UINT32_MAX;
            r->fidx = ++nfree;
            c[4] = put(c[4], back);
            lifo_push(lifo_get(&x->m, e->heap_id, e->tid, e->usable), e->addr);
            if (back) {
                prev_addr = e->addr;
                continue;
            }
        }
        /* the rest is spelled out */
        {
            if (e->kind != VH_EV_FAILED) {
                c[5] = put(c[5], zigzag((int64_t)(e->addr - prev_addr)));
                prev_addr = e->addr;
            }
            if (e->kind == VH_EV_MOVE) {
                c[5] = put(c[5], zigzag((int64_t)(e->to - e->addr)));
                bref_slot(x, e->heap_id, e->addr)->idx = UINT32_MAX;
                bref_slot(x, e->heap_id, e->to)->idx = i;
            }
            if (e->kind == VH_EV_RESIZE)
                bref_slot(x, e->heap_id, e->addr)->idx = i;
            c[6] = put(c[6], e->size);
            if (e->kind == VH_EV_RESIZE)
                c[6] = put(c[6], e->old_size);
            if (e->kind != VH_EV_FAILED)
                c[7] = put(c[7], zigzag((int64_t)(e->usable - e->size)));
            c[8] = put(c[8], e->stack_id);
            c[9] = put(c[9], e->tag_id);
        }
    }
    for (int k = 0; k < NCOL3; k++)
        len[k] = (size_t)(c[k] - start[k]);
}

/* A checkpoint part, encoding 1 (docs/schema.md): per block, in ascending
 * address order, address - previous address (the first: the address),
 * size, zigzag(usable - size), zigzag(time - allocation time), stack, tag,
 * tid. (By row: blocks alike in every field compress better than their
 * columns would.) Returns the bytes written into the encoder's scratch. */
static size_t encode_part(struct encoder *x, const struct vh_block *b, uint32_t n, uint64_t time)
{
    uint8_t *p = x->col;
    uint64_t prev = 0;

    for (uint32_t i = 0; i < n; i++) {
        p = put(p, b[i].addr - prev);
        prev = b[i].addr;
        p = put(p, b[i].size);
        p = put(p, zigzag((int64_t)(b[i].usable - b[i].size)));
        p = put(p, zigzag((int64_t)(time - b[i].time)));
        p = put(p, b[i].stack_id);
        p = put(p, b[i].tag_id);
        p = put(p, b[i].tid);
    }
    return (size_t)(p - x->col);
}

static void zjob(ZSTD_CCtx *c, struct job *j, size_t zcap, struct encoder *x)
{
    uint8_t *start[NCOL3];
    size_t len[NCOL3];

    if (j->is_cp) {
        size_t n = encode_part(x, j->blk, j->nblk, j->cp_time);
        j->zlen = ZSTD_compress2(c, j->z, zcap, x->col, n);
    } else {
        encode_events(x, j->ev, j->nev, start, len);
        j->zlen = zcols(c, j->z, zcap, start, len, NCOL3);
    }
}

static void *worker(void *arg)
{
    struct evwriter *w = arg;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->work && !w->quit)
            pthread_cond_wait(&w->cv, &w->mu);
        if (!w->work)
            break;
        w->work = 0;
        pthread_mutex_unlock(&w->mu);
        zjob(w->cctx, w->busy, w->zcap, &w->enc);
        pthread_mutex_lock(&w->mu);
        w->done = 1;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int evwriter__new(sqlite3 *db, const struct evwriter_opts *opts, struct evwriter **out,
                  char *err, size_t errlen)
{
    struct evwriter *w = calloc(1, sizeof *w);
    int rc = -ENOMEM;

    *out = NULL;
    if (!w)
        goto oom;
    w->db = db;
    w->block_events = opts && opts->block_events ? opts->block_events : VH_EVENT_BLOCK;
    if (w->block_events > MAX_BLOCK_EVENTS)
        w->block_events = MAX_BLOCK_EVENTS;
    w->cp_events = opts && opts->checkpoint_events ? opts->checkpoint_events
                                                   : VH_CHECKPOINT_EVENTS;
    w->part_max = w->block_events < VH_CHECKPOINT_PART ? w->block_events : VH_CHECKPOINT_PART;
    if (encoder_init(&w->enc, w->block_events))
        goto oom;
    /* the larger of a block's and a part's columns, and each frame's
     * own bound */
    w->zcap = ZSTD_compressBound(w->enc.colcap) + 128 * (NCOL3 + 1);
    for (int i = 0; i < 2; i++) {
        w->jobs[i].ev = malloc((size_t)w->block_events * sizeof *w->jobs[i].ev);
        w->jobs[i].blk = malloc((size_t)VH_CHECKPOINT_PART * sizeof *w->jobs[i].blk);
        w->jobs[i].z = malloc(w->zcap);
        if (!w->jobs[i].ev || !w->jobs[i].blk || !w->jobs[i].z)
            goto oom;
    }
    w->cur = &w->jobs[0];
    w->cctx = ZSTD_createCCtx();
    if (!w->cctx)
        goto oom;
    if (ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, ZLEVEL)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_hashLog, ZHASHLOG))) {
        snprintf(err, errlen, "zstd: cannot set the compression parameters");
        rc = -EINVAL;
        goto fail;
    }
    if (sqlite3_prepare_v2(db, "INSERT INTO events(block, first_seq, first_time, last_time, "
                               "count, encoding, data) VALUES (?,?,?,?,?,?,?)", -1,
                           &w->ins_ev, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO checkpoints(seq, heap_id, part, time, count, "
                               "encoding, data) VALUES (?,?,?,?,?,?,?)", -1, &w->ins_cp,
                           NULL) != SQLITE_OK) {
        snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(db));
        rc = -EIO;
        goto fail;
    }
    /* without a thread (none to be had) the loader's thread compresses */
    if (!pthread_mutex_init(&w->mu, NULL)) {
        if (!pthread_cond_init(&w->cv, NULL)) {
            if (!pthread_create(&w->thread, NULL, worker, w))
                w->threaded = 1;
            else
                pthread_cond_destroy(&w->cv);
        }
        if (!w->threaded)
            pthread_mutex_destroy(&w->mu);
    }
    *out = w;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    evwriter__free(w);
    return rc;
}

/* The row of a compressed job. */
static int insert(struct evwriter *w, struct job *j)
{
    sqlite3_stmt *st = j->is_cp ? w->ins_cp : w->ins_ev;
    int rc;

    if (ZSTD_isError(j->zlen))
        return wfail(w, -EIO, "zstd: %s", ZSTD_getErrorName(j->zlen));
    for (int i = 0; i < 5; i++)
        sqlite3_bind_int64(st, i + 1, j->v[i]);
    sqlite3_bind_int64(st, 6, j->is_cp ? ENCODING : EV_ENCODING);
    sqlite3_bind_blob(st, 7, j->z, (int)j->zlen, SQLITE_STATIC);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return wfail(w, -EIO, "sqlite: %s", sqlite3_errmsg(w->db));
    if (j->is_cp) {
        w->st.checkpoint_rows++;
        w->st.checkpoint_bytes += j->zlen;
    } else {
        w->st.blocks++;
        w->st.event_bytes += j->zlen;
    }
    return 0;
}

/* Waits for the job with the worker, and writes its row. */
static int drain(struct evwriter *w)
{
    struct job *j = w->busy;

    if (!j)
        return w->failed;
    pthread_mutex_lock(&w->mu);
    while (!w->done)
        pthread_cond_wait(&w->cv, &w->mu);
    w->done = 0;
    w->busy = NULL;
    pthread_mutex_unlock(&w->mu);
    return w->failed ? w->failed : insert(w, j);
}

/* The job in cur is complete (row values set): compress it (in the worker
 * when there is one) and go on filling the other buffer. */
static int submit(struct evwriter *w)
{
    struct job *j = w->cur;

    if (w->failed)
        return w->failed;
    if (!w->threaded) {
        zjob(w->cctx, j, w->zcap, &w->enc);
        return insert(w, j);
    }
    if (drain(w))
        return w->failed;
    pthread_mutex_lock(&w->mu);
    w->busy = j;
    w->work = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    w->cur = j == &w->jobs[0] ? &w->jobs[1] : &w->jobs[0];
    return 0;
}

static int flush_block(struct evwriter *w)
{
    struct job *j = w->cur;

    if (w->failed || !w->n)
        return w->failed;
    j->is_cp = 0;
    j->nev = w->n;
    j->v[0] = w->block;
    j->v[1] = clamp64(w->first_seq);
    j->v[2] = clamp64(w->first_time);
    j->v[3] = clamp64(w->prev_time);
    j->v[4] = w->n;
    w->block++;
    w->n = 0;
    return submit(w);
}

int evwriter__add(struct evwriter *w, const struct vh_ev *ev)
{
    uint64_t time = ev->time > w->last_time ? ev->time : w->last_time;
    struct vh_ev *e;

    if (__builtin_expect(w->failed | w->cp_open, 0)) {
        if (w->failed)
            return w->failed;
        return wfail(w, -EINVAL, "event added during a checkpoint");
    }
    if (__builtin_expect((unsigned)(ev->kind - VH_EV_ALLOC) > VH_EV_FAILED - VH_EV_ALLOC ||
                         ev->flags > 0xf, 0))
        return wfail(w, -EINVAL, "event of unknown kind %u (flags 0x%x)", ev->kind, ev->flags);
    if (!w->n) {
        w->first_seq = w->seq;
        w->first_time = time;
    }
    e = &w->cur->ev[w->n];             /* encoded with its block (zjob) */
    *e = *ev;
    e->time = time;
    w->prev_time = w->last_time = time;
    w->n++;
    w->seq++;
    w->st.events++;
    if (ev->kind == VH_EV_ALLOC)
        w->live++;
    else if (ev->kind == VH_EV_FREE && w->live)
        w->live--;
    if (w->n == w->block_events)
        return flush_block(w);
    return 0;
}

/* Due after max(interval, 2 x min(live now, live at the previous
 * checkpoint)) events: a checkpoint costs its live blocks, so the loader
 * spends at most about one block copy per event on them; a replay from one
 * is at most twice its size (growing from nothing, checkpoints come at N,
 * 3N, 9N...: a replay never exceeds twice the live set it starts from). */
int evwriter__checkpoint_due(const struct evwriter *w)
{
    uint64_t since = w->seq - (w->have_cp ? w->cp_seq : 0);
    uint64_t live = w->live < w->cp_live ? w->live : w->cp_live;
    uint64_t need = live * CP_LIVE_FACTOR > w->cp_events ? live * CP_LIVE_FACTOR : w->cp_events;
    return !w->failed && since >= need;
}

/* Each event adds one to `since` and takes at most two from `need` (the
 * live count moves by one), so a checkpoint cannot be due before a third
 * of the distance between them has gone by. */
uint64_t evwriter__due_in(const struct evwriter *w)
{
    uint64_t since = w->seq - (w->have_cp ? w->cp_seq : 0);
    uint64_t live = w->live < w->cp_live ? w->live : w->cp_live;
    uint64_t need = live * CP_LIVE_FACTOR > w->cp_events ? live * CP_LIVE_FACTOR : w->cp_events;
    return need > since ? (need - since) / (CP_LIVE_FACTOR + 1) : 0;
}

int evwriter__checkpoint_begin(struct evwriter *w)
{
    if (w->failed)
        return w->failed;
    if (w->cp_open)
        return wfail(w, -EINVAL, "checkpoint begun twice");
    /* a checkpoint starts a block, so that a replay from it starts at the
     * beginning of one */
    if (flush_block(w))
        return w->failed;
    w->cp_open = 1;
    w->cp_skip = w->have_cp && w->cp_seq == w->seq;
    w->cp_rows = 0;
    w->cp_time = w->seq ? w->last_time : 0;
    w->cp_has_heap = 0;
    w->cp_n = 0;
    return 0;
}

static int flush_part(struct evwriter *w)
{
    struct job *j = w->cur;

    if (w->failed)
        return w->failed;
    j->is_cp = 1;
    j->nblk = w->cp_n;
    j->cp_time = w->cp_time;
    j->v[0] = clamp64(w->seq);
    j->v[1] = w->cp_heap;
    j->v[2] = w->cp_part;
    j->v[3] = clamp64(w->cp_time);
    j->v[4] = w->cp_n;
    w->cp_rows++;
    w->cp_part++;
    w->cp_n = 0;
    w->cp_prev_addr = 0;
    return submit(w);
}

int evwriter__checkpoint_add(struct evwriter *w, const struct vh_block *blocks, size_t n)
{
    if (w->failed)
        return w->failed;
    if (!w->cp_open)
        return wfail(w, -EINVAL, "checkpoint block outside a checkpoint");
    if (w->cp_skip)
        return 0;
    for (size_t i = 0; i < n; i++) {
        const struct vh_block *b = &blocks[i];

        if (!w->cp_has_heap || b->heap_id != w->cp_heap) {
            if (w->cp_has_heap && b->heap_id < w->cp_heap)
                return wfail(w, -EINVAL, "checkpoint heaps out of order");
            if (w->cp_n && flush_part(w))
                return w->failed;
            w->cp_heap = b->heap_id;
            w->cp_has_heap = 1;
            w->cp_part = 0;
            w->cp_prev_addr = 0;
        } else if (w->cp_n == w->part_max && flush_part(w)) {
            return w->failed;
        }
        if (b->addr <= w->cp_prev_addr)
            return wfail(w, -EINVAL, "checkpoint blocks out of order (heap %u, 0x%" PRIx64 ")",
                         b->heap_id, b->addr);
        /* encoded with its part (zjob) */
        w->cur->blk[w->cp_n] = *b;
        w->cp_prev_addr = b->addr;
        w->cp_n++;
    }
    return 0;
}

int evwriter__checkpoint_end(struct evwriter *w)
{
    if (w->failed)
        return w->failed;
    if (!w->cp_open)
        return wfail(w, -EINVAL, "checkpoint ended before it began");
    w->cp_open = 0;
    if (w->cp_skip)
        return 0;
    if (w->cp_n && flush_part(w))
        return w->failed;
    if (!w->cp_rows) {
        /* nothing live: one empty row, so the checkpoint is found */
        w->cp_heap = 0;
        w->cp_part = 0;
        if (flush_part(w))
            return w->failed;
    }
    w->have_cp = 1;
    w->cp_seq = w->seq;
    w->cp_live = w->live;
    w->st.checkpoints++;
    return 0;
}

int evwriter__finish(struct evwriter *w, struct evwriter_stats *stats)
{
    if (!w->failed && w->cp_open)
        wfail(w, -EINVAL, "checkpoint left open");
    flush_block(w);
    drain(w);
    if (stats)
        *stats = w->st;
    return w->failed;
}

const char *evwriter__error(const struct evwriter *w)
{
    return w->err[0] ? w->err : "no error";
}

void evwriter__free(struct evwriter *w)
{
    if (!w)
        return;
    if (w->threaded) {
        pthread_mutex_lock(&w->mu);
        while (w->busy && !w->done)    /* let a job in progress end */
            pthread_cond_wait(&w->cv, &w->mu);
        w->quit = 1;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
    }
    sqlite3_finalize(w->ins_ev);
    sqlite3_finalize(w->ins_cp);
    ZSTD_freeCCtx(w->cctx);
    encoder_free(&w->enc);
    for (int i = 0; i < 2; i++) {
        free(w->jobs[i].ev);
        free(w->jobs[i].blk);
        free(w->jobs[i].z);
    }
    free(w);
}

/* ---- reading the stream ------------------------------------------------------ */

/* Encoding 3's reader: the block an event of the block left (ALLOC, RESIZE:
 * at addr; MOVE: at to), for a FREE that refers back to it. */
struct setter {
    uint64_t addr, size, usable;
    uint32_t stack_id, tag_id;
    int valid;
};

struct evstream {
    sqlite3 *db;
    sqlite3_stmt *st;                  /* blocks from the first one needed   */
    ZSTD_DCtx *dctx;
    uint8_t *raw;
    size_t rawcap, rawlen;
    struct cur c[NCOL3];               /* encodings 2, 3: one per column     */
    struct cur *f[NCOL];               /* where each field is read: the
                                          columns, or all c[0] (encoding 1) */
    struct model m;                    /* encoding 3: what the block said    */
    struct setter *set;                /* the block each event left, by its
                                          index in the block                 */
    uint64_t *freed;                   /* the addresses of its FREEs         */
    uint32_t nfree;
    size_t setcap;
    int enc;
    int64_t block;
    uint64_t left;                     /* events still to decode in it       */
    uint64_t count;                    /* events in it                       */
    uint64_t seq, next_seq, time, addr;
    uint32_t tid, heap;
    int started;
    uint64_t from_time, from_seq;      /* events before these are skipped    */
    int failed;
    char err[256];
};

__attribute__((format(printf, 3, 4)))
static int sfail(struct evstream *s, int rc, const char *fmt, ...)
{
    va_list ap;
    if (s->failed)
        return s->failed;
    s->failed = rc;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    return rc;
}

/* One integer from a query with one integer parameter; 1 with *v set, 0 for
 * no row (or NULL), < 0 on error (err set). */
static int query1(sqlite3 *db, const char *sql, int64_t arg, int64_t *v, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc;

    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(db));
        if (strstr(err, "no such table"))
            snprintf(err, errlen, "the database has no event stream (load the capture again)");
        return -EINVAL;
    }
    sqlite3_bind_int64(st, 1, arg);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *v = sqlite3_column_int64(st, 0);
        rc = 1;
    } else if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
        rc = 0;
    } else {
        snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(db));
        rc = -EIO;
    }
    sqlite3_finalize(st);
    return rc;
}

/* A stream from block `block` on, skipping events before from_seq and
 * before from_time. */
static int es_open(sqlite3 *db, int64_t block, uint64_t from_time, uint64_t from_seq,
                   struct evstream **out, char *err, size_t errlen)
{
    struct evstream *s = calloc(1, sizeof *s);

    *out = NULL;
    if (!s || !(s->dctx = ZSTD_createDCtx())) {
        free(s);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    s->db = db;
    s->from_time = from_time;
    s->from_seq = from_seq;
    if (sqlite3_prepare_v2(db, "SELECT block, first_seq, first_time, count, encoding, data "
                               "FROM events WHERE block >= ?1 ORDER BY block", -1, &s->st,
                           NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(db));
        if (strstr(err, "no such table"))
            snprintf(err, errlen, "the database has no event stream (load the capture again)");
        evstream__close(s);
        return -EINVAL;
    }
    sqlite3_bind_int64(s->st, 1, block);
    *out = s;
    return 0;
}

int evstream__open(sqlite3 *db, uint64_t from_time, struct evstream **out, char *err,
                   size_t errlen)
{
    int64_t block = 0;
    int rc = 0;

    /* the last block that starts before from_time holds its first event,
     * or ends just before it (times never go back in the stream) */
    if (from_time)
        rc = query1(db, "SELECT block FROM events WHERE first_time < ?1 "
                        "ORDER BY first_time DESC, block DESC LIMIT 1",
                    clamp64(from_time), &block, err, errlen);
    if (rc < 0)
        return rc;
    return es_open(db, block, from_time, 0, out, err, errlen);
}

/* The next block into s->raw: 1, 0 at the end, < 0 on error. */
static int load_block(struct evstream *s)
{
    int rc = sqlite3_step(s->st);
    int64_t first_seq, count;
    const void *z;
    char why[160];

    if (rc == SQLITE_DONE)
        return 0;
    if (rc != SQLITE_ROW)
        return sfail(s, -EIO, "sqlite: %s", sqlite3_errmsg(s->db));
    s->block = sqlite3_column_int64(s->st, 0);
    first_seq = sqlite3_column_int64(s->st, 1);
    count = sqlite3_column_int64(s->st, 3);
    if (count <= 0 || count > MAX_BLOCK_EVENTS || first_seq < 0)
        return sfail(s, -EIO, "events block %" PRId64 ": corrupt (count %" PRId64 ")", s->block,
                     count);
    s->enc = (int)sqlite3_column_int64(s->st, 4);
    if (s->enc != ENCODING && s->enc != EV_ENCODING2 && s->enc != EV_ENCODING)
        return sfail(s, -EIO, "events block %" PRId64 ": unknown encoding %lld", s->block,
                     (long long)sqlite3_column_int64(s->st, 4));
    if (s->started && (uint64_t)first_seq != s->next_seq)
        return sfail(s, -EIO, "events block %" PRId64 ": starts at event %" PRId64
                              ", expected %" PRIu64 " (blocks missing)",
                     s->block, first_seq, s->next_seq);
    z = sqlite3_column_blob(s->st, 5);
    if (s->enc == EV_ENCODING)
        rc = unzcols(s->dctx, z, (size_t)sqlite3_column_bytes(s->st, 5), (uint64_t)count,
                     ev_width, NCOL3, &s->raw, &s->rawcap, s->c, why, sizeof why);
    else
        rc = unzip(s->dctx, z, (size_t)sqlite3_column_bytes(s->st, 5), (uint64_t)count,
                   EV_MAX_BYTES, EV_HEAD_BYTES, &s->raw, &s->rawcap, &s->rawlen, why,
                   sizeof why);
    if (rc)
        return sfail(s, rc, "events block %" PRId64 ": corrupt (%s)", s->block, why);
    s->started = 1;
    s->seq = (uint64_t)first_seq;
    s->next_seq = (uint64_t)first_seq + (uint64_t)count;
    s->left = (uint64_t)count;
    s->time = (uint64_t)sqlite3_column_int64(s->st, 2);
    s->addr = 0;
    s->tid = s->heap = 0;
    if (s->enc != EV_ENCODING) {
        s->c[0] = (struct cur){ .p = s->raw, .end = s->raw + s->rawlen };
        for (int k = 0; k < NCOL; k++) {
            s->f[k] = &s->c[0];
            if (k)
                s->c[k] = (struct cur){ 0 };
        }
    }
    if (s->enc == EV_ENCODING2) {
        /* the lengths of columns 1..6; column 0 has one byte per event,
         * column 7 the rest */
        struct cur h = s->c[0];
        uint64_t len[NCOL];
        const uint8_t *p, *end = s->c[0].end;
        len[0] = (uint64_t)count;
        for (int k = 1; k < NCOL - 1; k++)
            len[k] = get(&h);
        p = h.p;
        for (int k = 0; k < NCOL; k++) {
            uint64_t room = (uint64_t)(end - p);
            if (k == NCOL - 1)
                len[k] = room;
            if (h.bad)
                return sfail(s, -EIO, "events block %" PRId64
                                      ": corrupt (bad varint in the column lengths)", s->block);
            if (len[k] > room)
                return sfail(s, -EIO, "events block %" PRId64 ": corrupt (column %d)", s->block,
                             k);
            s->c[k] = (struct cur){ .p = p, .end = p + len[k] };
            s->f[k] = &s->c[k];
            p += len[k];
        }
    }
    if (s->enc == EV_ENCODING) {
        if ((uint64_t)count > s->setcap) {
            struct setter *n = realloc(s->set, (size_t)count * sizeof *n);
            uint64_t *f = n ? realloc(s->freed, (size_t)count * sizeof *f) : NULL;
            if (n)
                s->set = n;
            if (!f)
                return sfail(s, -ENOMEM, "out of memory");
            s->freed = f;
            s->setcap = (size_t)count;
        }
        s->nfree = 0;
        if (model_reserve(&s->m, (uint32_t)count))
            return sfail(s, -ENOMEM, "out of memory");
        model_reset(&s->m);
        s->count = (uint64_t)count;
    }
    return 1;
}

/* What every encoding starts an event with: the kind byte, [tid, heap]
 * when its bit 7 says so, the time delta. ev is cleared first. 0, or < 0
 * (s failed) at the end of the kinds or on an unknown kind. */
static inline __attribute__((always_inline)) int
decode_head(struct evstream *s, struct cur *kind, struct cur *ctx, struct cur *time,
            struct vh_ev *ev)
{
    uint8_t h;

    if (kind->p == kind->end)
        return sfail(s, -EIO, "events block %" PRId64 ": corrupt (ends early)", s->block);
    h = *kind->p++;
    memset(ev, 0, sizeof *ev);
    ev->kind = h & 7;
    ev->flags = (h >> 3) & 0xf;
    if (ev->kind < VH_EV_ALLOC || ev->kind > VH_EV_FAILED)
        return sfail(s, -EIO, "events block %" PRId64 ": corrupt (event kind %u)", s->block,
                     ev->kind);
    if (h & 0x80) {
        s->tid = get32(ctx);
        s->heap = get32(ctx);
    }
    s->time += get(time);
    return 0;
}

/* Decodes the next event of the current block (the inverse of
 * encode_events, or of encoding 1 when every field cursor is the one). 0,
 * or < 0 on a corrupt block. */
static int decode(struct evstream *s, struct vh_ev *ev)
{
    struct cur **f = s->f;
    int bad = 0;

    if (decode_head(s, f[0], f[1], f[2], ev))
        return s->failed;
    if (ev->kind != VH_EV_FAILED) {
        s->addr += (uint64_t)unzigzag(get(f[3]));
        ev->addr = s->addr;
    }
    if (ev->kind == VH_EV_MOVE)
        ev->to = ev->addr + (uint64_t)unzigzag(get(f[3]));
    ev->size = get(f[4]);
    if (ev->kind == VH_EV_RESIZE)
        ev->old_size = get(f[4]);
    if (ev->kind != VH_EV_FAILED)
        ev->usable = ev->size + (uint64_t)unzigzag(get(f[5]));
    ev->stack_id = get32(f[6]);
    ev->tag_id = get32(f[7]);
    for (int k = 0; k < NCOL; k++)
        bad |= s->c[k].bad;
    if (bad)
        return sfail(s, -EIO, "events block %" PRId64 ": corrupt (bad varint)", s->block);
    ev->seq = s->seq++;
    ev->time = s->time;
    ev->tid = s->tid;
    ev->heap_id = s->heap;
    if (!--s->left)
        for (int k = 0; k < NCOL; k++)
            if (s->c[k].p != s->c[k].end)
                return sfail(s, -EIO, "events block %" PRId64
                                      ": corrupt (bytes after the last event)", s->block);
    return 0;
}

/* Decodes the next event of an encoding 3 block: the inverse of
 * encode_events, replaying the same model. 0, or < 0 on a corrupt block. */
static int decode3(struct evstream *s, struct vh_ev *ev)
{
    struct cur *c = s->c;
    uint32_t i = (uint32_t)(s->count - s->left);
    struct setter *set = &s->set[i];
    const char *why = NULL;
    int bad = 0;

    set->valid = 0;
    if (decode_head(s, &c[0], &c[1], &c[2], ev))
        return s->failed;
    ev->tid = s->tid;
    ev->heap_id = s->heap;
    if (ev->kind == VH_EV_ALLOC) {
        uint32_t sel = c[3].p < c[3].end ? *c[3].p++ : (c[3].bad = 1, 0);
        struct contig *g = contig_of(&s->m, s->tid, s->heap);
        uint64_t addr = 0;
        /* the usable size keys the guess: read the fields first */
        ev->size = get(&c[6]);
        ev->usable = ev->size + (uint64_t)unzigzag(get(&c[7]));
        ev->stack_id = get32(&c[8]);
        ev->tag_id = get32(&c[9]);
        if (sel == SEL_FREED) {
            uint64_t d = get(&c[10]);
            if (d >= s->nfree)
                why = "no such free";
            else
                addr = s->freed[s->nfree - 1 - d];
        } else if (sel > SEL_FREED) {
            why = "bad address guess";
        } else if (sel >= 2) {
            struct lifo *l = lifo_get(&s->m, s->heap, s->tid, ev->usable);
            if (sel - 2 >= l->n)
                why = "no such freed address";
            else
                addr = lifo_take(l, sel - 2);
        } else if (sel == 1) {
            if (!g->next || g->tid != s->tid || g->heap != s->heap)
                why = "no previous allocation";
            else
                addr = g->next;
        } else {
            addr = s->addr + (uint64_t)unzigzag(get(&c[5]));
        }
        *g = (struct contig){ .tid = s->tid, .heap = s->heap, .next = addr + ev->usable + 8 };
        ev->addr = s->addr = addr;
        *set = (struct setter){ addr, ev->size, ev->usable, ev->stack_id, ev->tag_id, 1 };
    } else {
        uint64_t back = ev->kind == VH_EV_FREE ? get(&c[4]) : 0;
        if (back) {
            const struct setter *from = back <= i ? &s->set[i - back] : NULL;
            if (!from || !from->valid) {
                why = "bad reference back";
            } else {
                ev->addr = from->addr;
                ev->size = from->size;
                ev->usable = from->usable;
                ev->stack_id = from->stack_id;
                ev->tag_id = from->tag_id;
                s->addr = ev->addr;
            }
        } else {
            if (ev->kind != VH_EV_FAILED) {
                s->addr += (uint64_t)unzigzag(get(&c[5]));
                ev->addr = s->addr;
            }
            if (ev->kind == VH_EV_MOVE)
                ev->to = ev->addr + (uint64_t)unzigzag(get(&c[5]));
            ev->size = get(&c[6]);
            if (ev->kind == VH_EV_RESIZE)
                ev->old_size = get(&c[6]);
            if (ev->kind != VH_EV_FAILED)
                ev->usable = ev->size + (uint64_t)unzigzag(get(&c[7]));
            ev->stack_id = get32(&c[8]);
            ev->tag_id = get32(&c[9]);
        }
        if (ev->kind == VH_EV_FREE) {
            lifo_push(lifo_get(&s->m, s->heap, s->tid, ev->usable), ev->addr);
            s->freed[s->nfree++] = ev->addr;
        }
        if (ev->kind == VH_EV_RESIZE || ev->kind == VH_EV_MOVE)
            *set = (struct setter){ ev->kind == VH_EV_MOVE ? ev->to : ev->addr, ev->size,
                                    ev->usable, ev->stack_id, ev->tag_id, 1 };
    }
    for (int k = 0; k < NCOL3; k++)
        bad |= c[k].bad;
    if (bad || why)
        return sfail(s, -EIO, "events block %" PRId64 ": corrupt (%s)", s->block,
                     why ? why : "bad varint");
    ev->seq = s->seq++;
    ev->time = s->time;
    if (!--s->left)
        for (int k = 0; k < NCOL3; k++)
            if (c[k].p != c[k].end)
                return sfail(s, -EIO, "events block %" PRId64
                                      ": corrupt (bytes after the last event)", s->block);
    return 0;
}

int evstream__next(struct evstream *s, struct vh_ev *ev)
{
    int rc;

    for (;;) {
        if (s->failed)
            return s->failed;
        if (!s->left) {
            if ((rc = load_block(s)) <= 0)
                return rc;
            continue;
        }
        if (s->enc == EV_ENCODING ? decode3(s, ev) : decode(s, ev))
            return s->failed;
        if (ev->seq >= s->from_seq && ev->time >= s->from_time)
            return 1;
    }
}

const char *evstream__error(const struct evstream *s)
{
    return s->err[0] ? s->err : "no error";
}

void evstream__close(struct evstream *s)
{
    if (!s)
        return;
    sqlite3_finalize(s->st);
    ZSTD_freeDCtx(s->dctx);
    model_free(&s->m);
    free(s->set);
    free(s->freed);
    free(s->raw);
    free(s);
}

/* ---- the live set ------------------------------------------------------------- */

/* liveset__at: the checkpoint's blocks, decoded in order into `base` (sorted
 * by heap and address, as stored), and the replay's changes in a hash table
 * keyed by (heap, addr): a block now live there, or `dead`. The answer is
 * the merge of base with the sorted changes, so the big part — the
 * checkpoint — is only ever read in order. */
struct chg {
    struct vh_block b;                 /* b.addr 0: empty slot               */
    int dead;
};

struct cmap {
    struct chg *s;
    size_t mask, count;
};

static inline size_t chash(const struct cmap *m, uint32_t heap, uint64_t addr)
{
    uint64_t x = (addr ^ (uint64_t)heap << 47) * 0x9e3779b97f4a7c15ull;
    return (size_t)(x ^ (x >> 29)) & m->mask;
}

static struct chg *cmap_find(const struct cmap *m, uint32_t heap, uint64_t addr)
{
    for (size_t i = chash(m, heap, addr);; i = (i + 1) & m->mask) {
        struct chg *c = &m->s[i];
        if (!c->b.addr)
            return NULL;
        if (c->b.addr == addr && c->b.heap_id == heap)
            return c;
    }
}

/* The slot of (heap, addr), claimed if new. NULL when out of memory. */
static struct chg *cmap_slot(struct cmap *m, uint32_t heap, uint64_t addr)
{
    size_t i;

    if ((m->count + 1) * 10 > (m->mask + 1) * 7) {
        size_t n = (m->mask + 1) * 2, oldn = m->mask + 1;
        struct chg *s = calloc(n, sizeof *s), *old = m->s;
        if (!s)
            return NULL;
        m->s = s;
        m->mask = n - 1;
        for (size_t k = 0; k < oldn; k++) {
            if (!old[k].b.addr)
                continue;
            size_t j = chash(m, old[k].b.heap_id, old[k].b.addr);
            while (s[j].b.addr)
                j = (j + 1) & m->mask;
            s[j] = old[k];
        }
        free(old);
    }
    for (i = chash(m, heap, addr); m->s[i].b.addr; i = (i + 1) & m->mask)
        if (m->s[i].b.addr == addr && m->s[i].b.heap_id == heap)
            return &m->s[i];
    m->count++;
    m->s[i].b.addr = addr;
    m->s[i].b.heap_id = heap;
    return &m->s[i];
}

static inline int key_cmp(uint32_t h1, uint64_t a1, uint32_t h2, uint64_t a2)
{
    if (h1 != h2)
        return h1 < h2 ? -1 : 1;
    return (a1 > a2) - (a1 < a2);
}

/* The checkpoint block at (heap, addr), or NULL. */
static const struct vh_block *base_find(const struct vh_block *base, size_t n, uint32_t heap,
                                        uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = key_cmp(base[mid].heap_id, base[mid].addr, heap, addr);
        if (!c)
            return &base[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The block live at (heap, addr) given the changes so far, or NULL. */
static const struct vh_block *live_find(const struct cmap *m, const struct vh_block *base,
                                        size_t nbase, uint32_t heap, uint64_t addr)
{
    const struct chg *c = cmap_find(m, heap, addr);
    if (c)
        return c->dead ? NULL : &c->b;
    return base_find(base, nbase, heap, addr);
}

static int apply(struct cmap *m, const struct vh_block *base, size_t nbase, const struct vh_ev *ev)
{
    const struct vh_block *from;
    struct vh_block keep;
    struct chg *c;

    if (!ev->addr)
        return 0;
    switch (ev->kind) {
    case VH_EV_ALLOC:
    case VH_EV_RESIZE:
        /* a resized block belongs to the realloc: size, stack, time, thread */
        if (!(c = cmap_slot(m, ev->heap_id, ev->addr)))
            return -ENOMEM;
        c->b = (struct vh_block){ .addr = ev->addr, .size = ev->size, .usable = ev->usable,
                                  .time = ev->time, .heap_id = ev->heap_id,
                                  .stack_id = ev->stack_id, .tag_id = ev->tag_id, .tid = ev->tid };
        c->dead = 0;
        return 0;
    case VH_EV_FREE:
        if (!(c = cmap_slot(m, ev->heap_id, ev->addr)))
            return -ENOMEM;
        c->dead = 1;
        return 0;
    case VH_EV_MOVE:
        if (!ev->to || !(from = live_find(m, base, nbase, ev->heap_id, ev->addr)))
            return 0;
        keep = *from;
        if (!(c = cmap_slot(m, ev->heap_id, ev->addr)))
            return -ENOMEM;
        c->dead = 1;
        if (!(c = cmap_slot(m, ev->heap_id, ev->to)))
            return -ENOMEM;
        c->b = keep;
        c->b.addr = ev->to;
        c->dead = 0;
        return 0;
    default:
        return 0;
    }
}

/* LSD radix sort of the changes by (heap, addr), one byte per pass,
 * skipping the bytes every key shares. Returns the sorted array (k or tmp). */
static struct chg *sort_changes(struct chg *k, struct chg *tmp, size_t n)
{
    uint64_t any[2] = { 0, 0 }, all[2] = { ~0ull, ~0ull };

    for (size_t i = 0; i < n; i++) {
        any[0] |= k[i].b.addr;
        all[0] &= k[i].b.addr;
        any[1] |= k[i].b.heap_id;
        all[1] &= k[i].b.heap_id;
    }
    for (unsigned w = 0; w < 2; w++) {
        for (unsigned shift = 0; shift < 64; shift += 8) {
            size_t count[257] = { 0 };
            struct chg *x;
            if (!(((any[w] ^ all[w]) >> shift) & 0xff))
                continue;
#define DIGIT(c) ((size_t)(((w ? (uint64_t)(c).b.heap_id : (c).b.addr) >> shift) & 0xff))
            for (size_t i = 0; i < n; i++)
                count[DIGIT(k[i]) + 1]++;
            for (size_t i = 1; i < 257; i++)
                count[i] += count[i - 1];
            for (size_t i = 0; i < n; i++)
                tmp[count[DIGIT(k[i])]++] = k[i];
#undef DIGIT
            x = k, k = tmp, tmp = x;
        }
    }
    return k;
}

/* Appends the rows of checkpoint `seq` (heap_id < 0: every heap) to *base,
 * checking that they come in (heap, addr) order. */
static int load_checkpoint(sqlite3 *db, int64_t seq, int64_t heap_id, struct vh_block **base,
                           size_t *nbase, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    ZSTD_DCtx *d = ZSTD_createDCtx();
    uint8_t *raw = NULL;
    size_t cap = 0, len = 0, bcap = 0;
    uint32_t last_heap = 0;
    uint64_t last_addr = 0;
    char why[160];
    int rc;

    if (!d) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    if (sqlite3_prepare_v2(db, "SELECT heap_id, part, time, count, encoding, data "
                               "FROM checkpoints WHERE seq = ?1 AND (?2 < 0 OR heap_id = ?2) "
                               "ORDER BY heap_id, part", -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(db));
        rc = -EIO;
        goto out;
    }
    sqlite3_bind_int64(st, 1, seq);
    sqlite3_bind_int64(st, 2, heap_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t heap = sqlite3_column_int64(st, 0), count = sqlite3_column_int64(st, 3);
        uint64_t time = (uint64_t)sqlite3_column_int64(st, 2), addr = 0;
        struct cur c;

        if (heap < 0 || heap > UINT32_MAX || count < 0 || count > MAX_PART_BLOCKS ||
            sqlite3_column_int64(st, 4) != ENCODING) {
            snprintf(err, errlen, "checkpoint at event %" PRId64 ": corrupt row (heap %" PRId64
                                  ")", seq, heap);
            rc = -EIO;
            goto out;
        }
        rc = unzip(d, sqlite3_column_blob(st, 5), (size_t)sqlite3_column_bytes(st, 5),
                   (uint64_t)count, CP_MAX_BYTES, 0, &raw, &cap, &len, why, sizeof why);
        if (rc) {
            snprintf(err, errlen, "checkpoint at event %" PRId64 ", heap %" PRId64
                                  ": corrupt (%s)", seq, heap, why);
            goto out;
        }
        if (*nbase + (size_t)count > bcap) {
            size_t n = bcap ? bcap : 1024;
            while (n < *nbase + (size_t)count)
                n *= 2;
            struct vh_block *p = realloc(*base, n * sizeof *p);
            if (!p) {
                snprintf(err, errlen, "out of memory");
                rc = -ENOMEM;
                goto out;
            }
            *base = p;
            bcap = n;
        }
        c = (struct cur){ .p = raw, .end = raw + len };
        for (int64_t i = 0; i < count; i++) {
            struct vh_block *b = &(*base)[*nbase];
            addr += get(&c);
            b->addr = addr;
            b->heap_id = (uint32_t)heap;
            b->size = get(&c);
            b->usable = b->size + (uint64_t)unzigzag(get(&c));
            b->time = time - (uint64_t)unzigzag(get(&c));
            b->stack_id = get32(&c);
            b->tag_id = get32(&c);
            b->tid = get32(&c);
            if (c.bad || (*nbase && key_cmp(last_heap, last_addr, b->heap_id, addr) >= 0) ||
                !addr) {
                snprintf(err, errlen, "checkpoint at event %" PRId64 ", heap %" PRId64
                                      ": corrupt (%s)", seq, heap,
                         c.bad ? "bad varint" : "blocks out of order");
                rc = -EIO;
                goto out;
            }
            last_heap = b->heap_id;
            last_addr = addr;
            ++*nbase;
        }
        if (c.p != c.end) {
            snprintf(err, errlen, "checkpoint at event %" PRId64 ", heap %" PRId64
                                  ": corrupt (bytes after the last block)", seq, heap);
            rc = -EIO;
            goto out;
        }
    }
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(db));
        rc = -EIO;
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(st);
    ZSTD_freeDCtx(d);
    free(raw);
    return rc;
}

/* base and the sorted changes into one sorted array: a change replaces the
 * base block at its key, or removes it when dead. */
static struct vh_block *merge(const struct vh_block *base, size_t nbase, const struct chg *chg,
                              size_t nchg, size_t *n)
{
    struct vh_block *out = malloc((nbase + nchg ? nbase + nchg : 1) * sizeof *out);
    size_t i = 0, j = 0, k = 0;

    if (!out)
        return NULL;
    while (i < nbase || j < nchg) {
        int c = i == nbase ? 1 : j == nchg ? -1
                               : key_cmp(base[i].heap_id, base[i].addr, chg[j].b.heap_id,
                                         chg[j].b.addr);
        if (c < 0) {
            out[k++] = base[i++];
            continue;
        }
        if (!c)
            i++;
        if (!chg[j].dead)
            out[k++] = chg[j].b;
        j++;
    }
    *n = k;
    return out;
}

int liveset__at(sqlite3 *db, uint64_t time, int64_t heap_id, struct liveset **out, char *err,
                size_t errlen)
{
    struct cmap m = { 0 };
    struct evstream *s = NULL;
    struct liveset *ls = NULL;
    struct vh_block *base = NULL;
    struct chg *chg = NULL, *sorted;
    struct vh_ev ev;
    int64_t seq = 0, block = 0;
    size_t nbase = 0, nchg = 0;
    int rc;

    *out = NULL;
    if (heap_id > UINT32_MAX)
        heap_id = UINT32_MAX;          /* no such heap: empty */
    m.mask = 1023;
    if (!(m.s = calloc(m.mask + 1, sizeof *m.s)) || !(ls = calloc(1, sizeof *ls))) {
        rc = -ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    /* the latest checkpoint at or before `time`, then the events after it */
    rc = query1(db, "SELECT max(seq) FROM checkpoints WHERE time <= ?1", clamp64(time), &seq,
                err, errlen);
    if (rc < 0)
        goto out;
    if (rc == 1 && (rc = load_checkpoint(db, seq, heap_id, &base, &nbase, err, errlen)))
        goto out;
    rc = query1(db, "SELECT block FROM events WHERE first_seq <= ?1 "
                    "ORDER BY first_seq DESC LIMIT 1", seq, &block, err, errlen);
    if (rc < 0 || (rc = es_open(db, block, 0, (uint64_t)seq, &s, err, errlen)))
        goto out;
    while ((rc = evstream__next(s, &ev)) == 1) {
        if (ev.time > time)
            break;
        if (heap_id >= 0 && ev.heap_id != (uint64_t)heap_id)
            continue;
        if (apply(&m, base, nbase, &ev)) {
            rc = -ENOMEM;
            snprintf(err, errlen, "out of memory");
            goto out;
        }
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s", evstream__error(s));
        goto out;
    }
    /* the table's occupied slots, packed to its front, sorted */
    for (size_t i = 0; i <= m.mask; i++)
        if (m.s[i].b.addr)
            m.s[nchg++] = m.s[i];
    if (!(chg = malloc((nchg ? nchg : 1) * sizeof *chg))) {
        rc = -ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    sorted = sort_changes(m.s, chg, nchg);
    ls->blocks = merge(base, nbase, sorted, nchg, &ls->n);
    if (!ls->blocks) {
        rc = -ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    ls->time = time;
    *out = ls;
    ls = NULL;
    rc = 0;
out:
    evstream__close(s);
    free(m.s);
    free(chg);
    free(base);
    liveset__free(ls);
    return rc;
}

void liveset__free(struct liveset *ls)
{
    if (!ls)
        return;
    free(ls->blocks);
    free(ls);
}

void vh_ev__weigh(struct vh_ev *ev, uint64_t rate)
{
    if (!rate || !ev->size)
        return;
    double w = 1.0 / vh_sample_p_clamped(ev->size, rate);
    ev->usable = vh_clamp_u64((double)ev->usable * w + 0.5);
    ev->size = vh_weigh_bytes(ev->size, rate);
    ev->old_size = vh_weigh_bytes(ev->old_size, rate);
}
