/* stress_signal.c — `stress_signal [SIGNALS [PERIOD_US]]`: three worker
 * threads loop over malloc/free, each with a timer that sends it SIGUSR1
 * every PERIOD_US (default 250) microseconds, until each has handled SIGNALS
 * signals (default 200) or made 400000 calls. The handler allocates, checks and frees blocks itself (malloc, calloc,
 * realloc). The workers raise a flag around each allocator call, so the
 * handler counts how often it interrupted a thread inside malloc or free —
 * inside the profiler's hook, when one is loaded.
 *
 * Why glibc itself does not deadlock (malloc is not async-signal-safe): the
 * workers' malloc(32)/free pairs are served by glibc's per-thread cache,
 * which takes no lock, and the handler uses other size classes (whose
 * cache entries the interrupted call does not touch) or calloc/realloc,
 * which lock an arena the interrupted call does not hold.
 * stdout: a "result" line and "expect" lines with counts for the test. */
#include "testprog.h"
#include "tp_signal.h"

#include <errno.h>

#define WORKERS 3
#define MAIN_SIZE 32

static volatile int inside[WORKERS];       /* worker is in malloc/free */
static __thread int my_index = -1;
/* volatile: the handler changes them behind the loop's back (and the
 * compiler knows malloc and free do not). */
static volatile unsigned long handled[WORKERS];
static unsigned long handled_inside, handler_calls;
static unsigned long worker_allocs[WORKERS];
static unsigned long want, max_iterations;
static long period_ns;

static void bump(unsigned long *c)
{
    __atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

USER static void on_usr1(int sig)
{
    (void)sig;
    int saved = errno;
    int me = my_index;
    if (me < 0)
        return;
    handled[me]++;
    if (inside[me])
        bump(&handled_inside);
    unsigned char *a = malloc(200);
    if (!a)
        _exit(5);
    a[0] = 1;
    a[199] = 2;
    unsigned char *b = calloc(13, 16);
    if (!b || b[0] || b[207])
        _exit(6);
    unsigned char *c = realloc(b, 600);
    if (!c)
        _exit(7);
    if (a[0] != 1 || a[199] != 2)
        _exit(8);
    free(a);
    free(c);
    /* malloc, calloc, realloc, free, free */
    __atomic_fetch_add(&handler_calls, 5, __ATOMIC_RELAXED);
    errno = saved;
}

USER static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    /* Warm the per-thread cache of every size class this thread will use
     * (199 and 599: the handler's classes, told apart from its calls). */
    void *volatile w[3] = { malloc(MAIN_SIZE), malloc(199), malloc(599) };
    for (int i = 0; i < 3; i++) {
        TP_CHECK(w[i]);
        free(w[i]);
    }
    worker_allocs[me] += 3;
    my_index = me;
    /* A timer of our own that signals this very thread. A handler that
     * takes longer than the period never lets the thread go on. */
    timer_t timer = tp_thread_timer(SIGUSR1, period_ns);
    for (unsigned long i = 0; handled[me] < want && i < max_iterations; i++) {
        inside[me] = 1;
        void *p = malloc(MAIN_SIZE);
        inside[me] = 0;
        if (!p)
            _exit(9);
        ((volatile char *)p)[0] = 1;
        worker_allocs[me]++;
        inside[me] = 1;
        free(p);
        inside[me] = 0;
        /* Some work of the program's own between the calls: fewer calls
         * (a smaller capture) for the same number of signals. */
        for (volatile int k = 0; k < 2000; k++)
            ;
    }
    tp_thread_timer_stop(timer, SIGUSR1);
    return NULL;
}

int main(int argc, char **argv)
{
    want = argc > 1 ? strtoul(argv[1], NULL, 10) : 200;
    period_ns = 1000 * (argc > 2 ? atol(argv[2]) : 250);
    max_iterations = 400000;
    if (period_ns < 1000 || period_ns > 999999000) {
        fprintf(stderr, "usage: stress_signal [SIGNALS [PERIOD_US (1..999999)]]\n");
        return 2;
    }
    tp_range();
    tp_flush();
    tp_handle(SIGUSR1, on_usr1, SA_RESTART);
    tp_run_threads(WORKERS, worker, 0);
    unsigned long wa = 0, h = 0;
    for (int i = 0; i < WORKERS; i++) {
        wa += worker_allocs[i];
        h += handled[i];
    }
    printf("result workers=%d ok\n", WORKERS);
    printf("expect handled=%lu handled_inside=%lu handler_calls=%lu worker_allocs=%lu\n", h,
           handled_inside, handler_calls, wa);
    return 0;
}
