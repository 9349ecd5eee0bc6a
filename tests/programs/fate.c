/* fate.c — programs that do what real programs do to a preloaded shim, one
 * mode each (tests/integration/fate_*.sh run them with and without it). The
 * shim must never change such a program's fate: each mode prints what the
 * program knows it did, and exits 0 only if everything it relies on held.
 *
 *   longjmp N     Vere's timer: a 1 ms interval timer whose handler
 *                 siglongjmps to a sigsetjmp in the main loop, which
 *                 allocates and frees meanwhile in its own arena (a custom
 *                 heap, vheap.h); runs until N jumps. Ticks after the
 *                 N-th return at once (the loop has ended: a jump then
 *                 would land in it again); the timer runs 3 ticks more
 *                 before it is stopped. Prints "returned=R freed=F
 *                 jumps=J late=L" (R: arena allocations whose report
 *                 returned to the program, sizes 7000..7099).
 *   longjmp-raw N the same with the handler installed by a raw rt_sigaction
 *                 system call, which the shim cannot hold back.
 *   restore       a handler read back with a raw rt_sigaction and given
 *                 back through sigaction runs once when raised.
 *   exitsig T     a SIGTERM handler that calls exit(0) while T threads
 *                 allocate (the caller sends SIGTERM).
 *   cancel        pthread_cancel of a worker that only calls malloc/free:
 *                 neither is a cancellation point, so it must live on.
 *   closeall      closes every descriptor above 2, opens files (taking the
 *                 lowest numbers), allocates for a while (RSS samples,
 *                 capture growth), forks a child that allocates, then
 *                 checks each of its files is still itself and intact.
 *   nofile        opens /dev/null until EMFILE; prints "opened=N".
 *   fsize N       allocates and frees N blocks (a large capture).
 *   vlimit        allocates 1 MiB blocks (touched) until malloc fails;
 *                 prints "mib=N".
 *   rawfork N     a child made by syscall(SYS_fork) allocates N blocks of
 *                 5003 bytes while the parent allocates 2N of 5001 bytes.
 *   usable N      malloc_usable_size on N blocks: must be >= their size. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "preload/vheap.h"

#define FAIL(...) do { fprintf(stderr, "fate: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

/* ---- longjmp ------------------------------------------------------------- */
static sigjmp_buf jump_to;
static volatile sig_atomic_t jumps, jump_want, late;

/* Only the handler counts and decides: a tick that comes after the N-th
 * jump (the timer runs on until the loop stops it, and on a loaded machine
 * a tick may be late) must not jump back into a loop that has ended. */
static void on_timer(int sig)
{
    (void)sig;
    if (jumps >= jump_want) {
        late++;
        return;
    }
    jumps++;
    siglongjmp(jump_to, 1);
}

/* The main loop allocates from an arena of its own, as Vere's loom is:
 * glibc's malloc is not safe to leave by longjmp (its arena lock), a loom
 * with no locks is. Each allocation is reported through vheap.h, where
 * under the profiler most of its time goes. */
#define SLOTS 64
#define SLOT_SIZE 8192
static char arena[SLOTS][SLOT_SIZE] __attribute__((aligned(16)));

/* The handler installed behind the shim's back: a raw rt_sigaction, with
 * the restorer glibc gives its own (read back from another signal). */
struct kernel_act {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    uint64_t mask;
};
#define K_SA_RESTORER 0x04000000ul

static void dummy(int sig)
{
    (void)sig;
}

static void install_raw(int sig, void (*fn)(int))
{
    struct sigaction d;
    memset(&d, 0, sizeof d);
    d.sa_handler = dummy;
    sigaction(SIGUSR2, &d, NULL);
    struct kernel_act k, a;
    if (syscall(SYS_rt_sigaction, SIGUSR2, NULL, &k, 8) != 0 || !k.restorer)
        FAIL("rt_sigaction query");
    memset(&a, 0, sizeof a);
    a.handler = fn;
    a.flags = K_SA_RESTORER;
    a.restorer = k.restorer;
    if (syscall(SYS_rt_sigaction, sig, &a, NULL, 8) != 0)
        FAIL("rt_sigaction");
}

/* An action read with a raw rt_sigaction and given back through
 * sigaction (what a library saving and restoring handlers may do): under
 * the shim the kernel's handler is its trampoline; given back, the
 * program's handler must still run, once. */
static volatile sig_atomic_t restored_runs;

static void on_restored(int sig)
{
    (void)sig;
    restored_runs++;
}

static int mode_restore(void)
{
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_handler = on_restored;
    if (sigaction(SIGUSR2, &a, NULL) != 0)
        FAIL("sigaction");
    struct kernel_act k;
    if (syscall(SYS_rt_sigaction, SIGUSR2, NULL, &k, 8) != 0)
        FAIL("rt_sigaction query");
    memset(&a, 0, sizeof a);
    a.sa_handler = k.handler;
    a.sa_flags = SA_RESTART;
    if (sigaction(SIGUSR2, &a, NULL) != 0)
        FAIL("sigaction (given back)");
    raise(SIGUSR2);
    printf("restored_runs=%d\n", (int)restored_runs);
    return restored_runs == 1 ? 0 : 1;
}

static int mode_longjmp(long want, int raw)
{
    static volatile size_t slot_size[SLOTS];
    volatile long returned = 0, freed = 0;
    volatile unsigned i = 0;
    int heap = vheap_heap_create("arena", 0, arena, sizeof arena);
    if (vheap_enabled() && heap <= 0)
        FAIL("vheap_heap_create");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_timer;
    sigemptyset(&sa.sa_mask);
    if (raw)
        install_raw(SIGALRM, on_timer);
    else if (sigaction(SIGALRM, &sa, NULL) != 0)
        FAIL("sigaction");
    struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
    jump_want = (sig_atomic_t)want;
    if (setitimer(ITIMER_REAL, &it, NULL) != 0)
        FAIL("setitimer");
    sigsetjmp(jump_to, 1);         /* back here after every jump, mask restored */
    while (jumps < want) {
        unsigned k = i++ % SLOTS;
        if (slot_size[k]) {
            slot_size[k] = 0;
            vheap_free(heap, arena[k]);
            freed++;
        }
        size_t size = 7000 + i % 100;
        slot_size[k] = size;
        vheap_alloc(heap, arena[k], size, SLOT_SIZE);
        returned++;
        for (volatile int w = 0; w < 400; w++)
            ;                      /* the program's own work: fewer events */
    }
    while (late < 3)
        ;                          /* ticks after the last jump: none jumps */
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    /* After the last jump: these must be recorded too. */
    for (int k = 0; k < 100; k++) {
        void *volatile p = malloc(6500);
        free(p);
    }
    vheap_heap_destroy(heap);
    printf("returned=%ld freed=%ld jumps=%ld late=%ld\n", (long)returned, (long)freed,
           (long)jumps, (long)late);
    return 0;
}

/* ---- exitsig ------------------------------------------------------------- */
static void on_term(int sig)
{
    (void)sig;
    exit(0);
}

static void *churn(void *arg)
{
    (void)arg;
    void *keep[32] = { 0 };
    for (unsigned i = 0;; i++) {
        unsigned k = i % 32;
        free(keep[k]);
        keep[k] = malloc(16 + i % 4000);
    }
    return NULL;
}

static int mode_exitsig(int threads)
{
    signal(SIGTERM, on_term);
    for (int i = 1; i < threads; i++) {
        pthread_t th;
        if (pthread_create(&th, NULL, churn, NULL) != 0)
            FAIL("pthread_create");
    }
    printf("ready\n");
    fflush(stdout);
    churn(NULL);
    return 1;
}

/* ---- cancel -------------------------------------------------------------- */
static volatile int stop_worker;
static volatile unsigned long worker_rounds;

static void *worker(void *arg)
{
    (void)arg;
    pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
    while (!stop_worker) {
        void *p = malloc(100 + worker_rounds % 200);
        free(p);
        worker_rounds++;
    }
    return (void *)42;
}

static int mode_cancel(void)
{
    pthread_t th;
    void *ret;
    if (pthread_create(&th, NULL, worker, NULL) != 0)
        FAIL("pthread_create");
    struct timespec ms = { 0, 20 * 1000 * 1000 };
    nanosleep(&ms, NULL);
    pthread_cancel(th);
    unsigned long before = worker_rounds;
    for (int i = 0; i < 10; i++)
        nanosleep(&ms, NULL);      /* 200 ms: several RSS samples and chunks */
    unsigned long after = worker_rounds;
    stop_worker = 1;
    pthread_join(th, &ret);
    printf("rounds_after_cancel=%lu result=%s\n", after - before,
           ret == PTHREAD_CANCELED ? "cancelled" : ret == (void *)42 ? "returned" : "?");
    return ret == (void *)42 && after > before ? 0 : 1;
}

/* ---- closeall ------------------------------------------------------------ */
#define NFILES 6

static void churn_for(int ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    void *keep[256] = { 0 };
    for (unsigned i = 0;; i++) {
        unsigned k = i % 256;
        free(keep[k]);
        keep[k] = malloc(32 + i % 3000);
        if (!(i & 1023)) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= ms)
                break;
        }
    }
    for (int k = 0; k < 256; k++)
        free(keep[k]);
}

static int mode_closeall(void)
{
    churn_for(30);                 /* the shim holds whatever it holds now */
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    for (int fd = 3; fd < (int)rl.rlim_cur && fd < 65536; fd++)
        close(fd);
    int fds[NFILES];
    struct stat st[NFILES];
    char name[64], want[64], got[64];
    for (int i = 0; i < NFILES; i++) {
        snprintf(name, sizeof name, "fate-file-%d", i);
        fds[i] = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fds[i] != 3 + i)
            FAIL("open %s gave fd %d, not %d: a descriptor of the shim's sits low", name,
                 fds[i], 3 + i);
        snprintf(want, sizeof want, "file %d\n", i);
        if (write(fds[i], want, strlen(want)) != (ssize_t)strlen(want))
            FAIL("write");
        fstat(fds[i], &st[i]);
    }
    /* Daemons also put descriptors at numbers of their choosing: the top
     * of the range, where the shim keeps its own, now all the program's. */
    int top = (int)(rl.rlim_cur < 65536 ? rl.rlim_cur : 65536), ndup = 0;
    for (int fd = top - 40; fd < top; fd++)
        if (fd > 2 + NFILES && dup2(fds[0], fd) == fd)
            ndup++;
    churn_for(120);                /* RSS samples, chunk claims, growth */
    pid_t pid = fork();
    if (pid == 0) {
        churn_for(60);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    churn_for(60);
    for (int i = 0; i < NFILES; i++) {
        struct stat now;
        if (fstat(fds[i], &now) != 0 || now.st_ino != st[i].st_ino || now.st_dev != st[i].st_dev)
            FAIL("fd %d is no longer fate-file-%d", fds[i], i);
        snprintf(want, sizeof want, "file %d\n", i);
        ssize_t n = pread(fds[i], got, sizeof got - 1, 0);
        got[n > 0 ? n : 0] = '\0';
        if (strcmp(got, want) != 0)
            FAIL("fate-file-%d holds '%s'", i, got);
    }
    for (int fd = top - 40; fd < top; fd++) {
        struct stat now;
        if (fd > 2 + NFILES && (fstat(fd, &now) != 0 || now.st_ino != st[0].st_ino))
            FAIL("fd %d (a dup of fate-file-0) was closed or replaced", fd);
    }
    printf("files=%d dups=%d intact child=%d\n", NFILES, ndup,
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}

/* ---- nofile, fsize, vlimit, usable -------------------------------------- */
static int mode_nofile(void)
{
    for (int i = 0; i < 100; i++) {
        void *volatile p = malloc(100);
        free(p);
    }
    int n = 0;
    while (open("/dev/null", O_RDONLY) >= 0)
        n++;
    printf("opened=%d errno=%s\n", n, errno == EMFILE ? "EMFILE" : strerror(errno));
    return 0;
}

static int mode_fsize(long n)
{
    static void *keep[64];
    for (long i = 0; i < n; i++) {
        free(keep[i % 64]);
        keep[i % 64] = malloc(16 + (size_t)i % 500);
    }
    printf("done=%ld\n", n);
    return 0;
}

static int mode_vlimit(void)
{
    long mib = 0;
    for (;;) {
        char *p = malloc(1 << 20);
        if (!p)
            break;
        p[0] = 1;
        mib++;
    }
    printf("mib=%ld\n", mib);
    return 0;
}

static int mode_usable(long n)
{
    for (long i = 0; i < n; i++) {
        size_t size = 1 + (size_t)i * 37 % 5000;
        char *p = malloc(size);
        size_t u = malloc_usable_size(p);
        if (u < size)
            FAIL("malloc_usable_size(%zu-byte block) = %zu", size, u);
        memset(p, 1, u);
        free(p);
    }
    printf("usable_ok=%ld\n", n);
    return 0;
}

/* ---- rawfork --------------------------------------------------------------- */
static int mode_rawfork(long n)
{
    static void *keep[1024];
    for (int i = 0; i < 10; i++)
        free(malloc(64));          /* the parent records before the fork */
    long pid = syscall(SYS_fork);
    if (pid < 0)
        FAIL("SYS_fork");
    size_t size = pid == 0 ? 5003 : 5001;
    long count = pid == 0 ? n : 2 * n;
    for (long i = 0; i < count; i++) {
        unsigned k = (unsigned)i % 1024;
        free(keep[k]);
        keep[k] = malloc(size);
    }
    for (int k = 0; k < 1024; k++)
        free(keep[k]);
    if (pid == 0)
        exit(0);                   /* the child's atexit: its own END */
    int status;
    waitpid((pid_t)pid, &status, 0);
    printf("child=%ld parent_allocs=%ld child_allocs=%ld\n", pid, 2 * n, n);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        FAIL("usage: fate MODE [N]");
    const char *m = argv[1];
    long n = argc > 2 ? atol(argv[2]) : 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(m, "longjmp"))
        return mode_longjmp(n ? n : 2000, 0);
    if (!strcmp(m, "longjmp-raw"))
        return mode_longjmp(n ? n : 2000, 1);
    if (!strcmp(m, "restore"))
        return mode_restore();
    if (!strcmp(m, "exitsig"))
        return mode_exitsig(n ? (int)n : 1);
    if (!strcmp(m, "cancel"))
        return mode_cancel();
    if (!strcmp(m, "closeall"))
        return mode_closeall();
    if (!strcmp(m, "nofile"))
        return mode_nofile();
    if (!strcmp(m, "fsize"))
        return mode_fsize(n);
    if (!strcmp(m, "vlimit"))
        return mode_vlimit();
    if (!strcmp(m, "rawfork"))
        return mode_rawfork(n ? n : 100000);
    if (!strcmp(m, "usable"))
        return mode_usable(n ? n : 10000);
    FAIL("unknown mode %s", m);
}
