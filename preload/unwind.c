/* unwind.c — the call stack of the current allocation, as return addresses.
 *
 * VHEAP_UNWIND=libunwind (default): DWARF unwinding, normally through the
 * cached per-address rules of cfi.c, with libunwind's unw_backtrace for any
 * stack those cannot do (signal frames, DWARF expressions, other stacks).
 * VHEAP_UNWIND=fp: a frame-pointer walk, for programs built with
 * -fno-omit-frame-pointer. Either way only addresses inside the thread's own
 * stack are read, and frames inside libvheap (or libunwind) are dropped, so
 * the first frame is the return address in the allocator's caller whatever
 * the compiler did to the hooks. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "preload/internal.h"

/* Frames the shim itself may put on the stack above the caller's. */
#define SKIP_SLACK 8u

static uintptr_t self_lo, self_hi;    /* libvheap.so */
static uintptr_t unw_lo, unw_hi;      /* libunwind.so */

struct range_query {
    uintptr_t addr;
    uintptr_t lo, hi;
};

static int range_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct range_query *q = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t s = info->dlpi_addr + ph->p_vaddr;
        if (s < lo)
            lo = s;
        if (s + ph->p_memsz > hi)
            hi = s + ph->p_memsz;
    }
    if (q->addr >= lo && q->addr < hi) {
        q->lo = lo;
        q->hi = hi;
        return 1;
    }
    return 0;
}

static void module_range(const void *addr, uintptr_t *lo, uintptr_t *hi)
{
    struct range_query q = { (uintptr_t)addr, 0, 0 };
    dl_iterate_phdr(range_cb, &q);
    *lo = q.lo;
    *hi = q.hi;
}

int vh_unwind_init(void)
{
    module_range((const void *)&vh_unwind_init, &self_lo, &self_hi);
    module_range((const void *)&unw_backtrace, &unw_lo, &unw_hi);
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    return self_hi && vh_cfi_init() == 0 ? 0 : -1;
}

/* The thread's stack, which bounds every read of a walk (slow path, once
 * per thread; pthread_getattr_np may allocate: that is the shim's own call). */
void vh_unwind_bounds(struct vh_tls *t)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (t->bounds_known)
        return;
    t->bounds_known = 1;
    t->own++;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            t->stack_lo = (uintptr_t)addr;
            t->stack_hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&attr);
    }
    t->own--;
}

static VH_NOINLINE uint32_t fp_walk(struct vh_tls *t, uint64_t *buf, uint32_t want)
{
    uintptr_t lo = t->stack_lo, hi = t->stack_hi;
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    uint32_t n = 0;
    while (n < want) {
        /* Only ever read 16 aligned bytes inside this thread's stack, and
         * only walk towards its base: a garbage rbp ends the walk. */
        if (fp < lo || fp > hi - 16 || (fp & 7))
            break;
        uintptr_t next = ((const uintptr_t *)fp)[0];
        uintptr_t ret = ((const uintptr_t *)fp)[1];
        if (!ret)
            break;
        buf[n++] = ret;
        if (next <= fp)
            break;
        fp = next;
    }
    return n;
}

static inline int is_own(uint64_t ip)
{
    return (ip >= self_lo && ip < self_hi) || (ip >= unw_lo && ip < unw_hi);
}

uint32_t vh_unwind_want(uint32_t max)
{
    return max + SKIP_SLACK + 1;
}

static inline int is_self(uint64_t ip)
{
    return ip >= self_lo && ip < self_hi;
}

/* The default walker: the shim's own frames by their frame pointers (the
 * shim is built with them), then the program's by cached CFI rules (cfi.c).
 * Returns the count, or -1 when libunwind must do this stack. */
static VH_NOINLINE int cfi_unwind(struct vh_tls *t, uint64_t *buf, uint32_t want)
{
    uintptr_t lo = t->stack_lo, hi = t->stack_hi;
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    for (int i = 0; i < 16; i++) {
        if (fp < lo || fp > hi - 16 || (fp & 7))
            return -1;
        uintptr_t next = ((const uintptr_t *)fp)[0];
        uintptr_t ret = ((const uintptr_t *)fp)[1];
        if (!is_self(ret))
            return vh_cfi_walk(t, ret, fp + 16, next, buf, want);
        if (next <= fp)
            return -1;
        fp = next;
    }
    return -1;
}

#ifdef VH_CFI_VERIFY
/* Debug builds (-DVH_CFI_VERIFY): every CFI walk is compared with
 * libunwind's, and differences are logged. */
static unsigned long verify_walks, verify_diffs, verify_fallbacks;
static void verify(struct vh_tls *t, const uint64_t *got, int n, uint32_t want)
{
    uint64_t ref[VH_MAX_DEPTH + SKIP_SLACK + 1];
    t->own++;
    t->unwinding = 1;
    int m = unw_backtrace((void **)ref, (int)(want + SKIP_SLACK));
    t->unwinding = 0;
    t->own--;
    int k = 0;
    while (k < m && is_own(ref[k]))
        k++;
    m -= k;
    if (m > (int)want)
        m = (int)want;
    __atomic_fetch_add(&verify_walks, 1, __ATOMIC_RELAXED);
    if (n < 0) {
        __atomic_fetch_add(&verify_fallbacks, 1, __ATOMIC_RELAXED);
        return;
    }
    int same = n == m;
    for (int i = 0; same && i < n; i++)
        same = got[i] == ref[k + i];
    if (same)
        return;
    unsigned long d = __atomic_fetch_add(&verify_diffs, 1, __ATOMIC_RELAXED);
    if (d < 8) {
        char line[400];
        size_t len = 0;
        for (int i = 0; i < (n > m ? n : m) && len < sizeof line - 60; i++)
            len += vh_format(line + len, sizeof line - len, " %d:%lx/%lx", i,
                             i < n ? (unsigned long)got[i] : 0ul,
                             i < m ? (unsigned long)ref[k + i] : 0ul);
        vh_log("cfi verify: cfi %d frames, libunwind %d:%s", n, m, line);
    }
}

__attribute__((destructor)) static void verify_report(void)
{
    vh_log("cfi verify: %lu walks, %lu differ, %lu fell back", verify_walks, verify_diffs,
           verify_fallbacks);
}
#endif

uint32_t vh_unwind(struct vh_tls *t, uint64_t *buf, uint32_t max, int *truncated,
                   uint32_t *skip)
{
    uint32_t want = vh_unwind_want(max);
    uint32_t n = 0;
    if (vh_unlikely(!t->bounds_known))
        vh_unwind_bounds(t);
    if (vh_opt.unwind == VH_UNWIND_LIBUNWIND && t->stack_hi) {
        int r = cfi_unwind(t, buf, max + 1);
#ifdef VH_CFI_VERIFY
        verify(t, buf, r, max + 1);
#endif
        if (vh_likely(r >= 0)) {
            *skip = 0;
            *truncated = (uint32_t)r > max;
            return (uint32_t)r > max ? max : (uint32_t)r;
        }
    }
    if (vh_opt.unwind == VH_UNWIND_FP) {
        if (t->stack_hi)
            n = fp_walk(t, buf, want);
    } else {
        t->own++;
        t->unwinding = 1;
        int r = unw_backtrace((void **)buf, (int)want);
        t->unwinding = 0;
        t->own--;
        n = r > 0 ? (uint32_t)r : 0;
    }
    uint32_t k = 0;
    while (k < n && is_own(buf[k]))
        k++;
    n -= k;
    *skip = k;
    *truncated = n > max;
    return n > max ? max : n;
}
