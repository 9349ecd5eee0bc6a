/* exec_target.c — a small program other tests start (after fork+exec, with
 * odd env vars): `exec_target N BASE [args...]` allocates N blocks of sizes
 * BASE..BASE+N-1, frees every other one, and logs it all with the prefix
 * "target ". The extra args are only there to be found in the header. */
#include "testprog.h"

#include <malloc.h>

USER static void work(int n, size_t base)
{
    for (int i = 0; i < n; i++) {
        void *p = malloc(base + (size_t)i);
        TP_CHECK(p);
        tp_alloc("malloc", p, base + (size_t)i, malloc_usable_size(p), NULL);
        if (i % 2) {
            tp_free("free", p, NULL);
            free(p);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: exec_target N BASE [args...]\n");
        return 2;
    }
    tp_reset("target ");
    tp_range();
    tp_note("pid=%d ppid=%d", (int)getpid(), (int)getppid());
    work(atoi(argv[1]), (size_t)atol(argv[2]));
    tp_expect();
    tp_flush();
    return 0;
}
