/* mmap_arena — a program that manages address space itself: it maps an
 * arena, unmaps its middle, maps over part of what is left, grows a
 * mapping in place and moves another with mremap, grows the break with
 * sbrk, and ends one mapping whole. It prints the mappings it still
 * holds at exit, by construction ("live ADDR SIZE FUNCTION", the function
 * that made the mapping each piece is part of). `mmap_arena big` instead mallocs one block
 * above glibc's mmap threshold and frees another, and maps nothing. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096ul

static void live(const void *p, unsigned long size, const char *fn)
{
    printf("live %lu %lu %s\n", (unsigned long)(uintptr_t)p, size, fn);
}

static char *map(unsigned long pages, void *at, int flags)
{
    char *p = mmap(at, pages * PAGE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

/* Each maker is its own function, so each mapping's stack names it. */
static __attribute__((noinline)) char *make_arena(void) { return map(16, NULL, 0); }
static __attribute__((noinline)) char *map_over(char *at) { return map(2, at, MAP_FIXED); }
static __attribute__((noinline)) char *make_small(void) { return map(4, NULL, 0); }
static __attribute__((noinline)) char *make_gone(void) { return map(3, NULL, 0); }

static __attribute__((noinline)) char *grow(char *p, unsigned long from, unsigned long to,
                                            int flags, void *at)
{
    char *q = mremap(p, from * PAGE, to * PAGE, flags, at);
    if (q == MAP_FAILED) {
        perror("mremap");
        exit(1);
    }
    return q;
}

static __attribute__((noinline)) char *grow_break(unsigned long bytes)
{
    char *b = sbrk((intptr_t)bytes);
    if (b == (char *)-1) {
        perror("sbrk");
        exit(1);
    }
    return b;
}

static int big(void)
{
    char *keep = malloc(1 << 20), *gone = malloc(2 << 20);
    if (!keep || !gone)
        return 1;
    memset(keep, 1, 4096);
    free(gone);
    printf("big %lu\n", (unsigned long)(uintptr_t)keep);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "big"))
        return big();
    /* the arena: 16 pages; its pages 4..7 unmapped, 10..11 mapped over */
    char *a = make_arena();
    if (munmap(a + 4 * PAGE, 4 * PAGE) != 0)
        return 1;
    char *over = map_over(a + 10 * PAGE);
    live(a, 4 * PAGE, "make_arena");
    live(a + 8 * PAGE, 2 * PAGE, "make_arena");
    live(over, 2 * PAGE, "map_over");
    live(a + 12 * PAGE, 4 * PAGE, "make_arena");

    /* moved: mremap onto a reservation it replaces */
    char *s = make_small();
    char *target = map(64, NULL, MAP_NORESERVE);
    char *moved = grow(s, 4, 64, MREMAP_MAYMOVE | MREMAP_FIXED, target);
    live(moved, 64 * PAGE, "grow");

    /* grown in place: its next pages were made free for it */
    char *g = make_small();
    if (munmap(g + 2 * PAGE, 2 * PAGE) != 0)
        return 1;
    char *in_place = grow(g, 2, 4, 0, NULL);
    live(in_place, 4 * PAGE, "grow");

    /* the break: 3 pages and 100 bytes */
    char *b = grow_break(3 * PAGE + 100);
    live(b, 3 * PAGE + 100, "grow_break");

    /* ended whole */
    char *gone = make_gone();
    gone[0] = 1;
    if (munmap(gone, 3 * PAGE) != 0)
        return 1;
    return 0;
}
