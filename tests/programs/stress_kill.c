/* stress_kill.c — `stress_kill HOW SEED`: four threads malloc, calloc,
 * realloc and free at random (seeded), and after each call returns write one
 * line about it to stdout — a pipe, in one write(2) of less than PIPE_BUF,
 * so the line is whole and the call had returned before it:
 *   a TID ADDR SIZE        malloc          c TID ADDR SIZE     calloc
 *   r TID OLD NEW SIZE     realloc         f TID ADDR          free
 * A fifth thread waits until the workers have made a number of calls that
 * SEED picks (500..20499), then ends the process, HOW:
 *   kill   SIGKILL to itself       segv   a store through NULL (SIGSEGV)
 *   abort  abort()                 _exit  _exit(7)
 *   exit   exit(0): atexit handlers run while the workers keep going
 * The workers are in the middle of whatever they were doing. First line:
 * "user lo=.. hi=.." (the USER range). Stops by itself after 60 s (exit 5). */
#include "testprog.h"

#include <signal.h>
#include <time.h>

#define WORKERS 4
#define HELD 24

static unsigned long calls;        /* atomic: calls made by all workers */
static pthread_barrier_t start;    /* the workers begin together */

static void say(const char *buf, int n)
{
    if (n <= 0 || write(1, buf, (size_t)n) != n)
        _exit(4);
}

USER static void *worker(void *arg)
{
    uint64_t s = (uint64_t)(uintptr_t)arg;
    void *held[HELD] = { 0 };
    char line[128];
    int tid = gettid();
    pthread_barrier_wait(&start);
    for (;;) {
        unsigned k = (unsigned)(tp_rand(&s) % HELD);
        unsigned op = (unsigned)(tp_rand(&s) % 10);
        size_t size = 8 + tp_rand(&s) % (op == 9 ? 200000 : 2000);
        if (!held[k]) {
            if (op < 6) {
                held[k] = malloc(size);
                TP_CHECK(held[k]);
                say(line, snprintf(line, sizeof line, "a %d %#lx %zu\n", tid,
                                   (unsigned long)(uintptr_t)held[k], size));
            } else {
                held[k] = calloc(1, size);
                TP_CHECK(held[k]);
                say(line, snprintf(line, sizeof line, "c %d %#lx %zu\n", tid,
                                   (unsigned long)(uintptr_t)held[k], size));
            }
        } else if (op < 4) {
            uintptr_t old = (uintptr_t)held[k];
            void *q = realloc(held[k], size);
            TP_CHECK(q);
            held[k] = q;
            say(line, snprintf(line, sizeof line, "r %d %#lx %#lx %zu\n", tid,
                               (unsigned long)old, (unsigned long)(uintptr_t)q, size));
        } else {
            uintptr_t a = (uintptr_t)held[k];
            free(held[k]);
            held[k] = NULL;
            say(line, snprintf(line, sizeof line, "f %d %#lx\n", tid, (unsigned long)a));
        }
        __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

struct death {
    const char *how;
    unsigned long after;
};

static void *reaper(void *arg)
{
    struct death *d = arg;
    time_t deadline = time(NULL) + 60;
    while (__atomic_load_n(&calls, __ATOMIC_RELAXED) < d->after) {
        if (time(NULL) > deadline)
            _exit(5);
        struct timespec ts = { 0, 50000 };
        nanosleep(&ts, NULL);
    }
    if (!strcmp(d->how, "kill"))
        kill(getpid(), SIGKILL);
    else if (!strcmp(d->how, "segv"))
        *(volatile int *)(uintptr_t)(d->after / (d->after + 1)) = 1;   /* address 0 */
    else if (!strcmp(d->how, "abort"))
        abort();
    else if (!strcmp(d->how, "_exit"))
        _exit(7);
    else
        exit(0);
    _exit(6);
}

int main(int argc, char **argv)
{
    static const char *const hows[] = { "kill", "segv", "abort", "_exit", "exit" };
    int ok = argc == 3;
    for (int i = 0; ok && i < 5; i++)
        if (!strcmp(argv[1], hows[i]))
            break;
        else if (i == 4)
            ok = 0;
    if (!ok) {
        fprintf(stderr, "usage: stress_kill kill|segv|abort|_exit|exit SEED\n");
        return 2;
    }
    uint64_t seed = strtoull(argv[2], NULL, 10) * 0x9e3779b97f4a7c15ull + 1;
    static struct death d;
    d.how = argv[1];
    d.after = 500 + tp_rand(&seed) % 20000;
    char line[96];
    say(line, snprintf(line, sizeof line, "user lo=%p hi=%p\n", (void *)__start_tp_user,
                       (void *)__stop_tp_user));
    pthread_t th;
    TP_CHECK(pthread_barrier_init(&start, NULL, WORKERS) == 0);
    for (int i = 0; i < WORKERS; i++)
        TP_CHECK(pthread_create(&th, NULL, worker, (void *)(uintptr_t)(tp_rand(&seed) | 1)) == 0);
    TP_CHECK(pthread_create(&th, NULL, reaper, &d) == 0);
    pthread_join(th, NULL);        /* never returns: the reaper ends us */
    return 6;
}
