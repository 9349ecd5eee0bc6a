/* inline_syms.c — allocations whose call sites the symbolizer must name
 * exactly: one inside two levels of always_inline functions, one in a plain
 * out-of-line function, one made by libc (strdup). Each block has a size of
 * its own and is kept (leaked), so a test finds its stack through the leaks
 * table. The program prints where each call is, as lines of
 *   site SIZE FUNCTION LINE          the frame that calls the allocator
 *   inline SIZE DEPTH FUNCTION LINE  its inlined callers, innermost first
 *   caller SIZE FUNCTION LINE        the next physical frame
 * and a test compares them with the database. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SIZE_INLINED = 1111, SIZE_PLAIN = 2222, SIZE_LOOP = 3333 };

static int line_inner, line_middle, line_outer, line_plain, line_loop;
static int line_main_outer, line_main_plain;
static void *volatile kept[64];
static int nkept;

/* The allocation must not be a tail call, or its frame would vanish. */
static void keep(void *p)
{
    if (p)
        *(volatile char *)p = 1;
    kept[nkept++] = p;
}

static inline __attribute__((always_inline)) void inner_alloc(size_t n)
{
    void *p = malloc(n); line_inner = __LINE__;
    keep(p);
}

static inline __attribute__((always_inline)) void middle_alloc(size_t n)
{
    inner_alloc(n); line_middle = __LINE__;
}

/* Out of line, with the two inlined levels in it. */
__attribute__((noinline)) void outer_alloc(size_t n)
{
    middle_alloc(n); line_outer = __LINE__;
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void plain_alloc(size_t n)
{
    void *p = malloc(n); line_plain = __LINE__;
    keep(p);
    __asm__ volatile("" ::: "memory");
}

/* A loop with a computed size, so the call is not at the function's start
 * (and -lm is used for something real). */
__attribute__((noinline)) void loop_alloc(int rounds)
{
    for (int i = 0; i < rounds; i++) {
        void *p = malloc((size_t)lround(sqrt((double)SIZE_LOOP * SIZE_LOOP))); line_loop = __LINE__;
        keep(p);
    }
    __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    outer_alloc(SIZE_INLINED); line_main_outer = __LINE__;
    plain_alloc(SIZE_PLAIN); line_main_plain = __LINE__;
    loop_alloc(2);
    /* libc's own allocation: resolves to strdup.c with libc6-dbg. */
    static const char text[] = "a string of forty-four bytes, NUL included.";
    keep(strdup(text));

    printf("site %d inner_alloc %d\n", SIZE_INLINED, line_inner);
    printf("inline %d 1 middle_alloc %d\n", SIZE_INLINED, line_middle);
    printf("inline %d 2 outer_alloc %d\n", SIZE_INLINED, line_outer);
    printf("caller %d main %d\n", SIZE_INLINED, line_main_outer);
    printf("site %d plain_alloc %d\n", SIZE_PLAIN, line_plain);
    printf("caller %d main %d\n", SIZE_PLAIN, line_main_plain);
    printf("site %d loop_alloc %d\n", SIZE_LOOP, line_loop);
    printf("libc %zu strdup\n", sizeof text);
    return 0;
}
