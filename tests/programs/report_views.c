/* report_views.c — allocations whose time, stack and size the program
 * knows, for the report's time window, bottom-up, callers/callees and size
 * histogram (tests/integration/report_views.sh). Three phases, each opened
 * by a mark and 300 ms apart, so a window between two marks holds one phase:
 *   A: alloc_a keeps NA blocks of 24 bytes;
 *   B: alloc_b allocates NB blocks of 1000 bytes (keeps the first KB, frees
 *      the rest) and calls b_small, which keeps NBS blocks of 100 bytes;
 *   C: alloc_c frees A's blocks and keeps NC blocks of 5000 bytes.
 * Prints what it did at the end, when nothing more is allocated. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "preload/vheap.h"

#define NA 200
#define NB 100
#define KB 60
#define NBS 50
#define NC 30
#define GAP_NS 300000000ull

static void *a[NA], *b[NB], *bs[NBS], *c[NC];

static void pause_gap(void)
{
    struct timespec ts = { 0, (long)GAP_NS };
    while (nanosleep(&ts, &ts))
        ;
}

static void *touch(void *p, size_t n)
{
    if (p)
        memset(p, 1, n);
    return p;
}

__attribute__((noinline)) static void alloc_a(void)
{
    for (int i = 0; i < NA; i++)
        a[i] = touch(malloc(24), 24);
}

__attribute__((noinline)) static void b_small(void)
{
    for (int i = 0; i < NBS; i++)
        bs[i] = touch(malloc(100), 100);
}

__attribute__((noinline)) static void alloc_b(void)
{
    for (int i = 0; i < NB; i++)
        b[i] = touch(malloc(1000), 1000);
    for (int i = KB; i < NB; i++) {
        free(b[i]);
        b[i] = NULL;
    }
    b_small();
}

__attribute__((noinline)) static void alloc_c(void)
{
    for (int i = 0; i < NA; i++)
        free(a[i]);
    for (int i = 0; i < NC; i++)
        c[i] = touch(malloc(5000), 5000);
}

int main(void)
{
    vheap_mark("A");
    alloc_a();
    pause_gap();
    vheap_mark("B");
    alloc_b();
    pause_gap();
    vheap_mark("C");
    alloc_c();
    pause_gap();
    printf("report_views: a %d x 24, b %d x 1000 (%d kept), b_small %d x 100, c %d x 5000\n", NA,
           NB, KB, NBS, NC);
    return 0;
}
