/* sigframe.h — the x86-64 Linux signal frame as both stack walkers cross it:
 * recognising the return trampoline a handler returns into, reading the
 * interrupted registers from the ucontext_t the kernel saved above it, and
 * knowing which stack (the thread's, or its signal stack) a walk is on.
 * Header-only and free of shim state, so a unit test can check it. */
#ifndef VHEAP_PRELOAD_SIGFRAME_H
#define VHEAP_PRELOAD_SIGFRAME_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

/* A handler returns into the restorer glibc registered with the kernel
 * (__restore_rt): `mov $0xf,%rax; syscall` (rt_sigreturn). The same bytes
 * are what libgcc's and libunwind's unwinders look for. */
#define VH_SIGTRAMP_LEN 9u

/* True if the VH_SIGTRAMP_LEN bytes at p (the caller knows they are
 * readable) are the rt_sigreturn trampoline. */
static inline int vh_sigtramp_is(const void *p)
{
    uint64_t head;
    uint8_t tail;
    memcpy(&head, p, 8);
    memcpy(&tail, (const uint8_t *)p + 8, 1);
    /* 48 c7 c0 0f 00 00 00 0f | 05, little-endian */
    return head == 0x0f0000000fc0c748ull && tail == 0x05;
}

/* When the handler has returned into the trampoline, the stack pointer
 * points at the ucontext_t (the kernel's rt_sigframe minus its return
 * address). Only its first bytes are read: up to gregs[REG_RIP]. */
#define VH_UC_OFF(reg) (offsetof(ucontext_t, uc_mcontext.gregs) + 8u * (reg))
#define VH_UC_SPAN (VH_UC_OFF(REG_RIP) + 8u)

/* The registers a walk carries from frame to frame. */
struct vh_sigregs {
    uint64_t ip;                   /* exact PC of the interrupted code      */
    uint64_t sp;
    uint64_t bp;
    uint64_t bx;                   /* for frames whose CFA is rbx-based      */
};

/* Reads the interrupted rip, rsp, rbp, rbx from the ucontext at `uc`, which must
 * lie wholly, 8-aligned, inside the readable range [lo, hi). Returns 0, or
 * -1 (nothing read) when it does not, or when the saved values cannot be a
 * frame (rip or rsp zero, rsp unaligned). */
static inline int vh_sigframe_regs(uint64_t uc, uint64_t lo, uint64_t hi, struct vh_sigregs *r)
{
    if (uc < lo || uc > hi || hi - uc < VH_UC_SPAN || (uc & 7))
        return -1;
    const uint64_t *g = (const uint64_t *)(uintptr_t)uc;
    r->ip = g[VH_UC_OFF(REG_RIP) / 8];
    r->sp = g[VH_UC_OFF(REG_RSP) / 8];
    r->bp = g[VH_UC_OFF(REG_RBP) / 8];
    r->bx = g[VH_UC_OFF(REG_RBX) / 8];
    return r->ip && r->sp && !(r->sp & 7) ? 0 : -1;
}

/* The stack that holds `sp`, as the range [*lo, *hi) every read of a walk
 * must stay in: the thread's own [tlo, thi), else its signal stack when sp
 * is on it. Returns 0, or -1 when neither (a coroutine's stack, say).
 * The signal stack is asked of the kernel every time (one system call, on
 * this rare path only), never cached: between two signals the program may
 * move it and unmap the old one, and a stale range could make a walk read
 * unmapped memory. While a handler runs on it, it cannot change (the
 * kernel refuses with EPERM). An SS_AUTODISARM stack reports SS_DISABLE
 * inside its handler: then it is not known. */
static __attribute__((noinline, cold, unused)) int vh_altstack_span(uint64_t sp, uint64_t *lo,
                                                                    uint64_t *hi)
{
    stack_t ss;
    if (sigaltstack(NULL, &ss) != 0 || (ss.ss_flags & SS_DISABLE))
        return -1;
    uint64_t a = (uintptr_t)ss.ss_sp, b = a + ss.ss_size;
    if (b <= a || sp < a || sp >= b)
        return -1;
    *lo = a;
    *hi = b;
    return 0;
}

static inline int vh_stack_span(uint64_t tlo, uint64_t thi, uint64_t sp, uint64_t *lo,
                                uint64_t *hi)
{
    if (__builtin_expect(sp >= tlo && sp < thi, 1)) {
        *lo = tlo;
        *hi = thi;
        return 0;
    }
    return vh_altstack_span(sp, lo, hi);
}

#endif
