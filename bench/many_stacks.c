/* many_stacks.c — `many_stacks BITS`: 2^BITS allocations, each from a call
 * stack never seen before (a chain of BITS calls, left or right by the bits
 * of its number), half of them kept to the end: a run with as many distinct
 * stacks as a big program, for timing `vheap-analyze report` (bench/run.sh). */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline, noclone))

static void *kept[1 << 21];
static volatile unsigned long lefts, rights;   /* keeps left and right apart */
static void *walk(unsigned long path, int depth);

NOINLINE static void *left(unsigned long path, int depth)
{
    void *p = walk(path >> 1, depth - 1);
    lefts++;                             /* no tail call: the frame stays */
    return p;
}

NOINLINE static void *right(unsigned long path, int depth)
{
    void *p = walk(path >> 1, depth - 1);
    rights += 2;
    return p;
}

NOINLINE static void *walk(unsigned long path, int depth)
{
    if (!depth)
        return malloc(16 + (path & 63));
    return path & 1 ? right(path, depth) : left(path, depth);
}

int main(int argc, char **argv)
{
    int bits = argc > 1 ? atoi(argv[1]) : 19;
    if (bits < 1 || bits > 21)
        return 2;
    unsigned long n = 1ul << bits;
    for (unsigned long i = 0; i < n; i++) {
        void *p = walk(i, bits);
        if (i & 1)
            free(p);
        else
            kept[i] = p;
    }
    printf("many_stacks: %lu allocations, %lu stacks, %lu kept\n", n, n, n / 2);
    return 0;
}
