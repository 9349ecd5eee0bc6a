/* hooks_cxx.c — C++'s replaceable global operator new and delete, hooked by
 * their Itanium names (x86_64: size_t is `m`), so that programs whose
 * operator new does not go through malloc (jemalloc's and tcmalloc's replace
 * it) are profiled too. Each hook forwards to the next definition and
 * records one event under its own vh_func.
 *
 * Rules, on top of hooks.c's:
 * - Whatever the real operator runs underneath (libstdc++'s new calls
 *   malloc, new[] calls new, jemalloc's delete calls free) is its
 *   implementation, not events: the real call runs with `own` raised, so
 *   those calls pass through uncounted. A call made further down the stack
 *   than the real operator's own calls reach (VH_CXX_INNER_MAX below the
 *   hook's frame, which cxx_sp holds), or on another stack, is a signal
 *   handler's (or a deep new_handler's): recorded like any other event
 *   (lifecycle.c's vh_enter_slow). Signals stay unblocked: this window is
 *   on the hot path, unlike the shim's rare own windows.
 * - A throwing operator new may throw through the hook: this file is built
 *   with -fexceptions (GNUmakefile), and a cleanup lowers `own` again on the
 *   way out; a recording hook then writes the call as a failed allocation
 *   (std::bad_alloc is C++'s NULL). The exception object itself is
 *   allocated inside the real new (unrecorded); its free after the catch is
 *   recorded and reads as the free of an unknown block.
 * - A definition that cannot be found (a C++ library loaded RTLD_LOCAL into
 *   a program without libstdc++ in its global scope, and no libstdc++.so.6
 *   loaded either) is never called: the malloc family stands in, and a
 *   failed throwing new aborts, there being no runtime to throw from.
 * - delete(NULL) does nothing and records nothing, like free(NULL). */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>

#include "preload/internal.h"

/* The hooked operators, in vh_func's order from VH_FN_OPERATOR_NEW. */
enum cxx_op {
    OP_NEW, OP_NEW_ARRAY, OP_NEW_NOTHROW, OP_NEW_ARRAY_NOTHROW,
    OP_NEW_ALIGNED, OP_NEW_ARRAY_ALIGNED, OP_NEW_ALIGNED_NOTHROW, OP_NEW_ARRAY_ALIGNED_NOTHROW,
    OP_DELETE, OP_DELETE_ARRAY, OP_DELETE_SIZED, OP_DELETE_ARRAY_SIZED,
    OP_DELETE_ALIGNED, OP_DELETE_ARRAY_ALIGNED, OP_DELETE_SIZED_ALIGNED,
    OP_DELETE_ARRAY_SIZED_ALIGNED, OP_DELETE_NOTHROW, OP_DELETE_ARRAY_NOTHROW,
    OP_DELETE_ALIGNED_NOTHROW, OP_DELETE_ARRAY_ALIGNED_NOTHROW,
    OP_COUNT
};
_Static_assert(VH_FN_OPERATOR_NEW + OP_COUNT == VH_FN_MMAP &&
               VH_FN_OPERATOR_NEW + OP_DELETE == VH_FN_OPERATOR_DELETE,
               "enum cxx_op follows enum vh_func");

static const char *const op_symbol[OP_COUNT] = {
    "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
    "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm",
    "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t",
    "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
    "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};

/* The next definitions; fixed once cxx_ready is set (a pointer that stays
 * NULL keeps its malloc-family stand-in for the rest of the run, so a block
 * never meets an allocator other than its own). */
static void *real_op[OP_COUNT];
static int cxx_ready;              /* atomic */

/* The modules that define the operators found: kept loaded for good (a
 * cached pointer into a library dlclose'd and unmapped would be called
 * later). Found by address with dl_iterate_phdr (dladdr would search each
 * one's symbol table); dlopen'ed after it returns, outside its lock —
 * from the dlclose hook (vh_cxx_pin), never the operator hook: glibc
 * clears a pending dlerror() message on every dl* call. */
struct pin_scan {
    void *const *fn;
    const char *name[OP_COUNT];
    int n;
    unsigned seen;                 /* objects visited so far               */
};

/* The objects the process started with (vh_modules_startup) need no pin.
 * Pinning one (dlopen) while startup is still running its constructors
 * would run its constructor early, from inside an allocator call:
 * tcmalloc's, run from its own malloc_usable_size, registered itself and
 * was then overwritten by the default it was being asked to create (every
 * usable size read 0). */
static int pin_scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct pin_scan *ps = arg;
    if (ps->seen++ < vh_modules_startup() || !info->dlpi_name ||
        !info->dlpi_name[0] || ps->n == OP_COUNT)
        return 0;                  /* loaded at startup: never unloaded */
    for (int i = 0; i < OP_COUNT; i++) {
        uintptr_t a = (uintptr_t)ps->fn[i];
        for (int k = 0; a && k < info->dlpi_phnum; k++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
            if (ph->p_type == PT_LOAD && a - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz) {
                ps->name[ps->n++] = info->dlpi_name;
                return 0;
            }
        }
    }
    return 0;
}

static void pin_modules(void *const *fn)
{
    struct pin_scan ps = { .fn = fn };
    dl_iterate_phdr(pin_scan_one, &ps);
    for (int i = 0; i < ps.n; i++)
        (void)dlopen(ps.name[i], RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);  /* never closed */
}

/* Looks every operator up once, in the symbol tables (elfsym.c: no dlsym,
 * whose failed lookups would leave an error for the program's dlerror()).
 * Several threads may get here at once: no lock is held (a thread running
 * a library constructor holds the loader's while it allocates); each finds
 * the same answer, as in bootstrap.c. Objects dlopen'ed RTLD_LOCAL are
 * searched too: such a C++ library's libstdc++ is reachable nowhere else. */
static VH_NOINLINE void cxx_resolve(void)
{
    struct vh_tls *t = &vh_tls;
    if (!__atomic_load_n(&vh_real.malloc, __ATOMIC_ACQUIRE))
        vh_resolve_real();        /* the malloc-family stand-ins need it */
    sigset_t saved;
    vh_own_begin(t, &saved);      /* a handler meanwhile runs after: counted */
    for (int i = 0; i < OP_COUNT; i++)
        __atomic_store_n(&real_op[i], vh_sym_next(op_symbol[i]), __ATOMIC_RELAXED);
    __atomic_store_n(&cxx_ready, 1, __ATOMIC_RELEASE);
    vh_own_end(t, &saved);
}

/* Before the program's dlclose (hooks.c): the operators' modules pinned,
 * once they are known. There the loader's error state is that call's. */
void vh_cxx_pin(void)
{
    static int pinned;             /* atomic */
    if (!__atomic_load_n(&cxx_ready, __ATOMIC_ACQUIRE) ||
        __atomic_exchange_n(&pinned, 1, __ATOMIC_ACQ_REL))
        return;
    struct vh_tls *t = &vh_tls;
    void *fn[OP_COUNT];
    for (int i = 0; i < OP_COUNT; i++)
        fn[i] = __atomic_load_n(&real_op[i], __ATOMIC_RELAXED);
    sigset_t saved;
    vh_own_begin(t, &saved);       /* what dlopen allocates is ours */
    pin_modules(fn);
    vh_own_end(t, &saved);
}

VH_ALWAYS_INLINE void *real_of(enum cxx_op op)
{
    if (vh_unlikely(!__atomic_load_n(&cxx_ready, __ATOMIC_ACQUIRE)))
        cxx_resolve();
    return __atomic_load_n(&real_op[op], __ATOMIC_RELAXED);
}

/* ---- the real calls ---------------------------------------------------------- */
typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);
typedef void (*del_fn)(void *);
typedef void (*del_sz_fn)(void *, size_t);
typedef void (*del_al_fn)(void *, size_t);
typedef void (*del_sz_al_fn)(void *, size_t, size_t);
typedef void (*del_nt_fn)(void *, const void *);
typedef void (*del_al_nt_fn)(void *, size_t, const void *);

static int op_aligned(enum cxx_op op)
{
    return op == OP_NEW_ALIGNED || op == OP_NEW_ARRAY_ALIGNED ||
           op == OP_NEW_ALIGNED_NOTHROW || op == OP_NEW_ARRAY_ALIGNED_NOTHROW;
}

static int op_nothrow(enum cxx_op op)
{
    return op == OP_NEW_NOTHROW || op == OP_NEW_ARRAY_NOTHROW ||
           op == OP_NEW_ALIGNED_NOTHROW || op == OP_NEW_ARRAY_ALIGNED_NOTHROW;
}

/* operator new without a C++ runtime to forward to (see the rules). */
static VH_NOINLINE void *stand_in_new(enum cxx_op op, size_t size, size_t align)
{
    void *p = NULL;
    if (!size)
        size = 1;                  /* new(0) returns a distinct pointer */
    if (op_aligned(op)) {
        if (align < sizeof(void *))
            align = sizeof(void *);
        if (vh_real.posix_memalign(&p, align, size) != 0)
            p = NULL;
    } else {
        p = vh_real.malloc(size);
    }
    if (!p && !op_nothrow(op)) {
        vh_say("operator new(%zu) failed and no C++ runtime is reachable to throw "
               "std::bad_alloc: aborting", size);
        abort();
    }
    return p;
}

VH_ALWAYS_INLINE void *call_new(enum cxx_op op, size_t size, size_t align, const void *nt)
{
    void *f = real_of(op);
    if (vh_unlikely(!f))
        return stand_in_new(op, size, align);
    switch (op) {
    case OP_NEW:
    case OP_NEW_ARRAY: return ((new_fn)f)(size);
    case OP_NEW_NOTHROW:
    case OP_NEW_ARRAY_NOTHROW: return ((new_nt_fn)f)(size, nt);
    case OP_NEW_ALIGNED:
    case OP_NEW_ARRAY_ALIGNED: return ((new_al_fn)f)(size, align);
    default: return ((new_al_nt_fn)f)(size, align, nt);
    }
}

VH_ALWAYS_INLINE void call_delete(enum cxx_op op, void *p, size_t size, size_t align,
                                  const void *nt)
{
    void *f = real_of(op);
    if (vh_unlikely(!f)) {
        vh_real.free(p);           /* the stand-in new's blocks are malloc's */
        return;
    }
    switch (op) {
    case OP_DELETE:
    case OP_DELETE_ARRAY: ((del_fn)f)(p); return;
    case OP_DELETE_SIZED:
    case OP_DELETE_ARRAY_SIZED: ((del_sz_fn)f)(p, size); return;
    case OP_DELETE_ALIGNED:
    case OP_DELETE_ARRAY_ALIGNED: ((del_al_fn)f)(p, align); return;
    case OP_DELETE_SIZED_ALIGNED:
    case OP_DELETE_ARRAY_SIZED_ALIGNED: ((del_sz_al_fn)f)(p, size, align); return;
    case OP_DELETE_NOTHROW:
    case OP_DELETE_ARRAY_NOTHROW: ((del_nt_fn)f)(p, nt); return;
    default: ((del_al_nt_fn)f)(p, align, nt); return;
    }
}

/* ---- records ------------------------------------------------------------------- */
/* An ALLOC record for an operator new that returned p (NULL: failed).
 * Called at the guard the hook was entered with; keeps errno. */
VH_ALWAYS_INLINE void note_new(struct vh_tls *t, unsigned func, void *p, uint64_t size)
{
    /* Sampling: the block's delete is recorded only if it is in the set. */
    if (vh_unlikely(vh_sample_rate) && p && !vh_sample_keep((uintptr_t)p))
        return;
    struct vh_hook h = vh_hook_enter(t);
    uint32_t stack = vh_stack_here(t);
    uint64_t usable = vh_usable_of(p);
    uint64_t now = vh_now();
    vh_record_alloc(t, VH_REC_ALLOC, VH_HEAP_SYSTEM, func, p ? 0 : VH_RF_FAILED,
                    (uintptr_t)p, size, usable, stack, t->tag, now);
    if (vh_unlikely(vh_mmap_blocks))   /* VHEAP_MMAP=all (hooks_mmap.c) */
        vh_mmap_block_alloc(t, VH_REC_ALLOC, (uintptr_t)p, stack);
    vh_rss_due(t, now);
    vh_hook_leave(t, h);
}

/* ---- the cleanup's unwinder calls ------------------------------------------------
 * -fexceptions makes new_hook's cleanup name libgcc_s's personality routine
 * (in .eh_frame) and _Unwind_Resume (its landing pad's last call). Linking
 * libgcc_s for them made every program load it, 0.15 ms of a short run
 * (issue 28); these hidden stand-ins forward to the definitions of the
 * libgcc_s the process has. An exception reaching a hook's frame was
 * thrown by a C++ runtime, whose unwinder is that libgcc_s (it is loaded
 * with libstdc++): found then, by name (elfsym.c, no dlsym, no malloc).
 * Without one (an unwinder linked statically, and no libgcc_s loaded) the
 * frame is passed over, its cleanup not run. */
typedef int (*personality_fn)(int, int, uint64_t, void *, void *);
typedef void (*resume_fn)(void *);

__attribute__((used, visibility("hidden"))) int __gcc_personality_v0(int version, int actions,
                                                                     uint64_t cls, void *ue,
                                                                     void *ctx)
{
    static void *real;
    personality_fn f = (personality_fn)vh_sym_next_once(&real, "__gcc_personality_v0");
    return f ? f(version, actions, cls, ue, ctx) : 8;   /* _URC_CONTINUE_UNWIND */
}

__attribute__((used, visibility("hidden"), noreturn)) void _Unwind_Resume(void *ue)
{
    static void *real;
    resume_fn f = (resume_fn)vh_sym_next_once(&real, "_Unwind_Resume");
    if (f)
        f(ue);
    abort();                       /* a landing pad ran: the personality was found */
}

/* ---- the hooks ------------------------------------------------------------------ */
/* One real operator new call in flight. The cleanup runs when its scope is
 * left, by return or by an exception (-fexceptions). */
struct new_call {
    struct vh_tls *t;
    uintptr_t outer_sp;            /* cxx_sp to restore                     */
    unsigned func;                 /* VH_FN_*, VH_FN_NONE: not recorded     */
    uint64_t size;
    int returned;
};

/* The real operator new threw: a failed call. */
static VH_NOINLINE void note_thrown(struct new_call *c)
{
    note_new(c->t, c->func, NULL, c->size);
}

static inline void new_call_end(struct new_call *c)
{
    c->t->own--;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    c->t->cxx_sp = c->outer_sp;
    if (vh_unlikely(!c->returned) && c->func != VH_FN_NONE)
        note_thrown(c);
}

VH_ALWAYS_INLINE void *new_hook(enum cxx_op op, size_t size, size_t align, const void *nt)
{
    struct vh_tls *t = &vh_tls;
    /* Not recorded (nested in another real operator, or not recording):
     * still run with own raised, so what the real one calls is not counted
     * a second time as nested or dropped. */
    int record = (vh_likely(vh_fast_ok(t)) || vh_enter_slow(t)) &&
                 (vh_likely(!vh_sample_rate) || vh_sampled(t, size));
    void *p;
    {
        struct new_call c __attribute__((cleanup(new_call_end))) = {
            .t = t, .outer_sp = t->cxx_sp,
            .func = record ? VH_FN_OPERATOR_NEW + op : VH_FN_NONE, .size = size,
        };
        t->cxx_sp = (uintptr_t)__builtin_frame_address(0);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);   /* cxx_sp is set while own is */
        t->own++;
        p = call_new(op, size, align, nt);
        c.returned = 1;
    }
    if (record)
        note_new(t, VH_FN_OPERATOR_NEW + op, p, size);
    return p;
}

VH_ALWAYS_INLINE void delete_hook(enum cxx_op op, void *p, size_t size, size_t align,
                                  const void *nt)
{
    if (!p || vh_unlikely(vh_boot_owns(p)))
        return;
    struct vh_tls *t = &vh_tls;
    /* Under sampling, the count array answers nearly every delete inline. */
    if ((vh_likely(!vh_sample_rate) ||
         (vh_sampled_maybe((uintptr_t)p) && vh_sampled_take((uintptr_t)p))) &&
        (vh_likely(vh_fast_ok(t)) || vh_enter_slow(t))) {
        /* Stamped before the real delete: the block may be another
         * thread's the moment it returns. */
        struct vh_hook h = vh_hook_enter(t);
        uint64_t now = vh_now();
        vh_record_free(t, VH_HEAP_SYSTEM, VH_FN_OPERATOR_NEW + op, 0, (uintptr_t)p, now);
        if (vh_unlikely(vh_mmap_blocks))
            vh_mmap_block_free(t, (uintptr_t)p);
        vh_rss_due(t, now);
        vh_hook_leave(t, h);
    }
    uintptr_t outer_sp = t->cxx_sp;
    t->cxx_sp = (uintptr_t)__builtin_frame_address(0);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->own++;
    call_delete(op, p, size, align, nt);   /* noexcept: never throws past here */
    t->own--;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->cxx_sp = outer_sp;
}

/* std::align_val_t is an enum of size_t; std::nothrow_t is passed by
 * reference, forwarded untouched. */
VH_EXPORT void *_Znwm(size_t size)
{
    return new_hook(OP_NEW, size, 0, NULL);
}

VH_EXPORT void *_Znam(size_t size)
{
    return new_hook(OP_NEW_ARRAY, size, 0, NULL);
}

VH_EXPORT void *_ZnwmRKSt9nothrow_t(size_t size, const void *nt)
{
    return new_hook(OP_NEW_NOTHROW, size, 0, nt);
}

VH_EXPORT void *_ZnamRKSt9nothrow_t(size_t size, const void *nt)
{
    return new_hook(OP_NEW_ARRAY_NOTHROW, size, 0, nt);
}

VH_EXPORT void *_ZnwmSt11align_val_t(size_t size, size_t align)
{
    return new_hook(OP_NEW_ALIGNED, size, align, NULL);
}

VH_EXPORT void *_ZnamSt11align_val_t(size_t size, size_t align)
{
    return new_hook(OP_NEW_ARRAY_ALIGNED, size, align, NULL);
}

VH_EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt)
{
    return new_hook(OP_NEW_ALIGNED_NOTHROW, size, align, nt);
}

VH_EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt)
{
    return new_hook(OP_NEW_ARRAY_ALIGNED_NOTHROW, size, align, nt);
}

VH_EXPORT void _ZdlPv(void *p)
{
    delete_hook(OP_DELETE, p, 0, 0, NULL);
}

VH_EXPORT void _ZdaPv(void *p)
{
    delete_hook(OP_DELETE_ARRAY, p, 0, 0, NULL);
}

VH_EXPORT void _ZdlPvm(void *p, size_t size)
{
    delete_hook(OP_DELETE_SIZED, p, size, 0, NULL);
}

VH_EXPORT void _ZdaPvm(void *p, size_t size)
{
    delete_hook(OP_DELETE_ARRAY_SIZED, p, size, 0, NULL);
}

VH_EXPORT void _ZdlPvSt11align_val_t(void *p, size_t align)
{
    delete_hook(OP_DELETE_ALIGNED, p, 0, align, NULL);
}

VH_EXPORT void _ZdaPvSt11align_val_t(void *p, size_t align)
{
    delete_hook(OP_DELETE_ARRAY_ALIGNED, p, 0, align, NULL);
}

VH_EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align)
{
    delete_hook(OP_DELETE_SIZED_ALIGNED, p, size, align, NULL);
}

VH_EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align)
{
    delete_hook(OP_DELETE_ARRAY_SIZED_ALIGNED, p, size, align, NULL);
}

VH_EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *nt)
{
    delete_hook(OP_DELETE_NOTHROW, p, 0, 0, nt);
}

VH_EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *nt)
{
    delete_hook(OP_DELETE_ARRAY_NOTHROW, p, 0, 0, nt);
}

VH_EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt)
{
    delete_hook(OP_DELETE_ALIGNED_NOTHROW, p, 0, align, nt);
}

VH_EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt)
{
    delete_hook(OP_DELETE_ARRAY_ALIGNED_NOTHROW, p, 0, align, nt);
}
