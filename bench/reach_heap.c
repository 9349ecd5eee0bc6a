/* reach_heap — a heap for the reachability scan's cost (bench/reach_cost.sh):
 * `reach_heap MIB SIZE` allocates MIB MiB in blocks of SIZE bytes, each
 * pointing to the one before it, and keeps every other chain's head in a
 * global array: half the blocks reachable through long chains, half lost
 * in chains that start nowhere, so the scan follows pointers as well as it
 * reads roots. It then exits, and the shim's scan at exit runs. */
#include <stdio.h>
#include <stdlib.h>

enum { CHAIN = 64 };               /* blocks a chain */

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: reach_heap MIB SIZE\n");
        return 2;
    }
    size_t size = strtoul(argv[2], NULL, 0);
    size_t n = (strtoul(argv[1], NULL, 0) << 20) / (size ? size : 1);
    if (size < sizeof(void *) || !n) {
        fprintf(stderr, "reach_heap: SIZE must hold a pointer, MIB hold a block\n");
        return 2;
    }
    void **heads = calloc(n / CHAIN + 1, sizeof *heads);
    void *prev = NULL;
    if (!heads)
        return 1;
    for (size_t i = 0; i < n; i++) {
        void **b = malloc(size);
        if (!b)
            return 1;
        b[0] = prev;
        prev = b;
        if (i % CHAIN == CHAIN - 1) {
            if ((i / CHAIN) % 2 == 0)
                heads[i / CHAIN] = prev;
            prev = NULL;
        }
    }
    printf("%zu blocks of %zu bytes\n", n, size);
    return 0;
}
