/* spans.c — what each event did, and how much of a tree of nested heaps
 * was in use at once. An event is a mark labelled "event N ...", "replay
 * N ..." or "boot ..." (what contrib/vere's patch writes when an event
 * commits): its span runs back to the mark before it, of any kind. A tree
 * is a custom heap with every heap nested in it (Vere's loom and its
 * roads), summed at its outermost heap: its most is the least headroom. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/load/loader.h"
#include "analyze/util/cmp.h"
#include "analyze/util/grow.h"

static int is_event(const char *label)
{
    static const char *const kinds[] = { "event ", "replay ", "boot " };

    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t n = strlen(kinds[i]);
        if (!strncmp(label, kinds[i], n) && label[n] >= '0' && label[n] <= '9')
            return 1;
    }
    return 0;
}

/* The closed span that allocated a block at time t: the first whose end is
 * at or after t, if it had begun by then. */
struct span *spans__find(struct loader *L, uint64_t t)
{
    size_t lo = VH_PARTITION_POINT(i, L->sp.n, L->sp.spans[i].end < t);
    if (lo < L->sp.n && L->sp.spans[lo].start <= t)
        return &L->sp.spans[lo];
    return NULL;
}

/* Every mark ends the span open: an event's mark keeps it as the event's,
 * any other drops it (what happened since that mark was no event's). */
void spans__on_mark(struct loader *L, uint64_t time, const char *label)
{
    struct ld_spans *sp = &L->sp;

    if (is_event(label)) {
        if (vh_grow(&sp->spans, &sp->cap, sp->n, sizeof *sp->spans, 64) ||
            !(sp->open.label = strdup(label))) {
            loader__fail(L, -ENOMEM, "out of memory");
            return;
        }
        sp->open.end = time;
        sp->open.home_end = sp->home_live;
        sp->open.in_use_end = sp->in_use;
        sp->spans[sp->n++] = sp->open;
    }
    memset(&sp->open, 0, sizeof sp->open);
    sp->open.start = time;
    sp->open.home_start = sp->home_live;
    sp->open.in_use_peak = sp->in_use;
}

/* Moves h's own bytes from the tree it was in to the one it joins. */
static void move_bytes(struct loader *L, struct heap *h, struct heap *to)
{
    struct heap *from = h->root;
    uint64_t u = h->live_usable;

    if (from) {
        from->tree_live -= u;
        L->sp.in_use -= u;
        if (from == h)
            L->sp.home_live -= u;
    }
    h->root = to;
    if (to) {
        to->tree_live += u;
        L->sp.in_use += u;
        if (to == h)
            L->sp.home_live += u;
    }
}

void spans__reroot(struct loader *L, struct heap *h, struct heap *parent)
{
    struct heap *to = parent ? (parent->root ? parent->root : parent) : h;

    if (h->id == VH_HEAP_SYSTEM || h->root == to)
        return;
    move_bytes(L, h, to);
}

void spans__unroot(struct loader *L, struct heap *h)
{
    move_bytes(L, h, NULL);
}

void spans__write(struct loader *L)
{
    sqlite3_stmt *st = loader__prep(L, "INSERT INTO event_spans(id, label, start_time, end_time, "
                                       "allocations, bytes_allocated, frees, bytes_freed, "
                                       "lifetime_ns, home_bytes, home_growth, in_use_bytes, "
                                       "in_use_peak) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");

    for (size_t i = 0; st && i < L->sp.n && !L->failed; i++) {
        const struct span *s = &L->sp.spans[i];
        sqlite3_bind_int64(st, 1, (sqlite3_int64)i + 1);
        sqlite3_bind_text(st, 2, s->label, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)s->start);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)s->end);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)s->allocations);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)s->bytes);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)s->frees);
        sqlite3_bind_int64(st, 8, (sqlite3_int64)s->bytes_freed);
        sqlite3_bind_double(st, 9, s->lifetime_ns);
        sqlite3_bind_int64(st, 10, (sqlite3_int64)s->home_end);
        sqlite3_bind_int64(st, 11, (sqlite3_int64)(s->home_end - s->home_start));
        sqlite3_bind_int64(st, 12, (sqlite3_int64)s->in_use_end);
        sqlite3_bind_int64(st, 13, (sqlite3_int64)s->in_use_peak);
        loader__run(L, st);
    }
    sqlite3_finalize(st);
}

void spans__free(struct loader *L)
{
    for (size_t i = 0; i < L->sp.n; i++)
        free(L->sp.spans[i].label);
    free(L->sp.spans);
    memset(&L->sp, 0, sizeof L->sp);
}
