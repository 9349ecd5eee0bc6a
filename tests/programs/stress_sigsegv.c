/* stress_sigsegv.c — `stress_sigsegv [ROUNDS]`: a program with its own
 * SIGSEGV handler, as Vere has. An arena is kept read-only; the first write
 * to each of its pages faults, and the handler (on an alternate signal
 * stack) makes the page writable, marks it dirty and returns, so the write
 * is done again and succeeds. Every 8th fault the handler also allocates a
 * block, which the main loop frees later. Each round write-protects the
 * whole arena again. Meanwhile the main loop mallocs blocks and stores
 * their addresses in the arena (faulting), copies their contents in with
 * memcpy (faulting inside libc), and a second thread allocates without
 * pause. A fault anywhere else (say, inside a profiler) is not ours: the
 * handler puts the default action back and the program dies, so that
 * cannot go unnoticed. Main-thread calls are logged as "ev" lines. */
#include "testprog.h"
#include "tp_signal.h"

#include <malloc.h>
#include <sys/mman.h>
#include <time.h>

#define ARENA_PAGES 512
#define PAGE 4096

static unsigned char *arena;
static unsigned char dirty[ARENA_PAGES];
static unsigned long faults, foreign, handler_allocs;
static void *from_handler[4096];
static unsigned nfrom;
static volatile int stop;

static void die_default(int sig)
{
    signal(sig, SIG_DFL);          /* the fault happens again: fatal */
}

USER static void on_segv(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    unsigned char *a = si->si_addr;
    if (a < arena || a >= arena + ARENA_PAGES * PAGE) {
        foreign++;
        die_default(sig);
        return;
    }
    size_t page = (size_t)(a - arena) / PAGE;
    if (mprotect(arena + page * PAGE, PAGE, PROT_READ | PROT_WRITE) != 0)
        _exit(90);
    dirty[page] = 1;
    faults++;
    /* Synchronous faults only happen at the program's own stores into the
     * arena, never inside malloc or the log: allocating here is safe. */
    if (faults % 8 == 0 && nfrom < 4096) {
        void *p = malloc(24 + faults % 1000);
        if (!p)
            _exit(91);
        from_handler[nfrom++] = p;
        handler_allocs++;
        tp_alloc("malloc", p, 24 + faults % 1000, malloc_usable_size(p), NULL);
    }
}

/* The slot in the arena where block i of a round lives. */
struct slot {
    void *p;
    size_t size;
    unsigned char copy[48];
};

USER static void round_trip(unsigned r, uint64_t *seed)
{
    /* Everything clean and read-only again. */
    if (mprotect(arena, ARENA_PAGES * PAGE, PROT_READ) != 0)
        _exit(92);
    memset(dirty, 0, sizeof dirty);
    unsigned n = 200 + r % 50;
    struct slot *slots[256];
    for (unsigned i = 0; i < n; i++) {
        size_t size = 48 + tp_rand(seed) % 2000;
        unsigned char *p = malloc(size);
        TP_CHECK(p);
        tp_alloc("malloc", p, size, malloc_usable_size(p), NULL);
        memset(p, (int)(i & 0xff), size);
        /* A page of the arena: the store faults the first time. */
        size_t page = tp_rand(seed) % ARENA_PAGES;
        size_t off = (tp_rand(seed) % (PAGE / sizeof(struct slot) - 1)) * sizeof(struct slot);
        struct slot *s = (struct slot *)(arena + page * PAGE + off);
        memcpy(s->copy, p, sizeof s->copy);   /* may fault inside libc */
        s->p = p;                  /* or here */
        s->size = size;
        slots[i] = s;
    }
    for (unsigned i = 0; i < n; i++) {
        struct slot *s = slots[i];
        unsigned char *p = s->p;
        /* A later slot may have landed on the same place: then this one
         * was overwritten and its block is freed by that one. */
        int latest = 1;
        for (unsigned k = i + 1; k < n; k++)
            latest &= slots[k] != s;
        if (!latest)
            continue;
        TP_CHECK(memcmp(s->copy, p, sizeof s->copy) == 0);
        tp_free("free", p, NULL);
        free(p);
        s->p = NULL;
    }
    for (unsigned i = 0; i < nfrom; i++) {
        tp_free("free", from_handler[i], NULL);
        free(from_handler[i]);
    }
    nfrom = 0;
}

static void *busy(void *arg)
{
    void *held[8] = { 0 };
    for (unsigned long i = 0; !stop; i++) {
        free(held[i % 8]);
        held[i % 8] = malloc(100 + i % 300);
        if (i % 32 == 31) {
            struct timespec ts = { 0, 50000 };
            nanosleep(&ts, NULL);
        }
    }
    for (int k = 0; k < 8; k++)
        free(held[k]);
    return arg;
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 30;
    if (rounds < 1 || rounds > 40) {      /* the log holds about 45 rounds */
        fprintf(stderr, "usage: stress_sigsegv [ROUNDS (1..40)]\n");
        return 2;
    }
    tp_range();
    arena = mmap(NULL, ARENA_PAGES * PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    TP_CHECK(arena != MAP_FAILED);
    static char altstack[64 << 10];
    stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0 };
    TP_CHECK(sigaltstack(&ss, NULL) == 0);
    tp_handle_info(SIGSEGV, on_segv, SA_ONSTACK);
    pthread_t th;
    TP_CHECK(pthread_create(&th, NULL, busy, NULL) == 0);
    uint64_t seed = 0x853c49e6748fea9bull;
    unsigned long dirty_pages = 0;
    for (unsigned r = 0; r < rounds; r++) {
        round_trip(r, &seed);
        for (int i = 0; i < ARENA_PAGES; i++)
            dirty_pages += dirty[i];
    }
    stop = 1;
    TP_CHECK(pthread_join(th, NULL) == 0);
    TP_CHECK(dirty_pages == faults && foreign == 0);
    tp_note("result rounds=%u faults=%lu handler_allocs=%lu", rounds, faults, handler_allocs);
    tp_expect();
    tp_flush();
    return 0;
}
