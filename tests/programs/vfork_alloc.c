/* vfork_alloc.c — `vfork_alloc MODE ROUNDS`: allocates, then vforks ROUNDS
 * times; each child allocates (7001 and 7002 bytes, freeing one) and then,
 * by MODE, execs /bin/true ("exec"), calls _exit ("_exit") or exit ("exit":
 * runs the parent's atexit handlers and destructors, the profiler's
 * included, in the parent's memory). The parent waits and allocates more.
 * What a child does is formally undefined after vfork, and happens: the
 * parent's capture must hold exactly the parent's calls (the "ev" lines
 * and the expect line: the child logs nothing), and no END record before
 * the parent's last event. stdout: "pid=N", the testprog lines. */
#include "testprog.h"

#include <malloc.h>
#include <sys/wait.h>

USER static void parent_work(int n, size_t base)
{
    void *keep = NULL;
    for (int i = 0; i < n; i++) {
        void *p = malloc(base + (size_t)i);
        TP_CHECK(p);
        tp_alloc("malloc", p, base + (size_t)i, malloc_usable_size(p), NULL);
        if (i % 2) {
            free(p);
            tp_free("free", p, NULL);
        } else {
            keep = p;
        }
    }
    (void)keep;                    /* the even ones stay live */
}

/* The child's calls: through the shim's hooks, in the parent's memory. */
USER static void child_work(void)
{
    void *volatile a = malloc(7001);
    void *volatile b = malloc(7002);
    if (!a || !b)
        _exit(4);
    free(b);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: vfork_alloc exec|_exit|exit ROUNDS\n");
        return 2;
    }
    const char *mode = argv[1];
    int rounds = atoi(argv[2]);
    if (strcmp(mode, "exec") && strcmp(mode, "_exit") && strcmp(mode, "exit")) {
        fprintf(stderr, "vfork_alloc: unknown mode %s\n", mode);
        return 2;
    }
    tp_reset("");
    tp_range();
    tp_note("pid=%d", (int)getpid());
    for (int r = 0; r < rounds; r++) {
        parent_work(4, 900 + 16 * (size_t)r);
        fflush(stdout);            /* an exit() in the child flushes stdio */
        pid_t pid = vfork();
        TP_CHECK(pid >= 0);
        if (pid == 0) {
            child_work();
            if (mode[0] == 'e' && mode[1] == 'x' && mode[2] == 'e') {
                execl("/bin/true", "true", (char *)NULL);
                _exit(127);
            }
            if (mode[0] == '_')
                _exit(0);
            exit(0);
        }
        int status;
        TP_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
                 WEXITSTATUS(status) == 0);
    }
    parent_work(3, 1500);
    tp_expect();
    tp_flush();
    return 0;
}
