/* stack_fill.c — `stack_fill THREADS ROUNDS`: like stress_fill, a known
 * number of allocator calls, but nearly every one from a call stack never
 * seen before, and the same new stack in every thread at about the same
 * time: the threads race to insert each stack into the shim's table, up to
 * and past the moment the capture's disk fills. Round i allocates through
 * a chain of 14 calls chosen by the bits of i, then frees. Output (write(2)
 * only):
 *   result threads=N rounds=N
 *   expect calls=N allocs=N frees=N */
#include "testprog.h"

#define MAX_THREADS 16

static unsigned long rounds;
static pthread_barrier_t start;
static volatile unsigned long sink;

USER static void *walk(unsigned long path, int depth);
USER static void *left(unsigned long path, int depth)
{
    void *p = walk(path >> 1, depth - 1);
    sink++;                        /* not a tail call: keep the frame */
    return p;
}
USER static void *right(unsigned long path, int depth)
{
    void *p = walk(path >> 1, depth - 1);
    sink++;
    return p;
}
USER static void *walk(unsigned long path, int depth)
{
    if (depth == 0)
        return malloc(24 + path % 64);
    void *p = (path & 1) ? right(path, depth) : left(path, depth);
    sink++;
    return p;
}

USER static void *worker(void *arg)
{
    pthread_barrier_wait(&start);
    for (unsigned long i = 0; i < rounds; i++) {
        void *p = walk(i, 14);
        TP_CHECK(p);
        free(p);
    }
    return arg;
}

int main(int argc, char **argv)
{
    unsigned threads = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
    rounds = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
    if (argc != 3 || threads < 1 || threads > MAX_THREADS || rounds < 1) {
        fprintf(stderr, "usage: stack_fill THREADS (1..%d) ROUNDS\n", MAX_THREADS);
        return 2;
    }
    tp_say("user lo=%p hi=%p\n", (void *)__start_tp_user, (void *)__stop_tp_user);
    TP_CHECK(pthread_barrier_init(&start, NULL, threads) == 0);
    tp_run_threads(threads, worker, 0);
    unsigned long allocs = threads * rounds;
    tp_say("result threads=%u rounds=%lu\n", threads, rounds);
    tp_say("expect calls=%lu allocs=%lu frees=%lu\n", 2 * allocs, allocs, allocs);
    return 0;
}
