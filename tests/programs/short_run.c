/* short_run — a run far shorter than the coarse clock's 4 ms tick, whose
 * own span it measures: 300 allocations in three phases 0.3 ms apart,
 * then "span_ns=N allocs=300" (CLOCK_MONOTONIC from before the first
 * allocation to after the last). tests/integration/short_run.sh checks
 * that vheap's runtime, rates and timeline are at least that long. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void spin(uint64_t ns)
{
    uint64_t until = now_ns() + ns;
    while (now_ns() < until)
        ;
}

void *volatile sink[300];

int main(void)
{
    uint64_t t0 = now_ns();
    for (int phase = 0; phase < 3; phase++) {
        for (int i = 0; i < 100; i++)
            sink[phase * 100 + i] = malloc(64 + (size_t)i);
        if (phase < 2)
            spin(300000);
    }
    uint64_t t1 = now_ns();
    for (int i = 0; i < 300; i++)
        free(sink[i]);
    printf("span_ns=%llu allocs=300\n", (unsigned long long)(t1 - t0));
    return 0;
}
