/* stress_oom.c — `stress_oom [exhaust]`: allocator calls that fail, and how.
 * Always: calloc and reallocarray whose size overflows (NULL, ENOMEM),
 * malloc and realloc of impossible sizes (NULL, ENOMEM; the old block
 * intact), posix_memalign with alignments it must refuse (EINVAL, *out and
 * errno untouched) and with an impossible size (ENOMEM). With "exhaust"
 * (run it under `ulimit -v`): allocates 1 MiB blocks until malloc returns
 * NULL, then smaller ones until those fail too, then calloc, realloc,
 * posix_memalign and aligned_alloc once more each while the address space
 * is full; frees everything and checks that allocation works again.
 * Every call is logged as an "ev" line (testprog.h), failures included; the
 * "result" lines are the same whatever the limit. */
#include "testprog.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <sys/resource.h>

#define MAX_BLOCKS 60000

static void *blocks[MAX_BLOCKS];
static unsigned nblocks;
/* Through a volatile: the compiler must not see (and warn about) the
 * impossible sizes below. */
static volatile size_t size_max = SIZE_MAX, ptrdiff_max = PTRDIFF_MAX;

static size_t us(void *p) { return p ? malloc_usable_size(p) : 0; }

/* Not an exit on a wrong answer: the test compares the whole output. */
static void result(const char *what, int ok)
{
    tp_note("result %s: %s", what, ok ? "ok" : "WRONG");
}

USER static void edges(void)
{
    /* calloc whose product overflows size_t. */
    errno = 0;
    void *p = calloc(size_max / 2 + 1, 2);
    result("calloc overflow returns NULL with ENOMEM", !p && errno == ENOMEM);
    tp_alloc_failed_anysize("calloc");
    errno = 0;
    p = calloc(size_max >> 24, size_max >> 24);
    result("calloc 2^40 x 2^40 returns NULL with ENOMEM", !p && errno == ENOMEM);
    tp_alloc_failed_anysize("calloc");
    errno = 0;
    p = reallocarray(NULL, size_max / 4, 8);
    result("reallocarray overflow returns NULL with ENOMEM", !p && errno == ENOMEM);
    tp_alloc_failed_anysize("reallocarray");

    /* Sizes no allocator can give. */
    errno = 0;
    p = malloc(size_max - 4096);
    result("malloc(SIZE_MAX - 4096) returns NULL with ENOMEM", !p && errno == ENOMEM);
    tp_alloc("malloc", p, SIZE_MAX - 4096, 0, NULL);
    char *keep = malloc(100);
    TP_CHECK(keep);
    tp_alloc("malloc", keep, 100, us(keep), NULL);
    memset(keep, 'k', 100);
    errno = 0;
    p = realloc(keep, ptrdiff_max);
    result("realloc to PTRDIFF_MAX returns NULL with ENOMEM, block intact",
           !p && errno == ENOMEM && keep[99] == 'k');
    tp_alloc("realloc", p, PTRDIFF_MAX, 0, NULL);

    /* posix_memalign: invalid alignments are EINVAL, *out and errno untouched. */
    static const size_t bad[] = { 0, 1, 4, 12, 24, 48, 4095, (size_t)1 << 63 | 8 };
    int all_einval = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        void *out = (void *)0x1234;
        errno = 77;
        int rc = posix_memalign(&out, bad[i], 64);
        all_einval &= rc == EINVAL && out == (void *)0x1234 && errno == 77;
        tp_alloc("posix_memalign", NULL, 64, 0, NULL);
    }
    result("posix_memalign with bad alignments: EINVAL, *out and errno untouched", all_einval);
    void *out = (void *)0x1234;
    int rc = posix_memalign(&out, 64, size_max - 100);
    result("posix_memalign of an impossible size: ENOMEM", rc == ENOMEM && out == (void *)0x1234);
    tp_alloc("posix_memalign", NULL, SIZE_MAX - 100, 0, NULL);
    /* A good one, for contrast. */
    rc = posix_memalign(&out, 4096, 1000);
    result("posix_memalign(4096, 1000) works", rc == 0 && (uintptr_t)out % 4096 == 0);
    tp_alloc("posix_memalign", out, 1000, us(out), "align=4096");
    tp_free("free", out, NULL);
    free(out);
    tp_free("free", keep, NULL);
    free(keep);
}

static void keep_block(void *p)
{
    TP_CHECK(nblocks < MAX_BLOCKS);
    blocks[nblocks++] = p;
}

static void add_block(const char *func, void *p, size_t size)
{
    keep_block(p);
    tp_alloc(func, p, size, us(p), NULL);
}

USER static void exhaust(void)
{
    struct rlimit rl;
    TP_CHECK(getrlimit(RLIMIT_AS, &rl) == 0);
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (8ull << 30)) {
        fprintf(stderr, "stress_oom: exhaust wants an address-space limit (ulimit -v) of 8 GiB or less\n");
        exit(2);
    }
    /* Until malloc says no. */
    size_t big = 1 << 20;
    int err = 0;
    for (;;) {
        errno = 0;
        void *p = malloc(big);
        if (!p) {
            err = errno;
            tp_alloc("malloc", NULL, big, 0, NULL);
            break;
        }
        add_block("malloc", p, big);
    }
    result("malloc(1 MiB) ran out with ENOMEM", err == ENOMEM);
    /* The rest of the address space, in smaller pieces. */
    for (size_t small = 64 << 10; small >= 4096; small /= 4) {
        for (;;) {
            void *p = malloc(small);
            if (!p) {
                tp_alloc("malloc", NULL, small, 0, NULL);
                break;
            }
            add_block("malloc", p, small);
        }
    }
    /* Everything else fails now too, and says so. */
    errno = 0;
    void *c = calloc(1 << 10, 1 << 10);
    result("calloc when the address space is full: NULL, ENOMEM", !c && errno == ENOMEM);
    tp_alloc("calloc", c, 1 << 20, us(c), NULL);
    if (c)
        keep_block(c);
    errno = 0;
    void *r = realloc(blocks[0], 64u << 20);
    result("realloc growth when full: NULL, ENOMEM, block kept", !r && errno == ENOMEM);
    if (r) {                       /* it moved: the old block is gone */
        tp_free("realloc", blocks[0], "realloc");
        tp_alloc("realloc", r, 64u << 20, us(r), "realloc");
        blocks[0] = r;
    } else {
        tp_alloc("realloc", NULL, 64u << 20, 0, NULL);
    }
    void *out = NULL;
    int rc = posix_memalign(&out, 1 << 16, 8u << 20);
    result("posix_memalign when full: ENOMEM", rc == ENOMEM);
    tp_alloc("posix_memalign", rc ? NULL : out, 8u << 20, us(rc ? NULL : out), NULL);
    if (!rc)
        keep_block(out);
    errno = 0;
    void *a = aligned_alloc(4096, 8u << 20);
    result("aligned_alloc when full: NULL, ENOMEM", !a && errno == ENOMEM);
    tp_alloc("aligned_alloc", a, 8u << 20, us(a), NULL);
    if (a)
        keep_block(a);
    /* Give it all back; then it works again. */
    for (unsigned i = 0; i < nblocks; i++) {
        tp_free("free", blocks[i], NULL);
        free(blocks[i]);
    }
    nblocks = 0;
    void *again = malloc(big);
    result("malloc works again after the frees", again != NULL);
    tp_alloc("malloc", again, big, us(again), NULL);
    tp_free("free", again, NULL);
    free(again);
}

int main(int argc, char **argv)
{
    tp_range();
    edges();
    if (argc > 1 && !strcmp(argv[1], "exhaust"))
        exhaust();
    tp_expect();
    tp_flush();
    return 0;
}
