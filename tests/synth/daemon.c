/* daemon.c — writes the capture of a made-up daemon, as the shim would
 * have recorded it, for the tests of issue 17 (sampling, recording
 * windows, growth-rate leaks, ctl): a large cache filled in the first
 * minute and held (stack 1), churn that holds at most 64 blocks (stack 2),
 * a slow leak of 4 KiB every 10 s (stack 3), and a temporary 256-byte
 * block every tick (stack 4), over --hours of simulated time in 100 ms
 * ticks. --rate R samples as VHEAP_SAMPLE=R does (Poisson by bytes,
 * seeded: the same capture every run; frees only of recorded blocks).
 * --windows records only from 10 to 20 and 40 to 50 minutes (WINDOW
 * records; frees then of blocks allocated while paused are written, and
 * read as unknown frees). Prints the true totals per stack on stdout:
 * "stack N allocations A bytes B live L". Built by the tests that use it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/capture_builder.h"

#define TICK_NS 100000000ull
#define CHUNK (1u << 20)
#define NSTACKS 4

static struct capb B;
static uint32_t chunk;
static uint64_t rate;
/* two generators: sampling draws must not change what the program does */
static uint64_t prog_rng = 0x243f6a8885a308d3ull, sample_rng = 0x13198a2e03707344ull;
static uint64_t win[4];                /* on at win[0], off at win[1], ...   */
static int windowed;
static struct { uint64_t allocations, bytes, live; } truth[NSTACKS + 1];

static double uniform(uint64_t *rng)
{
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    return (double)(*rng >> 11) * 0x1p-53;
}

static int recording(uint64_t t)
{
    return !windowed || (t >= win[0] && t < win[1]) || (t >= win[2] && t < win[3]);
}

/* Room for one more record, else a new chunk (with its THREAD record). */
static void room(void)
{
    if (capb__chunk_header(&B, chunk)->used + 256 > CHUNK) {
        chunk = capb__chunk(&B);
        capb__thread(&B, chunk, B.cur[chunk - 1].time, 100);
    }
}

/* A block: the program always allocates it; the capture holds it when
 * recording and sampled. Returns whether it was recorded. */
static int alloc(uint64_t t, uint64_t addr, uint64_t size, uint32_t stack)
{
    truth[stack].allocations++;
    truth[stack].bytes += size;
    truth[stack].live += size;
    if (!recording(t) || (rate && uniform(&sample_rng) >= -expm1(-(double)size / (double)rate)))
        return 0;
    room();
    capb__alloc(&B, chunk, t, addr, size, size, stack);
    return 1;
}

/* Recorded: whether its allocation was. While recording, a full capture
 * records every free (of unknown blocks too); a sampled one only those of
 * recorded blocks, as the shim's address set knows them. */
static void release(uint64_t t, uint64_t addr, uint64_t size, uint32_t stack, int recorded)
{
    truth[stack].live -= size;
    if (!recording(t) || (rate && !recorded))
        return;
    room();
    capb__free(&B, chunk, t, addr);
}

int main(int argc, char **argv)
{
    double hours = 1;
    const char *out = NULL;
    uint32_t pid = 0;
    int end = 1;
    struct { uint64_t addr, size; int rec; } ring[64] = { { 0 } };
    uint64_t nring = 0, ncache = 0, nleak = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rate") && i + 1 < argc)
            rate = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--hours") && i + 1 < argc)
            hours = atof(argv[++i]);
        else if (!strcmp(argv[i], "--pid") && i + 1 < argc)
            pid = (uint32_t)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--windows"))
            windowed = 1;
        else if (!strcmp(argv[i], "--no-end"))
            end = 0;
        else if (argv[i][0] != '-' && !out)
            out = argv[i];
        else {
            fprintf(stderr, "usage: daemon OUT.vhcap [--rate R] [--hours H] [--windows] "
                            "[--pid PID] [--no-end]\n");
            return 2;
        }
    }
    if (!out)
        return 2;
    uint64_t ticks = (uint64_t)(hours * 36000);
    for (int k = 0; k < 4; k++)        /* 10, 20, 40, 50 minutes of an hour */
        win[k] = (uint64_t)((double)(ticks * TICK_NS) * (k < 2 ? (k + 1) : (k + 2)) / 6.0);

    capb__init(&B, CHUNK);
    capb__header(&B)->sample_rate = rate;
    capb__header(&B)->recording = 1;
    if (pid)
        capb__header(&B)->pid = pid;
    chunk = capb__chunk(&B);
    capb__thread(&B, chunk, 0, 100);
    for (uint32_t s = 1; s <= NSTACKS; s++) {
        uint64_t frames[3] = { 0x401000 + s * 0x100, 0x402000 + s * 0x10, 0x403000 };
        capb__stack(&B, chunk, 0, s, frames, 3, 0);
    }
    for (uint64_t k = 0; k < ticks; k++) {
        uint64_t t = k * TICK_NS;
        if (windowed) {
            for (int w = 0; w < 4; w++)
                if (t == win[w] || (t > win[w] && t - TICK_NS < win[w]))
                    capb__time_rec(&B, chunk, VH_REC_WINDOW, win[w], w % 2 == 0, 0);
            room();
        }
        /* the cache: 2000 blocks of 64 KiB in the first minute, held */
        while (ncache < 2000 && ncache * 600 <= k * 2000 + 1999) {
            alloc(t, 0x100000000000ull + ncache * 0x10000, 65536, 1);
            ncache++;
        }
        /* churn: 1..32 KiB, the 64 latest live */
        uint64_t size = 1024 + (uint64_t)(uniform(&prog_rng) * 31744);
        if (nring >= 64) {
            unsigned j = nring % 64;
            release(t, ring[j].addr, ring[j].size, 2, ring[j].rec);
        }
        uint64_t addr = 0x200000000000ull + nring * 0x10000;
        ring[nring % 64].addr = addr;
        ring[nring % 64].size = size;
        ring[nring % 64].rec = alloc(t + 1000, addr, size, 2);
        nring++;
        /* the slow leak: 4 KiB every 10 s */
        if (k % 100 == 50)
            alloc(t + 2000, 0x300000000000ull + nleak++ * 0x1000, 4096, 3);
        /* a temporary block */
        int r = alloc(t + 3000, 0x400000000000ull, 256, 4);
        release(t + 4000, 0x400000000000ull, 256, 4, r);
    }
    if (end)
        capb__end(&B, chunk, ticks * TICK_NS);
    capb__header(&B)->last_time = ticks * TICK_NS;
    if (capb__write(&B, out)) {
        perror(out);
        return 1;
    }
    for (int s = 1; s <= NSTACKS; s++)
        printf("stack %d allocations %llu bytes %llu live %llu\n", s,
               (unsigned long long)truth[s].allocations, (unsigned long long)truth[s].bytes,
               (unsigned long long)truth[s].live);
    capb__destroy(&B);
    return 0;
}
