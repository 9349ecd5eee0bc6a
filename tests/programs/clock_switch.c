/* clock_switch.c — one thread allocates alone for a while, then a second
 * thread frees each of those blocks and allocates its own (glibc's
 * per-thread cache hands it the address it just freed), while the first
 * thread goes on allocating and freeing. The capture's clock is the coarse
 * one while the first thread is alone and the exact one from the second
 * thread's first event on; the merged order must still put every block's
 * allocation before its free, and every free before the address's reuse.
 * Prints both threads' tids and how many blocks it handed over. */
#include "testprog.h"

#include <time.h>

#define N 2000
#define CHURN 20000

static void *blocks[N];
static pthread_barrier_t go;

static void *second(void *arg)
{
    (void)arg;
    tp_say("second tid=%d", (int)gettid());
    pthread_barrier_wait(&go);
    for (int i = 0; i < N; i++) {
        free(blocks[i]);
        blocks[i] = malloc(48);
        TP_CHECK(blocks[i]);
    }
    return NULL;
}

int main(void)
{
    tp_say("first tid=%d", (int)gettid());
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(48);
        TP_CHECK(blocks[i]);
    }
    /* A few of the kernel's ticks pass with the first thread alone. */
    struct timespec nap = { 0, 20 * 1000 * 1000 };
    nanosleep(&nap, NULL);
    pthread_t th;
    pthread_barrier_init(&go, NULL, 2);
    TP_CHECK(pthread_create(&th, NULL, second, NULL) == 0);
    pthread_barrier_wait(&go);
    for (int k = 0; k < CHURN; k++) {
        void *p = malloc(32);
        TP_CHECK(p);
        free(p);
    }
    pthread_join(th, NULL);
    for (int i = 0; i < N; i++)
        free(blocks[i]);
    tp_say("handed=%d", N);
    return 0;
}
