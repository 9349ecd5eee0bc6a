/* churn.c — the thread-churn workload of `make bench` (issue 28), in the
 * shape of mimalloc-bench's mleak: THREADS short-lived threads (default
 * 5000), BATCH of them alive at once (default 4), each making a few small
 * allocations of mixed sizes, freeing all but one, which the main thread
 * frees after joining it. Most of a thread's cost is then its creation and
 * exit, so a profiler's per-thread setup shows. It prints the calls it made.
 *
 * usage: churn [THREADS [BATCH [PER_THREAD]]]   (defaults 5000, 4, 20) */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned per_thread = 20;

static void *work(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
    void *keep = NULL;
    for (unsigned i = 0; i < per_thread; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t size = 16 + (size_t)(x % 497);
        char *p = malloc(size);
        if (!p)
            abort();
        memset(p, (int)i, size);
        if (i == per_thread / 2)
            keep = p;
        else
            free(p);
    }
    return keep;
}

int main(int argc, char **argv)
{
    unsigned long threads = argc > 1 ? strtoul(argv[1], NULL, 10) : 5000;
    unsigned batch = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 4;
    if (argc > 3)
        per_thread = (unsigned)strtoul(argv[3], NULL, 10);
    if (batch < 1 || batch > 64 || per_thread < 1) {
        fprintf(stderr, "usage: churn [THREADS [BATCH(1-64) [PER_THREAD(>=1)]]]\n");
        return 2;
    }
    pthread_t t[64];
    unsigned long done = 0;
    while (done < threads) {
        unsigned n = threads - done < batch ? (unsigned)(threads - done) : batch;
        for (unsigned i = 0; i < n; i++)
            if (pthread_create(&t[i], NULL, work, (void *)(uintptr_t)(done + i + 1)) != 0) {
                fprintf(stderr, "churn: pthread_create failed\n");
                return 1;
            }
        for (unsigned i = 0; i < n; i++) {
            void *keep;
            pthread_join(t[i], &keep);
            free(keep);
        }
        done += n;
    }
    printf("churn: threads=%lu allocs=%lu frees=%lu\n", threads, threads * per_thread,
           threads * per_thread);
    return 0;
}
