/* signal_stack.c — `signal_stack thread|alt [ROUNDS]`: the stack recorded
 * for an allocation a signal handler makes. The main thread and a worker
 * thread each spin in victim(), called from outer(), until a helper thread
 * sends them SIGUSR1; the handler (on the thread's stack, or on a
 * sigaltstack with `alt`) notes the kernel's signal trampoline (the
 * restorer sigaction reports; bare, the handler returns straight into it,
 * under the shim through the shim's own trampoline first, whose frame the
 * recorded stack leaves out) and the interrupted PC (from its ucontext),
 * and mallocs a block of a size
 * unique to that round through handler_alloc(). ROUNDS (default 20) per
 * target thread. Built with frame pointers, so VHEAP_UNWIND=fp applies.
 * stdout: "range handler|victim|outer LO HI" (each a code section) and one
 * "hit size=N tramp=0x.. pc=0x.." line per round; the test expects the
 * block's stack to hold a handler frame, tramp, pc, a frame in outer. */
#pragma GCC optimize("no-omit-frame-pointer")
#include "testprog.h"
#include "tp_signal.h"

#include <sys/mman.h>
#include <ucontext.h>

#define HANDLER __attribute__((section("ss_handler"), noinline, noclone))
#define VICTIM __attribute__((section("ss_victim"), noinline, noclone))
#define OUTER __attribute__((section("ss_outer"), noinline, noclone))
extern char __start_ss_handler[], __stop_ss_handler[];
extern char __start_ss_victim[], __stop_ss_victim[];
extern char __start_ss_outer[], __stop_ss_outer[];

#define MAX_ROUNDS 200
#define TARGETS 2
#define ALT_SIZE (256 << 10)

struct hit {
    size_t size;
    uintptr_t tramp, pc;
    void *block;
};

static struct hit hits[TARGETS][MAX_ROUNDS];
static unsigned rounds;
static int use_alt;
static pthread_t target_thread[TARGETS];
static volatile unsigned spinning[TARGETS];   /* round + 1 while in victim */
static volatile int released[TARGETS];
static volatile unsigned long spins;
static __thread int my_target = -1;
static __thread unsigned my_round;

HANDLER static void *handler_alloc(size_t size)
{
    void *p = malloc(size);
    __asm__ volatile("" ::: "memory");      /* no tail call: keep this frame */
    return p;
}

static uintptr_t restorer;

HANDLER static void on_usr1(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)si;
    int me = my_target;
    if (me < 0)
        return;
    struct hit *h = &hits[me][my_round];
    h->tramp = restorer;
    h->pc = (uintptr_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
    h->size = 3000 + (size_t)me * 1000 + my_round;
    h->block = handler_alloc(h->size);
    if (!h->block)
        _exit(4);
    released[me] = 1;
}

static __attribute__((noinline)) void announce(int me)
{
    spinning[me] = my_round + 1;
}

/* Spins until the handler ran; the signal lands in this loop. Not a leaf
 * (announce): gcc omits a leaf function's frame pointer even when told to
 * keep them, and the fp walk would then skip outer(). */
VICTIM static void victim(int me)
{
    announce(me);
    while (!released[me])
        spins++;
    spinning[me] = 0;
}

OUTER static void outer(int me)
{
    victim(me);
    __asm__ volatile("" ::: "memory");
}

static void run_target(int me)
{
    my_target = me;
    void *alt = NULL;
    if (use_alt) {
        alt = mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        TP_CHECK(alt != MAP_FAILED);
        stack_t ss = { .ss_sp = alt, .ss_size = ALT_SIZE, .ss_flags = 0 };
        TP_CHECK(sigaltstack(&ss, NULL) == 0);
    }
    for (my_round = 0; my_round < rounds; my_round++) {
        released[me] = 0;
        outer(me);
        TP_CHECK(hits[me][my_round].block);
    }
    for (unsigned r = 0; r < rounds; r++)
        free(hits[me][r].block);
    if (use_alt) {
        stack_t off = { .ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE };
        TP_CHECK(sigaltstack(&off, NULL) == 0);
        munmap(alt, ALT_SIZE);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    run_target(1);
    return NULL;
}

/* Sends each target its signals, one per round, once it spins. */
static void *sender(void *arg)
{
    (void)arg;
    for (int me = 0; me < TARGETS; me++)
        for (unsigned r = 0; r < rounds; r++) {
            while (spinning[me] != r + 1)
                sched_yield();
            TP_CHECK(pthread_kill(target_thread[me], SIGUSR1) == 0);
        }
    return NULL;
}

int main(int argc, char **argv)
{
    use_alt = argc > 1 && strcmp(argv[1], "alt") == 0;
    rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 20;
    if (argc < 2 || (!use_alt && strcmp(argv[1], "thread") != 0) || rounds < 1 ||
        rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: signal_stack thread|alt [ROUNDS (1..%d)]\n", MAX_ROUNDS);
        return 2;
    }
    tp_handle_info(SIGUSR1, on_usr1, SA_RESTART | (use_alt ? SA_ONSTACK : 0));
    struct sigaction cur;
    TP_CHECK(sigaction(SIGUSR1, NULL, &cur) == 0);
    restorer = (uintptr_t)cur.sa_restorer;
    target_thread[0] = pthread_self();
    pthread_t w, s;
    /* The worker goes second: it waits for the main thread's rounds. */
    TP_CHECK(pthread_create(&w, NULL, worker, NULL) == 0);
    target_thread[1] = w;
    TP_CHECK(pthread_create(&s, NULL, sender, NULL) == 0);
    run_target(0);
    TP_CHECK(pthread_join(w, NULL) == 0);
    TP_CHECK(pthread_join(s, NULL) == 0);
    printf("range handler %p %p\n", (void *)__start_ss_handler, (void *)__stop_ss_handler);
    printf("range victim %p %p\n", (void *)__start_ss_victim, (void *)__stop_ss_victim);
    printf("range outer %p %p\n", (void *)__start_ss_outer, (void *)__stop_ss_outer);
    for (int me = 0; me < TARGETS; me++)
        for (unsigned r = 0; r < rounds; r++) {
            struct hit *h = &hits[me][r];
            TP_CHECK(h->pc >= (uintptr_t)__start_ss_victim && h->pc < (uintptr_t)__stop_ss_victim);
            printf("hit size=%zu tramp=%#lx pc=%#lx\n", h->size, (unsigned long)h->tramp,
                   (unsigned long)h->pc);
        }
    return 0;
}
