/* deep_recurse.c — the shape of Vere's nock interpreter, small: descents
 * 100 to 299 levels deep through three mutually recursive functions (the
 * one a level takes follows from its depth and the descent's pattern), an
 * allocation at every level, freed on the way back up. Built with frame
 * pointers (the pragma) so that VHEAP_UNWIND=fp walks every stack from
 * nothing: the default walker's stacks, cut at VHEAP_DEPTH and mostly
 * known from other depths (preload/cfi.c's relative walks), must be the
 * same frames (tests/integration/deep_recurse.sh). */
#pragma GCC optimize("no-omit-frame-pointer")
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline, noclone))

static unsigned long allocs;
static volatile unsigned long sink;          /* no tail calls: frames stay */

static void *eval(unsigned pattern, int depth);

NOINLINE static void *op_a(unsigned pattern, int depth)
{
    void *p = eval(pattern, depth - 1);
    sink++;
    return p;
}

NOINLINE static void *op_b(unsigned pattern, int depth)
{
    void *p = eval(pattern, depth - 1);
    sink += 2;
    return p;
}

NOINLINE static void *op_c(unsigned pattern, int depth)
{
    void *p = eval(pattern, depth - 1);
    sink += 3;
    return p;
}

NOINLINE static void *eval(unsigned pattern, int depth)
{
    char *cell = malloc(16 + (unsigned)(depth & 3) * 16);
    allocs++;
    cell[0] = (char)depth;
    void *r = NULL;
    if (depth > 0) {
        switch ((pattern >> (depth % 3 * 2)) % 3) {
        case 0: r = op_a(pattern, depth); break;
        case 1: r = op_b(pattern, depth); break;
        default: r = op_c(pattern, depth); break;
        }
    }
    free(r);
    return cell;
}

int main(void)
{
    for (unsigned d = 0; d < 40; d++)
        free(eval(d % 8 * 11, 100 + (int)(d * 7919 % 200)));
    printf("deep_recurse allocs=%lu\n", allocs);
    return 0;
}
