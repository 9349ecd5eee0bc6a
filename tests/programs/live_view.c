/* live_view — a program to watch with `top --live`, whose live bytes it
 * knows at each step: cache_fill holds 1,000,000 B (10 x 100,000) from the
 * start; after a line on fifo GO, grow_step allocates and holds 50 x
 * 4,000 B (200,000 B); churn frees what it allocates. It says "ready" and
 * "grown" on stdout after each step, then waits for the line "exit" on GO
 * (or to be killed). `live_view GO`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *kept[60];

__attribute__((noinline)) static void *cache_fill(size_t n)
{
    return malloc(n);
}

__attribute__((noinline)) static void *grow_step(size_t n)
{
    return malloc(n);
}

__attribute__((noinline)) static void churn(void)
{
    for (int i = 0; i < 100; i++) {
        void *volatile p = malloc(64);
        free(p);
    }
}

static void wait_line(const char *fifo, char *buf, size_t n)
{
    FILE *f = fopen(fifo, "r");
    buf[0] = 0;
    if (f) {
        if (!fgets(buf, (int)n, f))
            buf[0] = 0;
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    char line[64];
    if (argc != 2) {
        fprintf(stderr, "usage: live_view GO-FIFO\n");
        return 2;
    }
    for (int i = 0; i < 10; i++)
        kept[i] = cache_fill(100000);
    churn();
    printf("ready pid=%d\n", (int)getpid());
    fflush(stdout);
    wait_line(argv[1], line, sizeof line);
    for (int i = 0; i < 50; i++)
        kept[10 + (i % 50)] = grow_step(4000);
    churn();
    printf("grown\n");
    fflush(stdout);
    do
        wait_line(argv[1], line, sizeof line);
    while (strncmp(line, "exit", 4));
    return 0;
}
