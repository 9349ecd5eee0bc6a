/* signal_alloc.c — a SIGALRM handler (setitimer, every 100 us) allocates
 * while the main loop allocates and frees. The handler only mallocs and
 * hands the block to the main loop through a ring; the main loop frees it.
 *
 * Why this does not deadlock glibc itself (malloc is not async-signal-safe):
 * after a warm-up the main loop's malloc(32)/free pairs are served by glibc's
 * per-thread cache without taking the arena lock, and the handler's 48-byte
 * blocks come back through the same cache, so the handler never waits for a
 * lock the interrupted code holds. What remains is the shim's part: a handler
 * arriving while the shim is busy with bookkeeping must be passed through and
 * counted as nested (header loss nested=), never crash or hang. */
#include "testprog.h"
#include "tp_signal.h"

#include <stdatomic.h>
#include <sys/time.h>
#include <time.h>

#define RING 64
#define MAIN_SIZE 32
#define HANDLER_SIZE 48

static void *volatile ring[RING];
static _Atomic unsigned ring_w, ring_r;
static _Atomic unsigned long handled, skipped;

USER static void on_alarm(int sig)
{
    (void)sig;
    unsigned w = atomic_load(&ring_w);
    if (w - atomic_load(&ring_r) >= RING) {
        skipped++;
        return;
    }
    void *p = malloc(HANDLER_SIZE);
    if (!p)
        return;
    ring[w % RING] = p;
    atomic_store(&ring_w, w + 1);
    handled++;
}

static unsigned long main_allocs, main_frees, handler_frees;

USER static void loop(unsigned long want)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned long i = 0;; i++) {
        void *p = malloc(MAIN_SIZE);
        TP_CHECK(p);
        main_allocs++;
        ((volatile char *)p)[0] = 1;
        free(p);
        main_frees++;
        while (atomic_load(&ring_r) != atomic_load(&ring_w)) {
            unsigned r = atomic_load(&ring_r);
            free(ring[r % RING]);
            atomic_store(&ring_r, r + 1);
            handler_frees++;
        }
        if ((i & 1023) == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            /* Bounded both ways: enough signals, or a capture of sane size. */
            if (handled >= want || i >= 200000 || t.tv_sec - t0.tv_sec > 8)
                break;
        }
    }
}

int main(void)
{
    tp_range();
    /* Warm up the per-thread caches of both sizes before any signal: the
     * thread's first malloc sets its cache up under the arena's lock, and a
     * handler's malloc landing there waits for that lock for ever (glibc
     * alone, no shim needed). volatile: a malloc/free pair whose block is
     * never used is removed by the compiler, and the first malloc then
     * happened with the timer running. */
    for (int i = 0; i < 4; i++) {
        void *volatile a = malloc(MAIN_SIZE), *volatile b = malloc(HANDLER_SIZE);
        free(a);
        free(b);
    }
    tp_handle(SIGALRM, on_alarm, SA_RESTART);
    struct itimerval it = { { 0, 100 }, { 0, 100 } };
    TP_CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);

    loop(3000);

    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    signal(SIGALRM, SIG_IGN);
    while (ring_r != ring_w) {             /* what arrived after the loop */
        free(ring[ring_r % RING]);
        ring_r++;
        handler_frees++;
    }
    TP_CHECK(handler_frees == handled);
    tp_note("expect main_allocs=%lu handler_allocs=%lu frees=%lu skipped=%lu", main_allocs,
            (unsigned long)handled, main_frees + handler_frees, (unsigned long)skipped);
    tp_flush();
    return 0;
}
