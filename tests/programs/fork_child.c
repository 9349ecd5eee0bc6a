/* fork_child.c — fork without exec. The parent allocates before and after
 * the fork, the child allocates its own blocks (and frees one it inherited)
 * and exits. Each process logs its own events with a "parent " / "child "
 * prefix, so the test can check that each capture holds exactly its own. */
#include "testprog.h"

#include <malloc.h>
#include <sys/wait.h>

static void *held[64];

USER static void work(int base, int n, int keep)
{
    for (int i = 0; i < n; i++) {
        size_t size = (size_t)base + (size_t)i;
        void *p = malloc(size);
        TP_CHECK(p);
        tp_alloc("malloc", p, size, malloc_usable_size(p), NULL);
        if (i < keep) {
            held[i] = p;
        } else {
            tp_free("free", p, NULL);
            free(p);
        }
    }
}

int main(void)
{
    tp_reset("parent ");
    tp_range();
    work(3000, 40, 8);
    tp_flush();                            /* nothing unwritten crosses the fork */

    pid_t pid = fork();
    TP_CHECK(pid >= 0);
    if (pid == 0) {
        tp_reset("child ");
        tp_range();
        tp_note("pid=%d ppid=%d", (int)getpid(), (int)getppid());
        free(held[0]);                     /* the parent's block: not the child's doing */
        work(5000, 25, 5);
        tp_expect();
        tp_flush();
        exit(0);
    }
    int status;
    TP_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    work(7000, 30, 3);
    tp_note("pid=%d child=%d", (int)getpid(), (int)pid);
    tp_expect();
    tp_flush();
    return 0;
}
