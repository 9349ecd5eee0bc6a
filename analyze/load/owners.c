/* owners.c — ownership snapshots while loading (owners.h): the owner tree
 * merged by path across snapshots, each named block looked up among the
 * live blocks of the walked heap and its nested heaps at that instant, the
 * first owner kept, rows as they come; per-owner totals at the end. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/load/loader.h"
#include "analyze/load/owners.h"
#include "analyze/load/rows.h"
#include "analyze/util/diag.h"
#include "analyze/util/grow.h"
#include "analyze/util/json.h"
#include "analyze/util/map.h"
#include "analyze/util/strtab.h"

static struct own_snap *cur_snap(struct loader *L, uint32_t number)
{
    struct ld_owners *o = &L->ow;
    if (!o->open || !o->nsnaps || o->snaps[o->nsnaps - 1].number != number) {
        o->bad_records++;          /* no BEGIN before it: nothing to join */
        return NULL;
    }
    return &o->snaps[o->nsnaps - 1];
}

static int oom(struct loader *L)
{
    loader__fail(L, -ENOMEM, "out of memory");
    return -1;
}

/* The label at the record's end as UTF-8: a byte that starts no
 * well-formed sequence becomes U+FFFD (counted). */
static char *clean_label(struct loader *L, const struct vh_event *ev, size_t at, int *bad)
{
    const unsigned char *p = (const unsigned char *)ev->rec + at;
    size_t max = ev->size > at ? ev->size - at : 0, n = strnlen((const char *)p, max);
    char *s = malloc(n * 3 + 1), *q = s;
    *bad = 0;
    if (!s)
        return oom(L), NULL;
    for (size_t i = 0; i < n;) {
        size_t k = i + 4 <= n ? vh_utf8_len(p + i) : 0;
        if (!k) {                  /* near the end: check a copy with a NUL */
            unsigned char tail[5] = { 0 };
            memcpy(tail, p + i, n - i < 4 ? n - i : 4);
            k = vh_utf8_len(tail);
        }
        if (k) {
            memcpy(q, p + i, k);
            q += k;
            i += k;
        } else {
            memcpy(q, "\xef\xbf\xbd", 3);
            q += 3;
            i++;
            *bad = 1;
        }
    }
    *q = '\0';
    return s;
}

void owners__on_begin(struct loader *L, const struct vh_event *ev)
{
    struct ld_owners *o = &L->ow;
    const struct vh_rec_own *r = (const struct vh_rec_own *)ev->rec;
    struct heap *h;
    int bad;
    if (ev->size < sizeof *r) {
        o->bad_records++;
        return;
    }
    if (vh_grow(&o->snaps, &o->capsnaps, o->nsnaps, sizeof *o->snaps, 8))
        return (void)oom(L);
    struct own_snap *s = &o->snaps[o->nsnaps];
    *s = (struct own_snap){ .number = r->snapshot, .start = ev->time };
    if (!(s->label = clean_label(L, ev, sizeof *r, &bad)))
        return;
    o->bad_labels += (uint64_t)bad;
    o->cut_labels += (r->h.flags & VH_OWN_CUT) != 0;
    h = r->h.b < MAX_HEAPS ? L->hp.heaps[r->h.b] : NULL;
    s->heap = h;
    o->nsnaps++;
    o->open = 1;
    o->nnodes = 0;
    vh_map__free(o->seen);
    if (!(o->seen = vh_map__new()))
        oom(L);
}

/* The owner (parent, label): its DB id, made on first sight. */
static uint32_t owner_id(struct loader *L, uint32_t parent, const char *label)
{
    struct ld_owners *o = &L->ow;
    int added, existed;
    uint32_t lab = vh_strtab__intern(o->labels, label, strlen(label), &added);
    struct vh_map_ent *e;
    if (!lab || !(e = vh_map__insert(o->owner_map, parent, lab, &existed)))
        return oom(L), 0;
    if (existed)
        return (uint32_t)e->v1;
    if (vh_grow(&o->owners, &o->capowners, o->nowners, sizeof *o->owners, 64))
        return oom(L), 0;
    o->owners[o->nowners++] = (struct own_owner){
        .parent = parent, .label = lab,
        .depth = parent ? o->owners[parent - 1].depth + 1 : 1 };
    e->v1 = o->nowners;
    return (uint32_t)o->nowners;
}

void owners__on_owner(struct loader *L, const struct vh_event *ev)
{
    struct ld_owners *o = &L->ow;
    const struct vh_rec_owner *r = (const struct vh_rec_owner *)ev->rec;
    struct own_snap *s;
    uint32_t node = ev->rec->b, parent = 0;
    char *label;
    int bad;
    if (ev->size < sizeof *r || !(s = cur_snap(L, r->snapshot)))
        return;
    /* nodes are numbered 1, 2, ... in order; a parent is an earlier node */
    if (node != o->nnodes + 1 || r->parent >= node) {
        o->bad_records++;
        return;
    }
    if (r->parent)
        parent = o->node_owner[r->parent - 1];
    if (!(label = clean_label(L, ev, sizeof *r, &bad)))
        return;
    o->bad_labels += (uint64_t)bad;
    o->cut_labels += (r->h.flags & VH_OWN_CUT) != 0;
    uint32_t id = owner_id(L, parent, label);
    free(label);
    if (!id || vh_grow(&o->node_owner, &o->capnodes, o->nnodes, sizeof *o->node_owner, 64))
        return (void)(id && oom(L));
    o->node_owner[o->nnodes++] = id;
}

/* The live block at addr in heap h or a heap nested in it, and its heap. */
static struct vh_live_block *find_block(struct heap *h, uint64_t addr, struct heap **in)
{
    struct vh_live_block *b = livemap__find(h->live, addr);
    if (b) {
        *in = h;
        return b;
    }
    for (struct heap *c = h->child; c; c = c->next)
        if ((b = find_block(c, addr, in)))
            return b;
    return NULL;
}

/* The owner's self totals in this snapshot. */
static uint64_t *self_tot(struct loader *L, uint32_t snap, uint32_t owner)
{
    struct ld_owners *o = &L->ow;
    int existed;
    struct vh_map_ent *e = vh_map__insert(o->totals, snap, owner, &existed);
    if (!e)
        return oom(L), NULL;
    if (!existed) {
        if (vh_grow(&o->tot, &o->captot, o->ntot, sizeof *o->tot, 64))
            return oom(L), NULL;
        memset(o->tot[o->ntot], 0, sizeof *o->tot);
        e->v2 = o->ntot++;
    }
    return o->tot[e->v2];
}

/* One entry: the block joined with what the capture knows of it. Under
 * sampling the shim names only blocks that may be sampled and counts the
 * rest's walk bytes under address 0 (preload/owners.c). */
static void owned_one(struct loader *L, struct own_snap *s, uint32_t owner, uint64_t addr,
                      uint64_t walk)
{
    struct ld_owners *o = &L->ow;
    struct heap *h = s->heap, *in = NULL;
    struct vh_live_block *b = NULL;
    struct rows *w = o->blocks;
    uint64_t *t;
    int existed;
    s->entries++;
    if (addr) {
        struct vh_map_ent *e = vh_map__insert(o->seen, addr, 0, &existed);
        if (!e)
            return (void)oom(L);
        if (existed) {
            s->repeated_blocks++;  /* first owner wins */
            return;
        }
        if (h && !h->destroyed)
            b = find_block(h, addr, &in);
        if (!b)
            s->unknown_blocks++;
    }
    if (!(t = self_tot(L, (uint32_t)o->nsnaps, owner)))
        return;
    /* a sampled block stands for 1/p blocks and bytes, as in every total */
    struct vh_weight wt = b ? block_weight(L, b->size, b->serial) : (struct vh_weight){ 0, 0 };
    t[0] += wt.count;
    t[1] += wt.bytes;
    t[2] += walk;
    s->blocks += wt.count;
    s->bytes += wt.bytes;
    s->walk_bytes += walk;
    rows__set(w, 0, (int64_t)o->nsnaps);
    rows__set(w, 1, owner ? (int64_t)owner : VH_ROWV_NULL);
    rows__set(w, 3, (int64_t)addr);
    rows__set(w, 6, (int64_t)walk);
    if (b) {
        const struct agg *a = &L->lv.aggs[b->agg];
        rows__set(w, 2, in->id);
        rows__set(w, 4, (int64_t)b->size);
        rows__set(w, 5, (int64_t)(b->size + b->slack));
        rows__set(w, 7, a->stack);
        rows__set(w, 8, a->tag ? (int64_t)a->tag : VH_ROWV_NULL);
        rows__set(w, 9, (int64_t)b->time);
    } else {
        for (int c = 0; c < 10; c++)
            if (c == 2 || c == 4 || c == 5 || c >= 7)
                rows__set(w, c, VH_ROWV_NULL);
    }
    rows__next(w);
}

/* The owned_blocks writer, made at the first OWNED record. -1: failed. */
static int blocks_open(struct loader *L)
{
    struct ld_owners *o = &L->ow;
    if (o->blocks)
        return 0;
    if (!(o->blocks = malloc(sizeof *o->blocks)))
        return oom(L);
    if (rows__open(L, o->blocks, "INSERT INTO owned_blocks(snapshot_id, owner_id, heap_id,"
                                 " address, size, usable, walk_bytes, stack_id, tag_id,"
                                 " alloc_time) VALUES", 10)) {
        free(o->blocks);
        o->blocks = NULL;
        return -1;
    }
    o->blocks->cols.null = 1u << 1 | 1u << 2 | 1u << 4 | 1u << 5 | 7u << 7;
    return 0;
}

void owners__on_owned(struct loader *L, const struct vh_event *ev)
{
    struct ld_owners *o = &L->ow;
    const struct vh_rec_owned *r = (const struct vh_rec_owned *)ev->rec;
    struct own_snap *s;
    uint32_t node = ev->rec->b, owner = 0;
    if (ev->size < sizeof *r || !(s = cur_snap(L, r->snapshot)))
        return;
    if (node > o->nnodes) {
        o->bad_records++;
        return;
    }
    if (node)
        owner = o->node_owner[node - 1];
    if (blocks_open(L))
        return;
    const uint8_t *p = r->entry, *end = (const uint8_t *)ev->rec + ev->size;
    uint64_t addr = 0, da, walk;
    for (uint32_t i = 0; i < r->count && !L->failed; i++) {
        if (vh_uleb_get(&p, end, &da) || vh_uleb_get(&p, end, &walk)) {
            o->bad_records++;      /* cut or damaged: what came before stays */
            return;
        }
        addr += vh_unzigzag(da);
        owned_one(L, s, owner, addr, walk);
    }
}

void owners__on_end(struct loader *L, const struct vh_event *ev)
{
    struct ld_owners *o = &L->ow;
    const struct vh_rec_own_end *r = (const struct vh_rec_own_end *)ev->rec;
    struct own_snap *s;
    if (ev->size < sizeof *r || !(s = cur_snap(L, r->snapshot)))
        return;
    s->ended = 1;
    s->end = ev->time;
    s->shim_entries = r->entries;
    s->depth_lost = r->depth_lost;
    o->open = 0;
}

/* owners rows: ids in order, a parent before its children. */
static void write_owners(struct loader *L)
{
    struct ld_owners *o = &L->ow;
    sqlite3_stmt *st = loader__prep(L, "INSERT INTO owners VALUES (?,?,?,"
                                       "coalesce((SELECT path || '/' FROM owners WHERE id = ?2), '')"
                                       " || ?3, ?)");
    for (size_t i = 0; st && i < o->nowners && !L->failed; i++) {
        const struct own_owner *w = &o->owners[i];
        sqlite3_bind_int64(st, 1, (sqlite3_int64)(i + 1));
        loader__bind_int_if(st, 2, w->parent != 0, w->parent);
        sqlite3_bind_text(st, 3, vh_strtab__get(o->labels, w->label), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, w->depth);
        loader__run(L, st);
    }
    sqlite3_finalize(st);
}

static void write_snapshots(struct loader *L)
{
    struct ld_owners *o = &L->ow;
    sqlite3_stmt *st = loader__prep(L, "INSERT INTO owner_snapshots VALUES "
                                       "(?,?,?,?,?,?,?,?,?,?,?,?,?)");
    for (size_t i = 0; st && i < o->nsnaps && !L->failed; i++) {
        const struct own_snap *s = &o->snaps[i];
        /* entries the shim wrote that never arrived: dropped records */
        uint64_t lost = s->shim_entries > s->entries ? s->shim_entries - s->entries : 0;
        sqlite3_bind_int64(st, 1, (sqlite3_int64)(i + 1));
        loader__bind_int_if(st, 2, s->heap != NULL, s->heap ? s->heap->id : 0);
        sqlite3_bind_text(st, 3, s->label, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)s->start);
        loader__bind_int_if(st, 5, s->ended, s->end);
        sqlite3_bind_int(st, 6, s->ended && !lost);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)s->blocks);
        sqlite3_bind_int64(st, 8, (sqlite3_int64)s->bytes);
        sqlite3_bind_int64(st, 9, (sqlite3_int64)s->walk_bytes);
        sqlite3_bind_int64(st, 10, (sqlite3_int64)s->unknown_blocks);
        sqlite3_bind_int64(st, 11, (sqlite3_int64)s->repeated_blocks);
        sqlite3_bind_int64(st, 12, (sqlite3_int64)s->depth_lost);
        sqlite3_bind_int64(st, 13, (sqlite3_int64)lost);
        loader__run(L, st);
    }
    sqlite3_finalize(st);
}

/* owner_totals: each owner's own numbers, and its subtree's summed from
 * the deepest owners up (a child's id is above its parent's). */
static void write_totals(struct loader *L)
{
    struct ld_owners *o = &L->ow;
    sqlite3_stmt *st = loader__prep(L, "INSERT INTO owner_totals VALUES (?,?,?,?,?,?,?,?)");
    uint64_t (*sub)[3] = calloc(o->nowners + 1, sizeof *sub);
    if (!sub)
        oom(L);
    for (size_t n = 1; st && sub && n <= o->nsnaps && !L->failed; n++) {
        memset(sub, 0, (o->nowners + 1) * sizeof *sub);
        for (size_t w = 0; w <= o->nowners; w++) {
            struct vh_map_ent *e = vh_map__find(o->totals, n, w);
            if (e)
                memcpy(sub[w], o->tot[e->v2], sizeof *sub);
        }
        for (size_t w = o->nowners; w >= 1; w--)
            for (int k = 0; k < 3; k++)
                sub[o->owners[w - 1].parent][k] += sub[w][k];
        for (size_t w = 0; w <= o->nowners && !L->failed; w++) {
            struct vh_map_ent *e = vh_map__find(o->totals, n, w);
            static const uint64_t none[3];
            const uint64_t *self = e ? o->tot[e->v2] : none;
            if (!e && !sub[w][0] && !sub[w][2])
                continue;          /* not reached in this snapshot */
            if (w == 0 && !e)
                continue;          /* the top is no owner */
            sqlite3_bind_int64(st, 1, (sqlite3_int64)n);
            loader__bind_int_if(st, 2, w != 0, w);
            for (int k = 0; k < 3; k++) {
                sqlite3_bind_int64(st, 3 + k, (sqlite3_int64)(w ? sub[w][k] : self[k]));
                sqlite3_bind_int64(st, 6 + k, (sqlite3_int64)self[k]);
            }
            loader__run(L, st);
        }
    }
    free(sub);
    sqlite3_finalize(st);
}

/* "N thing(s)" after a ", " when there were some. */
static size_t part(char *buf, size_t at, size_t cap, uint64_t n, const char *one, const char *many)
{
    if (!n || at >= cap)
        return at;
    int w = snprintf(buf + at, cap - at, "%s%llu %s", at ? ", " : "", (unsigned long long)n,
                     n == 1 ? one : many);
    return w < 0 ? at : at + (size_t)w;
}

/* One warning for the load, naming every kind of bad input seen. Under
 * sampling most blocks a walk names were not sampled: not bad input. */
static void warn(const struct loader *L)
{
    const struct ld_owners *o = &L->ow;
    uint64_t unknown = 0, cut = 0;
    char buf[512];
    size_t n = 0;
    for (size_t i = 0; i < o->nsnaps; i++) {
        unknown += L->lv.rate ? 0 : o->snaps[i].unknown_blocks;
        cut += !o->snaps[i].ended;
    }
    n = part(buf, n, sizeof buf, unknown, "block named that the walked heap did not hold",
             "blocks named that the walked heap did not hold");
    n = part(buf, n, sizeof buf, o->cut_labels, "label cut at 255 bytes", "labels cut at 255 bytes");
    n = part(buf, n, sizeof buf, o->bad_labels, "label not UTF-8", "labels not UTF-8");
    n = part(buf, n, sizeof buf, o->bad_records, "damaged record", "damaged records");
    n = part(buf, n, sizeof buf, cut, "snapshot cut short (the program ended in its walk)",
             "snapshots cut short (the program ended in their walk)");
    if (n)
        vh_errorf(NULL, "warning: ownership: %s; loaded what is valid (see owner_snapshots)", buf);
}

void owners__write(struct loader *L)
{
    if (L->ow.blocks) {
        rows__close(L->ow.blocks);  /* the rows left, then the statements */
        free(L->ow.blocks);
        L->ow.blocks = NULL;
    }
    if (!L->ow.nsnaps)
        return;
    write_owners(L);
    write_snapshots(L);
    write_totals(L);
    if (!L->failed)
        warn(L);
}

int owners__init(struct loader *L)
{
    struct ld_owners *o = &L->ow;
    if (!(o->labels = vh_strtab__new()) || !(o->owner_map = vh_map__new()) ||
        !(o->totals = vh_map__new()))
        return oom(L);
    return 0;
}

void owners__free(struct loader *L)
{
    struct ld_owners *o = &L->ow;
    for (size_t i = 0; i < o->nsnaps; i++)
        free(o->snaps[i].label);
    free(o->snaps);
    free(o->owners);
    free(o->tot);
    free(o->node_owner);
    vh_strtab__free(o->labels);
    vh_map__free(o->owner_map);
    vh_map__free(o->totals);
    vh_map__free(o->seen);
    if (o->blocks) {
        sqlite3_finalize(o->blocks->many);     /* the load failed: rows dropped */
        sqlite3_finalize(o->blocks->one);
        free(o->blocks);
    }
    *o = (struct ld_owners){ 0 };
}
