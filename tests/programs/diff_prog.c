/* diff_prog.c — `diff_prog N`: two runs with different N differ in known
 * ways, for `vheap-analyze diff` and the differential report. Only write(2)
 * for output, so stdio allocates nothing. Per run:
 *   steady()    16 x 64 B, freed            (the same whatever N)
 *   leaky(N)    N x 32 B, never freed       (N leaked; live at the peak)
 *   churn(N)    N x 48 B, each freed at once (N temporary)
 *   hill(N)     N x 4096 B held, then freed (the run's peak is at its top)
 * so from N=a to N=b: leaky +32(b-a) B allocated, at peak and leaked;
 * churn +(b-a) temporary; hill +4096(b-a) B allocated and at peak; each of
 * the three +(b-a) calls; steady unchanged. */
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

static void *volatile sink;

NOINLINE static void steady(void)
{
    void *p[16];
    for (int i = 0; i < 16; i++)
        p[i] = malloc(64);
    for (int i = 0; i < 16; i++)
        free(p[i]);
}

NOINLINE static void leaky(int n)
{
    for (int i = 0; i < n; i++)
        sink = malloc(32);
}

NOINLINE static void churn(int n)
{
    for (int i = 0; i < n; i++) {
        sink = malloc(48);
        free(sink);
    }
}

NOINLINE static void hill(int n)
{
    void **p = __builtin_alloca((size_t)n * sizeof *p);
    for (int i = 0; i < n; i++)
        p[i] = malloc(4096);
    for (int i = 0; i < n; i++)
        free(p[i]);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10;
    if (n < 1 || n > 100000)
        return 2;
    steady();
    leaky(n);
    churn(n);
    hill(n);
    if (write(1, "diff_prog done\n", 15) < 0)
        return 1;
    return 0;
}
