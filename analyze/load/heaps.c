/* heaps.c — the heaps: their table by capture id and by DB id, their
 * nesting (a destroyed heap takes the heaps inside it along), their
 * regions (REGION records), and each heap's series bucket in progress. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/load/loader.h"
#include "analyze/util/grow.h"

#define SERIES_TARGET 20000u          /* at most about this many buckets     */
#define MIN_BUCKET_NS 1000000ull      /* 1 ms                                */

/* A heap for capture id `id`, which it names from now on. Its DB id is the
 * capture id, except when a destroyed heap's id is reused (the capture's ids
 * are 16-bit): then it is the next id from MAX_HEAPS up, so that every heap
 * is its own row. */
struct heap *heaps__new(struct loader *L, uint32_t id, uint64_t time)
{
    struct heap *h = calloc(1, sizeof *h);
    uint32_t dbid = id;
    char name[32];

    if (h && L->hp.byid[id]) {
        dbid = MAX_HEAPS + (uint32_t)L->hp.reused_ids;
        if (dbid >= L->hp.nbyid) {
            size_t n = L->hp.nbyid * 2;
            struct heap **p = realloc(L->hp.byid, n * sizeof *p);
            if (!p) {
                free(h);
                loader__fail(L, -ENOMEM, "out of memory");
                return NULL;
            }
            memset(p + L->hp.nbyid, 0, (n - L->hp.nbyid) * sizeof *p);
            L->hp.byid = p;
            L->hp.nbyid = n;
        }
    }
    if (h) {
        h->live = livemap__new();
        if (id == VH_HEAP_SYSTEM)
            snprintf(name, sizeof name, "malloc");
        else
            snprintf(name, sizeof name, "heap %u", id);
        h->name = strdup(name);
    }
    if (!h || !h->live || !h->name) {
        if (h) {
            livemap__free(h->live);
            free(h->name);
        }
        free(h);
        loader__fail(L, -ENOMEM, "out of memory");
        return NULL;
    }
    h->id = dbid;
    h->root = id == VH_HEAP_SYSTEM ? NULL : h;
    h->create_time = time;
    h->bucket = -1;
    h->addr_and = ~0ull;
    L->hp.heaps[id] = h;
    L->hp.byid[dbid] = h;
    if (dbid != id)
        L->hp.reused_ids++;
    return h;
}

void heaps__series_flush(struct loader *L, struct heap *h)
{
    sqlite3_stmt *st = L->hp.ins_series;
    if (h->bucket < 0)
        return;
    sqlite3_bind_int64(st, 1, h->id);
    sqlite3_bind_int64(st, 2, h->bucket);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)h->acc.allocations);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)h->acc.frees);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)h->acc.temporary);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)h->acc.bytes_allocated);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)h->acc.bytes_freed);
    sqlite3_bind_int64(st, 8, (sqlite3_int64)h->live_bytes);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)h->live_blocks);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)h->acc.max_live);
    loader__run(L, st);
    h->bucket = -1;
}

/* ---- regions (REGION records) ------------------------------------------------ */

static void region_write(struct loader *L, const struct open_region *o, int ended, uint64_t end)
{
    sqlite3_stmt *st = L->hp.ins_region;
    sqlite3_bind_int64(st, 1, o->heap);
    sqlite3_bind_int64(st, 2, o->id);
    sqlite3_bind_text(st, 3, o->kind == VH_REGION_META ? "meta" : "unused", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)o->base);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)o->size);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)o->start);
    loader__bind_int_if(st, 7, ended, end);
    loader__run(L, st);
}

/* Writes the row of every open region that `keep` refuses (NULL: all),
 * ended at `end` (or still there when `ended` is 0), and forgets it. */
static void regions_close(struct loader *L, int (*keep)(struct loader *, const struct open_region *),
                          int ended, uint64_t end)
{
    size_t j = 0;
    for (size_t i = 0; i < L->hp.nregions; i++) {
        if (keep && keep(L, &L->hp.regions[i]))
            L->hp.regions[j++] = L->hp.regions[i];
        else
            region_write(L, &L->hp.regions[i], ended, end);
    }
    L->hp.nregions = j;
}

static int region_heap_alive(struct loader *L, const struct open_region *o)
{
    return o->heap < L->hp.nbyid && L->hp.byid[o->heap] && !L->hp.byid[o->heap]->destroyed;
}

void heaps__on_region(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_region *r = (const struct vh_rec_region *)ev->rec;
    struct heap *h;
    size_t i;

    if (r->h.b == VH_HEAP_SYSTEM || r->h.b >= MAX_HEAPS || r->h.flags > VH_REGION_KIND_MAX) {
        L->hp.bad_heap_records++;
        return;
    }
    if (!(h = heap_get(L, (uint16_t)r->h.b, ev->time)))
        return;
    for (i = 0; i < L->hp.nregions; i++)
        if (L->hp.regions[i].heap == h->id && L->hp.regions[i].id == r->id)
            break;
    if (i < L->hp.nregions) {             /* replaced or ended */
        region_write(L, &L->hp.regions[i], 1, ev->time);
        L->hp.regions[i] = L->hp.regions[--L->hp.nregions];
    }
    if (r->h.flags == VH_REGION_NONE || !r->size)
        return;
    if (vh_grow(&L->hp.regions, &L->hp.capregions, L->hp.nregions, sizeof *L->hp.regions, 8)) {
        loader__fail(L, -ENOMEM, "out of memory");
        return;
    }
    L->hp.regions[L->hp.nregions++] = (struct open_region){ .heap = h->id, .id = r->id,
                                                      .kind = r->h.flags, .base = r->base,
                                                      .size = r->size, .start = ev->time };
}

/* ---- heap nesting --------------------------------------------------------- */

static void heap_unlink(struct heap *h)
{
    if (h->prev)
        h->prev->next = h->next;
    else if (h->up)
        h->up->child = h->next;
    if (h->next)
        h->next->prev = h->prev;
    h->up = h->next = h->prev = NULL;
}

/* Nests h (unlinked) in parent. A cycle is refused: parent must not be h or
 * inside h, which only a heap with nested heaps of its own can have; the
 * walk up from parent that checks it is for those alone (a new heap has
 * none), so a chain of N nested heaps costs N steps, not N^2 / 2. */
static void heap_link(struct loader *L, struct heap *h, struct heap *parent)
{
    for (struct heap *p = h->child ? parent : NULL; p; p = p->up) {
        L->hp.nesting_steps++;
        if (p == h)
            return;
    }
    if (parent == h)
        return;
    h->up = parent;
    h->next = parent->child;
    if (parent->child)
        parent->child->prev = h;
    parent->child = h;
}

void heaps__on_create(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_heap *r = (const struct vh_rec_heap *)ev->rec;
    struct heap *h, *p;
    char *name;

    if (r->h.b == VH_HEAP_SYSTEM || r->h.b >= MAX_HEAPS || ev->size < sizeof *r) {
        L->hp.bad_heap_records++;
        return;
    }
    h = L->hp.heaps[r->h.b];
    if (h && h->destroyed) {
        L->hp.heap_reuses++;              /* same id again: a new heap, own row */
        /* no event reaches the old one now: what it still holds (allocated
         * after its destroy) leaves the event stream's live set too */
        if (h->live && livemap__count(h->live) && evstream__destroy(L, h, ev, 0))
            return;
        livemap__free(h->live);
        h->live = NULL;
        h = NULL;
    }
    if (!h && !(h = heaps__new(L, r->h.b, ev->time)))
        return;
    name = loader__rec_string(L, ev, sizeof *r);
    if (!name)
        return;
    free(h->name);
    h->name = name;
    if (!h->has_create)
        h->create_time = ev->time;
    h->has_create = 1;
    h->base = r->base;
    h->size = r->size;
    h->parent = 0;
    h->has_parent = 0;
    p = NULL;
    if (r->parent && r->parent < MAX_HEAPS && r->parent != r->h.b &&
        !(p = heap_get(L, r->parent, ev->time)))
        return;
    if (p && p == h->up) {             /* announced again, nested as it was */
        h->parent = p->id;
        h->has_parent = 1;
        return;
    }
    heap_unlink(h);
    if (p) {
        heap_link(L, h, p);
        h->parent = p->id;
        h->has_parent = 1;
    }
    spans__reroot(L, h, h->up);
}

/* Frees every block of the heap and of the heaps nested in it, at once:
 * these blocks are gone, not leaked. */
void heaps__on_destroy(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_time *r = (const struct vh_rec_time *)ev->rec;
    struct heap *h, **todo = NULL;
    size_t n = 0, cap = 0;

    if (r->h.a == VH_HEAP_SYSTEM) {
        L->hp.bad_heap_records++;
        return;
    }
    h = heap_get(L, r->h.a, ev->time);
    if (!h || h->destroyed)
        return;
    heap_unlink(h);
    for (;;) {
        series_touch(L, h, ev->time);
        if (evstream__destroy(L, h, ev, 1))
            break;
        spans__unroot(L, h);
        livemap__free(h->live);
        h->live = livemap__new();
        if (!h->live) {
            loader__fail(L, -ENOMEM, "out of memory");
            break;
        }
        h->destroyed = 1;
        h->destroy_time = ev->time;
        for (struct heap *c = h->child; c; c = c->next) {
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                struct heap **p = realloc(todo, cap * sizeof *p);
                if (!p) {
                    loader__fail(L, -ENOMEM, "out of memory");
                    goto out;
                }
                todo = p;
            }
            todo[n++] = c;
        }
        h->child = NULL;
        if (!n)
            break;
        h = todo[--n];
        h->up = h->next = h->prev = NULL;
    }
out:
    free(todo);
    if (L->hp.nregions)                   /* a heap's regions end with it */
        regions_close(L, region_heap_alive, 1, ev->time);
}

/* Bucket width: a 1-2-5 step of milliseconds giving at most SERIES_TARGET
 * buckets over the runtime the header announces. */
static uint64_t pick_bucket(const struct vh_capture_header *h)
{
    static const uint64_t steps[] = { 1, 2, 5 };
    uint64_t run_ns = h->end_time > h->last_time ? h->end_time : h->last_time;
    if (h->exact_end > run_ns)
        run_ns = h->exact_end;

    for (uint64_t scale = MIN_BUCKET_NS; scale < UINT64_MAX / 10; scale *= 10)
        for (size_t i = 0; i < 3; i++)
            if (run_ns / (steps[i] * scale) < SERIES_TARGET)
                return steps[i] * scale;
    return UINT64_MAX / 2;
}

int heaps__init(struct loader *L)
{
    struct ld_heaps *hp = &L->hp;

    hp->heaps = calloc(MAX_HEAPS, sizeof *hp->heaps);
    hp->byid = calloc(MAX_HEAPS, sizeof *hp->byid);
    hp->nbyid = MAX_HEAPS;
    if (!hp->heaps || !hp->byid) {
        loader__fail(L, -ENOMEM, "out of memory");
        return -1;
    }
    hp->bucket_ns = pick_bucket(capture__header(L->cap));
    hp->ins_region = loader__prep(L, "INSERT INTO regions(heap_id, region, kind, base, size, "
                                     "start_time, end_time) VALUES (?,?,?,?,?,?,?)");
    hp->ins_series = loader__prep(L, "INSERT INTO series(heap_id, bucket, allocations, frees, "
                                     "temporary, bytes_allocated, bytes_freed, live_bytes, "
                                     "live_blocks, max_live_bytes) VALUES (?,?,?,?,?,?,?,?,?,?)");
    if (L->failed || !heaps__new(L, VH_HEAP_SYSTEM, 0))
        return -1;
    return 0;
}

void heaps__free(struct loader *L)
{
    struct ld_heaps *hp = &L->hp;

    sqlite3_finalize(hp->ins_region);
    sqlite3_finalize(hp->ins_series);
    hp->ins_region = hp->ins_series = NULL;
    for (size_t i = 0; hp->byid && i < hp->nbyid; i++) {
        if (!hp->byid[i])
            continue;
        livemap__free(hp->byid[i]->live);
        free(hp->byid[i]->name);
        free(hp->byid[i]);
    }
    free(hp->byid);
    free(hp->heaps);
    free(hp->regions);
    hp->byid = hp->heaps = NULL;
    hp->regions = NULL;
    hp->nbyid = hp->nregions = hp->capregions = 0;
}

void heaps__end_regions(struct loader *L)
{
    regions_close(L, NULL, 0, 0);
}
