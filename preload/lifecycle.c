/* lifecycle.c — when the shim starts, stops, forks and ticks.
 *
 * Initialization is lazy (the first hook call, or our constructor if that
 * comes first) because allocations happen before constructors run. Also
 * here: the per-thread exit destructor, the fork handlers, vfork, the END
 * record at exit, and the periodic tick (RSS sample, ctl requests) taken on
 * the hot path's one timer branch. The state they drive is state.c's. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/internal.h"
#include "preload/reach.h"
#include "preload/sys.h"
#include "preload/upcall.h"

/* Every upcall row's member m (upcall.h), with its arguments. */
#define UPCALL(m, ...)                                                                  \
    VH_UPCALL_EACH(u_)                                                                  \
    if (u_->m)                                                                          \
    u_->m(__VA_ARGS__)

extern char **environ;

static uint64_t preinit_dropped;   /* events while another thread initialized */

/* ---- recording on demand -------------------------------------------------------
 * `vheap-analyze ctl` writes requests into the capture's header (ctl, and
 * ctl_mark with ctl_mark_seq); the shim reads them where it already goes:
 * at the periodic tick while recording (every RSS interval, or 10 ms with
 * RSS samples off), at every allocator call while paused (those take the
 * slow path anyway). No thread of its own, no signal. */
#define CTL_TICK_NS (10 * 1000000ull)

static void rss_restart_at(uint64_t now);

static uint32_t marks_seen;        /* atomic: the last ctl_mark_seq acted on */
uint32_t vh_record_starts;

static uint64_t tick_interval(void)
{
    return vh_opt.rss_interval_ns ? vh_opt.rss_interval_ns : CTL_TICK_NS;
}

/* At guard BUSY. */
static void window(struct vh_tls *t, int on)
{
    vh_record_time(t, VH_REC_WINDOW, (uint16_t)on, 0, vh_now());
    __atomic_store_n(&vh_cap.hdr->recording, (uint32_t)on, __ATOMIC_RELEASE);
}

/* Paused before anything was recorded: said in the header, so that the
 * reader does not take the WINDOW 0 for a vheap_stop() made before the
 * program's first allocation (then recording was on until it). */
static void window_start_paused(struct vh_tls *t)
{
    __atomic_fetch_or(&vh_cap.hdr->flags, VH_HDR_START_PAUSED, __ATOMIC_RELEASE);
    window(t, 0);
}

/* The one way recording goes on or off once started — `ctl`, vheap_start
 * and vheap_stop, VHEAP_SIGNAL: the mode word, then the WINDOW record that
 * says so (at guard BUSY). 1 if it changed; 0 when it already was so, or
 * the capture is gone (DROP, OFF) or not made yet. */
static int switch_to(struct vh_tls *t, int on)
{
    int from = on ? VH_MODE_PAUSED : VH_MODE_ON;
    if (!__atomic_compare_exchange_n(&vh_mode, &from, on ? VH_MODE_ON : VH_MODE_PAUSED, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return 0;
    window(t, on);
    if (on) {
        UPCALL(resume, t);         /* heaps made or gone while paused */
        __atomic_fetch_add(&vh_record_starts, 1, __ATOMIC_RELEASE);
        rss_restart_at(vh_now());
    }
    return 1;
}

int vh_recording_set(struct vh_tls *t, int want)
{
    /* Called at BUSY only by a fault's handler or a raw rt_sigaction's
     * (signals.c holds the others back): the bookkeeping it interrupted
     * may be writing this thread's chunk. */
    if (t->guard != VH_G_BUSY) {
        int mode = __atomic_load_n(&vh_mode, __ATOMIC_ACQUIRE);
        if (want < 0)
            want = mode != VH_MODE_ON;
        if (mode == VH_MODE_ON || mode == VH_MODE_PAUSED) {
            struct vh_hook h = vh_hook_enter(t);
            switch_to(t, want);
            vh_hook_leave(t, h);
        }
    }
    return __atomic_load_n(&vh_mode, __ATOMIC_ACQUIRE) == VH_MODE_ON;
}

/* A new `ctl mark` becomes a MARK record. At guard BUSY. */
static void ctl_marks(struct vh_tls *t, const struct vh_capture_header *h)
{
    uint32_t seq = __atomic_load_n(&h->ctl_mark_seq, __ATOMIC_ACQUIRE);
    uint32_t seen = __atomic_load_n(&marks_seen, __ATOMIC_RELAXED);
    if (seq == seen ||
        !__atomic_compare_exchange_n(&marks_seen, &seen, seq, 0, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED))
        return;
    char label[sizeof h->ctl_mark];
    memcpy(label, h->ctl_mark, sizeof label);
    label[sizeof label - 1] = '\0';
    vh_record_label(t, VH_REC_MARK, 0, label, strlen(label), vh_now());
}

/* While recording, at the tick (guard BUSY): a mark, or a pause. */
static void ctl_poll(struct vh_tls *t)
{
    struct vh_capture_header *h = vh_cap.hdr;
    if (!h)
        return;
    ctl_marks(t, h);
    uint32_t c = __atomic_load_n(&h->ctl, __ATOMIC_ACQUIRE);
    if (c == VH_CTL_NONE ||
        !__atomic_compare_exchange_n(&h->ctl, &c, VH_CTL_NONE, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;
    if (c == VH_CTL_STOP)
        switch_to(t, 0);
    else if (c == VH_CTL_REACH)
        vh_reach_now(t);
}

/* While paused, at an allocator call: 1 if recording starts again now. */
static int paused_poll(struct vh_tls *t)
{
    struct vh_capture_header *h = vh_cap.hdr;
    if (!h || t->guard == VH_G_BUSY)
        return 0;
    int resumed = 0;
    uint32_t c = __atomic_load_n(&h->ctl, __ATOMIC_ACQUIRE);
    uint32_t seq = __atomic_load_n(&h->ctl_mark_seq, __ATOMIC_RELAXED);
    if (c == VH_CTL_NONE && seq == __atomic_load_n(&marks_seen, __ATOMIC_RELAXED))
        return 0;                  /* the common case: one look, nothing new */
    uint8_t g = vh_busy(t);
    ctl_marks(t, h);
    if (c != VH_CTL_NONE &&
        __atomic_compare_exchange_n(&h->ctl, &c, VH_CTL_NONE, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED)) {
        if (c == VH_CTL_START)
            resumed = switch_to(t, 1);
    }
    vh_unbusy(t, g);
    return resumed || __atomic_load_n(&vh_mode, __ATOMIC_ACQUIRE) == VH_MODE_ON;
}

void vh_rss_tick(struct vh_tls *t, uint64_t now)
{
    uint64_t next = __atomic_load_n(&vh_next_rss, __ATOMIC_RELAXED);
    if (now < next || !__atomic_compare_exchange_n(&vh_next_rss, &next, now + tick_interval(),
                                                   0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return;
    /* Libraries loaded behind our back (glibc's own dlopen of NSS or iconv
     * modules) show up here at the latest. */
    vh_modules_poll(t);
    if (vh_opt.rss_interval_ns)
        vh_rss_sample_changed(t);
    ctl_poll(t);
}

static void rss_restart_at(uint64_t now)
{
    __atomic_store_n(&vh_next_rss, now + tick_interval(), __ATOMIC_RELAXED);
}

static void rss_restart(void)
{
    rss_restart_at(vh_now());
}

/* ---- threads ----------------------------------------------------------------- */
/* The thread's first event: its stack's bounds, and the state its events
 * keep beside the TLS (mapped: glibc takes static TLS from every thread's
 * stack, so the shim's must stay small). */
static void thread_setup(struct vh_tls *t)
{
    t->bounds_known = 1;
    vh_thread_bounds(t);
    if (vh_unwind_cfi() && t->stack_hi)
        vh_cfi_thread(t);
    vh_stacks_thread(t);
    vh_reach_thread_add(t);
}

/* Runs as a pthread key destructor when a thread exits: closes its stream
 * and hands the chunk to a later thread. A record made after this (another
 * destructor that frees) claims a chunk and gives it back at once. */
static void thread_exit(void *arg)
{
    struct vh_tls *t = &vh_tls;
    uint8_t g = vh_busy(t);
    t->registered = 0;
    if (t->chunk && __atomic_load_n(&vh_mode, __ATOMIC_ACQUIRE) == VH_MODE_ON)
        vh_record_time(t, VH_REC_THREAD_EXIT, 0, t->tid, vh_now());
    t->exited = 1;
    vh_reach_thread_remove(t);
    vh_chunk_release(t);
    vh_cfi_thread_end(t);
    vh_stacks_thread_end(t);
    UPCALL(thread_end);
    vh_unbusy(t, g);
}

/* ---- fork ------------------------------------------------------------------- */
static void fork_prepare(void)
{
    UPCALL(fork_prepare);
    vh_modules_fork_prepare();
    vh_stacks_fork_prepare();
    vh_capture_fork_prepare();
    vh_tls.in_fork = 1;            /* after taking the locks: see vh_lock */
}

static void fork_parent(void)
{
    vh_tls.in_fork = 0;
    vh_capture_fork_parent();
    vh_stacks_fork_parent();
    vh_modules_fork_parent();
    UPCALL(fork_parent);
}

/* The child's own capture. Runs in our atfork child handler, or earlier, in
 * the first allocation the child makes (child handlers registered before
 * ours run first and may allocate). */
static void fork_child_work(void)
{
    struct vh_tls *t = &vh_tls;
    sigset_t saved;
    vh_own_begin(t, &saved);
    t->chunk = NULL;
    t->pos = t->end = NULL;
    t->pop_start = NULL;
    t->tid = 0;
    t->exited = 0;
    t->in_fork = 0;
    t->guard = VH_G_OUT;
    t->deferred = 0;
    /* Whether the parent recorded: it had a capture (the mode word itself
     * reads UNINIT here, internal.h); and whether it was paused. */
    int recorded = vh_cap.hdr != NULL;
    int paused = recorded && !__atomic_load_n(&vh_cap.hdr->recording, __ATOMIC_ACQUIRE);
    vh_modules_fork_child();
    vh_mapped_fork_child();
    vh_reach_fork_child(t);
    if (recorded) {
        vh_stacks_reset();
        vh_capture_fork_child();
        if (vh_cap.hdr) {
            vh_sample_fork_child(); /* the parent's sampled blocks are not ours */
            if (paused) {
                uint8_t g = vh_busy(t);
                window_start_paused(t);
                vh_unbusy(t, g);
            }
            __atomic_store_n(&vh_mode, paused ? VH_MODE_PAUSED : VH_MODE_ON, __ATOMIC_RELEASE);
            vh_modules_emit_all(t);
            vh_rss_sample(t);
            rss_restart();
        } else {
            __atomic_store_n(&vh_mode, VH_MODE_OFF, __ATOMIC_RELEASE);
        }
    } else {
        vh_capture_fork_parent(); /* only the locks prepare took */
        vh_stacks_fork_parent();
        __atomic_store_n(&vh_mode, VH_MODE_OFF, __ATOMIC_RELEASE);
    }
    UPCALL(fork_child, t);         /* after the capture exists */
    vh_handover_mark(t);           /* what follows is the child's own */
    vh_own_end(t, &saved);
}

static void fork_child(void)
{
    if (vh_tls.in_fork)
        fork_child_work();
}

/* ---- vfork -------------------------------------------------------------------
 * A vfork child runs in the parent's memory on the parent thread's stack and
 * TLS until it execs or exits: left alone, its malloc calls would be recorded
 * into the parent's chunk as the parent's, and an exit() would write the
 * parent's END record. So vfork is interposed, in assembly, as glibc's own
 * is written: a C wrapper cannot return twice through one frame (the child
 * returns first and its later calls overwrite the frame the parent returns
 * through), so the return address is kept in a register across the system
 * call, never on the stack. Before the call it raises `own` and `vforked`
 * (counts: a child may vfork again) in the thread's state, which the child
 * shares: its allocator calls pass through uncounted (its blocks live on in
 * the parent's heap, unrecorded, if it does not free them before exec), and
 * finish() skips it. The parent, resumed once the child has exec'd or
 * exited, lowers both again.
 * (posix_spawn, system and popen use clone(CLONE_VM | CLONE_VFORK) inside
 * glibc, whose child calls no allocator function and no handler.) */
#define VFORK_OWN 0
#define VFORK_FLAG 6
_Static_assert(offsetof(struct vh_tls, own) == VFORK_OWN, "vfork's offset of own");
_Static_assert(offsetof(struct vh_tls, vforked) == VFORK_FLAG, "vfork's offset of vforked");
_Static_assert(SYS_vfork == 58, "vfork's system call number");
#define VH_STR_(x) #x
#define VH_STR(x) VH_STR_(x)

/* vfork failed in the parent (no child): errno as glibc sets it. Called
 * from the assembly below only (`used`: kept under link-time optimization). */
int vh_vfork_failed(int err);
__attribute__((used)) int vh_vfork_failed(int err)
{
    errno = err;
    return -1;
}

__asm__(".pushsection .text\n"
        ".globl vfork\n"
        ".type vfork, @function\n"
        ".globl __vfork\n"
        ".type __vfork, @function\n"
        ".p2align 4\n"
        "vfork:\n"
        "__vfork:\n"
        ".cfi_startproc\n"
        "    movq vh_tls@gottpoff(%rip), %rax\n"
        "    incb %fs:" VH_STR(VFORK_OWN) "(%rax)\n"
        "    incb %fs:" VH_STR(VFORK_FLAG) "(%rax)\n"
        "    popq %rdi\n"                 /* the return address */
        ".cfi_adjust_cfa_offset -8\n"
        ".cfi_register %rip, %rdi\n"
        "    movl $58, %eax\n"            /* SYS_vfork */
        "    syscall\n"
        "    pushq %rdi\n"
        ".cfi_adjust_cfa_offset 8\n"
        ".cfi_rel_offset %rip, 0\n"
        "    testq %rax, %rax\n"
        "    jz 1f\n"                     /* the child keeps both marks */
        "    movq vh_tls@gottpoff(%rip), %rcx\n"
        "    decb %fs:" VH_STR(VFORK_OWN) "(%rcx)\n"
        "    decb %fs:" VH_STR(VFORK_FLAG) "(%rcx)\n"
        "    cmpq $-4095, %rax\n"
        "    jae 2f\n"
        "1:  ret\n"
        "2:  negl %eax\n"
        "    movl %eax, %edi\n"
        "    jmp vh_vfork_failed\n"
        ".cfi_endproc\n"
        ".size vfork, .-vfork\n"
        ".size __vfork, .-__vfork\n"
        ".popsection\n");

/* ---- start and end ---------------------------------------------------------- */
static pid_t finished_pid;          /* END written for this process */

/* atexit handler and destructor: whichever runs first writes END. */
static void finish(void)
{
    int mode = __atomic_load_n(&vh_mode, __ATOMIC_ACQUIRE);
    if (mode != VH_MODE_ON && mode != VH_MODE_DROP && mode != VH_MODE_PAUSED)
        return;
    if (vh_tls.vforked)
        return;                    /* a vfork child calling exit(): not ours */
    pid_t me = vh_cap.pid;         /* a fork child has its own capture */
    if (__atomic_exchange_n(&finished_pid, me, __ATOMIC_ACQ_REL) == me)
        return;
    struct vh_tls *t = &vh_tls;
    uint8_t g = vh_busy(t);
    /* only a complete record knows every block; a fork child that recorded
     * nothing has none, and its capture goes (vh_capture_end) */
    if (mode == VH_MODE_ON && !vh_handover_empty())
        vh_reach_at_exit(t);
    if (vh_mapped_untracked())
        vh_log("%llu mappings were not recorded: more than 65536 at once",
               (unsigned long long)vh_mapped_untracked());
    vh_capture_end();
    vh_unbusy(t, g);
}

/* The mode word's own page, zeroed in any child by the kernel (internal.h).
 * Without MADV_WIPEONFORK (Linux < 4.14) the static word stays in use and
 * only glibc's fork is told apart. Called with the mode at INIT. */
static void mode_page(void)
{
    int *p = vh_sys_mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return;
    if (madvise(p, 4096, MADV_WIPEONFORK) != 0) {
        vh_sys_munmap(p, 4096);
        return;
    }
    *p = VH_MODE_INIT;
    __atomic_store_n(&vh_mode_word, p, __ATOMIC_RELEASE);
}

/* The fork and exit handlers are registered by our constructor, never by
 * init: init may run inside the program's first allocation, and
 * pthread_atfork and atexit allocate under the atfork lock and
 * __exit_funcs_lock, which that allocation may be made under (the 49th
 * pthread_atfork, the 33rd atexit: tests/integration/lock_matrix.sh). A
 * constructor runs with no lock of libc's held. */
static int handlers_wanted;

static void register_handlers(void)
{
    static int done;
    if (done || !__atomic_load_n(&handlers_wanted, __ATOMIC_ACQUIRE))
        return;
    done = 1;
    struct vh_tls *t = &vh_tls;
    sigset_t saved;
    vh_own_begin(t, &saved);       /* their allocations are ours */
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(finish);
    vh_own_end(t, &saved);
}

static void init(void)
{
    struct vh_tls *t = &vh_tls;
    /* Before libc's own initialization environ is not set yet: wait for our
     * constructor rather than ignore VHEAP_OUT; meanwhile calls go to the
     * real allocator. */
    if (!environ) {
        if (!vh_real.malloc)
            vh_resolve_real();
        return;
    }
    int expected = VH_MODE_UNINIT;
    if (!__atomic_compare_exchange_n(&vh_mode, &expected, VH_MODE_INIT, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;
    sigset_t saved;
    vh_own_begin(t, &saved);
    int mode = VH_MODE_OFF;
    if (vh_mode_word == &vh_boot_mode)
        mode_page();
    vh_log_init();
    vh_resolve_real();
    vh_options_load();
    if (!vh_real.malloc || !vh_real.free) {
        vh_log("cannot find the real malloc; recording nothing");
        goto out;
    }
    /* setuid/setgid: silent, as ld.so would be. VHEAP_ALLOW_SETUID comes from
     * the environment of whoever started the program, so it is honoured only
     * when that is root: otherwise, with the shim in /etc/ld.so.preload, any
     * user could make a privileged program create files where they choose. */
    if (getauxval(AT_SECURE) && !(vh_opt.allow_setuid && getuid() == 0))
        goto out;
    if (vh_capture_create(0, NULL) < 0)
        goto out;
    if (vh_unwind_init() < 0 || vh_stacks_init() < 0 || vh_modules_init() < 0) {
        vh_capture_disable("cannot set up the stack table", ENOMEM);
        mode = VH_MODE_DROP;
        goto out;
    }
    vh_mmap_init();
    thread_setup(t);
    t->clocked = 1;                /* the first thread: see vh_enter_slow */
    vh_clock_thread();
    vh_thread_key_ok = pthread_key_create(&vh_thread_key, thread_exit) == 0;
    __atomic_store_n(&handlers_wanted, 1, __ATOMIC_RELEASE);   /* our constructor registers them */
    if (vh_opt.sample && vh_sample_init(vh_opt.sample) < 0)
        vh_log("cannot map the set of sampled blocks; recording every call");
    vh_cap.hdr->sample_rate = vh_sample_rate;
    vh_signals_toggle_init(vh_recording_set);
    uint8_t g = vh_busy(t);
    vh_modules_emit_all(t);
    vh_rss_sample(t);
    if (vh_opt.start == VH_START_PAUSED)
        window_start_paused(t);    /* VHEAP_START=paused */
    vh_unbusy(t, g);
    rss_restart();
    __atomic_fetch_add(&vh_cap.hdr->dropped_events,
                       __atomic_exchange_n(&preinit_dropped, 0, __ATOMIC_RELAXED),
                       __ATOMIC_RELAXED);
    mode = vh_opt.start == VH_START_PAUSED ? VH_MODE_PAUSED : VH_MODE_ON;
    if (mode == VH_MODE_ON)
        __atomic_store_n(&vh_record_starts, 1, __ATOMIC_RELEASE);
out:
    expected = VH_MODE_INIT;
    __atomic_compare_exchange_n(&vh_mode, &expected, mode, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_RELAXED);
    vh_own_end(t, &saved);
}

/* Inside a C++ operator hook's real call (own raised): is this call a
 * signal handler's rather than the operator's own? */
static int cxx_handler_call(const struct vh_tls *t)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    return t->cxx_sp && !t->unwinding &&
           (sp > t->cxx_sp || t->cxx_sp - sp > VH_CXX_INNER_MAX);
}

/* The guard is BUSY, yet this call comes from a frame above the one that
 * raised it, on the same stack: that frame is gone. Only a handler the
 * shim did not install through its trampoline (a raw rt_sigaction), or a
 * fault's, can have left the shim that way, by longjmp; its state is
 * cleared so that recording goes on. `sp` is the frame of the hook that
 * asks (vh_enter_slow's caller): one at the same depth as the frame that
 * raised the guard replaced it, so that one is gone too (two live frames
 * never share an address; a nested handler's hook is deeper by a signal
 * frame). A call from further down cannot be told from a handler nested
 * in the bookkeeping: counted as nested until a call comes from there or
 * above. */
static void guard_stale(struct vh_tls *t, uintptr_t sp)
{
    if (!t->bounds_known || sp < t->busy_sp || sp < t->stack_lo || sp >= t->stack_hi ||
        t->busy_sp < t->stack_lo)
        return;
    if (t->unwinding) {
        t->unwinding = 0;
        if (t->own)
            t->own--;
    }
    t->guard = VH_G_OUT;
    /* What the abandoned frame was doing is dropped: the rest of its chunk
     * (a record it had encoded but not published would have moved the
     * chunk's cursor; a new chunk starts a new run), and the thread's walk
     * state and id cache, which it may have left half updated. */
    vh_chunk_abandon(t);
    if (t->walker) {
        vh_cfi_thread_end(t);
        vh_cfi_thread(t);
    }
    if (t->ids) {
        vh_stacks_thread_end(t);
        vh_stacks_thread(t);
    }
    if (vh_cap.hdr)
        vh_count(&vh_cap.hdr->guard_resets);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wframe-address"
VH_NOINLINE int vh_enter_slow(struct vh_tls *t)
{
    /* The shim keeps frame pointers: frame 1 is the hook's. */
    if (vh_unlikely(t->guard == VH_G_BUSY))
        guard_stale(t, (uintptr_t)__builtin_frame_address(1));
    if (t->own && !cxx_handler_call(t)) {
        /* The shim's own call: not an event. But nothing inside libunwind
         * allocates, so a call arriving there is a signal handler's. */
        if (t->unwinding && __atomic_load_n(&vh_mode, __ATOMIC_ACQUIRE) == VH_MODE_ON &&
            vh_cap.hdr)
            vh_count(&vh_cap.hdr->nested_events);
        return 0;
    }
    if (t->in_fork && getpid() != vh_cap.pid)
        fork_child_work();         /* a child allocating before our handler */
    int mode = __atomic_load_n(&vh_mode, __ATOMIC_ACQUIRE);
    if (mode == VH_MODE_UNINIT) {
        /* The mode word reads UNINIT in every child (internal.h): one made
         * by a raw fork or clone system call ran no atfork handler and
         * still holds the parent's capture, which it must never write. */
        if (vh_cap.pid && (pid_t)syscall(SYS_getpid) != vh_cap.pid)
            fork_child_work();
        else
            init();
        mode = __atomic_load_n(&vh_mode, __ATOMIC_ACQUIRE);
    }
    switch (mode) {
    case VH_MODE_ON:
        if (t->guard == VH_G_BUSY) {
            /* A signal handler interrupted our bookkeeping (one installed
             * behind the trampoline's back, or a fault's). */
            vh_count(&vh_cap.hdr->nested_events);
            return 0;
        }
        /* The thread's first event: its stack bounds and walk state now,
         * before the real allocator runs (threads.c: no call into glibc,
         * which may be what this malloc is inside). A handler's event
         * nested in a real call (guard REAL) never sets up: without
         * bounds its walk is libunwind's. */
        if (vh_unlikely(!t->bounds_known) && t->guard == VH_G_OUT)
            thread_setup(t);
        /* Every other thread's first event (init counts the first one's):
         * from the second on, times must order threads, before its first.
         * At BUSY: it may take the clock's lock. */
        if (vh_unlikely(!t->clocked)) {
            uint8_t g = vh_busy(t);
            t->clocked = 1;
            vh_clock_thread();
            vh_unbusy(t, g);
        }
        return 1;
    case VH_MODE_PAUSED:
        /* Not recorded, not counted: recording is off by request. */
        if (!paused_poll(t))
            return 0;
        return vh_enter_slow(t);   /* recording again: decided as ON */
    case VH_MODE_DROP:
        vh_dropped();
        return 0;
    case VH_MODE_UNINIT:
    case VH_MODE_INIT:
        __atomic_fetch_add(&preinit_dropped, 1, __ATOMIC_RELAXED);
        return 0;
    default:
        return 0;
    }
}
#pragma GCC diagnostic pop

__attribute__((constructor)) static void vh_constructor(void)
{
    if (__atomic_load_n(&vh_mode, __ATOMIC_ACQUIRE) == VH_MODE_UNINIT)
        init();
    register_handlers();
}

__attribute__((destructor)) static void vh_destructor(void)
{
    finish();
}
