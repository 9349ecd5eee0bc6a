/* follow.c — a capture followed step by step (follow.h): the load's first
 * steps once, then the stream pass over what capture__follow adds, into
 * the same loader state; the stacks' rows and names written into the DB
 * after each step, which stays one open transaction and is never
 * published (the tables of a finished load are not written). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/load/follow.h"
#include "analyze/load/loader.h"
#include "analyze/store/db.h"

#if __has_include("analyze/symbols/symbols.h")
#include "analyze/symbols/symbols.h"
#define HAVE_SYMBOLS 1
#else
#define HAVE_SYMBOLS 0
#endif

struct load_follow {
    struct loader L;
    struct load_opts o;
    struct db_new dbn;
    uint64_t named;                /* frames handed to a resolver already  */
};

/* The stream over what the capture holds past the last step, then its
 * stacks' rows and, when new frames came, their names. */
static int pass(struct load_follow *f, char *err, size_t errlen)
{
    struct loader *L = &f->L;

    if (stream__run(L) || (stacks__write_rows(L), L->failed)) {
        snprintf(err, errlen, "%s", L->errmsg[0] ? L->errmsg : "reading the capture failed");
        return L->failed ? L->failed : -EIO;
    }
    if (L->sk.nframes != f->named) {
        f->named = L->sk.nframes;
        char msg[256];
        if (stacks__symbols_round(L, msg, sizeof msg))
            fprintf(stderr, "vheap: symbols: %s\n", msg);  /* the stacks stay unnamed */
    }
    return 0;
}

int load__follow_open(const char *capture, const char *db_path, const struct load_opts *o,
                      struct load_follow **out, char *err, size_t errlen)
{
    struct load_follow *f = calloc(1, sizeof *f);
    struct capture_stamp *cs = malloc(sizeof *cs);
    int rc;

    *out = NULL;
    if (!f || !cs) {
        free(f);
        free(cs);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    f->o = o ? *o : (struct load_opts){ 0 };
    f->o.progress = 0;
    f->o.no_events = 1;
    f->L.opts = &f->o;
    rc = load__open_capture(&f->L, capture, cs, err, errlen);
    free(cs);
    if (rc) {
        free(f);
        return rc;
    }
    if ((rc = db__create(db_path, &f->dbn, err, errlen))) {
        load__follow_close(f);
        return rc;
    }
    f->L.db = f->dbn.db;
    if (load__db_begin(&f->L, capture__file_size(f->L.cap)) || load__parts_init(&f->L)) {
        snprintf(err, errlen, "%s: %s", capture, f->L.errmsg[0] ? f->L.errmsg : "load failed");
        load__follow_close(f);
        return f->L.failed ? f->L.failed : -EIO;
    }
    if ((rc = pass(f, err, errlen))) {
        load__follow_close(f);
        return rc;
    }
    *out = f;
    return 0;
}

int load__follow_step(struct load_follow *f, char *err, size_t errlen)
{
    int rc = capture__follow(f->L.cap, err, errlen);
    return rc ? rc : pass(f, err, errlen);
}

sqlite3 *load__follow_db(const struct load_follow *f)
{
    return f->L.db;
}

void load__follow_totals(const struct load_follow *f, struct load_follow_totals *t)
{
    const struct loader *L = &f->L;
    const struct vh_capture_header *hd = capture__header(L->cap);

    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < L->hp.nbyid; i++) {
        const struct heap *h = L->hp.byid[i];
        if (!h)                    /* ids not (yet) given */
            continue;
        t->live_bytes += h->live_bytes;
        t->live_blocks += h->live_blocks;
        t->allocated += h->bytes_allocated;
    }
    t->records = L->records;
    t->last_time = L->tl.last_time;
    t->start_realtime_ns = hd->start_realtime_ns;
    t->sample_rate = L->lv.rate;
}

size_t load__follow_count(const struct load_follow *f)
{
    return f->L.lv.naggs;
}

void load__follow_stack(const struct load_follow *f, size_t i, struct load_follow_stack *s)
{
    const struct agg *a = &f->L.lv.aggs[i];
    int live = !f->L.hp.byid[a->heap]->destroyed;

    *s = (struct load_follow_stack){ .heap = a->heap, .stack = a->stack, .tag = a->tag,
                                     .live_bytes = live ? a->live_bytes : 0,
                                     .live_blocks = live ? a->live_blocks : 0,
                                     .allocated = a->bytes };
}

void load__follow_close(struct load_follow *f)
{
    if (!f)
        return;
    stacks__unqueue(&f->L);
    load__parts_free(&f->L);
#if HAVE_SYMBOLS
    symbols__free(f->L.sk.sym);
#endif
    if (f->dbn.db || f->dbn.tmp[0])
        db__discard(&f->dbn);
    capture__close(f->L.cap);
    free(f);
}
