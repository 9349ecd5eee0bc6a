/* owners.c — a synthetic arena whose marking walk reports ownership
 * (preload/vheap.h: vheap_own_*), with per-owner totals known by
 * construction. The arena is a bump allocator over one mapping (16-byte
 * granules: the walk counts a block's rounded size, as Vere's grab counts
 * words); objects hang off owner lists, some shared between two owners
 * (first owner wins, as the walk marks once), some reached by no owner.
 *
 *   owners ok    two snapshots; between them ames grows and behn shrinks
 *   owners bad   one snapshot with bad input besides good: a label that is
 *                not UTF-8, one of 300 bytes, a block the arena never
 *                handed out, calls outside any snapshot, pops at the top
 *   owners die   a snapshot the program dies in (SIGKILL) after owner "a"
 *                is complete and while "b" is half done
 *   owners many  one snapshot of 75,000 blocks (18 MB): run sampled, the
 *                walk names far more blocks than the sample holds
 *
 * Output (stdout), the program's own books, one line a node it reported:
 *   own snapshot=N path=PATH blocks=B bytes=S walk=W
 * (the node's own blocks, not its children's; bytes requested, walk the
 * bytes the walk counted; PATH labels joined by '/'), and
 *   own snapshot=N total blocks=B bytes=S walk=W
 *   own frag snapshot=N pages=P path=PATH (4 KiB pages its blocks touch)
 *   own bad unknown=N cut=N notutf8=N strays=N */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "preload/vheap.h"

#define ARENA (64u << 20)
#define MAXOBJ 32768

static char *arena;
static size_t arena_used;
static int heap;

struct obj {
    char *p;
    size_t size;
};

struct owner {
    const char *path;              /* as the analyzer will print it        */
    const char *labels[4];         /* pushed in order                      */
    struct obj objs[MAXOBJ];
    int n;
    long blocks, bytes, walk;      /* this snapshot's books                */
    long pages;                    /* 4 KiB pages its counted blocks touch  */
};

static size_t rounded(size_t n) { return (n + 15) & ~(size_t)15; }

static char *arena_alloc(size_t size)
{
    char *p = arena + arena_used;
    arena_used += rounded(size);
    vheap_alloc(heap, p, size, rounded(size));
    return p;
}

static void arena_free(const struct obj *o)
{
    vheap_free(heap, o->p);        /* a bump arena: the space is not reused */
}

static void give(struct owner *w, int n, size_t base)
{
    for (int i = 0; i < n; i++) {
        size_t size = base + (size_t)(i * 37 % 200);
        w->objs[w->n].p = arena_alloc(size);
        w->objs[w->n++].size = size;
    }
}

/* The walk over one owner: push its labels, report each object it reaches
 * (a block reached again too: vheap keeps its first owner), count those
 * not yet marked, pop. `marked` is the walk's mark bit per granule. */
static unsigned char *marked;

static void walk(struct owner *w)
{
    int depth = 0;
    for (; depth < 4 && w->labels[depth]; depth++)
        vheap_own_push(w->labels[depth]);
    static unsigned char page[ARENA / 4096];
    memset(page, 0, sizeof page);
    w->blocks = w->bytes = w->walk = w->pages = 0;
    for (int i = 0; i < w->n; i++) {
        size_t g = (size_t)(w->objs[i].p - arena) / 16;
        vheap_owned(w->objs[i].p, rounded(w->objs[i].size));
        if (marked[g])
            continue;              /* the walk counts a block once */
        marked[g] = 1;
        size_t off = (size_t)(w->objs[i].p - arena), end = off + rounded(w->objs[i].size);
        for (size_t pg = off / 4096; pg <= (end - 1) / 4096; pg++)
            if (!page[pg]++)
                w->pages++;
        w->blocks++;
        w->bytes += (long)w->objs[i].size;
        w->walk += (long)rounded(w->objs[i].size);
    }
    while (depth--)
        vheap_own_pop();
}

static struct owner ames = { "arvo/vane/ames", { "arvo", "vane", "ames" } };
static struct owner behn = { "arvo/vane/behn", { "arvo", "vane", "behn" } };
static struct owner hoon = { "arvo/hoon", { "arvo", "hoon" } };
static struct owner cold = { "jets/cold jet state", { "jets", "cold jet state" } };
static struct owner *all[] = { &ames, &behn, &hoon, &cold };

static void books(int snap, long meta)
{
    long b = 0, s = 0, w = 0;
    for (unsigned i = 0; i < sizeof all / sizeof *all; i++) {
        printf("own snapshot=%d path=%s blocks=%ld bytes=%ld walk=%ld\n", snap, all[i]->path,
               all[i]->blocks, all[i]->bytes, all[i]->walk);
        printf("own frag snapshot=%d pages=%ld path=%s\n", snap, all[i]->pages, all[i]->path);
        b += all[i]->blocks;
        s += all[i]->bytes;
        w += all[i]->walk;
    }
    printf("own snapshot=%d path=road/metadata blocks=0 bytes=0 walk=%ld\n", snap, meta);
    printf("own snapshot=%d total blocks=%ld bytes=%ld walk=%ld\n", snap, b, s, w + meta);
}

static void snapshot(int snap, const char *label)
{
    memset(marked, 0, ARENA / 16);
    vheap_own_begin(heap, label);
    for (unsigned i = 0; i < sizeof all / sizeof *all; i++)
        walk(all[i]);
    vheap_own_push("road");
    vheap_own_push("metadata");
    vheap_owned(NULL, 4096);       /* the arena's own table: no block */
    vheap_own_pop();
    vheap_own_pop();
    vheap_own_end();
    books(snap, 4096);
}

/* Objects two owners reach: ames's first, so behn's walk skips them. */
static void share(void)
{
    for (int i = 0; i < 5; i++)
        behn.objs[behn.n++] = ames.objs[i];
}

static void bad(void)
{
    static char longlabel[301];
    memset(longlabel, 'x', 300);
    vheap_owned(arena, 16);        /* outside a snapshot: ignored */
    vheap_own_pop();
    vheap_own_begin(heap, "bad");
    vheap_own_pop();               /* at the top: nothing */
    vheap_own_push("\xff\xfe not utf-8");
    vheap_owned(arena + ARENA - 4096, 64);  /* never handed out */
    vheap_own_pop();
    vheap_own_push(longlabel);
    vheap_own_pop();
    for (unsigned i = 0; i < sizeof all / sizeof *all; i++)
        walk(all[i]);
    vheap_own_end();
    vheap_own_end();               /* no snapshot open: ignored */
    books(1, 0);
    printf("own bad unknown=1 cut=1 notutf8=1 strays=3\n");
}

static void die(void)
{
    static struct owner a = { "a", { "a" } }, b = { "a/b", { "a", "b" } };
    give(&a, 500, 24);
    give(&b, 300, 40);
    memset(marked, 0, ARENA / 16);
    vheap_own_begin(heap, "dying");
    walk(&a);                      /* complete: b's push flushes it */
    vheap_own_push("a");
    vheap_own_push("b");
    for (int i = 0; i < 150; i++)
        vheap_owned(b.objs[i].p, rounded(b.objs[i].size));
    printf("own snapshot=1 path=a blocks=%ld bytes=%ld walk=%ld\n", a.blocks, a.bytes, a.walk);
    printf("own snapshot=1 path=a/b blocks<=150\n");
    fflush(stdout);
    raise(SIGKILL);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ok";
    arena = mmap(NULL, ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    marked = calloc(ARENA / 16, 1);
    if (arena == MAP_FAILED || !marked)
        return 1;
    heap = vheap_heap_create("arena", 0, arena, ARENA);
    if (!strcmp(mode, "die")) {
        die();
        return 1;
    }
    if (!strcmp(mode, "many")) {
        give(&ames, 25000, 64);
        give(&behn, 20000, 200);
        give(&hoon, 10000, 300);
        give(&cold, 20000, 100);
        snapshot(1, "many");
        return 0;
    }
    give(&ames, 40, 64);
    give(&behn, 10, 32);
    give(&hoon, 20, 300);
    give(&cold, 15, 100);
    share();
    give(&hoon, 0, 0);
    arena_alloc(5000);             /* garbage: no owner reaches it */
    if (!strcmp(mode, "bad")) {
        bad();
        return 0;
    }
    snapshot(1, "walk 1");
    give(&ames, 30, 500);          /* ames grows */
    for (int i = 5; i < 10; i++)   /* behn lets go of five of its own */
        arena_free(&behn.objs[i]);
    memmove(&behn.objs[5], &behn.objs[10], (size_t)(behn.n - 10) * sizeof *behn.objs);
    behn.n -= 5;
    snapshot(2, "walk 2");
    return 0;
}
