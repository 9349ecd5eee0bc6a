/* loomsim.c — a stand-in for Vere's loom, written from scratch for vheap's
 * tests: a fixed-address arena with its own page allocator, nested roads,
 * refcounted cells, a bignum library on its byte-sized malloc, compaction,
 * meld, a deliberate leak, dirty-page tracking through SIGSEGV, a forked
 * worker and system-malloc threads. It tells vheap everything through
 * preload/vheap.h and prints its own books ("loomsim ..." lines) so tests
 * can compare vheap's answers with what the program knows it did.
 *
 * Vere's shapes it copies (docs/vere.md): every road leaves through one
 * function, love() (results, bails and signals alike); sweep frees whole
 * pages of leaked blocks at once (vheap_free_range); pack slides whole
 * pages down (vheap_move_range) after moving chunks; meld frees every
 * block and rebuilds through the hooked entry points; the allocator's
 * directory and the home road's gap are declared regions. With --timer, a
 * virtual-time interval timer (SIGVTALRM) siglongjmps out of computations
 * on inner roads wherever they are, the allocator and vheap included.
 *
 * Output (stdout), one record per line, key=value fields:
 *   loomsim heap=NAME pid= role= id= parent= live_blocks= live_bytes=
 *           live_usable= peak_bytes= allocs= frees= resizes= moves=
 *           destroyed= dropped_blocks= dropped_bytes=
 *   loomsim leak pid= heap= id= addr= size= usable= moved= first_addr=
 *   loomsim tag pid= label= allocs=     (custom-heap allocations made while
 *                                        the label was the innermost tag)
 *   loomsim thread index= label= mallocs= frees=
 *   loomsim heaptrack pid= api=found|absent live_blocks= live_bytes=
 *   loomsim summary pid= role= ...      (roads, marks, dirty faults, ...,
 *                                        region_calls=, region_changes=:
 *                                        vheap_region calls, and those that
 *                                        changed the region)
 *   loomsim frag pid= phase=before|after id= blocks= usable= free= holes=
 *           largest= span= reclaim= pages=   (the home road around pack)
 * live_bytes/peak_bytes count requested bytes of the heap itself (blocks in
 * nested heaps are not included); peak is the maximum over time. */
#define _GNU_SOURCE                         /* RTLD_NEXT, MAP_FIXED_NOREPLACE */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload/vheap.h"

/* ---- The arena ----------------------------------------------------------
 * One mapping at a fixed address (Vere's loom sits at 0x200000000 too),
 * addressed by 32-bit offsets in 4-byte words. 16 KiB pages; the page
 * directory fills the first pages of the arena itself. */
#define LOOM_BASE 0x200000000UL
#define LOOM_SIZE (64UL << 20)
#define PAGE_SZ 16384u
#define NPAGES ((uint32_t)(LOOM_SIZE / PAGE_SZ))
#define NCLASS 10u                          /* 16 B << 0 .. 16 B << 9 = 8 KiB */
#define MAX_SLOTS (PAGE_SZ / 16u)
#define MAX_RUNS 256u
#define CACHE_MAX 64u
#define CACHE_BATCH 32u
#define MAX_DEPTH 8u

typedef uint32_t post_t;                    /* word offset from LOOM_BASE   */

enum { PG_FREE = 0, PG_CHUNK, PG_RUN, PG_CONT, PG_META };

struct pgdir {                              /* one per page, in the arena   */
    uint8_t kind;
    uint8_t cls;                            /* PG_CHUNK: size class         */
    uint16_t nfree;                         /* PG_CHUNK: free slots         */
    uint32_t next;                          /* PG_CHUNK: next partial page  */
    uint32_t npages;                        /* PG_RUN: run length           */
    uint32_t owner;                         /* road (its struct page)       */
    uint64_t bits[MAX_SLOTS / 64];          /* PG_CHUNK: used slots         */
};

#define DIR_PAGES ((uint32_t)((NPAGES * sizeof(struct pgdir) + PAGE_SZ - 1) / PAGE_SZ))

/* A road: a heap growing away from `origin` (north: up, south: down) and a
 * one-page "stack" holding this struct at the other end of its region. Free
 * page runs are kept address-ordered (in the road's direction) and
 * coalesced; the top shrinks when the last run touches it. */
struct road {
    uint32_t north, origin, hat, limit, self_page, depth;
    uint32_t frozen;                        /* a nested road lives in the gap */
    uint32_t parent_page;                   /* 0 for home                    */
    int heap;                               /* vheap id (0 when unprofiled)  */
    int tags_in, vh_tags_in;                /* tag depths when entered       */
    uint32_t book;
    uint32_t partial[NCLASS];
    uint32_t nruns;
    struct { uint32_t r, n; } runs[MAX_RUNS];
    uint32_t ncache;
    post_t cache[CACHE_MAX];
    jmp_buf jb;                             /* bail target, like Vere's      */
};
_Static_assert(sizeof(struct road) <= PAGE_SZ, "road fits its page");

static struct pgdir *dir;
static struct road *R, *home;               /* current road, home road       */
static uint32_t lost_pages;                 /* runs list overflowed          */

static inline uint8_t *page_addr(uint32_t pg)
{
    return (uint8_t *)(LOOM_BASE + (uintptr_t)pg * PAGE_SZ);
}

static inline uint32_t page_of(const void *p)
{
    return (uint32_t)(((uintptr_t)p - LOOM_BASE) / PAGE_SZ);
}

static inline void *to_ptr(post_t w)
{
    return (void *)(LOOM_BASE + (uintptr_t)w * 4u);
}

static inline post_t to_post(const void *p)
{
    return (post_t)(((uintptr_t)p - LOOM_BASE) / 4u);
}

static inline struct road *road_at(uint32_t pg)
{
    return (struct road *)page_addr(pg);
}

static void die(const char *why)
{
    fprintf(stderr, "loomsim: %s\n", why);
    fflush(stdout);
    abort();
}

/* ---- The timer (--timer): where it may and may not jump ----------------
 * The handler siglongjmps to the event loop while `timer_armed` (only
 * while a timed computation runs on inner roads), except inside the books
 * and the road changes below (`in_crit`): it then jumps when they end. It
 * may jump out of the allocator and out of vheap's calls. */
static volatile sig_atomic_t timer_armed, in_crit, timer_pending;
static sigjmp_buf timer_env;

static void crit_begin(void)
{
    in_crit++;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void crit_end(void)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (--in_crit == 0 && timer_pending && timer_armed) {
        timer_pending = 0;
        timer_armed = 0;
        siglongjmp(timer_env, 1);
    }
}

/* ---- Books: what the program knows, to be compared with vheap --------- */
struct book {
    char name[24];
    int heap, parent_heap, destroyed;
    uint64_t live_blocks, live_bytes, live_usable, peak_bytes;
    uint64_t allocs, frees, resizes, moves, dropped_blocks, dropped_bytes;
};
#define MAX_BOOKS 512u
static struct book books[MAX_BOOKS];
static uint32_t nbooks;

/* Shadow of every live block: requested size and owning book. Static
 * memory, so the books add no allocations of their own. */
#define SH_BITS 18u
#define SH_CAP (1u << SH_BITS)
struct shadow {
    uint64_t addr;                          /* 0 = empty                     */
    uint32_t size;
    uint16_t book;
    uint8_t mark, pad;
};
static struct shadow sh[SH_CAP];
static uint32_t sh_count;
static uint64_t sh_scratch[SH_CAP];

static inline uint32_t sh_hash(uint64_t a)
{
    return (uint32_t)(((a >> 4) * 0x9E3779B97F4A7C15ull) >> (64 - SH_BITS));
}

static struct shadow *sh_find(uint64_t a)
{
    for (uint32_t i = sh_hash(a);; i = (i + 1) & (SH_CAP - 1)) {
        if (sh[i].addr == a)
            return &sh[i];
        if (!sh[i].addr)
            return NULL;
    }
}

static void sh_insert(uint64_t a, uint32_t size, uint32_t book)
{
    uint32_t i;
    if (sh_count > SH_CAP / 10 * 7)
        die("shadow table full");
    for (i = sh_hash(a); sh[i].addr; i = (i + 1) & (SH_CAP - 1))
        if (sh[i].addr == a)
            die("block allocated twice");
    sh[i] = (struct shadow){ .addr = a, .size = size, .book = (uint16_t)book };
    sh_count++;
}

/* Removes `a` with backward-shift deletion (no tombstones). */
static struct shadow sh_erase(uint64_t a)
{
    struct shadow *e = sh_find(a), old;
    uint32_t i, j, k;
    if (!e)
        die("free of a block that is not live");
    old = *e;
    i = (uint32_t)(e - sh);
    for (j = (i + 1) & (SH_CAP - 1); sh[j].addr; j = (j + 1) & (SH_CAP - 1)) {
        k = sh_hash(sh[j].addr);
        /* sh[j] may move to the hole at i if its home k is not in (i, j]. */
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
            sh[i] = sh[j];
            i = j;
        }
    }
    sh[i].addr = 0;
    sh_count--;
    return old;
}

/* ---- Tags: the program's own mirror of its tag stack ------------------- */
#define MAX_LABELS 64u
static struct { const char *label; uint64_t allocs; } labels[MAX_LABELS];
static uint32_t nlabels;
#define TAGSTK_MAX 512
static const char *tagstk[TAGSTK_MAX];
static int tagdepth;                        /* main thread only              */
static uint64_t tag_pushes, overflow_allocs;

/* vheap.h: every level keeps its tag this shallow (far below
 * VHEAP_TAG_OUTER + the levels vheap maps for a deep thread) */
static void tag_model_pop(void)
{
    if (tagdepth > 0)
        tagdepth--;
}

static void tag_push(const char *label)
{
    crit_begin();
    vheap_tag_push(label);
    if (tagdepth < TAGSTK_MAX)
        tagstk[tagdepth] = label;
    tagdepth++;
    tag_pushes++;
    crit_end();
}

static void tag_pop(void)
{
    crit_begin();
    vheap_tag_pop();
    tag_model_pop();
    crit_end();
}

/* After a longjmp skipped some pops: back to the depths saved where it
 * landed, ours and vheap's (vheap_tag_depth: 0 when not profiled). */
static uint64_t tag_unwinds;

static void tags_unwind(int depth, int vh_depth)
{
    if (tagdepth > depth)
        tag_unwinds++;
    while (tagdepth > depth)
        tag_model_pop();
    vheap_tag_unwind(vh_depth);
    if (vheap_enabled() && vheap_tag_depth() != vh_depth)
        die("vheap_tag_unwind left another depth");
}

static void count_tagged_alloc(void)
{
    const char *l;
    uint32_t i;
    if (!tagdepth)
        l = "(none)";
    else if (tagdepth <= TAGSTK_MAX)
        l = tagstk[tagdepth - 1];
    else {                                  /* deeper than this model keeps  */
        l = "(deeper)";
        overflow_allocs++;
    }
    for (i = 0; i < nlabels; i++)
        if (!strcmp(labels[i].label, l))
            break;
    if (i == nlabels) {
        if (nlabels == MAX_LABELS)
            die("too many labels");
        labels[nlabels++].label = l;
    }
    labels[i].allocs++;
}

/* ---- Reporting: every allocator event goes to vheap and the books ----- */
static void note_alloc(struct road *r, const void *p, size_t size, size_t usable)
{
    struct book *b = &books[r->book];
    crit_begin();
    sh_insert((uintptr_t)p, (uint32_t)size, r->book);
    b->allocs++;
    b->live_blocks++;
    b->live_bytes += size;
    b->live_usable += usable;
    if (b->live_bytes > b->peak_bytes)
        b->peak_bytes = b->live_bytes;
    count_tagged_alloc();
    crit_end();
    vheap_alloc(r->heap, p, size, usable);
}

static size_t block_usable(const void *p);

static void note_free(const void *p)
{
    struct shadow s;
    struct book *b;
    size_t usable = block_usable(p);
    crit_begin();
    s = sh_erase((uintptr_t)p);
    b = &books[s.book];
    b->frees++;
    b->live_blocks--;
    b->live_bytes -= s.size;
    b->live_usable -= usable;
    crit_end();
    vheap_free(b->heap, p);
}

/* old_usable: the old block's usable size, read before it was released. */
static void note_realloc(struct road *r, const void *old, size_t old_usable,
                         const void *p, size_t size, size_t usable)
{
    struct book *b = &books[r->book];
    crit_begin();
    struct shadow s = sh_erase((uintptr_t)old);
    sh_insert((uintptr_t)p, (uint32_t)size, r->book);
    b->live_bytes = b->live_bytes - s.size + size;
    b->live_usable = b->live_usable - old_usable + usable;
    if (p == old) {
        b->resizes++;
    } else {
        b->allocs++;
        b->frees++;
        count_tagged_alloc();
    }
    if (b->live_bytes > b->peak_bytes)
        b->peak_bytes = b->live_bytes;
    crit_end();
    vheap_realloc(r->heap, old, p, size, usable);
}

static void note_move(const void *from, const void *to)
{
    struct shadow s = sh_erase((uintptr_t)from);
    vheap_move(books[s.book].heap, from, to);
    sh_insert((uintptr_t)to, s.size, s.book);
    books[s.book].moves++;
}

/* The blocks of `book` that start in [lo, lo + len), into sh_scratch. */
static uint32_t book_blocks_in(uint32_t book, uintptr_t lo, size_t len)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < SH_CAP; i++)
        if (sh[i].addr && sh[i].book == book && sh[i].addr >= lo && sh[i].addr - lo < len)
            sh_scratch[n++] = sh[i].addr;
    return n;
}

/* Pack copied [from, from + len) to `to`: every block in it moved (home
 * road only). One vheap call for the lot. */
static uint64_t range_moves, range_frees, page_moved_blocks;

static void note_move_range(const void *from, const void *to, size_t len)
{
    uint32_t n = book_blocks_in(home->book, (uintptr_t)from, len);
    struct shadow s[64];
    /* take them all out first: the ranges may overlap */
    for (uint32_t i = 0; i < n; i += 64) {
        uint32_t k = n - i < 64 ? n - i : 64;
        for (uint32_t j = 0; j < k; j++)
            s[j] = sh_erase(sh_scratch[i + j]);
        for (uint32_t j = 0; j < k; j++)
            sh_insert(s[j].addr - (uintptr_t)from + (uintptr_t)to, s[j].size, s[j].book);
    }
    books[home->book].moves += n;
    page_moved_blocks += n;
    vheap_move_range(home->heap, from, to, len);
    range_moves++;
}

/* Sweep dropped [lo, lo + len) at once: every block in it is freed. */
static void note_free_range(const void *lo, size_t len)
{
    uint32_t n = book_blocks_in(home->book, (uintptr_t)lo, len);
    struct book *b = &books[home->book];
    for (uint32_t i = 0; i < n; i++) {
        size_t u = block_usable((void *)(uintptr_t)sh_scratch[i]);
        struct shadow s = sh_erase(sh_scratch[i]);
        b->frees++;
        b->live_blocks--;
        b->live_bytes -= s.size;
        b->live_usable -= u;
    }
    vheap_free_range(home->heap, lo, len);
    range_frees++;
}

static uint32_t book_new(const char *name, int heap, int parent_heap)
{
    if (nbooks == MAX_BOOKS)
        die("too many heaps");
    struct book *b = &books[nbooks];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    b->heap = heap;
    b->parent_heap = parent_heap;
    return nbooks++;
}

/* The road's blocks vanish at once: drop them from the shadow. */
static void book_destroy(uint32_t book)
{
    struct book *b = &books[book];
    uint32_t n = 0;
    for (uint32_t i = 0; i < SH_CAP; i++)
        if (sh[i].addr && sh[i].book == book)
            sh_scratch[n++] = sh[i].addr;
    for (uint32_t i = 0; i < n; i++)
        sh_erase(sh_scratch[i]);
    if (n != b->live_blocks)
        die("road books disagree with the shadow");
    b->dropped_blocks = b->live_blocks;
    b->dropped_bytes = b->live_bytes;
    b->live_blocks = b->live_bytes = b->live_usable = 0;
    b->destroyed = 1;
}

/* ---- Pages --------------------------------------------------------------- */
static void home_regions(void);

/* Lowest physical page of the run of n pages at relative position r. */
static inline uint32_t phys_lo(const struct road *rd, uint32_t r, uint32_t n)
{
    return rd->north ? rd->origin + r : rd->origin - r - n;
}

static inline uint32_t rel_of(const struct road *rd, uint32_t lo, uint32_t n)
{
    return rd->north ? lo - rd->origin : rd->origin - lo - n;
}

/* Bounds of the road's heap in bytes: [lo, hi). */
static void road_bounds(const struct road *rd, uintptr_t *lo, uintptr_t *hi)
{
    uint32_t a = phys_lo(rd, 0, rd->hat), b = a + rd->hat;
    *lo = (uintptr_t)page_addr(a);
    *hi = (uintptr_t)page_addr(b);
}

static uint32_t page_alloc(struct road *rd, uint32_t n)
{
    uint32_t r, lo, i;
    for (i = 0; i < rd->nruns; i++) {       /* first fit, address order     */
        if (rd->runs[i].n >= n) {
            r = rd->runs[i].r;
            rd->runs[i].r += n;
            rd->runs[i].n -= n;
            if (!rd->runs[i].n) {
                memmove(&rd->runs[i], &rd->runs[i + 1], (rd->nruns - i - 1) * sizeof rd->runs[0]);
                rd->nruns--;
            }
            goto got;
        }
    }
    if (rd->frozen || rd->hat + n > rd->limit)
        return 0;
    r = rd->hat;
    rd->hat += n;
    if (rd == home)
        home_regions();                     /* the gap shrank                */
got:
    lo = phys_lo(rd, r, n);
    for (i = 0; i < n; i++) {
        dir[lo + i].kind = i ? PG_CONT : PG_RUN;
        dir[lo + i].npages = i ? 0 : n;
        dir[lo + i].owner = rd->self_page;
    }
    return lo;
}

static void page_free(struct road *rd, uint32_t lo, uint32_t n)
{
    uint32_t r = rel_of(rd, lo, n), i;
    for (i = 0; i < n; i++)
        dir[lo + i].kind = PG_FREE;
    for (i = 0; i < rd->nruns && rd->runs[i].r < r; i++)
        ;
    /* coalesce with the run before and/or after */
    if (i > 0 && rd->runs[i - 1].r + rd->runs[i - 1].n == r) {
        rd->runs[i - 1].n += n;
        if (i < rd->nruns && rd->runs[i - 1].r + rd->runs[i - 1].n == rd->runs[i].r) {
            rd->runs[i - 1].n += rd->runs[i].n;
            memmove(&rd->runs[i], &rd->runs[i + 1], (rd->nruns - i - 1) * sizeof rd->runs[0]);
            rd->nruns--;
        }
    } else if (i < rd->nruns && r + n == rd->runs[i].r) {
        rd->runs[i].r = r;
        rd->runs[i].n += n;
    } else if (rd->nruns == MAX_RUNS) {
        lost_pages += n;                    /* too fragmented: give up pages */
        return;
    } else {
        memmove(&rd->runs[i + 1], &rd->runs[i], (rd->nruns - i) * sizeof rd->runs[0]);
        rd->runs[i].r = r;
        rd->runs[i].n = n;
        rd->nruns++;
    }
    /* shrink the top */
    uint32_t hat = rd->hat;
    while (rd->nruns && rd->runs[rd->nruns - 1].r + rd->runs[rd->nruns - 1].n == rd->hat) {
        rd->hat = rd->runs[rd->nruns - 1].r;
        rd->nruns--;
    }
    if (rd == home && rd->hat != hat)
        home_regions();                     /* the gap grew                  */
}

/* ---- Chunks: power-of-two classes in bitmap pages ----------------------- */
static inline uint32_t slots_of(unsigned cls)
{
    return PAGE_SZ >> (cls + 4);
}

static void *chunk_alloc(struct road *rd, unsigned cls)
{
    uint32_t pg = rd->partial[cls], s, w;
    struct pgdir *d;
    if (!pg) {
        pg = page_alloc(rd, 1);
        if (!pg)
            return NULL;
        d = &dir[pg];
        d->kind = PG_CHUNK;
        d->cls = (uint8_t)cls;
        d->nfree = (uint16_t)slots_of(cls);
        d->next = 0;
        memset(d->bits, 0, sizeof d->bits);
        rd->partial[cls] = pg;
    }
    d = &dir[pg];
    for (w = 0; d->bits[w] == ~0ull; w++)
        ;
    s = w * 64 + (uint32_t)__builtin_ctzll(~d->bits[w]);
    if (s >= slots_of(cls))
        die("corrupt chunk page");
    d->bits[w] |= 1ull << (s & 63);
    if (--d->nfree == 0) {
        rd->partial[cls] = d->next;
        d->next = 0;
    }
    return page_addr(pg) + ((size_t)s << (cls + 4));
}

static void partial_remove(struct road *rd, uint32_t pg)
{
    uint32_t *pp = &rd->partial[dir[pg].cls];
    while (*pp && *pp != pg)
        pp = &dir[*pp].next;
    if (*pp)
        *pp = dir[pg].next;
    dir[pg].next = 0;
}

static void chunk_free(struct road *rd, uint32_t pg, const void *p)
{
    struct pgdir *d = &dir[pg];
    uint32_t s = (uint32_t)(((const uint8_t *)p - page_addr(pg)) >> (d->cls + 4));
    if (!(d->bits[s / 64] & (1ull << (s & 63))))
        die("double free in a chunk page");
    d->bits[s / 64] &= ~(1ull << (s & 63));
    if (d->nfree++ == 0) {
        d->next = rd->partial[d->cls];
        rd->partial[d->cls] = pg;
    }
    if (d->nfree == slots_of(d->cls)) {
        partial_remove(rd, pg);
        page_free(rd, pg, 1);
    }
}

static unsigned class_of(size_t bytes)
{
    unsigned c = 0;
    while ((16u << c) < bytes)
        c++;
    return c;
}

/* The allocator proper: no reporting. Returns NULL when the road is full. */
static void *road_alloc(struct road *rd, size_t bytes)
{
    uint32_t n, lo;
    if (bytes <= (16u << (NCLASS - 1)))
        return chunk_alloc(rd, class_of(bytes ? bytes : 1));
    n = (uint32_t)((bytes + PAGE_SZ - 1) / PAGE_SZ);
    lo = page_alloc(rd, n);
    return lo ? page_addr(lo) : NULL;
}

/* A block's size is known only from the directory: no headers. */
static size_t block_usable(const void *p)
{
    struct pgdir *d = &dir[page_of(p)];
    if (d->kind == PG_CHUNK)
        return 16u << d->cls;
    if (d->kind == PG_RUN)
        return (size_t)d->npages * PAGE_SZ;
    die("pointer into a page that holds no block");
    return 0;
}

static void road_free(struct road *rd, void *p)
{
    uint32_t pg = page_of(p);
    if (dir[pg].owner != rd->self_page)
        die("free on a road that does not own the block");
    if (dir[pg].kind == PG_CHUNK)
        chunk_free(rd, pg, p);
    else if (dir[pg].kind == PG_RUN)
        page_free(rd, pg, dir[pg].npages);
    else
        die("free of a pointer into no block");
}

/* ---- Bail: errors unwind to the road's setjmp -------------------------- */
static uint64_t memes;

static __attribute__((noreturn)) void bail(void)
{
    if (R == home)
        die("bail on the home road");
    longjmp(R->jb, 1);
}

/* ---- The public allocation functions (Vere's u3a_* shape) -------------- */
static void *alloc_or_bail(struct road *rd, size_t bytes)
{
    void *p = road_alloc(rd, bytes);
    if (!p) {
        memes++;
        if (rd == home)
            die("home road full");
        bail();
    }
    return p;
}

/* Word-sized. */
static __attribute__((noinline)) void *lm_walloc(uint32_t words)
{
    void *p = alloc_or_bail(R, (size_t)words * 4);
    note_alloc(R, p, (size_t)words * 4, block_usable(p));
    return p;
}

static __attribute__((noinline)) void lm_wfree(void *p)
{
    note_free(p);
    road_free(R, p);
}

/* Resize in place while the block's class (or run) still fits, else move. */
static void *resize(void *p, size_t bytes)
{
    size_t u = block_usable(p);
    void *q;
    if (bytes <= u && (u <= 16 || bytes > u / 2 || u > (16u << (NCLASS - 1)))) {
        note_realloc(R, p, u, p, bytes, u);
        return p;
    }
    q = alloc_or_bail(R, bytes);
    memcpy(q, p, bytes < u ? bytes : u);
    road_free(R, p);
    note_realloc(R, p, u, q, bytes, block_usable(q));
    return q;
}

static __attribute__((noinline)) void *lm_wealloc(void *p, uint32_t words)
{
    return p ? resize(p, (size_t)words * 4) : lm_walloc(words);
}

/* Cells: 16 bytes. Inner roads hand them out from a per-road cache filled
 * in batches; a cached cell is free as far as the program (and vheap) know. */
static __attribute__((noinline)) void *lm_celloc(void)
{
    void *p;
    if (R == home)
        return lm_walloc(4);                /* Vere: u3a_walloc reports it   */
    if (!R->ncache)
        while (R->ncache < CACHE_BATCH)
            R->cache[R->ncache++] = to_post(alloc_or_bail(R, 16));
    p = to_ptr(R->cache[--R->ncache]);
    note_alloc(R, p, 16, 16);               /* from the cache: reported here */
    return p;
}

static __attribute__((noinline)) void lm_cfree(void *p)
{
    if (R == home || R->ncache == CACHE_MAX) {
        lm_wfree(p);                        /* Vere: u3a_wfree reports it    */
        return;
    }
    note_free(p);
    R->cache[R->ncache++] = to_post(p);
}

/* Byte-sized: what GMP, OpenSSL and wasm3 are pointed at in Vere. */
static __attribute__((noinline)) void *lm_malloc(size_t n)
{
    void *p = alloc_or_bail(R, n ? n : 1);
    note_alloc(R, p, n, block_usable(p));
    return p;
}

static __attribute__((noinline)) void *lm_calloc(size_t k, size_t n)
{
    void *p = lm_malloc(k * n);
    memset(p, 0, k * n);
    return p;
}

static __attribute__((noinline)) void *lm_realloc(void *p, size_t n)
{
    if (!p)
        return lm_malloc(n);
    return resize(p, n ? n : 1);
}

static __attribute__((noinline)) void lm_free(void *p)
{
    if (p) {
        note_free(p);
        road_free(R, p);
    }
}

/* ---- Roads ---------------------------------------------------------------- */
static uint32_t roads_pushed, pops_copy, pops_bail, pops_signal, pops_timer;

static void road_init(struct road *rd, uint32_t self, uint32_t north, uint32_t origin,
                      uint32_t limit, uint32_t depth, uint32_t parent_page)
{
    memset(rd, 0, offsetof(struct road, jb));
    rd->self_page = self;
    rd->north = north;
    rd->origin = origin;
    rd->limit = limit;
    rd->depth = depth;
    rd->parent_page = parent_page;
    dir[self].kind = PG_META;
    dir[self].owner = self;
}

/* Carves a road out of the current road's free gap, growing the other way. */
static void road_push(void)
{
    struct road *p = R, *c;
    uint32_t glo, ghi, self, origin, limit;
    uintptr_t blo;
    char name[24];
    if (p->north) {
        glo = p->origin + p->hat;
        ghi = p->self_page;
    } else {
        glo = p->self_page + 1;
        ghi = p->origin - p->hat;
    }
    if (ghi < glo + 4 || p->depth + 1 >= MAX_DEPTH) {
        memes++;
        bail();
    }
    if (p->north) {                         /* child grows south            */
        self = glo;
        origin = ghi;
        limit = ghi - glo - 1;
        blo = (uintptr_t)page_addr(glo + 1);
    } else {                                /* child grows north            */
        self = ghi - 1;
        origin = glo;
        limit = ghi - glo - 1;
        blo = (uintptr_t)page_addr(glo);
    }
    crit_begin();
    c = road_at(self);
    road_init(c, self, !p->north, origin, limit, p->depth + 1, p->self_page);
    c->tags_in = tagdepth;
    c->vh_tags_in = vheap_tag_depth();
    snprintf(name, sizeof name, "road.%u", ++roads_pushed);
    c->heap = vheap_heap_create(name, p->heap, (void *)blo, (size_t)limit * PAGE_SZ);
    c->book = book_new(name, c->heap, p->heap);
    p->frozen = 1;
    R = c;
    if (p == home)
        home_regions();                     /* the gap holds the road now    */
    crit_end();
}

/* ---- Nouns: direct atoms, indirect atoms, refcounted cells -------------- */
typedef uint32_t noun;
struct cell { uint32_t rc, mug; noun head, tail; };
struct atom { uint32_t rc, len; uint32_t w[]; };
_Static_assert(sizeof(struct cell) == 16, "16-byte cells");

#define TAG_PUG 0x80000000u
#define TAG_CELL 0xc0000000u
static inline int is_cat(noun n) { return !(n >> 31); }
static inline int is_cell(noun n) { return (n >> 30) == 3; }
static inline void *box(noun n) { return to_ptr(n & 0x3fffffffu); }
static inline struct cell *cell_of(noun n) { return box(n); }
static inline struct atom *atom_of(noun n) { return box(n); }
static inline noun mk_box(void *p, uint32_t tag) { return tag | to_post(p); }

static int owned_by(const struct road *rd, noun n)
{
    uintptr_t lo, hi, a;
    if (is_cat(n))
        return 0;
    a = (uintptr_t)box(n);
    road_bounds(rd, &lo, &hi);
    return a >= lo && a < hi;
}

/* Refcounts of senior nouns (owned by an outer road) are never touched. */
static noun gain(noun n)
{
    if (owned_by(R, n))
        (*(uint32_t *)box(n))++;
    return n;
}

/* Drops a reference; a cell reaching zero frees its children, recursively. */
static void lose(noun n)
{
    while (owned_by(R, n)) {
        uint32_t *rc = box(n);
        if (--*rc)
            return;
        if (is_cell(n)) {
            struct cell *c = cell_of(n);
            noun h = c->head, t = c->tail;
            lm_cfree(c);
            lose(h);
            n = t;
        } else {
            lm_wfree(rc);
            return;
        }
    }
}

/* Takes ownership of h and t. */
static noun cons(noun h, noun t)
{
    struct cell *c = lm_celloc();
    *c = (struct cell){ .rc = 1, .head = h, .tail = t };
    return mk_box(c, TAG_CELL);
}

static noun mk_atom(const uint32_t *w, uint32_t len)
{
    struct atom *a;
    while (len && !w[len - 1])
        len--;
    if (len == 0)
        return 0;
    if (len == 1 && w[0] < TAG_PUG)
        return w[0];
    a = lm_walloc(2 + len);
    a->rc = 1;
    a->len = len;
    memcpy(a->w, w, len * 4u);
    return mk_box(a, TAG_PUG);
}

/* ---- A bignum library on the byte-sized malloc (GMP's role) ------------ */
struct bn { uint32_t n, cap; uint32_t *d; };

static void bn_init(struct bn *b)
{
    b->cap = 2;
    b->n = 0;
    b->d = lm_calloc(b->cap, 4);
}

static void bn_reserve(struct bn *b, uint32_t cap)
{
    if (cap <= b->cap)
        return;
    b->d = lm_realloc(b->d, (size_t)cap * 4);
    memset(b->d + b->cap, 0, (size_t)(cap - b->cap) * 4);
    b->cap = cap;
}

static void bn_set(struct bn *b, noun a)
{
    if (is_cat(a)) {
        bn_reserve(b, 1);
        b->d[0] = a;
        b->n = a ? 1 : 0;
    } else {
        struct atom *x = atom_of(a);
        bn_reserve(b, x->len);
        memcpy(b->d, x->w, x->len * 4u);
        b->n = x->len;
    }
}

static void bn_add(struct bn *r, const struct bn *a, const struct bn *b)
{
    uint32_t n = (a->n > b->n ? a->n : b->n) + 1;
    uint64_t carry = 0;
    bn_reserve(r, n);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t s = carry + (i < a->n ? a->d[i] : 0) + (i < b->n ? b->d[i] : 0);
        r->d[i] = (uint32_t)s;
        carry = s >> 32;
    }
    r->n = n;
}

static void bn_mul(struct bn *r, const struct bn *a, const struct bn *b)
{
    uint32_t n = a->n + b->n;
    uint32_t *t = lm_calloc(n ? n : 1, 4);  /* scratch, like GMP's temps   */
    for (uint32_t i = 0; i < a->n; i++) {
        uint64_t carry = 0;
        for (uint32_t j = 0; j < b->n; j++) {
            uint64_t s = (uint64_t)a->d[i] * b->d[j] + t[i + j] + carry;
            t[i + j] = (uint32_t)s;
            carry = s >> 32;
        }
        t[i + b->n] = (uint32_t)carry;
    }
    bn_reserve(r, n ? n : 1);
    memcpy(r->d, t, (size_t)n * 4);
    r->n = n;
    lm_free(t);
}

static noun bn_noun(const struct bn *b)
{
    return mk_atom(b->d, b->n);
}

static void bn_clear(struct bn *b)
{
    lm_free(b->d);
    b->d = NULL;
}

/* ---- Jets: each runs under its own tag ---------------------------------- */
/* A jet of two bignum operands: r = op(a, b), scratch freed. */
static noun jet_bn2(const char *tag, void (*op)(struct bn *, const struct bn *, const struct bn *),
                    noun a, noun b)
{
    struct bn x, y, z;
    noun r;
    tag_push(tag);
    bn_init(&x);
    bn_init(&y);
    bn_init(&z);
    bn_set(&x, a);
    bn_set(&y, b);
    op(&z, &x, &y);
    r = bn_noun(&z);
    bn_clear(&x);
    bn_clear(&y);
    bn_clear(&z);
    tag_pop();
    return r;
}

static noun jet_add(noun a, noun b)
{
    return jet_bn2("jet:add", bn_add, a, b);
}

static noun jet_mul(noun a, noun b)
{
    return jet_bn2("jet:mul", bn_mul, a, b);
}

/* Decrement: 0 has no predecessor, and the computation bails. */
static noun jet_dec(noun a)
{
    noun r;
    tag_push("jet:dec");
    if (a == 0)
        bail();                             /* leaves jet:dec on the stack  */
    r = is_cat(a) ? a - 1 : gain(a);
    tag_pop();
    return r;
}

/* A list of n fibonacci numbers, big ones included. */
static noun fib_list(uint32_t n)
{
    noun a = 1, b = 1, list = 0;
    for (uint32_t i = 0; i < n; i++) {
        noun c = jet_add(a, b);
        lose(a);
        a = b;
        b = c;
        list = cons(gain(c), list);
    }
    lose(a);
    lose(b);
    return list;
}

static noun fact_list(uint32_t n)
{
    noun f = 1, list = 0;
    for (uint32_t k = 1; k <= n; k++) {
        noun g = jet_mul(f, k);
        lose(f);
        f = g;
        list = cons(gain(f), list);
    }
    lose(f);
    return list;
}

/* A "vector" atom grown word by word with wealloc. */
static noun grow_vector(uint32_t words)
{
    struct atom *a;
    tag_push("jet:vector");
    a = lm_walloc(3);
    for (uint32_t i = 1; i <= words; i++) {
        a = lm_wealloc(a, 2 + i);
        a->w[i - 1] = i * 2654435761u | 1u;
    }
    a->rc = 1;
    a->len = words;
    tag_pop();
    return mk_box(a, TAG_PUG);
}

/* A large atom: pages of its own. */
static noun big_atom(uint32_t words, uint32_t seed)
{
    struct atom *a = lm_walloc(2 + words);
    a->rc = 1;
    a->len = words;
    for (uint32_t i = 0; i < words; i++)
        a->w[i] = seed + i + 1;
    return mk_box(a, TAG_PUG);
}

/* ---- Copying a result out of a popped road ----------------------------- */
struct range { uintptr_t lo, hi; };

static noun copy_out(noun n, const struct range *junior)
{
    uintptr_t a;
    if (is_cat(n))
        return n;
    a = (uintptr_t)box(n);
    if (a < junior->lo || a >= junior->hi)
        return gain(n);                     /* senior: share it             */
    if (is_cell(n)) {
        struct cell *c = cell_of(n);
        noun h = copy_out(c->head, junior);
        return cons(h, copy_out(c->tail, junior));
    }
    return mk_atom(atom_of(n)->w, atom_of(n)->len);
}

/* Leaves the current road, Vere's u3m_love: the one way out, for a result
 * (copy: r is copied to the parent), a bail and a signal (copy 0) alike.
 * The road's heap is destroyed right after the switch (its memory stays
 * intact for the copy; the parent must not grow over it meanwhile), and
 * the tags pushed on it and skipped by a longjmp are unwound. */
static noun love(noun r, int copy)
{
    struct road *c = R, *p = road_at(c->parent_page);
    struct range jr;
    uintptr_t lo, hi;
    uint32_t saved_limit;
    noun out = 0;

    crit_begin();
    road_bounds(c, &lo, &hi);
    jr = (struct range){ lo, hi };
    p->frozen = 0;
    R = p;
    vheap_heap_destroy(c->heap);
    book_destroy(c->book);
    tags_unwind(c->tags_in, c->vh_tags_in);
    if (p == home)
        home_regions();
    crit_end();
    if (copy) {
        saved_limit = p->limit;
        if (p->north)
            p->limit = page_of((void *)lo) - p->origin;
        else
            p->limit = p->origin - page_of((void *)hi);
        out = copy_out(r, &jr);
        p->limit = saved_limit;
    }
    return out;
}

/* Runs fn(arg) on a new road: the result is copied out (0), or the
 * computation bails and longjmps here (-1); a signal unwinds every inner
 * road from the event loop (never returns here). All through love(). */
typedef noun (*comp_fn)(noun arg);

static int virtualize(comp_fn fn, noun arg, noun *out)
{
    noun r;

    road_push();
    if (setjmp(R->jb)) {
        love(0, 0);
        pops_bail++;
        return -1;
    }
    r = fn(arg);
    *out = love(r, 1);
    pops_copy++;
    return 0;
}

/* ---- Computations run on inner roads ------------------------------------- */
static noun comp_fact(noun arg)
{
    noun l = fact_list(arg), inner = 0, r;
    /* a nested road whose result comes back out */
    if (virtualize((comp_fn)fib_list, 20, &inner))
        inner = 0;
    r = cons(l, inner);
    /* scratch that dies with the road, never freed */
    (void)grow_vector(40);
    (void)big_atom(3000, arg);
    return r;
}

static noun comp_bail(noun arg)
{
    noun junk = fib_list(arg);
    (void)big_atom(5000, 7);
    tag_push("jet:crash");
    (void)cons(junk, jet_dec(0));           /* bails                         */
    return 0;
}

static noun comp_growth(noun arg)
{
    struct bn x;
    noun r;
    tag_push("jet:grow");
    bn_init(&x);
    for (uint32_t i = 0; i < arg; i++) {  /* realloc in place, then moving */
        bn_reserve(&x, x.cap + 3);
        x.d[x.cap - 1] = i + 1;
        x.n = x.cap;
    }
    r = bn_noun(&x);
    bn_clear(&x);
    tag_pop();
    raise(SIGUSR2);                         /* a sample while home is frozen */
    return cons(r, grow_vector(arg));
}

/* ---- Signals: a sampler on the home road, and interrupts ---------------- */
#define MAX_SAMPLES 64u
static noun samples[MAX_SAMPLES];
static uint32_t nsamples, samples_taken, samples_skipped;

/* Vere's sampling profiler allocates on the home road from SIGPROF; the
 * home road is frozen then, so only its free slots can be used. */
static void on_sample(int sig)
{
    struct road *saved = R;
    uint32_t w[4] = { 0x5a5a5a5a, nsamples + 1, 0, 1 };
    void *p;
    (void)sig;
    if (nsamples == MAX_SAMPLES)
        return;
    tag_push("sampler");
    p = road_alloc(home, 24);
    if (!p) {
        samples_skipped++;
    } else {
        struct atom *a = p;
        note_alloc(home, p, 24, block_usable(p));
        a->rc = 1;
        a->len = 4;
        memcpy(a->w, w, sizeof w);
        samples[nsamples++] = mk_box(a, TAG_PUG);
        samples_taken++;
    }
    tag_pop();
    R = saved;
}

static sigjmp_buf intr_env;

/* An interrupt unwinds to the event loop, which leaves every inner road
 * through love(), innermost first (Vere: _cm_signal_recover). */
static void on_interrupt(int sig)
{
    (void)sig;
    siglongjmp(intr_env, 1);
}

static noun comp_interrupted(noun arg)
{
    noun junk = fact_list(12);
    noun dummy;
    tag_push("jet:spin");
    if (arg > 0) {
        (void)virtualize(comp_interrupted, arg - 1, &dummy);
    } else {
        (void)grow_vector(10);
        raise(SIGUSR1);
    }
    tag_pop();
    return junk;
}

static void event_interrupt(void)
{
    noun dummy;
    if (sigsetjmp(intr_env, 1)) {
        while (R != home)                   /* innermost first              */
            love(0, 0);
        pops_signal++;
        return;
    }
    road_push();
    (void)virtualize(comp_interrupted, 1, &dummy);  /* roads 2 and 3 */
    die("interrupt did not unwind");
}

/* ---- The timer (--timer): a computation that runs until SIGVTALRM ------
 * Like Vere's event timeout: the event runs on inner roads until the
 * interval timer fires and the handler siglongjmps to the event loop,
 * wherever the computation is (allocating, in vheap's calls); the loop
 * leaves every inner road through love(). */
static int timer_on;
static uint64_t timer_events, timer_jumps_deferred;

static void on_timer(int sig)
{
    (void)sig;
    if (!timer_armed)
        return;
    if (in_crit) {
        timer_pending = 1;
        timer_jumps_deferred++;
        return;
    }
    timer_armed = 0;
    siglongjmp(timer_env, 1);
}

static noun comp_spin(noun arg)
{
    noun keep = 0, r;
    tag_push("jet:spin-timed");
    for (uint32_t i = 0;; i++) {            /* until the timer fires        */
        noun l = fact_list(8 + i % 8);
        if (virtualize((comp_fn)fib_list, 10 + arg % 10, &r) == 0)
            l = cons(r, l);
        (void)big_atom(200 + i % 300, i);   /* scratch, dies with the road  */
        keep = cons(l, i % 64 ? keep : 0);
        if (i % 64 == 63) {                 /* drop most of it again        */
            lose(keep);
            keep = 0;
        }
    }
    return 0;
}

static void event_timed(uint32_t e)
{
    struct itimerval it = { { 0, 2000 }, { 0, 2000 } };   /* 2 ms of CPU   */
    noun dummy;
    timer_events++;
    if (sigsetjmp(timer_env, 1)) {
        setitimer(ITIMER_VIRTUAL, &(struct itimerval){ 0 }, NULL);
        while (R != home)
            love(0, 0);
        pops_timer++;
        return;
    }
    road_push();
    timer_pending = 0;
    timer_armed = 1;
    setitimer(ITIMER_VIRTUAL, &it, NULL);
    (void)virtualize(comp_spin, e, &dummy);
    die("the timed computation returned");
}

/* ---- Dirty tracking: clean pages read-only, SIGSEGV marks them dirty ---- */
static uint8_t dirty[NPAGES];
static uint64_t dirty_faults, snapshots;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    uintptr_t a = (uintptr_t)si->si_addr;
    struct sigaction dfl;
    (void)uc;
    if (a >= LOOM_BASE && a < LOOM_BASE + LOOM_SIZE) {
        uint32_t pg = (uint32_t)((a - LOOM_BASE) / PAGE_SZ);
        if (!dirty[pg]) {
            dirty[pg] = 1;
            dirty_faults++;
            if (mprotect(page_addr(pg), PAGE_SZ, PROT_READ | PROT_WRITE) == 0)
                return;
        }
    }
    /* not ours: let the fault kill us the ordinary way */
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
}

/* After an event commits, every page is clean again. */
static void snapshot(void)
{
    memset(dirty, 0, sizeof dirty);
    if (mprotect((void *)LOOM_BASE, LOOM_SIZE, PROT_READ))
        die("mprotect failed");
    snapshots++;
}

/* ---- Meld: copy everything out to system malloc, wipe, copy back ------- */
struct jam { uint32_t *w; size_t n, cap; };

static void jam_put(struct jam *j, uint32_t v)
{
    if (j->n == j->cap) {
        j->cap = j->cap ? j->cap * 2 : 4096;
        j->w = realloc(j->w, j->cap * 4);
        if (!j->w)
            die("out of memory");
    }
    j->w[j->n++] = v;
}

static void jam(struct jam *j, noun n)
{
    while (is_cell(n)) {
        jam_put(j, 2);
        jam(j, cell_of(n)->head);
        n = cell_of(n)->tail;
    }
    if (is_cat(n)) {
        jam_put(j, 0);
        jam_put(j, n);
    } else {
        struct atom *a = atom_of(n);
        jam_put(j, 1);
        jam_put(j, a->len);
        for (uint32_t i = 0; i < a->len; i++)
            jam_put(j, a->w[i]);
    }
}

static noun cue(const uint32_t **pp)
{
    const uint32_t *p = *pp;
    noun r;
    if (*p == 2) {
        noun h;
        *pp = p + 1;
        h = cue(pp);
        return cons(h, cue(pp));
    }
    if (*p == 0) {
        *pp = p + 2;
        return p[1];
    }
    r = mk_atom(p + 2, p[1]);
    *pp = p + 2 + p[1];
    return r;
}

/* ---- Regions: what of the loom is not heap ------------------------------
 * The directory pages are the allocator's metadata (declared once, at
 * start); the gap above the home heap, with home's own page at the top, is
 * unused; while an inner road fills the gap, only its struct page and
 * home's are left of it (the road's bounds are carved by its own heap).
 * Declared again whenever the top moves or a road comes or goes, and at
 * every event whether anything changed or not, as the Vere patch does: the
 * shim writes only the changes. */
static uint64_t region_calls, region_changes;
static struct {
    unsigned kind;
    const void *base;
    size_t size;
} region_was[4];                            /* home's regions 1..3, as declared */

/* vheap_region for home, counting the calls and those that change the
 * region (what the capture should hold: the shim writes only changes). */
static void declare_region(unsigned id, unsigned kind, const void *base, size_t size)
{
    if (!size)
        kind = 0, base = NULL;
    region_calls++;
    if (region_was[id].kind != kind || region_was[id].base != base ||
        region_was[id].size != size)
        region_changes++;
    region_was[id].kind = kind;
    region_was[id].base = base;
    region_was[id].size = size;
    vheap_region(home->heap, id, kind, base, size);
}

static void home_regions(void)
{
    uint32_t top;
    if (!home)                              /* heap 0 (no vheap): counted alike */
        return;
    top = home->origin + home->hat;
    if (home->frozen) {
        declare_region(2, VHEAP_REGION_UNUSED, page_addr(top), PAGE_SZ);
        declare_region(3, VHEAP_REGION_UNUSED, page_addr(home->self_page), PAGE_SZ);
    } else {
        declare_region(2, VHEAP_REGION_UNUSED, page_addr(top),
                       (size_t)(NPAGES - top) * PAGE_SZ);
        declare_region(3, 0, NULL, 0);
    }
}

/* ---- Vere's system-malloc leaks, copied on purpose ----------------------
 * u3j_boot mallocs the hot jet table (u3D.ray_u) at boot and again at
 * every |meld without freeing the old one; u3a_pack_done never frees the
 * pack bitmap (u3a_Gack.bit_w). Here with the same shapes, so that
 * docs/vere.md's worked example can be checked on a capture. */
void *jet_table, *pack_bits;               /* global: kept by the compiler  */

static __attribute__((noinline)) void jets_boot(void)
{
    jet_table = malloc(344u << 10);         /* the old one is lost           */
    if (!jet_table)
        die("out of memory");
    memset(jet_table, 0, 4096);
}

#define NROOTS 48u
static noun roots[NROOTS];
static uint64_t melds, resync_frees;

static void home_reset(void)
{
    for (uint32_t i = 0; i < home->hat; i++)
        dir[phys_lo(home, i, 1)].kind = PG_FREE;
    home->hat = 0;
    home->nruns = 0;
    memset(home->partial, 0, sizeof home->partial);
    home_regions();
}

static void meld(void)
{
    struct jam j = { 0 };
    const uint32_t *p;
    uint32_t n = 0, i;
    vheap_mark("meld begin");
    for (i = 0; i < NROOTS; i++)
        jam(&j, roots[i]);
    for (i = 0; i < nsamples; i++)
        jam(&j, samples[i]);
    /* re-sync: every live block of the loom is reported freed, the loom is
     * wiped, and the copies are reported as new allocations */
    for (i = 0; i < SH_CAP; i++)
        if (sh[i].addr && sh[i].book == home->book)
            sh_scratch[n++] = sh[i].addr;
    for (i = 0; i < n; i++)
        note_free((void *)(uintptr_t)sh_scratch[i]);
    resync_frees += n;
    home_reset();
    tag_push("meld");
    p = j.w;
    for (i = 0; i < NROOTS; i++)
        roots[i] = cue(&p);
    for (i = 0; i < nsamples; i++)
        samples[i] = cue(&p);
    tag_pop();
    free(j.w);
    jets_boot();
    melds++;
    vheap_mark("meld end");
}

/* ---- Pack: compaction in place, live blocks move ------------------------ */
struct fmap { uint32_t cap, n; uint32_t *k, *v; };

static void fmap_init(struct fmap *m, uint32_t want)
{
    m->cap = 64;
    while (m->cap < want * 2)
        m->cap *= 2;
    m->n = 0;
    m->k = calloc(m->cap, 4);               /* pack's tables live on malloc */
    m->v = calloc(m->cap, 4);
    if (!m->k || !m->v)
        die("out of memory");
}

static uint32_t *fmap_slot(struct fmap *m, uint32_t k)
{
    uint32_t i = (k * 2654435761u) & (m->cap - 1);
    while (m->k[i] && m->k[i] != k)
        i = (i + 1) & (m->cap - 1);
    return &m->k[i];
}

static void fmap_put(struct fmap *m, uint32_t k, uint32_t v)
{
    uint32_t *s = fmap_slot(m, k);
    if (!*s)
        m->n++;
    *s = k;
    m->v[s - m->k] = v;
}

static uint32_t fmap_get(struct fmap *m, uint32_t k)
{
    uint32_t *s = fmap_slot(m, k);
    return *s ? m->v[s - m->k] : 0;
}

static void fmap_free(struct fmap *m)
{
    free(m->k);
    free(m->v);
}

static noun fwd(struct fmap *m, noun n)
{
    uint32_t to;
    if (is_cat(n))
        return n;
    to = fmap_get(m, n & 0x3fffffffu);
    return to ? (n & 0xc0000000u) | to : n;
}

static uint64_t packs, pack_moves;

/* Rewrites every pointer reachable from the roots (at the old addresses)
 * so that it names the new address. */
static void pack_rewrite(struct fmap *f)
{
    struct fmap seen;
    noun *stk;
    size_t top = 0, cap = 1024;
    fmap_init(&seen, sh_count);
    stk = malloc(cap * sizeof *stk);
    if (!stk)
        die("out of memory");
    for (uint32_t i = 0; i < NROOTS; i++) {
        stk[top++] = roots[i];
        roots[i] = fwd(f, roots[i]);
        while (top) {
            noun n = stk[--top];
            struct cell *c;
            if (!is_cell(n) || fmap_get(&seen, n & 0x3fffffffu))
                continue;
            fmap_put(&seen, n & 0x3fffffffu, 1);
            c = cell_of(n);
            if (top + 2 > cap) {
                cap *= 2;
                stk = realloc(stk, cap * sizeof *stk);
                if (!stk)
                    die("out of memory");
            }
            stk[top++] = c->head;
            stk[top++] = c->tail;
            c->head = fwd(f, c->head);
            c->tail = fwd(f, c->tail);
        }
    }
    for (uint32_t i = 0; i < nsamples; i++)
        samples[i] = fwd(f, samples[i]);
    free(stk);
    fmap_free(&seen);
}

/* The home road's fragmentation by loomsim's own books, in the terms of
 * vheap's docs/fragmentation.md (a heap with bounds: holes are the gaps
 * between its live blocks, from the end of the directory pages to the top
 * of the heap: the directory and the gap above are declared regions; span = highest block end - lowest block start; reclaim = span -
 * usable: what sliding every block down to the first would free), for
 * the frag test to compare with `frag --at 'mark:pack begin'` / 'pack end'.
 * Heapsort: no allocation, so the books do not show in the capture. */
static void sift_down(uint64_t *a, uint32_t j, uint32_t n)
{
    uint32_t k;
    uint64_t t;
    for (; (k = 2 * j + 1) < n; j = k) {
        if (k + 1 < n && a[k + 1] > a[k])
            k++;
        if (a[j] >= a[k])
            return;
        t = a[j], a[j] = a[k], a[k] = t;
    }
}

static void frag_books(const char *phase)
{
    uint64_t *a = sh_scratch, t, usable = 0, freeb = 0, holes = 0, largest = 0;
    uint64_t prev = (uint64_t)(uintptr_t)page_addr(DIR_PAGES);
    uint64_t top = (uint64_t)(uintptr_t)page_addr(home->origin + home->hat);
    uint64_t pages = 0, last_page = UINT64_MAX;
    uint32_t n = 0, i;
    for (i = 0; i < SH_CAP; i++)
        if (sh[i].addr && sh[i].book == home->book)
            a[n++] = sh[i].addr;
    for (i = n / 2; i > 0; i--)           /* heapsort, ascending */
        sift_down(a, i - 1, n);
    for (i = n; i > 1; i--) {
        t = a[0], a[0] = a[i - 1], a[i - 1] = t;
        sift_down(a, 0, i - 1);
    }
    for (i = 0; i <= n; i++) {
        uint64_t next = i < n ? a[i] : top, g = next - prev;
        if (next > prev) {
            freeb += g;
            holes++;
            if (g > largest)
                largest = g;
        }
        if (i == n)
            break;
        uint64_t u = block_usable((void *)a[i]);
        usable += u;
        prev = a[i] + u;
        for (uint64_t pg = a[i] / 4096; pg <= (prev - 1) / 4096; pg++)
            if (pg != last_page) {
                pages++;
                last_page = pg;
            }
    }
    uint64_t span = n ? prev - a[0] : 0;
    printf("loomsim frag pid=%d phase=%s id=%d blocks=%u usable=%llu free=%llu holes=%llu "
           "largest=%llu span=%llu reclaim=%llu pages=%llu\n",
           (int)getpid(), phase, home->heap, n, (unsigned long long)usable,
           (unsigned long long)freeb, (unsigned long long)holes, (unsigned long long)largest,
           (unsigned long long)span, (unsigned long long)(span > usable ? span - usable : 0),
           (unsigned long long)pages);
}

/* Then, as Vere's _pack_move does, every used page slides down over the
 * free pages below it: whole pages copied, one vheap_move_range each. */
static uint64_t page_moves;

static void pack_pages(void)
{
    uint32_t n = home->hat, used = 0, i, pg, to;
    uint32_t *newpos = malloc(sizeof *newpos * (n + 1));
    struct fmap f;
    if (!newpos)
        die("out of memory");
    for (i = 0; i < n; i++)                 /* a run's pages stay together   */
        newpos[i] = dir[phys_lo(home, i, 1)].kind == PG_FREE ? UINT32_MAX : used++;
    fmap_init(&f, sh_count);
    for (uint32_t k = 0; k < SH_CAP; k++) {
        if (!sh[k].addr || sh[k].book != home->book)
            continue;
        i = rel_of(home, page_of((void *)sh[k].addr), 1);
        if (newpos[i] != i)
            fmap_put(&f, to_post((void *)sh[k].addr),
                     to_post((void *)sh[k].addr) - (i - newpos[i]) * (PAGE_SZ / 4));
    }
    pack_rewrite(&f);
    for (i = 0; i < n; i++) {
        if (newpos[i] == UINT32_MAX || newpos[i] == i)
            continue;
        pg = phys_lo(home, i, 1);
        to = phys_lo(home, newpos[i], 1);
        memcpy(page_addr(to), page_addr(pg), PAGE_SZ);
        dir[to] = dir[pg];
        dir[pg].kind = PG_FREE;
        note_move_range(page_addr(pg), page_addr(to), PAGE_SZ);
        page_moves++;
    }
    home->hat = used;
    home->nruns = 0;
    memset(home->partial, 0, sizeof home->partial);
    for (i = used; i-- > 0;) {              /* partial lists, low pages first */
        struct pgdir *d = &dir[phys_lo(home, i, 1)];
        d->next = 0;
        if (d->kind == PG_CHUNK && d->nfree) {
            d->next = home->partial[d->cls];
            home->partial[d->cls] = phys_lo(home, i, 1);
        }
    }
    home_regions();
    fmap_free(&f);
    free(newpos);
}

static void pack(void)
{
    struct fmap f;
    uint32_t cls, pg, s, nl, nf, i, j, k;
    uint32_t *live, *hole, *mv_from, *mv_to, nmv = 0;

    vheap_mark("pack begin");
    frag_books("before");
    pack_bits = calloc(NPAGES / 32, 4);     /* never freed, like Vere's      */
    if (!pack_bits)
        die("out of memory");
    fmap_init(&f, sh_count);
    live = malloc(sizeof *live * (sh_count + 1));
    hole = malloc(sizeof *hole * NPAGES * 64);
    mv_from = malloc(sizeof *mv_from * (sh_count + 1));
    mv_to = malloc(sizeof *mv_to * (sh_count + 1));
    if (!live || !hole || !mv_from || !mv_to)
        die("out of memory");
    /* plan: per class, the highest live slots go to the lowest holes */
    for (cls = 0; cls < NCLASS; cls++) {
        nl = nf = 0;
        for (i = 0; i < home->hat; i++) {
            pg = phys_lo(home, i, 1);
            if (dir[pg].kind != PG_CHUNK || dir[pg].cls != cls)
                continue;
            for (s = 0; s < slots_of(cls); s++) {
                post_t w = to_post(page_addr(pg) + ((size_t)s << (cls + 4)));
                if (dir[pg].bits[s / 64] & (1ull << (s & 63)))
                    live[nl++] = w;
                else if (nf < NPAGES * 64)
                    hole[nf++] = w;
            }
        }
        for (i = 0, j = nl; i < nf && j > 0 && hole[i] < live[j - 1]; i++, j--) {
            fmap_put(&f, live[j - 1], hole[i]);
            mv_from[nmv] = live[j - 1];
            mv_to[nmv++] = hole[i];
        }
    }
    pack_rewrite(&f);
    /* move */
    for (k = 0; k < nmv; k++) {
        void *from = to_ptr(mv_from[k]), *to = to_ptr(mv_to[k]);
        struct pgdir *df = &dir[page_of(from)], *dt = &dir[page_of(to)];
        uint32_t sf = (uint32_t)(((uint8_t *)from - page_addr(page_of(from))) >> (df->cls + 4));
        uint32_t st = (uint32_t)(((uint8_t *)to - page_addr(page_of(to))) >> (dt->cls + 4));
        memcpy(to, from, 16u << df->cls);
        dt->bits[st / 64] |= 1ull << (st & 63);
        dt->nfree--;
        df->bits[sf / 64] &= ~(1ull << (sf & 63));
        df->nfree++;
        note_move(from, to);
    }
    pack_moves += nmv;
    /* rebuild the partial lists low pages first; release emptied pages */
    memset(home->partial, 0, sizeof home->partial);
    for (i = home->hat; i-- > 0;) {
        pg = phys_lo(home, i, 1);
        if (i >= home->hat || dir[pg].kind != PG_CHUNK)
            continue;
        if (dir[pg].nfree == slots_of(dir[pg].cls)) {
            page_free(home, pg, 1);
        } else if (dir[pg].nfree) {
            dir[pg].next = home->partial[dir[pg].cls];
            home->partial[dir[pg].cls] = pg;
        }
    }
    free(live);
    free(hole);
    free(mv_from);
    free(mv_to);
    fmap_free(&f);
    pack_pages();
    packs++;
    frag_books("after");
    vheap_mark("pack end");
}

/* ---- The leak and the mark-and-sweep that finds it ---------------------- */
static uintptr_t leak_first_addr;

static __attribute__((noinline)) void make_leak(void)
{
    noun tmp[40], leak;
    uint32_t w[70];
    for (uint32_t i = 0; i < 70; i++)
        w[i] = 0xdead0000u + i;
    tag_push("jet:leaky");
    /* neighbours in the same class, freed again, leave holes below it */
    for (uint32_t i = 0; i < 40; i++)
        tmp[i] = mk_atom(w, 70);
    leak = mk_atom(w, 70);                  /* 288 bytes: the 512 B class */
    gain(leak);                             /* the bug: one gain too many  */
    for (uint32_t i = 0; i < 40; i++)
        lose(tmp[i]);
    lose(leak);                             /* rc 2 -> 1, and dropped      */
    tag_pop();
    leak_first_addr = (uintptr_t)box(leak);
}

static void mark_noun(noun n)
{
    while (!is_cat(n)) {
        struct shadow *s = sh_find((uintptr_t)box(n));
        if (!s)
            die("reachable noun is not a live block");
        if (s->mark)
            return;
        s->mark = 1;
        if (!is_cell(n))
            return;
        mark_noun(cell_of(n)->head);
        n = cell_of(n)->tail;
    }
}

struct leak { uintptr_t addr; uint32_t size; };
static struct leak leaks[8];
static uint32_t nleaks;

static void mark_all(void)
{
    for (uint32_t i = 0; i < SH_CAP; i++)
        sh[i].mark = 0;
    for (uint32_t i = 0; i < NROOTS; i++)
        mark_noun(roots[i]);
    for (uint32_t i = 0; i < nsamples; i++)
        mark_noun(samples[i]);
}

/* Blocks nothing points to, as a buggy jet leaves them: 40 atoms of the
 * 1 KiB class (16 a page: at least one page holds only these), an atom of
 * three pages and two cells. Returns how many. */
static uint32_t make_page_leaks(void)
{
    uint32_t w[200];
    for (uint32_t i = 0; i < 200; i++)
        w[i] = 0x1eaf0000u + i;
    tag_push("jet:forgetful");
    for (uint32_t i = 0; i < 40; i++)
        (void)mk_atom(w, 200);              /* 808 bytes                     */
    (void)big_atom(9000, 77);               /* 36008 bytes: three pages      */
    (void)cons(1, 2);
    (void)cons(3, 4);
    tag_pop();
    return 43;
}

/* Vere's sweep (_sweep_directory): after marking, the allocator frees
 * every unmarked block itself: whole page runs and chunk pages with no
 * marked block at once (one vheap_free_range), other chunks one by one.
 * Returns how many blocks it freed. */
static uint64_t swept_blocks;

static uint32_t sweep_free(void)
{
    uint32_t freed = 0;
    mark_all();
    for (uint32_t i = 0; i < home->hat; i++) {
        uint32_t pg = phys_lo(home, i, 1), used = 0, marked = 0;
        struct pgdir *d = &dir[pg];
        struct shadow *sp;
        if (d->kind == PG_RUN) {
            if ((sp = sh_find((uintptr_t)page_addr(pg))) && !sp->mark) {
                note_free_range(page_addr(pg), (size_t)d->npages * PAGE_SZ);
                page_free(home, pg, d->npages);
                freed++;
            }
            continue;
        }
        if (d->kind != PG_CHUNK)
            continue;
        for (uint32_t k = 0; k < slots_of(d->cls); k++)
            if (d->bits[k / 64] & (1ull << (k & 63))) {
                used++;
                sp = sh_find((uintptr_t)page_addr(pg) + ((uintptr_t)k << (d->cls + 4)));
                marked += sp && sp->mark;
            }
        if (used && !marked) {
            note_free_range(page_addr(pg), PAGE_SZ);
            partial_remove(home, pg);
            page_free(home, pg, 1);
            freed += used;
            continue;
        }
        for (uint32_t k = 0; used != marked && k < slots_of(d->cls); k++) {
            uint8_t *a = page_addr(pg) + ((size_t)k << (d->cls + 4));
            if (!(d->bits[k / 64] & (1ull << (k & 63))) || !(sp = sh_find((uintptr_t)a)) ||
                sp->mark)
                continue;
            note_free(a);
            chunk_free(home, pg, a);        /* may free the page, last       */
            freed++;
            used--;
        }
    }
    swept_blocks += freed;
    return freed;
}

static void sweep(void)
{
    mark_all();
    nleaks = 0;
    for (uint32_t i = 0; i < SH_CAP; i++)
        if (sh[i].addr && sh[i].book == home->book && !sh[i].mark && nleaks < 8)
            leaks[nleaks++] = (struct leak){ sh[i].addr, sh[i].size };
}

/* The allocator's own view must agree with the books. */
static void verify_home(void)
{
    uint64_t blocks = 0;
    for (uint32_t i = 0; i < home->hat; i++) {
        struct pgdir *d = &dir[phys_lo(home, i, 1)];
        if (d->kind == PG_CHUNK)
            blocks += slots_of(d->cls) - d->nfree;
        else if (d->kind == PG_RUN)
            blocks++;
    }
    if (blocks != books[home->book].live_blocks) {
        fprintf(stderr, "loomsim: allocator holds %llu blocks, books say %llu\n",
                (unsigned long long)blocks, (unsigned long long)books[home->book].live_blocks);
        die("books disagree with the allocator");
    }
}

/* ---- Events --------------------------------------------------------------- */
static uint64_t marks;
static uint32_t rng = 12345u;

static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static void set_root(uint32_t i, noun n)
{
    lose(roots[i % NROOTS]);
    roots[i % NROOTS] = n;
}

static void large_blocks(uint32_t e)
{
    noun a = big_atom(4000 + rnd() % 4000, e);  /* 1..3 pages each */
    noun b = big_atom(9000, e + 1);
    noun c = big_atom(5000, e + 2);
    lose(b);                                /* a hole in the middle         */
    lose(c);                                /* coalesces, the top shrinks   */
    set_root(e, a);
}

static void run_event(uint32_t e)
{
    char label[32];
    noun r;
    snprintf(label, sizeof label, "event %u", e);
    home_regions();                         /* as Vere's patch: changed or not */
    vheap_mark(label);
    marks++;
    switch (e % 6) {
    case 0:
        set_root(e, fib_list(30 + rnd() % 40));
        break;
    case 1:
        if (virtualize(comp_fact, 10 + rnd() % 25, &r) == 0)
            set_root(e, r);
        break;
    case 2:
        if (virtualize(comp_bail, 15, &r) == 0)
            die("a bailing computation returned");
        set_root(e, cons(e, 0));
        break;
    case 3:
        large_blocks(e);
        break;
    case 4:
        if (e % 12 == 4)
            event_interrupt();
        else if (virtualize(comp_growth, 20 + rnd() % 20, &r) == 0)
            set_root(e, r);
        break;
    case 5: {
        noun l = 0;
        tag_push("jet:churn");
        for (uint32_t i = 0; i < 200; i++)
            l = cons(rnd() & 0x7fffffffu, l);
        tag_pop();
        set_root(e, l);
        raise(SIGUSR2);                     /* a profiling sample           */
        break;
    }
    }
    if (e % 8 == 7)
        snapshot();
}

/* Leaves the loom full of holes for pack: atoms of mixed sizes in a list,
 * every other one dropped. */
static void fragment(void)
{
    noun all = 0, kept = 0, below;
    uint32_t w[32], i, k;
    tag_push("jet:frag");
    below = big_atom(12000, 5);             /* 3 pages, freed at the end:    */
    for (i = 0; i < 400; i++) {             /* pack slides the pages above   */
        for (k = 0; k < 32; k++)
            w[k] = rnd() | 1u;
        all = cons(mk_atom(w, 2 + i % 30), all);
    }
    i = 0;
    for (noun l = all; l; l = cell_of(l)->tail)
        if (i++ % 2)
            kept = cons(gain(cell_of(l)->head), kept);
    lose(all);
    lose(below);
    tag_pop();
    set_root(NROOTS - 1, kept);
}

/* ---- System malloc from threads -------------------------------------------- */
#define NTHREADS 3
#define THREAD_OPS 4000u
struct worker { int index; char label[24]; uint64_t mallocs, frees; pthread_t t; };
static struct worker threads[NTHREADS];

static void *thread_main(void *arg)
{
    struct worker *w = arg;
    void *ring[32] = { 0 };
    uint32_t seed = 777u + (uint32_t)w->index;
    sigset_t vt;
    sigemptyset(&vt);                       /* the timer's jumps are the     */
    sigaddset(&vt, SIGVTALRM);              /* main thread's business        */
    pthread_sigmask(SIG_BLOCK, &vt, NULL);
    vheap_tag_push(w->label);
    for (uint32_t i = 0; i < THREAD_OPS; i++) {
        seed = seed * 1103515245u + 12345u;
        if (ring[i % 32]) {
            free(ring[i % 32]);
            w->frees++;
        }
        ring[i % 32] = malloc(1 + (seed >> 16) % 2048);
        if (!ring[i % 32])
            abort();
        memset(ring[i % 32], 1, 1);
        w->mallocs++;
    }
    for (uint32_t i = 0; i < 32; i++)
        if (ring[i]) {
            free(ring[i]);
            w->frees++;
        }
    vheap_tag_pop();
    return NULL;
}

/* ---- A pool annotated for heaptrack -------------------------------------------
 * The way heaptrack_api.h's dlsym form reports a pool from a main
 * executable; vheap exports the same functions and files the blocks under a
 * heap of their own ("heaptrack-api"). */
static void heaptrack_pool(void)
{
    static char pool[8][64];
    void (*ht_malloc)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_NEXT, "heaptrack_malloc");
    void (*ht_free)(void *) = (void (*)(void *))dlsym(RTLD_NEXT, "heaptrack_free");
    void (*ht_realloc)(void *, size_t, void *) =
        (void (*)(void *, size_t, void *))dlsym(RTLD_NEXT, "heaptrack_realloc");
    int found = ht_malloc && ht_free && ht_realloc;
    if (found) {
        ht_malloc(pool[0], 10);
        ht_malloc(pool[1], 20);
        ht_malloc(pool[2], 30);
        ht_realloc(pool[1], 40, pool[3]);   /* moved                        */
        ht_realloc(pool[0], 12, pool[0]);   /* in place                     */
        ht_free(pool[2]);
    }
    /* what the pool holds now: pool[0] (12 bytes) and pool[3] (40) */
    printf("loomsim heaptrack pid=%d api=%s live_blocks=2 live_bytes=52\n", (int)getpid(),
           found ? "found" : "absent");
}

/* ---- Setup and report ----------------------------------------------------- */
static const char *role = "main";

static void map_arena(void)
{
    void *p = mmap((void *)LOOM_BASE, LOOM_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED || p != (void *)LOOM_BASE) {
        fprintf(stderr, "loomsim: cannot map the loom at %#lx: %s\n", LOOM_BASE,
                p == MAP_FAILED ? strerror(errno) : "mapped elsewhere");
        exit(1);
    }
}

static void loom_init(void)
{
    dir = (struct pgdir *)LOOM_BASE;
    memset(dir, 0, (size_t)DIR_PAGES * PAGE_SZ);
    for (uint32_t i = 0; i < DIR_PAGES; i++)
        dir[i].kind = PG_META;
    home = road_at(NPAGES - 1);
    road_init(home, NPAGES - 1, 1, DIR_PAGES, NPAGES - 1 - DIR_PAGES, 0, 0);
    home->heap = vheap_heap_create("loom", 0, (void *)LOOM_BASE, LOOM_SIZE);
    home->book = book_new("loom", home->heap, 0);
    memset(region_was, 0, sizeof region_was);   /* a new heap has none */
    declare_region(1, VHEAP_REGION_META, (void *)LOOM_BASE, (size_t)DIR_PAGES * PAGE_SZ);
    home_regions();
    R = home;
}

static void report(void)
{
    int pid = (int)getpid();
    for (uint32_t i = 0; i < nbooks; i++) {
        struct book *b = &books[i];
        printf("loomsim heap=%s pid=%d role=%s id=%d parent=%d live_blocks=%llu "
               "live_bytes=%llu live_usable=%llu peak_bytes=%llu allocs=%llu frees=%llu "
               "resizes=%llu moves=%llu destroyed=%d dropped_blocks=%llu dropped_bytes=%llu\n",
               b->name, pid, role, b->heap, b->parent_heap,
               (unsigned long long)b->live_blocks, (unsigned long long)b->live_bytes,
               (unsigned long long)b->live_usable, (unsigned long long)b->peak_bytes,
               (unsigned long long)b->allocs, (unsigned long long)b->frees,
               (unsigned long long)b->resizes, (unsigned long long)b->moves, b->destroyed,
               (unsigned long long)b->dropped_blocks, (unsigned long long)b->dropped_bytes);
    }
    for (uint32_t i = 0; i < nleaks; i++)
        printf("loomsim leak pid=%d heap=loom id=%d addr=%#lx size=%u usable=%zu moved=%d "
               "first_addr=%#lx\n",
               pid, home->heap, (unsigned long)leaks[i].addr, leaks[i].size,
               block_usable((void *)leaks[i].addr), leaks[i].addr != leak_first_addr,
               (unsigned long)leak_first_addr);
    for (uint32_t i = 0; i < nlabels; i++)
        printf("loomsim tag pid=%d label=%s allocs=%llu\n", pid, labels[i].label,
               (unsigned long long)labels[i].allocs);
    printf("loomsim summary pid=%d role=%s vheap=%s roads=%u pops_copy=%u pops_bail=%u "
           "pops_signal=%u pops_timer=%u memes=%llu marks=%llu tag_pushes=%llu "
           "tag_unwinds=%llu overflow_allocs=%llu samples=%u samples_skipped=%u "
           "snapshots=%llu dirty_faults=%llu packs=%llu moved_blocks=%llu page_moves=%llu "
           "range_moves=%llu range_frees=%llu swept_blocks=%llu melds=%llu "
           "resync_frees=%llu home_pages=%u free_runs=%u lost_pages=%u region_calls=%llu "
           "region_changes=%llu\n",
           pid, role, vheap_enabled() ? "on" : "off", roads_pushed, pops_copy, pops_bail,
           pops_signal, pops_timer, (unsigned long long)memes, (unsigned long long)marks,
           (unsigned long long)tag_pushes, (unsigned long long)tag_unwinds,
           (unsigned long long)overflow_allocs, samples_taken, samples_skipped,
           (unsigned long long)snapshots, (unsigned long long)dirty_faults,
           (unsigned long long)packs, (unsigned long long)(pack_moves + page_moved_blocks),
           (unsigned long long)page_moves, (unsigned long long)range_moves,
           (unsigned long long)range_frees, (unsigned long long)swept_blocks,
           (unsigned long long)melds, (unsigned long long)resync_frees, home->hat,
           home->nruns, lost_pages, (unsigned long long)region_calls,
           (unsigned long long)region_changes);
}

/* A worker process maps its own loom at the same address (like Vere's
 * serf next to the king), does some events, and leaves its state live. */
static void worker(void)
{
    vheap_heap_destroy(home->heap);         /* the inherited loom goes away */
    if (munmap((void *)LOOM_BASE, LOOM_SIZE))
        die("munmap failed");
    map_arena();
    memset(sh, 0, sizeof sh);
    sh_count = 0;
    nbooks = nlabels = 0;
    memset(labels, 0, sizeof labels);
    roads_pushed = pops_copy = pops_bail = pops_signal = pops_timer = 0;
    memes = marks = tag_pushes = tag_unwinds = overflow_allocs = snapshots = dirty_faults = 0;
    packs = pack_moves = page_moves = page_moved_blocks = melds = resync_frees = 0;
    range_moves = range_frees = swept_blocks = 0;
    region_calls = region_changes = 0;
    timer_on = 0;
    nsamples = samples_taken = samples_skipped = 0;
    nleaks = 0;
    memset(roots, 0, sizeof roots);
    role = "worker";
    loom_init();
    for (uint32_t e = 0; e < 12; e++)
        run_event(e);
    verify_home();
    report();
    exit(0);
}

static void fork_worker(void)
{
    pid_t pid;
    int st;
    fflush(stdout);
    pid = fork();
    if (pid < 0)
        die("fork failed");
    if (pid == 0)
        worker();
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
        die("worker failed");
}

static void handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sample;
    sigaddset(&sa.sa_mask, SIGVTALRM);      /* no timer jump out of a sample */
    sigaction(SIGUSR2, &sa, NULL);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_interrupt;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_timer;
    sigaction(SIGVTALRM, &sa, NULL);
}

int main(int argc, char **argv)
{
    uint32_t events = 48;
    static char deep[300][24];

    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        puts("usage: loomsim [--timer] [EVENTS]\n"
             "A stand-in for Vere's loom that reports to vheap (preload/vheap.h)\n"
             "and prints its own books. EVENTS: 32 to 500, default 48.\n"
             "--timer: every 8th event also runs a computation on inner roads\n"
             "until a 2 ms SIGVTALRM interval timer siglongjmps out of it.");
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "--timer")) {
        timer_on = 1;
        argv++;
        argc--;
    }
    if (argc > 1) {
        char *end;
        unsigned long v = strtoul(argv[1], &end, 10);
        if (*end || v < 32 || v > 500) {     /* MAX_BOOKS bounds the roads */
            fprintf(stderr, "loomsim: EVENTS must be a number from 32 to 500\n");
            return 2;
        }
        events = (uint32_t)v;
    }
    vheap_enabled();                        /* lookup now, not in a handler */
    map_arena();
    handlers();
    loom_init();
    jets_boot();

    for (int i = 0; i < NTHREADS; i++) {
        threads[i].index = i;
        snprintf(threads[i].label, sizeof threads[i].label, "io:thread-%d", i);
        if (pthread_create(&threads[i].t, NULL, thread_main, &threads[i]))
            die("pthread_create failed");
    }

    for (uint32_t e = 0; e < events; e++) {
        run_event(e);
        if (timer_on && e % 8 == 5)
            event_timed(e);
        if (e == 24)
            meld();
        if (e == 30)
            fork_worker();
    }

    /* nesting as deep as Vere's jets: 300 levels, the innermost keeps its
     * tag; popped back to 50, so does that level (before vheap kept every
     * level, it carried the 32nd level's tag, deep.31) */
    for (int i = 0; i < 300; i++) {
        snprintf(deep[i], sizeof deep[i], "deep.%d", i);
        tag_push(deep[i]);
    }
    set_root(1000, cons(1, 2));
    while (tagdepth > 50)
        tag_pop();
    set_root(1001, cons(3, 4));
    while (tagdepth > 0)
        tag_pop();

    /* leaks the allocator's sweep gets back, whole pages at once */
    if (sweep_free() != 0)
        die("the sweep found leaks before there were any");
    uint32_t forgotten = make_page_leaks();
    if (sweep_free() != forgotten)
        die("the sweep did not free exactly the blocks leaked");
    fragment();
    make_leak();
    pack();
    sweep();
    if (nleaks != 1)
        die("mark-and-sweep did not find exactly the one leak");
    /* shut down: drop the state; only the leak stays */
    for (uint32_t i = 0; i < NROOTS; i++)
        set_root(i, 0);
    for (uint32_t i = 0; i < nsamples; i++)
        lose(samples[i]);
    nsamples = 0;
    verify_home();
    if (books[home->book].live_blocks != 1)
        die("more than the leak is live at the end");

    for (int i = 0; i < NTHREADS; i++)
        pthread_join(threads[i].t, NULL);
    report();
    for (int i = 0; i < NTHREADS; i++)
        printf("loomsim thread index=%d label=%s mallocs=%llu frees=%llu\n", i, threads[i].label,
               (unsigned long long)threads[i].mallocs, (unsigned long long)threads[i].frees);
    heaptrack_pool();
    return 0;
}
