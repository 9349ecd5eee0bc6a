/* reach_scan.c — the reachability scan, run in reach.c's snapshot child.
 *
 * The child is a copy of the exiting process made by a raw clone: only
 * this thread exists, glibc's locks may be held by threads that are gone,
 * so nothing here calls libc beyond system calls and takes no lock. It
 * rebuilds the live set from the capture's own records, reads the mappings,
 * and classifies every live block as memcheck does (mc_leakcheck's rules:
 * docs/design.md "Reachability at exit"). Memory is its own mmaps. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/partition.h"
#include "preload/internal.h"
#include "preload/reach.h"
#include "preload/sys.h"

#define PAGE 4096ul
#define RED_ZONE 128ul             /* below a stack pointer, still live (ABI) */

/* ---- memory of the child's own -------------------------------------------- */
static void *grab(size_t bytes)
{
    void *p = vh_sys_mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* ---- the mappings ------------------------------------------------------------ */
struct map {
    uintptr_t lo, hi;
    uint8_t readable, writable, blocks, shim, brk;
    uint8_t *resident;             /* heap mappings: mincore's vector, or NULL */
};

static struct map *maps;
static size_t nmaps;

static uintptr_t hex(const char **p)
{
    uintptr_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16u;
        if (d == 16)
            return v;
        v = v * 16 + d;
    }
}

/* Takes [lo, hi) (this scan's own buffer, gone before the scan) out of the
 * mapping that holds it: the kernel lists it merged with its neighbours. */
static void carve(uintptr_t lo, uintptr_t hi)
{
    for (size_t i = 0; i < nmaps; i++) {
        struct map *m = &maps[i];
        if (lo < m->lo || hi > m->hi)
            continue;
        if (m->lo < lo && hi < m->hi) {    /* in the middle: split in two */
            memmove(m + 1, m, (nmaps - i) * sizeof *m);
            nmaps++;
            m[0].hi = lo;
            m[1].lo = hi;
        } else if (m->lo < lo) {
            m->hi = lo;
        } else if (hi < m->hi) {
            m->lo = hi;
        } else {
            memmove(m, m + 1, (nmaps - i - 1) * sizeof *m);
            nmaps--;
        }
        return;
    }
}

/* /proc/self/maps into `maps`, sorted as the kernel lists them. */
static int read_maps(void)
{
    size_t cap = 1u << 20, len = 0;
    char *buf = grab(cap);
    int fd = vh_sys_open("/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
    if (!buf || fd < 0)
        return -1;
    for (;;) {
        if (cap - len < 65536) {
            char *more = vh_sys_mremap(buf, cap, cap * 2, MREMAP_MAYMOVE);
            if (more == MAP_FAILED)
                break;
            buf = more;
            cap *= 2;
        }
        ssize_t n = vh_sys_read(fd, buf + len, cap - len);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    vh_sys_close(fd);
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += buf[i] == '\n';
    maps = grab((lines + 2) * sizeof *maps);
    if (!maps)
        return -1;
    for (const char *p = buf, *end = buf + len; p < end;) {
        struct map m = { 0 };
        m.lo = hex(&p);
        p++;                       /* '-' */
        m.hi = hex(&p);
        p++;                       /* ' ' */
        m.readable = p[0] == 'r';
        m.writable = p[1] == 'w';
        /* The kernel's own pages read as no memory of the program's. */
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        if (eol - p >= 6 && (!memcmp(eol - 6, "[vvar]", 6) || !memcmp(eol - 6, "[vdso]", 6)))
            m.readable = 0;
        m.brk = eol - p >= 6 && !memcmp(eol - 6, "[heap]", 6);
        if (m.hi > m.lo)
            maps[nmaps++] = m;
        p = eol + 1;
    }
    carve((uintptr_t)buf, (uintptr_t)buf + cap);
    vh_sys_munmap(buf, cap);
    return 0;
}

static struct map *map_of(uintptr_t a)
{
    size_t k = VH_PARTITION_POINT(i, nmaps, maps[i].hi <= a);
    return k < nmaps && maps[k].lo <= a ? &maps[k] : NULL;
}

/* ---- the live set, from the capture ---------------------------------------- */
struct slot {
    uint64_t addr, size, time;     /* addr 0: empty                         */
    uint32_t live, slack;
};

static struct slot *table;
static size_t table_cap, table_used;
static unsigned table_bits;        /* table_cap = 1 << table_bits */

/* Fibonacci hashing: the product's top bits are the well mixed ones. */
static size_t slot_of(uint64_t addr)
{
    size_t i = (size_t)((addr * 0x9e3779b97f4a7c15ull) >> (64 - table_bits));
    while (table[i].addr && table[i].addr != addr)
        i = (i + 1) & (table_cap - 1);
    return i;
}

static int table_grow(void)
{
    struct slot *old = table;
    size_t old_cap = table_cap;
    table_bits = old_cap ? table_bits + 1 : 16;
    table_cap = (size_t)1 << table_bits;
    table = grab(table_cap * sizeof *table);
    if (!table)
        return -1;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].addr)
            table[slot_of(old[i].addr)] = old[i];
    if (old)
        vh_sys_munmap(old, old_cap * sizeof *old);
    return 0;
}

/* The latest event about an address wins: a tie goes to the later chunk
 * (chunks are read in the order they were claimed). */
static int note(uint64_t addr, uint64_t time, uint64_t size, uint32_t slack, int live)
{
    if (!addr)
        return 0;
    if ((table_used + 1) * 2 > table_cap && table_grow() < 0)
        return -1;
    struct slot *s = &table[slot_of(addr)];
    if (s->addr && s->time > time)
        return 0;
    if (!s->addr)
        table_used++;
    *s = (struct slot){ .addr = addr, .size = size, .time = time, .live = (uint32_t)live,
                        .slack = slack };
    return 0;
}

/* Records after `upto` (the clone) are other threads' after the copy was
 * made: the copy's memory has not seen them. */
static int chunk_events(const struct vh_chunk_header *c, uint64_t chunk_size, uint64_t upto)
{
    uint64_t used = __atomic_load_n(&c->used, __ATOMIC_ACQUIRE);
    if (c->magic != VH_CHUNK_MAGIC || used > chunk_size || used < sizeof *c)
        return 0;
    const uint8_t *base = (const uint8_t *)c, *p = base + sizeof *c, *end = base + used;
    struct vh_cursor cur = { 0 };
    while (p < end) {
        if (*p == VH_REC_PAD) {
            p++;
            continue;
        }
        if (vh_rec_is_compact(*p)) {
            union vh_rec_compact d;
            long n = vh_dec_compact(p, end, &cur, &d);
            if (n <= 0)
                return 0;          /* damage: the rest of the chunk is unread */
            p += n;
            if (d.h.a != VH_HEAP_SYSTEM || d.free.time > upto)
                continue;          /* custom heaps opt out (vheap.h) */
            if (d.h.type == VH_REC_FREE) {
                if (note(d.free.addr, d.free.time, 0, 0, 0) < 0)
                    return -1;
            } else if (!(d.h.flags & VH_RF_FAILED) &&
                       note(d.alloc.addr, d.alloc.time, d.alloc.size, d.alloc.slack, 1) < 0) {
                return -1;
            }
            continue;
        }
        const struct vh_rec_hdr *h = (const void *)p;
        size_t size = ((uintptr_t)(p - base) & 7) ? 0 : vh_record_size(h);
        if (!size || size > (size_t)(end - p))
            return 0;
        vh_cursor_struct(&cur, h->type, ((const struct vh_rec_time *)(const void *)p)->time);
        p += size;
    }
    return 0;
}

/* How far into a block a pointer counts as pointing into it: its bytes,
 * but not the last word of the usable size, which in glibc's heap is the
 * next chunk's header: glibc's own state (the arena's top, its bins) points
 * there, and it is no pointer of the program's. A pointer to a block's
 * last word is missed so (docs/design.md). A 0-byte block: its start. */
static uint64_t match_len(const struct slot *s)
{
    uint64_t usable = s->size + s->slack, len = s->size;
    if (usable >= 16 && len > usable - 8)
        len = usable - 8;
    return len ? len : 1;
}

/* Blocks, sorted by address, from the table's live slots. */
static struct vh_reach_block *blocks;
static size_t nblocks;

/* LSD radix sort by address, 16 bits a pass (glibc's qsort may allocate,
 * which this child must not; a heapsort took 15 s for 4M blocks). The
 * passes over bits every address shares are skipped. */
static int sort_blocks(void)
{
    static size_t count[1u << 16];
    struct vh_reach_block *tmp = grab(nblocks * sizeof *tmp), *from = blocks, *to = tmp;
    if (!tmp)
        return -1;
    uint64_t differ = 0;
    for (size_t i = 1; i < nblocks; i++)
        differ |= blocks[i].addr ^ blocks[0].addr;
    for (unsigned shift = 0; shift < 64; shift += 16) {
        if (!((differ >> shift) & 0xffff))
            continue;
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < nblocks; i++)
            count[(from[i].addr >> shift) & 0xffff]++;
        for (size_t d = 0, sum = 0; d < 1u << 16; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < nblocks; i++)
            to[count[(from[i].addr >> shift) & 0xffff]++] = from[i];
        struct vh_reach_block *t = from;
        from = to;
        to = t;
    }
    if (from != blocks)
        memcpy(blocks, from, nblocks * sizeof *blocks);
    vh_sys_munmap(tmp, nblocks * sizeof *tmp);
    return 0;
}

static int live_set(uint64_t upto)
{
    const struct vh_capture_header *hdr = vh_cap.hdr;
    uint64_t claimed = __atomic_load_n(&hdr->chunks_claimed, __ATOMIC_ACQUIRE);
    uint64_t cs = hdr->chunk_size;
    if (table_grow() < 0)
        return -1;
    for (uint64_t i = 0; i < claimed; i++) {
        if (VH_HEADER_SIZE + (i + 1) * cs > vh_cap.mapped)
            break;
        if (chunk_events((const void *)(vh_cap.base + VH_HEADER_SIZE + i * cs), cs, upto) < 0)
            return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < table_cap; i++)
        n += table[i].addr && table[i].live;
    blocks = grab(n * sizeof *blocks);
    if (!blocks)
        return -1;
    for (size_t i = 0; i < table_cap; i++)
        if (table[i].addr && table[i].live)
            blocks[nblocks++] = (struct vh_reach_block){ table[i].addr, table[i].size,
                                                         match_len(&table[i]), 0 };
    vh_sys_munmap(table, table_cap * sizeof *table);
    return sort_blocks();
}

/* ---- reading memory safely ---------------------------------------------------
 * Only pages of readable mappings that are resident: never a fault (a guard
 * page, memory mprotected away, a truncated file), and no page of a huge
 * sparse mapping is touched. Swapped-out pages are skipped too: counted. */
static struct vh_reach_stats *st;

typedef void (*words_fn)(const uint64_t *w, size_t n, int definite);

static void scan_resident(uintptr_t lo, uintptr_t hi, const uint8_t *vec, words_fn fn,
                          int definite, uint64_t *read)
{
    uintptr_t a = lo;
    while (a < hi) {
        uintptr_t page = a & ~(PAGE - 1), next = page + PAGE < hi ? page + PAGE : hi;
        if (vec[(page - (lo & ~(PAGE - 1))) / PAGE] & 1) {
            fn((const uint64_t *)a, (next - a) / 8, definite);
            *read += next - a;
        } else {
            st->nonresident_bytes += next - a;
        }
        a = next;
    }
}

#define WINDOW_PAGES 65536ul      /* mincore's vector: 64 KiB, 256 MiB a call */

/* Reads the words of [lo, hi) (8-aligned) through fn, window by window. */
static void scan_range(uintptr_t lo, uintptr_t hi, words_fn fn, int definite, uint64_t *read)
{
    static uint8_t vec[WINDOW_PAGES];
    lo = (lo + 7) & ~7ul;
    hi &= ~7ul;
    while (lo < hi) {
        struct map *m = map_of(lo);
        if (!m) {
            st->unreadable_bytes += hi - lo;
            return;
        }
        uintptr_t end = m->hi < hi ? m->hi : hi;
        uintptr_t wend = (lo & ~(PAGE - 1)) + WINDOW_PAGES * PAGE;
        if (wend < end)
            end = wend;
        if (!m->readable) {
            st->unreadable_bytes += end - lo;
        } else if (m->resident) {
            scan_resident(lo, end, m->resident + ((lo & ~(PAGE - 1)) - m->lo) / PAGE, fn,
                          definite, read);
        } else {
            uintptr_t first = lo & ~(PAGE - 1);
            if (mincore((void *)first, end - first, vec) != 0)
                st->unreadable_bytes += end - lo;
            else
                scan_resident(lo, end, vec, fn, definite, read);
        }
        lo = end;
    }
}

/* ---- classification (memcheck's) ------------------------------------------ */
enum { UNREACHED = 0, POSSIBLE, REACHABLE, INDIRECT, LOST };

static uint32_t *stack_;
static size_t nstack;
static uintptr_t min_addr, max_end;
static uint32_t clique;            /* UINT32_MAX: the pass from the roots */

static size_t block_of(uint64_t p)
{
    if (p < min_addr || p >= max_end)
        return SIZE_MAX;
    /* the first block starting above p */
    size_t lo = VH_PARTITION_POINT(i, nblocks, blocks[i].addr <= p);
    if (!lo)
        return SIZE_MAX;
    const struct vh_reach_block *b = &blocks[lo - 1];
    return p - b->addr < b->match ? lo - 1 : SIZE_MAX;
}

/* The word at a, if its page is readable and resident (the blocks'
 * mappings know it without a system call: mark_block_maps). */
static int peek(uintptr_t a, uint64_t *v)
{
    const struct map *m = map_of(a);
    unsigned char r = 0;
    if (!m || !m->readable || (a & 7))
        return -1;
    if (m->resident)
        r = m->resident[((a & ~(PAGE - 1)) - m->lo) / PAGE];
    else if (mincore((void *)(a & ~(PAGE - 1)), PAGE, &r) != 0)
        return -1;
    if (!(r & 1))
        return -1;
    *v = *(const uint64_t *)a;
    return 0;
}

/* An interior pointer that C++ makes in place of a start pointer, by the
 * block's layout (memcheck's heuristics, on by default: newarray, length64,
 * stdstring): 8 bytes in, after a count that divides the rest (new[] of
 * objects with a destructor; a length word holding the rest's size is one);
 * 24 bytes in, after a copy-on-write std::string's length, capacity and
 * refcount, its capacity filling the block. Not memcheck's fourth (a second
 * base class's vtable pointer): that needs symbols. */
static int cxx_start(const struct vh_reach_block *b, uint64_t p)
{
    uint64_t n, cap;
    if (p - b->addr == 8 && b->size > 8 && !peek(b->addr, &n))
        return n && (b->size - 8) % n == 0;
    if (p - b->addr == 24 && !peek(b->addr + 8, &cap) && cap < b->size &&
        24 + cap + 1 == b->size && !peek(b->addr, &n))
        return n <= cap;
    return 0;
}

/* From the roots: a start pointer from something definitely reachable
 * makes a block reachable; any other pointer, possibly lost at least.
 * In a clique (from a lost block): what it reaches is indirectly lost. */
static void words(const uint64_t *w, size_t n, int definite)
{
    for (size_t i = 0; i < n; i++) {
        size_t k = block_of(w[i]);
        if (k == SIZE_MAX)
            continue;
        struct vh_reach_block *b = &blocks[k];
        if (clique != UINT32_MAX) {
            if (b->state == UNREACHED && k != clique) {
                b->state = INDIRECT;
                stack_[nstack++] = (uint32_t)k;
            }
        } else if (definite && b->state != REACHABLE &&
                   (w[i] == b->addr || cxx_start(b, w[i]))) {
            b->state = REACHABLE;
            stack_[nstack++] = (uint32_t)k;
        } else if (b->state == UNREACHED) {
            b->state = POSSIBLE;
            stack_[nstack++] = (uint32_t)k;
        }
    }
}

static void drain(void)
{
    while (nstack) {
        const struct vh_reach_block *b = &blocks[stack_[--nstack]];
        scan_range(b->addr, b->addr + b->size, words, b->state == REACHABLE, &st->heap_bytes);
    }
}

/* A root mapping holding a known stack pointer is read from there up
 * (the exiting thread's: the frame that saved its registers, above this
 * child's own frames). */
static uintptr_t root_start(const struct map *m, const struct vh_reach_ctx *cx)
{
    uintptr_t from = m->lo;
    if (cx->own_sp >= m->lo && cx->own_sp < m->hi)
        return cx->own_sp;
    for (size_t i = 0; i < cx->nsps; i++)
        if (cx->sps[i] >= m->lo && cx->sps[i] < m->hi && cx->sps[i] - RED_ZONE > from)
            from = cx->sps[i] - RED_ZONE;
    return from;
}

/* Residency of the mappings that hold blocks, once: blocks are read
 * against it without a system call each. */
static void mark_block_maps(void)
{
    for (size_t i = 0; i < nblocks; i++) {
        struct map *m = map_of(blocks[i].addr);
        if (m && !m->blocks) {
            m->blocks = 1;
            size_t pages = (m->hi - m->lo) / PAGE;
            m->resident = grab(pages);
            if (m->resident && mincore((void *)m->lo, m->hi - m->lo, m->resident) != 0) {
                vh_sys_munmap(m->resident, pages);
                m->resident = NULL;
            }
        }
    }
}

/* ---- the allocator's memory: read only as blocks ---------------------------
 * Its free space holds stale pointers (freed blocks' old contents), which
 * memcheck, whose allocator is its own, never reads. glibc's is told by its
 * chunk headers: the brk heap, the mappings of its other arenas (64 MiB
 * aligned, `heap_info` at the start giving the size) and each block it
 * mapped alone. Any other mapping holding a block (another allocator's)
 * is taken whole. The rest of a mapping the kernel merged with one of
 * these (a language runtime's arena beside a big block) stays a root. */
struct range {
    uintptr_t lo, hi;
};

static struct range *ranges;
static size_t nranges;

#define GLIBC_HEAP_MAX (64ul << 20)  /* HEAP_MAX_SIZE on 64-bit */
#define CHUNK_MMAPPED 2u
#define CHUNK_NON_MAIN 4u

static struct range block_range(const struct vh_reach_block *b, const struct map *m)
{
    struct range whole = { m->lo, m->hi };
    uint64_t size, prev, heap_size, arena;
    uintptr_t chunk = b->addr - 16;
    if (m->brk || peek(b->addr - 8, &size) < 0 || (size & ~7ul) < b->size + 8)
        return whole;
    if (size & CHUNK_MMAPPED) {
        if (peek(chunk, &prev) < 0 || ((chunk - prev) & (PAGE - 1)) || prev > chunk ||
            ((size & ~7ul) + prev) & (PAGE - 1))
            return whole;
        return (struct range){ chunk - prev, chunk + (size & ~7ul) };
    }
    if (!(size & CHUNK_NON_MAIN))
        return whole;
    uintptr_t base = chunk & ~(GLIBC_HEAP_MAX - 1);
    if (peek(base, &arena) < 0 || !arena || peek(base + 16, &heap_size) < 0 ||
        heap_size > GLIBC_HEAP_MAX || base + heap_size < b->addr + b->size)
        return whole;
    return (struct range){ base, base + heap_size };
}

static int heap_ranges(void)
{
    ranges = grab((nblocks + 1) * sizeof *ranges);
    if (!ranges)
        return -1;
    for (size_t i = 0; i < nblocks; i++) {
        const struct vh_reach_block *b = &blocks[i];
        struct range *last = nranges ? &ranges[nranges - 1] : NULL;
        if (last && b->addr >= last->lo && b->addr + b->size <= last->hi)
            continue;              /* the same arena: no header read */
        const struct map *m = map_of(b->addr);
        if (!m)
            continue;
        struct range r = block_range(b, m);
        if (last && r.lo <= last->hi) {  /* blocks come in address order */
            if (r.hi > last->hi)
                last->hi = r.hi;
        } else {
            ranges[nranges++] = r;
        }
    }
    return 0;
}

/* The first range ending above a. */
static size_t first_range(uintptr_t a)
{
    return VH_PARTITION_POINT(i, nranges, ranges[i].hi <= a);
}

/* Reads [lo, hi) as a root but for the allocator's ranges in it. */
static void scan_root(uintptr_t lo, uintptr_t hi)
{
    size_t k = first_range(lo);
    for (; lo < hi && k < nranges && ranges[k].lo < hi; k++) {
        if (ranges[k].lo > lo)
            scan_range(lo, ranges[k].lo, words, 1, &st->root_bytes);
        if (ranges[k].hi > lo)
            lo = ranges[k].hi;
    }
    if (lo < hi)
        scan_range(lo, hi, words, 1, &st->root_bytes);
}

/* The capture: addresses in its records are no pointers of the program. */
static int is_capture(const struct map *m)
{
    uintptr_t cap = (uintptr_t)vh_cap.base;
    return m->lo >= cap && m->hi <= cap + vh_cap.reserved;
}

/* The shim's per-thread state is no root: each registered thread's cursor
 * is cleared in this copy, the mappings of its walk state and id cache
 * left out. */
static void hide_shim_state(const struct vh_reach_ctx *cx)
{
    for (size_t i = 0; i < VH_REACH_THREADS; i++) {
        struct vh_tls *t = cx->threads[i];
        if (!t)
            continue;
        t->cur.addr = 0;           /* its last block, and its recent ones */
        memset(t->cur.recent, 0, sizeof t->cur.recent);
        memset(t->cur.freed, 0, sizeof t->cur.freed);   /* may be live again */
        struct map *m = t->walker ? map_of((uintptr_t)t->walker) : NULL;
        if (m)
            m->shim = 1;
        if ((m = t->ids ? map_of((uintptr_t)t->ids) : NULL))
            m->shim = 1;
    }
}

/* The shim's own static data (this scan's included) holds no pointer of
 * the program's, only incidental copies: left out, from its first
 * writable mapping to its last. */
static void hide_shim_data(void)
{
    static uint8_t in_bss;
    const uintptr_t at[] = { (uintptr_t)&vh_opt, (uintptr_t)&in_bss, (uintptr_t)&stack_ };
    struct map *lo = NULL, *hi = NULL;
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        struct map *m = map_of(at[i]);
        if (m && (!lo || m < lo))
            lo = m;
        if (m && (!hi || m > hi))
            hi = m;
    }
    for (struct map *m = lo; lo && m <= hi; m++)
        m->shim = 1;
}

static void scan_roots(const struct vh_reach_ctx *cx)
{
    hide_shim_state(cx);
    hide_shim_data();
    clique = UINT32_MAX;
    for (size_t i = 0; i < nmaps; i++) {
        const struct map *m = &maps[i];
        if (!m->readable || !m->writable || m->shim || is_capture(m))
            continue;
        scan_root(root_start(m, cx), m->hi);
        drain();
    }
}

static void scan_cliques(void)
{
    for (size_t i = 0; i < nblocks; i++) {
        if (blocks[i].state != UNREACHED)
            continue;
        clique = (uint32_t)i;
        stack_[nstack++] = (uint32_t)i;
        drain();
    }
    for (size_t i = 0; i < nblocks; i++)
        if (blocks[i].state == UNREACHED)
            blocks[i].state = LOST;
}

static uint8_t class_of(uint8_t state)
{
    return state == REACHABLE  ? VH_REACH_REACHABLE
           : state == POSSIBLE ? VH_REACH_POSSIBLE
           : state == INDIRECT ? VH_REACH_INDIRECT
                               : VH_REACH_LOST;
}

int vh_reach_scan(const struct vh_reach_ctx *cx, struct vh_reach_stats *out,
                  struct vh_reach_block **out_blocks, size_t *out_n)
{
    st = out;
    if (read_maps() < 0 || live_set(cx->time) < 0)
        return -1;
    st->blocks = nblocks;
    if (nblocks) {
        min_addr = blocks[0].addr;
        for (size_t i = 0; i < nblocks; i++)
            if (blocks[i].addr + blocks[i].match > max_end)
                max_end = blocks[i].addr + blocks[i].match;
    }
    /* A block is pushed at most twice: once possible, once reachable. */
    stack_ = grab((2 * nblocks + 1) * sizeof *stack_);
    if (!stack_)
        return -1;
    mark_block_maps();
    if (heap_ranges() < 0)
        return -1;
    scan_roots(cx);
    scan_cliques();
    for (size_t i = 0; i < nblocks; i++)
        blocks[i].state = class_of(blocks[i].state);
    *out_blocks = blocks;
    *out_n = nblocks;
    return 0;
}
