/* reuse_forms.c — the allocation patterns capture format 4 writes short:
 * a block freed and asked for again at once (glibc's tcache hands the same
 * block back: ALLOC_FREED), blocks freed in the order they were allocated,
 * up to 39 allocations back (FREE_FAR when 8 to 63 back), malloc and
 * calloc taking turns (ALLOC_ALT, ALLOC_FREED_ALT). Every call is logged
 * (testprog.h), so the capture is checked record by record; it also
 * prints what it knows of the patterns:
 *   forms reuse=N far=M   N: mallocs that returned the block freed just
 *                         before; M: frees of a block 8 to 63 allocations
 *                         back
 *   reuse_forms [ROUNDS]   (default 200) */
#include "testprog.h"

#include <malloc.h>

#define BATCH 40

static unsigned long reuse, far;

static USER void *take(size_t size, int zeroed)
{
    void *p = zeroed ? calloc(1, size) : malloc(size);
    TP_CHECK(p);
    tp_alloc(zeroed ? "calloc" : "malloc", p, size, malloc_usable_size(p), NULL);
    return p;
}

static USER void give(void *p)
{
    free(p);
    tp_free("free", p, NULL);
}

static USER void round_trip(void)
{
    void *p = take(48, 0);
    give(p);
    void *q = take(48, 0);
    reuse += q == p;
    give(q);
}

/* BATCH blocks, then freed oldest first: block i is BATCH - 1 - i
 * allocations back. */
static USER void batch(unsigned r)
{
    void *b[BATCH];
    for (unsigned i = 0; i < BATCH; i++)
        b[i] = take(24 + 16 * ((i + r) % 5), i % 2);
    for (unsigned i = 0; i < BATCH; i++) {
        far += BATCH - 1 - i >= 8;
        give(b[i]);
    }
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 200;
    tp_range();
    for (unsigned r = 0; r < rounds; r++) {
        round_trip();
        batch(r);
    }
    tp_expect();
    tp_flush();
    printf("forms reuse=%lu far=%lu\n", reuse, far);
    return 0;
}
