/* stacks.c — modules, frames, stacks and the call tree. A STACK record's
 * frames become a path of stack_tree nodes (streamed out through rows.h
 * while the load goes on), each frame's address a frames row, resolved by
 * the symbolizer on its thread as it is made. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/load/loader.h"
#include "analyze/load/rows.h"
#include "analyze/util/grow.h"

#if __has_include("analyze/symbols/symbols.h")
#include "analyze/symbols/symbols.h"
#define HAVE_SYMBOLS 1
#else
#define HAVE_SYMBOLS 0
#endif

/* ---- the call tree's node map (struct nodemap, loader.h) ----------------- */

static inline size_t nodemap_home(const struct nodemap *m, uint64_t key)
{
    return idxmap__mix(key, 0) & m->mask;
}

/* Adds key -> id, known to be absent, with room reserved. */
static inline void nodemap_add(struct nodemap *m, uint64_t key, uint32_t id)
{
    size_t i = nodemap_home(m, key);
    while (m->s[i].key)
        i = (i + 1) & m->mask;
    m->s[i] = (struct node_slot){ .key = key, .id = id };
    m->count++;
}

/* Twice the slots, every node added again. */
static int nodemap_grow(struct nodemap *m)
{
    struct nodemap old = *m;
    size_t n = m->s ? (m->mask + 1) * 2 : 4096;

    if (!(m->s = vh_calloc_table(n, sizeof *m->s))) {
        *m = old;
        return -ENOMEM;
    }
    m->mask = n - 1;
    m->count = 0;
    for (size_t i = 0; old.s && i <= old.mask; i++)
        if (old.s[i].key)
            nodemap_add(m, old.s[i].key, old.s[i].id);
    free(old.s);
    return 0;
}

/* The node of (parent, frame): its id, or, when there is none, the id
 * `next` given to it (*made = 1). UINT32_MAX when out of memory. */
static inline uint32_t nodemap_get(struct nodemap *m, uint32_t parent, uint32_t frame,
                                   uint32_t next, int *made)
{
    uint64_t key = (uint64_t)parent << 32 | frame;
    size_t i;

    *made = 0;
    /* grown at 5/8 full: linear probes stay short */
    if (!m->s || (m->count + 1) * 8 > (m->mask + 1) * 5) {
        if (nodemap_grow(m))
            return UINT32_MAX;
    }
    for (i = nodemap_home(m, key); m->s[i].key; i = (i + 1) & m->mask)
        if (m->s[i].key == key)
            return m->s[i].id;
    m->s[i] = (struct node_slot){ .key = key, .id = next };
    m->count++;
    *made = 1;
    return next;
}

/* Room for `more` new nodes without growing. 0 or -ENOMEM. */
static int nodemap_reserve(struct nodemap *m, size_t more)
{
    while (!m->s || (m->count + more) * 8 > (m->mask + 1) * 5)
        if (nodemap_grow(m))
            return -ENOMEM;
    return 0;
}

/* ---- modules, stacks, frames ------------------------------------------- */

static int by_lo(const void *a, const void *b, void *arg)
{
    const struct module *m = arg;
    uint64_t x = m[*(const uint32_t *)a].lo, y = m[*(const uint32_t *)b].lo;
    return (x > y) - (x < y);
}

static void active_rebuild(struct loader *L)
{
    L->sk.nactive = 0;
    for (size_t i = 0; i < L->sk.nmods; i++)
        if (!L->sk.mods[i].unloaded)
            L->sk.active[L->sk.nactive++] = (uint32_t)i;
    qsort_r(L->sk.active, L->sk.nactive, sizeof *L->sk.active, by_lo, L->sk.mods);
    L->sk.prev_n = 0;                     /* an address's frame may differ now */
}

void stacks__on_module(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_module *r = (const struct vh_rec_module *)ev->rec;
    struct module *m;
    unsigned idlen;

    if (ev->size < sizeof *r) {
        L->unknown_records++;
        return;
    }
    if (L->sk.nmods == L->sk.capmods) {
        size_t n = L->sk.capmods ? L->sk.capmods * 2 : 64;
        struct module *p = realloc(L->sk.mods, n * sizeof *p);
        uint32_t *a = p ? realloc(L->sk.active, n * sizeof *a) : NULL;
        if (p)
            L->sk.mods = p;
        if (!p || !a) {
            loader__fail(L, -ENOMEM, "out of memory");
            return;
        }
        L->sk.active = a;
        L->sk.capmods = n;
    }
    m = &L->sk.mods[L->sk.nmods];
    memset(m, 0, sizeof *m);
    m->path = loader__rec_string(L, ev, sizeof *r);
    if (!m->path)
        return;
    idlen = r->h.b < sizeof r->build_id ? r->h.b : sizeof r->build_id;
    for (unsigned i = 0; i < idlen; i++)
        snprintf(m->build_id + 2 * i, 3, "%02x", r->build_id[i]);
    m->bias = r->bias;
    m->lo = r->lo;
    m->hi = r->hi;
    m->load_time = ev->time;
    m->is_main = !!(r->h.flags & VH_RF_MAIN_EXE);
    L->sk.nmods++;
#if HAVE_SYMBOLS
    symbols__module(L->sk.sym, (int64_t)L->sk.nmods, m->path, m->build_id);
#endif
    active_rebuild(L);
}

void stacks__on_module_unload(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_value *r = (const struct vh_rec_value *)ev->rec;

    /* the latest load with that bias is the one going away */
    for (size_t i = L->sk.nmods; i-- > 0;) {
        struct module *m = &L->sk.mods[i];
        if (!m->unloaded && m->bias == r->value) {
            m->unloaded = 1;
            m->unload_time = ev->time;
            active_rebuild(L);
            return;
        }
    }
    L->unknown_records++;
}

/* Module id (1-based) of the loaded module mapping addr, or 0. */
static uint32_t module_of(const struct loader *L, uint64_t addr)
{
    size_t lo = 0, hi = L->sk.nactive;

    while (lo < hi) {                  /* first module with lo > addr */
        size_t mid = (lo + hi) / 2;
        if (L->sk.mods[L->sk.active[mid]].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (lo-- > 0) {                 /* overlapping ranges: look further */
        const struct module *m = &L->sk.mods[L->sk.active[lo]];
        if (addr < m->hi)
            return L->sk.active[lo] + 1;
        if (lo + 8 < L->sk.nactive && m->lo + (1ull << 40) < addr)
            break;
    }
    return 0;
}

static uint64_t frame_id(struct loader *L, uint64_t addr)
{
    uint32_t mod = module_of(L, addr);
    int existed;
    struct vh_map_ent *e = vh_map__insert(L->sk.frame_map, addr, mod, &existed);
    sqlite3_stmt *st = L->sk.ins_frame;
    uint64_t off = mod ? addr - L->sk.mods[mod - 1].bias : 0;   /* in the module's ELF */
    uint64_t id;

    if (!e) {
        loader__fail(L, -ENOMEM, "out of memory");
        return 0;
    }
    if (existed)
        return e->v1;
    id = e->v1 = ++L->sk.nframes;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)addr);
    if (mod) {
        sqlite3_bind_int64(st, 3, mod);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)off);
    } else {
        sqlite3_bind_null(st, 3);
        sqlite3_bind_null(st, 4);
    }
    loader__run(L, st);
#if HAVE_SYMBOLS
    symbols__frame(L->sk.sym, id, mod, off);
#endif
    return id;
}

/* Marks stack id as written; 1 if it already was. */
int stacks__mark(struct loader *L, uint32_t id)
{
    if (stack_seen(L, id))
        return 1;
    if (id < L->sk.seen_n) {
        L->sk.seen_bits[id / 64] |= 1ull << (id % 64);
        return 0;
    }
    if (!vh_map__insert(L->sk.stack_seen, id, 0, &(int){ 0 })) {
        loader__fail(L, -ENOMEM, "out of memory");
        return 1;
    }
    return 0;
}

void stacks__row(struct loader *L, uint32_t id, uint32_t depth, int truncated,
                      uint32_t node)
{
    rows__set(L->sk.stack_rows, 0, id);
    rows__set(L->sk.stack_rows, 1, depth);
    rows__set(L->sk.stack_rows, 2, truncated);
    rows__set(L->sk.stack_rows, 3, node);
    rows__next(L->sk.stack_rows);
    L->sk.nstacks++;
}

/* The call-tree node of the frame at addr under node `parent` (0: an
 * outermost frame); a new one gets its row. 0 on failure. */
static uint32_t node_get(struct loader *L, uint32_t parent, uint64_t addr, int *made)
{
    uint32_t frame = (uint32_t)frame_id(L, addr), id;

    *made = 0;
    if (L->failed)
        return 0;
    if (L->sk.nnodes >= UINT32_MAX - 1) {
        loader__fail(L, -EOVERFLOW, "more than %u distinct call-tree nodes", UINT32_MAX - 2);
        return 0;
    }
    id = nodemap_get(&L->sk.node_map, parent, frame, (uint32_t)L->sk.nnodes + 1, made);
    if (id == UINT32_MAX) {
        loader__fail(L, -ENOMEM, "out of memory");
        return 0;
    }
    if (!*made)
        return id;
    L->sk.nnodes++;
    rows__set(L->sk.node_rows, 0, id);
    rows__set(L->sk.node_rows, 1, (int64_t)id - parent);   /* stack_tree.up */
    rows__set(L->sk.node_rows, 2, frame);
    rows__next(L->sk.node_rows);
    return id;
}

/* Below a node just made, every node is new: frames k.. of the stack at
 * fr (depth frames, innermost first) under node `node`. Their ids follow
 * one another, so every key is known before any is stored: all their
 * slots are fetched at once, then filled, instead of one cache miss after
 * the other. The last node's id, 0 on failure. */
static uint32_t node_chain(struct loader *L, const uint8_t *fr, uint32_t depth, size_t k,
                           uint32_t node)
{
    struct nodemap *m = &L->sk.node_map;
    size_t n = depth - k;

    if (L->sk.nnodes + n >= UINT32_MAX - 1) {
        loader__fail(L, -EOVERFLOW, "more than %u distinct call-tree nodes", UINT32_MAX - 2);
        return 0;
    }
    if (nodemap_reserve(m, n)) {
        loader__fail(L, -ENOMEM, "out of memory");
        return 0;
    }
    for (size_t j = k; j < depth; j++) {
        uint64_t addr;
        memcpy(&addr, fr + 8 * (size_t)(depth - 1 - j), sizeof addr);
        L->sk.chain_frame[j] = (uint32_t)frame_id(L, addr);
        L->sk.prev_addr[j] = addr;
        L->sk.prev_node[j] = (uint32_t)(L->sk.nnodes + 1 + (j - k));
        __builtin_prefetch(&m->s[nodemap_home(m, (uint64_t)(j > k ? L->sk.prev_node[j - 1] : node)
                                                        << 32 | L->sk.chain_frame[j])], 1);
    }
    if (L->failed)
        return 0;
    for (size_t j = k; j < depth; j++) {
        uint32_t parent = j > k ? L->sk.prev_node[j - 1] : node;
        nodemap_add(m, (uint64_t)parent << 32 | L->sk.chain_frame[j], L->sk.prev_node[j]);
        rows__set(L->sk.node_rows, 0, L->sk.prev_node[j]);
        rows__set(L->sk.node_rows, 1, (int64_t)L->sk.prev_node[j] - parent);   /* up */
        rows__set(L->sk.node_rows, 2, L->sk.chain_frame[j]);
        rows__next(L->sk.node_rows);
    }
    L->sk.nnodes += n;
    return L->sk.prev_node[depth - 1];
}

/* A stack becomes a path in the call tree, from its outermost frame in.
 * Stacks recorded one after the other mostly share their outer frames (the
 * same caller allocating from another place), so the frames it shares with
 * the previous STACK record, compared as raw addresses, take that one's
 * nodes without a lookup; module changes reset that (active_rebuild). The
 * next frames are looked up, until one is new: from there on node_chain. */
void stacks__on_stack(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_stack *r = (const struct vh_rec_stack *)ev->rec;
    const uint8_t *fr = (const uint8_t *)r + sizeof *r;
    uint32_t depth, node = 0;
    size_t k = 0;
    int made = 0;

    if (ev->size < sizeof *r || stacks__mark(L, r->h.b))
        return;
    depth = (uint32_t)((ev->size - sizeof *r) / 8);
    if (depth > L->sk.prev_cap) {
        uint64_t *a = realloc(L->sk.prev_addr, depth * sizeof *a);
        uint32_t *n = a ? realloc(L->sk.prev_node, depth * sizeof *n) : NULL;
        uint32_t *f = n ? realloc(L->sk.chain_frame, depth * sizeof *f) : NULL;
        if (a)
            L->sk.prev_addr = a;
        if (n)
            L->sk.prev_node = n;
        if (!f) {
            loader__fail(L, -ENOMEM, "out of memory");
            return;
        }
        L->sk.chain_frame = f;
        L->sk.prev_cap = depth;
    }
    for (; k < depth && !made; k++) {  /* frame k from the outermost */
        uint64_t addr;
        memcpy(&addr, fr + 8 * (size_t)(depth - 1 - k), sizeof addr);
        if (k < L->sk.prev_n && L->sk.prev_addr[k] == addr) {
            node = L->sk.prev_node[k];
            continue;
        }
        L->sk.prev_n = k;                 /* from here on the path is new */
        if (!(node = node_get(L, node, addr, &made)))
            return;
        L->sk.prev_addr[k] = addr;
        L->sk.prev_node[k] = node;
    }
    if (k < depth && !(node = node_chain(L, fr, depth, k, node)))
        return;
    L->sk.prev_n = depth;
    stacks__row(L, r->h.b, depth, !!(r->h.flags & VH_RF_TRUNCATED), node);
}

/* Ends the writer thread, once what it was given is stored; the rows
 * that follow are stepped where they are made. */
void stacks__unqueue(struct loader *L)
{
    char msg[256];

    if (!L->sk.rowq)
        return;
    if (rowq__stop(L->sk.rowq, msg, sizeof msg))
        loader__fail(L, -EIO, "%s", msg);
    L->sk.rowq = NULL;
    L->sk.node_rows->q = L->sk.stack_rows->q = NULL;
}

void stacks__free_nodes(struct loader *L)
{
    free(L->sk.node_map.s);
    free(L->sk.prev_addr);
    free(L->sk.prev_node);
    free(L->sk.chain_frame);
    L->sk.chain_frame = NULL;
    L->sk.node_map.s = NULL;
    L->sk.node_map.count = 0;
    L->sk.prev_addr = NULL;
    L->sk.prev_node = NULL;
    L->sk.prev_n = L->sk.prev_cap = 0;
}

int stacks__init(struct loader *L)
{
    struct ld_stacks *sk = &L->sk;

    if (!(sk->node_rows = calloc(1, sizeof *sk->node_rows)) ||
        !(sk->stack_rows = calloc(1, sizeof *sk->stack_rows)) ||
        !(sk->frame_map = vh_map__new()) || !(sk->stack_seen = vh_map__new())) {
        loader__fail(L, -ENOMEM, "out of memory");
        return -1;
    }
    if (rows__open(L, sk->node_rows, "INSERT INTO stack_tree(id, up, frame_id) VALUES", 3) ||
        rows__open(L, sk->stack_rows, "INSERT INTO stacks(id, depth, truncated, node) VALUES", 4))
        return -1;
    sk->rowq = sk->node_rows->q = sk->stack_rows->q = rowq__start(L->db);
#if HAVE_SYMBOLS
    /* frames are resolved on a thread of their own as they are made (the
     * stream's thread only queues them); without a thread, at the end */
    if (!L->opts->no_symbols && (sk->sym = symbols__new(L->opts->symbols)))
        symbols__start(sk->sym);
#endif
    sk->ins_frame = loader__prep(L, "INSERT INTO frames(id, address, module_id, module_offset) "
                                    "VALUES (?,?,?,?)");
    if (L->failed)
        return -1;
    /* The capture's ids are dense (the recorder counts them up): a bit
     * each up to its largest, unless that is absurd (a damaged capture's
     * ids may be anything; then, and for ids beyond, the hash). */
    if ((sk->seen_n = capture__dense_stacks(L->cap)) &&
        !(sk->seen_bits = calloc((sk->seen_n + 63) / 64, sizeof *sk->seen_bits))) {
        loader__fail(L, -ENOMEM, "out of memory");
        return -1;
    }
    stacks__mark(L, 0);
    stacks__row(L, 0, 0, 0, 0);        /* 0: no stack recorded */
    sk->nstacks = 0;
    return 0;
}

void stacks__close_rows(struct loader *L)
{
    struct rows **rws[] = { &L->sk.node_rows, &L->sk.stack_rows };

    for (size_t i = 0; i < sizeof rws / sizeof rws[0]; i++) {
        if (*rws[i])
            rows__close(*rws[i]);      /* finalizes; the rows left are
                                          written unless the load failed */
        free(*rws[i]);
        *rws[i] = NULL;
    }
}

void stacks__write_rows(struct loader *L)
{
    stacks__unqueue(L);
    if (L->sk.node_rows)
        rows__drain(L->sk.node_rows);
    if (L->sk.stack_rows)
        rows__drain(L->sk.stack_rows);
}

int stacks__symbols_round(struct loader *L, char *err, size_t errlen)
{
    err[0] = 0;
#if HAVE_SYMBOLS
    struct ld_stacks *sk = &L->sk;
    int rc = 0;

    if (!sk->sym)
        return 0;
    if (symbols__finish(sk->sym, err, errlen) < 0 ||
        symbols__write_db_more(sk->sym, L->db, err, errlen) < 0)
        rc = -EIO;
    symbols__free(sk->sym);
    /* the modules again: a new frame may be in any of them */
    if ((sk->sym = symbols__new(L->opts->symbols)))
        symbols__start(sk->sym);
    for (size_t i = 0; sk->sym && i < sk->nmods; i++)
        symbols__module(sk->sym, (int64_t)i + 1, sk->mods[i].path, sk->mods[i].build_id);
    return rc;
#else
    (void)L;
    (void)errlen;
    return 0;
#endif
}

void stacks__free(struct loader *L)
{
    struct ld_stacks *sk = &L->sk;

    stacks__close_rows(L);
    sqlite3_finalize(sk->ins_frame);
    sk->ins_frame = NULL;
    for (size_t i = 0; i < sk->nmods; i++)
        free(sk->mods[i].path);
    free(sk->mods);
    free(sk->active);
    sk->mods = NULL;
    sk->active = NULL;
    sk->nmods = sk->nactive = 0;
    vh_map__free(sk->frame_map);
    vh_map__free(sk->stack_seen);
    sk->frame_map = sk->stack_seen = NULL;
    free(sk->seen_bits);
    sk->seen_bits = NULL;
    sk->seen_n = 0;
    stacks__free_nodes(L);
}
