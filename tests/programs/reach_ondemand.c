/* reach_ondemand — a program scanned while it runs (`vheap-analyze ctl
 * reach`), then freeing what the scan found lost. Block sizes say what
 * each is when the scan looks:
 *   4001 reachable (a global points to it), 4002 definitely lost,
 *   4003 definitely lost and pointing to 4004, indirectly lost,
 *   4005 lost: its only pointer is on a page the program mprotected away.
 * Around them, what the scan must step over: a 64 GiB PROT_NONE
 * reservation (Vere's loom), a guard page inside a mapping and a pointer
 * into unmapped memory. (A process forking during the scan is reach_fate's
 * `fork`: the scan at exit is the same code.)
 * The lost blocks' addresses are kept masked (no pointer the scan could
 * read), so that the program frees them once the file `go` exists: at
 * exit only 4001 is live. It prints "ready PID" once the blocks are made,
 * and allocates meanwhile (the shim takes requests at its periodic tick,
 * which allocations drive). `reach_ondemand exit` instead exits from
 * another thread (once the file `exit-now` exists) while the thread that
 * awaits `go` may be blocked in a scan: the exit must not wait for, nor
 * be changed by, the scan (status 5). It holds a million more blocks, so
 * that its scan lasts long enough for a test to catch (about a second). */
#include <pthread.h>
#include <sys/mman.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MASK 0x5a5a5a5a5a5a5a5aull

static void *volatile keep;        /* 4001: reachable */
static uint64_t hidden[2];         /* 4002, 4003: masked */

static __attribute__((noinline)) uint64_t make(size_t size, void *fill)
{
    void **p = malloc(size);
    if (!p)
        exit(1);
    memset(p, 0, size);
    p[0] = fill;
    return (uintptr_t)p ^ MASK;
}

static void *volatile churn;       /* kept from the optimizer's reach */

static void wait_go(void)
{
    struct timespec ms = { 0, 1000000 };
    while (access("go", F_OK) != 0) {
        churn = malloc(64);        /* drives the shim's tick */
        free(churn);
        nanosleep(&ms, NULL);
    }
}

static void *volatile wild = (void *)0x10; /* into unmapped memory */

/* What the scan must step over (above). */
static void hazards(void)
{
    const size_t page = 4096;
    if (mmap(NULL, 64ull << 30, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
             -1, 0) == MAP_FAILED)
        exit(1);
    char *m = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        exit(1);
    *(void **)m = malloc(4005);
    mprotect(m, page, PROT_NONE);           /* the pointer's page, away */
    mprotect(m + page, page, PROT_NONE);    /* a guard page */
    (void)wild;
}

static void *exiter(void *arg)
{
    (void)arg;
    while (access("exit-now", F_OK) != 0) {
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    exit(5);
}

int main(int argc, char **argv)
{
    keep = malloc(4001);
    uint64_t inner = make(4004, NULL);
    hidden[0] = make(4002, NULL);
    hidden[1] = make(4003, (void *)(uintptr_t)(inner ^ MASK));
    inner = 0;
    for (int i = 0; i < 100; i++) { /* registers and stack: no stale copies */
        churn = malloc(32 + (size_t)i);
        free(churn);
    }
    if (argc > 1 && !strcmp(argv[1], "exit")) {
        static void *many[1 << 20];
        for (size_t i = 0; i < sizeof many / sizeof *many; i++)
            many[i] = malloc(64);
        pthread_t t;
        if (pthread_create(&t, NULL, exiter, NULL) != 0)
            return 1;
    }
    hazards();
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    wait_go();
    void **b = (void **)(uintptr_t)(hidden[1] ^ MASK);
    free(b[0]);
    free(b);
    free((void *)(uintptr_t)(hidden[0] ^ MASK));
    return 0;
}
