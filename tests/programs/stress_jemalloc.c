/* stress_jemalloc.c — `stress_jemalloc [THREADS [ROUNDS]]`: linked with
 * libjemalloc (its malloc replaces glibc's). THREADS (default 8) threads
 * use jemalloc's own API for ROUNDS rounds each: mallocx with alignment and
 * zeroing flags, rallocx, xallocx, sized sdallocx and dallocx, next to plain
 * malloc/calloc/realloc/free, and hand blocks to each other so sdallocx
 * runs on another thread than the mallocx. The program checks zeroing,
 * alignment and its fill pattern itself. stdout: a "result" line that is
 * the same every run, and an "expect" line for tests/lib.sh's checker. */
#include "testprog.h"

#include <jemalloc/jemalloc.h>

#define HELD 32
#define MAX_THREADS 64

struct block {
    unsigned char *p;
    size_t size;
    int lg;                        /* alignment asked for: sdallocx and
                                      xallocx must be told it again */
};

struct counts {
    struct tp_tally t;
    unsigned long calls;
};

static int nthreads;
static unsigned long rounds;
static struct counts counts[MAX_THREADS];
/* One exchange slot per thread: a block waiting for another thread to free. */
static struct block exchange[MAX_THREADS];
static pthread_mutex_t exchange_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block kept[MAX_THREADS];

/* Blocks are 2 bytes or more: first and last byte differ. */
static void fill(struct block *b)
{
    b->p[0] = (unsigned char)b->size;
    b->p[b->size - 1] = (unsigned char)(b->size >> 3);
}

static void check(const struct block *b)
{
    TP_CHECK(b->p[0] == (unsigned char)b->size);
    TP_CHECK(b->p[b->size - 1] == (unsigned char)(b->size >> 3));
}

USER static void release(struct counts *c, struct block *b, uint64_t how)
{
    check(b);
    if (how % 3 == 0)
        sdallocx(b->p, b->size, MALLOCX_LG_ALIGN(b->lg));
    else if (how % 3 == 1)
        dallocx(b->p, MALLOCX_LG_ALIGN(b->lg));
    else
        free(b->p);
    c->t.frees++;
    b->p = NULL;
}

USER static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    struct counts *c = &counts[me];
    struct block held[HELD];
    memset(held, 0, sizeof held);
    uint64_t s = 0x2545f4914f6cdd1dull * (uint64_t)(me + 1);
    for (unsigned long r = 0; r < rounds; r++) {
        struct block *b = &held[tp_rand(&s) % HELD];
        uint64_t op = tp_rand(&s) % 100;
        c->calls++;
        if (!b->p) {
            size_t size = 2 + tp_rand(&s) % (op < 90 ? 3000 : 100000);
            int lg = (int)(tp_rand(&s) % 13);          /* alignment 1 .. 4096 */
            if (op < 50) {
                int zero = op < 20;
                b->p = mallocx(size, MALLOCX_LG_ALIGN(lg) | (zero ? MALLOCX_ZERO : 0));
                TP_CHECK(b->p && (uintptr_t)b->p % ((uintptr_t)1 << lg) == 0);
                if (zero)
                    for (size_t i = 0; i < size; i += 97)
                        TP_CHECK(b->p[i] == 0);
            } else if (op < 75) {
                b->p = malloc(size);
                lg = 0;
            } else {
                b->p = calloc(1, size);
                TP_CHECK(b->p && b->p[size - 1] == 0);
                lg = 0;
            }
            b->lg = lg;
            TP_CHECK(b->p && sallocx(b->p, 0) >= size);
            b->size = size;
            tp_tally_alloc(&c->t, size);
            fill(b);
        } else if (op < 30) {
            /* rallocx: may move; the old contents follow. */
            size_t size = 2 + tp_rand(&s) % 20000;
            unsigned char first = b->p[0];
            unsigned char *old = b->p;
            unsigned char *q = (op < 15) ? rallocx(b->p, size, MALLOCX_LG_ALIGN(b->lg))
                                         : realloc(b->p, size);
            TP_CHECK(q && q[0] == first);
            if (op >= 15)
                b->lg = 0;         /* realloc keeps no alignment */
            TP_CHECK((uintptr_t)q % ((uintptr_t)1 << b->lg) == 0);
            tp_tally_realloc(&c->t, old, q, size);
            b->p = q;
            b->size = size;
            fill(b);
        } else if (op < 45) {
            /* xallocx: in place only; below `size` means it could not. */
            check(b);
            size_t size = b->size + tp_rand(&s) % 64;
            size_t got = xallocx(b->p, size, 0, MALLOCX_LG_ALIGN(b->lg));
            TP_CHECK(got == sallocx(b->p, MALLOCX_LG_ALIGN(b->lg)));
            if (got >= size) {
                b->size = size;
                c->t.resizes++;
                fill(b);
            }
        } else if (op < 60) {
            /* Swap with the exchange slot of another thread: what we take
             * out, we free here. */
            int to = (int)(tp_rand(&s) % (uint64_t)nthreads);
            struct block got;
            check(b);
            pthread_mutex_lock(&exchange_lock);
            got = exchange[to];
            exchange[to] = *b;
            pthread_mutex_unlock(&exchange_lock);
            b->p = NULL;
            if (got.p)
                release(c, &got, tp_rand(&s));
        } else {
            release(c, b, tp_rand(&s));
        }
    }
    for (int i = 0; i < HELD; i++) {
        if (!held[i].p)
            continue;
        if (!kept[me].p) {
            kept[me] = held[i];    /* one block left live on purpose */
            c->t.live_blocks++;
            c->t.live_bytes += held[i].size;
        } else {
            release(c, &held[i], (uint64_t)i);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    nthreads = argc > 1 ? atoi(argv[1]) : 8;
    rounds = argc > 2 ? strtoul(argv[2], NULL, 10) : 20000;
    if (nthreads < 1 || nthreads > MAX_THREADS) {
        fprintf(stderr, "usage: stress_jemalloc [THREADS (1..%d) [ROUNDS]]\n", MAX_THREADS);
        return 2;
    }
    tp_range();
    tp_flush();
    tp_run_threads((unsigned)nthreads, worker, 0);
    struct counts t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < MAX_THREADS; i++) {   /* what is left in the slots */
        if (exchange[i].p)
            release(&t, &exchange[i], 0);
    }
    for (int i = 0; i < nthreads; i++) {
        tp_tally_add(&t.t, &counts[i].t);
        t.calls += counts[i].calls;
    }
    printf("result threads=%d rounds=%lu calls=%lu ok\n", nthreads, rounds, t.calls);
    tp_tally_expect(&t.t);
    return 0;
}
