/* leak_shapes — the pointer graphs of memcheck's leak tests, written anew:
 * blocks held by start pointers, interior pointers or nothing, directly and
 * through other blocks (`cases`, leak-cases), cycles of lost blocks
 * (`cycle`, leak-cycle), a tree with two edges cut and whole trees cut at
 * the root or held by their inside (`tree`, leak-tree), blocks of size 0
 * (`zero`, leak-0), a block held in a register at exit (`regroot`,
 * leak-regroot), a refcounted graph whose cycles outlive their last
 * reference (`leakotron`), and an arena the program declares as a heap of
 * its own (vheap.h, as Vere declares its loom) whose blocks hold the only
 * pointer to a malloc block (`custom`: "custom 2", its block count), and
 * the layouts memcheck's leak_cpp_interior reads an interior pointer as a
 * start by (`cxx`: new[]'s count, a length word, a COW std::string).
 *
 * Every block of the first six is made at its own recursion depth in
 * shape_at(): its call stack (the number of shape_at frames in it, the
 * block's serial) names it alone, so a leak report grouped by stack, as
 * memcheck's is, gives each block its own record and the two tools can be
 * compared block for block. leakotron's blocks come from lot_alloc(), one
 * stack for all; it prints "leakotron BLOCKS BYTES", what it still holds.
 * The program ends with the stack below main scrubbed, so that no stale
 * copy of a pointer is left where a scan would find it (as memcheck's
 * tests do by working in a function main calls). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "preload/vheap.h"

struct node {
    struct node *l, *r;            /* start or interior pointers */
    uintptr_t pad;
};

/* The roots: volatile so that every store lands in memory. */
static struct node *volatile root[16];
static char *volatile inner[16];
static int serial;                 /* the next block's depth in shape_at */

/* A block of `size` made `depth` calls deep: the call after the recursion
 * keeps it from becoming a loop or a tail call. */
__attribute__((noinline)) static void *shape_at(size_t size, int depth)
{
    void *p = depth ? shape_at(size, depth - 1) : malloc(size);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

static struct node *shape_node(struct node *l, struct node *r)
{
    struct node *n = shape_at(sizeof *n, serial++);
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

/* leak-cases' nine chains, AAA -> BBB, ---> a start pointer, -?-> an
 * interior one (from a root or a block). */
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

/* leak-cycle's three pairs of 3-rings, all lost: two alone, one linked to
 * the other (the higher address to the lower, so that the scan's cliques
 * merge whatever the order they start in), two linked both ways. Then
 * rings of other sizes, one held by a root, one by an interior pointer. */
__attribute__((noinline)) static void cycle(void)
{
    ring(3);
    ring(3);
    struct node *a = ring(3), *b = ring(3);
    if (a < b)
        b->r = a;
    else
        a->r = b;
    a = ring(3);
    b = ring(3);
    a->r = b;
    b->r = a;
    ring(2)->r = ring(4);                      /* lost together                 */
    root[3] = ring(3);                         /* reachable                     */
    inner[3] = (char *)ring(3) + 8;            /* possibly lost                 */
}

static struct node *tree(int depth)
{
    if (!depth)
        return NULL;
    struct node *l = tree(depth - 1);
    return shape_node(l, tree(depth - 1));
}

/* leak-tree's A(B(D, E), C(F, G)) held by a root, with B->D and A->C cut:
 * D lost, C lost holding F and G. Then whole trees held, cut at the root,
 * held by an interior pointer, and one whose left edge is interior. */
__attribute__((noinline)) static void trees(void)
{
    struct node *t = shape_node(NULL, NULL);
    root[0] = t;
    t->l = shape_node(NULL, NULL);
    t->r = shape_node(NULL, NULL);
    t->l->l = shape_node(NULL, NULL);
    t->l->r = shape_node(NULL, NULL);
    t->r->l = shape_node(NULL, NULL);
    t->r->r = shape_node(NULL, NULL);
    t->l->l = NULL;
    t->r = NULL;

    root[4] = tree(3);                         /* reachable                     */
    tree(3);                                   /* root lost, the rest indirect  */
    inner[4] = (char *)tree(3) + 8;            /* possibly lost, all of it      */
    t = tree(3);
    t->l = interior(t->l);                     /* a subtree possibly lost       */
    root[5] = t;
}

/* leak-0: a block of size 0 is a block; one held, one lost. */
__attribute__((noinline)) static void zero(void)
{
    root[7] = shape_at(0, serial++);
    shape_at(0, serial++);
}

struct lot {
    struct lot *l, *r;
    int ref;
};

enum { LOT_SLOTS = 1000, LOT_STEPS = 20000 };
static struct lot *volatile lot_slot[LOT_SLOTS];
static long lot_blocks, lot_bytes;

__attribute__((noinline)) static struct lot *lot_alloc(void)
{
    struct lot *n = malloc(sizeof *n);
    if (!n)
        abort();
    n->l = n->r = NULL;
    n->ref = 0;
    lot_blocks++;
    lot_bytes += sizeof *n;
    return n;
}

static void lot_unref(struct lot *n)
{
    if (n && --n->ref == 0) {
        lot_blocks--;
        lot_bytes -= sizeof *n;
        free(n);
    }
}

static void lot_assign(struct lot *volatile *slot, struct lot *n)
{
    if (n)
        n->ref++;
    lot_unref(*slot);
    *slot = n;
}

/* Half the time an existing node, a quarter a new one linking two more,
 * a quarter none. A node freed does not release what it links to (the
 * "incompetent" refcounting of memcheck's leakotron): those keep a count
 * no live node accounts for, and are what the program leaks. */
static struct lot *lot_make(unsigned *seed)
{
    int idx = rand_r(seed) % LOT_SLOTS, pick = rand_r(seed) % 4;
    struct lot *n = NULL;
    if (pick < 2) {
        n = lot_slot[idx];
    } else if (pick == 2) {
        n = lot_alloc();
        struct lot *volatile *l = &n->l, *volatile *r = &n->r;
        lot_assign(l, lot_make(seed));
        lot_assign(r, lot_make(seed));
    }
    lot_assign(&lot_slot[idx], n);
    return n;
}

/* leakotron: refcounting a dense graph, then dropping every slot: what is
 * left no root reaches, all of it lost. */
__attribute__((noinline)) static void leakotron(void)
{
    unsigned seed = 31;
    for (int i = 0; i < LOT_STEPS; i++)
        lot_make(&seed);
    for (int i = 0; i < LOT_SLOTS; i++)
        lot_assign(&lot_slot[i], NULL);
    printf("leakotron %ld %ld\n", lot_blocks, lot_bytes);
    fflush(stdout);
}

/* A custom heap over an arena of its own: its two blocks are not
 * classified (they opt out), but what they hold is a root, as the arena is
 * to memcheck (which knows no custom heap here): the malloc block one of
 * them points to is reachable, the other malloc block lost. */
__attribute__((noinline)) static void custom(void)
{
    enum { ARENA = 1 << 16 };
    char *arena = mmap(NULL, ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (arena == MAP_FAILED)
        abort();
    int h = vheap_heap_create("arena", 0, arena, ARENA);
    void *volatile *a = (void *volatile *)arena, *volatile *b = (void *volatile *)(arena + 64);
    vheap_alloc(h, (void *)a, 64, 64);
    vheap_alloc(h, (void *)b, 64, 64);
    *a = shape_at(40, serial++);               /* held by the arena: reachable */
    shape_at(48, serial++);                    /* lost                         */
    *b = NULL;
    printf("custom 2\n");
    fflush(stdout);
}

/* A block of `size` whose first two words are w0 and w1, held only by a
 * root pointing `off` bytes into it. */
static void held_at(int slot, size_t size, uint64_t w0, uint64_t w1, size_t off)
{
    uint64_t *b = shape_at(size, serial++);
    memset(b, 0, size);
    b[0] = w0;
    b[1] = w1;
    inner[slot] = (char *)b + off;
}

/* The layouts in which an interior pointer stands for a start pointer
 * (memcheck's heuristics, all on by default): new[] of 3 objects of 16
 * bytes with destructors (the count, then the objects: the pointer is to
 * the first), a length word (sqlite's: the size that follows), a
 * copy-on-write std::string (length, capacity, refcount, the characters);
 * and two that are not: a count that does not divide the rest, a string
 * whose capacity is not its block's. */
__attribute__((noinline)) static void cxx(void)
{
    held_at(8, 8 + 3 * 16, 3, 0, 8);          /* new[]: reachable            */
    held_at(9, 40, 32, 0, 8);                 /* length64: reachable         */
    held_at(10, 24 + 15 + 1, 5, 15, 24);      /* std::string: reachable      */
    held_at(11, 40, 7, 0, 8);                 /* 32 % 7: possibly lost       */
    held_at(12, 24 + 15 + 1, 5, 16, 24);      /* capacity not 15: possibly   */
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

/* leak-regroot: the only pointer to a block is in a callee-saved register
 * (rbx) when the program exits; exit() and everything it calls keep rbx
 * or save it on the stack. */
__attribute__((noinline, noreturn)) static void regroot(void)
{
    void *p = shape_at(10, serial++);
    CLEAR_CALLER_SAVED();
    scrub();
    __asm__ volatile("mov %0, %%rbx\n\t"
                     "xor %%eax, %%eax\n\txor %%ecx, %%ecx\n\txor %%edx, %%edx\n\t"
                     "xor %%esi, %%esi\n\txor %%r8d, %%r8d\n\t"
                     "xor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\txor %%r11d, %%r11d\n\t"
                     "xor %%edi, %%edi\n\t"
                     "call exit@PLT"
                     : : "r"(p) : "rbx", "memory");
    __builtin_unreachable();
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
    if (all || !strcmp(what, "zero"))
        zero();
    if (all || !strcmp(what, "leakotron"))
        leakotron();
    if (all || !strcmp(what, "cxx"))
        cxx();
    if (all || !strcmp(what, "custom"))
        custom();
    if (!strcmp(what, "regroot"))
        regroot();
    CLEAR_CALLER_SAVED();
    scrub();
    CLEAR_CALLER_SAVED();
    return 0;
}
