/* sigkill_prog.c — `sigkill_prog PROGRESS`: 4 threads allocate and free
 * until killed. After each malloc returns (and after each free returns) a
 * thread appends one line to PROGRESS ("a TID ADDR SIZE" / "f TID ADDR") in
 * a single O_APPEND write, so every line in the file is an event the shim
 * had finished recording before the SIGKILL. Stops by itself after 60 s. */
#include "testprog.h"

#include <fcntl.h>
#include <time.h>

#define NTHREADS 4
#define HELD 32

static int progress_fd;
static time_t deadline;

static void say(const char *buf, int n)
{
    if (write(progress_fd, buf, (size_t)n) != n)
        _exit(4);
}

USER static void *worker(void *arg)
{
    void *held[HELD] = { 0 };
    char line[96];
    int tid = gettid();
    for (unsigned long i = 0; time(NULL) < deadline; i++) {
        unsigned slot = (unsigned)(i % HELD);
        if (held[slot]) {
            uintptr_t a = (uintptr_t)held[slot];
            free(held[slot]);
            say(line, snprintf(line, sizeof line, "f %d %#lx\n", tid, (unsigned long)a));
        }
        size_t size = 100 + (size_t)(i % 200) + 1000 * (size_t)(intptr_t)arg;
        held[slot] = malloc(size);
        TP_CHECK(held[slot]);
        say(line, snprintf(line, sizeof line, "a %d %#lx %zu\n", tid,
                           (unsigned long)(uintptr_t)held[slot], size));
        if (i % 8 == 7) {                  /* keep the files small until the kill */
            struct timespec ts = { 0, 200000 };
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: sigkill_prog PROGRESS\n");
        return 2;
    }
    progress_fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_TRUNC, 0644);
    TP_CHECK(progress_fd >= 0);
    tp_range();
    tp_flush();
    deadline = time(NULL) + 60;
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        TP_CHECK(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    return 0;
}
