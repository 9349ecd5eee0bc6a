/* temp_rule.c — where vheap's and heaptrack's temporary allocations part:
 * rotate() keeps one block of 48 bytes, allocating the next from the same
 * call site and freeing the previous right after (heaptrack 1.4 matches a
 * free to the allocation before it by size and stack: temporary; vheap by
 * block: not); scratch() frees each block right after its allocation
 * (temporary for both). Prints "temp vheap=N heaptrack=M" for the counts
 * through each, and "ht fn=F temporary=N" per function under heaptrack's
 * rule. */
#include <stdio.h>
#include <stdlib.h>

void *volatile sink;

__attribute__((noinline, noclone)) static void *get(size_t n)
{
    return malloc(n);
}

__attribute__((noinline, noclone)) static void rotate(int n)
{
    void *prev = NULL;
    for (int i = 0; i < n; i++) {
        void *q = get(48);
        sink = q;
        free(prev);                /* right after an allocation of its kind */
        prev = q;
    }
    free(prev);                    /* after a free: temporary for no one */
}

__attribute__((noinline, noclone)) static void scratch(int n)
{
    for (int i = 0; i < n; i++) {
        void *p = malloc(100);
        sink = p;
        free(p);
    }
}

int main(void)
{
    rotate(500);
    scratch(200);
    /* rotate: its first free is free(NULL), no free at all */
    printf("temp vheap=%d heaptrack=%d\n", 200, 499 + 200);
    printf("ht fn=get temporary=499\n");
    printf("ht fn=scratch temporary=200\n");
    return 0;
}
