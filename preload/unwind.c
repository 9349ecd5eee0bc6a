/* unwind.c — the call stack of the current allocation, as return addresses.
 *
 * The unwinders are the rows of a table (internal.h's VH_UNWINDERS, read
 * by VHEAP_UNWIND too). libunwind (default): DWARF unwinding, normally
 * through the cached per-address rules of cfi.c, with libunwind's
 * unw_backtrace for any stack those cannot do (DWARF expressions, stacks
 * we do not know). fp: a frame-pointer walk, for programs built with
 * -fno-omit-frame-pointer. Both step through signal frames (sigframe.h) and
 * only read inside the stack they are on: the thread's own, or its signal
 * stack. Frames inside libvheap (or libunwind) are dropped, so the first
 * frame is the return address in the allocator's caller whatever the
 * compiler did to the hooks. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <pthread.h>
#include <string.h>

#include "preload/internal.h"
#include "preload/sigframe.h"

/* Frames the shim itself may put on the stack above the caller's. */
#define SKIP_SLACK 8u

uintptr_t vh_self_lo, vh_self_hi;     /* libvheap.so's code */
#define self_lo vh_self_lo
#define self_hi vh_self_hi
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

/* libc's code segment: where the fp walker looks for the signal trampoline
 * (glibc's __restore_rt). A return address ret is checked only when the
 * trampoline's bytes at ret lie inside it: ret - tramp_lo < tramp_span. */
static uintptr_t tramp_lo, tramp_span;

static int code_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    uintptr_t addr = *(const uintptr_t *)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t s = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD || addr < s || addr - s >= ph->p_memsz)
            continue;
        if ((ph->p_flags & (PF_R | PF_X)) == (PF_R | PF_X) && ph->p_memsz >= VH_SIGTRAMP_LEN) {
            tramp_lo = s;
            tramp_span = ph->p_memsz - VH_SIGTRAMP_LEN + 1;
        }
        return 1;
    }
    return 0;
}

static int fp_init(void)
{
    /* Any libc function nobody interposes. */
    uintptr_t in_libc = (uintptr_t)&gnu_get_libc_version;
    dl_iterate_phdr(code_cb, &in_libc);
    return 0;
}

static int unw_init(void)
{
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    return vh_cfi_init();
}

/* The frame-pointer walk from fp (vh_stack_here's frame). Reads are 16
 * aligned bytes at a frame pointer, inside the stack being walked and above
 * the frame the walk entered it at, moving towards its base only: a
 * garbage rbp ends the walk. */
static VH_NOINLINE uint32_t fp_walk_from(struct vh_tls *t, uint64_t fp, uint64_t *buf,
                                         uint32_t want)
{
    uint64_t lo = t->stack_lo, hi = t->stack_hi;
    uint32_t n = 0;
    if (vh_unlikely(fp < lo || fp >= hi) &&
        vh_stack_span(t->stack_lo, t->stack_hi, fp, &lo, &hi) < 0)
        return 0;
    lo = fp;
    while (n < want) {
        if (fp < lo || fp > hi - 16 || (fp & 7))
            break;
        uint64_t next = ((const uint64_t *)fp)[0];
        uint64_t ret = ((const uint64_t *)fp)[1];
        if (!ret)
            break;
        buf[n++] = ret;
        if (vh_unlikely(ret - tramp_lo < tramp_span) && vh_sigtramp_is((const void *)ret)) {
            /* A signal handler's frame: the kernel's ucontext is right
             * above it (at the handler's CFA). The walk goes on in the
             * interrupted code: its exact PC (recorded as libunwind does),
             * then its frame pointer, which the handler saved (so it must
             * equal the saved rbp), on the stack its rsp is on. */
            struct vh_sigregs r;
            if (n == want || vh_sigframe_regs(fp + 16, fp + 16, hi, &r) < 0 || r.bp != next)
                break;
            if ((r.sp < lo || r.sp >= hi) &&
                vh_stack_span(t->stack_lo, t->stack_hi, r.sp, &lo, &hi) < 0)
                break;
            buf[n++] = r.ip;
            lo = r.sp;
            fp = next;
            continue;
        }
        if (next <= fp)
            break;
        fp = next;
    }
    return n;
}

/* The fp row's walk: only on a thread whose stack bounds are known. */
static uint32_t fp_walk(struct vh_tls *t, uint64_t fp, uint64_t *buf, uint32_t want)
{
    return t->stack_hi ? fp_walk_from(t, fp, buf, want) : 0;
}

/* The libunwind row's walk: unw_backtrace, for what the CFI rules cannot
 * do. unwinding is set whenever own is raised here (the fences keep the
 * order for a signal handler): a handler's call then always counts as
 * nested, never passes as the shim's own. */
static VH_NOINLINE uint32_t unw_walk(struct vh_tls *t, uint64_t fp, uint64_t *buf,
                                     uint32_t want)
{
    (void)fp;
    t->unwinding = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->own++;
    int r = unw_backtrace((void **)buf, (int)want);
    t->own--;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->unwinding = 0;
    return r > 0 ? (uint32_t)r : 0;
}

/* ---- the table ------------------------------------------------------------- */
struct unwinder {
    const char *name;
    int (*init)(void);             /* after the ranges; 0 or -1             */
    int cfi;                       /* cfi.c's cached rules walk first       */
    /* Raw return addresses from fp, the shim's own frames included. */
    uint32_t (*walk)(struct vh_tls *t, uint64_t fp, uint64_t *buf, uint32_t want);
    const char *doc;
};

#define UNWINDER_ROW(kind, n, i, c, w, d) [kind] = { n, i, c, w, d },
static const struct unwinder unwinders[] = { VH_UNWINDERS(UNWINDER_ROW) };
#define NUNWINDERS (sizeof unwinders / sizeof unwinders[0])

/* vh_opt.unwind is one of the option's choices, which are these rows. */
_Static_assert(NUNWINDERS == VH_UNWIND_FP + 1, "a row an enum vh_unwind_kind");
static inline const struct unwinder *chosen(void)
{
    return &unwinders[vh_opt.unwind];
}

int vh_unwind_init(void)
{
    module_range((const void *)&vh_unwind_init, &self_lo, &self_hi);
    module_range((const void *)&unw_backtrace, &unw_lo, &unw_hi);
    const struct unwinder *u = chosen();
    return self_hi && (!u->init || u->init() == 0) ? 0 : -1;
}

int vh_unwind_cfi(void)
{
    return chosen()->cfi;
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

/* The shim's own frames, by their frame pointers (the shim is built with
 * them), from fp inside [fp, hi): the state just after returning into the
 * first frame outside the shim, or -1. */
VH_ALWAYS_INLINE int skip_self(uint64_t fp, uint64_t hi, uint64_t *ip, uint64_t *sp,
                               uint64_t *rbp)
{
    uint64_t lo = fp;
    for (int i = 0; i < 16; i++) {
        if (fp < lo || fp > hi - 16 || (fp & 7))
            return -1;
        uint64_t next = ((const uint64_t *)fp)[0];
        uint64_t ret = ((const uint64_t *)fp)[1];
        if (!is_self(ret)) {
            *ip = ret;
            *sp = fp + 16;
            *rbp = next;
            return 0;
        }
        if (next <= fp)
            return -1;
        fp = next;
    }
    return -1;
}

/* cfi_unwind on the signal stack (or a stack we do not know: -1). */
static VH_NOINLINE int cfi_unwind_alt(struct vh_tls *t, uint64_t fp, uint64_t *buf,
                                      uint32_t want)
{
    uint64_t lo, hi, ip, sp, rbp;
    if (vh_stack_span(t->stack_lo, t->stack_hi, fp, &lo, &hi) < 0 ||
        skip_self(fp, hi, &ip, &sp, &rbp) < 0)
        return -1;
    return vh_cfi_walk_on(t, ip, sp, rbp, fp, hi, buf, want);
}

/* The default walker: the shim's own frames from fp (vh_stack_here's), then
 * the program's by cached CFI rules (cfi.c). Returns the count, or -1 when
 * libunwind must do this stack. */
VH_ALWAYS_INLINE int cfi_unwind(struct vh_tls *t, uint64_t fp, uint64_t *buf, uint32_t want,
                                uint64_t *fold, uint64_t **tag, uint32_t era)
{
    uint64_t ip, sp, rbp;
    if (vh_unlikely(fp < t->stack_lo || fp >= t->stack_hi))
        return cfi_unwind_alt(t, fp, buf, want);
    if (skip_self(fp, t->stack_hi, &ip, &sp, &rbp) < 0)
        return -1;
    return vh_cfi_walk(t, ip, sp, rbp, buf, want, fold, tag, era);
}

#ifdef VH_CFI_VERIFY
/* Debug builds (-DVH_CFI_VERIFY): every CFI walk is compared with
 * libunwind's, and differences are logged. */
static unsigned long verify_walks, verify_diffs, verify_fallbacks;
static void verify(struct vh_tls *t, const uint64_t *got, int n, uint32_t want,
                   const uint64_t *known)
{
    uint64_t ref[VH_MAX_DEPTH + SKIP_SLACK + 1];
    t->unwinding = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->own++;
    int m = unw_backtrace((void **)ref, (int)(want + SKIP_SLACK));
    t->own--;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->unwinding = 0;
    int k = 0;
    while (k < m && is_own(ref[k]))
        k++;
    m -= k;
    if (m > (int)want)
        m = (int)want;
    __atomic_fetch_add(&verify_walks, 1, __ATOMIC_RELAXED);
    if (known) {
        /* A known walk: its count and fold against libunwind's frames. */
        uint64_t fold;
        uint32_t frames = vh_cfi_known(known, &fold);
        if (frames == (uint32_t)m && fold == vh_hash_fold(ref + k, (uint32_t)m))
            return;
        unsigned long d = __atomic_fetch_add(&verify_diffs, 1, __ATOMIC_RELAXED);
        if (d < 8)
            vh_log("cfi verify: known walk of %u frames, libunwind %d", frames, m);
        return;
    }
    if (n < 0) {
        unsigned long f = __atomic_fetch_add(&verify_fallbacks, 1, __ATOMIC_RELAXED);
        if (f < 8) {
            char line[400];
            size_t len = 0;
            for (int i = 0; i < m && len < sizeof line - 30; i++)
                len += vh_format(line + len, sizeof line - len, " %lx", (unsigned long)ref[k + i]);
            vh_log("cfi verify: fell back; libunwind %d:%s", m, line);
        }
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

uint32_t vh_unwind(struct vh_tls *t, uint64_t fp, struct vh_walk *w)
{
    uint64_t *buf = w->buf;
    uint32_t max = w->max;
    uint32_t want = vh_unwind_want(max);
    uint32_t n = 0;
    /* Locals, not w's fields, go down to the CFI walk: w itself never has
     * its address taken, so once this is inlined (LTO) its fields live in
     * registers, as the out-parameters this replaced did. */
    uint64_t fold = 0, *tag = NULL;
    w->fold = 0;
    w->tag = NULL;
    /* Bounds are asked for at the thread's first event (vh_enter_slow);
     * never here, where this may be a signal handler inside malloc. */
    const struct unwinder *u = chosen();
    if (u->cfi && t->stack_hi) {
        int r = cfi_unwind(t, fp, buf, max + 1, &fold, &tag, w->era);
        w->fold = fold;
        w->tag = tag;
#ifdef VH_CFI_VERIFY
        verify(t, buf, r, max + 1, r == VH_WALK_KNOWN ? tag : NULL);
#endif
        if (vh_likely(r == VH_WALK_KNOWN)) {
            w->skip = 0;
            w->truncated = 0;
            return 0;              /* the word at w->tag says it all */
        }
        if (vh_likely(r >= 0)) {
            w->skip = 0;
            w->truncated = (uint32_t)r > max;
            return (uint32_t)r > max ? max : (uint32_t)r;
        }
    }
    n = u->walk(t, fp, buf, want);
    uint32_t k = 0;
    while (k < n && is_own(buf[k]))
        k++;
    n -= k;
    w->skip = k;
    w->truncated = n > max;
    return n > max ? max : n;
}
