/* stress_threads.c — `stress_threads [THREADS [ROUNDS]]`: THREADS (default
 * 64) threads allocate, fill, check, resize and free blocks for ROUNDS
 * rounds each, and hand a share of their blocks to other threads through
 * mailboxes, so frees cross threads all the time. Every block carries a
 * pattern derived from its serial number, checked before every resize and
 * free: a profiler that corrupts or mixes up blocks is caught by the program
 * itself (exit 3). STRESS_SECONDS=N (manual runs): keep going for N seconds.
 * stdout: a "result" line that is the same for every run with the same
 * arguments, and an "expect" line for tests/lib.sh's checker. */
#include "testprog.h"

#include <errno.h>
#include <malloc.h>
#include <time.h>

#define HELD 48                    /* blocks a thread holds at a time       */
#define MAILBOX 128
#define KEEP 2                     /* blocks per thread left live at exit   */
#define MAX_THREADS 1024

struct block {
    unsigned char *p;
    size_t size;
    uint32_t serial;
};

struct mailbox {
    pthread_mutex_t lock;
    unsigned n;
    struct block b[MAILBOX];
};

/* What a thread did, summed by main: "calls" are the same every run; the
 * rest depends on the allocator (a realloc may move or not) and timing. */
struct counts {
    unsigned long calls[6];        /* malloc calloc realloc memalign free send */
    struct tp_tally t;
    unsigned long received;
};

static int nthreads;
static unsigned long rounds;
static double seconds;
static struct mailbox boxes[MAX_THREADS];
static struct counts counts[MAX_THREADS];
static struct block kept[MAX_THREADS * KEEP];

static unsigned char pattern(uint32_t serial, size_t i)
{
    return (unsigned char)(serial * 31u + i * 7u + 1u);
}

/* The pattern covers the first 64 bytes and the last byte. */
static void fill(struct block *b)
{
    size_t n = b->size < 64 ? b->size : 64;
    for (size_t i = 0; i < n; i++)
        b->p[i] = pattern(b->serial, i);
    if (b->size)
        b->p[b->size - 1] = pattern(b->serial, b->size - 1);
}

static void check(const struct block *b, size_t upto)
{
    size_t n = upto < 64 ? upto : 64;
    for (size_t i = 0; i < n; i++)
        TP_CHECK(b->p[i] == pattern(b->serial, i));
    if (upto == b->size && b->size)
        TP_CHECK(b->p[b->size - 1] == pattern(b->serial, b->size - 1));
}

static size_t pick_size(uint64_t *s)
{
    uint64_t r = tp_rand(s) % 1000;
    if (r < 850)
        return 1 + tp_rand(s) % 512;
    if (r < 995)
        return 513 + tp_rand(s) % 16000;
    return 65536 + tp_rand(s) % 300000;  /* past the mmap threshold */
}

USER static void drop(struct counts *c, struct block *b)
{
    check(b, b->size);
    free(b->p);
    c->t.frees++;
    c->calls[4]++;
    b->p = NULL;
}

/* Frees what other threads sent us. */
USER static void drain(struct counts *c, struct mailbox *m)
{
    struct block got[MAILBOX];
    pthread_mutex_lock(&m->lock);
    unsigned n = m->n;
    memcpy(got, m->b, n * sizeof got[0]);
    m->n = 0;
    pthread_mutex_unlock(&m->lock);
    for (unsigned i = 0; i < n; i++) {
        drop(c, &got[i]);
        c->received++;
    }
}

USER static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    struct counts *c = &counts[me];
    struct block held[HELD];
    memset(held, 0, sizeof held);
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(me + 1);
    uint32_t serial = (uint32_t)me << 20;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned long round = 0;; round++) {
        if (seconds > 0) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            if ((double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
                break;
        } else if (round >= rounds) {
            break;
        }
        struct block *b = &held[tp_rand(&seed) % HELD];
        uint64_t op = tp_rand(&seed) % 100;
        if (b->p && op < 25) {
            drop(c, b);
        } else if (b->p && op < 40) {
            /* Resize: the old contents must survive the move. */
            size_t size = pick_size(&seed);
            unsigned char *old = b->p;
            unsigned char *q = realloc(b->p, size);
            c->calls[2]++;
            TP_CHECK(q);
            b->p = q;
            check(b, size < b->size ? size : b->size);
            tp_tally_realloc(&c->t, old, q, size);
            b->size = size;
            b->serial = ++serial;
            fill(b);
        } else if (b->p && op < 55) {
            /* Hand the block to another thread, which frees it. */
            int to = (int)(tp_rand(&seed) % (uint64_t)nthreads);
            struct mailbox *m = &boxes[to];
            check(b, b->size);
            c->calls[5]++;
            pthread_mutex_lock(&m->lock);
            int sent = m->n < MAILBOX;
            if (sent)
                m->b[m->n++] = *b;
            pthread_mutex_unlock(&m->lock);
            if (sent)
                b->p = NULL;
            else
                drop(c, b);        /* full: free it here */
        } else {
            if (b->p)
                drop(c, b);
            size_t size = pick_size(&seed);
            uint64_t how = tp_rand(&seed) % 10;
            if (how < 6) {
                b->p = malloc(size);
                c->calls[0]++;
            } else if (how < 8) {
                size_t n = 1 + size / 16;
                b->p = calloc(n, 16);
                c->calls[1]++;
                TP_CHECK(b->p);
                for (size_t i = 0; i < n * 16; i += 61)
                    TP_CHECK(b->p[i] == 0);
                size = n * 16;
            } else {
                size_t align = (size_t)16 << (tp_rand(&seed) % 9);   /* 16..4096 */
                void *p = NULL;
                if (how == 8) {
                    TP_CHECK(posix_memalign(&p, align, size) == 0);
                } else {
                    size = (size + align - 1) / align * align;
                    p = aligned_alloc(align, size);
                }
                c->calls[3]++;
                TP_CHECK(p && (uintptr_t)p % align == 0);
                b->p = p;
            }
            TP_CHECK(b->p);
            TP_CHECK(malloc_usable_size(b->p) >= size);
            tp_tally_alloc(&c->t, size);
            b->size = size;
            b->serial = ++serial;
            fill(b);
        }
        if ((round & 7) == 0)
            drain(c, &boxes[me]);
    }
    /* Keep KEEP blocks live on purpose, free the rest. */
    int kept_n = 0;
    for (int i = 0; i < HELD; i++) {
        if (!held[i].p)
            continue;
        if (kept_n < KEEP) {
            kept[me * KEEP + kept_n++] = held[i];
            c->t.live_blocks++;
            c->t.live_bytes += held[i].size;
        } else {
            drop(c, &held[i]);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    nthreads = argc > 1 ? atoi(argv[1]) : 64;
    rounds = argc > 2 ? strtoul(argv[2], NULL, 10) : 4000;
    const char *secs = getenv("STRESS_SECONDS");
    seconds = secs ? atof(secs) : 0;
    if (nthreads < 1 || nthreads > MAX_THREADS) {
        fprintf(stderr, "usage: stress_threads [THREADS (1..%d) [ROUNDS]]\n", MAX_THREADS);
        return 2;
    }
    tp_range();
    tp_flush();
    for (int i = 0; i < nthreads; i++)
        pthread_mutex_init(&boxes[i].lock, NULL);
    static pthread_t th[MAX_THREADS];
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 << 10);
    for (int i = 0; i < nthreads; i++) {
        int rc = pthread_create(&th[i], &attr, worker, (void *)(intptr_t)i);
        if (rc) {
            fprintf(stderr, "stress_threads: pthread_create: %s\n", strerror(rc));
            return 3;
        }
    }
    for (int i = 0; i < nthreads; i++)
        TP_CHECK(pthread_join(th[i], NULL) == 0);

    /* Blocks still in mailboxes: freed here, on yet another thread. */
    struct counts total;
    memset(&total, 0, sizeof total);
    struct counts *mc = &total;
    for (int i = 0; i < nthreads; i++)
        drain(mc, &boxes[i]);
    for (int i = 0; i < nthreads; i++) {
        struct counts *c = &counts[i];
        for (int k = 0; k < 6; k++)
            total.calls[k] += c->calls[k];
        tp_tally_add(&total.t, &c->t);
        total.received += c->received;
    }
    unsigned long sent = total.calls[5];
    if (seconds > 0)
        printf("result threads=%d seconds=%g ok\n", nthreads, seconds);
    else
        printf("result threads=%d rounds=%lu malloc=%lu calloc=%lu realloc=%lu memalign=%lu "
               "handed_or_freed=%lu ok\n",
               nthreads, rounds, total.calls[0], total.calls[1], total.calls[2], total.calls[3],
               sent);
    tp_tally_expect(&total.t);
    return 0;
}
