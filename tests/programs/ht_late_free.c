/* ht_late_free.c — memory over time that a heaptrack chart must show: the
 * program's first allocation (heaptrack's info 0) and nine more blocks of
 * 1 MiB are held together for 300 ms, then one of the nine and the first
 * are freed (the first right after another free, which heaptrack's reader
 * would count temporary), 300 ms later the rest. Prints "held BYTES" (what
 * it held during the first pause) and "after BYTES" (during the second). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB (1u << 20)

void *volatile ht_sink;

__attribute__((noinline, noclone)) static void *hold(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 7, n);
    return p;
}

static void pause_ms(long ms)
{
    struct timespec ts = { ms / 1000, ms % 1000 * 1000000 };
    while (nanosleep(&ts, &ts))
        ;
}

int main(void)
{
    void *first = hold(MIB), *b[9];
    for (int i = 0; i < 9; i++)
        b[i] = hold(MIB);
    if (!first)
        return 1;
    for (int i = 0; i < 9; i++)
        if (!b[i])
            return 1;
    pause_ms(300);
    free(b[0]);
    free(first);
    pause_ms(300);
    for (int i = 1; i < 9; i++)
        free(b[i]);
    printf("held %u\nafter %u\n", 10 * MIB, 8 * MIB);
    return 0;
}
