/* stress_churn.c — `stress_churn [THREADS [ALIVE]]`: threads are created and
 * exit all the time: THREADS (default 3000) short-lived threads, at most
 * ALIVE (default 24) at once, a third of them detached. Each allocates a few
 * blocks, frees most, passes one to a shared pool that later threads free,
 * and leaves one to a thread-specific-data destructor that frees it as the
 * thread exits (after the profiler's own exit hook has run). Counts are
 * exact and the same every run; stdout: a "result" line and an "expect"
 * line for tests/lib.sh's checker. */
#include "testprog.h"

#include <errno.h>
#include <malloc.h>
#include <semaphore.h>

#define POOL 64

static pthread_key_t key;
static sem_t slots;                /* threads allowed to be alive */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *pool[POOL];
static size_t pool_size[POOL];
static unsigned pool_n;
static unsigned long allocs, frees, bytes, dtor_frees;
static int joinable_done;
static int *tids;                  /* each worker's tid, by index */

static void add(unsigned long *counter, unsigned long n)
{
    __atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

USER static void on_exit_free(void *p)
{
    /* Runs at thread exit, after every key created before ours. */
    TP_CHECK(((unsigned char *)p)[0] == 0xd7);
    free(p);
    add(&frees, 1);
    add(&dtor_frees, 1);
}

USER static void *worker(void *arg)
{
    unsigned i = (unsigned)(uintptr_t)arg;
    unsigned n = 1 + i % 7;
    tids[i] = gettid();
    void *mine[8];
    for (unsigned k = 0; k < n; k++) {
        size_t size = 16 + (i * 13 + k * 101) % 2000;
        mine[k] = malloc(size);
        TP_CHECK(mine[k]);
        memset(mine[k], (int)k, size);
        add(&allocs, 1);
        add(&bytes, size);
    }
    /* One block to the pool, freed by a later thread (or main). */
    size_t psize = 24 + i % 300;
    void *p = malloc(psize);
    TP_CHECK(p);
    add(&allocs, 1);
    add(&bytes, psize);
    void *old = NULL;
    pthread_mutex_lock(&lock);
    if (pool_n == POOL) {
        old = pool[0];
        pool[0] = p;
        pool_size[0] = psize;
    } else {
        pool[pool_n] = p;
        pool_size[pool_n++] = psize;
    }
    pthread_mutex_unlock(&lock);
    if (old) {
        free(old);
        add(&frees, 1);
    }
    /* One block for the exit destructor. */
    unsigned char *d = malloc(40);
    TP_CHECK(d);
    d[0] = 0xd7;
    add(&allocs, 1);
    add(&bytes, 40);
    TP_CHECK(pthread_setspecific(key, d) == 0);
    for (unsigned k = 0; k < n; k++) {
        TP_CHECK(((unsigned char *)mine[k])[0] == (unsigned char)k);
        free(mine[k]);
        add(&frees, 1);
    }
    sem_post(&slots);
    return NULL;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    unsigned nthreads = argc > 1 ? (unsigned)atoi(argv[1]) : 3000;
    unsigned alive = argc > 2 ? (unsigned)atoi(argv[2]) : 24;
    if (nthreads < 1 || alive < 1) {
        fprintf(stderr, "usage: stress_churn [THREADS [ALIVE]]\n");
        return 2;
    }
    tp_range();
    tp_flush();
    tids = calloc(nthreads, sizeof *tids);
    TP_CHECK(tids);
    TP_CHECK(pthread_key_create(&key, on_exit_free) == 0);
    TP_CHECK(sem_init(&slots, 0, alive) == 0);
    pthread_attr_t detached, joinable;
    pthread_attr_init(&detached);
    pthread_attr_init(&joinable);
    pthread_attr_setstacksize(&detached, 128 << 10);
    pthread_attr_setstacksize(&joinable, 128 << 10);
    pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
    pthread_t *join = calloc(alive * 2u + 8u, sizeof *join);
    TP_CHECK(join);
    unsigned njoin = 0;
    for (unsigned i = 0; i < nthreads; i++) {
        while (sem_wait(&slots) != 0)
            TP_CHECK(errno == EINTR);
        pthread_t t;
        int det = i % 3 == 0;
        int rc;
        while ((rc = pthread_create(&t, det ? &detached : &joinable, worker,
                                    (void *)(uintptr_t)i)) == EAGAIN)
            sched_yield();
        if (rc) {
            fprintf(stderr, "stress_churn: pthread_create: %s\n", strerror(rc));
            return 3;
        }
        if (!det) {
            join[njoin++] = t;
            if (njoin == alive * 2u) {
                for (unsigned k = 0; k < njoin; k++)
                    TP_CHECK(pthread_join(join[k], NULL) == 0);
                joinable_done += (int)njoin;
                njoin = 0;
            }
        }
    }
    for (unsigned k = 0; k < njoin; k++)
        TP_CHECK(pthread_join(join[k], NULL) == 0);
    joinable_done += (int)njoin;
    free(join);
    /* Detached threads: all have posted, but may still be exiting (their
     * destructors run after the post). Wait until every destructor ran. */
    for (int spins = 0; __atomic_load_n(&dtor_frees, __ATOMIC_RELAXED) < nthreads; spins++) {
        TP_CHECK(spins < 60000);
        usleep(500);
    }
    unsigned long live_bytes = 0;
    for (unsigned k = 0; k < pool_n; k++)
        live_bytes += pool_size[k];
    /* Distinct tids: the kernel may hand a dead thread's tid to a new one. */
    qsort(tids, nthreads, sizeof *tids, cmp_int);
    unsigned distinct = 0;
    for (unsigned k = 0; k < nthreads; k++)
        distinct += k == 0 || tids[k] != tids[k - 1];
    printf("result threads=%u alive=%u joined=%d destructors=%lu ok\n", nthreads, alive,
           joinable_done, dtor_frees);
    printf("expect allocs=%lu failed=0 frees=%lu resizes=0 bytes=%lu live_blocks=%u "
           "live_bytes=%lu tids=%u\n",
           allocs, frees, bytes, pool_n, live_bytes, distinct);
    return 0;
}
