/* stress_fill.c — `stress_fill THREADS ROUNDS`: makes a known number of
 * allocator calls and nothing else, for the disk-full test. THREADS workers
 * (1: the main thread itself, so that no thread start or exit adds calls of
 * libc's own) each make ROUNDS malloc/free pairs of known sizes, checking
 * their blocks; then the program prints, with write(2) only (stdio would
 * allocate):
 *   result threads=N rounds=N checksum=N     the same every run
 *   expect calls=N allocs=N frees=N bytes=N  its own account
 * A capture that runs out of space must still account for every call: the
 * ones it holds plus the ones it counts as dropped. */
#include "testprog.h"

#define MAX_THREADS 16

static unsigned long rounds;
static unsigned long sums[MAX_THREADS], byte_sums[MAX_THREADS];

static pthread_barrier_t start;    /* threads > 1: every thread exists first */

USER static void *worker(void *arg)
{
    unsigned me = arg ? (unsigned)(uintptr_t)arg - 1 : 0;
    /* libc allocates for a new thread inside pthread_create (its TLS
     * vector): those calls come before the workers fill the disk. */
    if (arg)
        pthread_barrier_wait(&start);
    void *held[8] = { 0 };
    size_t sizes[8] = { 0 };
    unsigned long sum = 0, bytes = 0;
    for (unsigned long i = 0; i < rounds; i++) {
        unsigned k = (unsigned)(i % 8);
        if (held[k]) {
            unsigned char *p = held[k];
            TP_CHECK(p[0] == (unsigned char)sizes[k] && p[sizes[k] - 1] == (unsigned char)k);
            sum += p[0];
            free(p);
        }
        size_t size = 16 + (i * 131 + me * 7) % 3000;
        unsigned char *p = malloc(size);
        TP_CHECK(p);
        p[0] = (unsigned char)size;
        p[size - 1] = (unsigned char)k;
        held[k] = p;
        sizes[k] = size;
        bytes += size;
    }
    for (unsigned k = 0; k < 8; k++)
        free(held[k]);
    sums[me] = sum;
    byte_sums[me] = bytes;
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned threads = argc > 1 ? (unsigned)atoi(argv[1]) : 1;
    rounds = argc > 2 ? strtoul(argv[2], NULL, 10) : 100000;
    if (argc != 3 || threads < 1 || threads > MAX_THREADS || rounds < 8) {
        fprintf(stderr, "usage: stress_fill THREADS (1..%d) ROUNDS (>= 8)\n", MAX_THREADS);
        return 2;
    }
    tp_say("user lo=%p hi=%p\n", (void *)__start_tp_user, (void *)__stop_tp_user);
    if (threads == 1) {
        worker(NULL);
    } else {
        TP_CHECK(pthread_barrier_init(&start, NULL, threads) == 0);
        tp_run_threads(threads, worker, 1);
    }
    unsigned long sum = 0, bytes = 0;
    for (unsigned i = 0; i < threads; i++) {
        sum += sums[i];
        bytes += byte_sums[i];
    }
    unsigned long allocs = threads * rounds;
    tp_say("result threads=%u rounds=%lu checksum=%lu\n", threads, rounds, sum);
    tp_say("expect calls=%lu allocs=%lu frees=%lu bytes=%lu\n", 2 * allocs, allocs, allocs, bytes);
    return 0;
}
