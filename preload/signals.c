/* signals.c — the program's signal handlers never run inside the shim.
 *
 * A handler may never return: Vere's timer and interrupt handlers leave by
 * siglongjmp, a SIGTERM handler calls exit(), libsigsegv's stack-overflow
 * recovery jumps out. Landing inside the shim's bookkeeping (guard BUSY:
 * a record half written, a lock held, the walk state in use) such a
 * handler would leave it in that state for good. So every handler the
 * program installs through sigaction, signal, bsd_signal or sysv_signal
 * is entered through trampoline(), which
 *  - at guard BUSY holds the signal back: queues it again to this thread
 *    with its own siginfo (rt_tgsigqueueinfo) and returns with it blocked
 *    in the interrupted context's mask; vh_unbusy (internal.h) unblocks
 *    it as the guard goes down, and the kernel delivers it then, a few
 *    microseconds late, to a thread outside the shim;
 *  - otherwise runs the handler with the thread marked outside the shim
 *    (guard OUT, own 0, cxx_sp 0: the handler's own allocations are
 *    recorded like any others), restoring those if it returns. A handler
 *    that longjmps leaves them lowered, which is right where it lands.
 * Faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS raised by the
 * kernel for an instruction) cannot wait: their handler runs at once.
 * The program sees its own handlers: sigaction's old action reports them,
 * not the trampoline. Handlers installed without these functions (a raw
 * rt_sigaction system call, sigset, siginterrupt's reinstall) are not held
 * back; internal.h says what then happens. A vfork child shares our
 * memory but not our handlers: its calls go to the kernel untouched.
 *
 * VHEAP_SIGNAL's signal is the shim's own: the trampoline is installed for
 * it at start, toggles recording on each delivery (held back at BUSY like
 * any other), then runs the program's handler if it has one. The program's
 * SIG_DFL and SIG_IGN for it are kept here, not given to the kernel, and
 * reported back by sigaction: the signal never kills or is lost. */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/internal.h"

/* The program's action for one signal. Read by the trampoline, in any
 * thread, as a seqlock (odd `seq`: being changed); written under
 * acts_lock with every signal blocked, so no handler of the writing
 * thread can wait on it. */
struct act {
    uint32_t seq;
    int flags;                     /* the program's sa_flags                 */
    void *fn;                      /* its handler; NULL: none of ours        */
    sigset_t mask;
};
static struct act acts[_NSIG];
static int acts_lock;
static int toggle_sig;             /* VHEAP_SIGNAL, 0 none; set at init     */
/* what a delivery of it calls: lifecycle.c's switch, handed down at init */
static int (*toggle_fn)(struct vh_tls *t, int want);
static void *toggle_disp = SIG_DFL; /* the program's SIG_DFL/SIG_IGN for it */

static int is_fault(int sig, const siginfo_t *info)
{
    return info && info->si_code > 0 &&
           (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
            sig == SIGTRAP || sig == SIGSYS);
}

static int act_read(int sig, struct act *out)
{
    const struct act *a = &acts[sig];
    for (unsigned spins = 0;; spins++) {
        uint32_t s = __atomic_load_n(&a->seq, __ATOMIC_ACQUIRE);
        if (!(s & 1)) {
            out->flags = __atomic_load_n(&a->flags, __ATOMIC_RELAXED);
            out->fn = __atomic_load_n(&a->fn, __ATOMIC_RELAXED);
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&a->seq, __ATOMIC_RELAXED) == s)
                return out->fn != NULL;
        }
        if (spins > 100)
            sched_yield();         /* the writer is another thread, preempted */
        else
            __builtin_ia32_pause();
    }
}

static void act_write(int sig, void *fn, int flags, const sigset_t *mask)
{
    struct act *a = &acts[sig];
    __atomic_store_n(&a->seq, a->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&a->flags, flags, __ATOMIC_RELAXED);
    __atomic_store_n(&a->fn, fn, __ATOMIC_RELAXED);
    if (mask)
        a->mask = *mask;
    __atomic_store_n(&a->seq, a->seq + 1, __ATOMIC_RELEASE);
}

/* Held back: queued again to this thread with the same siginfo, blocked
 * in the mask the interrupted code gets back. 0 if the kernel refused
 * (RLIMIT_SIGPENDING): the handler then runs now, at BUSY. */
static int hold_back(struct vh_tls *t, int sig, const siginfo_t *info, ucontext_t *uc)
{
    if (!uc || t->vforked)
        return 0;
    int e = errno;
    siginfo_t si;
    if (info) {
        si = *info;
    } else {
        memset(&si, 0, sizeof si);
        si.si_code = SI_TKILL;
    }
    si.si_signo = sig;
    long rc = syscall(SYS_rt_tgsigqueueinfo, (pid_t)syscall(SYS_getpid),
                      (pid_t)syscall(SYS_gettid), sig, &si);
    errno = e;
    if (rc != 0)
        return 0;
    sigaddset(&uc->uc_sigmask, sig);
    t->deferred |= 1ull << (sig - 1);
    if (vh_cap.hdr)
        vh_count(&vh_cap.hdr->deferred_signals);
    return 1;
}

void vh_signals_release(struct vh_tls *t)
{
    uint64_t d = t->deferred;
    t->deferred = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    sigset_t s;
    sigemptyset(&s);
    for (int i = 0; i < 64; i++)
        if (d >> i & 1)
            sigaddset(&s, i + 1);
    int e = errno;
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);   /* delivered here, guard down */
    errno = e;
}

static int real_act(int sig, const struct sigaction *act, struct sigaction *old);

static void trampoline(int sig, siginfo_t *info, void *ucv)
{
    struct vh_tls *t = &vh_tls;
    if (t->guard == VH_G_BUSY && !is_fault(sig, info) && hold_back(t, sig, info, ucv))
        return;
    if (sig == toggle_sig && !t->vforked)
        toggle_fn(t, -1);
    struct act a;
    if (!act_read(sig, &a))
        return;                    /* changed to SIG_DFL/SIG_IGN meanwhile */
    if (a.flags & SA_RESETHAND) {  /* emulated: see vh_sigaction */
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        if (sig != toggle_sig)     /* the toggle keeps the trampoline */
            real_act(sig, &dfl, NULL);
        act_write(sig, NULL, 0, NULL);
    }
    uint8_t g = t->guard, own = t->own;
    uintptr_t cxx = t->cxx_sp;
    int outside = g != VH_G_BUSY && !t->vforked;
    if (outside) {
        t->guard = VH_G_OUT;
        t->own = 0;
        t->cxx_sp = 0;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    }
    if (a.flags & SA_SIGINFO)
        ((void (*)(int, siginfo_t *, void *))a.fn)(sig, info, ucv);
    else
        ((void (*)(int))a.fn)(sig);
    if (outside) {
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        t->guard = g;
        t->own = own;
        t->cxx_sp = cxx;
    }
}

/* The kernel's sigaction through libc's (it supplies the restorer). */
static int real_act(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!vh_real.sigaction)
        vh_resolve_real();
    if (!vh_real.sigaction) {
        errno = ENOSYS;
        return -1;
    }
    return vh_real.sigaction(sig, act, old);
}

static int sigaction_impl(int sig, const struct sigaction *act, struct sigaction *old)
{
    int rc;
    if (sig <= 0 || sig >= _NSIG || sig == SIGKILL || sig == SIGSTOP || vh_tls.vforked) {
        struct sigaction k;
        rc = real_act(sig, act, old ? &k : NULL);
        if (rc == 0 && old) {
            struct act a;
            *old = k;
            if (k.sa_sigaction == trampoline && act_read(sig, &a)) {
                old->sa_flags = a.flags;
                old->sa_sigaction = (void (*)(int, siginfo_t *, void *))a.fn;
            }
        }
        return rc;
    }
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &saved);
    while (__atomic_exchange_n(&acts_lock, 1, __ATOMIC_ACQUIRE))
        sched_yield();
    struct act prev = acts[sig];
    struct sigaction k;
    if (!act) {
        rc = real_act(sig, NULL, &k);
    } else if (sig == toggle_sig && (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN)) {
        rc = real_act(sig, NULL, &k);   /* the kernel keeps the trampoline */
        if (rc == 0) {
            act_write(sig, NULL, 0, NULL);
            toggle_disp = (void *)act->sa_handler;
        }
    } else if (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN) {
        rc = real_act(sig, act, &k);
        if (rc == 0)
            act_write(sig, NULL, 0, NULL);
    } else if (act->sa_sigaction == trampoline) {
        /* An action read behind our back (a raw rt_sigaction) given back:
         * the kernel gets the trampoline again, the program's handler
         * stays what it was (never the trampoline itself: it would call
         * itself). */
        rc = real_act(sig, act, &k);
    } else {
        act_write(sig, (void *)act->sa_sigaction, act->sa_flags, &act->sa_mask);
        struct sigaction mine = *act;
        mine.sa_sigaction = trampoline;
        mine.sa_flags |= SA_SIGINFO;
        /* SA_RESETHAND is done by the trampoline: a signal held back must
         * still find the program's handler when it comes again. */
        if (mine.sa_flags & SA_RESETHAND)
            mine.sa_flags = (mine.sa_flags & ~SA_RESETHAND) | SA_NODEFER;
        rc = real_act(sig, &mine, &k);
        if (rc != 0)
            act_write(sig, prev.fn, prev.flags, &prev.mask);
    }
    if (rc == 0 && old) {
        *old = k;
        if (k.sa_sigaction == trampoline && prev.fn) {
            old->sa_flags = prev.flags;
            old->sa_sigaction = (void (*)(int, siginfo_t *, void *))prev.fn;
            old->sa_mask = prev.mask;
        } else if (k.sa_sigaction == trampoline && sig == toggle_sig) {
            memset(old, 0, sizeof *old);
            old->sa_handler = (sighandler_t)toggle_disp;
        }
    }
    int taken = rc == 0 && sig == toggle_sig && act && act->sa_handler != SIG_DFL &&
                act->sa_handler != SIG_IGN && act->sa_sigaction != trampoline;
    __atomic_store_n(&acts_lock, 0, __ATOMIC_RELEASE);
    if (taken) {
        static int said;
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
            vh_log("VHEAP_SIGNAL: the program handles signal %d itself; each one now toggles "
                   "recording, then runs its handler (choose another VHEAP_SIGNAL if that is "
                   "not wanted)", sig);
    }
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    errno = e;
    return rc;
}

VH_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    return sigaction_impl(sig, act, old);
}

VH_EXPORT int __sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    return sigaction_impl(sig, act, old);
}

/* signal() and its variants, as glibc defines them, over sigaction. */
static sighandler_t install(int sig, sighandler_t h, int flags, int self_masked)
{
    struct sigaction a, o;
    if (h == SIG_ERR || sig <= 0 || sig >= _NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    memset(&a, 0, sizeof a);
    a.sa_handler = h;
    sigemptyset(&a.sa_mask);
    if (self_masked)
        sigaddset(&a.sa_mask, sig);
    a.sa_flags = flags;
    return sigaction_impl(sig, &a, &o) < 0 ? SIG_ERR : o.sa_handler;
}

VH_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
    return install(sig, h, SA_RESTART, 1);     /* BSD semantics, glibc's default */
}

VH_EXPORT sighandler_t bsd_signal(int sig, sighandler_t h)
{
    return install(sig, h, SA_RESTART, 1);
}

VH_EXPORT sighandler_t sysv_signal(int sig, sighandler_t h)
{
    return install(sig, h, SA_RESETHAND | SA_NODEFER, 0);
}

VH_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t h)
{
    return install(sig, h, SA_RESETHAND | SA_NODEFER, 0);
}

void vh_signals_toggle_init(int (*toggle)(struct vh_tls *t, int want))
{
    int sig = (int)vh_opt.signal;
    if (!sig)
        return;
    toggle_fn = toggle;            /* before the trampoline can see the signal */
    struct sigaction a, k;
    memset(&a, 0, sizeof a);
    a.sa_sigaction = trampoline;
    a.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&a.sa_mask);
    if (real_act(sig, NULL, &k) == 0 && k.sa_handler == SIG_IGN)
        toggle_disp = SIG_IGN;     /* inherited (nohup): the program's */
    if (real_act(sig, &a, NULL) != 0) {
        vh_log("VHEAP_SIGNAL: cannot take signal %d (%s); recording cannot be toggled by it",
               sig, vh_errname(errno));
        return;
    }
    toggle_sig = sig;
}
