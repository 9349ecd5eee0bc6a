/* ht_temporary.c — temporary allocations by a known count: 1000 blocks freed
 * right after their malloc, and 300 pairs whose frees interleave (a, b,
 * free a, free b: neither is freed right after its own allocation, so
 * neither is temporary). Compared with heaptrack by
 * tests/integration/vs_heaptrack.sh; the "ht fn=..." lines state what the
 * stacks through each function did. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stores keep malloc/free pairs from being optimized away. */
void *volatile ht_sink;

__attribute__((noinline, noclone)) static void scratch(size_t n)
{
    char *p = malloc(n);
    if (!p)
        return;
    memset(p, 1, n);
    ht_sink = p;
    free(p);
}

__attribute__((noinline, noclone)) static void pair(size_t n)
{
    char *a = malloc(n), *b = malloc(n + 16);
    ht_sink = a;
    ht_sink = b;
    free(a);
    free(b);
}

int main(void)
{
    int scratch_calls = 0, pairs = 0;
    for (int i = 0; i < 1000; i++, scratch_calls++)
        scratch(64 + (size_t)(i % 7));
    for (int i = 0; i < 300; i++, pairs++)
        pair(200);
    printf("ht fn=scratch allocations=%d temporary=%d leaked_bytes=0\n", scratch_calls,
           scratch_calls);
    printf("ht fn=pair allocations=%d temporary=0 leaked_bytes=0\n", 2 * pairs);
    return 0;
}
