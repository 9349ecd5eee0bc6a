/* jemalloc_user.c — a program linked with Debian's libjemalloc (its malloc
 * replaces glibc's) that also uses jemalloc's own API: mallocx (aligned,
 * zeroed), rallocx, xallocx, sdallocx, dallocx. Logs each call with the
 * usable size jemalloc reports, for a call-by-call comparison. */
#include "testprog.h"

#include <jemalloc/jemalloc.h>

static size_t us(void *p) { return p ? sallocx(p, 0) : 0; }

USER static void run(void)
{
    void *p = malloc(100);
    TP_CHECK(p && malloc_usable_size(p) == us(p));
    tp_alloc("malloc", p, 100, us(p), NULL);
    void *c = calloc(3, 700);
    tp_alloc("calloc", c, 2100, us(c), NULL);
    uintptr_t old = (uintptr_t)c;
    void *c2 = realloc(c, 50000);
    TP_CHECK(c2);
    if ((uintptr_t)c2 == old) {
        tp_resize("realloc", c2, 50000, us(c2));
    } else {
        tp_free("realloc", (void *)old, "realloc");
        tp_alloc("realloc", c2, 50000, us(c2), "realloc");
    }

    void *m = mallocx(4000, 0);
    tp_alloc("mallocx", m, 4000, us(m), NULL);
    void *a = mallocx(1000, MALLOCX_ALIGN(4096));
    TP_CHECK(a && (uintptr_t)a % 4096 == 0);
    tp_alloc("mallocx", a, 1000, us(a), "align=4096");
    unsigned char *z = mallocx(500, MALLOCX_ZERO);
    TP_CHECK(z && z[0] == 0 && z[499] == 0);
    tp_alloc("mallocx", z, 500, us(z), NULL);

    /* rallocx: growing a small block moves it; shrinking a large one can
     * stay. Logged by what happened. */
    size_t sizes[] = { 8000, 200000, 150000 };
    for (int i = 0; i < 3; i++) {
        old = (uintptr_t)m;
        void *r = rallocx(m, sizes[i], 0);
        TP_CHECK(r);
        if ((uintptr_t)r == old) {
            tp_resize("rallocx", r, sizes[i], us(r));
        } else {
            tp_free("rallocx", (void *)old, "realloc");
            tp_alloc("rallocx", r, sizes[i], us(r), "realloc");
        }
        m = r;
    }
    /* xallocx never moves: resize within the block's size class. */
    size_t got = xallocx(m, 140000, 0, 0);
    TP_CHECK(got >= 140000 && got == us(m));
    tp_note("ev resize xallocx %#lx * %zu", (unsigned long)(uintptr_t)m, got);
    tp.resizes++;

    tp_free("sdallocx", a, NULL);
    sdallocx(a, 1000, MALLOCX_ALIGN(4096));
    tp_free("dallocx", z, NULL);
    dallocx(z, 0);
    tp_free("free", p, NULL);
    free(p);
    /* m and c2 stay live. Which size the capture gives the xallocx resize
     * (requested or usable) is the shim's choice: the test does not compare
     * live_bytes. */
}

int main(void)
{
    tp_range();
    run();
    tp_expect();
    tp_flush();
    return 0;
}
