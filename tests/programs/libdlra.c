/* libdlra.c — one of two libraries for the reload test (dlreload.c): the
 * same code as libdlrb.c, which includes this file under another function
 * name of the same length, so both build to the same size, load at the same
 * address in turn, and call malloc from the same offset. A stack id carried
 * over from one to the other would name the wrong library's function. */
#include <stddef.h>
#include <stdlib.h>

#ifndef DLR_MAKE
#define DLR_MAKE dl_alpha_make
#endif

/* n blocks of `size` bytes, each from this one call site. */
void DLR_MAKE(void **out, unsigned n, size_t size)
{
    for (unsigned i = 0; i < n; i++)
        out[i] = malloc(size);
}
