/* test_events.c — the stored event stream and live-set checkpoints against
 * synthetic captures: the exact normalized sequence (realloc halves, destroy
 * expansion, implicit frees, temporary flags, moves), seeking by time,
 * liveset__at against the capture writer's own model at many instants
 * across tiny blocks and checkpoints, and clean errors on corrupt blobs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "analyze/cmd/cli.h"
#include "analyze/store/db.h"
#include "analyze/store/events.h"
#include "analyze/load/load.h"
#include "tests/unit/capture_builder.h"
#include "tests/unit/load_fixture.h"

/* ---- helpers --------------------------------------------------------------- */

/* Writes and loads the capture with `block` events per stored block and a
 * checkpoint interval of `cp` events; opens the DB read-only. */
static sqlite3 *load_opts(struct capb *b, uint32_t block, uint64_t cp)
{
    struct load_opts o = { .progress = 0, .no_symbols = 1, .event_block = block,
                           .checkpoint_events = cp };
    return fx_load(b, &o);
}

/* Every event from from_time on; *n of them (free the array). */
static struct vh_ev *read_all(sqlite3 *db, uint64_t from_time, size_t *n)
{
    struct evstream *s;
    struct vh_ev ev, *v = NULL;
    size_t cap = 0;
    char err[256];
    int rc;

    *n = 0;
    if (evstream__open(db, from_time, &s, err, sizeof err))
        fail_msg("evstream__open: %s", err);
    while ((rc = evstream__next(s, &ev)) == 1) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 256;
            v = realloc(v, cap * sizeof *v);
            assert_non_null(v);
        }
        v[(*n)++] = ev;
    }
    if (rc < 0)
        fail_msg("evstream__next: %s", evstream__error(s));
    evstream__close(s);
    return v;
}

/* ---- the exact sequence ------------------------------------------------------- */

struct want {
    uint64_t time;
    uint8_t kind, flags;
    uint64_t addr, to, size, old_size, usable;
    uint32_t heap, stack;
};

static void test_normalized_sequence(void **state)
{
    struct capb b;
    struct capb_alloc a;
    (void)state;

    uint32_t ch = capb__start(&b, 1, 77);
    capb__alloc(&b, ch, 100, 0x1000, 100, 112, 1);
    capb__free(&b, ch, 110, 0x1000);                   /* temporary */
    capb__alloc(&b, ch, 120, 0x2000, 50, 56, 1);
    capb__alloc(&b, ch, 130, 0x3000, 60, 64, 1);
    capb__free(&b, ch, 140, 0x2000);                   /* not: C came after */
    capb__resize(&b, ch, 150, 0x3000, 80, 88, 2);      /* in place, not temporary */
    capb__alloc(&b, ch, 160, 0x4000, 10, 16, 1);
    capb__resize(&b, ch, 170, 0x4000, 20, 24, 2);      /* temporary: D was the latest */
    /* moving realloc of C: its free half, then the new block */
    capb__free_ex(&b, ch, 180, 0, VH_FN_REALLOC, 0x3000, VH_RF_REALLOC);
    a = (struct capb_alloc){ .addr = 0x5000, .size = 200, .usable = 208, .stack = 2,
                             .func = VH_FN_REALLOC, .flags = VH_RF_REALLOC, .tag = 3 };
    capb__alloc_ex(&b, ch, VH_REC_ALLOC, 180, &a);
    capb__alloc(&b, ch, 190, 0x4000, 30, 32, 1);       /* over live D: implicit free */
    a = (struct capb_alloc){ .size = 1ull << 40, .stack = 1, .flags = VH_RF_FAILED };
    capb__alloc_ex(&b, ch, VH_REC_ALLOC, 200, &a);
    capb__resize(&b, ch, 205, 0x9000, 40, 48, 2);      /* never seen: where it starts */
    capb__free(&b, ch, 206, 0xdead0);                  /* unknown: no event */
    capb__heap_create(&b, ch, 210, 3, 0, 0x100000, 1 << 20, "loom");
    capb__heap_create(&b, ch, 215, 4, 3, 0x180000, 1 << 16, "road");
    capb__heap_alloc(&b, ch, 220, 3, 0x100010, 8, 1, 0);
    capb__heap_alloc(&b, ch, 221, 3, 0x100100, 16, 2, 0);
    capb__heap_alloc(&b, ch, 222, 4, 0x180010, 32, 1, 0);
    capb__move(&b, ch, 230, 3, 0x100100, 0x100200);
    capb__move(&b, ch, 235, 3, 0x100010, 0x100200);    /* onto a live block */
    capb__move(&b, ch, 236, 3, 0x777770, 0x100300);    /* unknown: no event */
    capb__heap_destroy(&b, ch, 240, 3);                /* 3 and nested 4 */
    capb__end(&b, ch, 250);

    const struct want w[] = {
        { 100, VH_EV_ALLOC, 0, 0x1000, 0, 100, 0, 112, 0, 1 },
        { 110, VH_EV_FREE, VH_EVF_TEMPORARY, 0x1000, 0, 100, 0, 112, 0, 1 },
        { 120, VH_EV_ALLOC, 0, 0x2000, 0, 50, 0, 56, 0, 1 },
        { 130, VH_EV_ALLOC, 0, 0x3000, 0, 60, 0, 64, 0, 1 },
        { 140, VH_EV_FREE, 0, 0x2000, 0, 50, 0, 56, 0, 1 },
        { 150, VH_EV_RESIZE, 0, 0x3000, 0, 80, 60, 88, 0, 2 },
        { 160, VH_EV_ALLOC, 0, 0x4000, 0, 10, 0, 16, 0, 1 },
        { 170, VH_EV_RESIZE, VH_EVF_TEMPORARY, 0x4000, 0, 20, 10, 24, 0, 2 },
        { 180, VH_EV_FREE, VH_EVF_REALLOC, 0x3000, 0, 80, 0, 88, 0, 2 },
        { 180, VH_EV_ALLOC, VH_EVF_REALLOC, 0x5000, 0, 200, 0, 208, 0, 2 },
        { 190, VH_EV_FREE, VH_EVF_IMPLICIT, 0x4000, 0, 20, 0, 24, 0, 2 },
        { 190, VH_EV_ALLOC, 0, 0x4000, 0, 30, 0, 32, 0, 1 },
        { 200, VH_EV_FAILED, 0, 0, 0, 1ull << 40, 0, 0, 0, 1 },
        { 205, VH_EV_ALLOC, VH_EVF_REALLOC, 0x9000, 0, 40, 0, 48, 0, 2 },
        { 220, VH_EV_ALLOC, 0, 0x100010, 0, 8, 0, 16, 3, 1 },
        { 221, VH_EV_ALLOC, 0, 0x100100, 0, 16, 0, 24, 3, 2 },
        { 222, VH_EV_ALLOC, 0, 0x180010, 0, 32, 0, 40, 4, 1 },
        { 230, VH_EV_MOVE, 0, 0x100100, 0x100200, 16, 0, 24, 3, 2 },
        { 235, VH_EV_FREE, VH_EVF_IMPLICIT, 0x100200, 0, 16, 0, 24, 3, 2 },
        { 235, VH_EV_MOVE, 0, 0x100010, 0x100200, 8, 0, 16, 3, 1 },
        { 240, VH_EV_FREE, VH_EVF_DESTROY, 0x100200, 0, 8, 0, 16, 3, 1 },
        { 240, VH_EV_FREE, VH_EVF_DESTROY, 0x180010, 0, 32, 0, 40, 4, 1 },
    };
    const size_t nw = sizeof w / sizeof w[0];

    /* blocks of 3 events and a checkpoint every few: every boundary is
     * crossed somewhere */
    sqlite3 *db = load_opts(&b, 3, 4);
    size_t n;
    struct vh_ev *v = read_all(db, 0, &n);
    assert_int_equal(n, nw);
    for (size_t i = 0; i < nw; i++) {
        assert_int_equal(v[i].seq, i);
        assert_int_equal(v[i].time, w[i].time);
        assert_int_equal(v[i].kind, w[i].kind);
        assert_int_equal(v[i].flags, w[i].flags);
        assert_int_equal(v[i].addr, w[i].addr);
        assert_int_equal(v[i].to, w[i].to);
        assert_int_equal(v[i].size, w[i].size);
        assert_int_equal(v[i].old_size, w[i].old_size);
        assert_int_equal(v[i].usable, w[i].usable);
        assert_int_equal(v[i].heap_id, w[i].heap);
        assert_int_equal(v[i].stack_id, w[i].stack);
        assert_int_equal(v[i].tid, 77);
        assert_int_equal(v[i].tag_id, w[i].addr == 0x5000 && w[i].kind == VH_EV_ALLOC ? 3 : 0);
    }
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key='events'"), (long long)nw);
    assert_int_equal(q(db, "SELECT sum(count) FROM events"), (long long)nw);
    assert_true(q(db, "SELECT count(DISTINCT seq) FROM checkpoints") >= 2);

    /* seeking: the first event at or after each instant */
    for (uint64_t t = 0; t <= 260; t += 1) {
        size_t m, first = 0;
        struct vh_ev *u = read_all(db, t, &m);
        while (first < nw && w[first].time < t)
            first++;
        assert_int_equal(m, nw - first);
        if (m)
            assert_int_equal(u[0].seq, first);
        free(u);
    }

    /* the live set at a few instants, against what the capture did */
    struct liveset *ls;
    char err[256];
    assert_int_equal(liveset__at(db, 99, -1, &ls, err, sizeof err), 0);
    assert_int_equal(ls->n, 0);
    liveset__free(ls);
    assert_int_equal(liveset__at(db, 150, -1, &ls, err, sizeof err), 0);
    assert_int_equal(ls->n, 1);                        /* C, resized */
    assert_int_equal(ls->blocks[0].addr, 0x3000);
    assert_int_equal(ls->blocks[0].size, 80);
    assert_int_equal(ls->blocks[0].usable, 88);
    assert_int_equal(ls->blocks[0].stack_id, 2);
    assert_int_equal(ls->blocks[0].time, 150);
    assert_int_equal(ls->blocks[0].tid, 77);
    assert_int_equal(ls->time, 150);
    liveset__free(ls);
    assert_int_equal(liveset__at(db, 235, -1, &ls, err, sizeof err), 0);
    assert_int_equal(ls->n, 5);                        /* 0x4000 0x5000 0x9000, 3: 1, 4: 1 */
    assert_int_equal(ls->blocks[0].addr, 0x4000);
    assert_int_equal(ls->blocks[1].addr, 0x5000);
    assert_int_equal(ls->blocks[1].tag_id, 3);
    assert_int_equal(ls->blocks[2].addr, 0x9000);
    assert_int_equal(ls->blocks[3].heap_id, 3);
    assert_int_equal(ls->blocks[3].addr, 0x100200);    /* moved: keeps size, stack, time */
    assert_int_equal(ls->blocks[3].size, 8);
    assert_int_equal(ls->blocks[3].stack_id, 1);
    assert_int_equal(ls->blocks[3].time, 220);
    assert_int_equal(ls->blocks[4].heap_id, 4);
    liveset__free(ls);
    assert_int_equal(liveset__at(db, 235, 3, &ls, err, sizeof err), 0);
    assert_int_equal(ls->n, 1);
    assert_int_equal(ls->blocks[0].addr, 0x100200);
    liveset__free(ls);
    assert_int_equal(liveset__at(db, UINT64_MAX, -1, &ls, err, sizeof err), 0);
    assert_int_equal(ls->n, 3);                        /* the heaps are gone */
    assert_int_equal(ls->n, q(db, "SELECT count(*) FROM leaks"));
    liveset__free(ls);
    free(v);
    done(db, &b);
}

/* ---- against the writer's model, at many instants ------------------------- */

#define NOPS 4000
#define NHEAPS 3                       /* capture ids 0 (system), 1, 2      */

struct mblock {
    uint64_t addr, size, usable, time;
    int gen;                           /* which heap: index in gen_name     */
    uint32_t stack, tag;
};

struct model {
    struct mblock *b;
    size_t n;
};

static struct mblock *m_find(struct model *m, int gen, uint64_t addr)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->b[i].gen == gen && m->b[i].addr == addr)
            return &m->b[i];
    return NULL;
}

static void m_del(struct model *m, struct mblock *x)
{
    *x = m->b[--m->n];
}

static void m_put(struct model *m, const struct mblock *x)
{
    struct mblock *o = m_find(m, x->gen, x->addr);
    if (o) {
        *o = *x;
        return;
    }
    m->b = realloc(m->b, (m->n + 1) * sizeof *m->b);
    assert_non_null(m->b);
    m->b[m->n++] = *x;
}

static uint64_t rs = 0x1234567u;
static uint32_t rnd(uint32_t n)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs % n);
}

static int64_t dbid[8];                /* DB heap id of each generation     */

static int by_key(const void *x, const void *y)
{
    const struct mblock *a = x, *b = y;
    if (dbid[a->gen] != dbid[b->gen])
        return dbid[a->gen] < dbid[b->gen] ? -1 : 1;
    return (a->addr > b->addr) - (a->addr < b->addr);
}

static void check_at(sqlite3 *db, uint64_t t, const struct model *snap, int64_t heap)
{
    struct liveset *ls;
    char err[256];
    struct mblock *want = malloc((snap->n + 1) * sizeof *want);
    size_t n = 0;

    assert_non_null(want);
    for (size_t i = 0; i < snap->n; i++)
        if (heap < 0 || dbid[snap->b[i].gen] == heap)
            want[n++] = snap->b[i];
    qsort(want, n, sizeof *want, by_key);
    if (liveset__at(db, t, heap, &ls, err, sizeof err))
        fail_msg("liveset__at(%llu): %s", (unsigned long long)t, err);
    if (ls->n != n)
        fail_msg("liveset__at(%llu, heap %lld): %zu blocks, model %zu", (unsigned long long)t,
                 (long long)heap, ls->n, n);
    for (size_t i = 0; i < n; i++) {
        const struct vh_block *g = &ls->blocks[i];
        assert_int_equal(g->heap_id, dbid[want[i].gen]);
        assert_int_equal(g->addr, want[i].addr);
        assert_int_equal(g->size, want[i].size);
        assert_int_equal(g->usable, want[i].usable);
        assert_int_equal(g->time, want[i].time);
        assert_int_equal(g->stack_id, want[i].stack);
        assert_int_equal(g->tag_id, want[i].tag);
        assert_int_equal(g->tid, 55);
    }
    liveset__free(ls);
    free(want);
}

static void test_liveset_against_model(void **state)
{
    static const char *gen_name[] = { "malloc", "h1", "h2", "h1b", "h2b" };
    struct capb b;
    struct model m = { 0 }, *snap = calloc(NOPS, sizeof *snap);
    uint64_t *when = calloc(NOPS, sizeof *when);
    int cur[NHEAPS] = { 0, 1, 2 };     /* generation of each capture id    */
    uint64_t t = 1;
    (void)state;

    assert_non_null(snap);
    assert_non_null(when);
    capb__init(&b, 1u << 20);
    uint32_t ch = capb__chunk(&b);
    capb__thread(&b, ch, 0, 55);
    capb__heap_create(&b, ch, 0, 1, 0, 0x1000000, 1 << 20, "h1");
    capb__heap_create(&b, ch, 0, 2, 1, 0x2000000, 1 << 20, "h2");
    for (int op = 0; op < NOPS; op++) {
        uint16_t id = (uint16_t)rnd(NHEAPS);
        int gen = cur[id];
        uint64_t addr = (id ? 0x1000000ull * id : 0x10000) + 16 * (uint64_t)rnd(300);
        uint64_t size = 1 + rnd(500), usable = size + rnd(16);
        uint32_t stack = 1 + rnd(5);
        uint16_t tag = (uint16_t)rnd(3);
        struct mblock *x = NULL;
        uint32_t k = rnd(100);

        t += rnd(3);                   /* ties: 1 in 3 */
        if (m.n && k < 35) {           /* free a live block of this heap    */
            for (size_t tries = 0; tries < 8 && !x; tries++) {
                struct mblock *c = &m.b[rnd((uint32_t)m.n)];
                if (c->gen == gen)
                    x = c;
            }
            if (x) {
                capb__free_ex(&b, ch, t, id, id ? VH_FN_CUSTOM : VH_FN_FREE, x->addr, 0);
                m_del(&m, x);
            } else {
                capb__free_ex(&b, ch, t, id, VH_FN_FREE, addr | 8, 0);  /* unknown */
            }
        } else if (k < 45) {           /* resize in place (maybe unknown)   */
            struct capb_alloc a = { .addr = addr, .size = size, .usable = usable,
                                    .stack = stack, .heap = id, .tag = tag,
                                    .func = VH_FN_REALLOC };
            capb__alloc_ex(&b, ch, VH_REC_RESIZE, t, &a);
            m_put(&m, &(struct mblock){ addr, size, usable, t, gen, stack, tag });
        } else if (k < 52 && m.n) {    /* moving realloc                    */
            x = &m.b[rnd((uint32_t)m.n)];
            uint16_t xid = (uint16_t)(x->gen == cur[1] ? 1 : x->gen == cur[2] ? 2 : 0);
            uint64_t to = (xid ? 0x1000000ull * xid : 0x10000) + 16 * (uint64_t)rnd(300);
            if (to == x->addr)
                to += 16;
            capb__free_ex(&b, ch, t, xid, VH_FN_REALLOC, x->addr, VH_RF_REALLOC);
            struct capb_alloc a = { .addr = to, .size = size, .usable = usable, .stack = stack,
                                    .heap = xid, .tag = tag, .func = VH_FN_REALLOC,
                                    .flags = VH_RF_REALLOC };
            capb__alloc_ex(&b, ch, VH_REC_ALLOC, t, &a);
            int xgen = x->gen;
            m_del(&m, x);
            m_put(&m, &(struct mblock){ to, size, usable, t, xgen, stack, tag });
        } else if (k < 58 && id) {     /* compaction moves a block          */
            uint64_t from = addr;
            if (m.n && rnd(4)) {
                for (size_t tries = 0; tries < 8 && !x; tries++) {
                    struct mblock *c = &m.b[rnd((uint32_t)m.n)];
                    if (c->gen == gen)
                        x = c;
                }
                if (x)
                    from = x->addr;
            }
            uint64_t to = 0x1000000ull * id + 16 * (uint64_t)rnd(300);
            capb__move(&b, ch, t, id, from, to);
            x = m_find(&m, gen, from);
            if (x && from != to) {
                struct mblock keep = *x;
                m_del(&m, x);
                keep.addr = to;
                m_put(&m, &keep);
            }
        } else if (k < 60) {           /* failed: no change                 */
            struct capb_alloc a = { .size = 1ull << 41, .stack = stack, .heap = id,
                                    .flags = VH_RF_FAILED };
            capb__alloc_ex(&b, ch, VH_REC_ALLOC, t, &a);
        } else if (k == 60 && op > NOPS / 2 && cur[1] == 1) {
            /* destroy h1 (and h2 inside it), then make both again */
            capb__heap_destroy(&b, ch, t, 1);
            for (size_t i = m.n; i-- > 0;)
                if (m.b[i].gen == 1 || m.b[i].gen == 2)
                    m_del(&m, &m.b[i]);
            t += rnd(2);
            capb__heap_create(&b, ch, t, 1, 0, 0x1000000, 1 << 20, "h1b");
            capb__heap_create(&b, ch, t, 2, 1, 0x2000000, 1 << 20, "h2b");
            cur[1] = 3;
            cur[2] = 4;
        } else {                       /* alloc (over a live one: implicit) */
            struct capb_alloc a = { .addr = addr, .size = size, .usable = usable,
                                    .stack = stack, .heap = id, .tag = tag };
            capb__alloc_ex(&b, ch, VH_REC_ALLOC, t, &a);
            m_put(&m, &(struct mblock){ addr, size, usable, t, gen, stack, tag });
        }
        snap[op].n = m.n;
        snap[op].b = malloc((m.n + 1) * sizeof *m.b);
        assert_non_null(snap[op].b);
        memcpy(snap[op].b, m.b, m.n * sizeof *m.b);
        when[op] = t;
    }
    assert_int_equal(cur[1], 3);      /* the destroy happened */
    capb__end(&b, ch, t + 10);

    sqlite3 *db = load_opts(&b, 7, 50);
    for (int g = 0; g < 5; g++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT id FROM heaps WHERE name = '%s'", gen_name[g]);
        dbid[g] = q(db, "%s", sql);
        assert_true(dbid[g] >= 0);
    }
    /* many checkpoints, at block starts */
    assert_true(q(db, "SELECT count(DISTINCT seq) FROM checkpoints") > 5);
    assert_int_equal(q(db, "SELECT count(*) FROM (SELECT DISTINCT seq FROM checkpoints) c "
                           "WHERE c.seq NOT IN (SELECT first_seq FROM events) AND "
                           "c.seq <> (SELECT value FROM meta WHERE key = 'events')"), 0);

    /* every instant where the next operation comes later, a third of them
     * per heap too; and before the first */
    struct model empty = { 0 };
    check_at(db, 0, &empty, -1);
    for (int op = 0; op < NOPS; op++) {
        if (op + 1 < NOPS && when[op + 1] == when[op])
            continue;
        if (op % 3 == 0)
            check_at(db, when[op], &snap[op], -1);
        else if (op % 3 == 1)
            check_at(db, when[op], &snap[op], dbid[cur[0]]);
        else
            check_at(db, when[op], &snap[op], dbid[op > NOPS / 2 ? 3 : 1]);
    }
    check_at(db, UINT64_MAX, &snap[NOPS - 1], -1);
    /* the end agrees with the loader's own leaks (no heap was destroyed
     * at the end) */
    assert_int_equal(q(db, "SELECT count(*) FROM leaks"), (long long)snap[NOPS - 1].n);

    for (int op = 0; op < NOPS; op++)
        free(snap[op].b);
    free(snap);
    free(when);
    free(m.b);
    done(db, &b);
}

/* Heaps big enough for the loader's radix sort (checkpoints and destroys
 * write blocks in address order; the writer refuses any other order), with
 * addresses over a wide range. */
static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static void test_big_heaps_in_order(void **state)
{
    enum { NSYS = 5000, NLOOM = 3000 };
    struct capb b;
    uint64_t *sys = malloc(NSYS * sizeof *sys), *loom = malloc(NLOOM * sizeof *loom);
    uint64_t t = 1;
    (void)state;

    assert_non_null(sys);
    assert_non_null(loom);
    capb__init(&b, 1u << 20);
    uint32_t ch = capb__chunk(&b);
    capb__thread(&b, ch, 0, 3);
    capb__heap_create(&b, ch, 0, 5, 0, 0x7f0000000000ull, 1ull << 40, "loom");
    for (int i = 0; i < NSYS; i++) {
        /* unique: a random high part and the index in the low bits */
        sys[i] = ((uint64_t)rnd(1u << 30) << 16 | (uint64_t)i) << 4;
        capb__alloc(&b, ch, t++, sys[i], 16 + (uint64_t)i % 100, 32 + (uint64_t)i % 100,
                    1 + (uint32_t)i % 7);
    }
    for (int i = 0; i < NLOOM; i++) {
        loom[i] = 0x7f0000000000ull + (((uint64_t)rnd(1u << 20) << 12 | (uint64_t)i) << 4);
        capb__heap_alloc(&b, ch, t++, 5, loom[i], 8 + (uint64_t)i % 50, 2, 0);
    }
    for (int i = 0; i < NSYS; i += 2)           /* free half of them */
        capb__free(&b, ch, t++, sys[i]);
    capb__heap_destroy(&b, ch, t++, 5);
    capb__end(&b, ch, t + 1);

    uint64_t *order = malloc((NSYS + NLOOM) * sizeof *order);  /* by seq */
    assert_non_null(order);
    memcpy(order, sys, NSYS * sizeof *sys);
    memcpy(order + NSYS, loom, NLOOM * sizeof *loom);
    qsort(sys, NSYS, sizeof *sys, cmp_u64);
    qsort(loom, NLOOM, sizeof *loom, cmp_u64);

    sqlite3 *db = load_opts(&b, 100, 100);
    /* growing from nothing: checkpoints at 100, 300, 900, 2700 events */
    assert_int_equal(q(db, "SELECT count(DISTINCT seq) FROM checkpoints WHERE seq IN "
                           "(100, 300, 900, 2700)"), 4);
    /* a heap's blocks in several parts (of at most an event block's 100) */
    assert_true(q(db, "SELECT max(part) FROM checkpoints WHERE heap_id = 0") >= 1);
    /* event k (from 0) is allocation k at time k + 1: the live set at T
     * holds the first T allocations, by heap and address */
    static const uint64_t at[] = { 100, 2700, 2701, 4999, 5000, 6000, 7999, NSYS + NLOOM };
    for (size_t x = 0; x < sizeof at / sizeof at[0]; x++) {
        struct liveset *ls;
        char err[256];
        size_t ns = at[x] < NSYS ? at[x] : NSYS, nl = at[x] - ns;
        uint64_t *want = malloc(at[x] * sizeof *want);
        assert_non_null(want);
        memcpy(want, order, ns * sizeof *want);
        qsort(want, ns, sizeof *want, cmp_u64);
        memcpy(want + ns, order + NSYS, nl * sizeof *want);
        qsort(want + ns, nl, sizeof *want, cmp_u64);
        assert_int_equal(liveset__at(db, at[x], -1, &ls, err, sizeof err), 0);
        assert_int_equal(ls->n, at[x]);
        for (size_t i = 0; i < ls->n; i++) {
            assert_int_equal(ls->blocks[i].heap_id, i < ns ? 0 : 5);
            assert_int_equal(ls->blocks[i].addr, want[i]);
        }
        liveset__free(ls);
        free(want);
    }
    free(order);

    /* the destroy frees the loom's blocks in address order */
    size_t n, k = 0;
    struct vh_ev *v = read_all(db, 0, &n);
    for (size_t i = 0; i < n; i++) {
        if (!(v[i].flags & VH_EVF_DESTROY))
            continue;
        assert_int_equal(v[i].addr, loom[k]);
        assert_int_equal(v[i].heap_id, 5);
        k++;
    }
    assert_int_equal(k, NLOOM);
    struct liveset *ls;
    char err[256];
    assert_int_equal(liveset__at(db, UINT64_MAX, -1, &ls, err, sizeof err), 0);
    assert_int_equal(ls->n, NSYS / 2);
    liveset__free(ls);
    free(v);
    free(sys);
    free(loom);
    done(db, &b);
}

/* A destroy of an empty heap before anything else (the loader's sort
 * buffer does not exist yet), then its id used again: the second heap's
 * block is freed by its own destroy, under its own DB id. */
static void test_destroy_empty_then_reuse(void **state)
{
    struct capb b;
    size_t n;
    (void)state;

    uint32_t ch = capb__start(&b, 1, 9);
    capb__heap_create(&b, ch, 2, 6, 0, 0, 0, "first");
    capb__heap_destroy(&b, ch, 3, 6);
    capb__heap_create(&b, ch, 4, 6, 0, 0, 0, "second");
    capb__heap_alloc(&b, ch, 5, 6, 0x4000, 24, 1, 0);
    capb__heap_destroy(&b, ch, 6, 6);
    capb__end(&b, ch, 7);
    sqlite3 *db = load_opts(&b, 0, 0);
    long long second = q(db, "SELECT id FROM heaps WHERE name = 'second'");
    assert_true(second >= 0 && second != 6);
    assert_int_equal(q(db, "SELECT destroy_time FROM heaps WHERE name = 'first'"), 3);
    struct vh_ev *v = read_all(db, 0, &n);
    assert_int_equal(n, 2);
    assert_int_equal(v[0].kind, VH_EV_ALLOC);
    assert_int_equal(v[0].heap_id, second);
    assert_int_equal(v[1].kind, VH_EV_FREE);
    assert_int_equal(v[1].flags, VH_EVF_DESTROY);
    assert_int_equal(v[1].heap_id, second);
    assert_int_equal(v[1].time, 6);
    free(v);
    done(db, &b);
}

/* ---- encoding 3's model ------------------------------------------------------- */

static int same_ev(const struct vh_ev *a, const struct vh_ev *b)
{
    return a->time == b->time && a->addr == b->addr && a->to == b->to && a->size == b->size &&
           a->old_size == b->old_size && a->usable == b->usable && a->heap_id == b->heap_id &&
           a->stack_id == b->stack_id && a->tag_id == b->tag_id && a->tid == b->tid &&
           a->kind == b->kind && a->flags == b->flags;
}

static uint64_t varint(const uint8_t **p, const uint8_t *end)
{
    uint64_t v = 0;
    for (unsigned shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    fail_msg("varint cut short");
    return 0;
}

/* Column k of the only events row, decompressed (free it); *n its bytes. */
static uint8_t *column(sqlite3 *db, int k, size_t *n)
{
    sqlite3_stmt *st;
    const uint8_t *p, *end;
    uint64_t len[11];
    uint8_t *out;

    assert_int_equal(sqlite3_prepare_v2(db, "SELECT encoding, data FROM events", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 3);
    p = sqlite3_column_blob(st, 1);
    end = p + sqlite3_column_bytes(st, 1);
    for (int i = 0; i < 10; i++)
        len[i] = varint(&p, end);
    for (int i = 0; i < k; i++)
        p += len[i];
    len[10] = (uint64_t)(end - p);                     /* the last: the rest */
    *n = (size_t)ZSTD_getFrameContentSize(p, (size_t)len[k]);
    out = malloc(*n + 1);
    assert_int_equal(ZSTD_decompress(out, *n + 1, p, (size_t)len[k]), *n);
    sqlite3_finalize(st);
    return out;
}

/* Frees of blocks allocated in the same block refer back to them (also to
 * a RESIZE and a MOVE), allocations at addresses just freed by the same
 * thread at the same usable size name them by rank, one right after the
 * thread's previous allocation says so, another thread's reuse says how
 * many frees back — and what the model cannot say (a free whose fields
 * differ from its allocation's) is spelled out; every event reads back as
 * written. */
static void test_encoding3_model(void **state)
{
    enum { N = 100 };
    static struct vh_ev in[4 * N + 16];
    sqlite3 *db;
    struct evwriter *w;
    struct evwriter_stats st;
    struct vh_ev *out;
    size_t n = 0, nout, len;
    uint64_t t = 100;
    uint8_t *col;
    char err[256];
    (void)state;

#define EV(k, a, sz, us, stk, th, hp, ...)                                                \
    (in[n++] = (struct vh_ev){ .time = t++, .kind = (k), .addr = (a), .size = (sz),       \
                               .usable = (us), .stack_id = (stk), .tid = (th),            \
                               .heap_id = (hp), __VA_ARGS__ })
    for (int i = 0; i < N; i++)                        /* contiguous: 24 + 8 apart */
        EV(VH_EV_ALLOC, 0x10000 + 32 * (uint64_t)i, 20, 24, 1 + i % 3, 7, 0);
    for (int i = N - 1; i >= 0; i--)                   /* each refers back */
        EV(VH_EV_FREE, 0x10000 + 32 * (uint64_t)i, 20, 24, 1 + i % 3, 7, 0);
    for (int i = 0; i < N; i++)                        /* LIFO: the latest freed first */
        EV(VH_EV_ALLOC, 0x10000 + 32 * (uint64_t)i, 18, 24, 4, 7, 0);
    EV(VH_EV_RESIZE, 0x10000, 22, 24, 5, 7, 0, .old_size = 18);
    EV(VH_EV_FREE, 0x10000, 22, 24, 5, 7, 0);          /* refers to the RESIZE */
    EV(VH_EV_ALLOC, 0x90000, 40, 40, 6, 7, 1);
    EV(VH_EV_MOVE, 0x90000, 40, 40, 6, 7, 1, .to = 0x98000);
    EV(VH_EV_FREE, 0x98000, 40, 40, 6, 7, 1);          /* refers to the MOVE */
    EV(VH_EV_FREE, 0x10020, 99, 24, 4, 7, 0);          /* not as allocated: spelled */
    EV(VH_EV_ALLOC, 0x10020, 18, 24, 4, 8, 0);         /* another thread: frees back */
    EV(VH_EV_FAILED, 0, 1u << 30, 0, 9, 8, 0);
#undef EV
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(vh_schema_apply(db, VH_SCHEMA_TABLES, err, sizeof err), 0);
    assert_int_equal(evwriter__new(db, NULL, &w, err, sizeof err), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(evwriter__add(w, &in[i]), 0);
    assert_int_equal(evwriter__finish(w, &st), 0);
    evwriter__free(w);
    assert_int_equal(st.blocks, 1);

    out = read_all(db, 0, &nout);
    assert_int_equal(nout, n);
    for (size_t i = 0; i < n; i++) {
        if (!same_ev(&in[i], &out[i]))
            fail_msg("event %zu reads back different (kind %u addr 0x%" PRIx64 " size %" PRIu64
                     ")", i, out[i].kind, out[i].addr, out[i].size);
        assert_int_equal(out[i].seq, i);
    }
    free(out);

    /* column 3, one byte per ALLOC: 0 spelled, 1 right after the previous,
     * 2 + rank in the list of freed addresses (the last 4 freed, latest
     * first: addresses 0, 1, 2, 3 of the run) */
    col = column(db, 3, &len);
    assert_int_equal(len, 2 * N + 2);
    assert_int_equal(col[0], 0);
    for (int i = 1; i < N; i++)
        assert_int_equal(col[i], 1);
    for (int i = N; i < N + 4; i++)                    /* the 4 kept */
        assert_int_equal(col[i], 2);
    for (int i = N + 4; i < 2 * N; i++)                /* then carved anew */
        assert_int_equal(col[i], 1);
    assert_int_equal(col[2 * N], 0);                   /* heap 1: new */
    assert_int_equal(col[2 * N + 1], 6);               /* thread 8: frees back */
    free(col);
    /* column 10: ALLOC 6's distance in FREEs — the one just before */
    col = column(db, 10, &len);
    assert_int_equal(len, 1);
    assert_int_equal(col[0], 0);
    free(col);
    /* column 4, one varint per FREE: how far back its block was left */
    col = column(db, 4, &len);
    {
        const uint8_t *p = col, *end = col + len;
        for (int i = 0; i < N; i++)
            assert_int_equal(varint(&p, end), 2 * i + 1);
        assert_int_equal(varint(&p, end), 1);          /* the RESIZE just before */
        assert_int_equal(varint(&p, end), 1);          /* the MOVE */
        assert_int_equal(varint(&p, end), 0);
        assert_true(p == end);
    }
    free(col);
    sqlite3_close(db);
}

/* A block of moves between addresses seen nowhere else: each names two
 * new addresses for the writer's table of where blocks were left, the most
 * a block can claim; they read back as written. */
static void test_encoding3_moves(void **state)
{
    struct evwriter_opts o = { .block_events = 64 };
    struct evwriter *w;
    struct vh_ev *out;
    sqlite3 *db;
    size_t n;
    char err[256];
    (void)state;

    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(vh_schema_apply(db, VH_SCHEMA_TABLES, err, sizeof err), 0);
    assert_int_equal(evwriter__new(db, &o, &w, err, sizeof err), 0);
    for (uint64_t i = 0; i < 64; i++) {
        struct vh_ev e = { .time = i, .kind = VH_EV_MOVE, .addr = 0x100000 + 64 * i,
                           .to = 0x900000 + 64 * i, .size = 8, .usable = 8, .heap_id = 1 };
        assert_int_equal(evwriter__add(w, &e), 0);
    }
    assert_int_equal(evwriter__finish(w, NULL), 0);
    evwriter__free(w);
    out = read_all(db, 0, &n);
    assert_int_equal(n, 64);
    assert_int_equal(out[63].addr, 0x100000 + 64 * 63);
    assert_int_equal(out[63].to, 0x900000 + 64 * 63);
    free(out);
    sqlite3_close(db);
}

/* A DB written before encoding 3 still reads: a block of encoding 1 and
 * one of encoding 2, made by hand as docs/schema.md describes them. */
static void test_older_encodings(void **state)
{
    /* ALLOC 0x1000 (8 bytes, stack 1, thread 5) at 100, its FREE at 103, a
     * FAILED call of 99 bytes (stack 2) at 104 */
    static const uint8_t enc1[] = { 0x81, 5, 0,   0, 0x80, 0x40, 8, 0, 1, 0,
                                    0x02,    3, 0,          8, 0, 1, 0,
                                    0x05,    1,             99,   2, 0 };
    static const uint8_t enc2[] = { 2, 3, 3, 3, 2, 3,          /* lengths of columns 1-6 */
                                    0x81, 0x02, 0x05, 5, 0,    0, 3, 1,  0x80, 0x40, 0,
                                    8, 8, 99,  0, 0,  1, 1, 2,  0, 0, 0 };
    const uint8_t *raw[2] = { enc1, enc2 };
    size_t rawlen[2] = { sizeof enc1, sizeof enc2 };
    (void)state;

    for (int e = 0; e < 2; e++) {
        sqlite3 *db;
        sqlite3_stmt *st;
        uint8_t z[256];
        size_t zn = ZSTD_compress(z, sizeof z, raw[e], rawlen[e], 1), n;
        struct vh_ev *v;
        char err[256];

        assert_false(ZSTD_isError(zn));
        assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
        assert_int_equal(vh_schema_apply(db, VH_SCHEMA_TABLES, err, sizeof err), 0);
        assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO events VALUES (0, 0, 100, 104, 3, "
                                                "?1, ?2)", -1, &st, NULL), SQLITE_OK);
        sqlite3_bind_int(st, 1, e + 1);
        sqlite3_bind_blob(st, 2, z, (int)zn, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_finalize(st);
        v = read_all(db, 0, &n);
        assert_int_equal(n, 3);
        assert_int_equal(v[0].kind, VH_EV_ALLOC);
        assert_int_equal(v[0].addr, 0x1000);
        assert_int_equal(v[0].size, 8);
        assert_int_equal(v[0].usable, 8);
        assert_int_equal(v[0].stack_id, 1);
        assert_int_equal(v[0].tid, 5);
        assert_int_equal(v[0].time, 100);
        assert_int_equal(v[1].kind, VH_EV_FREE);
        assert_int_equal(v[1].addr, 0x1000);
        assert_int_equal(v[1].time, 103);
        assert_int_equal(v[2].kind, VH_EV_FAILED);
        assert_int_equal(v[2].size, 99);
        assert_int_equal(v[2].stack_id, 2);
        assert_int_equal(v[2].time, 104);
        assert_int_equal(v[2].tid, 5);
        free(v);
        sqlite3_close(db);
    }
}

/* ---- corrupt blobs ------------------------------------------------------------ */

/* Opens the DB read-write, runs sql with one blob parameter (may be NULL). */
static void tamper(const char *sql, const void *blob, int len)
{
    sqlite3 *db;
    sqlite3_stmt *st;

    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (blob)
        sqlite3_bind_blob(st, 1, blob, len, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* Reads the whole stream; returns the error text ("" when it read fine). */
static const char *stream_error(sqlite3 *db, char *out, size_t len)
{
    struct evstream *s;
    struct vh_ev ev;
    int rc;

    out[0] = 0;
    if (evstream__open(db, 0, &s, out, len))
        return out;
    while ((rc = evstream__next(s, &ev)) == 1)
        ;
    if (rc < 0)
        snprintf(out, len, "%s", evstream__error(s));
    evstream__close(s);
    return out;
}

static void test_corrupt_blobs(void **state)
{
    struct capb b;
    char err[256];
    uint8_t zbuf[256], raw[4] = { VH_EV_ALLOC, 0x81, 0x81, 0x81 };   /* varints cut */
    size_t z;
    struct liveset *ls;
    (void)state;

    uint32_t ch = capb__start(&b, 1, 9);
    for (int i = 0; i < 40; i++)
        capb__alloc(&b, ch, 10 + (uint64_t)i, 0x1000 + 16 * (uint64_t)i, 8, 8, 1);
    capb__end(&b, ch, 100);
    sqlite3 *db = load_opts(&b, 8, 10);
    assert_string_equal(stream_error(db, err, sizeof err), "");
    sqlite3_close(db);

    /* not zstd at all */
    tamper("UPDATE events SET data = ?1 WHERE block = 2", "garbage!", 8);
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_non_null(strstr(stream_error(db, err, sizeof err), "events block 2: corrupt"));
    /* the live set needs block 2 before the first checkpoint */
    assert_true(liveset__at(db, 30, -1, &ls, err, sizeof err) < 0);
    assert_non_null(strstr(err, "events block 2"));
    sqlite3_close(db);

    /* a zstd frame cut short */
    z = ZSTD_compress(zbuf, sizeof zbuf, "0123456789abcdef0123456789abcdef", 32, 1);
    assert_false(ZSTD_isError(z));
    tamper("UPDATE events SET data = ?1 WHERE block = 2", zbuf, (int)z - 3);
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_non_null(strstr(stream_error(db, err, sizeof err), "events block 2: corrupt"));
    sqlite3_close(db);

    /* a good frame whose events end in the middle of a varint (encoding 1) */
    z = ZSTD_compress(zbuf, sizeof zbuf, raw, sizeof raw, 1);
    tamper("UPDATE events SET data = ?1, encoding = 1 WHERE block = 2", zbuf, (int)z);
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_non_null(strstr(stream_error(db, err, sizeof err), "bad varint"));
    sqlite3_close(db);

    /* encoding 3: columns that do not say what the model needs */
    {
        static const struct {
            uint8_t kind, sel, back, addr;
            const char *why;
        } bad3[] = {
            { VH_EV_FREE, 0, 5, 0, "bad reference back" },      /* before the block */
            { VH_EV_ALLOC, 3, 0, 0, "no such freed address" },
            { VH_EV_ALLOC, 1, 0, 0, "no previous allocation" },
            { VH_EV_ALLOC, 6, 0, 0, "no such free" },           /* 0 frees back: none */
            { VH_EV_ALLOC, 7, 0, 0, "bad address guess" },
            { VH_EV_ALLOC, 0, 0, 0x81, "bad varint" },          /* address cut short */
        };
        for (size_t i = 0; i < sizeof bad3 / sizeof bad3[0]; i++) {
            /* one event; sizes, usable, stack, tag all 0 */
            const uint8_t zero = 0;
            const uint8_t *colp[11] = { &bad3[i].kind, NULL, &zero, &bad3[i].sel, &bad3[i].back,
                                        &bad3[i].addr, &zero, &zero, &zero, &zero, &zero };
            size_t lens[11] = { 1, 0, 1, bad3[i].kind == VH_EV_ALLOC, bad3[i].kind == VH_EV_FREE,
                                bad3[i].addr ? 1 : 0, 1, 1, 1, 1, bad3[i].sel == 6 };
            uint8_t frames[11][64], blob[1024], *p = blob;
            size_t zl[11];
            for (int k = 0; k < 11; k++) {
                zl[k] = lens[k] ? ZSTD_compress(frames[k], sizeof frames[k], colp[k], lens[k], 1)
                                : 0;
                assert_false(ZSTD_isError(zl[k]));
            }
            for (int k = 0; k < 10; k++)
                *p++ = (uint8_t)zl[k];                           /* each below 128 */
            for (int k = 0; k < 11; k++) {
                memcpy(p, frames[k], zl[k]);
                p += zl[k];
            }
            tamper("UPDATE events SET data = ?1, encoding = 3 WHERE block = 2", blob,
                   (int)(p - blob));
            assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL),
                             SQLITE_OK);
            stream_error(db, err, sizeof err);
            if (!strstr(err, bad3[i].why) || !strstr(err, "events block 2: corrupt"))
                fail_msg("case %zu: \"%s\", not %s", i, err, bad3[i].why);
            sqlite3_close(db);
        }
    }

    /* a frame claiming far more bytes than its events can take */
    {
        static uint8_t big[1 << 16];
        uint8_t *zb = malloc(ZSTD_compressBound(sizeof big));
        size_t zn = ZSTD_compress(zb, ZSTD_compressBound(sizeof big), big, sizeof big, 1);
        tamper("UPDATE events SET data = ?1, encoding = 1 WHERE block = 2", zb, (int)zn);
        free(zb);
    }
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_non_null(strstr(stream_error(db, err, sizeof err), "bad size"));
    sqlite3_close(db);

    /* a block missing from the middle */
    tamper("DELETE FROM events WHERE block = 2", NULL, 0);
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_non_null(strstr(stream_error(db, err, sizeof err), "blocks missing"));
    sqlite3_close(db);

    /* a corrupt checkpoint: the live set says so */
    tamper("UPDATE checkpoints SET data = ?1", "garbage!", 8);
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_true(liveset__at(db, 90, -1, &ls, err, sizeof err) < 0);
    assert_non_null(strstr(err, "checkpoint at event"));
    sqlite3_close(db);
    z = ZSTD_compress(zbuf, sizeof zbuf, raw, sizeof raw, 1);
    tamper("UPDATE checkpoints SET data = ?1, count = 1", zbuf, (int)z);
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_true(liveset__at(db, 90, -1, &ls, err, sizeof err) < 0);
    assert_non_null(strstr(err, "corrupt"));
    sqlite3_close(db);

    /* an unknown encoding */
    tamper("UPDATE events SET encoding = 9", NULL, 0);
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_non_null(strstr(stream_error(db, err, sizeof err), "unknown encoding 9"));
    sqlite3_close(db);

    /* no event tables at all */
    tamper("DROP TABLE events", NULL, 0);
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_non_null(strstr(stream_error(db, err, sizeof err), "no event stream"));
    sqlite3_close(db);
    db = NULL;
    done(db, &b);
}

/* ---- small cases --------------------------------------------------------------- */

static void test_empty_capture(void **state)
{
    struct capb b;
    struct liveset *ls;
    char err[256];
    size_t n;
    (void)state;

    uint32_t ch = capb__start(&b, 1, 9);
    capb__end(&b, ch, 5);
    sqlite3 *db = load_opts(&b, 0, 0);
    free(read_all(db, 0, &n));
    assert_int_equal(n, 0);
    assert_int_equal(q(db, "SELECT count(*) FROM events"), 0);
    /* the end checkpoint: one empty row */
    assert_int_equal(q(db, "SELECT count(*) FROM checkpoints WHERE seq = 0 AND count = 0"), 1);
    assert_int_equal(liveset__at(db, 100, -1, &ls, err, sizeof err), 0);
    assert_int_equal(ls->n, 0);
    liveset__free(ls);
    done(db, &b);
}

/* The writer on its own: order checks and the checkpoint rhythm. */
static void test_writer_rules(void **state)
{
    sqlite3 *db;
    struct evwriter *w;
    struct evwriter_stats st;
    struct evwriter_opts o = { .block_events = 4, .checkpoint_events = 10 };
    char err[256];
    struct vh_block bl[2] = { { .addr = 0x20, .size = 1, .heap_id = 0 },
                              { .addr = 0x10, .size = 1, .heap_id = 0 } };
    struct vh_ev bad = { .kind = 9 };
    uint64_t addr = 0x100;
    (void)state;

#define ADD(k)                                                                             \
    do {                                                                                   \
        struct vh_ev e_ = { .time = 5, .addr = (k) == VH_EV_ALLOC ? (addr += 16) : addr, \
                            .size = 4, .usable = 8, .kind = (k) };                         \
        assert_int_equal(evwriter__add(w, &e_), 0);                                        \
    } while (0)
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(vh_schema_apply(db, VH_SCHEMA_TABLES, err, sizeof err), 0);

    /* blocks out of order are refused, and the writer stays failed */
    assert_int_equal(evwriter__new(db, &o, &w, err, sizeof err), 0);
    ADD(VH_EV_ALLOC);
    assert_int_equal(evwriter__checkpoint_begin(w), 0);
    assert_true(evwriter__checkpoint_add(w, bl, 2) < 0);
    assert_non_null(strstr(evwriter__error(w), "out of order"));
    assert_true(evwriter__add(w, &bad) < 0);
    evwriter__free(w);
    assert_int_equal(evwriter__new(db, &o, &w, err, sizeof err), 0);
    assert_true(evwriter__add(w, &bad) < 0);
    assert_non_null(strstr(evwriter__error(w), "unknown kind"));
    evwriter__free(w);
    assert_int_equal(sqlite3_exec(db, "DELETE FROM events; DELETE FROM checkpoints", NULL, NULL,
                                  NULL), SQLITE_OK);

    /* the rhythm: the first after the interval (10); then after twice the
     * live blocks of the previous one, or of now when fewer */
    assert_int_equal(evwriter__new(db, &o, &w, err, sizeof err), 0);
    for (int i = 0; i < 9; i++) {
        ADD(VH_EV_ALLOC);
        assert_false(evwriter__checkpoint_due(w));
    }
    ADD(VH_EV_ALLOC);
    assert_true(evwriter__checkpoint_due(w));                       /* 10 events */
    assert_int_equal(evwriter__checkpoint_begin(w), 0);
    assert_int_equal(evwriter__checkpoint_end(w), 0);
    assert_false(evwriter__checkpoint_due(w));
    /* a second checkpoint at the same place is not written twice */
    assert_int_equal(evwriter__checkpoint_begin(w), 0);
    assert_int_equal(evwriter__checkpoint_end(w), 0);
    for (int i = 0; i < 19; i++) {                                  /* 10 live: 20 */
        ADD(VH_EV_ALLOC);
        assert_false(evwriter__checkpoint_due(w));
    }
    ADD(VH_EV_ALLOC);
    assert_true(evwriter__checkpoint_due(w));
    assert_int_equal(evwriter__checkpoint_begin(w), 0);
    assert_int_equal(evwriter__checkpoint_end(w), 0);               /* 30 live: 60 */
    for (int i = 0; i < 9; i++) {                                   /* 21 live: 42 */
        ADD(VH_EV_FREE);
        assert_false(evwriter__checkpoint_due(w));
    }
    for (int i = 0; i < 9; i++)                                     /* 18 events: 12 live */
        ADD(VH_EV_FREE);
    assert_false(evwriter__checkpoint_due(w));                      /* 18 < 24 */
    for (int i = 0; i < 2; i++)                                     /* 20 events: 10 live */
        ADD(VH_EV_FREE);
    assert_true(evwriter__checkpoint_due(w));                       /* 20 >= 20 */
    assert_int_equal(evwriter__finish(w, &st), 0);
    assert_int_equal(st.events, 50);
    assert_int_equal(st.checkpoints, 2);
    assert_int_equal(st.blocks, 13);            /* 4 4 2 | 4 4 4 4 4 | 4 4 4 4 4 */
    evwriter__free(w);
#undef ADD
    assert_int_equal(q(db, "SELECT count(*) FROM checkpoints WHERE seq = 10"), 1);
    assert_int_equal(q(db, "SELECT count(*) FROM checkpoints WHERE seq = 30"), 1);
    assert_int_equal(q(db, "SELECT count FROM events WHERE block = 2"), 2);
    assert_int_equal(q(db, "SELECT first_seq FROM events WHERE block = 3"), 10);
    assert_int_equal(q(db, "SELECT sum(count) FROM events"), 50);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalized_sequence),
        cmocka_unit_test(test_liveset_against_model),
        cmocka_unit_test(test_big_heaps_in_order),
        cmocka_unit_test(test_destroy_empty_then_reuse),
        cmocka_unit_test(test_corrupt_blobs),
        cmocka_unit_test(test_empty_capture),
        cmocka_unit_test(test_writer_rules),
        cmocka_unit_test(test_encoding3_model),
        cmocka_unit_test(test_encoding3_moves),
        cmocka_unit_test(test_older_encodings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
