/* dhat_prog — allocations whose DHAT numbers the program knows, from
 * functions of their own (the test matches program points by them):
 *   f_keep  10 x 100 B, live to the end
 *   f_peak   5 x 3000 B, held 200 ms across the global peak, then freed
 *   f_temp  20 x 200 B, each freed at once, after the peak
 * Run under valgrind --tool=dhat and under vheap, the two files must agree
 * on every byte and block count (tb tbk mb mbk gb gbk eb ebk). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *keep[10], *held[5];
static void *volatile last;        /* keeps the compiler from eliding f_temp */

__attribute__((noinline)) static void *f_keep(size_t n)
{
    return malloc(n);
}

__attribute__((noinline)) static void *f_peak(size_t n)
{
    return malloc(n);
}

__attribute__((noinline)) static void f_temp(size_t n)
{
    char *p = malloc(n);
    if (p)
        memset(p, 1, n);
    last = p;
    free(last);
}

int main(void)
{
    struct timespec hold = { 0, 200 * 1000 * 1000 };
    for (int i = 0; i < 10; i++)
        keep[i] = f_keep(100);
    for (int i = 0; i < 5; i++)
        held[i] = f_peak(3000);
    nanosleep(&hold, NULL);
    for (int i = 0; i < 5; i++)
        free(held[i]);
    for (int i = 0; i < 20; i++)
        f_temp(200);
    return keep[9] == NULL;
}
