/* sig_window.c — `sig_window THREADS PERIOD_US`: signals that arrive while
 * the shim is inside its own short calls into libc. Starts THREADS threads,
 * one after the other; each arms a timer that sends it SIGUSR1 every
 * PERIOD_US microseconds and only then makes its first allocation, which is
 * where the shim asks pthread_getattr_np for the thread's stack (allocating
 * inside libc, as the shim's own calls). The handler reports one block of
 * 64 bytes on a custom heap (preload/vheap.h: no malloc in the handler, so
 * it cannot deadlock inside glibc). Every handler event must be in the
 * capture or counted as nested in its loss line, none silently passed.
 * stdout: the USER range, "handled N" (handler events) and "heap H". */
#include "testprog.h"
#include "tp_signal.h"

#include "preload/vheap.h"

static int heap;
static long period_ns;
static unsigned long handled;      /* atomic */

USER static void on_usr1(int sig)
{
    (void)sig;
    unsigned long k = __atomic_fetch_add(&handled, 1, __ATOMIC_RELAXED);
    /* A made-up block: the shim never touches custom-heap memory. */
    vheap_alloc(heap, (const void *)(uintptr_t)(0x100000000000ull + 64 * k), 64, 64);
}

USER static void *worker(void *arg)
{
    timer_t tm = tp_thread_timer(SIGUSR1, period_ns);
    /* The first allocation of this thread: the shim's window. */
    void *p = malloc(40);
    TP_CHECK(p);
    free(p);
    for (int i = 0; i < 50; i++) {
        p = malloc(40 + (size_t)i);
        TP_CHECK(p);
        free(p);
    }
    /* No handler after this: block first, then stop the timer. */
    tp_thread_timer_stop(tm, SIGUSR1);
    return arg;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: sig_window THREADS PERIOD_US\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    period_ns = atol(argv[2]) * 1000;
    TP_CHECK(threads > 0 && period_ns > 0 && period_ns < 1000000000);
    heap = vheap_heap_create("signals", 0, NULL, 0);   /* the lookup, here */
    tp_handle(SIGUSR1, on_usr1, SA_RESTART);
    for (int i = 0; i < threads; i++) {
        pthread_t th;
        TP_CHECK(pthread_create(&th, NULL, worker, NULL) == 0);
        TP_CHECK(pthread_join(th, NULL) == 0);
    }
    tp_range();
    tp_note("handled %lu", __atomic_load_n(&handled, __ATOMIC_RELAXED));
    tp_note("heap %d", heap);
    tp_flush();
    return 0;
}
