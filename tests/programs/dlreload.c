/* dlreload.c — `dlreload LIBA LIBB ROUNDS [FILLER...]`: each round dlopens
 * LIBA (tests/programs/libdlra.c), has it allocate, dlcloses it, then the
 * same with LIBB (libdlrb.c): same size, so LIBB mostly lands where LIBA just
 * was, and its malloc call sits at the same offset. Meanwhile a second
 * thread allocates from ever new call stacks, so it keeps looking at the
 * module list (and diffing it) while the first loads and unloads. FILLERs
 * are dlopened first and kept: a long module list makes each look slow, the
 * window in which a look can miss an unload wide.
 * Block sizes: 3001 from LIBA, 5003 from LIBB, known to nobody else.
 * stdout: "result ..." and "expect alpha_allocs=N bravo_allocs=N"; stderr
 * says how many rounds LIBB loaded at LIBA's address ("same_base N"). */
#include "testprog.h"

#include <dlfcn.h>
#include <time.h>

#define PER_CALL 4
typedef void make_fn(void **, unsigned, size_t);

static volatile int stop;
static volatile unsigned long sink;

/* Two call sites per level: the bits of `path` choose the stack. */
static void *walk(unsigned long path, int depth);
__attribute__((noinline)) static void *left(unsigned long path, int depth)
{
    void *p = walk(path >> 1, depth - 1);
    sink++;                        /* not a tail call: keep the frame */
    return p;
}
__attribute__((noinline)) static void *right(unsigned long path, int depth)
{
    void *p = walk(path >> 1, depth - 1);
    sink++;
    return p;
}
__attribute__((noinline)) static void *walk(unsigned long path, int depth)
{
    if (depth == 0)
        return malloc(40);
    void *p = (path & 1) ? right(path, depth) : left(path, depth);
    sink++;
    return p;
}

static void *busy(void *arg)
{
    for (unsigned long i = 0; !stop; i++) {
        free(walk(i, 18));         /* a new stack nearly every time */
        struct timespec ts = { 0, 20000 };
        nanosleep(&ts, NULL);
    }
    return arg;
}

/* One call site for both libraries: identical stacks but for the library. */
__attribute__((noinline)) static void run(make_fn *make, size_t size)
{
    void *b[PER_CALL];
    make(b, PER_CALL, size);
    for (int i = 0; i < PER_CALL; i++) {
        TP_CHECK(b[i]);
        free(b[i]);
    }
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: dlreload LIBA LIBB ROUNDS [FILLER...]\n");
        return 2;
    }
    const char *path[2] = { argv[1], argv[2] };
    static const char *const name[2] = { "dl_alpha_make", "dl_bravo_make" };
    static const size_t size[2] = { 3001, 5003 };
    unsigned rounds = (unsigned)atoi(argv[3]);
    unsigned long made[2] = { 0, 0 }, same = 0;
    for (int i = 4; i < argc; i++)
        if (!dlopen(argv[i], RTLD_NOW | RTLD_LOCAL)) {
            fprintf(stderr, "dlreload: %s\n", dlerror());
            return 3;
        }
    pthread_t th;
    TP_CHECK(pthread_create(&th, NULL, busy, NULL) == 0);
    for (unsigned r = 0; r < rounds; r++) {
        void *base[2] = { NULL, NULL };
        for (int k = 0; k < 2; k++) {
            void *h = dlopen(path[k], RTLD_NOW | RTLD_LOCAL);
            if (!h) {
                fprintf(stderr, "dlreload: %s\n", dlerror());
                return 3;
            }
            make_fn *make = (make_fn *)dlsym(h, name[k]);
            TP_CHECK(make);
            Dl_info info;
            TP_CHECK(dladdr((void *)make, &info));
            base[k] = info.dli_fbase;
            run(make, size[k]);
            made[k] += PER_CALL;
            TP_CHECK(dlclose(h) == 0);
        }
        same += base[0] == base[1];
    }
    stop = 1;
    TP_CHECK(pthread_join(th, NULL) == 0);
    fprintf(stderr, "same_base %lu of %u\n", same, rounds);
    printf("result rounds=%u\n", rounds);
    printf("expect alpha_allocs=%lu bravo_allocs=%lu\n", made[0], made[1]);
    return 0;
}
