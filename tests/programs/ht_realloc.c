/* ht_realloc.c — realloc and calloc: a buffer grown by doubling from 16
 * bytes to 1 MiB and shrunk (each realloc is one call, moved or not, and
 * frees the previous block right after its allocation: a temporary, as in
 * heaptrack), then freed; calloc'd arrays, every tenth leaked. Compared with
 * heaptrack by tests/integration/vs_heaptrack.sh; the "ht fn=..." lines
 * state what the stacks through each function did. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *volatile ht_sink;

static int grow_calls;

__attribute__((noinline, noclone)) static void grow(void)
{
    char *p = malloc(16);
    size_t n = 16;
    grow_calls = 1;
    while (n < (1u << 20)) {
        n *= 2;
        char *q = realloc(p, n);
        if (!q)
            break;
        grow_calls++;
        p = q;
        p[n - 1] = 1;
    }
    char *q = realloc(p, 100);
    if (q) {
        grow_calls++;
        p = q;
    }
    ht_sink = p;
    free(p);
}

__attribute__((noinline, noclone)) static long arrays(void)
{
    long leaked = 0;
    for (int i = 0; i < 50; i++) {
        int *a = calloc(100 + (size_t)i, sizeof *a);
        ht_sink = a;
        if (i % 10)
            free(a);
        else
            leaked += (100 + i) * (long)sizeof *a;
    }
    return leaked;
}

int main(void)
{
    grow();
    long leaked = arrays();
    /* grow: every call but the first frees its predecessor right after its
     * allocation, and the final free follows the last realloc. */
    printf("ht fn=grow allocations=%d temporary=%d leaked_bytes=0\n", grow_calls, grow_calls);
    printf("ht fn=arrays allocations=50 temporary=45 leaked_bytes=%ld\n", leaked);
    return 0;
}
