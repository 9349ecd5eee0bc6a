/* stress_fork.c — `stress_fork [FORKS]`: fork in a loop while 4 other
 * threads allocate and free without pause (so forks land while they are
 * inside malloc and inside the profiler), from the main thread and from a
 * second forking thread. Each child allocates its own blocks, frees some,
 * checks them, frees a block it inherited, and leaves by exit(), _exit() or
 * returning from main's path by turns. A child prints
 *   expect pid=PID exit=HOW allocs=N failed=0 frees=N resizes=0 bytes=N live_blocks=N live_bytes=N
 * (its own account, for tests/lib.sh's checker) in one write; the parent
 * checks every child's status and prints one "result" line. */
#include "testprog.h"

#include <fcntl.h>
#include <time.h>
#include <sys/wait.h>

#define BUSY_THREADS 4

static volatile int stop;
static void *inherited[2];

USER static void *busy(void *arg)
{
    void *held[16] = { 0 };
    for (unsigned long i = 0; !stop; i++) {
        unsigned k = (unsigned)(i % 16);
        free(held[k]);
        held[k] = malloc(32 + (i * 37) % 3000);
        TP_CHECK(held[k]);
        if (i % 64 == 0) {
            void *r = realloc(held[k], 5000 + i % 100);
            TP_CHECK(r);
            held[k] = r;
        }
        if (i % 16 == 15) {        /* bursts: keeps the parent's capture small */
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, NULL);
        }
    }
    for (unsigned k = 0; k < 16; k++)
        free(held[k]);
    return arg;
}

/* The child's whole life; never returns. */
USER static void child(unsigned n, int how)
{
    unsigned long allocs = 0, frees = 0, bytes = 0, live_bytes = 0, live_blocks = 0;
    unsigned count = 5 + n % 20;
    void *b[32];
    for (unsigned i = 0; i < count; i++) {
        size_t size = 100 + n * 3 + i;
        b[i] = malloc(size);
        if (!b[i])
            _exit(5);
        memset(b[i], (int)i, size);
        allocs++;
        bytes += size;
    }
    for (unsigned i = 0; i < count; i++) {
        if (((unsigned char *)b[i])[0] != (unsigned char)i)
            _exit(6);
        if (i % 3 == 0) {
            live_blocks++;
            live_bytes += 100 + n * 3 + i;
        } else {
            free(b[i]);
            frees++;
        }
    }
    free(inherited[n % 2]);        /* the parent's: not in our account */
    char line[256];
    int len = snprintf(line, sizeof line,
                       "expect pid=%d exit=%d allocs=%lu failed=0 frees=%lu resizes=0 bytes=%lu "
                       "live_blocks=%lu live_bytes=%lu user=%p:%p\n",
                       (int)getpid(), how, allocs, frees, bytes, live_blocks, live_bytes,
                       (void *)__start_tp_user, (void *)__stop_tp_user);
    if (write(1, line, (size_t)len) != len)
        _exit(7);
    if (how == 0)
        exit(0);
    _exit(0);
}

static unsigned long forks_done, children_ok;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static void fork_some(unsigned from, unsigned n)
{
    for (unsigned i = from; i < from + n; i++) {
        pid_t pid = fork();
        TP_CHECK(pid >= 0);
        if (pid == 0)
            child(i, (int)(i % 2));
        int status;
        TP_CHECK(waitpid(pid, &status, 0) == pid);
        pthread_mutex_lock(&count_lock);
        forks_done++;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            children_ok++;
        else
            fprintf(stderr, "stress_fork: child %u: status %#x\n", i, status);
        pthread_mutex_unlock(&count_lock);
    }
}

static void *forker(void *arg)
{
    unsigned n = (unsigned)(uintptr_t)arg;
    fork_some(100000, n);
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned forks = argc > 1 ? (unsigned)atoi(argv[1]) : 100;
    inherited[0] = malloc(1000);
    inherited[1] = malloc(2000);
    TP_CHECK(inherited[0] && inherited[1]);
    pthread_t th[BUSY_THREADS + 1];
    for (int i = 0; i < BUSY_THREADS; i++)
        TP_CHECK(pthread_create(&th[i], NULL, busy, NULL) == 0);
    TP_CHECK(pthread_create(&th[BUSY_THREADS], NULL, forker,
                            (void *)(uintptr_t)(forks / 4)) == 0);
    fork_some(0, forks - forks / 4);
    TP_CHECK(pthread_join(th[BUSY_THREADS], NULL) == 0);
    stop = 1;
    for (int i = 0; i < BUSY_THREADS; i++)
        TP_CHECK(pthread_join(th[i], NULL) == 0);
    free(inherited[0]);
    free(inherited[1]);
    printf("result forks=%lu children_ok=%lu\n", forks_done, children_ok);
    return children_ok == forks ? 0 : 1;
}
