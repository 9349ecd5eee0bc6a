/* fork_exec.c — `fork_exec TARGET`: allocates, forks, and the child execs
 * TARGET (tests/programs/exec_target) with known arguments at once; the
 * parent waits and allocates some more. The exec'd image must get its own
 * capture with its own argv and exe. */
#include "testprog.h"

#include <malloc.h>
#include <sys/wait.h>

USER static void work(int n)
{
    for (int i = 0; i < n; i++) {
        void *p = malloc(900 + (size_t)i);
        TP_CHECK(p);
        tp_alloc("malloc", p, 900 + (size_t)i, malloc_usable_size(p), NULL);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fork_exec TARGET\n");
        return 2;
    }
    tp_reset("parent ");
    tp_range();
    work(5);
    tp_flush();
    pid_t pid = fork();
    TP_CHECK(pid >= 0);
    if (pid == 0) {
        char *args[] = { argv[1], "7", "4000", "with space", NULL };
        execv(argv[1], args);
        _exit(127);
    }
    int status;
    TP_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    work(3);
    tp_note("pid=%d child=%d", (int)getpid(), (int)pid);
    tp_expect();
    tp_flush();
    return 0;
}
