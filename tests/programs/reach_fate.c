/* reach_fate — what the reachability scan at exit meets in a real process:
 * memory mprotected away, a guard page, a huge sparse mapping, a thread
 * blocked in the kernel and one running, each holding the only pointer to
 * a block on its stack, and a thread that forks children while the scan
 * runs (`reach_fate fork`). Each block's size says where its pointer
 * lives (below). Without `fork`, a SIGCHLD handler notes any signal in the
 * file `sigchld` (the scan's child must send none). The exit status is 3,
 * which the scan must not change. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define SPARSE (64ull << 30)

enum {                             /* block sizes: where the pointer lives */
    IN_SPARSE = 1001,              /* one touched page of a 64 GiB mapping: reachable */
    IN_PROT_NONE = 1002,           /* a page mprotected away: not read, lost */
    IN_BLOCKED = 1003,             /* the stack of a thread blocked in read(): reachable */
    IN_RUNNING = 1004,             /* the stack of a thread spinning: reachable */
    NOWHERE = 1005,                /* lost */
    IN_MERGED = 1006,              /* a mapping of the program's own that the
                                      kernel merged with a block glibc mapped
                                      alone: reachable */
    IN_FREED = 1007,               /* a freed block's old contents: lost */
};

/* A page of the program's own right below a block glibc mapped for itself:
 * same protection and flags, so /proc/self/maps lists the two as one
 * mapping. Returns the page, or NULL if the kernel would not place it. */
static void **beside_big_block(void)
{
    char *big = malloc(1 << 20);   /* above the mmap threshold: its own mapping */
    uintptr_t chunk = (uintptr_t)big - 16;
    if (!big || (chunk & 4095))
        return NULL;
    void **page = mmap((void *)(chunk - 4096), 4096, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    return page == MAP_FAILED ? NULL : page;
}

static int ready_pipe[2], block_pipe[2];
static volatile int stop;

static void on_chld(int sig)
{
    (void)sig;
    int fd = open("sigchld", O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0)
        close(fd);
}

static void *blocked(void *arg)
{
    void *volatile mine = malloc(IN_BLOCKED);
    char c;
    (void)arg;
    write(ready_pipe[1], "b", 1);
    read(block_pipe[0], &c, 1);    /* never returns: the pipe stays empty */
    return mine;
}

static void *running(void *arg)
{
    void *volatile mine = malloc(IN_RUNNING);
    (void)arg;
    write(ready_pipe[1], "r", 1);
    while (!stop)
        ;
    return mine;
}

/* Forks and reaps children all the while (the scan's own clone must not
 * be among what it reaps). */
static void *forker(void *arg)
{
    (void)arg;
    write(ready_pipe[1], "f", 1);
    for (;;) {
        pid_t p = fork();
        if (p == 0)
            _exit(0);
        if (p > 0)
            waitpid(p, NULL, 0);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int forks = argc > 1 && !strcmp(argv[1], "fork");
    struct sigaction sa = { .sa_handler = on_chld };
    if (!forks)
        sigaction(SIGCHLD, &sa, NULL);
    if (pipe(ready_pipe) || pipe(block_pipe))
        return 1;

    void **sparse = mmap(NULL, SPARSE, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void **hidden = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (sparse == MAP_FAILED || hidden == MAP_FAILED)
        return 1;
    sparse[SPARSE / sizeof *sparse / 2] = malloc(IN_SPARSE);
    hidden[0] = malloc(IN_PROT_NONE);
    mprotect(hidden, 4096, PROT_NONE);              /* the pointer's page */
    mprotect((char *)hidden + 4096, 4096, PROT_NONE); /* and a guard after it */
    void **merged = beside_big_block();
    if (!merged)
        return 1;
    merged[7] = malloc(IN_MERGED);
    void *volatile *freed = malloc(64);
    freed[2] = malloc(IN_FREED);
    free((void *)freed);
    void *volatile nowhere = malloc(NOWHERE);
    nowhere = NULL;
    (void)nowhere;

    pthread_t t[3];
    void *(*fn[3])(void *) = { blocked, running, forker };
    char c;
    for (int i = 0; i < 2 + forks; i++) {
        pthread_create(&t[i], NULL, fn[i], NULL);
        read(ready_pipe[0], &c, 1);
    }
    usleep(20000);                 /* the blocked thread is inside read() */
    sparse = hidden = merged = NULL;
    freed = NULL;
    exit(3);
}
