/* growd.c — a daemon's shape, for sampling, recording on demand and
 * growth-rate leaks: a large cache filled once and held (cache_fill),
 * churn from three stacks (churn_small, churn_mid, churn_big: blocks
 * freed soon after; churn_tiny too), and a slow leak from one stack (leak_slowly: a few
 * blocks per round, never freed). `growd ROUNDS [MS [hold]]`: ROUNDS rounds
 * (0: until killed), MS milliseconds of sleep after each (default 0);
 * "hold": after the rounds, print "held" and wait to be killed (a killed
 * run of a known length, however slowly a loaded machine ran it).
 * Prints "pid=N" first, then at the end the bytes each stack allocated:
 * "stack NAME bytes=B calls=C". Sizes come from a fixed generator, so the
 * same ROUNDS give the same allocations. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testprog.h"

#define RING 512

static uint64_t rnd = 88172645463325252ull;   /* tp_rand's state */

struct tally {
    const char *name;
    uint64_t bytes, calls;
};
static struct tally t_cache = { "cache_fill" }, t_tiny = { "churn_tiny" },
                    t_small = { "churn_small" },
                    t_mid = { "churn_mid" }, t_big = { "churn_big" }, t_leak = { "leak_slowly" };
static void *ring[RING];
static unsigned pos;

static void keep(void *p)
{
    free(ring[pos]);
    ring[pos] = p;
    pos = (pos + 1) % RING;
}

static __attribute__((noinline)) void *take(struct tally *t, size_t n)
{
    void *p = malloc(n);
    if (!p)
        exit(3);
    memset(p, 1, n < 64 ? n : 64);
    t->bytes += n;
    t->calls++;
    return p;
}

static __attribute__((noinline)) void cache_fill(void **cache, int n)
{
    for (int i = 0; i < n; i++)
        cache[i] = take(&t_cache, 64 << 10);
}

static __attribute__((noinline)) void churn_tiny(void)
{
    keep(take(&t_tiny, 16 + tp_rand(&rnd) % 48));
}

static __attribute__((noinline)) void churn_small(void)
{
    keep(take(&t_small, 16 + tp_rand(&rnd) % 240));
}

static __attribute__((noinline)) void churn_mid(void)
{
    keep(take(&t_mid, 256 + tp_rand(&rnd) % 3840));
}

static __attribute__((noinline)) void churn_big(void)
{
    keep(take(&t_big, 4096 + tp_rand(&rnd) % 28672));
}

static __attribute__((noinline)) void *leak_slowly(void)
{
    return take(&t_leak, 1000 + tp_rand(&rnd) % 1000);
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 0;
    long ms = argc > 2 ? atol(argv[2]) : 0;
    static void *cache[320];
    printf("pid=%d\n", (int)getpid());
    fflush(stdout);
    cache_fill(cache, 320);        /* 20 MiB held for good */
    for (long r = 0; !rounds || r < rounds; r++) {
        for (int i = 0; i < 200; i++) {
            churn_tiny();
            churn_tiny();
            churn_small();
            churn_mid();
            if (i % 4 == 0)
                churn_big();
        }
        if (r % 4 == 0)
            (void)leak_slowly();   /* never freed */
        if (ms) {
            struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
            nanosleep(&ts, NULL);
        }
    }
    const struct tally *all[] = { &t_cache, &t_tiny, &t_small, &t_mid, &t_big, &t_leak };
    for (int i = 0; i < 6; i++)
        printf("stack %s bytes=%llu calls=%llu\n", all[i]->name,
               (unsigned long long)all[i]->bytes, (unsigned long long)all[i]->calls);
    if (argc > 3 && !strcmp(argv[3], "hold")) {
        printf("held\n");
        fflush(stdout);
        for (;;)
            pause();
    }
    return 0;
}
