/* halfleak.c — known totals for the sampled-mode tests (sample_outputs.sh):
 * allocates N small blocks and a few large ones, all live at once (the
 * peak), then frees every second small block and all but K large ones,
 * which stay live at exit (the leak). Prints what it did, one line, written
 * without stdio so that nothing but these blocks is allocated:
 *   halfleak calls=C bytes=B peak=P leaked_blocks=L leaked_bytes=LB
 *
 * usage: halfleak [N]   (default 200000) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SMALL 48u
#define LARGE (64u << 10)
#define NLARGE 50u
#define KEEP_LARGE 10u

static void *small_blocks(size_t n)
{
    void **p = malloc(n * sizeof *p);
    if (!p)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!(p[i] = malloc(SMALL)))
            return NULL;
    return p;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 200000;
    void *large[NLARGE];
    void **small;
    char line[256];
    int len;

    if (n < 2 || !(small = small_blocks(n)))
        return 1;
    for (unsigned i = 0; i < NLARGE; i++)
        if (!(large[i] = malloc(LARGE)))
            return 1;
    /* everything is live here: the peak */
    uint64_t calls = n + 1 + NLARGE;
    uint64_t bytes = (uint64_t)n * SMALL + n * sizeof *small + (uint64_t)NLARGE * LARGE;
    for (size_t i = 0; i < n; i += 2)
        free(small[i]);
    for (unsigned i = KEEP_LARGE; i < NLARGE; i++)
        free(large[i]);
    free(small);
    uint64_t lblocks = n / 2 + KEEP_LARGE;
    uint64_t lbytes = (uint64_t)(n / 2) * SMALL + (uint64_t)KEEP_LARGE * LARGE;
    len = snprintf(line, sizeof line,
                   "halfleak calls=%llu bytes=%llu peak=%llu leaked_blocks=%llu "
                   "leaked_bytes=%llu\n",
                   (unsigned long long)calls, (unsigned long long)bytes,
                   (unsigned long long)bytes, (unsigned long long)lblocks,
                   (unsigned long long)lbytes);
    return write(1, line, (size_t)len) == len ? 0 : 1;
}
