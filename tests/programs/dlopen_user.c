/* dlopen_user.c — `dlopen_user LIBPATH`: twice, dlopens the library, has it
 * allocate blocks (from the same call site both times, so the two rounds'
 * stacks are identical if the library lands at the same address again),
 * frees some, and dlcloses it. Logs the library's allocations as "ev" lines;
 * the test takes the library's address range from the capture's module
 * records. */
#include "testprog.h"

#include <dlfcn.h>
#include <malloc.h>

typedef void make_fn(void **, size_t, size_t);
typedef void release_fn(void *);

static void round_trip(const char *path, int round)
{
    void *blocks[8];
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen_user: %s\n", dlerror());
        exit(3);
    }
    make_fn *make = (make_fn *)dlsym(h, "dl_make");
    release_fn *release = (release_fn *)dlsym(h, "dl_release");
    TP_CHECK(make && release);
    Dl_info info;
    TP_CHECK(dladdr((void *)make, &info) != 0);
    tp_note("round %d base=%p", round, info.dli_fbase);

    make(blocks, 6, 2000);                 /* the same call site both rounds */
    for (int i = 0; i < 6; i++) {
        TP_CHECK(blocks[i]);
        tp_alloc("malloc", blocks[i], 2000 + (size_t)i, malloc_usable_size(blocks[i]), NULL);
    }
    for (int i = 0; i < 6; i += 2) {
        tp_free("free", blocks[i], NULL);
        release(blocks[i]);
    }
    TP_CHECK(dlclose(h) == 0);
    tp_note("closed %d", round);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: dlopen_user LIBPATH\n");
        return 2;
    }
    for (int r = 0; r < 2; r++)
        round_trip(argv[1], r);
    tp_expect();
    tp_flush();
    return 0;
}
