/* test_cfi.c — the shim's CFI walker (preload/cfi.c, compiled in here) and
 * its signal-frame helpers (preload/sigframe.h): the trampoline recogniser
 * and the ucontext reader on bytes we lay out, the stack-span choice, and
 * live walks from a handler that interrupted a thread spinning in a known
 * function: through the signal frame on the thread's stack and on a
 * sigaltstack, from interrupted PCs whose rule differs from the previous
 * instruction's (the rule must be looked up at the PC itself), and through
 * a frame whose CFA is rbx-based (as glibc's lazy-binding trampoline's),
 * which only a signal frame makes walkable; a handler interrupted by
 * another one (two signal frames in one walk); walks that reuse the
 * previous walk's frames (the memo), which must give what a walk from
 * nothing gives, with the stack hash's fold over the same frames; and walks
 * known by their start and the stack words they read, which must be taken
 * exactly when those words still hold. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "preload/cfi.c"

uint32_t vh_module_gen;            /* state.c's, which is not linked here */

/* ---- the trampoline and the ucontext, on bytes we lay out ---------------- */

static const uint8_t tramp[VH_SIGTRAMP_LEN] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00,
                                                0x00, 0x00, 0x0f, 0x05 };

static void test_tramp_bytes(void **state)
{
    (void)state;
    uint8_t buf[32];
    for (size_t at = 0; at < 8; at++) {   /* any alignment */
        memset(buf, 0x90, sizeof buf);
        memcpy(buf + at, tramp, sizeof tramp);
        assert_true(vh_sigtramp_is(buf + at));
        assert_false(vh_sigtramp_is(buf + at + 1));
        for (size_t i = 0; i < sizeof tramp; i++) {
            buf[at + i] ^= 0x01;
            assert_false(vh_sigtramp_is(buf + at));
            buf[at + i] ^= 0x01;
        }
    }
    /* rt_sigreturn is 15; 60 (exit) is not a trampoline */
    memcpy(buf, tramp, sizeof tramp);
    buf[3] = 0x3c;
    assert_false(vh_sigtramp_is(buf));
}

static void test_sigframe_regs(void **state)
{
    (void)state;
    static ucontext_t ucs[2] __attribute__((aligned(16)));
    ucontext_t *uc = &ucs[0];
    memset(ucs, 0, sizeof ucs);
    uc->uc_mcontext.gregs[REG_RIP] = 0x401234;
    uc->uc_mcontext.gregs[REG_RSP] = 0x7ffd0000;
    uc->uc_mcontext.gregs[REG_RBP] = 0x7ffd0040;
    uc->uc_mcontext.gregs[REG_RBX] = 0x5555;
    uint64_t a = (uintptr_t)uc, end = (uintptr_t)&ucs[2];
    struct vh_sigregs r;
    assert_int_equal(vh_sigframe_regs(a, a, end, &r), 0);
    assert_int_equal(r.ip, 0x401234);
    assert_int_equal(r.sp, 0x7ffd0000);
    assert_int_equal(r.bp, 0x7ffd0040);
    assert_int_equal(r.bx, 0x5555);
    /* exactly the bytes up to gregs[REG_RIP] must fit */
    assert_int_equal(vh_sigframe_regs(a, a, a + VH_UC_SPAN, &r), 0);
    assert_int_equal(vh_sigframe_regs(a, a, a + VH_UC_SPAN - 1, &r), -1);
    assert_int_equal(vh_sigframe_regs(a, a + 8, end, &r), -1);        /* below lo */
    assert_int_equal(vh_sigframe_regs(end, a, end, &r), -1);          /* at hi */
    assert_int_equal(vh_sigframe_regs(a + 4, a, end, &r), -1);        /* unaligned */
    assert_int_equal(vh_sigframe_regs(UINT64_MAX - 7, a, UINT64_MAX, &r), -1);
    uc->uc_mcontext.gregs[REG_RSP] = 0x7ffd0004;                    /* not a stack */
    assert_int_equal(vh_sigframe_regs(a, a, end, &r), -1);
    uc->uc_mcontext.gregs[REG_RSP] = 0x7ffd0000;
    uc->uc_mcontext.gregs[REG_RIP] = 0;
    assert_int_equal(vh_sigframe_regs(a, a, end, &r), -1);
}

static void thread_bounds(uint64_t *lo, uint64_t *hi)
{
    pthread_attr_t attr;
    void *addr;
    size_t size;
    assert_int_equal(pthread_getattr_np(pthread_self(), &attr), 0);
    assert_int_equal(pthread_attr_getstack(&attr, &addr, &size), 0);
    pthread_attr_destroy(&attr);
    *lo = (uintptr_t)addr;
    *hi = (uintptr_t)addr + size;
}

static void test_stack_span(void **state)
{
    (void)state;
    uint64_t tlo, thi, lo = 0, hi = 0;
    thread_bounds(&tlo, &thi);
    uint64_t here = (uintptr_t)__builtin_frame_address(0);
    assert_int_equal(vh_stack_span(tlo, thi, here, &lo, &hi), 0);
    assert_true(lo == tlo && hi == thi);
    static char alt[1 << 16];
    uint64_t in_alt = (uintptr_t)alt + 100;
    stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt }, old;
    stack_t off = { .ss_flags = SS_DISABLE };
    assert_int_equal(sigaltstack(&off, &old), 0);    /* ASan has one: put back below */
    assert_int_equal(vh_stack_span(tlo, thi, in_alt, &lo, &hi), -1);
    assert_int_equal(sigaltstack(&ss, NULL), 0);
    assert_int_equal(vh_stack_span(tlo, thi, in_alt, &lo, &hi), 0);
    assert_true(lo == (uintptr_t)alt && hi == (uintptr_t)alt + sizeof alt);
    assert_int_equal(vh_stack_span(tlo, thi, (uintptr_t)alt + sizeof alt, &lo, &hi), -1);
    assert_int_equal(sigaltstack(&off, NULL), 0);
    assert_int_equal(vh_stack_span(tlo, thi, in_alt, &lo, &hi), -1);
    if (!(old.ss_flags & SS_DISABLE))
        assert_int_equal(sigaltstack(&old, NULL), 0);
}

/* ---- live walks from a signal handler -------------------------------------- */

#define WANT 32
volatile int cfi_test_released;    /* the handler ran (read by assembly) */
volatile int cfi_test_spinning;    /* the target spins (set by assembly) */
uint64_t cfi_test_exact_ret;       /* victim_exact's return address */
static struct {
    int which;                     /* 0 victim, 1 victim_rbx, 2 victim_exact */
    int nested;                    /* SIGUSR1's handler raises SIGUSR2 */
    uint64_t tramp2, rip2;         /* what SIGUSR2's handler saw */
    int walk_in_spin;              /* cfi_test_spin walks, no signal */
    uint64_t victim_ret, outer_ret; /* return addresses the frames know */
    uint64_t tramp, rip;           /* what the handler saw */
    uint64_t frames[WANT];
    int n;
} L;

static uint64_t last_fold;         /* walk_here's vh_cfi_walk fold */
static uint64_t *last_tag;         /* and its tag slot */
static int last_known;             /* the walk was a known one (frames unwritten) */
/* The known walks walk_here's walks keep (TW's), or NULL: then every one
 * is forgotten before a walk, which finds none. A walk that gets a tag
 * slot has TEST_ERA's word stored there, as stacks.c would. */
static struct vh_known *walk_known;
static struct vh_walker *TW;       /* the walk state of walk_here's walks */
#define TEST_ERA 7u
static unsigned known_hits;

/* Where the walk starts, as unwind.c's cfi_unwind does: the state just
 * after returning into our caller (the handler), from our frame pointer. */
static __attribute__((noinline)) int walk_here(uint64_t *buf, uint32_t want)
{
    struct vh_tls t;
    memset(&t, 0, sizeof t);
    thread_bounds(&t.stack_lo, &t.stack_hi);
    uint64_t fp = (uintptr_t)__builtin_frame_address(0), lo, hi;
    if (vh_stack_span(t.stack_lo, t.stack_hi, fp, &lo, &hi) < 0)
        return -2;
    const uint64_t *f = (const uint64_t *)(uintptr_t)fp;
    last_fold = 0;
    last_tag = NULL;
    t.walker = TW;
    if (TW && !walk_known)
        memset(TW->known.set, 0, sizeof TW->known.set);
    int n = lo == t.stack_lo
                ? vh_cfi_walk(&t, f[1], fp + 16, f[0], buf, want, &last_fold, &last_tag, TEST_ERA)
                : vh_cfi_walk_on(&t, f[1], fp + 16, f[0], fp, hi, buf, want);
    last_known = n == VH_WALK_KNOWN;
    if (last_known) {
        /* What the walk was: the count and fold it was known with. */
        const struct known *E = (const struct known *)(const void *)((const char *)last_tag -
                                                                     offsetof(struct known, tag));
        n = E->frames;
        last_fold = E->fold;
        known_hits++;
    } else if (last_tag) {
        *last_tag = (uint64_t)TEST_ERA << 32 | 0x1234;
    }
    __asm__ volatile("" ::: "memory");
    return n;
}

static void on_usr2(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)si;
    L.tramp2 = (uintptr_t)__builtin_return_address(0);
    L.rip2 = (uint64_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
    L.n = walk_here(L.frames, WANT);
}

static void on_usr1(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)si;
    L.tramp = (uintptr_t)__builtin_return_address(0);
    L.rip = (uint64_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
    if (L.nested)
        pthread_kill(pthread_self(), SIGUSR2);   /* handled before it returns */
    else
        L.n = walk_here(L.frames, WANT);
    cfi_test_released = 1;
}

/* Called from victim_rbx (assembly below). */
__attribute__((noinline, used)) void cfi_test_spin(void)
{
    if (L.walk_in_spin) {
        L.n = walk_here(L.frames, WANT);
        return;
    }
    cfi_test_spinning = 1;
    while (!cfi_test_released)
        __asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void victim(void)
{
    L.victim_ret = (uintptr_t)__builtin_return_address(0);
    cfi_test_spinning = 1;
    while (!cfi_test_released)
        __asm__ volatile("" ::: "memory");
    __asm__ volatile("" ::: "memory");
}

/* A frame whose CFA is rbx + 16 while it calls cfi_test_spin(): no rsp or
 * rbp rule holds there, as in glibc's _dl_runtime_resolve (which realigns
 * rsp). rbx_call_ret is the address after its call. */
void victim_rbx(void);
__asm__(".pushsection .text\n"
        ".globl victim_rbx\n"
        ".type victim_rbx, @function\n"
        "victim_rbx:\n"
        "  .cfi_startproc\n"
        "  push %rbx\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  .cfi_rel_offset %rbx, 0\n"
        "  mov %rsp, %rbx\n"
        "  .cfi_def_cfa_register %rbx\n"
        "  and $-64, %rsp\n"
        "  call cfi_test_spin@PLT\n"
        ".globl rbx_call_ret\n"
        "rbx_call_ret:\n"
        "  mov %rbx, %rsp\n"
        "  .cfi_def_cfa_register %rsp\n"
        "  pop %rbx\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  .cfi_restore %rbx\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size victim_rbx, .-victim_rbx\n"
        ".popsection\n");
extern char rbx_call_ret[];

/* Spins on push/pop pairs with exact CFI: at most instructions the rule
 * differs from the one before it by 8, so a walk that looks up an
 * interrupted PC's rule at PC - 1 (as for a return address) goes wrong. */
void victim_exact(void);
#define PUSHPOP "  push %rax\n  .cfi_adjust_cfa_offset 8\n" \
                "  pop %rax\n  .cfi_adjust_cfa_offset -8\n"
__asm__(".pushsection .text\n"
        ".globl victim_exact\n"
        ".type victim_exact, @function\n"
        "victim_exact:\n"
        "  .cfi_startproc\n"
        "  sub $8, %rsp\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  mov 8(%rsp), %rax\n"
        "  mov %rax, cfi_test_exact_ret(%rip)\n"
        "  movl $1, cfi_test_spinning(%rip)\n"
        "1:\n"
        PUSHPOP PUSHPOP PUSHPOP PUSHPOP PUSHPOP PUSHPOP PUSHPOP PUSHPOP
        PUSHPOP PUSHPOP PUSHPOP PUSHPOP PUSHPOP PUSHPOP PUSHPOP PUSHPOP
        "  cmpl $0, cfi_test_released(%rip)\n"
        "  je 1b\n"
        "  add $8, %rsp\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size victim_exact, .-victim_exact\n"
        ".popsection\n");

static __attribute__((noinline)) void outer(void)
{
    L.outer_ret = (uintptr_t)__builtin_return_address(0);
    if (L.which == 1)
        victim_rbx();
    else if (L.which == 2)
        victim_exact();
    else
        victim();
    __asm__ volatile("" ::: "memory");   /* keep the call a call */
}

static void *target(void *alt)
{
    if (alt) {
        stack_t ss = { .ss_sp = alt, .ss_size = 1 << 16 };
        assert_int_equal(sigaltstack(&ss, NULL), 0);
    }
    outer();
    return NULL;
}

/* Runs outer() on a thread, signals it once it spins, and lets the handler
 * walk. With `alt`, the handler runs on a sigaltstack. */
static void interrupt(int alt, int which, int nested)
{
    memset(&L, 0, sizeof L);
    cfi_test_released = cfi_test_spinning = 0;
    L.which = which;
    L.nested = nested;
    assert_int_equal(vh_cfi_init(), 0);
    struct sigaction sa, old, old2;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr2;
    sa.sa_flags = SA_SIGINFO | (alt ? SA_ONSTACK : 0);
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR2, &sa, &old2), 0);
    sa.sa_sigaction = on_usr1;
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    void *stack = alt ? malloc(1 << 16) : NULL;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, target, stack), 0);
    while (!cfi_test_spinning)
        sched_yield();
    assert_int_equal(pthread_kill(th, SIGUSR1), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
    assert_int_equal(sigaction(SIGUSR2, &old2, NULL), 0);
    free(stack);
}

/* handler, trampoline, the interrupted PC, then victim's caller. */
static void expect_through(int alt)
{
#ifdef __SANITIZE_ADDRESS__
    skip();                        /* ASan's stack redzones: not for a walker */
#endif
    interrupt(alt, 0, 0);
    assert_true(L.n >= 5);
    assert_true(vh_sigtramp_is((const void *)(uintptr_t)L.tramp));
    assert_int_equal(L.frames[1], L.tramp);
    assert_int_equal(L.frames[2], L.rip);
    assert_int_equal(L.frames[3], L.victim_ret);
    assert_int_equal(L.frames[4], L.outer_ret);
}

static void test_walk_thread_stack(void **state)
{
    (void)state;
    expect_through(0);
}

static void test_walk_sigaltstack(void **state)
{
    (void)state;
    expect_through(1);
}

static void test_walk_rbx_frame(void **state)
{
    (void)state;
#ifdef __SANITIZE_ADDRESS__
    skip();
#endif
    interrupt(0, 1, 0);
    assert_true(L.n >= 6);
    assert_int_equal(L.frames[1], L.tramp);
    assert_int_equal(L.frames[2], L.rip);           /* in cfi_test_spin() */
    assert_int_equal(L.frames[3], (uintptr_t)rbx_call_ret);
    assert_true(L.frames[4] != 0);                  /* in outer() */
    assert_int_equal(L.frames[5], L.outer_ret);
}

/* SIGUSR2's handler interrupted SIGUSR1's: both signal frames, on the
 * thread's stack and (nested, the kernel stays on it) on a sigaltstack. */
static void test_walk_nested(void **state)
{
    (void)state;
#ifdef __SANITIZE_ADDRESS__
    skip();
#endif
    for (int alt = 0; alt < 2; alt++) {
        interrupt(alt, 0, 1);
        assert_true(L.n >= 8);
        assert_int_equal(L.frames[1], L.tramp2);
        assert_int_equal(L.frames[2], L.rip2);           /* in pthread_kill */
        int k = 3;
        while (k < L.n && L.frames[k] != L.tramp)
            k++;
        assert_true(k + 3 < L.n);
        assert_int_equal(L.frames[k + 1], L.rip);
        assert_int_equal(L.frames[k + 2], L.victim_ret);
        assert_int_equal(L.frames[k + 3], L.outer_ret);
    }
}

/* Interrupted between pushes and pops, twenty times. */
static void test_walk_exact_pc(void **state)
{
    (void)state;
#ifdef __SANITIZE_ADDRESS__
    skip();
#endif
    for (int round = 0; round < 20; round++) {
        interrupt(round & 1, 2, 0);
        assert_true(L.n >= 5);
        assert_int_equal(L.frames[1], L.tramp);
        assert_int_equal(L.frames[2], L.rip);
        assert_int_equal(L.frames[3], cfi_test_exact_ret);
        assert_int_equal(L.frames[4], L.outer_ret);
    }
}

/* Without a signal frame rbx is not known: that walk is left to libunwind
 * (-1), while the same walk from outside victim_rbx goes through. */
static void test_rbx_frame_needs_signal(void **state)
{
    (void)state;
#ifdef __SANITIZE_ADDRESS__
    skip();
#endif
    assert_int_equal(vh_cfi_init(), 0);
    memset(&L, 0, sizeof L);
    uint64_t buf[WANT];
    assert_true(walk_here(buf, WANT) > 0);
    L.walk_in_spin = 1;
    victim_rbx();
    assert_int_equal(L.n, -1);
}

/* Empties every memo and their index. */
static void memo_clear(void)
{
    memset(&TW->memo, 0, sizeof TW->memo);
}

/* ---- the memo of the previous walk ------------------------------------------
 * A walk that reuses the previous walk's frames (whatever that was: deeper,
 * shallower, through other call sites, longer than the memo) gives the same
 * frames and the same fold as a walk from an empty memo, and that fold is
 * the one stacks.c computes from the frames alone (vh_hash_fold). */
#define MEMO_WANT 100
static int memo_walks, memo_folded, memo_cut_folded;
static unsigned known_cut;         /* known walks cut at the count asked */

/* The memo as the walks left it, while a reference walk runs. */
static struct memo saved_memo;

/* Three walks through the memo and the known walks (when the test keeps
 * them) as they are: the second, a repeat of the first, is known by then
 * (or, without known walks, the memo's all through); then one from an
 * empty memo and no known walks, the reference, after which the memo is
 * put back: the next call's first walk meets this walk's memo. A known
 * walk's frames are not written: its count and fold must be the
 * reference's. */
#define CHECK_WALKS 4
static __attribute__((noinline)) int check_walk(uint32_t want)
{
    const int ref = CHECK_WALKS - 1;
    uint64_t buf[CHECK_WALKS][MEMO_WANT], fold[CHECK_WALKS];
    int n[CHECK_WALKS], known[CHECK_WALKS];
    struct vh_known *known_was = walk_known;
    /* One call site for every walk (volatile: not unrolled). */
    for (volatile int k = 0; k < CHECK_WALKS; k++) {
        if (k == ref) {
            saved_memo = TW->memo;
            memo_clear();
            walk_known = NULL;
        }
        n[k] = walk_here(buf[k], want);
        fold[k] = last_fold;
        known[k] = last_known;
    }
    walk_known = known_was;
    TW->memo = saved_memo;
    assert_true(n[ref] > 3);
    uint64_t frames_fold = vh_hash_fold(buf[ref], (uint32_t)n[ref]);
    for (int k = 0; k < ref; k++) {
        assert_int_equal(n[k], n[ref]);
        if (known[k]) {
            assert_true(fold[k] == frames_fold);   /* a cut walk's too */
            known_cut += (uint32_t)n[ref] == want;
        } else {
            assert_true(fold[k] == fold[ref]);
            assert_memory_equal(buf[k], buf[ref], (size_t)n[ref] * sizeof buf[0][0]);
        }
    }
    if ((uint32_t)n[ref] < want && n[ref] <= (int)MEMO) {
        assert_true(fold[ref] != 0);
        assert_true(fold[ref] == vh_hash_fold(buf[ref], (uint32_t)n[ref]));
        memo_folded++;
    } else if ((uint32_t)n[ref] == want && fold[ref]) {
        /* cut: the fold of the frames the record keeps (one fewer), or
         * 0 where the walk was not listed (stacks.c folds them) */
        assert_true(fold[ref] == vh_hash_fold(buf[ref], want - 1));
        memo_cut_folded++;
    }
    memo_walks++;
    return n[ref];
}

/* cfi_test_rbp_call(v, fn, arg): fn(arg) called with rbp = v, the caller's
 * rbp saved on the stack (as code built without frame pointers uses rbp: an
 * ordinary register, its value meaningless to any unwind rule). */
int cfi_test_rbp_call(uint64_t rbp, int (*fn)(int), int arg);
__asm__(".pushsection .text\n"
        ".globl cfi_test_rbp_call\n"
        ".type cfi_test_rbp_call, @function\n"
        "cfi_test_rbp_call:\n"
        ".cfi_startproc\n"
        "    pushq %rbp\n"
        ".cfi_adjust_cfa_offset 8\n"
        ".cfi_offset %rbp, -16\n"
        "    movq %rdi, %rbp\n"
        "    movl %edx, %edi\n"
        "    call *%rsi\n"
        "    popq %rbp\n"
        ".cfi_adjust_cfa_offset -8\n"
        ".cfi_restore %rbp\n"
        "    ret\n"
        ".cfi_endproc\n"
        ".size cfi_test_rbp_call, .-cfi_test_rbp_call\n"
        ".popsection\n");

static int recurse(int depth, unsigned pattern, uint32_t want);
static struct { int depth; unsigned pattern; uint32_t want; } rbp_next;
static __attribute__((noinline)) int rbp_thunk(int unused)
{
    (void)unused;
    return recurse(rbp_next.depth, rbp_next.pattern, rbp_next.want);
}

/* Four call sites, so that stacks of one depth differ in the middle: two
 * plain; one through a frame whose CFA is rbp-based (a VLA), so the rbp
 * the frames inside it carry matters; one with a different meaningless rbp
 * each time, which must not stop the memo's reuse nor change the walk. */
static __attribute__((noinline)) int recurse(int depth, unsigned pattern, uint32_t want)
{
    int r;
    static uint64_t junk = 0x5bd1e995;
    if (depth == 0) {
        r = check_walk(want);
    } else if (depth % 5 == 2 && (pattern & 1)) {
        volatile char vla[8 + (depth & 7) * 16];
        vla[0] = (char)depth;
        r = recurse(depth - 1, pattern, want) + vla[0];
    } else if (depth % 5 == 4 && (pattern & 2)) {
        rbp_next.depth = depth - 1;
        rbp_next.pattern = pattern;
        rbp_next.want = want;
        junk = junk * 6364136223846793005ull + 1442695040888963407ull;
        r = cfi_test_rbp_call(junk, rbp_thunk, 0) + 3;
    } else if (pattern >> (depth & 31) & 1) {
        r = recurse(depth - 1, pattern, want) + 1;
    } else {
        r = recurse(depth - 1, pattern, want) + 2;
    }
    __asm__ volatile("" ::: "memory");
    return r;
}

static void reuse_patterns(void)
{
    static const uint32_t wants[] = { MEMO_WANT, 65, 20 };
    assert_int_equal(vh_cfi_init(), 0);
    memo_walks = memo_folded = memo_cut_folded = 0;
    for (unsigned w = 0; w < sizeof wants / sizeof wants[0]; w++) {
        memo_clear();
        for (int d = 0; d < 90; d += 1 + d / 30)
            recurse(d, 0x5a5a5a5au ^ (unsigned)d, wants[w]);
        for (int d = 90; d >= 0; d -= 3)
            recurse(d, 0x0f0f0f0fu, wants[w]);
        for (int d = 0; d < 40; d++)
            recurse(d % 7 * 5, (unsigned)d * 0x9e3779b9u, wants[w]);
    }
    assert_true(memo_walks > 100);
    assert_true(memo_folded > 50);
    assert_true(memo_cut_folded > 10);
}

static void test_memo_reuse(void **state)
{
    (void)state;
#ifdef __SANITIZE_ADDRESS__
    skip();
#endif
    walk_known = NULL;
    reuse_patterns();
}

/* Walks that must reuse the memo: walk k is leaf_frames[k] (leaf_n[k]
 * frames), taken with every cached rule made unusable when the test says
 * so, which fails any walk that looks a rule up. */
#define LEAVES 8
static uint64_t leaf_frames[LEAVES][MEMO_WANT];
static int leaf_n[LEAVES], leaf_known[LEAVES];
static uint64_t leaf_fold[LEAVES];
static uint32_t leaf_want = MEMO_WANT;  /* the count memo_leaf's walks ask for */
static __attribute__((noinline)) int memo_leaf(int k)
{
    leaf_n[k] = walk_here(leaf_frames[k], leaf_want);
    leaf_known[k] = last_known;
    leaf_fold[k] = last_fold;
    __asm__ volatile("" ::: "memory");
    return 0;
}

/* Every rule cached (the thread's cache emptied, the shared table's
 * rules made unusable): a walk that looks anything up now fails. */
static void poison_rules(void)
{
    memset(TW->local, 0, sizeof TW->local);
    for (uint32_t i = 0; i < CACHE_SLOTS; i++)
        if (cache[i].key)
            cache[i].rule = pack(R_UNSUPPORTED, 0, 0, 0, 0, 0);
}

/* The memo tests' start: none under ASan (its stack redzones are not for
 * a walker), the rule cache, an empty memo. */
static void memo_test_start(void)
{
#ifdef __SANITIZE_ADDRESS__
    skip();
#endif
    assert_int_equal(vh_cfi_init(), 0);
    memo_clear();
}

/* Walk k's frames are walk `ref`'s, and there were some; the caches are
 * emptied for the tests after. */
static void expect_same_walk(int k, int ref)
{
    memset(TW->local, 0, sizeof TW->local);
    memset(cache, 0, CACHE_SLOTS * sizeof cache[0]);
    assert_true(leaf_n[ref] > 3);
    assert_int_equal(leaf_n[k], leaf_n[ref]);
    assert_memory_equal(leaf_frames[ref], leaf_frames[k], (size_t)leaf_n[ref] * 8);
}

/* A walk that meets the previous walk's frames with only a meaningless rbp
 * changed reuses all of them. */
static void test_memo_dead_rbp(void **state)
{
    (void)state;
    memo_test_start();
    for (volatile int k = 0; k < 2; k++) {
        if (k == 1)
            poison_rules();
        cfi_test_rbp_call(0x1111111111110000ull + (uint64_t)k * 0x40, memo_leaf, k);
    }
    expect_same_walk(1, 0);
}

/* A frame of its own (pad bytes of locals) on the way to callee; `extra`
 * makes two otherwise alike apart (not folded into one function). */
#define PADDED_CALLER(name, bytes, callee, extra)                              \
    static __attribute__((noinline)) int name(int k)                          \
    {                                                                          \
        volatile char pad[bytes];                                              \
        pad[0] = (char)k;                                                      \
        return callee(k) + pad[0] + (extra);                                   \
    }

/* A call path of a few frames to memo_leaf. */
PADDED_CALLER(path_x, 48, memo_leaf, 0)

/* Two callers whose frames are alike, so that walks through them start at
 * the same state and differ only in a return address further out. */
PADDED_CALLER(via_a, 32, path_x, 0)
PADDED_CALLER(via_b, 32, path_x, 1)
PADDED_CALLER(via_c, 32, path_x, 2)
PADDED_CALLER(via_d, 32, path_x, 3)
PADDED_CALLER(via_e, 32, path_x, 4)

/* cfi_test_fake_frame(fake, fn, arg): fn(arg) from a frame whose CFA is
 * rbp + 16, with rbp = fake, a two-word frame (caller's rbp, return
 * address) made up by the test; with fake NULL, rbp is the frame's own
 * (the walk goes on into the real caller). */
int cfi_test_fake_frame(const uint64_t *fake, int (*fn)(int), int arg);
__asm__(".pushsection .text\n"
        ".globl cfi_test_fake_frame\n"
        ".type cfi_test_fake_frame, @function\n"
        "cfi_test_fake_frame:\n"
        ".cfi_startproc\n"
        "    pushq %rbp\n"
        ".cfi_adjust_cfa_offset 8\n"
        ".cfi_offset %rbp, -16\n"
        "    movq %rsp, %rbp\n"
        "    testq %rdi, %rdi\n"
        "    cmovnzq %rdi, %rbp\n"
        ".cfi_def_cfa_register %rbp\n"
        "    movl %edx, %edi\n"
        "    call *%rsi\n"
        "    popq %rbp\n"
        ".cfi_def_cfa %rsp, 8\n"
        "    ret\n"
        ".cfi_endproc\n"
        ".size cfi_test_fake_frame, .-cfi_test_fake_frame\n"
        ".popsection\n");

/* Inside the fake frame: a frame that saves the rbp it got (the fake
 * frame's) on the stack and calls memo_leaf with a meaningless one. */
static __attribute__((noinline)) int fake_thunk(int k)
{
    return cfi_test_rbp_call(0x5151515151515150ull, memo_leaf, k) + 1;
}

/* A thread without its walk state (not mapped yet, or the mapping failed)
 * leaves its walks to libunwind: -1, nothing touched. */
static void test_walk_without_state(void **state)
{
    (void)state;
    memo_test_start();
    uint64_t buf[WANT];
    struct vh_walker *was = TW;
    TW = NULL;
    int n = walk_here(buf, WANT);
    TW = was;
    assert_int_equal(n, -1);
    assert_true(walk_here(buf, WANT) > 3);
}

/* ---- walks known by their start ------------------------------------------- */

/* The known tests' start: the memo tests' and no known walks yet. */
static void known_start(void)
{
    memo_test_start();
    walk_known = &TW->known;
    memset(walk_known, 0, sizeof *walk_known);
    known_hits = 0;
}

/* The same patterns as test_memo_reuse, with known walks: those that are
 * known must have the reference's count and fold. */
static void test_known_reuse(void **state)
{
    (void)state;
    known_start();
    known_cut = 0;
    reuse_patterns();
    walk_known = NULL;
    assert_true(known_hits > 100);
    assert_true(known_cut > 10);   /* deeper than 20 and 65 frames */
}

/* A walk taken again from the same start is known: with every cached rule
 * unusable and the memo's frames marked to be walked anew, which fails a
 * walk by rules or by the memo, it is still known, as the first walk. */
static void test_known_repeat(void **state)
{
    (void)state;
    known_start();
    for (volatile int k = 0; k < 3; k++) {
        if (k == 2) {
            poison_rules();
            for (uint32_t i = TW->memo.s; i < TW->memo.e; i++)
                TW->memo.f[i].nsp &= ~(uint64_t)7;   /* H_OPEN */
        }
        memo_leaf(k);
    }
    walk_known = NULL;
    memset(TW->local, 0, sizeof TW->local);   /* the rules, for the tests after */
    memset(cache, 0, CACHE_SLOTS * sizeof cache[0]);
    assert_false(leaf_known[0]);
    assert_true(leaf_known[1] && leaf_known[2]);
    assert_true(leaf_n[0] > 3 && leaf_n[2] == leaf_n[0] && leaf_fold[2] == leaf_fold[0]);
    assert_true(leaf_fold[0] == vh_hash_fold(leaf_frames[0], (uint32_t)leaf_n[0]));
}

/* The walk through b starts where a's did and differs only in a return
 * address further out: it is not a's known walk, and is walked as if
 * there were nothing known; then both are known, each as itself. */
static void test_known_changed(void **state)
{
    (void)state;
    known_start();
    for (volatile int k = 0; k < 6; k++) {
        if (k == 5) {
            walk_known = NULL;     /* b's walk from nothing: the reference */
            memo_clear();
            memset(TW->local, 0, sizeof TW->local);
        }
        if (k == 0 || k == 1 || k == 3)
            via_a(k);
        else
            via_b(k);
    }
    assert_false(leaf_known[0] || leaf_known[2]);
    assert_true(leaf_known[1] && leaf_known[3] && leaf_known[4]);
    assert_true(leaf_fold[3] == leaf_fold[0] && leaf_fold[4] == leaf_fold[2]);
    assert_true(leaf_fold[2] != leaf_fold[0]);
    expect_same_walk(2, 5);
}

/* A walk whose return addresses all match the known ones, but the rbp
 * saved on the way (the CFA of a frame further out) does not: a walk from
 * a made-up frame that ends the walk, known, then the same calls from the
 * real frame, whose walk goes on into the test's callers. */
static void test_known_rbp(void **state)
{
    (void)state;
    known_start();
    static const uint64_t fake[2] = { 0, 0 };   /* return address 0: the end */
    for (volatile int k = 0; k < 4; k++) {
        if (k == 3) {
            walk_known = NULL;     /* the real frame's walk from nothing */
            memo_clear();
            memset(TW->local, 0, sizeof TW->local);
        }
        cfi_test_fake_frame(k < 2 ? fake : NULL, fake_thunk, k);
    }
    assert_true(leaf_known[1] && !leaf_known[2]);
    expect_same_walk(2, 3);
    assert_true(leaf_n[2] > leaf_n[0] && leaf_n[0] > 3);
}

/* A start reached along five paths in turn keeps the four last found: each
 * of four is known on its second turn; a fifth takes the place of the one
 * found least recently. */
static void test_known_ways(void **state)
{
    (void)state;
    known_start();
    int (*const via[5])(int) = { via_a, via_b, via_c, via_d, via_e };
    /* a b c d, then b c d again (a: found least recently), e, a */
    static const int order[] = { 0, 1, 2, 3, 1, 2, 3, 4, 0 };
    enum { TURNS = sizeof order / sizeof order[0] };
    int known[TURNS];
    for (volatile int i = 0; i < TURNS; i++) {   /* one call site for all */
        via[order[i]](0);
        known[i] = leaf_known[0];
    }
    walk_known = NULL;
    for (int i = 0; i < TURNS; i++)
        assert_int_equal(known[i], i >= 4 && i <= 6);
}

/* A walk cut at the count it was asked for is known when asked for as
 * many again, and walked when asked for more (its frames further out were
 * never checked): 4, 4, 5, 5 frames, from one call site. */
static void test_known_cut(void **state)
{
    (void)state;
    known_start();
    for (volatile int k = 0; k < 4; k++) {
        leaf_want = k < 2 ? 4 : 5;
        memo_leaf(k);
    }
    leaf_want = MEMO_WANT;
    walk_known = NULL;
    assert_false(leaf_known[0] || leaf_known[2]);
    assert_true(leaf_known[1] && leaf_known[3]);
    assert_true(leaf_n[0] == 4 && leaf_n[1] == 4 && leaf_n[2] == 5 && leaf_n[3] == 5);
    assert_true(leaf_fold[1] == vh_hash_fold(leaf_frames[0], 4));
    assert_true(leaf_fold[3] == vh_hash_fold(leaf_frames[2], 5));
}

/* A walk cut at the count asked for, deep in a recursion, is known at
 * every depth once known at one with the same frames (its words relative
 * to its start), through frames whose CFA is rbp-based (the rbps it
 * compares are relative too). One walk a level, 40 levels of one descent
 * in a row, as a recursion's allocations come: by the start alone none
 * would be known (each level is a new start); each known walk has the
 * count and fold of the walk from nothing, taken after it with the known
 * walks and the memo put back. */
static struct vh_known saved_known;
static unsigned deep_walks;
static int deep_misled;            /* each set's hints name the wrong ways */

/* Every `rel` hint names the way after the one it learnt (so the way tried
 * first is one whose words do not hold): the hint orders the ways, it
 * never decides a walk. */
static void mislead_hints(struct vh_known *K)
{
    for (uint32_t s = 0; s < KNOWN_SETS; s++)
        for (unsigned w = 0; w < KNOWN_WAYS; w++)
            K->set[s].next[w] = (uint8_t)((K->set[s].next[w] % KNOWN_WAYS) + 1);
}

/* Inlined into descend(), so that each walk starts in the level's own frame,
 * which stays live further in (as the frame of a recursive function that
 * allocated does). */
static inline __attribute__((always_inline)) int deep_check(uint32_t want)
{
    uint64_t buf[2][MEMO_WANT];
    int n[2], known[2];
    uint64_t fold[2];
    if (deep_misled)
        mislead_hints(&TW->known);
    for (volatile int k = 0; k < 2; k++) {
        if (k == 1) {
            saved_memo = TW->memo;
            saved_known = TW->known;
            memo_clear();
            walk_known = NULL;
        }
        n[k] = walk_here(buf[k], want);
        fold[k] = last_fold;
        known[k] = last_known;
    }
    TW->memo = saved_memo;
    TW->known = saved_known;
    walk_known = &TW->known;
    assert_int_equal(n[0], n[1]);
    assert_int_equal(n[1], (int)want);
    uint64_t frames_fold = vh_hash_fold(buf[1], (uint32_t)n[1]);
    if (known[0])
        assert_true(fold[0] == frames_fold);
    else
        assert_memory_equal(buf[0], buf[1], (size_t)n[1] * sizeof buf[0][0]);
    deep_walks++;
    return n[1];
}

/* A descent: a walk at every level from 25 on, on the way down, as a
 * recursion's allocations come; every third level's frame has its CFA
 * rbp-based (a VLA). */
static __attribute__((noinline)) int descend(int level, int max)
{
    int r = level >= 25 ? deep_check(20) : 0;
    if (level == max) {
        r += 1;
    } else if (level % 3 == 0) {
        volatile char vla[8 + (max & 16)];   /* rbp-based CFA */
        vla[0] = (char)level;
        r += descend(level + 1, max) + vla[0];
    } else {
        r += descend(level + 1, max) + 2;
    }
    __asm__ volatile("" ::: "memory");
    return r;
}

static void test_known_deep(void **state)
{
    (void)state;
    known_start();
    deep_walks = 0;
    descend(0, 64);
    walk_known = NULL;
    assert_int_equal(deep_walks, 40);
    assert_true(known_hits > 40 - 10);
}

/* The same descent with every hint of which walk comes next wrong: the
 * same frames, and as many walks known. */
static void test_known_deep_misled(void **state)
{
    deep_misled = 1;
    test_known_deep(state);
    deep_misled = 0;
}

/* A known walk's word is handed over as 0 and taken back only while it is
 * of the caller's era; a walk whose checks the ring wrote over since, or
 * of another module generation, is walked again. */
static void test_known_tag(void **state)
{
    (void)state;
    known_start();
    uint64_t *slot[6];
    uint64_t word[6];
    for (volatile int k = 0; k < 6; k++) {
        if (k == 2)
            *slot[1] = (uint64_t)(TEST_ERA + 1) << 32 | 0x1234;   /* another era's */
        if (k == 4)
            for (int q = 0; q < 4; q++)   /* the ring written over */
                known_reserve(walk_known, QUARTER);
        if (k == 5)
            vh_module_gen++;
        memo_leaf(k);
        slot[k] = last_tag;
        word[k] = last_known ? *last_tag : 0;
    }
    vh_module_gen--;
    walk_known = NULL;
    assert_non_null(slot[0]);
    assert_false(leaf_known[0]);
    assert_true(leaf_known[1] && slot[1] == slot[0]);
    assert_true(word[1] == ((uint64_t)TEST_ERA << 32 | 0x1234));
    assert_false(leaf_known[2]);   /* walked, and known anew */
    assert_non_null(slot[2]);
    assert_true(leaf_known[3] && slot[3] == slot[2]);
    assert_false(leaf_known[4]);
    assert_false(leaf_known[5]);
    assert_int_equal(leaf_n[5], leaf_n[0]);
}

int main(void)
{
    static struct vh_tls owner;    /* maps a thread's walk state, as at its first event */
    vh_cfi_thread(&owner);
    TW = owner.walker;
    if (!TW)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tramp_bytes),
        cmocka_unit_test(test_sigframe_regs),
        cmocka_unit_test(test_stack_span),
        cmocka_unit_test(test_walk_thread_stack),
        cmocka_unit_test(test_walk_sigaltstack),
        cmocka_unit_test(test_walk_nested),
        cmocka_unit_test(test_walk_exact_pc),
        cmocka_unit_test(test_walk_rbx_frame),
        cmocka_unit_test(test_rbx_frame_needs_signal),
        cmocka_unit_test(test_memo_reuse),
        cmocka_unit_test(test_memo_dead_rbp),
        cmocka_unit_test(test_walk_without_state),
        cmocka_unit_test(test_known_reuse),
        cmocka_unit_test(test_known_repeat),
        cmocka_unit_test(test_known_changed),
        cmocka_unit_test(test_known_rbp),
        cmocka_unit_test(test_known_ways),
        cmocka_unit_test(test_known_cut),
        cmocka_unit_test(test_known_tag),
        cmocka_unit_test(test_known_deep),
        cmocka_unit_test(test_known_deep_misled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
