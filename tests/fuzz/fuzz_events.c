/* fuzz_events.c — libFuzzer target: the event stream of a vheap DB
 * (analyze/store/events.c): the block decoder behind evstream and the live set at
 * time T (checkpoint + replay). The first input byte picks the mode:
 *   even: a round trip. The input becomes a valid event sequence (allocs,
 *         frees, resizes, moves, failed calls over a few heaps and threads,
 *         64-bit addresses and sizes); evwriter stores it with tiny blocks
 *         and frequent checkpoints; evstream must give back exactly those
 *         events, from the start and from any time T, and liveset__at(T)
 *         must equal a plain replay of the events up to T.
 *   odd:  rows of the events and checkpoints tables made from the input
 *         (zstd-compressed or raw bytes): reading them gives events or one
 *         error line, and a live set sorted by (heap, address), never a
 *         crash. A DB is a file someone may hand over. */
#include <errno.h>
#include <zstd.h>

#include "analyze/store/db.h"
#include "analyze/store/events.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_EVENTS 1500

struct in {
    const uint8_t *p;
    size_t n;
};

static uint64_t take(struct in *in, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes && in->n; i++, in->n--)
        v |= (uint64_t)*in->p++ << (8 * i);
    return v;
}

static sqlite3 *db;

static void db_init(void)
{
    char err[256];

    fz_init();
    FZ_CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK, "sqlite3_open");
    FZ_CHECK(vh_schema_apply(db, VH_SCHEMA_TABLES, err, sizeof err) == 0, "schema: %s", err);
}

static void exec(const char *sql)
{
    FZ_CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "%s: %s", sql,
             sqlite3_errmsg(db));
}

/* ---- round trip -------------------------------------------------------- */

static struct vh_ev evs[MAX_EVENTS];
static size_t nevs;
static struct vh_block live[MAX_EVENTS], want[MAX_EVENTS];
static size_t nlive;

static struct vh_block *find(struct vh_block *set, size_t n, uint32_t heap, uint64_t addr)
{
    for (size_t i = 0; i < n; i++)
        if (set[i].heap_id == heap && set[i].addr == addr)
            return &set[i];
    return NULL;
}

static void drop(struct vh_block *set, size_t *n, struct vh_block *b)
{
    *b = set[--*n];
}

/* What an event does to a live set (events.h: RESIZE replaces the block's
 * size, stack, tag, time and thread; MOVE keeps everything but the key). */
static void model_apply(struct vh_block *set, size_t *n, const struct vh_ev *ev)
{
    struct vh_block *b;

    if (!ev->addr)
        return;
    switch (ev->kind) {
    case VH_EV_ALLOC:
    case VH_EV_RESIZE:
        if (!(b = find(set, *n, ev->heap_id, ev->addr)))
            b = &set[(*n)++];
        *b = (struct vh_block){ .addr = ev->addr, .size = ev->size, .usable = ev->usable,
                                .time = ev->time, .heap_id = ev->heap_id,
                                .stack_id = ev->stack_id, .tag_id = ev->tag_id, .tid = ev->tid };
        break;
    case VH_EV_FREE:
        if ((b = find(set, *n, ev->heap_id, ev->addr)))
            drop(set, n, b);
        break;
    case VH_EV_MOVE: {
        struct vh_block keep, *to;
        if (!ev->to || !(b = find(set, *n, ev->heap_id, ev->addr)))
            break;
        keep = *b;
        drop(set, n, b);
        keep.addr = ev->to;
        if ((to = find(set, *n, ev->heap_id, ev->to)))
            *to = keep;
        else
            set[(*n)++] = keep;
        break;
    }
    }
}

static int by_key(const void *a, const void *b)
{
    const struct vh_block *x = a, *y = b;
    if (x->heap_id != y->heap_id)
        return x->heap_id < y->heap_id ? -1 : 1;
    return (x->addr > y->addr) - (x->addr < y->addr);
}

/* An address: mostly small and reused, sometimes anywhere in 64 bits. */
static uint64_t gen_addr(struct in *in)
{
    unsigned sel = (unsigned)take(in, 1);
    if (sel < 200)
        return 0x10000 + (sel % 64) * 16;
    return take(in, 8) | 1;
}

static void generate(struct in *in)
{
    uint64_t time = take(in, 2);

    nevs = nlive = 0;
    while (in->n && nevs < MAX_EVENTS) {
        unsigned op = (unsigned)take(in, 1);
        struct vh_ev ev = { .kind = (uint8_t)(op % 5 + 1), .flags = (uint8_t)((op >> 3) & 0xf) };
        struct vh_block *b = nlive ? &live[take(in, 1) % nlive] : NULL;

        time += take(in, 1) * (op & 0x80 ? 1000000 : 1);
        ev.time = time;
        ev.tid = 100 + (uint32_t)(op >> 6);
        ev.heap_id = (uint32_t)(take(in, 1) % 3);
        ev.stack_id = (uint32_t)take(in, 1);
        ev.tag_id = (uint32_t)(take(in, 1) % 4);
        ev.size = op & 0x40 ? take(in, 8) : take(in, 2);
        ev.usable = ev.size + take(in, 1);      /* may wrap: stored as a delta */
        switch (ev.kind) {
        case VH_EV_ALLOC:
            ev.addr = gen_addr(in);
            if ((op & 0x30) == 0x30) {     /* one size: freed addresses reused */
                ev.size = 24;
                ev.usable = 32;
            }
            break;
        case VH_EV_FREE:
        case VH_EV_RESIZE:
            if (b && (op & 1)) {
                ev.addr = b->addr;
                ev.heap_id = b->heap_id;
            } else {
                ev.addr = gen_addr(in);
            }
            if (ev.kind == VH_EV_RESIZE)
                ev.old_size = b ? b->size : take(in, 2);
            else if (b && (op & 3) == 3) {
                /* the block as allocated: encoding 3 refers back to it */
                ev.size = b->size;
                ev.usable = b->usable;
                ev.stack_id = b->stack_id;
                ev.tag_id = b->tag_id;
            }
            break;
        case VH_EV_MOVE:
            if (b) {
                ev.addr = b->addr;
                ev.heap_id = b->heap_id;
            } else {
                ev.addr = gen_addr(in);
            }
            ev.to = gen_addr(in);
            break;
        case VH_EV_FAILED:
            ev.usable = 0;
            break;
        }
        ev.seq = nevs;
        evs[nevs++] = ev;
        model_apply(live, &nlive, &ev);
    }
}

static void same_event(const struct vh_ev *got, const struct vh_ev *w)
{
    FZ_CHECK(got->seq == w->seq && got->time == w->time && got->kind == w->kind &&
                 got->flags == w->flags && got->addr == w->addr && got->to == w->to &&
                 got->size == w->size && got->old_size == w->old_size &&
                 got->usable == w->usable && got->heap_id == w->heap_id &&
                 got->stack_id == w->stack_id && got->tag_id == w->tag_id && got->tid == w->tid,
             "event %llu differs: kind %u/%u time %llu/%llu addr %llx/%llx size %llu/%llu",
             (unsigned long long)w->seq, got->kind, w->kind, (unsigned long long)got->time,
             (unsigned long long)w->time, (unsigned long long)got->addr,
             (unsigned long long)w->addr, (unsigned long long)got->size,
             (unsigned long long)w->size);
}

static void round_trip(struct in *in)
{
    /* tiny blocks, or (high bit) blocks long enough for encoding 3's
     * references back and reused addresses to matter */
    uint32_t bsel = (uint32_t)take(in, 1);
    struct evwriter_opts wo = { .block_events = bsel & 0x80 ? 9 + bsel % 120 : 1 + bsel % 8 };
    wo.checkpoint_events = 1 + take(in, 1) % 16;
    struct evwriter *w = NULL;
    struct vh_block cp[MAX_EVENTS];
    size_t ncp = 0;
    struct evstream *s = NULL;
    struct liveset *ls = NULL;
    struct vh_ev got;
    char err[256];
    uint64_t T;
    size_t first, nwant = 0;
    int rc;

    generate(in);
    T = nevs ? evs[take(in, 2) % nevs].time : 0;
    exec("BEGIN");
    FZ_CHECK(evwriter__new(db, &wo, &w, err, sizeof err) == 0, "evwriter__new: %s", err);
    for (size_t i = 0; i < nevs; i++) {
        FZ_CHECK(evwriter__add(w, &evs[i]) == 0, "evwriter__add: %s", evwriter__error(w));
        model_apply(cp, &ncp, &evs[i]);
        if (evwriter__checkpoint_due(w)) {
            qsort(cp, ncp, sizeof *cp, by_key);
            FZ_CHECK(evwriter__checkpoint_begin(w) == 0 &&
                         evwriter__checkpoint_add(w, cp, ncp) == 0 &&
                         evwriter__checkpoint_end(w) == 0,
                     "checkpoint: %s", evwriter__error(w));
        }
    }
    FZ_CHECK(evwriter__finish(w, NULL) == 0, "evwriter__finish: %s", evwriter__error(w));
    evwriter__free(w);
    exec("COMMIT");

    /* From the start: exactly the events written. */
    FZ_CHECK(evstream__open(db, 0, &s, err, sizeof err) == 0, "evstream__open: %s", err);
    for (size_t i = 0; i < nevs; i++) {
        rc = evstream__next(s, &got);
        FZ_CHECK(rc == 1, "event %zu of %zu: %d (%s)", i, nevs, rc, evstream__error(s));
        same_event(&got, &evs[i]);
    }
    FZ_CHECK(evstream__next(s, &got) == 0, "more events than written");
    evstream__close(s);

    /* From T: the first event at or after T, then the rest. */
    for (first = 0; first < nevs && evs[first].time < T; first++)
        ;
    FZ_CHECK(evstream__open(db, T, &s, err, sizeof err) == 0, "evstream__open(T): %s", err);
    for (size_t i = first; i < nevs; i++) {
        rc = evstream__next(s, &got);
        FZ_CHECK(rc == 1, "from T: event %zu: %d (%s)", i, rc, evstream__error(s));
        same_event(&got, &evs[i]);
    }
    FZ_CHECK(evstream__next(s, &got) == 0, "from T: more events than written");
    evstream__close(s);

    /* The live set at T against a replay. */
    for (size_t i = 0; i < nevs && evs[i].time <= T; i++)
        model_apply(want, &nwant, &evs[i]);
    qsort(want, nwant, sizeof *want, by_key);
    FZ_CHECK(liveset__at(db, T, -1, &ls, err, sizeof err) == 0, "liveset__at: %s", err);
    FZ_CHECK(ls->n == nwant, "live set at %llu: %zu blocks, replay has %zu",
             (unsigned long long)T, ls->n, nwant);
    for (size_t i = 0; i < nwant; i++)
        FZ_CHECK(!memcmp(&ls->blocks[i], &want[i], sizeof want[i]),
                 "live set at %llu: block %zu (heap %u addr %llx) differs", (unsigned long long)T,
                 i, want[i].heap_id, (unsigned long long)want[i].addr);
    liveset__free(ls);
}

/* ---- arbitrary rows ------------------------------------------------------ */

static void raw_rows(struct in *in)
{
    sqlite3_stmt *ev = NULL, *cp = NULL;
    struct evstream *s = NULL;
    struct liveset *ls = NULL;
    struct vh_ev got;
    char err[256];
    uint8_t z[4096];
    int rc;

    FZ_CHECK(sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO events VALUES (?1,?2,?3,?4,?5,?6,?7)",
                                -1, &ev, NULL) == SQLITE_OK &&
                 sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO checkpoints "
                                        "VALUES (?1,?2,?3,?4,?5,?6,?7)", -1, &cp, NULL) == SQLITE_OK,
             "prepare: %s", sqlite3_errmsg(db));
    while (in->n > 4) {
        unsigned flags = (unsigned)take(in, 1);
        int64_t a = (int64_t)take(in, 1), b = (int64_t)take(in, 2);
        int64_t t = (int64_t)take(in, 4);
        int64_t count = flags & 4 ? (int64_t)take(in, 8) : (int64_t)take(in, 2);
        int64_t enc = flags & 8 ? (int64_t)take(in, 1) : 1;
        size_t len = (size_t)take(in, 2) % 1024, zlen;
        const void *blob;

        if (len > in->n)
            len = in->n;
        blob = in->p;
        zlen = len;
        if ((flags & 0x21) == 0x21 && !(flags & 2)) {
            /* an event block of encoding 3: the bytes cut into eleven
             * columns, each its own frame, so that decode3 sees varints in
             * every column (lengths: one input byte each for the first ten) */
            uint8_t *o = z;
            size_t cl[11], left = len, at = 0;
            for (int k = 0; k < 10; k++) {
                cl[k] = left ? (size_t)take(in, 1) % (left + 1) : 0;
                left -= cl[k];
            }
            cl[10] = left;
            if (len > in->n)
                len = in->n;
            o += 10 * 2;                   /* room for ten lengths < 2^14 */
            for (int k = 0; k < 11; k++) {
                size_t n = cl[k] <= len - at ? cl[k] : len - at, f = 0;
                if (n) {
                    f = ZSTD_compress(o, sizeof z - (size_t)(o - z), in->p + at, n, 1);
                    FZ_CHECK(!ZSTD_isError(f), "ZSTD_compress");
                }
                cl[k] = f;
                o += f;
                at += n;
            }
            {                              /* the lengths, then the frames */
                uint8_t head[20], *h = head;
                for (int k = 0; k < 10; k++) {
                    if (cl[k] >= 0x80)
                        *h++ = (uint8_t)(cl[k] | 0x80), cl[k] >>= 7;
                    *h++ = (uint8_t)cl[k];
                }
                memmove(z + (h - head), z + 20, (size_t)(o - z) - 20);
                memcpy(z, head, (size_t)(h - head));
                zlen = (size_t)(o - z) - 20 + (size_t)(h - head);
            }
            blob = z;
            enc = 3;
        } else if (flags & 1) {            /* compress: the decoder sees varints */
            zlen = ZSTD_compress(z, sizeof z, in->p, len, 1);
            FZ_CHECK(!ZSTD_isError(zlen), "ZSTD_compress");
            blob = z;
        }
        in->p += len;
        in->n -= len;
        sqlite3_stmt *st = flags & 2 ? cp : ev;
        if (st == ev) {                    /* block, first_seq, first_time, last_time, ... */
            sqlite3_bind_int64(st, 1, a);
            sqlite3_bind_int64(st, 2, b);
            sqlite3_bind_int64(st, 3, t);
            sqlite3_bind_int64(st, 4, t + 1000);
        } else {                           /* seq, heap_id, part, time, ... */
            sqlite3_bind_int64(st, 1, b);
            sqlite3_bind_int64(st, 2, a & 3);
            sqlite3_bind_int64(st, 3, a >> 2);
            sqlite3_bind_int64(st, 4, t);
        }
        sqlite3_bind_int64(st, 5, count);
        sqlite3_bind_int64(st, 6, enc);
        if (flags & 16)
            sqlite3_bind_null(st, 7);
        else
            sqlite3_bind_blob(st, 7, blob, (int)zlen, SQLITE_TRANSIENT);
        rc = sqlite3_step(st);
        FZ_CHECK(rc == SQLITE_DONE || rc == SQLITE_CONSTRAINT, "insert: %s",
                 sqlite3_errmsg(db));
        sqlite3_reset(st);
    }
    sqlite3_finalize(ev);
    sqlite3_finalize(cp);

    for (int pass = 0; pass < 2; pass++) {
        uint64_t from = pass ? 5000 : 0, n = 0;
        if (evstream__open(db, from, &s, err, sizeof err)) {
            fz_one_line("evstream__open", err);
            continue;
        }
        while ((rc = evstream__next(s, &got)) == 1 && ++n < 200000)
            FZ_CHECK(got.kind >= VH_EV_ALLOC && got.kind <= VH_EV_FAILED, "kind %u", got.kind);
        if (rc < 0)
            fz_one_line("evstream__next", evstream__error(s));
        evstream__close(s);
    }
    for (int64_t heap = -1; heap < 2; heap++) {
        rc = liveset__at(db, heap < 0 ? UINT64_MAX / 2 : 3000, heap, &ls, err, sizeof err);
        if (rc) {
            fz_one_line("liveset__at", err);
            continue;
        }
        for (size_t i = 0; i < ls->n; i++) {
            FZ_CHECK(ls->blocks[i].addr, "live block with address 0");
            FZ_CHECK(heap < 0 || ls->blocks[i].heap_id == (uint32_t)heap, "other heap");
            FZ_CHECK(!i || by_key(&ls->blocks[i - 1], &ls->blocks[i]) < 0, "unsorted live set");
        }
        liveset__free(ls);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct in in = { data, size };

    if (!db)
        db_init();
    exec("DELETE FROM events; DELETE FROM checkpoints;");
    if (take(&in, 1) & 1)
        raw_rows(&in);
    else
        round_trip(&in);
    return 0;
}
