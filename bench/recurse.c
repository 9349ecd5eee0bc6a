/* recurse.c — `recurse deep|flat EVENTS`: the shape of Vere's nock
 * interpreter for bench/run.sh, beside a flat program making as many calls.
 * deep: descents hundreds of frames down through three mutually recursive
 * "opcodes", allocating at every level and freeing on the way back up, the
 * same few frames repeating (the opcode of a level follows from its depth
 * and the descent's pattern), so a stack cut at VHEAP_DEPTH is one of few
 * and its cut moves with the recursion. flat: the same allocations and
 * frees from a loop a few calls below main. Prints the calls it made. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noclone))

static unsigned long allocs, frees;
static volatile unsigned long sink;          /* keeps frames from tail calls */

static void *eval(unsigned pattern, int depth);

/* Three call sites into eval, as an interpreter's cases are. */
NOINLINE static void *op_cons(unsigned pattern, int depth)
{
    void *p = eval(pattern, depth - 1);
    sink++;
    return p;
}

NOINLINE static void *op_call(unsigned pattern, int depth)
{
    void *p = eval(pattern, depth - 1);
    sink += 2;
    return p;
}

NOINLINE static void *op_hint(unsigned pattern, int depth)
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
        case 0: r = op_cons(pattern, depth); break;
        case 1: r = op_call(pattern, depth); break;
        default: r = op_hint(pattern, depth); break;
        }
    }
    free(r);
    frees += r != NULL;
    return cell;
}

NOINLINE static void deep(unsigned long events)
{
    for (unsigned long d = 0; allocs * 2 < events; d++) {
        /* 200 to 599 levels, one of 8 patterns */
        int depth = 200 + (int)(d * 7919 % 400);
        free(eval((unsigned)(d % 8) * 11, depth));
        frees++;
    }
}

NOINLINE static void *leaf(unsigned long i)
{
    char *p = malloc(16 + (i & 3) * 16);
    allocs++;
    p[0] = (char)i;
    return p;
}

NOINLINE static void flat(unsigned long events)
{
    void *prev = NULL;
    for (unsigned long i = 0; allocs * 2 < events; i++) {
        void *p = leaf(i);
        free(prev);
        frees += prev != NULL;
        prev = p;
    }
    free(prev);
    frees++;
}

int main(int argc, char **argv)
{
    unsigned long events = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
    if (argc != 3 || !events || (strcmp(argv[1], "deep") && strcmp(argv[1], "flat"))) {
        fprintf(stderr, "usage: recurse deep|flat EVENTS\n");
        return 2;
    }
    if (argv[1][0] == 'd')
        deep(events);
    else
        flat(events);
    printf("recurse: %s allocs=%lu frees=%lu\n", argv[1], allocs, frees);
    return 0;
}
