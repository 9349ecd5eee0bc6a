/* mmap_arena — a program that manages address space itself: it maps an
 * arena, unmaps its middle, maps over part of what is left, grows a
 * mapping in place and moves another with mremap, grows the break with
 * sbrk, and ends one mapping whole. It prints the mappings it still
 * holds at exit, by construction ("live ADDR SIZE FUNCTION", the function
 * that made the mapping each piece is part of). It also reserves 64 GiB
 * PROT_NONE as Vere does its loom and maps its second GiB over it, checks
 * that failing calls fail with the errno they fail with bare ("errno ok"),
 * and forks a child that unmaps one of the parent's mappings (the child's
 * capture has no record of it) and maps a page of its own ("child PID
 * ADDR"). `mmap_arena big` instead mallocs one block
 * above glibc's mmap threshold and frees another, and maps nothing.
 * `mmap_arena declared` hands an arena to a heap of its own (vheap.h, as
 * Vere's patch declares its loom): see declared(). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload/vheap.h"

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

#define GIB (1ul << 30)

static __attribute__((noinline)) char *reserve(void)
{
    char *r = mmap(NULL, 64 * GIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (r == MAP_FAILED) {
        perror("mmap 64 GiB");
        exit(1);
    }
    return r;
}

static __attribute__((noinline)) char *commit(char *at)
{
    char *c = mmap(at, GIB, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (c == MAP_FAILED) {
        perror("mmap over the reservation");
        exit(1);
    }
    return c;
}

/* Failing calls fail as they do bare: the shim passes errno through. */
static void check_errno(char *mapped)
{
    struct { const char *what; int ok; } c[4];
    errno = 0;
    c[0].what = "mmap of 0 bytes";
    c[0].ok = mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED &&
              errno == EINVAL;
    errno = 0;
    c[1].what = "munmap unaligned";
    c[1].ok = munmap(mapped + 1, PAGE) == -1 && errno == EINVAL;
    errno = 0;
    c[2].what = "mremap of nothing";
    c[2].ok = mremap((void *)PAGE, PAGE, 2 * PAGE, 0) == MAP_FAILED && errno == EFAULT;
    errno = 0;
    c[3].what = "sbrk of 2^62";
    c[3].ok = sbrk((intptr_t)1 << 62) == (void *)-1 && errno == ENOMEM;
    for (int i = 0; i < 4; i++)
        if (!c[i].ok) {
            printf("errno wrong: %s (errno %d)\n", c[i].what, errno);
            exit(2);
        }
    printf("errno ok\n");
}

static void child(char *parents)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        exit(1);
    if (pid == 0) {
        munmap(parents, 2 * PAGE);
        char *mine = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
        printf("child %d %lu\n", (int)getpid(), (unsigned long)(uintptr_t)mine);
        fflush(stdout);
        _exit(mine == MAP_FAILED);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        exit(1);
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

/* The arena is the declared heap's from its declaration: its mapping
 * leaves the mmap heap, a page mapped over it meanwhile is the heap's; once
 * the heap is destroyed, a page mapped there is the mmap heap's again. */
static int declared(void)
{
    char *a = make_arena();
    int h = vheap_heap_create("arena", 0, a, 16 * PAGE);
    map_over(a + 2 * PAGE);
    char *b = make_arena();
    vheap_heap_destroy(h);
    char *o = map_over(a + 4 * PAGE);
    live(b, 16 * PAGE, "make_arena");
    live(o, 2 * PAGE, "map_over");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "declared"))
        return declared();
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

    /* a loom: 64 GiB reserved, its second GiB made usable, its last page
     * given back */
    char *r = reserve();
    char *c = commit(r + GIB);
    if (munmap(r + 64 * GIB - PAGE, PAGE) != 0)
        return 1;
    live(r, GIB, "reserve");
    live(c, GIB, "commit");
    live(r + 2 * GIB, 62 * GIB - PAGE, "reserve");

    check_errno(a);
    child(over);
    return 0;
}
