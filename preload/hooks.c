/* hooks.c — the interposed allocator entry points (and dlclose, pipe2).
 *
 * Rules for every hook: the fast path is the one vh_fast_ok() test; anything
 * unusual (first call, nested call, the shim's own call, fork, disabled) goes
 * to vh_enter_slow(), which decides whether to record. The real call runs at
 * guard REAL, bookkeeping at guard BUSY; errno is what the real call left.
 * Each hook calls vh_stack_here() itself, so its frame is on the stack that
 * the unwinder trims (unwind.c drops every leading frame inside libvheap).
 * Times: an allocation's after the real call and after the stack lookup, a
 * free's before the real free — so a block's free sorts before its reuse on
 * another thread, up to the unfenced TSC's slack that the loader settles
 * (internal.h's vh_tsc). */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <sys/syscall.h>
#include <unistd.h>

#include "preload/internal.h"

/* ALLOC / RESIZE / FREE are encoded by internal.h (compact records). */
#define put_alloc vh_put_alloc
#define put_free vh_put_free

/* ---- helpers ------------------------------------------------------------------ */
/* An ALLOC record for a call that already returned p. Guard is BUSY. */
VH_ALWAYS_INLINE void note_alloc(struct vh_tls *t, unsigned func, void *p, uint64_t size,
                                 uint32_t stack)
{
    /* Sampling: the block's free is recorded only if it is in the set. */
    if (vh_unlikely(vh_sample_rate) && p && !vh_sample_keep((uintptr_t)p))
        return;
    uint64_t usable = vh_usable_of(p);
    uint64_t now = vh_now();
    put_alloc(t, VH_REC_ALLOC, VH_HEAP_SYSTEM, func, p ? 0 : VH_RF_FAILED, (uintptr_t)p,
              size, usable, stack, t->tag, now);
    vh_rss_due(t, now);
}

/* Unrecorded calls (the C++ operators' own mallocs among them) get the
 * address space back too when they run out of it. */
static void *pass_malloc(size_t n)
{
    void *(*f)(size_t) = __atomic_load_n(&vh_real.malloc, __ATOMIC_ACQUIRE);
    if (!f)
        return vh_boot_alloc(n, 16);
    void *p = f(n);
    if (vh_unlikely(!p) && vh_oom_retry())
        p = f(n);
    return p;
}

static void *pass_calloc(size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    void *(*f)(size_t, size_t) = __atomic_load_n(&vh_real.calloc, __ATOMIC_ACQUIRE);
    return f ? f(a, b) : vh_boot_alloc(n, 16);
}

static void *pass_memalign(size_t align, size_t n)
{
    void *(*f)(size_t, size_t) = __atomic_load_n(&vh_real.memalign, __ATOMIC_ACQUIRE);
    return f ? f(align, n) : vh_boot_alloc(n, align);
}

static void pass_free(void *p)
{
    if (vh_real.free)
        vh_real.free(p);
}

/* realloc of a block from the bootstrap buffer: copy it out. */
static VH_NOINLINE void *boot_realloc(void *p, size_t n)
{
    if (!p)
        return pass_malloc(n);     /* realloc(NULL, n) before the real one is known */
    size_t old = vh_boot_usable(p);
    void *q = pass_malloc(n ? n : 1);
    if (q)
        memcpy(q, p, old < n ? old : n);
    return q;
}

#define ENTER_OR(t, passthrough)                                               \
    do {                                                                       \
        if (vh_unlikely(!vh_fast_ok(t)) && !vh_enter_slow(t))                  \
            return passthrough;                                                \
    } while (0)

/* An allocation of `size` the sampling leaves out (sample.c) goes straight
 * to the real allocator: no walk, no record. */
#define SAMPLED_OR(t, size, passthrough)                                       \
    do {                                                                       \
        if (vh_unlikely(vh_sample_rate) && !vh_sampled(t, size))               \
            return passthrough;                                                \
    } while (0)

/* A free of a block the sampling left out: not recorded. The count array
 * answers nearly every one inline; only a possible hit looks in the set. */
VH_ALWAYS_INLINE int unsampled_free(void *p)
{
    return vh_unlikely(vh_sample_rate) &&
           (!vh_sampled_maybe((uintptr_t)p) || !vh_sampled_take((uintptr_t)p));
}

/* ---- the malloc family -------------------------------------------------------------- */
/* malloc and free are split: the exported function holds the checks that
 * send a call straight to the real allocator (sampling), and jumps to the
 * recording body, so a call passed through never pays for the registers
 * the body saves (about 5 instructions a call, under VHEAP_SAMPLE). */
static VH_NOINLINE void *malloc_recorded(size_t size)
{
    struct vh_tls *t = &vh_tls;
    ENTER_OR(t, pass_malloc(size));
    uint8_t g = vh_real_begin(t);
    void *p = vh_real.malloc(size);
    if (vh_unlikely(!p) && vh_oom_retry())
        p = vh_real.malloc(size);
    struct vh_hook h = vh_real_end(t, g);
    note_alloc(t, VH_FN_MALLOC, p, size, vh_stack_here(t));
    vh_hook_leave(t, h);
    return p;
}

VH_EXPORT void *malloc(size_t size)
{
    /* Before anything else: vh_sample_rate is set only once init has
     * found the real functions, and an unsampled call is no event in any
     * mode (nested, the shim's own, paused). */
    SAMPLED_OR(&vh_tls, size, vh_real.malloc(size));
    return malloc_recorded(size);
}

static VH_NOINLINE void free_recorded(void *p)
{
    struct vh_tls *t = &vh_tls;
    /* Under sampling free() passed the count test: look in the set. */
    if ((vh_unlikely(!vh_fast_ok(t)) && !vh_enter_slow(t)) ||
        (vh_unlikely(vh_sample_rate) && !vh_sampled_take((uintptr_t)p))) {
        pass_free(p);
        return;
    }
    struct vh_hook h = vh_hook_enter(t);
    uint64_t now = vh_now();
    put_free(t, VH_HEAP_SYSTEM, VH_FN_FREE, 0, (uintptr_t)p, now);
    vh_rss_due(t, now);
    vh_hook_to_real(t, h);
    vh_real.free(p);
    vh_unbusy(t, h.guard);
}

VH_EXPORT void free(void *p)
{
    /* Under sampling, the count array first: a zero says the block was not
     * sampled (NULL included; bootstrap blocks never have one), and the
     * call goes to the real free as early as an unsampled malloc does. */
    if (vh_unlikely(vh_sample_rate) && !vh_sampled_maybe((uintptr_t)p)) {
        vh_real.free(p);
        return;
    }
    if (!p)
        return;                    /* free(NULL): nothing happened */
    if (vh_unlikely(vh_boot_owns(p)))
        return;
    free_recorded(p);
}

/* The request's size; an overflow is recorded as a failed request that
 * big (and under sampling always sampled: no countdown is that long). */
VH_ALWAYS_INLINE uint64_t calloc_size(size_t n, size_t each)
{
    uint64_t size;
    return __builtin_mul_overflow((uint64_t)n, (uint64_t)each, &size) ? UINT64_MAX : size;
}

static VH_NOINLINE void *calloc_recorded(size_t n, size_t each)
{
    struct vh_tls *t = &vh_tls;
    ENTER_OR(t, pass_calloc(n, each));
    uint64_t size = calloc_size(n, each);
    uint8_t g = vh_real_begin(t);
    void *p = vh_real.calloc(n, each);
    if (vh_unlikely(!p) && vh_oom_retry())
        p = vh_real.calloc(n, each);
    struct vh_hook h = vh_real_end(t, g);
    note_alloc(t, VH_FN_CALLOC, p, size, vh_stack_here(t));
    vh_hook_leave(t, h);
    return p;
}

/* The countdown reached (under sampling): sampled, or not after all (a
 * thread's first draw). Apart, so that calloc's common path saves no
 * registers for this call. */
static VH_NOINLINE void *calloc_due(size_t n, size_t each)
{
    if (vh_sample_due(&vh_tls, calloc_size(n, each)))
        return calloc_recorded(n, each);
    return vh_real.calloc(n, each);
}

/* Split as malloc is. */
VH_EXPORT void *calloc(size_t n, size_t each)
{
    if (vh_likely(!vh_sample_rate))
        return calloc_recorded(n, each);
    uint64_t size = calloc_size(n, each), left = vh_tls.sample_left;
    if (vh_unlikely(size >= left))
        return calloc_due(n, each);
    vh_tls.sample_left = left - size;   /* vh_sampled's common case */
    return vh_real.calloc(n, each);
}

/* The common part of realloc, reallocarray and rallocx. `call` does the real
 * resize. Runs entirely at guard BUSY: a signal handler allocating while the
 * real realloc runs is counted as nested, because the FREE half's time was
 * taken before and the chunk's times must not go backwards. */
VH_ALWAYS_INLINE void note_resize(struct vh_tls *t, unsigned func, void *p, void *q,
                                  uint64_t size, uint32_t stack, uint64_t t_free, int frees_on_zero)
{
    if (!q) {
        if (size == 0 && frees_on_zero) {
            put_free(t, VH_HEAP_SYSTEM, func, 0, (uintptr_t)p, t_free);
            vh_rss_due(t, t_free);
        } else {
            note_alloc(t, func, NULL, size, stack);   /* old block untouched */
        }
        return;
    }
    uint64_t usable = vh_usable_of(q);
    uint64_t now = vh_now();
    if (q == p) {
        put_alloc(t, VH_REC_RESIZE, VH_HEAP_SYSTEM, func, 0, (uintptr_t)q, size, usable,
                  stack, t->tag, now);
    } else {
        put_free(t, VH_HEAP_SYSTEM, func, VH_RF_REALLOC, (uintptr_t)p, t_free);
        put_alloc(t, VH_REC_ALLOC, VH_HEAP_SYSTEM, func, VH_RF_REALLOC, (uintptr_t)q, size,
                  usable, stack, t->tag, now);
    }
    vh_rss_due(t, now);
}

/* The recorded part of realloc and reallocarray (guard BUSY on entry and
 * exit; *err gets the errno the real call left). realloc(NULL, n) is an
 * allocation. Otherwise the free half is stamped before the real call: the
 * old block may be handed to another thread the moment realloc releases it. */
VH_ALWAYS_INLINE void *realloc_all(struct vh_tls *t, unsigned func, void *p, size_t size,
                                   int *err)
{
    void *q;
    if (!p) {
        vh_unbusy(t, VH_G_REAL);
        q = vh_real.realloc(NULL, size);
        *err = *vh_errno_loc(t);
        (void)vh_busy(t);
        note_alloc(t, func, q, size, vh_stack_here(t));
        return q;
    }
    int e = *vh_errno_loc(t);
    uint32_t stack = vh_stack_here(t);
    uint64_t t_free = vh_now();
    *vh_errno_loc(t) = e;
    q = vh_real.realloc(p, size);
    if (vh_unlikely(!q && size) && vh_oom_retry())
        q = vh_real.realloc(p, size);
    *err = *vh_errno_loc(t);
    note_resize(t, func, p, q, size, stack, t_free, 1);
    return q;
}

/* Under sampling (guard BUSY on entry and exit): the old block is known
 * only if it was sampled, the new one is recorded only if its size was
 * sampled (`now`: the caller's vh_sampled). */
static VH_NOINLINE void *realloc_sampled(struct vh_tls *t, unsigned func, void *p, size_t size,
                                         int *err, int now)
{
    int was = p && vh_sampled_take((uintptr_t)p);
    void *q;
    if (!was && !now) {            /* neither block is in the capture */
        q = vh_real.realloc(p, size);
        *err = *vh_errno_loc(t);
        return q;
    }
    if (!was) {                    /* a block new to the capture */
        q = vh_real.realloc(p, size);
        *err = *vh_errno_loc(t);
        if (q || size)
            note_alloc(t, func, q, size, vh_stack_here(t));
        return q;
    }
    if (!now) {                    /* the old block leaves the capture */
        uint64_t t_free = vh_now();
        q = vh_real.realloc(p, size);
        *err = *vh_errno_loc(t);
        if (q || size == 0)
            put_free(t, VH_HEAP_SYSTEM, func, q ? VH_RF_REALLOC : 0, (uintptr_t)p, t_free);
        else
            vh_sampled_add((uintptr_t)p);   /* failed: the old block stays */
        return q;
    }
    q = realloc_all(t, func, p, size, err);
    if (q)
        vh_sampled_add((uintptr_t)q);
    else if (size)
        vh_sampled_add((uintptr_t)p);       /* failed: the old block stays */
    return q;
}

VH_ALWAYS_INLINE void *realloc_recorded(struct vh_tls *t, unsigned func, void *p, size_t size,
                                        int *err, int now)
{
    if (vh_unlikely(vh_sample_rate))
        return realloc_sampled(t, func, p, size, err, now);
    return realloc_all(t, func, p, size, err);
}

/* realloc's body, split from the checks as malloc's is; `now`: whether
 * the new size was sampled (under sampling). */
static VH_NOINLINE void *realloc_body(void *p, size_t size, int now)
{
    struct vh_tls *t = &vh_tls;
    void *(*real)(void *, size_t) = vh_real.realloc;
    ENTER_OR(t, real ? real(p, size) : boot_realloc(p, size));
    uint8_t g = vh_busy(t);
    int e;
    void *q = realloc_recorded(t, VH_FN_REALLOC, p, size, &e, now);
    vh_hook_leave(t, (struct vh_hook){ .guard = g, .err = e });
    return q;
}

/* Under sampling, past the common case: the countdown decides. */
static VH_NOINLINE void *realloc_counted(void *p, size_t size)
{
    return realloc_body(p, size, vh_sampled(&vh_tls, size));
}

VH_EXPORT void *realloc(void *p, size_t size)
{
    if (vh_unlikely(vh_boot_owns(p)))
        return boot_realloc(p, size);
    if (vh_likely(!vh_sample_rate))
        return realloc_body(p, size, 0);
    /* Under sampling, a realloc whose new size is not sampled and whose
     * old block was not (the count array says so at once) goes straight
     * to the real one, before anything else, as an unsampled malloc does. */
    uint64_t left = vh_tls.sample_left;
    if (vh_unlikely(size >= left) || (p && vh_sampled_maybe((uintptr_t)p)))
        return realloc_counted(p, size);
    vh_tls.sample_left = left - size;   /* vh_sampled's common case */
    return vh_real.realloc(p, size);
}

VH_EXPORT void *reallocarray(void *p, size_t n, size_t each)
{
    size_t size;
    int overflow = __builtin_mul_overflow(n, each, &size);
    if (vh_unlikely(vh_boot_owns(p)))
        return overflow ? (errno = ENOMEM, NULL) : boot_realloc(p, size);
    struct vh_tls *t = &vh_tls;
    void *(*real)(void *, size_t) = vh_real.realloc;
    ENTER_OR(t, overflow ? (errno = ENOMEM, NULL)
                         : real ? real(p, size) : boot_realloc(p, size));
    /* Never glibc's reallocarray: it calls realloc through the PLT, which
     * would be this shim again. */
    uint8_t g = vh_busy(t);
    void *q;
    int e;
    if (overflow) {
        note_alloc(t, VH_FN_REALLOCARRAY, NULL, UINT64_MAX, vh_stack_here(t));
        q = NULL;
        e = ENOMEM;
    } else {
        q = realloc_recorded(t, VH_FN_REALLOCARRAY, p, size, &e,
                             vh_unlikely(vh_sample_rate) && vh_sampled(t, size));
    }
    vh_hook_leave(t, (struct vh_hook){ .guard = g, .err = e });
    return q;
}

VH_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
    struct vh_tls *t = &vh_tls;
    int (*real)(void **, size_t, size_t) = vh_real.posix_memalign;
    if (vh_unlikely(!vh_fast_ok(t)) && !vh_enter_slow(t)) {
        if (real)
            return real(out, align, size);
        void *p = vh_boot_alloc(size, align);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    if (vh_unlikely(vh_sample_rate) && !vh_sampled(t, size))
        return real(out, align, size);
    /* errno as before the call: posix_memalign reports by its result. */
    struct vh_hook h = { .guard = t->guard, .err = *vh_errno_loc(t) };
    t->guard = VH_G_REAL;
    int rc = real(out, align, size);
    if (vh_unlikely(rc == ENOMEM) && vh_oom_retry())
        rc = real(out, align, size);
    (void)vh_busy(t);
    note_alloc(t, VH_FN_POSIX_MEMALIGN, rc == 0 ? *out : NULL, size, vh_stack_here(t));
    vh_hook_leave(t, h);
    return rc;
}

#define ALIGNED_HOOK(name, FN, args, call, pass, sizeexpr)                   \
    VH_EXPORT void *name args                                                 \
    {                                                                         \
        struct vh_tls *t = &vh_tls;                                           \
        ENTER_OR(t, pass);                                                    \
        SAMPLED_OR(t, sizeexpr, pass);                                        \
        uint8_t g = vh_real_begin(t);                                         \
        void *p = call;                                                       \
        if (vh_unlikely(!p) && vh_oom_retry())                                \
            p = call;                                                         \
        struct vh_hook h = vh_real_end(t, g);                                 \
        note_alloc(t, FN, p, sizeexpr, vh_stack_here(t));                     \
        vh_hook_leave(t, h);                                                  \
        return p;                                                             \
    }

ALIGNED_HOOK(aligned_alloc, VH_FN_ALIGNED_ALLOC, (size_t align, size_t size),
             vh_real.aligned_alloc(align, size),
             vh_real.aligned_alloc ? vh_real.aligned_alloc(align, size)
                                   : pass_memalign(align, size),
             size)
ALIGNED_HOOK(memalign, VH_FN_MEMALIGN, (size_t align, size_t size),
             vh_real.memalign(align, size), pass_memalign(align, size), size)
ALIGNED_HOOK(valloc, VH_FN_VALLOC, (size_t size), vh_real.valloc(size),
             vh_real.valloc ? vh_real.valloc(size) : pass_memalign(4096, size), size)
ALIGNED_HOOK(pvalloc, VH_FN_PVALLOC, (size_t size), vh_real.pvalloc(size),
             vh_real.pvalloc ? vh_real.pvalloc(size) : pass_memalign(4096, size), size)

/* ---- jemalloc's non-standard API ----------------------------------------------------
 * With a jemalloc that exports it, the real functions are called and
 * sallocx() gives the usable size. Without one, the calls are emulated on
 * the system allocator so a program that uses them still works. */
#define X_LG_ALIGN(flags) ((unsigned)(flags) & 63u)
#define X_ZERO 0x40

static void *emu_mallocx(size_t size, int flags)
{
    size_t align = X_LG_ALIGN(flags) ? (size_t)1 << X_LG_ALIGN(flags) : 0;
    void *p = NULL;
    if (align > 16) {
        if (align < sizeof(void *))
            align = sizeof(void *);
        if (vh_real.posix_memalign(&p, align, size ? size : 1) != 0)
            p = NULL;
        if (p && (flags & X_ZERO))
            memset(p, 0, size);
    } else if (flags & X_ZERO) {
        p = vh_real.calloc(1, size ? size : 1);
    } else {
        p = vh_real.malloc(size ? size : 1);
    }
    return p;
}

static void *emu_rallocx(void *p, size_t size, int flags)
{
    size_t align = X_LG_ALIGN(flags) ? (size_t)1 << X_LG_ALIGN(flags) : 0;
    size_t old = vh_real.usable(p);
    if (!size)
        size = 1;                  /* rallocx never frees */
    void *q;
    if (align > 16) {
        q = emu_mallocx(size, flags & ~X_ZERO);
        if (!q)
            return NULL;
        memcpy(q, p, old < size ? old : size);
        vh_real.free(p);
    } else {
        q = vh_real.realloc(p, size);
        if (!q)
            return NULL;
    }
    if ((flags & X_ZERO) && size > old)
        memset((char *)q + old, 0, size - old);
    return q;
}

static void *call_mallocx(size_t size, int flags)
{
    return vh_real.mallocx ? vh_real.mallocx(size, flags) : emu_mallocx(size, flags);
}

static void *call_rallocx(void *p, size_t size, int flags)
{
    return vh_real.mallocx ? vh_real.rallocx(p, size, flags) : emu_rallocx(p, size, flags);
}

static size_t call_xallocx(void *p, size_t size, size_t extra, int flags)
{
    return vh_real.mallocx ? vh_real.xallocx(p, size, extra, flags) : vh_real.usable(p);
}

static void call_dallocx(void *p, size_t size, int flags, int sized)
{
    if (!vh_real.mallocx)
        vh_real.free(p);
    else if (sized)
        vh_real.sdallocx(p, size, flags);
    else
        vh_real.dallocx(p, flags);
}

VH_EXPORT void *mallocx(size_t size, int flags)
{
    struct vh_tls *t = &vh_tls;
    if (!vh_real.malloc)
        vh_resolve_real();
    ENTER_OR(t, call_mallocx(size, flags));
    SAMPLED_OR(t, size, call_mallocx(size, flags));
    uint8_t g = vh_real_begin(t);
    void *p = call_mallocx(size, flags);
    struct vh_hook h = vh_real_end(t, g);
    note_alloc(t, VH_FN_MALLOCX, p, size, vh_stack_here(t));
    vh_hook_leave(t, h);
    return p;
}

VH_EXPORT void *rallocx(void *p, size_t size, int flags)
{
    struct vh_tls *t = &vh_tls;
    if (!vh_real.malloc)
        vh_resolve_real();
    if (vh_unlikely(vh_boot_owns(p)))
        return boot_realloc(p, size);
    ENTER_OR(t, call_rallocx(p, size, flags));
    /* Sampling: recorded when the old block was sampled or the new size
     * is (an old block that was not reads as an unknown free). */
    if (vh_unlikely(vh_sample_rate)) {
        int was = vh_sampled_take((uintptr_t)p), now = vh_sampled(t, size);
        if (!was && !now)
            return call_rallocx(p, size, flags);
    }
    struct vh_hook h = vh_hook_enter(t);
    uint32_t stack = vh_stack_here(t);
    uint64_t t_free = vh_now();
    *vh_errno_loc(t) = h.err;
    void *q = call_rallocx(p, size, flags);
    h.err = *vh_errno_loc(t);
    note_resize(t, VH_FN_RALLOCX, p, q, size, stack, t_free, 0);
    if (vh_unlikely(vh_sample_rate))
        vh_sampled_add((uintptr_t)(q ? q : p));
    vh_hook_leave(t, h);
    return q;
}

VH_EXPORT size_t xallocx(void *p, size_t size, size_t extra, int flags)
{
    struct vh_tls *t = &vh_tls;
    if (!vh_real.malloc)
        vh_resolve_real();
    if (vh_unlikely(vh_boot_owns(p)))
        return vh_boot_usable(p);
    ENTER_OR(t, call_xallocx(p, size, extra, flags));
    if (vh_unlikely(vh_sample_rate)) {
        if (!vh_sampled_take((uintptr_t)p))
            return call_xallocx(p, size, extra, flags);
        vh_sampled_add((uintptr_t)p);       /* it stays: in place */
    }
    /* errno as before the call: xallocx reports by its result. */
    struct vh_hook h = { .guard = t->guard, .err = *vh_errno_loc(t) };
    t->guard = VH_G_REAL;
    size_t got = call_xallocx(p, size, extra, flags);
    (void)vh_busy(t);
    /* In place by definition; a result below `size` means it could not grow
     * and the block is as it was. */
    if (got >= size) {
        uint32_t stack = vh_stack_here(t);
        uint64_t now = vh_now();
        put_alloc(t, VH_REC_RESIZE, VH_HEAP_SYSTEM, VH_FN_XALLOCX, 0, (uintptr_t)p, size,
                  got, stack, t->tag, now);
        vh_rss_due(t, now);
    }
    vh_hook_leave(t, h);
    return got;
}

VH_ALWAYS_INLINE void free_x(void *p, size_t size, int flags, int sized)
{
    if (!p || vh_boot_owns(p))
        return;
    struct vh_tls *t = &vh_tls;
    if (!vh_real.malloc)
        vh_resolve_real();
    if ((vh_unlikely(!vh_fast_ok(t)) && !vh_enter_slow(t)) || unsampled_free(p)) {
        call_dallocx(p, size, flags, sized);
        return;
    }
    struct vh_hook h = vh_hook_enter(t);
    uint64_t now = vh_now();
    put_free(t, VH_HEAP_SYSTEM, sized ? VH_FN_SDALLOCX : VH_FN_DALLOCX, 0, (uintptr_t)p, now);
    vh_rss_due(t, now);
    vh_hook_to_real(t, h);
    call_dallocx(p, size, flags, sized);
    vh_unbusy(t, h.guard);
}

VH_EXPORT void sdallocx(void *p, size_t size, int flags)
{
    free_x(p, size, flags, 1);
}

VH_EXPORT void dallocx(void *p, int flags)
{
    free_x(p, 0, flags, 0);
}

/* ---- exec ------------------------------------------------------------------------
 * The capture says what this image exec'd (capture.c): a program run by
 * `sh -c 'exec ./prog'` that writes no capture of its own is then named.
 * The call itself is the kernel's, as glibc's execve is; execv is execve
 * with the environment. (glibc's execvp and execl* call execve inside libc,
 * past the shim: those execs are not marked.) */
VH_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    vh_capture_exec(path);
    int rc = (int)syscall(SYS_execve, path, argv, envp);
    int e = errno;
    vh_capture_exec_failed();
    errno = e;
    return rc;
}

VH_EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

/* ---- dlclose -------------------------------------------------------------------
 * modules.c keeps the list; the unload must reach it before any stack is
 * looked up again. */
/* The count goes up before the real dlclose: from the moment the library
 * can be gone, every stack lookup settles the module list first (another
 * thread may map a new library at its address and call into it before
 * this one reaches its diff). It goes down after the diff, by when the
 * generation is bumped. */
VH_EXPORT int dlclose(void *handle)
{
    struct vh_tls *t = &vh_tls;
    if (!vh_real.dlclose)
        vh_resolve_real();
    if (!vh_real.dlclose)
        return -1;
    vh_cxx_pin();
    int track = __atomic_load_n(&vh_mode, __ATOMIC_ACQUIRE) == VH_MODE_ON && !t->own &&
                t->guard != VH_G_BUSY;
    if (track)
        __atomic_fetch_add(&vh_modules_closing, 1, __ATOMIC_SEQ_CST);
    int rc = vh_real.dlclose(handle);
    if (track) {
        int e = errno;
        uint8_t g = vh_busy(t);
        vh_modules_poll(t);
        vh_unbusy(t, g);
        vh_modules_closing_done();
        errno = e;
    }
    return rc;
}

/* ---- libunwind's pipe ---------------------------------------------------------
 * libunwind keeps a pipe (it checks that an address is readable by writing
 * a byte from it), opened at its initialization, which the shim triggers:
 * kept, it would take two of the program's descriptors for good (and its
 * lowest numbers, which a daemon that closes everything reuses). pipe2 is
 * interposed for that one caller: a pipe asked for while the thread is
 * inside the shim is refused, and libunwind checks addresses with mincore
 * alone. The program's own pipes pass straight to the kernel. */
VH_EXPORT int pipe2(int fds[2], int flags)
{
    struct vh_tls *t = &vh_tls;
    if (t->own || t->guard == VH_G_BUSY) {
        errno = EMFILE;
        return -1;
    }
    return (int)syscall(SYS_pipe2, fds, flags);
}
