/* deep_stack.c — allocations at a known call depth, built with frame
 * pointers (the pragma below; the GNUmakefile builds programs with -O1,
 * which omits them) so VHEAP_UNWIND=fp can walk it. One block is allocated
 * DEPTH calls down a recursion of USER functions: its stack must show all of
 * them under either unwinder, and be cut (truncated) under VHEAP_DEPTH=4. */
#pragma GCC optimize("no-omit-frame-pointer")
#include "testprog.h"

#include <malloc.h>

#define DEPTH 20
#define DEEP_SIZE 4321
#define SHALLOW_SIZE 1234

static volatile int sink;

USER static void *rec(int depth)
{
    void *p;
    if (depth == 0) {
        p = malloc(DEEP_SIZE);
        tp_alloc("malloc", p, DEEP_SIZE, malloc_usable_size(p), NULL);
    } else {
        p = rec(depth - 1);
    }
    sink++;                                /* no tail call: keep every frame */
    return p;
}

USER static void run(void)
{
    void *s = malloc(SHALLOW_SIZE);
    tp_alloc("malloc", s, SHALLOW_SIZE, malloc_usable_size(s), NULL);
    void *d = rec(DEPTH);
    sink++;
    tp_free("free", d, NULL);
    free(d);
    tp_free("free", s, NULL);
    free(s);
}

int main(void)
{
    tp_range();
    run();
    /* rec() DEPTH+1 times, then run(): the USER frames above malloc. */
    tp_note("deep size=%d user_frames=%d", DEEP_SIZE, DEPTH + 2);
    tp_expect();
    tp_flush();
    return 0;
}
