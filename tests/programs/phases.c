/* phases.c — heap memory in three known phases, for the time series test
 * (tests/integration/series_phases.sh): grow to PLATEAU bytes over ~300 ms,
 * hold them ~300 ms, free them over ~300 ms, with temporary allocations all
 * along. Two functions hold the memory (load_table 2/3, build_index 1/3) so
 * the split by stack has known answers. Each phase starts with a mark
 * (vheap.h), and one more mark has a label that needs escaping. Prints when each phase began, by CLOCK_REALTIME and
 * CLOCK_MONOTONIC, so a test can place the phases on the capture's time
 * axis without trusting vheap's own clock for it. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "preload/vheap.h"

#define STEPS 120
#define TABLE_BYTES (256 * 1024)
#define INDEX_BYTES (128 * 1024)
#define PHASE_NS 300000000ull

static void *table[STEPS], *index_[STEPS];
void *volatile phases_sink;

static uint64_t now(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleeps until `t` ns of CLOCK_MONOTONIC: deadlines, not delays, so a late
 * wake-up on a busy machine does not stretch the phase. */
static void sleep_until(uint64_t t)
{
    struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
        ;
}

__attribute__((noinline)) static void *load_table(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 1, n);                   /* resident, so RSS follows */
    return p;
}

__attribute__((noinline)) static void *build_index(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 2, n);
    return p;
}

/* A temporary allocation: freed before anything else is allocated. */
__attribute__((noinline)) static void scratch(void)
{
    char *p = malloc(100);
    if (p) {
        p[0] = 1;
        phases_sink = p;
    }
    free(p);
}

struct stamp {
    const char *name;
    uint64_t real, mono;
};

static void phase(struct stamp *s, const char *name)
{
    vheap_mark(name);
    s->name = name;
    s->mono = now(CLOCK_MONOTONIC);
    s->real = now(CLOCK_REALTIME);
}

int main(void)
{
    struct stamp st[4];
    uint64_t t0;

    phase(&st[0], "grow");
    t0 = st[0].mono;
    for (int i = 0; i < STEPS; i++) {
        table[i] = load_table(TABLE_BYTES);
        index_[i] = build_index(INDEX_BYTES);
        scratch();
        sleep_until(t0 + PHASE_NS * (uint64_t)(i + 1) / STEPS);
    }

    phase(&st[1], "plateau");
    t0 = st[1].mono;
    for (int i = 0; i < STEPS; i++) {
        scratch();
        sleep_until(t0 + PHASE_NS * (uint64_t)(i + 1) / STEPS);
    }

    /* a label that needs escaping everywhere: XML, JSON, CSV, bad UTF-8 */
    vheap_mark("odd <label> & \"quotes\", \xff");
    phase(&st[2], "free");
    t0 = st[2].mono;
    for (int i = 0; i < STEPS; i++) {
        free(table[i]);
        free(index_[i]);
        scratch();
        sleep_until(t0 + PHASE_NS * (uint64_t)(i + 1) / STEPS);
    }
    phase(&st[3], "done");

    for (int i = 0; i < 4; i++)
        printf("phase %s real=%llu mono=%llu\n", st[i].name, (unsigned long long)st[i].real,
               (unsigned long long)st[i].mono);
    printf("expect plateau_bytes=%d load_table=%d build_index=%d steps=%d\n",
           STEPS * (TABLE_BYTES + INDEX_BYTES), STEPS * TABLE_BYTES, STEPS * INDEX_BYTES, STEPS);
    return 0;
}
