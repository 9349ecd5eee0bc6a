/* libdlalloc.c — a library that allocates, for the dlopen test: every block
 * comes from a malloc call inside this library, so its stack's first frame
 * lies within the library's mapping. */
#include <stddef.h>
#include <stdlib.h>

void dl_make(void **out, size_t n, size_t base)
{
    for (size_t i = 0; i < n; i++)
        out[i] = malloc(base + i);
}

void dl_release(void *p)
{
    free(p);
}
