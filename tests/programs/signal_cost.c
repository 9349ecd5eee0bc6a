/* signal_cost.c — `signal_cost [SIGNALS [THREADS [alt]]]`: what a malloc+free
 * pair costs inside a signal handler compared with outside one. Each of
 * THREADS threads (default 1) goes 8 calls deep and spins there through a
 * few functions while a timer of its own sends it SIGUSR1 every 200 us,
 * until SIGNALS (default 2000) were handled; the handler (on the thread's
 * stack, or on a sigaltstack with `alt`) times PAIRS_PER malloc+free pairs.
 * Then the thread times as many pairs at the same depth outside any handler.
 * A measurement for bench reports, not a test: prints "signal_cost: ...
 * handler=N ns/pair outside=N ns/pair". */
#include "testprog.h"
#include "tp_signal.h"

#define MAX_THREADS 16
#define PAIRS_PER 4

static unsigned long want;
static int use_alt;
static __thread volatile unsigned long handled;
static __thread double handler_ns;
static double sum_handler, sum_outside;
static pthread_mutex_t sum_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long sink;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static __attribute__((noinline)) double pairs(void)
{
    double t0 = now_ns();
    for (unsigned long i = 0; i < PAIRS_PER; i++) {
        void *volatile p = malloc(64 + i * 16);
        if (!p)
            _exit(3);
        free(p);
    }
    return now_ns() - t0;
}

static void on_usr1(int sig)
{
    (void)sig;
    handler_ns += pairs();
    handled++;
}

/* Where the signals land: a few different functions, so the interrupted
 * PC (the first frame beyond the signal frame) varies as in a program. */
static __attribute__((noinline)) unsigned long spin_a(unsigned long x)
{
    for (int i = 0; i < 50; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

static __attribute__((noinline)) unsigned long spin_b(unsigned long x)
{
    for (int i = 0; i < 50; i++)
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
}

static __attribute__((noinline)) unsigned long spin_c(unsigned long x)
{
    return spin_a(x) + spin_b(x ^ 0x9e3779b97f4a7c15ull);
}

static __attribute__((noinline)) double deep(int level, int in_handler)
{
    double r = 0;
    if (level > 0)
        r = deep(level - 1, in_handler);
    else if (in_handler) {
        unsigned long x = 1;
        while (handled < want)
            x = spin_c(spin_b(spin_a(x)));
        sink = x;
    } else {
        for (unsigned long i = 0; i < want; i++)
            r += pairs();
    }
    __asm__ volatile("" ::: "memory");      /* no tail call: keep the frame */
    return r;
}

static void *worker(void *arg)
{
    (void)arg;
    char *alt = NULL;
    if (use_alt) {
        alt = malloc(1 << 16);
        TP_CHECK(alt);
        stack_t ss = { .ss_sp = alt, .ss_size = 1 << 16, .ss_flags = 0 };
        TP_CHECK(sigaltstack(&ss, NULL) == 0);
    }
    timer_t timer = tp_thread_timer(SIGUSR1, 200000);
    deep(8, 1);
    tp_thread_timer_stop(timer, SIGUSR1);
    double o = deep(8, 0);
    if (use_alt) {
        stack_t off = { .ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE };
        TP_CHECK(sigaltstack(&off, NULL) == 0);
        free(alt);
    }
    pthread_mutex_lock(&sum_lock);
    sum_handler += handler_ns / (double)handled;
    sum_outside += o / (double)want;
    pthread_mutex_unlock(&sum_lock);
    return NULL;
}

int main(int argc, char **argv)
{
    want = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    use_alt = argc > 3 && strcmp(argv[3], "alt") == 0;
    if (want < 1 || threads < 1 || threads > MAX_THREADS || (argc > 3 && !use_alt)) {
        fprintf(stderr, "usage: signal_cost [SIGNALS [THREADS (1..16) [alt]]]\n");
        return 2;
    }
    tp_handle(SIGUSR1, on_usr1, SA_RESTART | (use_alt ? SA_ONSTACK : 0));
    pthread_t th[MAX_THREADS];
    for (int i = 0; i < threads; i++)
        TP_CHECK(pthread_create(&th[i], NULL, worker, NULL) == 0);
    for (int i = 0; i < threads; i++)
        TP_CHECK(pthread_join(th[i], NULL) == 0);
    printf("signal_cost: threads=%d signals=%lu stack=%s handler=%.0f ns/pair "
           "outside=%.0f ns/pair\n", threads, want, use_alt ? "alt" : "thread",
           sum_handler / threads / PAIRS_PER, sum_outside / threads / PAIRS_PER);
    return 0;
}
