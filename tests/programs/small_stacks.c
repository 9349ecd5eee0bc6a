/* small_stacks.c — threads with the smallest stacks a program may ask for
 * (PTHREAD_STACK_MIN, 32 KiB, 64 KiB) allocate and free, one after another.
 * glibc takes a library's static TLS out of every thread's stack: a shim
 * with a large one makes such a pthread_create fail (EINVAL), and a thread
 * that does start has less stack than it asked for. Every creation must
 * succeed, and each thread's calls are recorded like any others. */
#include "testprog.h"

#include <limits.h>
#include <malloc.h>

#define PER_THREAD 50

static USER void *work(void *arg)
{
    size_t base = (size_t)(uintptr_t)arg;
    void *keep = NULL;
    for (size_t i = 0; i < PER_THREAD; i++) {
        size_t size = base + i;
        void *p = malloc(size);
        TP_CHECK(p);
        tp_alloc("malloc", p, size, malloc_usable_size(p), NULL);
        if (i == PER_THREAD - 1) {
            keep = p;              /* one block a thread stays live */
        } else {
            free(p);
            tp_free("free", p, NULL);
        }
    }
    return keep;
}

int main(void)
{
    tp_range();
    const size_t sizes[] = { PTHREAD_STACK_MIN, 32 << 10, 64 << 10 };
    for (unsigned k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        pthread_attr_t attr;
        pthread_t th;
        pthread_attr_init(&attr);
        TP_CHECK(pthread_attr_setstacksize(&attr, sizes[k]) == 0);
        int rc = pthread_create(&th, &attr, work, (void *)(uintptr_t)(16 + 8 * k));
        if (rc) {
            fprintf(stderr, "small_stacks: pthread_create with a %zu-byte stack: %s\n",
                    sizes[k], strerror(rc));
            return 1;
        }
        pthread_join(th, NULL);
        pthread_attr_destroy(&attr);
    }
    tp_expect();
    tp_flush();
    return 0;
}
