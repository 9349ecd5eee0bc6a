/* rss_steady — a sampled program whose RSS stays put, then jumps: phase 1
 * allocates and frees 256 KiB blocks it never touches, one a millisecond,
 * for at least 300 ms and 300 rounds; then it touches 8 MiB; phase 2 goes
 * on as phase 1 for at least 100 ms and 100 rounds. It prints its own RSS
 * before and after the 8 MiB ("rss_before=N rss_after=N", bytes from
 * /proc/self/statm) and the rounds of each phase.
 * tests/integration/rss_sampled.sh checks the RSS records a sampled capture
 * of it holds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned long long rss(void)
{
    unsigned long long size = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%llu %llu", &size, &res) != 2)
        exit(2);
    fclose(f);
    return res * (unsigned long long)sysconf(_SC_PAGESIZE);
}

/* Rounds of one untouched 256 KiB block, for at least `ms` and `rounds`. */
static unsigned steady(uint64_t ms, unsigned rounds)
{
    const struct timespec ms1 = { 0, 1000000 };
    uint64_t until = now_ns() + ms * 1000000u;
    unsigned n = 0;
    while (n < rounds || now_ns() < until) {
        void *volatile p = malloc(256 << 10);
        free(p);
        nanosleep(&ms1, NULL);
        n++;
    }
    return n;
}

int main(void)
{
    unsigned n1 = steady(300, 300);
    unsigned long long before = rss();
    volatile char *big = malloc(8 << 20);
    if (!big)
        return 2;
    for (size_t i = 0; i < (8 << 20); i += 4096)
        big[i] = 1;                /* each page, as stores the compiler keeps */
    unsigned long long after = rss();
    unsigned n2 = steady(100, 100);
    printf("rss_before=%llu rss_after=%llu rounds=%u,%u\n", before, after, n1, n2);
    free((void *)big);
    return 0;
}
