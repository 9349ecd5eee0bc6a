/* basic.c — every entry point of the malloc family once or more, with the
 * corner cases the shim must record exactly: realloc growing in place and
 * moving, realloc(NULL,n), realloc(p,0), free(NULL), failed calls, large
 * alignments. Logs each call as an "ev" line (testprog.h) so the test can
 * compare the capture against the program's own sequence, call by call. */
#include "testprog.h"

#include <errno.h>
#include <malloc.h>

static size_t us(void *p) { return p ? malloc_usable_size(p) : 0; }

/* Logged before the call: afterwards the pointer may not be used. */
#define FREE(p)                                                                \
    do {                                                                       \
        tp_free("free", (p), NULL);                                            \
        free(p);                                                               \
    } while (0)

/* Sizes the compiler must not see (it warns about impossible requests). */
static volatile size_t huge = (size_t)PTRDIFF_MAX, half = SIZE_MAX / 2;
/* NULL the compiler cannot see: GCC turns realloc(NULL, n) into malloc(n). */
static void *volatile null_ptr;

/* One realloc, logged by what it really did. */
USER static void *do_realloc(void *p, size_t n, int *moved)
{
    uintptr_t old = (uintptr_t)p;
    void *q = realloc(p, n);
    if (!q) {
        tp_alloc("realloc", NULL, n, 0, NULL);
        return NULL;
    }
    if ((uintptr_t)q == old) {
        tp_resize("realloc", q, n, us(q));
        *moved = 0;
    } else {
        tp_free("realloc", (void *)old, "realloc");
        tp_alloc("realloc", q, n, us(q), "realloc");
        *moved = 1;
    }
    return q;
}

USER static void run(void)
{
    char extra[32];
    void *keep[8];
    int nkeep = 0, moved;

    void *a = malloc(100);
    tp_alloc("malloc", a, 100, us(a), NULL);
    TP_CHECK(a && us(a) >= 100);
    void *z = malloc(0);
    tp_alloc("malloc", z, 0, us(z), NULL);
    FREE(z);

    void *c = calloc(10, 33);
    tp_alloc("calloc", c, 330, us(c), NULL);
    TP_CHECK(c && ((unsigned char *)c)[329] == 0);

    /* Grow in place: a fresh block usually borders the top chunk, so glibc
     * extends it. Retry with other sizes until one stays put. */
    int grown = 0;
    for (int i = 0; i < 32 && !grown; i++) {
        size_t n = 1000 + 48 * (size_t)i;
        void *p = malloc(n);
        tp_alloc("malloc", p, n, us(p), NULL);
        p = do_realloc(p, 2 * n, &moved);
        TP_CHECK(p);
        grown = !moved;
        FREE(p);
    }
    TP_CHECK(grown);

    /* Move: a block right behind p makes growing in place impossible. */
    void *p = malloc(200);
    tp_alloc("malloc", p, 200, us(p), NULL);
    void *blocker = malloc(200);
    tp_alloc("malloc", blocker, 200, us(blocker), NULL);
    memset(p, 0x5a, 200);
    p = do_realloc(p, 20000, &moved);
    TP_CHECK(p && moved && ((unsigned char *)p)[199] == 0x5a);
    keep[nkeep++] = p;                     /* stays live */

    /* Shrink: glibc splits in place. */
    void *s = malloc(4000);
    tp_alloc("malloc", s, 4000, us(s), NULL);
    s = do_realloc(s, 1000, &moved);
    TP_CHECK(s);

    /* realloc(NULL, n) is an allocation; realloc(p, 0) frees and returns NULL. */
    void *r = realloc(null_ptr, 777);
    tp_alloc("realloc", r, 777, us(r), NULL);
    tp_free("realloc", r, NULL);
    void *r0 = realloc(r, 0);
    TP_CHECK(r0 == NULL);
    free(null_ptr);                        /* free(NULL): must not be recorded */

    /* A failed realloc leaves the block alone. */
    void *f = realloc(s, huge);
    TP_CHECK(f == NULL);
    tp_alloc("realloc", NULL, (size_t)PTRDIFF_MAX, 0, NULL);
    keep[nkeep++] = s;                     /* still live, 1000 bytes */

    /* reallocarray: from NULL, then growing. */
    void *ra = reallocarray(null_ptr, 10, 100);
    tp_alloc("reallocarray", ra, 1000, us(ra), NULL);
    uintptr_t ra_old = (uintptr_t)ra;
    void *ra2 = reallocarray(ra, 30, 100);
    TP_CHECK(ra2);
    if ((uintptr_t)ra2 == ra_old) {
        tp_resize("reallocarray", ra2, 3000, us(ra2));
    } else {
        tp_free("reallocarray", (void *)ra_old, "realloc");
        tp_alloc("reallocarray", ra2, 3000, us(ra2), "realloc");
    }
    FREE(ra2);

    /* Failures: each is recorded as a failed allocation. */
    void *fm = malloc(huge);
    TP_CHECK(!fm);
    tp_alloc("malloc", NULL, (size_t)PTRDIFF_MAX, 0, NULL);
    void *fc = calloc(half, 4);
    TP_CHECK(!fc);
    tp_alloc_failed_anysize("calloc");
    void *fr = reallocarray(null_ptr, half, 4);
    TP_CHECK(!fr);
    tp_alloc_failed_anysize("reallocarray");
    void *fp = NULL;
    TP_CHECK(posix_memalign(&fp, 24, 100) == EINVAL);  /* not a power of two */
    tp_alloc("posix_memalign", NULL, 100, 0, NULL);

    /* Large alignments. */
    static const size_t aligns[] = { 4096, 65536, 2u << 20 };
    for (int i = 0; i < 3; i++) {
        void *pm = NULL;
        size_t n = 3000 + aligns[i];
        TP_CHECK(posix_memalign(&pm, aligns[i], n) == 0);
        TP_CHECK((uintptr_t)pm % aligns[i] == 0 && us(pm) >= n);
        snprintf(extra, sizeof extra, "align=%zu", aligns[i]);
        tp_alloc("posix_memalign", pm, n, us(pm), extra);
        if (i == 2) {
            keep[nkeep++] = pm;
        } else {
            FREE(pm);
        }
    }
    void *al = aligned_alloc(4096, 8192);
    TP_CHECK(al && (uintptr_t)al % 4096 == 0);
    tp_alloc("aligned_alloc", al, 8192, us(al), "align=4096");
    void *ma = memalign(65536, 1000);
    TP_CHECK(ma && (uintptr_t)ma % 65536 == 0);
    tp_alloc("memalign", ma, 1000, us(ma), "align=65536");
    void *va = valloc(5000);
    TP_CHECK(va && (uintptr_t)va % 4096 == 0);
    tp_alloc("valloc", va, 5000, us(va), "align=4096");
    void *pv = pvalloc(5000);
    TP_CHECK(pv && (uintptr_t)pv % 4096 == 0 && us(pv) >= 8192);
    tp_alloc("pvalloc", pv, 5000, us(pv), "align=4096");
    FREE(al);
    FREE(ma);
    FREE(va);
    keep[nkeep++] = pv;

    /* A big block served by mmap, grown (glibc uses mremap). */
    void *big = malloc(1u << 20);
    tp_alloc("malloc", big, 1u << 20, us(big), NULL);
    big = do_realloc(big, 3u << 20, &moved);
    TP_CHECK(big);
    FREE(big);

    FREE(a);
    FREE(c);
    FREE(blocker);
    (void)keep;
}

int main(void)
{
    tp_range();
    tp_note("pid=%d", (int)getpid());
    run();
    tp_expect();
    tp_flush();
    return 0;
}
