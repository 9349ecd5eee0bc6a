/* threads.c — where each thread's stack lies, found without taking a lock.
 *
 * The stack walkers read only inside [stack_lo, stack_hi). Asking glibc
 * (pthread_getattr_np) from a thread's first event is unsafe: it holds the
 * calling thread's own lock while it allocates, so a thread whose first
 * malloc is inside pthread_getattr_np (every JVM thread's is) would wait
 * for itself. So the bounds come from where no program code runs yet:
 *   - threads made by pthread_create: the start routine is wrapped. The
 *     creating thread reads the stack's size (or a stack the program gave)
 *     from the attributes; the new thread's own struct pthread sits at the
 *     top of its stack block, above its static TLS (x86-64 keeps the TCB
 *     there), so pthread_self() bounds it from above, with no system call.
 *     Where that does not hold, the wrapper asks pthread_getattr_np, before
 *     the program's routine runs (nothing of the program's holds this
 *     thread's lock then). Then it jumps to the routine (a tail call: no
 *     frame of ours stays on the thread's stack);
 *   - the main thread: from the initial stack pointer ld.so saved
 *     (__libc_stack_end) and RLIMIT_STACK, as glibc computes it, without
 *     reading /proc (glibc's way allocates);
 *   - any other thread (a raw clone, glibc's own helpers): none; its walks
 *     are libunwind's, which checks each address itself. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/internal.h"

extern void *__libc_stack_end;     /* ld.so: the stack pointer at _start    */

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static create_fn real_create;      /* atomic */

struct start {
    void *(*routine)(void *);
    void *arg;
    uintptr_t stack_addr;          /* a stack the program gave, or 0     */
    size_t stack_size;             /* its size, or the one glibc maps    */
};

/* A thread's own bounds, asked of glibc; only where nothing of the
 * program's can hold this thread's lock. Allocations inside are the
 * shim's own (signals held meanwhile, state.c's window). */
static void ask_glibc(struct vh_tls *t)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    sigset_t saved;
    vh_own_begin(t, &saved);
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            t->stack_lo = (uintptr_t)addr;
            t->stack_hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&attr);
    }
    vh_own_end(t, &saved);
}

/* The new thread's bounds from what its creator knew: [stack, +size) for
 * a stack of the program's; else from its TCB down by the size. Checked
 * against where this frame is; glibc's answer otherwise. */
static void given_bounds(struct vh_tls *t, const struct start *s)
{
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    uintptr_t hi = s->stack_addr ? s->stack_addr + s->stack_size : (uintptr_t)pthread_self();
    uintptr_t lo = s->stack_addr ? s->stack_addr : hi - s->stack_size;
    if (s->stack_size && here > lo && here < hi) {
        t->stack_lo = lo;
        t->stack_hi = hi;
        return;
    }
    ask_glibc(t);
}

static void *thread_start(void *p)
{
    struct start s = *(struct start *)p;
    vh_real.free(p);
    given_bounds(&vh_tls, &s);
    return s.routine(s.arg);       /* a sibling call: our frame is gone */
}

/* What the creating thread knows of the new one's stack. */
static void stack_of(const pthread_attr_t *attr, struct start *s)
{
    pthread_attr_t def;
    void *addr = NULL;
    size_t size = 0;
    s->stack_addr = 0;
    s->stack_size = 0;
    if (attr) {
        if (pthread_attr_getstack(attr, &addr, &size) == 0 && addr) {
            s->stack_addr = (uintptr_t)addr;
            s->stack_size = size;
        } else if (pthread_attr_getstacksize(attr, &size) == 0) {
            s->stack_size = size;
        }
    } else if (pthread_getattr_default_np(&def) == 0) {
        if (pthread_attr_getstacksize(&def, &size) == 0)
            s->stack_size = size;
        pthread_attr_destroy(&def);
    }
}

VH_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr,
                             void *(*routine)(void *), void *arg)
{
    create_fn real = __atomic_load_n(&real_create, __ATOMIC_ACQUIRE);
    if (vh_unlikely(!real)) {
        real = (create_fn)vh_sym_next("pthread_create");
        __atomic_store_n(&real_create, real, __ATOMIC_RELEASE);
    }
    if (vh_unlikely(!__atomic_load_n(&vh_real.malloc, __ATOMIC_ACQUIRE)))
        vh_resolve_real();
    struct start *s = vh_real.malloc(sizeof *s);
    if (!s)                        /* the thread runs, with libunwind walks */
        return real(th, attr, routine, arg);
    s->routine = routine;
    s->arg = arg;
    stack_of(attr, s);
    int rc = real(th, attr, thread_start, s);
    if (rc != 0)
        vh_real.free(s);
    return rc;
}

/* The main thread's stack: from the page above the stack pointer at
 * _start (every frame lies below it) down by the stack limit. */
static void main_bounds(struct vh_tls *t)
{
    uintptr_t top = (uintptr_t)__libc_stack_end;
    if (!top)
        return;
    uintptr_t hi = (top | 4095) + 1;
    struct rlimit rl;
    uint64_t size = 8u << 20;      /* the limit unknown: Linux's default */
    if (syscall(SYS_prlimit64, 0, RLIMIT_STACK, NULL, &rl) == 0)
        size = rl.rlim_cur == RLIM_INFINITY ? 1ull << 30 : rl.rlim_cur;
    uintptr_t lo = hi > size ? hi - size : 0;
    /* A fork child's main thread may be another thread of its parent's,
     * on a stack of its own: then not this one. */
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    if (sp < lo || sp >= hi)
        return;
    t->stack_lo = lo;
    t->stack_hi = hi;
}

/* The thread's first event: its bounds, as found above. Never calls into
 * glibc, whatever the thread was doing when it allocated. */
void vh_thread_bounds(struct vh_tls *t)
{
    if (t->stack_hi)
        return;                    /* thread_start asked already */
    if (syscall(SYS_gettid) == syscall(SYS_getpid))
        main_bounds(t);
}
