/* live_view — a program to watch with `top --live`, whose live bytes it
 * knows at each step: cache_fill holds 1,000,000 B (10 x 100,000) from the
 * start; after a line on fifo GO, grow_step allocates and holds 50 x
 * 4,000 B (200,000 B); churn frees what it allocates. It says "ready" and
 * "grown" on stdout after each step, then takes lines on GO: "free N"
 * frees N more of cache_fill's blocks and says "freed K" (K of them left),
 * "exit" ends it (or it is killed). `live_view GO [ROUNDS]`: ROUNDS more
 * rounds of churn before "ready", for a large capture. */
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
    int cached = 10;
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: live_view GO-FIFO [ROUNDS]\n");
        return 2;
    }
    for (int i = 0; i < 10; i++)
        kept[i] = cache_fill(100000);
    for (long r = argc == 3 ? atol(argv[2]) : 0; r >= 0; r--)
        churn();
    printf("ready pid=%d\n", (int)getpid());
    fflush(stdout);
    wait_line(argv[1], line, sizeof line);
    for (int i = 0; i < 50; i++)
        kept[10 + (i % 50)] = grow_step(4000);
    churn();
    printf("grown\n");
    fflush(stdout);
    for (;;) {
        wait_line(argv[1], line, sizeof line);
        if (!strncmp(line, "exit", 4))
            return 0;
        if (strncmp(line, "free ", 5))
            continue;
        for (int n = atoi(line + 5); n > 0 && cached > 0; n--)
            free(kept[--cached]);
        printf("freed %d\n", cached);
        fflush(stdout);
    }
}
