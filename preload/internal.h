/* internal.h — what the files of the shim share: the per-thread state, the
 * process-wide capture state, the real allocator functions, and the inline
 * record writers of the hot path. Nothing here is exported from
 * libvheap.so; `vh_` names are cross-file, everything else is static. */
#ifndef VHEAP_PRELOAD_INTERNAL_H
#define VHEAP_PRELOAD_INTERNAL_H

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <time.h>

#include "common/capture_format.h"
#include "preload/sys.h"

#define VH_EXPORT __attribute__((visibility("default")))
#define VH_NOINLINE __attribute__((noinline))
#define VH_ALWAYS_INLINE static inline __attribute__((always_inline))
#define vh_likely(x) __builtin_expect(!!(x), 1)
#define vh_unlikely(x) __builtin_expect(!!(x), 0)

/* ---- options (options.c) ------------------------------------------------ */
struct vh_options {
    char out[1024];                /* VHEAP_OUT pattern                      */
    uint32_t depth;                /* VHEAP_DEPTH, 1..VH_MAX_DEPTH           */
    uint32_t unwind;               /* enum vh_unwind_kind                    */
    uint32_t quiet;                /* VHEAP_QUIET                            */
    uint32_t chunk_size;           /* VHEAP_CHUNK_SIZE, power of two         */
    uint64_t rss_interval_ns;      /* VHEAP_RSS_INTERVAL (ms), 0 = off      */
    uint32_t allow_setuid;         /* VHEAP_ALLOW_SETUID                     */
    uint32_t clock;                /* VHEAP_CLOCK: enum vh_clock_choice     */
    uint64_t sample;               /* VHEAP_SAMPLE bytes, 0 = every call    */
    uint32_t start;                /* VHEAP_START: enum vh_start_choice     */
    uint64_t reach_timeout_ns;     /* VHEAP_REACH_TIMEOUT (ms), 0 = no scan */
    uint32_t signal;               /* VHEAP_SIGNAL: toggles recording, 0 off */
    uint32_t mmap;                 /* VHEAP_MMAP: enum vh_mmap_choice        */
};
#define VH_OPTION_COUNT 13         /* fields above: options.c's rows        */
enum vh_start_choice { VH_START_ON = 0, VH_START_PAUSED = 1 };
enum vh_clock_choice { VH_CLOCK_AUTO = 0, VH_CLOCK_PRECISE = 1 };
enum vh_mmap_choice { VH_MMAP_OFF = 0, VH_MMAP_PROGRAM = 1, VH_MMAP_ALL = 2 };
extern struct vh_options vh_opt;
/* Sets every option to its default, then reads every VHEAP_* variable
 * from `environ` (no allocation); a bad value gets one warning and keeps
 * the default. */
void vh_options_load(void);

/* ---- logging (log.c) ---------------------------------------------------- */
/* "vheap: <message>\n" to fd 2 through a stack buffer; never allocates.
 * Understands %s %c %d %u %ld %lu %zu %llu %x %lx %p %%. */
void vh_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Notes what fd 2 is now: later lines go out only while it is the same
 * file (a daemon may put its own file at number 2). */
void vh_log_init(void);
/* Same, not rate-limited: for the one closing line. */
void vh_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Formats into buf (always NUL-terminated); returns the length. */
size_t vh_vformat(char *buf, size_t size, const char *fmt, va_list ap);
/* "ENOSPC"-style name of an errno value: static, never translated. */
const char *vh_errname(int err);
size_t vh_format(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- the real functions (bootstrap.c) ----------------------------------- */
struct vh_real {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*usable)(void *);      /* malloc_usable_size                    */
    /* jemalloc's non-standard API, NULL when the program is not linked
     * against a jemalloc that exports it (then hooks.c emulates it). */
    void *(*mallocx)(size_t, int);
    void *(*rallocx)(void *, size_t, int);
    size_t (*xallocx)(void *, size_t, size_t, int);
    size_t (*sallocx)(const void *, int);
    void (*sdallocx)(void *, size_t, int);
    void (*dallocx)(void *, int);
    int (*dlclose)(void *);
    int (*sigaction)(int, const struct sigaction *, struct sigaction *);
};
extern struct vh_real vh_real;
/* Resolves vh_real from the next objects' symbol tables (elfsym.c); safe
 * to call more than once and from several threads, from inside any hook.
 * Allocations made meanwhile are served from the bootstrap buffer. */
void vh_resolve_real(void);
/* elfsym.c: dlsym(RTLD_NEXT) and the vDSO's symbols without dlsym: no
 * allocation, no error state, no lock but the loader's recursive one. */
void *vh_sym_next(const char *name);
/* elfsym.c: vh_sym_next kept in *slot once found. */
void *vh_sym_next_once(void **slot, const char *name);
/* elfsym.c: whether addr is inside the first object that defines `name`. */
int vh_sym_same_object(const char *name, const void *addr);
/* elfsym.c: the shim's own exported definition of `name` (a hook). */
void *vh_sym_self(const char *name);
void *vh_sym_vdso(const char *name);
void *vh_boot_alloc(size_t size, size_t align);
extern char vh_boot_buf[];
extern const size_t vh_boot_size;
VH_ALWAYS_INLINE int vh_boot_owns(const void *p)
{
    return (uintptr_t)p - (uintptr_t)vh_boot_buf < vh_boot_size;   /* one compare */
}
size_t vh_boot_usable(const void *p);

/* ---- per-thread state ---------------------------------------------------- */
/* Reentrancy: `guard` is 0 outside the shim, 1 while the real allocator runs
 * (a signal handler arriving then is recorded normally), 2 while the shim does
 * its own bookkeeping. `own` > 0 marks calls the shim itself makes (dlsym,
 * libunwind, pthread_getattr_np): passed through and not counted, except
 * while `unwinding` (inside libunwind's unw_backtrace, which never calls
 * the allocator: its caches are mmap'd), when a call can only be a signal
 * handler's and is counted as nested. The other own windows (dlsym at
 * startup, pthread_getattr_np once per thread, init and fork setup) open
 * with vh_own_begin, which blocks every signal until vh_own_end: a handler
 * runs after the window, and its calls are recorded or counted like any
 * other. A vfork child (lifecycle.c) runs with `own` raised and `vforked`
 * set in the parent's thread state it shares: it passes through, uncounted,
 * and never ends the parent's capture.
 *
 * The invariant that keeps the program's fate its own (signals.c): no
 * signal handler of the program runs while its thread is at guard BUSY.
 * Handlers the program installs (sigaction, signal, ...) are entered
 * through the shim's trampoline, which holds a signal that lands at BUSY
 * back (blocked, queued again with its siginfo) until vh_unbusy lowers the
 * guard. So a handler that never returns (siglongjmp, exit, _exit, abort)
 * never leaves a record half written, a lock held or the guard stuck, and
 * one that returns never writes into a chunk whose record is half done;
 * and while a handler runs the thread counts as outside the shim (guard,
 * own and cxx_sp lowered, restored if it returns). Every shim lock is
 * taken at BUSY only. A handler installed behind the shim's back (a raw
 * rt_sigaction system call), or a fault's, is not held back: its calls
 * at BUSY are counted as nested, and if it leaves by longjmp the next
 * event from the abandoned frame's depth or above finds the guard stale
 * and repairs the thread (lifecycle.c's guard_stale; lock.h). */
enum { VH_G_OUT = 0, VH_G_REAL = 1, VH_G_BUSY = 2 };
/* Layout: vh_fast_ok() tests own, in_fork and bounds_known together, which
 * the compiler does with one 4-byte load; `guard`, stored a byte at a time
 * several times an event, must not be inside that load (a load wider than
 * a recent store to its bytes cannot be forwarded from the store buffer
 * and waits for it: a dozen cycles on every event). */
struct vh_tls {
    uint8_t own;                   /* (offset fixed: lifecycle.c's vfork)  */
    uint8_t in_fork;               /* forking thread between prepare and
                                      the parent/child handler             */
    uint8_t bounds_known;          /* stack_lo/hi valid (fp walker)        */
    uint8_t unwinding;             /* inside unw_backtrace (see above)      */
    uint8_t exited;                /* thread-exit destructor already ran   */
    uint8_t registered;            /* pthread_setspecific done             */
    uint8_t vforked;               /* > 0: a vfork child runs on this state
                                      (offset fixed: lifecycle.c's vfork)  */
    uint8_t guard;
    uint16_t tag;                  /* innermost tag id (api.c), 0 = none   */
    uint32_t tid;
    uint64_t deferred;             /* signals (bit sig-1) held back while
                                      guard was BUSY (signals.c)            */
    uint64_t sample_left;          /* sample.c: bytes to the next sample    */
    uint64_t rng;                  /* sample.c: its random state, 0 = none  */
    uintptr_t busy_sp;             /* frame that last raised guard to BUSY */
    struct vh_chunk_header *chunk; /* chunk this thread appends to         */
    char *pos, *end;               /* next record / end of that chunk      */
    uintptr_t stack_lo, stack_hi;
    char *pop_start;               /* [pop_start, end) of the chunk is
                                      faulted in by us (capture.c)          */
    struct vh_cursor cur;          /* the chunk's time and address bases
                                      (capture_format.h), reset with the
                                      THREAD record of each chunk start     */
    uintptr_t cxx_sp;              /* frame of the C++ operator hook whose
                                      real call runs (hooks_cxx.c), or 0    */
    int *errno_p;                  /* this thread's errno, or 0: not asked */
    uint8_t clocked;               /* vh_clock_thread done for this thread */
    struct vh_walker *walker;      /* cfi.c: the walk state, or NULL (not
                                      mapped: walks are libunwind's)       */
    struct vh_ids *ids;            /* stacks.c: recent stack ids, or NULL  */
    uint32_t runs;                 /* THREAD records this thread wrote: each
                                      starts a run that decodes on its own
                                      (stacks.c's diff base is one run's)   */
    /* Where in cur's freed ring an address was pushed (the low 16 bits of
     * its count then), by vh_freed_slot: an allocation finds its block
     * there in one look instead of 64. Checked against the ring, so a
     * stale or shared slot costs bytes, never a wrong record; no address
     * kept (no root for the reachability scan). */
    uint16_t freed_at[256];
    uint16_t alloc_at[256];        /* the same for cur's R (its allocations) */
};

VH_ALWAYS_INLINE unsigned vh_freed_slot(uint64_t addr)
{
    return (unsigned)((addr >> 4) ^ (addr >> 12)) & 255u;
}

/* addr's index k in a ring of 64 addresses of t->cur (F or R, `n`
 * pushed so far) as `at` last saw it pushed, or 64: not there. */
VH_ALWAYS_INLINE unsigned vh_ring_index(const uint16_t *at, const uint64_t *ring, uint64_t n,
                                        uint64_t addr)
{
    _Static_assert(VH_FREED == 64 && VH_RECENT_FAR == 64, "one ring length");
    unsigned d = (uint16_t)(n - at[vh_freed_slot(addr)]);
    if (d - 1u < 64u && d <= n && ring[(n - d) % 64u] == addr)
        return d - 1u;
    return 64u;
}

/* How far below a C++ operator hook's frame the real operator's own malloc
 * or free can be. A signal frame alone is bigger (siginfo, ucontext and the
 * FPU state, over 1.5 KiB on x86-64), so a call further down, or on another
 * stack, is a signal handler's: an event, not the operator's inside. */
#define VH_CXX_INNER_MAX 1024u
extern __thread struct vh_tls vh_tls __attribute__((tls_model("initial-exec")));

/* Memory a thread's events keep beside its TLS (cfi.c's walk state,
 * stacks.c's id cache): glibc takes static TLS out of every thread's
 * stack, so the shim maps it at the thread's first event instead. Pages
 * never touched are never backed. NULL when it cannot be mapped. */
static inline void *vh_thread_map(size_t size)
{
    void *p = vh_sys_mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* A process-wide table mapped at its first use, under its owner's lock:
 * *slot set and 0, or -1 for good once a mapping failed (*failed); errno
 * is the caller's either way. */
static inline int vh_lazy_map(void **slot, int *failed, size_t size)
{
    if (*slot)
        return 0;
    if (*failed)
        return -1;
    int e = errno;
    *slot = vh_thread_map(size);
    errno = e;
    *failed = !*slot;
    return *slot ? 0 : -1;
}

/* Unmaps it at the thread's exit. The caller cleared its pointer first, so
 * that a signal handler's event after that point sees none. */
static inline void vh_thread_unmap(void *p, size_t size)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (p)
        vh_sys_munmap(p, size);
}

/* ---- process state (state.c) ---------------------------------------------- */
enum vh_mode {
    VH_MODE_UNINIT = 0,            /* nothing done yet                       */
    VH_MODE_INIT,                  /* one thread is initializing             */
    VH_MODE_ON,                    /* recording                              */
    VH_MODE_DROP,                  /* capture disabled: count, don't record  */
    VH_MODE_OFF,                   /* no capture at all: pass through        */
    VH_MODE_PAUSED,                /* capture kept, recording paused (ctl):
                                      pass through, watch the header's ctl  */
};
/* The mode lives in a page the kernel zeroes in every child (MADV_WIPEONFORK):
 * a child made by any fork, glibc's or a raw fork/clone system call that
 * runs no atfork handler, reads VH_MODE_UNINIT and takes the slow path,
 * which sees the new pid (lifecycle.c). vh_mode_word points at a static
 * word until init maps that page. */
extern int *vh_mode_word;
extern int vh_boot_mode;           /* the static word, until init's page   */
#define vh_mode (*vh_mode_word)

struct vh_capture {
    struct vh_capture_header *hdr; /* == base                                */
    char *base;                    /* reserved virtual range                 */
    size_t reserved;               /* its size                               */
    uint64_t mapped;               /* bytes of the file mapped (and backed) */
    uint64_t start_mono;           /* CLOCK_MONOTONIC ns of start            */
    uint32_t chunk_size;
    pid_t pid;                     /* pid the capture belongs to             */
    int as_limited;                /* RLIMIT_AS is finite (reserve_range)    */
    dev_t dev;
    ino_t ino;
    char path[4096];
};
extern struct vh_capture vh_cap;
extern uint64_t vh_next_rss;       /* atomic: capture ns of the next sample  */
extern uint32_t vh_module_gen;     /* atomic: bumped on every module unload  */
/* atomic: dlcloses in progress (modules.c); while non-zero, stack lookups
 * poll the module list first. */
extern uint32_t vh_modules_closing;

/* capture.c */
int vh_capture_create(int forked, const struct vh_capture_header *parent);
void *vh_rec_begin_slow(struct vh_tls *t, size_t size, uint64_t time);
void vh_chunk_release(struct vh_tls *t);
/* Leaves the thread's chunk as published (its `used`), never to write
 * into it again: after a writer was stopped mid-record (lifecycle.c's
 * guard_stale). The next record claims a chunk. */
void vh_chunk_abandon(struct vh_tls *t);
void vh_capture_disable(const char *why, int err);
void vh_capture_end(void);
/* execve (hooks.c): this image is about to be replaced by path; and the
 * call failed after all. Only for this process's own capture. */
void vh_capture_exec(const char *path);
void vh_capture_exec_failed(void);
void vh_capture_fork_prepare(void);
void vh_capture_fork_parent(void);
void vh_capture_fork_child(void);
/* A spinlock word: its owner's thread state address (lock.h). */
typedef uintptr_t vh_lock_t;
const char *vh_capture_display_path(void);
/* handover.c: a fork child that records nothing leaves no capture. _mark
 * after the child's start records (the header's start_used); _empty:
 * nothing recorded since (at exit the capture is removed); _clear: removes
 * from the directory of `path`, this image's capture, the empty fork-child
 * capture of the image this one replaced. */
void vh_handover_mark(const struct vh_tls *t);
int vh_handover_empty(void);
void vh_handover_clear(const char *path);
/* Bytes of capture pages mapped in this process now (they count in its
 * RSS; the RSS records leave them out). */
uint64_t vh_capture_resident(void);
/* The program's allocator failed under RLIMIT_AS: gives back the part of
 * the capture's range not mapped yet. 1 if that freed anything (the
 * caller tries the allocation again). */
int vh_capture_give_back(void);
VH_ALWAYS_INLINE int vh_oom_retry(void)
{
    return vh_unlikely(vh_cap.as_limited) && vh_capture_give_back();
}

/* stacks.c */
int vh_stacks_init(void);
void vh_stacks_reset(void);
/* Stack id of the current call stack, with the shim's own frames skipped;
 * 0 when the table is full (counted in header.stack_table_full). */
uint32_t vh_stack_here(struct vh_tls *t);
void vh_stacks_fork_prepare(void);
/* The thread's cache of recent ids: mapped at its first event (else it
 * has none), unmapped when it exits. */
void vh_stacks_thread(struct vh_tls *t);
void vh_stacks_thread_end(struct vh_tls *t);
void vh_stacks_fork_parent(void);

/* unwind.c: the unwinders, one row each (VHEAP_UNWIND's choices, in the
 * order of capture_format.h's enum vh_unwind_kind): its word, what init
 * sets up for it (or none), whether cfi.c's cached rules walk first (and
 * each thread keeps their walk state), its own walk, its doc line. The
 * option (options.c) and the walks (unwind.c) both read this. */
#define VH_UNWINDERS(X)                                                              \
    X(VH_UNWIND_LIBUNWIND, "libunwind", unw_init, 1, unw_walk,                       \
      "DWARF: cached CFI rules, libunwind for the rest; works everywhere")            \
    X(VH_UNWIND_FP, "fp", fp_init, 0, fp_walk,                                       \
      "frame pointers: faster, only for code built with -fno-omit-frame-pointer")
int vh_unwind_init(void);
/* The chosen unwinder walks by cfi.c's rules first (lifecycle.c sets up
 * each thread's walk state then). */
int vh_unwind_cfi(void);
extern uintptr_t vh_self_lo, vh_self_hi;   /* libvheap.so's code */
/* threads.c: the thread's stack bounds at its first event, without a call
 * into glibc (stack_hi stays 0 where they cannot be had so). */
void vh_thread_bounds(struct vh_tls *t);
/* Size of the buffer vh_unwind needs for `max` frames. */
uint32_t vh_unwind_want(uint32_t max);
/* One walk: what the caller asks for and what the walk gives back (the
 * caller owns it, on its stack). */
struct vh_walk {
    uint64_t *buf;                 /* in: vh_unwind_want(max) entries       */
    uint32_t max;                  /* in: at most this many frames          */
    uint32_t era;                  /* in: the stack table's (stacks.c)      */
    uint32_t skip;                 /* out: the frames start at buf + skip
                                      (the shim's own frames removed),
                                      innermost first                       */
    int truncated;                 /* out: there were more than max         */
    uint64_t fold;                 /* out: vh_hash_fold of the frames when
                                      the walk knew it (cfi.c's memo), or 0 */
    uint64_t *tag;                 /* out: vh_cfi_walk's (NULL from the
                                      other walkers): when the word there is
                                      of `era` (its high half), that word is
                                      the walk's and the frames were not
                                      written (the count is 0)              */
};
/* Walks the current stack into w->buf; `fp` is the caller's frame pointer
 * (the shim keeps frame pointers): the shim's frames are skipped from
 * there. Returns the frame count. */
uint32_t vh_unwind(struct vh_tls *t, uint64_t fp, struct vh_walk *w);

/* The stack hash: a fold over the frames from the outermost inwards, so
 * that a walk which reuses the previous walk's outer frames (cfi.c) starts
 * from the fold it stored for them and hashes only its new inner frames;
 * then the count, `truncated` and the module generation. Whichever path
 * computes it, the same frames give the same hash (test_stacks.c). */
#define VH_HASH_SEED 0x2d358dccaa6c78a5ull
VH_ALWAYS_INLINE uint64_t vh_mum(uint64_t a, uint64_t b)
{
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* The fold of frame `ip` and the frames outside it (h: their fold). */
VH_ALWAYS_INLINE uint64_t vh_hash_step(uint64_t h, uint64_t ip)
{
    return vh_mum(h ^ ip ^ 0x8ebc6af09c88c6e3ull, 0x589965cc75374cc3ull);
}

VH_ALWAYS_INLINE uint64_t vh_hash_fold(const uint64_t *f, uint32_t n)
{
    uint64_t h = VH_HASH_SEED;
    while (n)
        h = vh_hash_step(h, f[--n]);
    return h;
}

/* The table's key: never 0 (an empty slot). */
VH_ALWAYS_INLINE uint64_t vh_hash_final(uint64_t fold, uint32_t n, int truncated, uint32_t gen)
{
    uint64_t h = vh_mum(fold ^ 0xa0761d6478bd642full,
                        ((uint64_t)gen << 32 | (uint64_t)n << 1 | (uint64_t)!!truncated) ^
                            0xe7037ed1a0b428dbull);
    return h ? h : 1;
}

/* cfi.c: walks from (ip, sp, rbp) — the state just after returning into
 * the first caller, sp on the thread's stack — with cached DWARF CFI rules,
 * stepping through signal frames; returns the frame count, or -1 when a
 * frame needs libunwind (DWARF expressions, stacks we do not know).
 * vh_cfi_walk_on: the same from a start on another known stack [lo, hi)
 * (the signal stack). */
int vh_cfi_init(void);
/* vh_cfi_walk also sets *fold to vh_hash_fold of the frames when the walk
 * ended by itself before `want` (else 0), and then *tag to a word kept
 * with this walk among the thread's known walks (else NULL), 0 until the
 * caller stores its word for the walk there (stacks.c: the stack id and
 * its era). The same walk again, from the same start, while every stack
 * word it read holds and the word stored is of `era` (its high half),
 * returns VH_WALK_KNOWN with *tag at that word, buf not written. */
#define VH_WALK_KNOWN (-2)
int vh_cfi_walk(struct vh_tls *t, uint64_t ip, uint64_t sp, uint64_t rbp, uint64_t *buf,
                uint32_t want, uint64_t *fold, uint64_t **tag, uint32_t era);
/* The thread's walk state: mapped at its first event (else its walks are
 * libunwind's), unmapped when it exits. */
void vh_cfi_thread(struct vh_tls *t);
void vh_cfi_thread_end(struct vh_tls *t);
#ifdef VH_CFI_VERIFY
/* The frame count and fold of the known walk whose word is at tag. */
uint32_t vh_cfi_known(const uint64_t *tag, uint64_t *fold);
#endif
int vh_cfi_walk_on(struct vh_tls *t, uint64_t ip, uint64_t sp, uint64_t rbp, uint64_t lo,
                   uint64_t hi, uint64_t *buf, uint32_t want);

/* modules.c */
int vh_modules_init(void);
/* How many objects the process started with (counted by vh_modules_init,
 * before the program's code runs): only those loaded later need pinning. */
unsigned vh_modules_startup(void);
/* Emits MODULE records for the whole list (capture start, fork child). */
void vh_modules_emit_all(struct vh_tls *t);
/* Cheap check whether ld.so's module list changed; diff and record if so. */
void vh_modules_poll(struct vh_tls *t);
void vh_modules_fork_prepare(void);
void vh_modules_fork_parent(void);
void vh_modules_fork_child(void);
/* A dlclose (hooks.c) is over: vh_modules_closing one less. */
void vh_modules_closing_done(void);

/* maps.c: the program's file by absolute path (the file mapped at its
 * first segment, also when started as `ld.so ./prog`); "" when unknown.
 * And the file mapped at addr into out: 0 when none is. */
const char *vh_main_exe(void);
int vh_mapped_file(uint64_t addr, char *out, size_t cap);

/* lifecycle.c */
/* Called when the fast-path test failed: initializes if needed and decides.
 * Returns 1 if the event is to be recorded (guard is then usable), 0 if the
 * caller passes it straight through (already counted where it must be). */
VH_NOINLINE int vh_enter_slow(struct vh_tls *t);
/* RSS sampling: tick is the hot path's "now >= vh_next_rss" branch (one
 * thread wins the sample); vh_rss_sample (capture.c) writes one RSS record
 * now. */
void vh_rss_tick(struct vh_tls *t, uint64_t now);
void vh_rss_sample(struct vh_tls *t);
/* The tick's: under sampling, no record when RSS moved less than the rate. */
void vh_rss_sample_changed(struct vh_tls *t);
/* Recording on (want 1), off (0) or the other way (-1), before it returns:
 * vheap_start/vheap_stop and VHEAP_SIGNAL. From a thread outside the
 * bookkeeping (guard OUT or REAL); does nothing while the capture is not
 * recording or paused. Returns 1 if recording is on afterwards. */
int vh_recording_set(struct vh_tls *t, int want);

/* state.c */
void vh_thread_register(struct vh_tls *t);
extern pthread_key_t vh_thread_key;  /* made by init, for thread_exit */
extern int vh_thread_key_ok;
pid_t vh_gettid(void);
/* A window in which the shim calls into libc for itself (allocations pass
 * through as its own): raises `own` with every signal blocked; end restores
 * the mask saved in *saved after lowering `own`. Nests. */
void vh_own_begin(struct vh_tls *t, sigset_t *saved);
void vh_own_end(struct vh_tls *t, const sigset_t *saved);

/* ---- time ---------------------------------------------------------------- */
VH_ALWAYS_INLINE uint64_t vh_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
/* clock.c: record times from the TSC when the kernel's clocksource is the
 * TSC (once its scale is known: from perf at once, else calibrated against
 * CLOCK_MONOTONIC during the first 50 ms), else from CLOCK_MONOTONIC; and
 * from the kernel's coarse clock while only one thread has recorded. */
enum vh_clock_mode {
    VH_CLK_SLOW = 0,               /* clock_gettime(CLOCK_MONOTONIC)         */
    VH_CLK_TSC,                    /* the formula below                      */
    VH_CLK_COARSE,                 /* CLOCK_MONOTONIC_COARSE (one thread)    */
};
struct vh_clock {
    int mode;                      /* atomic: enum vh_clock_mode             */
    uint32_t shift;
    uint64_t mult;                 /* ns = base + (TSC - tsc0) * mult >> shift */
    uint64_t tsc0;
    uint64_t base;                 /* record time at tsc0                    */
    uint64_t last;                 /* VH_CLK_COARSE: the latest time given   */
    uint64_t coarse_half;          /* half the coarse clock's resolution     */
    int (*gettime)(clockid_t, struct timespec *); /* the vDSO's, or libc's */
};
extern struct vh_clock vh_clk;
/* Decides whether the TSC can be used, once per process image. */
void vh_clock_init(void);
/* CLOCK_MONOTONIC now, which becomes the capture's start_mono; anchors the
 * TSC to it (fork children re-anchor, same scale). `threads`: how many
 * threads of the process have recorded already (a fork child's one, or
 * none). */
uint64_t vh_clock_start(unsigned threads);
/* A thread's first event, before it takes a time. */
void vh_clock_thread(void);
/* The coarse clock's resolution while it is in use, else 0. */
uint32_t vh_clock_coarse_res(void);
/* vh_now() while the TSC is not in use (calibrates when it is time). */
uint64_t vh_now_slow(void);

/* The TSC; `fenced` (lfence first) waits for every earlier instruction,
 * for the clock's calibration pairs. Record times are read without the
 * fence, which costs 10-20 ns here, more in a busy program (it drains every
 * load in flight): that was 12% of the whole overhead on Python. Without
 * it an allocation's time may be read while the real malloc's load that
 * found the block is still in flight, so it can precede another thread's
 * free of that block by up to about one memory latency (and a free's, the
 * allocation it frees); within a thread, times follow program order. The
 * loader settles such pairs (load.c, docs/capture-format.md). */
VH_ALWAYS_INLINE uint64_t vh_tsc(int fenced)
{
    uint32_t lo, hi;
    if (fenced)
        __asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
    else
        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
    return (uint64_t)hi << 32 | lo;
}

/* Makes the thread's next vh_now() read the clock only after every load
 * before this point completed. For a value another thread published
 * after taking a time that must sort before ours (a stack id: its STACK
 * record's time, capture-format.md rule 5): unfenced, our rdtsc may run
 * while the load that found the value is still in flight, and read a time
 * before the publisher's. Only where such a value is taken from shared
 * state, never per event. (clock_gettime's own rdtsc is fenced; the
 * coarse clock serves one thread.) */
VH_ALWAYS_INLINE void vh_time_after_loads(void)
{
    __asm__ volatile("lfence" : : : "memory");
}

VH_ALWAYS_INLINE uint64_t vh_now_tsc(void)
{
    int64_t d = (int64_t)(vh_tsc(0) - vh_clk.tsc0);
    return vh_clk.base +
           (uint64_t)(((unsigned __int128)(uint64_t)(d > 0 ? d : 0) * vh_clk.mult) >>
                      vh_clk.shift);
}

/* While one thread records, no time needs to order it against another's:
 * the kernel's tick-stamped clock (a few loads in the vDSO, 3 ns here) then serves
 * instead of rdtsc (12 ns in a busy program: 11% of the shim's time on
 * sqlite), at the tick's resolution (4 ms here; heaptrack's is 10 ms).
 * Within a tick each time is 1 ns past the one before, so that every
 * record still has a time of its own: a state "at time t" (a snapshot, a
 * peak, frag at an event's time) is the state after that record, as with
 * the exact clock. That one thread is the only writer of `last`. */
VH_ALWAYS_INLINE uint64_t vh_coarse_read(void)
{
    struct timespec ts;
    vh_clk.gettime(CLOCK_MONOTONIC_COARSE, &ts);
    /* The tick's time is up to one tick old: the middle of that span. */
    uint64_t m = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + vh_clk.coarse_half;
    return m > vh_cap.start_mono ? m - vh_cap.start_mono : 0;
}

VH_ALWAYS_INLINE uint64_t vh_now_coarse(void)
{
    uint64_t m = vh_coarse_read(), last = __atomic_load_n(&vh_clk.last, __ATOMIC_RELAXED);
    if (m <= last)
        m = last + 1;
    __atomic_store_n(&vh_clk.last, m, __ATOMIC_RELAXED);
    return m;
}

/* Record time: ns since the capture's start (never below zero). */
VH_ALWAYS_INLINE uint64_t vh_now(void)
{
    int mode = __atomic_load_n(&vh_clk.mode, __ATOMIC_ACQUIRE);
    if (vh_likely(mode == VH_CLK_TSC))
        return vh_now_tsc();
    if (vh_likely(mode == VH_CLK_COARSE))
        return vh_now_coarse();
    return vh_now_slow();
}

/* ---- sampling (sample.c) ------------------------------------------------- */
extern uint64_t vh_sample_rate;    /* 0: every call is recorded              */
int vh_sample_init(uint64_t rate);
void vh_sample_fork_child(void);
/* The set of sampled blocks, by key (vh_sample_key): add says 0 when it
 * has no room (the allocation is then not recorded, counted as dropped);
 * take says whether the key was there, and removes it. */
int vh_sampled_add(uint64_t key);
int vh_sampled_take(uint64_t key);
/* The countdown reached: `size` bytes from t->sample_left on hold a
 * sampling point (or the thread has no countdown yet). */
VH_NOINLINE int vh_sample_due(struct vh_tls *t, uint64_t size);
/* Every key in the set through fn: the key back keeps it, 0 drops it,
 * another key moves it there (api.c: destroyed heaps, ranges). Slow: a
 * pass over the whole set; called only when the heaps concerned hold
 * sampled blocks. */
void vh_sampled_sweep(uint64_t (*fn)(uint64_t key, void *arg), void *arg);

/* The set's count array: a zero count says at once that a key is not in
 * the set, which is what nearly every free finds (inline: no call for
 * it). A key's slot is the top 16 bits of its low 32 times 2^32/phi
 * (Fibonacci hashing: every one of those address bits moves them; two
 * instructions). Addresses 4 GiB apart share a slot, as do a custom
 * heap's keys and the system heap's for one address: a shared slot costs
 * a look in the set, never a wrong answer. */
#define VH_SAMPLE_COUNT_BITS 16
#define VH_SAMPLE_COUNTS (1u << VH_SAMPLE_COUNT_BITS)
extern uint8_t vh_sample_counts[VH_SAMPLE_COUNTS];
VH_ALWAYS_INLINE uint32_t vh_sample_slot(uint64_t key)
{
    return ((uint32_t)key * 0x9e3779b1u) >> (32 - VH_SAMPLE_COUNT_BITS);
}
VH_ALWAYS_INLINE int vh_sampled_maybe(uint64_t key)
{
    return __atomic_load_n(&vh_sample_counts[vh_sample_slot(key)], __ATOMIC_RELAXED) != 0;
}

VH_ALWAYS_INLINE uint64_t vh_sample_key(uint16_t heap, uint64_t addr)
{
    return addr ^ ((uint64_t)heap << 48);
}

/* Whether an allocation of `size` bytes is sampled: the byte countdown
 * (bytes before the next sampling point, never negative; 0 until the
 * thread's first draw), a compare, a branch and a subtraction. */
VH_ALWAYS_INLINE int vh_sampled(struct vh_tls *t, uint64_t size)
{
    uint64_t left = t->sample_left;
    if (vh_likely(size < left)) {
        t->sample_left = left - size;
        return 0;
    }
    return vh_sample_due(t, size);
}

/* ---- the hot path --------------------------------------------------------- */
/* errno is libc's thread variable, reached from here only through a PLT call
 * to __errno_location: each hook saves and restores it, so its address is
 * kept per thread (the same in a fork or vfork child, which keep the TLS). */
VH_ALWAYS_INLINE int *vh_errno_loc(struct vh_tls *t)
{
    int *p = t->errno_p;
    if (vh_unlikely(!p))
        p = t->errno_p = &errno;
    return p;
}

/* True when an event can go the fast way: recording, not nested, not the
 * shim's own call, not in the middle of fork, the thread's stack known. */
VH_ALWAYS_INLINE int vh_fast_ok(const struct vh_tls *t)
{
    return __atomic_load_n(&vh_mode, __ATOMIC_RELAXED) == VH_MODE_ON &&
           t->guard != VH_G_BUSY && !t->own && !t->in_fork && t->bounds_known;
}

VH_ALWAYS_INLINE void vh_count(uint64_t *counter)
{
    __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* signals.c: delivers the signals held back while the guard was BUSY. */
void vh_signals_release(struct vh_tls *t);
/* signals.c: takes VHEAP_SIGNAL's signal, if one is asked for (at init);
 * each delivery calls toggle(t, -1) (vh_recording_set: lifecycle.c lies
 * above signals.c in the shim's order, so it hands its switch down). */
void vh_signals_toggle_init(int (*toggle)(struct vh_tls *t, int want));

/* Into the shim's bookkeeping: returns the guard to restore. */
VH_ALWAYS_INLINE uint8_t vh_busy(struct vh_tls *t)
{
    uint8_t g = t->guard;
    t->busy_sp = (uintptr_t)__builtin_frame_address(0);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->guard = VH_G_BUSY;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return g;
}

/* Out of it, to guard g (the caller's, or REAL before a real call): a
 * signal held back meanwhile is delivered now. The guard is lowered
 * before `deferred` is read, so a signal landing in between is not held. */
VH_ALWAYS_INLINE void vh_unbusy(struct vh_tls *t, uint8_t g)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->guard = g;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (vh_unlikely(t->deferred))
        vh_signals_release(t);
}

/* A hook's way through the shim, the same in every hook: what it gives
 * back on leaving (the caller's guard, and the errno the program is to
 * see), and the steps around the real call:
 *   allocation: g = vh_real_begin(t); real call; h = vh_real_end(t, g);
 *               record; vh_hook_leave(t, h)
 *   free:       h = vh_hook_enter(t); record; vh_hook_to_real(t, h);
 *               real call; vh_unbusy(t, h.guard)
 *   no real call in between: h = vh_hook_enter(t); record; vh_hook_leave(t, h) */
struct vh_hook {
    uint8_t guard;
    int err;
};

/* Into the real allocator (guard REAL: a handler's call there is an event
 * of its own); returns the guard to go back to. */
VH_ALWAYS_INLINE uint8_t vh_real_begin(struct vh_tls *t)
{
    uint8_t g = t->guard;
    t->guard = VH_G_REAL;
    return g;
}

/* Back from it into the bookkeeping, keeping the errno it left. */
VH_ALWAYS_INLINE struct vh_hook vh_real_end(struct vh_tls *t, uint8_t g)
{
    struct vh_hook h = { .guard = g, .err = *vh_errno_loc(t) };
    (void)vh_busy(t);
    return h;
}

/* Into the bookkeeping from the program, keeping the program's errno. */
VH_ALWAYS_INLINE struct vh_hook vh_hook_enter(struct vh_tls *t)
{
    struct vh_hook h = { .guard = t->guard, .err = *vh_errno_loc(t) };
    (void)vh_busy(t);
    return h;
}

/* From the bookkeeping into the real call (a free's, after its record):
 * errno back to the program's first. */
VH_ALWAYS_INLINE void vh_hook_to_real(struct vh_tls *t, struct vh_hook h)
{
    *vh_errno_loc(t) = h.err;
    vh_unbusy(t, VH_G_REAL);
}

/* Out to the program: its guard, and the errno it is to see. */
VH_ALWAYS_INLINE void vh_hook_leave(struct vh_tls *t, struct vh_hook h)
{
    vh_unbusy(t, h.guard);
    *vh_errno_loc(t) = h.err;
}

/* Room for `size` bytes at t->pos in this thread's chunk (claiming one if
 * needed, a THREAD record with `time` first); NULL when recording is
 * disabled (the event is then counted as dropped by the caller). */
VH_ALWAYS_INLINE char *vh_rec_reserve(struct vh_tls *t, size_t size, uint64_t time)
{
    if (vh_likely((size_t)(t->end - t->pos) >= size))
        return t->pos;
    return vh_rec_begin_slow(t, size, time);
}

/* Publishes the bytes up to `end`, which are complete; t->cur has moved
 * past them already: a reader trusts only bytes below `used`. (A writer
 * stopped between the encoding and this store by a handler that longjmps
 * leaves the chunk: lifecycle.c's guard_stale.) */
VH_ALWAYS_INLINE void vh_rec_publish(struct vh_tls *t, char *end)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->pos = end;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&t->chunk->used, (uint64_t)(t->pos - (char *)t->chunk),
                     __ATOMIC_RELEASE);
    if (vh_unlikely(t->exited))
        vh_chunk_release(t);
}

/* A struct record (every type but the compact ones): room for `size`
 * bytes at the next 8-aligned offset, the PAD bytes before it written.
 * The caller fills the struct, `time` at offset 8 included, then commits. */
VH_ALWAYS_INLINE void *vh_rec_begin(struct vh_tls *t, size_t size, uint64_t time)
{
    char *p = vh_rec_reserve(t, size + 7, time);
    if (!p)
        return NULL;
    while ((uintptr_t)p & 7)
        *p++ = (char)VH_REC_PAD;
    return p;
}

void *vh_rec_text(struct vh_tls *t, uint8_t type, uint32_t b, size_t fixed, const void *body,
                  size_t len, uint64_t time);
/* A MARK or TAG record (b: the tag id) with `len` bytes of label, written
 * and committed (at guard BUSY): `ctl mark`, vheap_mark, the tags. */
void vh_record_label(struct vh_tls *t, uint8_t type, uint32_t b, const char *text, size_t len,
                     uint64_t time);

/* Publishes the struct record vh_rec_begin returned; its time becomes the
 * chunk's time base, as the reader's cursor will have it. */
VH_ALWAYS_INLINE void vh_rec_commit(struct vh_tls *t, size_t size)
{
    char *r = (char *)(((uintptr_t)t->pos + 7) & ~(uintptr_t)7);
    const struct vh_rec_time *h = (const void *)r;
    vh_cursor_struct(&t->cur, h->h.type, h->time);
    vh_rec_publish(t, r + size);
}

VH_ALWAYS_INLINE void vh_dropped(void)
{
    if (vh_cap.hdr)
        vh_count(&vh_cap.hdr->dropped_events);
}

/* Under sampling, a block about to be recorded joins the set of sampled
 * blocks (so that its free is recorded); 0, counted as dropped, when the
 * set has no room: the block is then not recorded at all. */
VH_ALWAYS_INLINE int vh_sample_keep(uint64_t key)
{
    if (vh_sampled_add(key))
        return 1;
    vh_dropped();
    return 0;
}

/* The hot records, compact (capture_format.h): reserve the longest
 * encoding, encode against the chunk's cursor (moving it in place: a copy
 * is 104 bytes an event), publish what was used. */
VH_ALWAYS_INLINE void vh_put_alloc(struct vh_tls *t, uint8_t type, uint16_t heap, unsigned func,
                                   unsigned flags, uint64_t addr, uint64_t size,
                                   uint64_t usable, uint32_t stack, uint16_t tag, uint64_t time)
{
    uint8_t *p = (uint8_t *)vh_rec_reserve(t, VH_ENC_ALLOC_MAX, time);
    if (vh_unlikely(!p)) {
        vh_dropped();
        return;
    }
    uint64_t slack = usable > size ? usable - size : 0;
    if (vh_unlikely(slack > UINT32_MAX)) {
        slack = UINT32_MAX;
        flags |= VH_RF_SLACK_CLAMPED;
    }
    p = vh_enc_alloc(p, &t->cur, type, (uint8_t)flags, heap, func, time, addr, size,
                     (uint32_t)slack, stack, tag,
                     vh_ring_index(t->freed_at, t->cur.freed, t->cur.nfreed, addr));
    t->alloc_at[vh_freed_slot(addr)] = (uint16_t)(t->cur.nrecent - 1);
    vh_rec_publish(t, (char *)p);
}

VH_ALWAYS_INLINE void vh_put_free(struct vh_tls *t, uint16_t heap, unsigned func, unsigned flags,
                                  uint64_t addr, uint64_t time)
{
    uint8_t *p = (uint8_t *)vh_rec_reserve(t, VH_ENC_FREE_MAX, time);
    if (vh_unlikely(!p)) {
        vh_dropped();
        return;
    }
    p = vh_enc_free(p, &t->cur, (uint8_t)flags, heap, func, time, addr,
                    vh_ring_index(t->alloc_at, t->cur.recent, t->cur.nrecent, addr));
    t->freed_at[vh_freed_slot(addr)] = (uint16_t)(t->cur.nfreed - 1);
    vh_rec_publish(t, (char *)p);
}

/* capture.c: the records the hooks, the custom-allocator API (vheap.h)
 * and the lifecycle write. heap 0 = system allocator. */
void vh_record_alloc(struct vh_tls *t, uint32_t type, uint16_t heap, unsigned func,
                     unsigned flags, uint64_t addr, uint64_t size, uint64_t usable,
                     uint32_t stack, uint16_t tag, uint64_t time);
void vh_record_free(struct vh_tls *t, uint16_t heap, unsigned func, unsigned flags,
                    uint64_t addr, uint64_t time);
void vh_record_time(struct vh_tls *t, uint8_t type, uint16_t a, uint32_t b, uint64_t time);
void vh_record_value(struct vh_tls *t, uint8_t type, uint64_t value, uint64_t time);

/* hooks_cxx.c: pins the real operators' modules, once they are known;
 * called by the dlclose hook before the program's dlclose. */
void vh_cxx_pin(void);

/* api.c (its part in fork, resume and a thread's exit: upcall.h): the
 * built-in heap `name` whose id *slot caches (made at the first call,
 * written to the capture before this returns); 0 when none can be made.
 * At guard BUSY. */
int vh_api_builtin_heap(struct vh_tls *t, int *slot, const char *name, uint32_t flags);
/* owners.c: ownership snapshots, the members of vheap_api_v1 behind
 * vheap_own_begin, _push, _pop, vheap_owned and vheap_own_end. */
void vh_owner_begin(int heap, const char *label);
void vh_owner_push(const char *label);
void vh_owner_pop(void);
void vh_owned(const void *p, size_t bytes);
void vh_owner_end(void);
/* How many times recording has started (lifecycle.c): 1 from the start,
 * 0 under VHEAP_START=paused until `ctl start`; atomic. */
extern uint32_t vh_record_starts;

/* mapped.c: the built-in heap "mmap"'s mappings as recorded (at guard
 * BUSY): a new mapping [lo, hi) (what it covered ends first), a range that
 * ends (each mapping it touches is freed, the pieces outside it allocated
 * again with their stacks), the mapping holding `a` ends (1 if one did). */
void vh_mapped_add(struct vh_tls *t, uint16_t heap, unsigned func, uint64_t lo, uint64_t hi,
                   uint32_t stack);
void vh_mapped_cut(struct vh_tls *t, uint16_t heap, unsigned func, uint64_t lo, uint64_t hi);
int vh_mapped_free_at(struct vh_tls *t, uint16_t heap, unsigned func, uint64_t a);
void vh_mapped_fork_child(void);
/* A top-level custom heap's bounds [lo, hi): the mappings there are its
 * (ended in the mmap heap if `record`, not recorded after), until unclaim. */
void vh_mapped_claim(struct vh_tls *t, uint64_t lo, uint64_t hi, int record);
void vh_mapped_unclaim(uint64_t lo, uint64_t hi);
/* Mappings not recorded because the table was full. */
uint64_t vh_mapped_untracked(void);

/* VHEAP_MMAP=all with glibc's malloc (mapped.c decides at init, once the
 * real functions and the options are known): the blocks it maps alone are
 * mappings of the mmap heap too; the system heap's hooks (hooks.c,
 * hooks_cxx.c) tell hooks_mmap.c of each ALLOC, RESIZE and FREE. */
extern int vh_mmap_blocks;
void vh_mmap_init(void);
void vh_mmap_block_alloc(struct vh_tls *t, uint8_t type, uint64_t p, uint32_t stack);
void vh_mmap_block_free(struct vh_tls *t, uint64_t p);

/* regions.c: each custom heap's regions as last recorded, so that a
 * re-declaration that changes nothing writes nothing. Callers hold api.c's
 * lock at guard BUSY. size 0 is "no such region". */
int vh_region_unchanged(uint16_t heap, uint32_t id, uint8_t kind, uint64_t base, uint64_t size);
/* After the REGION record was written (never before: a dropped record must
 * not be taken for written). */
void vh_region_recorded(uint16_t heap, uint32_t id, uint8_t kind, uint64_t base, uint64_t size);
/* The heap was destroyed (its id may be reused): its regions are gone. */
void vh_region_heap_gone(uint16_t heap);
/* Calls fn for each region of `heap` known (a fork child's re-description). */
void vh_region_each(uint16_t heap, void (*fn)(uint16_t heap, uint32_t id, uint8_t kind,
                                              uint64_t base, uint64_t size, void *arg),
                    void *arg);

/* ---- shared by the hook files (hooks.c, hooks_cxx.c) ----------------------- */
/* The usable size of a block the real allocator returned: jemalloc's
 * sallocx when the program's jemalloc exports it, else the next
 * malloc_usable_size (jemalloc's or tcmalloc's when they replace malloc). */
VH_ALWAYS_INLINE size_t vh_usable_of(void *p)
{
    if (!p)
        return 0;
    if (vh_real.sallocx && vh_real.mallocx)
        return vh_real.sallocx(p, 0);
    return vh_real.usable ? vh_real.usable(p) : 0;
}

/* An RSS sample when one is due (the clock is read anyway). */
VH_ALWAYS_INLINE void vh_rss_due(struct vh_tls *t, uint64_t now)
{
    if (vh_unlikely(now >= __atomic_load_n(&vh_next_rss, __ATOMIC_RELAXED)))
        vh_rss_tick(t, now);
}

#endif
