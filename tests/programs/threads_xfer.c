/* threads_xfer.c — 16 threads allocate blocks and hand them to each other
 * through one shared queue; whoever pops a block frees it. The program counts
 * exactly what each thread allocated and how many blocks were freed by a
 * thread other than the one that allocated them, and leaves a few blocks
 * live on purpose. Small size classes make glibc's per-thread caches hand a
 * block freed by one thread to the next malloc of the same thread, so
 * addresses are reused across threads. */
#include <stdatomic.h>

#include "testprog.h"

#define NTHREADS 16
#define ITER 4000
#define QCAP 4096
#define KEEP 10                        /* blocks left live at exit */

struct block { void *p; size_t size; int owner; };

static struct {
    pthread_mutex_t lock;
    struct block q[QCAP];
    unsigned head, n;
} queue = { PTHREAD_MUTEX_INITIALIZER, {{0, 0, 0}}, 0, 0 };

static pthread_barrier_t start;
static _Atomic unsigned long total_allocs, total_frees, total_bytes, cross_frees;
static struct { pid_t tid; unsigned long allocs; } per[NTHREADS];

static int push(struct block b)
{
    int ok = 0;
    pthread_mutex_lock(&queue.lock);
    if (queue.n < QCAP) {
        queue.q[(queue.head + queue.n) % QCAP] = b;
        queue.n++;
        ok = 1;
    }
    pthread_mutex_unlock(&queue.lock);
    return ok;
}

static int pop(struct block *b)
{
    int ok = 0;
    pthread_mutex_lock(&queue.lock);
    if (queue.n > 0) {
        *b = queue.q[queue.head];
        queue.head = (queue.head + 1) % QCAP;
        queue.n--;
        ok = 1;
    }
    pthread_mutex_unlock(&queue.lock);
    return ok;
}

static void release(struct block b, int me)
{
    free(b.p);
    total_frees++;
    if (b.owner != me)
        cross_frees++;
}

USER static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    per[me].tid = gettid();
    pthread_barrier_wait(&start);
    for (unsigned k = 0; k < ITER; k++) {
        size_t size = 32 + 16 * ((me + k) % 6);
        void *p = malloc(size);
        TP_CHECK(p);
        memset(p, me, size);
        per[me].allocs++;
        total_allocs++;
        total_bytes += size;
        struct block b = { p, size, me };
        if (!push(b))
            release(b, me);
        /* Pop most of the time, so blocks also wait a while in the queue. */
        if (k % 4 != 3 && pop(&b))
            release(b, me);
    }
    return NULL;
}

int main(void)
{
    pthread_t th[NTHREADS];
    tp_range();
    pthread_barrier_init(&start, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++)
        TP_CHECK(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);

    /* Main frees what is left but KEEP blocks (it is not a worker: -1). */
    struct block b;
    unsigned long live_bytes = 0, live = 0;
    while (queue.n > KEEP && pop(&b))
        release(b, -1);
    for (unsigned i = 0; i < queue.n; i++) {
        live_bytes += queue.q[(queue.head + i) % QCAP].size;
        live++;
    }
    for (int i = 0; i < NTHREADS; i++)
        tp_note("thread %d tid=%d allocs=%lu", i, (int)per[i].tid, per[i].allocs);
    tp_note("expect allocs=%lu failed=0 frees=%lu resizes=0 bytes=%lu live_blocks=%lu "
            "live_bytes=%lu xthread_free=%lu tids=%d",
            (unsigned long)total_allocs, (unsigned long)total_frees,
            (unsigned long)total_bytes, live, live_bytes, (unsigned long)cross_frees,
            NTHREADS);
    tp_flush();
    return 0;
}
