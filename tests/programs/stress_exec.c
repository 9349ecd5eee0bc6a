/* stress_exec.c — `stress_exec DEPTH`: a chain of DEPTH+1 program images.
 * Each image allocates blocks of its own (how many depends on its depth),
 * frees some, then starts the next image with DEPTH-1 by turns: exec in the
 * same process (depth % 3 == 0), fork then exec (1), or posix_spawn, which
 * is vfork-like and runs no fork handlers (2). A parent waits for its child
 * and allocates once more. Each image prints, prefixed "dDEPTH ":
 *   user lo=.. hi=..     its USER range (ASLR: differs per image)
 *   expect allocs=N ...  its own account, for tests/lib.sh's checker
 *   result ...           the same every run */
#include "testprog.h"

#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

static unsigned long allocs, frees, bytes, live_blocks, live_bytes;
static char prefix[16];

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n = snprintf(line, sizeof line, "%s", prefix);
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    line[n++] = '\n';
    if (write(1, line, (size_t)n) != n)
        _exit(7);
}

static void *keep[64];
static unsigned nkeep;

USER static void work(int depth, unsigned salt)
{
    unsigned count = 3 + (unsigned)depth * 2 + salt;
    for (unsigned i = 0; i < count; i++) {
        size_t size = 1000u * (unsigned)(depth + 1) + i + salt * 50u;
        char *p = malloc(size);
        TP_CHECK(p);
        memset(p, 'a' + depth, size);
        allocs++;
        bytes += size;
        if (i % 2 && nkeep < 64) {
            keep[nkeep++] = p;
            live_blocks++;
            live_bytes += size;
        } else {
            TP_CHECK(p[size - 1] == 'a' + depth);
            free(p);
            frees++;
        }
    }
}

static void expect(void)
{
    say("user lo=%p hi=%p", (void *)__start_tp_user, (void *)__stop_tp_user);
    say("expect allocs=%lu failed=0 frees=%lu resizes=0 bytes=%lu live_blocks=%lu "
        "live_bytes=%lu",
        allocs, frees, bytes, live_blocks, live_bytes);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: stress_exec DEPTH\n");
        return 2;
    }
    int depth = atoi(argv[1]);
    snprintf(prefix, sizeof prefix, "d%d ", depth);
    work(depth, 0);
    if (depth <= 0) {
        expect();
        say("result last");
        return 0;
    }
    char next[16];
    snprintf(next, sizeof next, "%d", depth - 1);
    char *args[] = { argv[0], next, NULL };
    int status = 0;
    switch (depth % 3) {
    case 0:
        expect();
        say("result exec");
        execv("/proc/self/exe", args);
        perror("stress_exec: execv");
        return 3;
    case 1: {
        pid_t pid = fork();
        TP_CHECK(pid >= 0);
        if (pid == 0) {
            execv("/proc/self/exe", args);
            _exit(127);
        }
        TP_CHECK(waitpid(pid, &status, 0) == pid);
        break;
    }
    default: {
        pid_t pid;
        int rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ);
        TP_CHECK(rc == 0);
        TP_CHECK(waitpid(pid, &status, 0) == pid);
        break;
    }
    }
    work(depth, 1);
    expect();
    say("result %s child=%s", depth % 3 == 1 ? "fork+exec" : "posix_spawn",
        WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "FAILED");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
}
