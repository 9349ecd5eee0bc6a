/* ht_peak.c — a known peak: 100 blocks of 10000 bytes held then freed (the
 * last one right after its allocation: one temporary), then 50 of 20000
 * plus one of 5000 held together — the peak, 1005000 bytes above whatever
 * the runtime holds — then three 777-byte leaks. Compared with heaptrack by
 * tests/integration/vs_heaptrack.sh; the "ht fn=..." lines state what the
 * stacks through each function did (peak_bytes: held at the peak). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *volatile ht_sink;

__attribute__((noinline, noclone)) static void *hold(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 7, n);
    return p;
}

__attribute__((noinline, noclone)) static void first_hill(void)
{
    void *b[100];
    for (int i = 0; i < 100; i++)
        b[i] = hold(10000);
    for (int i = 99; i >= 0; i--)
        free(b[i]);
}

__attribute__((noinline, noclone)) static void second_hill(void)
{
    void *b[51];
    for (int i = 0; i < 50; i++)
        b[i] = hold(20000);
    b[50] = hold(5000);
    for (int i = 0; i < 51; i++)
        free(b[i]);
}

__attribute__((noinline, noclone)) static void leak_some(void)
{
    for (int i = 0; i < 3; i++)
        ht_sink = hold(777);
}

int main(void)
{
    first_hill();
    second_hill();
    leak_some();
    printf("ht fn=first_hill allocations=100 temporary=1 leaked_bytes=0 peak_bytes=0\n");
    printf("ht fn=second_hill allocations=51 temporary=0 leaked_bytes=0 peak_bytes=%d\n",
           50 * 20000 + 5000);
    printf("ht fn=leak_some allocations=3 temporary=0 leaked_bytes=%d peak_bytes=0\n",
           3 * 777);
    return 0;
}
