/* stress_dlopen.c — `stress_dlopen LIB [ROUNDS [LIB2]]`: dlopen/dlclose in a
 * loop of a library that allocates (tests/programs/libdlalloc.c), from two
 * threads at once (with one path, some dlcloses only drop a reference and
 * some unload; with a copy of the library as LIB2 for the second thread,
 * two libraries come and go independently),
 * while two more threads allocate all along (their stack lookups race the
 * unloads). Blocks the library allocated are freed partly by the library
 * and partly by the program after the library is gone. The library's block
 * sizes are 7000 + 32*t + 8*k + i (t: 0 for the main thread and LIB, 1
 * for the other and LIB2; k: round % 4; i < 4), known to nobody else, so
 * the test finds them in the capture by size, and knows which library
 * made each. stdout: "result" (the same
 * every run) and "expect lib_allocs=N lib_bytes=N lib_frees=N". */
#include "testprog.h"

#include <dlfcn.h>
#include <time.h>

typedef void make_fn(void **, size_t, size_t);
typedef void release_fn(void *);

static const char *lib, *lib2;
static unsigned long lib_allocs, lib_bytes, lib_frees, opens;
static volatile int stop;

static void add(unsigned long *c, unsigned long n)
{
    __atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

static void rounds(const char *path, unsigned n, unsigned salt)
{
    for (unsigned r = 0; r < n; r++) {
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "stress_dlopen: %s\n", dlerror());
            exit(3);
        }
        add(&opens, 1);
        make_fn *make = (make_fn *)dlsym(h, "dl_make");
        release_fn *release = (release_fn *)dlsym(h, "dl_release");
        TP_CHECK(make && release);
        void *b[4];
        size_t base = 7000 + 32 * salt + 8 * (r % 4);
        make(b, 4, base);
        for (int i = 0; i < 4; i++) {
            TP_CHECK(b[i]);
            memset(b[i], i, base + (size_t)i);
        }
        add(&lib_allocs, 4);
        add(&lib_bytes, 4 * base + 6);
        release(b[0]);             /* freed inside the library */
        TP_CHECK(dlclose(h) == 0);
        for (int i = 1; i < 4; i++) {
            TP_CHECK(((unsigned char *)b[i])[base] == (unsigned char)i);
            free(b[i]);            /* freed after the library may be gone */
        }
        add(&lib_frees, 4);
    }
}

static void *opener(void *arg)
{
    rounds(lib2, (unsigned)(uintptr_t)arg, 1);
    return NULL;
}

USER static void *busy(void *arg)
{
    void *held[8] = { 0 };
    for (unsigned long i = 0; !stop; i++) {
        unsigned k = (unsigned)(i % 8);
        free(held[k]);
        held[k] = malloc(16 + (i * 7) % 900);   /* never a library size */
        TP_CHECK(held[k]);
        if (i % 16 == 15) {
            struct timespec ts = { 0, 100000 };
            nanosleep(&ts, NULL);
        }
    }
    for (unsigned k = 0; k < 8; k++)
        free(held[k]);
    return arg;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: stress_dlopen LIB [ROUNDS [LIB2]]\n");
        return 2;
    }
    lib = argv[1];
    lib2 = argc > 3 ? argv[3] : lib;
    unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 300;
    pthread_t th[3];
    TP_CHECK(pthread_create(&th[0], NULL, busy, NULL) == 0);
    TP_CHECK(pthread_create(&th[1], NULL, busy, NULL) == 0);
    TP_CHECK(pthread_create(&th[2], NULL, opener, (void *)(uintptr_t)(n / 2)) == 0);
    rounds(lib, n, 0);
    TP_CHECK(pthread_join(th[2], NULL) == 0);
    stop = 1;
    TP_CHECK(pthread_join(th[0], NULL) == 0);
    TP_CHECK(pthread_join(th[1], NULL) == 0);
    printf("result opens=%lu lib_allocs=%lu ok\n", opens, lib_allocs);
    printf("expect lib_allocs=%lu lib_bytes=%lu lib_frees=%lu\n", lib_allocs, lib_bytes,
           lib_frees);
    return 0;
}
