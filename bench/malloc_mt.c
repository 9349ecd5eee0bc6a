/* malloc_mt.c — the multi-threaded, malloc-heavy workload of `make bench`.
 * Each thread serves "requests": it builds a small document tree through a
 * 10–20 frame deep chain of calls (mixed sizes, calloc, realloc-grown
 * strings, the odd large buffer), walks it, then frees most of it at once,
 * keeps some blocks in a long-lived window and hands some to the next thread,
 * which frees them. It prints the calls it made, so a profile can be checked
 * against what really happened.
 *
 * usage: malloc_mt [THREADS [ROUNDS [SEED]]]   (defaults 4, 60000, 1) */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

enum { WINDOW = 2048, INBOX = 16384, BATCH = 64, MAX_THREADS = 16 };

/* Blocks handed to a thread to free; the owner empties it in one swap. */
struct inbox {
    pthread_mutex_t lock;
    size_t n;
    void *slot[INBOX];
};

struct node {
    struct node *child;            /* the deeper level                      */
    struct node *leaves;           /* leaves of this level (list)           */
    struct node *next;             /* next leaf                             */
    char *text;
    size_t len;
    uint64_t value;
};

struct worker {
    pthread_t thread;
    unsigned id;
    uint64_t rng;
    unsigned long rounds;
    unsigned long long allocs, reallocs, frees, checksum;
    struct inbox *mine, *next;
    void *batch[BATCH];
    size_t nbatch;
    void *window[WINDOW];
};

static pthread_barrier_t done_producing;

static uint64_t rnd(struct worker *w)
{
    /* xorshift64*: cheap and deterministic per thread */
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return w->rng * 0x2545F4914F6CDD1DULL;
}

static void die(const char *what)
{
    fprintf(stderr, "malloc_mt: %s failed\n", what);
    exit(1);
}

static NOINLINE void *checked(void *p, const char *what)
{
    if (!p)
        die(what);
    return p;
}

static void release(struct worker *w, void *p)
{
    free(p);
    w->frees++;
}

/* Mostly small strings, some medium, rarely a large one: roughly the shape
 * of real heaps (most blocks under 256 B). */
static size_t text_size(struct worker *w)
{
    uint64_t r = rnd(w) % 1000;
    if (r < 700)
        return 8 + rnd(w) % 120;
    if (r < 960)
        return 128 + rnd(w) % 896;
    if (r < 998)
        return 1024 + rnd(w) % 15360;
    return 16384 + rnd(w) % 49152;
}

/* A string grown the way builders grow them: realloc to double capacity. */
static NOINLINE char *build_text(struct worker *w, size_t want)
{
    size_t cap = 16, len = 0;
    char *s = checked(malloc(cap), "malloc");
    w->allocs++;
    while (len < want) {
        size_t piece = 8 + rnd(w) % 56;
        if (len + piece >= cap) {
            while (len + piece >= cap)
                cap *= 2;
            s = checked(realloc(s, cap), "realloc");
            w->reallocs++;
        }
        memset(s + len, 'a' + (int)(piece % 26), piece);
        len += piece;
    }
    s[len] = '\0';
    return s;
}

static NOINLINE struct node *make_leaf(struct worker *w)
{
    struct node *n = checked(calloc(1, sizeof *n), "calloc");
    w->allocs++;
    n->len = text_size(w);
    n->text = build_text(w, n->len);
    n->value = rnd(w);
    return n;
}

static NOINLINE struct node *add_leaves(struct worker *w, struct node *n)
{
    unsigned k = (unsigned)(rnd(w) % 4);
    for (unsigned i = 0; i < k; i++) {
        struct node *leaf = make_leaf(w);
        leaf->next = n->leaves;
        n->leaves = leaf;
    }
    return n;
}

static struct node *build_value(struct worker *w, unsigned depth, unsigned kind);

static NOINLINE struct node *build_object(struct worker *w, unsigned depth, unsigned kind)
{
    struct node *n = checked(malloc(sizeof *n), "malloc");
    w->allocs++;
    memset(n, 0, sizeof *n);
    n->value = depth;
    add_leaves(w, n);
    n->child = build_value(w, depth - 1, kind);
    return n;
}

static NOINLINE struct node *build_array(struct worker *w, unsigned depth, unsigned kind)
{
    struct node *n = checked(calloc(1, sizeof *n), "calloc");
    w->allocs++;
    /* an array's backing store: a small vector of slots */
    n->len = 4 + rnd(w) % 60;
    n->text = checked(calloc(n->len, sizeof(void *)), "calloc");
    w->allocs++;
    n->child = build_value(w, depth - 1, kind);
    return n;
}

/* The shape of a level follows from the request kind, as in a real parser
 * where the input format fixes the call paths: a few dozen distinct paths,
 * not 2^depth. */
static NOINLINE struct node *build_value(struct worker *w, unsigned depth, unsigned kind)
{
    if (depth == 0)
        return make_leaf(w);
    return ((kind >> (depth % 3)) & 1) ? build_object(w, depth, kind)
                                       : build_array(w, depth, kind);
}

static NOINLINE struct node *parse_request(struct worker *w)
{
    unsigned depth = 6 + (unsigned)(rnd(w) % 9);   /* 6..14 levels */
    return build_value(w, depth, (unsigned)(rnd(w) % 8));
}

/* FNV-1a over a string: the "work" a request does with its data, so the
 * program is not only allocator calls. */
static uint64_t hash_text(const char *s, uint64_t h)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

static NOINLINE uint64_t walk(const struct node *n)
{
    uint64_t sum = 0;
    for (; n; n = n->child) {
        sum += n->value + n->len;
        for (const struct node *l = n->leaves; l; l = l->next)
            sum += hash_text(l->text, l->value);
    }
    return sum;
}

static void flush_batch(struct worker *w)
{
    struct inbox *in = w->next;
    pthread_mutex_lock(&in->lock);
    size_t room = INBOX - in->n, give = w->nbatch < room ? w->nbatch : room;
    memcpy(in->slot + in->n, w->batch, give * sizeof(void *));
    in->n += give;
    pthread_mutex_unlock(&in->lock);
    for (size_t i = give; i < w->nbatch; i++)   /* the neighbour is behind */
        release(w, w->batch[i]);
    w->nbatch = 0;
}

/* Most blocks die here; 1 in 16 outlives the request in the window, 1 in 16
 * is handed to the next thread. */
static NOINLINE void dispose(struct worker *w, void *p)
{
    if (!p)
        return;
    uint64_t r = rnd(w) & 15;
    if (r == 0) {
        size_t slot = rnd(w) % WINDOW;
        void *old = w->window[slot];
        w->window[slot] = p;
        p = old;
    } else if (r == 1 && w->next != w->mine) {
        w->batch[w->nbatch++] = p;
        if (w->nbatch == BATCH)
            flush_batch(w);
        return;
    }
    if (p)
        release(w, p);
}

static NOINLINE void free_tree(struct worker *w, struct node *n)
{
    while (n) {
        struct node *child = n->child;
        for (struct node *l = n->leaves, *next; l; l = next) {
            next = l->next;
            dispose(w, l->text);
            release(w, l);
        }
        dispose(w, n->text);
        release(w, n);
        n = child;
    }
}

static NOINLINE void drain_inbox(struct worker *w)
{
    void *local[INBOX];
    pthread_mutex_lock(&w->mine->lock);
    size_t n = w->mine->n;
    memcpy(local, w->mine->slot, n * sizeof(void *));
    w->mine->n = 0;
    pthread_mutex_unlock(&w->mine->lock);
    for (size_t i = 0; i < n; i++)
        release(w, local[i]);
}

static NOINLINE void handle_request(struct worker *w)
{
    struct node *doc = parse_request(w);
    w->checksum += walk(doc);
    free_tree(w, doc);
}

static NOINLINE void serve(struct worker *w)
{
    for (unsigned long i = 0; i < w->rounds; i++) {
        handle_request(w);
        if ((i & 63) == 0)
            drain_inbox(w);
    }
    if (w->nbatch)
        flush_batch(w);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    serve(w);
    pthread_barrier_wait(&done_producing);
    drain_inbox(w);
    for (size_t i = 0; i < WINDOW; i++)
        if (w->window[i])
            release(w, w->window[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned threads = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 4;
    unsigned long rounds = argc > 2 ? strtoul(argv[2], NULL, 10) : 60000;
    unsigned long seed = argc > 3 ? strtoul(argv[3], NULL, 10) : 1;
    if (threads < 1 || threads > MAX_THREADS || rounds < 1) {
        fprintf(stderr, "usage: malloc_mt [THREADS(1-%d) [ROUNDS [SEED]]]\n", MAX_THREADS);
        return 2;
    }

    /* The bookkeeping arrays are not part of the workload: one allocation
     * each, counted all the same. */
    struct worker *ws = checked(calloc(threads, sizeof *ws), "calloc");
    struct inbox *boxes = checked(calloc(threads, sizeof *boxes), "calloc");
    unsigned long long setup_allocs = 2;
    pthread_barrier_init(&done_producing, NULL, threads);
    for (unsigned i = 0; i < threads; i++)
        pthread_mutex_init(&boxes[i].lock, NULL);
    for (unsigned i = 0; i < threads; i++) {
        ws[i].id = i;
        ws[i].rng = 0x9E3779B97F4A7C15ULL * (seed + i + 1);
        ws[i].rounds = rounds;
        ws[i].mine = &boxes[i];
        ws[i].next = &boxes[(i + 1) % threads];
    }
    for (unsigned i = 0; i < threads; i++)
        if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]))
            die("pthread_create");

    unsigned long long allocs = setup_allocs, reallocs = 0, frees = 0, sum = 0;
    for (unsigned i = 0; i < threads; i++) {
        pthread_join(ws[i].thread, NULL);
        allocs += ws[i].allocs;
        reallocs += ws[i].reallocs;
        frees += ws[i].frees;
        sum += ws[i].checksum;
    }
    free(boxes);
    free(ws);
    frees += 2;
    printf("malloc_mt: threads=%u rounds=%lu allocs=%llu reallocs=%llu frees=%llu "
           "checksum=%llx\n", threads, rounds, allocs, reallocs, frees, sum);
    return allocs + reallocs == 0;
}
