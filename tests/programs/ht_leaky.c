/* ht_leaky.c — leaks a known set of blocks (every fourth of 200, sizes
 * 1000..1199) and frees the rest right away; compared with heaptrack by
 * tests/integration/vs_heaptrack.sh. Its last line states what the stacks
 * through each of its functions did ("ht fn=NAME key=value..."). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stores keep malloc/free pairs from being optimized away. */
void *volatile ht_sink;

__attribute__((noinline, noclone)) static void *make_block(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 0x5a, n);
    return p;
}

int main(void)
{
    long allocs = 0, leaked_blocks = 0, leaked_bytes = 0, temporary = 0;
    for (int i = 0; i < 200; i++) {
        size_t n = 1000 + (size_t)i;
        void *p = make_block(n);
        allocs++;
        if (i % 4 == 0) {
            ht_sink = p;            /* lost: a leak */
            leaked_blocks++;
            leaked_bytes += (long)n;
        } else {
            free(p);                /* freed right after: temporary */
            temporary++;
        }
    }
    printf("ht fn=make_block allocations=%ld temporary=%ld leaked_blocks=%ld leaked_bytes=%ld\n",
           allocs, temporary, leaked_blocks, leaked_bytes);
    return 0;
}
