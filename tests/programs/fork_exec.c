/* fork_exec.c — `fork_exec TARGET [MODE]`: allocates, forks, and the child
 * execs TARGET (tests/programs/exec_target) with known arguments at once;
 * the parent waits and allocates some more. The exec'd image must get its
 * own capture with its own argv and exe. MODE, what the child does instead:
 *   alloc    allocates 4321 bytes (kept) before the exec
 *   noshim   execs with LD_PRELOAD removed from the environment
 *   execvp   execs through execvp (glibc's execve call inside it is not
 *            the shim's: libuv's uv_spawn, Vere's king starting its serf)
 *   exit     exits without exec */
#include "testprog.h"

#include <malloc.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

/* The child's part: one of the modes above. */
static void child(const char *target, const char *mode)
{
    char *args[] = { (char *)target, "7", "4000", "with space", NULL };
    if (!strcmp(mode, "exit"))
        exit(0);
    if (!strcmp(mode, "alloc"))
        TP_CHECK(malloc(4321));
    if (!strcmp(mode, "noshim")) {
        static char *env[64];
        size_t n = 0;
        for (char **e = environ; *e && n < 63; e++)
            if (strncmp(*e, "LD_PRELOAD=", 11))
                env[n++] = *e;
        execve(target, args, env);
    } else if (!strcmp(mode, "execvp")) {
        execvp(target, args);
    } else {
        execv(target, args);
    }
    _exit(127);
}

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
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: fork_exec TARGET [alloc|noshim|execvp|exit]\n");
        return 2;
    }
    tp_reset("parent ");
    tp_range();
    work(5);
    tp_flush();
    pid_t pid = fork();
    TP_CHECK(pid >= 0);
    if (pid == 0)
        child(argv[1], argc == 3 ? argv[2] : "");
    int status;
    TP_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    work(3);
    tp_note("pid=%d child=%d", (int)getpid(), (int)pid);
    tp_expect();
    tp_flush();
    return 0;
}
