/* hooks_mmap.c — mmap, mmap64, munmap, mremap, brk and sbrk as the
 * built-in heap "mmap": each mapping the program makes is a block of it,
 * with its stack (mapped.c keeps them as the kernel splits them).
 *
 * Whose call it is: the program's (guard OUT) is recorded under
 * VHEAP_MMAP=program (the default); one made while the real allocator runs
 * (guard REAL: jemalloc's or tcmalloc's extents, reached through the PLT)
 * only under VHEAP_MMAP=all, like the blocks glibc's malloc maps alone,
 * which it maps without the PLT and which are told from their chunk header
 * after the malloc (vh_mmap_block_*). The shim's own mappings never come
 * here (sys.h: system calls); libunwind's, made at guard BUSY, and any
 * under `own` pass unseen and uncounted. Not seen at all: the loader's
 * mappings (ld.so maps libraries itself), libc's
 * own (thread stacks, glibc's arenas and brk heap: internal calls), raw
 * system calls. Under VHEAP_SAMPLE nothing here is recorded.
 *
 * Rules: the real calls are system calls (never a resolved libc function:
 * these hooks run before anything is resolved, and from the shim's own
 * mapping calls), made at the caller's guard; errno is the call's; no
 * allocation; the bookkeeping is mapped.c's, at guard BUSY. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/internal.h"

#define PAGE_MASK 4095ull

static int heap_id;                /* the built-in heap, once made          */

/* 1: the program's call, to record; 2: the allocator's, to record; 0: pass.
 * A macro: vh_enter_slow reads the hook's frame. */
#define WHOSE(t, kind)                                                         \
    do {                                                                       \
        kind = 0;                                                              \
        if (vh_opt.mmap == VH_MMAP_OFF || vh_sample_rate || (t)->guard == VH_G_BUSY || \
            (t)->own || ((t)->guard == VH_G_REAL && vh_opt.mmap != VH_MMAP_ALL))      \
            break;                                                             \
        if (vh_likely(vh_fast_ok(t)) || vh_enter_slow(t))                      \
            kind = (t)->guard == VH_G_REAL ? 2 : 1;                            \
    } while (0)

static uint64_t page_up(uint64_t n)
{
    return (n + PAGE_MASK) & ~PAGE_MASK;
}

/* After a call that succeeded: [lo, lo + len) is a new mapping (MAP_FIXED
 * or mremap: it replaced whatever was there). */
static void note_map(struct vh_tls *t, unsigned func, uint64_t lo, uint64_t len)
{
    struct vh_hook h = vh_hook_enter(t);
    uint32_t stack = vh_stack_here(t);
    int heap = vh_api_builtin_heap(t, &heap_id, "mmap", VH_HEAPF_MMAP);
    if (heap)
        vh_mapped_add(t, (uint16_t)heap, func, lo, lo + page_up(len), stack);
    vh_rss_due(t, vh_now());
    vh_hook_leave(t, h);
}

static void note_unmap(struct vh_tls *t, unsigned func, uint64_t lo, uint64_t len)
{
    int heap = __atomic_load_n(&heap_id, __ATOMIC_ACQUIRE);
    if (!heap)
        return;                    /* nothing recorded yet: nothing to end */
    struct vh_hook h = vh_hook_enter(t);
    vh_mapped_cut(t, (uint16_t)heap, func, lo & ~PAGE_MASK, page_up(lo + len));
    vh_hook_leave(t, h);
}

/* After WHOSE: the call, and its record. */
static void *mmap_as(struct vh_tls *t, int kind, void *addr, size_t len, int prot, int flags,
                     int fd, off_t off)
{
    void *p = vh_sys_mmap(addr, len, prot, flags, fd, off);
    if (kind && p != MAP_FAILED)
        note_map(t, kind == 2 ? VH_FN_MMAP_BLOCK : VH_FN_MMAP, (uintptr_t)p, len);
    return p;
}

VH_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    struct vh_tls *t = &vh_tls;
    int kind;
    WHOSE(t, kind);
    return mmap_as(t, kind, addr, len, prot, flags, fd, off);
}

VH_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    struct vh_tls *t = &vh_tls;
    int kind;
    WHOSE(t, kind);
    return mmap_as(t, kind, addr, len, prot, flags, fd, off);
}

/* The range ends before the call (a mapping made at once by another
 * thread in the freed range is recorded after it); a call the kernel
 * refuses (unaligned, empty) changes nothing, so none is recorded. */
VH_EXPORT int munmap(void *addr, size_t len)
{
    struct vh_tls *t = &vh_tls;
    int kind;
    WHOSE(t, kind);
    if (kind && len && !((uintptr_t)addr & PAGE_MASK))
        note_unmap(t, VH_FN_MUNMAP, (uintptr_t)addr, len);
    return vh_sys_munmap(addr, len);
}

/* Recorded after the call, which says where the range went: the old range
 * ends, the new one begins with this call's stack (as realloc's block). */
VH_EXPORT void *mremap(void *old, size_t old_len, size_t len, int flags, ...)
{
    struct vh_tls *t = &vh_tls;
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    int kind;
    WHOSE(t, kind);
    void *p = (void *)syscall(SYS_mremap, old, old_len, len, flags, want);
    if (kind && p != MAP_FAILED) {
        int err = errno;
        if (!(flags & MREMAP_DONTUNMAP) || p == old)
            note_unmap(t, VH_FN_MREMAP, (uintptr_t)old, old_len);
        note_map(t, kind == 2 ? VH_FN_MMAP_BLOCK : VH_FN_MREMAP, (uintptr_t)p, len);
        errno = err;
    }
    return p;
}

/* brk and sbrk keep libc's idea of the break (__curbrk): the real ones,
 * found once without dlsym (elfsym.c). */
static void *real_sbrk_fn, *real_brk_fn;

static void *call_sbrk(intptr_t inc)
{
    void *(*f)(intptr_t) = (void *(*)(intptr_t))vh_sym_next_once(&real_sbrk_fn, "sbrk");
    if (!f) {
        errno = ENOMEM;
        return (void *)-1;
    }
    return f(inc);
}

/* The break moved from `from` to `to`: growth is a block, shrinking ends
 * what it covered. */
static void note_break(struct vh_tls *t, unsigned func, uint64_t from, uint64_t to)
{
    if (to > from) {
        struct vh_hook h = vh_hook_enter(t);
        uint32_t stack = vh_stack_here(t);
        int heap = vh_api_builtin_heap(t, &heap_id, "mmap", VH_HEAPF_MMAP);
        /* The break is not page-aligned: blocks are the bytes asked for. */
        if (heap)
            vh_mapped_add(t, (uint16_t)heap, func, from, to, stack);
        vh_rss_due(t, vh_now());
        vh_hook_leave(t, h);
    } else if (to < from) {
        int heap = __atomic_load_n(&heap_id, __ATOMIC_ACQUIRE);
        struct vh_hook h = vh_hook_enter(t);
        if (heap)
            vh_mapped_cut(t, (uint16_t)heap, func, to, from);
        vh_hook_leave(t, h);
    }
}

VH_EXPORT void *sbrk(intptr_t inc)
{
    struct vh_tls *t = &vh_tls;
    int kind;
    WHOSE(t, kind);
    void *p = call_sbrk(inc);
    if (kind && p != (void *)-1)
        note_break(t, VH_FN_SBRK, (uintptr_t)p, (uintptr_t)p + (uint64_t)inc);
    return p;
}

VH_EXPORT int brk(void *addr)
{
    struct vh_tls *t = &vh_tls;
    int kind;
    WHOSE(t, kind);
    int (*f)(void *) = (int (*)(void *))vh_sym_next_once(&real_brk_fn, "brk");
    if (!f) {
        errno = ENOMEM;
        return -1;
    }
    void *from = kind ? call_sbrk(0) : NULL;
    int rc = f(addr);
    if (kind && rc == 0 && from != (void *)-1)
        note_break(t, VH_FN_BRK, (uintptr_t)from, (uintptr_t)addr);
    return rc;
}

/* ---- blocks glibc's malloc mapped alone (VHEAP_MMAP=all) -------------------- */

#define CHUNK_MMAPPED 2u

/* Block p was just returned (ALLOC) or resized in place (RESIZE) by
 * glibc's malloc: its mapping, from the chunk header (prev_size: the
 * padding before it; size: the rest), if it has one of its own. Guard
 * BUSY, the block valid. */
void vh_mmap_block_alloc(struct vh_tls *t, uint8_t type, uint64_t p, uint32_t stack)
{
    const uint64_t *hdr = (const uint64_t *)(uintptr_t)(p - 16);
    if (!p || vh_boot_owns((const void *)(uintptr_t)p))
        return;
    if (type == VH_REC_RESIZE)
        vh_mmap_block_free(t, p);
    if (!(hdr[1] & CHUNK_MMAPPED))
        return;
    uint64_t lo = p - 16 - hdr[0], hi = p - 16 + (hdr[1] & ~7ull);
    int heap;
    if (!((lo | hi) & PAGE_MASK) &&    /* else not glibc's layout after all */
        (heap = vh_api_builtin_heap(t, &heap_id, "mmap", VH_HEAPF_MMAP)))
        vh_mapped_add(t, (uint16_t)heap, VH_FN_MMAP_BLOCK, lo, hi, stack);
}

/* Block p is being freed (or left by a moving realloc): its mapping ends,
 * if one was recorded. The block is not read (it may be gone already). */
void vh_mmap_block_free(struct vh_tls *t, uint64_t p)
{
    int heap = __atomic_load_n(&heap_id, __ATOMIC_ACQUIRE);
    if (heap)
        vh_mapped_free_at(t, (uint16_t)heap, VH_FN_MMAP_BLOCK, p);
}
