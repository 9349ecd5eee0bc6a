/* leak_shapes — the shapes of memcheck's leak tests, written anew: blocks
 * held by start pointers, interior pointers or nothing, directly and
 * through other blocks (`cases`), cycles of lost blocks (`cycle`), trees
 * cut at the root, held by their inside, or with an interior edge
 * (`tree`). Every block comes from shape_node(), so a leak report can be
 * restricted to these. The program ends by returning from main with the
 * stack below it scrubbed, so that no stale copy of a pointer is left
 * where a scan would find it (as memcheck's tests do). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct node {
    struct node *l, *r;            /* start or interior pointers */
    uintptr_t pad;
};

/* The roots: volatile so that every store lands in memory. */
static struct node *volatile root[16];
static char *volatile inner[16];

__attribute__((noinline)) static struct node *shape_node(struct node *l, struct node *r)
{
    struct node *n = malloc(sizeof *n);
    if (!n)
        abort();
    n->l = l;
    n->r = r;
    n->pad = 0;
    return n;
}

static struct node *interior(struct node *n)
{
    return (struct node *)((char *)n + 8);
}

/* memcheck's leak-cases: nine chains, AAA -> BBB, ---> a start pointer,
 * -?-> an interior one (from a root or a block). */
__attribute__((noinline)) static void cases(void)
{
    root[1] = shape_node(NULL, NULL);                            /* p1 ---> A        */
    root[2] = shape_node(shape_node(NULL, NULL), NULL);          /* p2 ---> A ---> B */
    shape_node(NULL, NULL);                                      /* p3      A        */
    shape_node(shape_node(NULL, NULL), NULL);                    /* p4      A ---> B */
    inner[5] = (char *)shape_node(NULL, NULL) + 8;               /* p5 -?-> A        */
    root[6] = shape_node(interior(shape_node(NULL, NULL)), NULL); /* p6 ---> A -?-> B */
    inner[7] = (char *)shape_node(shape_node(NULL, NULL), NULL) + 8; /* p7 -?-> A ---> B */
    inner[8] = (char *)shape_node(interior(shape_node(NULL, NULL)), NULL) + 8; /* p8 -?-> A -?-> B */
    shape_node(interior(shape_node(NULL, NULL)), NULL);          /* p9      A -?-> B */
}

static struct node *ring(int n)
{
    struct node *first = shape_node(NULL, NULL), *p = first;
    for (int i = 1; i < n; i++)
        p = p->l = shape_node(NULL, NULL);
    p->l = first;
    return first;
}

/* leak-cycle: rings of lost blocks, alone and linked to one another; a
 * ring held by a root, and one held by an interior pointer. */
__attribute__((noinline)) static void cycle(void)
{
    ring(3);                                   /* lost: 1 definite, 2 indirect */
    ring(2)->r = ring(4);                      /* lost together                 */
    struct node *a = ring(2), *b = ring(2);
    a->r = b;                                  /* a ring into a ring, and back  */
    b->l->r = a->l;
    root[3] = ring(3);                         /* reachable                     */
    inner[3] = (char *)ring(3) + 8;            /* possibly lost                 */
}

static struct node *tree(int depth)
{
    if (!depth)
        return NULL;
    return shape_node(tree(depth - 1), tree(depth - 1));
}

/* leak-tree: whole trees held, cut at the root, held by an interior
 * pointer, and one whose left edge is interior. */
__attribute__((noinline)) static void trees(void)
{
    root[4] = tree(3);                         /* reachable                     */
    tree(3);                                   /* root lost, the rest indirect  */
    inner[4] = (char *)tree(3) + 8;            /* possibly lost, all of it      */
    struct node *t = tree(3);
    t->l = interior(t->l);                     /* a subtree possibly lost       */
    root[5] = t;
}

/* Zeroes the registers a call may leave behind (memcheck's tests do the
 * same): a copy of a pointer there would be found on the stack later. */
#define CLEAR_CALLER_SAVED()                                                         \
    __asm__ volatile("xor %%eax, %%eax\n\txor %%ecx, %%ecx\n\txor %%edx, %%edx\n\t" \
                     "xor %%esi, %%esi\n\txor %%edi, %%edi\n\txor %%r8d, %%r8d\n\t"   \
                     "xor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\txor %%r11d, %%r11d"     \
                     ::: "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11",   \
                     "memory")

/* Overwrites the stack below main, where the shapes' frames were. */
__attribute__((noinline)) static void scrub(void)
{
    char junk[1 << 16];
    memset(junk, 0, sizeof junk);
    __asm__ volatile("" : : "r"(junk) : "memory");   /* the stores happen */
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "all";
    int all = !strcmp(what, "all");
    if (all || !strcmp(what, "cases"))
        cases();
    if (all || !strcmp(what, "cycle"))
        cycle();
    if (all || !strcmp(what, "tree"))
        trees();
    CLEAR_CALLER_SAVED();
    scrub();
    CLEAR_CALLER_SAVED();
    return 0;
}
