/* export/massif.c — a massif.out file (valgrind's massif format, read by
 * ms_print and massif-visualizer) from the DB's event stream: about 100
 * snapshots evenly spread over the run, every 10th and the last one
 * detailed (the tree of stacks holding the live bytes, innermost frame
 * first), plus the peak, detailed, at the moment it was first reached.
 * Heap bytes are requested bytes, the "extra" bytes usable minus requested
 * (what the allocator rounded up); massif's stack bytes are always 0. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/store/db.h"
#include "analyze/store/events.h"
#include "analyze/export/export.h"
#include "analyze/render/output.h"
#include "analyze/query/stacks.h"
#include "analyze/util/grow.h"

#define SNAPSHOTS 100u             /* massif's default --max-snapshots       */
#define DETAILED_EVERY 10u         /* massif's default --detailed-freq       */
#define THRESHOLD 1.0              /* percent, massif's default --threshold  */

struct snap {
    uint64_t time, heap, extra;
    char *tree;                    /* NULL: heap_tree=empty                  */
    int peak;
};

/* A frame-tree node; children are chained through `next`. */
struct node {
    uint32_t label;                /* strtab id; 0 for the root              */
    uint32_t child, next;          /* node indices, 0 = none                 */
    uint64_t bytes;
};

struct ms {
    struct vh_export *x;
    struct vh_stacks *stacks;
    struct vh_strtab *labels;
    struct vh_map *blocks;         /* (heap, addr) -> size, stack << 32 | slack */
    struct vh_map *slot_of;        /* stack id -> slot                       */
    struct vh_map *paths;          /* stack id -> offset into path[]         */
    uint32_t *path;                /* per stack: n, then n labels            */
    size_t npath, path_cap;

    /* per stack slot: live bytes now and at the peak (epoch trick: a slot
     * whose epoch is not the current one has not changed since the peak) */
    uint32_t *slot_stack;
    uint64_t *slot_live, *slot_peak, *slot_epoch;
    size_t nslots, slot_cap;
    uint64_t epoch;

    uint64_t live, extra, peak, peak_extra, peak_time;
    int has_peak;

    struct snap *snaps;
    size_t nsnaps, snap_cap;

    struct node *nodes;            /* scratch for one tree                   */
    size_t nnodes, node_cap;
    struct vh_map *child;          /* (parent node, label) -> node           */
};

/* ---- labels: "0xADDR: function (file:line)", massif's form ---------------- */

static uint32_t intern(struct ms *m, const char *s)
{
    char buf[4096];
    size_t n = strlen(s);
    int added;
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    /* ms_print drops everything after '#' on a line; a line break would
     * end it */
    for (size_t i = 0; i < n; i++)
        buf[i] = s[i] == '#' ? '?' : s[i] == '\n' || s[i] == '\r' ? ' ' : s[i];
    return vh_strtab__intern(m->labels, buf, n, &added);
}

static uint32_t label(struct ms *m, uint64_t addr, const char *fn, const char *file,
                      int64_t line, const char *module)
{
    char *s = vh_export_frame_label(addr, fn, file, line, module);
    if (!s)
        return 0;
    uint32_t id = intern(m, s);
    free(s);
    return id;
}

/* The labels of a stack, innermost first with inlined functions expanded:
 * path[off] = count, path[off + 1 ...] = labels. */
static int stack_path(struct ms *m, uint32_t stack_id, size_t *off)
{
    struct vh_map_ent *e = vh_map__find(m->paths, stack_id, 0);
    int err = 0, existed;
    if (e) {
        *off = e->v1;
        return 0;
    }
    struct out_stack *st = vh_stacks__get(m->stacks, stack_id, &err);
    if (!st) {
        if (err != -ENOMEM)
            vh_errorf(m->x->cmd, "reading stack %" PRIu32 ": %s", stack_id,
                      sqlite3_errmsg(m->x->db));
        return err ? err : -EIO;
    }
    size_t need = 1;
    for (size_t i = 0; i < st->n; i++)
        need += 1 + st->frames[i].ninlined;
    if (vh_reserve(&m->path, &m->path_cap, m->npath + need, sizeof *m->path, 4096))
        goto nomem;
    size_t at = m->npath, k = at + 1;
    for (size_t i = 0; i < st->n; i++) {
        const struct out_frame *f = &st->frames[i];
        uint64_t a = (uint64_t)f->address;
        uint32_t id = label(m, a, f->function, f->file, f->line, f->module);
        if (!id)
            goto nomem;
        m->path[k++] = id;
        for (size_t j = 0; j < f->ninlined; j++) {
            const struct out_inline *in = &f->inlined[j];
            if (!(id = label(m, a, in->function ? in->function : "???", in->file, in->line,
                             f->module)))
                goto nomem;
            m->path[k++] = id;
        }
    }
    m->path[at] = (uint32_t)(k - at - 1);
    m->npath = k;
    out_stack__free(st);
    if (!(e = vh_map__insert(m->paths, stack_id, 0, &existed)))
        return -ENOMEM;
    e->v1 = *off = at;
    return 0;
nomem:
    out_stack__free(st);
    return -ENOMEM;
}

/* ---- the tree of one detailed snapshot --------------------------------------- */

static int node_child(struct ms *m, uint32_t parent, uint32_t lab, uint32_t *out)
{
    int existed;
    struct vh_map_ent *e = vh_map__insert(m->child, parent, lab, &existed);
    if (!e)
        return -ENOMEM;
    if (existed) {
        *out = (uint32_t)e->v1;
        return 0;
    }
    if (vh_grow(&m->nodes, &m->node_cap, m->nnodes, sizeof *m->nodes, 1))
        return -ENOMEM;
    uint32_t id = (uint32_t)m->nnodes++;
    m->nodes[id] = (struct node){ .label = lab, .next = m->nodes[parent].child };
    m->nodes[parent].child = id;
    e->v1 = *out = id;
    return 0;
}

static const struct node *sort_nodes;    /* qsort has no context pointer */

static int by_bytes_desc(const void *a, const void *b)
{
    uint64_t x = sort_nodes[*(const uint32_t *)a].bytes, y = sort_nodes[*(const uint32_t *)b].bytes;
    return (x < y) - (x > y);
}

static int print_node(struct ms *m, FILE *f, uint32_t id, unsigned depth, uint64_t total)
{
    uint32_t n = 0, *kids = NULL;
    uint64_t below = 0;
    size_t nbelow = 0, nsig = 0;

    for (uint32_t c = m->nodes[id].child; c; c = m->nodes[c].next)
        n++;
    if (n && !(kids = malloc(n * sizeof *kids)))
        return -ENOMEM;
    n = 0;
    for (uint32_t c = m->nodes[id].child; c; c = m->nodes[c].next)
        kids[n++] = c;
    sort_nodes = m->nodes;
    if (n)
        qsort(kids, n, sizeof *kids, by_bytes_desc);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t b = m->nodes[kids[i]].bytes;
        if ((double)b * 100.0 >= THRESHOLD * (double)total && b) {
            nsig++;
        } else {
            below += b;
            nbelow++;
        }
    }
    fprintf(f, "%*sn%zu: %" PRIu64 " %s\n", (int)depth, "", nsig + (nbelow > 0),
            m->nodes[id].bytes,
            id ? vh_strtab__get(m->labels, m->nodes[id].label)
               : "(heap allocation functions) malloc/new/new[], --alloc-fns, etc.");
    for (size_t i = 0; i < nsig; i++) {
        int rc = print_node(m, f, kids[i], depth + 1, total);
        if (rc) {
            free(kids);
            return rc;
        }
    }
    if (nbelow)
        fprintf(f, "%*sn0: %" PRIu64 " in %zu place%s, %sbelow massif's threshold (%.2f%%)\n",
                (int)depth + 1, "", below, nbelow, nbelow == 1 ? "" : "s",
                nbelow == 1 ? "" : "all ", THRESHOLD);
    free(kids);
    return 0;
}

/* The tree of what each stack slot holds: `at_peak` picks the values at the
 * peak, else the values now. */
static int build_tree(struct ms *m, int at_peak, uint64_t total, char **out)
{
    char *text = NULL;
    size_t len = 0;
    int rc = 0;

    *out = NULL;
    vh_map__free(m->child);
    if (!(m->child = vh_map__new()))
        return -ENOMEM;
    m->nnodes = 1;
    m->nodes[0] = (struct node){ 0 };
    for (size_t s = 0; s < m->nslots && !rc; s++) {
        uint64_t b = at_peak && m->slot_epoch[s] == m->epoch ? m->slot_peak[s] : m->slot_live[s];
        size_t off;
        if (!b)
            continue;
        if ((rc = stack_path(m, m->slot_stack[s], &off)))
            break;
        uint32_t node = 0, cnt = m->path[off];
        m->nodes[0].bytes += b;
        for (uint32_t i = 0; i < cnt && !rc; i++) {
            uint32_t c;
            if (!(rc = node_child(m, node, m->path[off + 1 + i], &c))) {
                m->nodes[c].bytes += b;
                node = c;
            }
        }
    }
    if (rc)
        return rc;
    m->nodes[0].bytes = total;     /* the same numbers; the header's is exact */
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return -ENOMEM;
    rc = print_node(m, f, 0, 0, total);
    if (fclose(f) && !rc)
        rc = -ENOMEM;
    if (rc) {
        free(text);
        return rc;
    }
    *out = text;
    return 0;
}

/* ---- replaying the events ------------------------------------------------------ */

static int slot(struct ms *m, uint32_t stack_id, size_t *out)
{
    int existed;
    struct vh_map_ent *e = vh_map__insert(m->slot_of, stack_id, 0, &existed);
    if (!e)
        return -ENOMEM;
    if (existed) {
        *out = e->v1;
        return 0;
    }
    if (m->nslots == m->slot_cap) {
        size_t cap = m->slot_cap ? m->slot_cap * 2 : 1024;
        uint32_t *st = realloc(m->slot_stack, cap * sizeof *st);
        if (!st)
            return -ENOMEM;
        m->slot_stack = st;
        uint64_t *a = realloc(m->slot_live, cap * sizeof *a);
        if (!a)
            return -ENOMEM;
        m->slot_live = a;
        if (!(a = realloc(m->slot_peak, cap * sizeof *a)))
            return -ENOMEM;
        m->slot_peak = a;
        if (!(a = realloc(m->slot_epoch, cap * sizeof *a)))
            return -ENOMEM;
        m->slot_epoch = a;
        m->slot_cap = cap;
    }
    size_t s = m->nslots++;
    m->slot_stack[s] = stack_id;
    m->slot_live[s] = m->slot_peak[s] = m->slot_epoch[s] = 0;
    e->v1 = *out = s;
    return 0;
}

/* Before a slot changes: remember what it held at the latest peak. */
static void slot_add(struct ms *m, size_t s, int64_t delta)
{
    if (m->slot_epoch[s] != m->epoch) {
        m->slot_peak[s] = m->slot_live[s];
        m->slot_epoch[s] = m->epoch;
    }
    m->slot_live[s] += (uint64_t)delta;
}

static int gone(struct ms *m, struct vh_map_ent *b)
{
    size_t s;
    int rc = slot(m, (uint32_t)(b->v2 >> 32), &s);
    if (rc)
        return rc;
    slot_add(m, s, -(int64_t)b->v1);
    m->live -= b->v1;
    m->extra -= b->v2 & 0xffffffffu;
    vh_map__remove(m->blocks, b);
    return 0;
}

static int born(struct ms *m, const struct vh_ev *ev)
{
    size_t s;
    int existed, rc = slot(m, ev->stack_id, &s);
    if (rc)
        return rc;
    struct vh_map_ent *b = vh_map__insert(m->blocks, ev->heap_id, ev->addr, &existed);
    if (!b)
        return -ENOMEM;
    uint64_t slack = ev->usable > ev->size ? ev->usable - ev->size : 0;
    if (slack > 0xffffffffu)
        slack = 0xffffffffu;
    b->v1 = ev->size;
    b->v2 = (uint64_t)ev->stack_id << 32 | slack;
    slot_add(m, s, (int64_t)ev->size);
    m->live += ev->size;
    m->extra += slack;
    /* the peak as vheap and heaptrack define it: after an allocation */
    if (!m->has_peak || m->live > m->peak) {
        m->has_peak = 1;
        m->peak = m->live;
        m->peak_extra = m->extra;
        m->peak_time = ev->time;
        m->epoch++;
    }
    return 0;
}

static int event(struct ms *m, const struct vh_ev *ev)
{
    struct vh_map_ent *b;
    if (!vh_export_heap_on(m->x, ev->heap_id))
        return 0;
    switch (ev->kind) {
    case VH_EV_ALLOC:
        return born(m, ev);
    case VH_EV_FREE:
        b = vh_map__find(m->blocks, ev->heap_id, ev->addr);
        return b ? gone(m, b) : 0;
    case VH_EV_RESIZE: {
        int rc = 0;
        if ((b = vh_map__find(m->blocks, ev->heap_id, ev->addr)))
            rc = gone(m, b);
        return rc ? rc : born(m, ev);
    }
    case VH_EV_MOVE:
        return vh_export_block_move(m->blocks, ev);
    }
    return 0;
}

static int snapshot(struct ms *m, uint64_t time, int detailed)
{
    if (vh_grow(&m->snaps, &m->snap_cap, m->nsnaps, sizeof *m->snaps, 128))
        return -ENOMEM;
    struct snap *s = &m->snaps[m->nsnaps];
    *s = (struct snap){ .time = time, .heap = m->live, .extra = m->extra };
    if (detailed) {
        int rc = build_tree(m, 0, m->live, &s->tree);
        if (rc)
            return rc;
    }
    m->nsnaps++;
    return 0;
}

/* ---- the file ---------------------------------------------------------------------- */

/* The time of snapshot k of n over [0, end]. */
static uint64_t grid(uint64_t end, size_t k, size_t n)
{
    return (uint64_t)((unsigned __int128)end * k / (n - 1));
}

static void put_clean(struct vh_xout *o, const char *s)
{
    for (; *s; s++)
        vh_xout__write(o, *s == '#' ? "?" : *s == '\n' || *s == '\r' ? " " : s, 1);
}

static void write_snap(struct vh_xout *o, size_t num, const struct snap *s)
{
    vh_xout__printf(o, "#-----------\nsnapshot=%zu\n#-----------\n", num);
    vh_xout__printf(o, "time=%" PRIu64 ".%03" PRIu64 "\n", s->time / 1000000u,
                    s->time / 1000u % 1000u);
    vh_xout__printf(o, "mem_heap_B=%" PRIu64 "\nmem_heap_extra_B=%" PRIu64
                       "\nmem_stacks_B=0\n", s->heap, s->extra);
    if (!s->tree) {
        vh_xout__puts(o, "heap_tree=empty\n");
        return;
    }
    vh_xout__puts(o, s->peak ? "heap_tree=peak\n" : "heap_tree=detailed\n");
    vh_xout__puts(o, s->tree);
}

int vh_export_massif(struct vh_export *x)
{
    struct ms m = { .x = x };
    struct evstream *es = NULL;
    struct vh_ev ev;
    struct snap peak = { 0 };
    char err[256];
    int rc = -ENOMEM;

    if (db__meta_int(x->db, "events", -1) < 0) {
        vh_errorf(x->cmd, "this database has no event stream (made by an older vheap?): "
                                "load the capture again with `vheap-analyze load`");
        return -ENOTSUP;
    }
    m.node_cap = 1024;
    if (!(m.labels = vh_strtab__new()) || !(m.blocks = vh_map__new()) ||
        !(m.slot_of = vh_map__new()) || !(m.paths = vh_map__new()) ||
        !(m.nodes = malloc(m.node_cap * sizeof *m.nodes)))
        goto out;
    if ((rc = vh_stacks__open(x->cmd, x->db, x->depth, &m.stacks)))
        goto out;
    if ((rc = evstream__open(x->db, 0, &es, err, sizeof err))) {
        vh_errorf(x->cmd, "the event stream: %s", err);
        goto out;
    }

    /* Snapshot k shows the state after every event up to k/(n-1) of the run. */
    uint64_t end = x->runtime_ns;
    size_t n = end ? SNAPSHOTS : 2, k = 0;
    while ((rc = evstream__next(es, &ev)) == 1) {
        vh_ev__weigh(&ev, x->rate);   /* sampled: estimates, as the DB's */
        while (k < n - 1 && ev.time > grid(end, k, n)) {
            if ((rc = snapshot(&m, grid(end, k, n), k && k % DETAILED_EVERY == 0)))
                goto out;
            k++;
        }
        if ((rc = event(&m, &ev)))
            goto out;
    }
    if (rc < 0) {
        vh_errorf(x->cmd, "the event stream: %s", evstream__error(es));
        goto out;
    }
    for (; k < n; k++)
        if ((rc = snapshot(&m, grid(end, k, n), k == n - 1 || (k && k % DETAILED_EVERY == 0))))
            goto out;
    if (m.has_peak) {
        peak = (struct snap){ .time = m.peak_time, .heap = m.peak, .extra = m.peak_extra,
                              .peak = 1 };
        if ((rc = build_tree(&m, 1, m.peak, &peak.tree)))
            goto out;
    }

    vh_xout__puts(x->out, "desc: vheap-analyze export --format massif, heap ");
    put_clean(x->out, x->heap_desc);
    vh_xout__puts(x->out, "\ncmd: ");
    put_clean(x->out, x->argv_text ? x->argv_text : x->exe ? x->exe : "(unknown)");
    vh_xout__puts(x->out, "\ntime_unit: ms\n");
    size_t num = 0;
    int peak_done = !m.has_peak;
    for (size_t i = 0; i < m.nsnaps; i++) {
        if (!peak_done && m.snaps[i].time > peak.time) {
            write_snap(x->out, num++, &peak);
            peak_done = 1;
        }
        write_snap(x->out, num++, &m.snaps[i]);
    }
    if (!peak_done)
        write_snap(x->out, num++, &peak);

    char pb[32], pt[32];
    vh_export_note(x, "%s: massif data, heap %s: %zu snapshots, peak %s at %s",
                   vh_export_dest(x), x->heap_desc, num,
                   out__human_bytes((int64_t)m.peak, pb, sizeof pb),
                   out__human_ns((int64_t)m.peak_time, pt, sizeof pt));
    if (x->nheaps > 1)
        vh_export_note(x, "%u heaps are merged into one: the peak is the peak of their sum",
                       x->nheaps);
    rc = 0;
    goto out;
out:
    evstream__close(es);
    vh_stacks__free(m.stacks);
    vh_strtab__free(m.labels);
    vh_map__free(m.blocks);
    vh_map__free(m.slot_of);
    vh_map__free(m.paths);
    vh_map__free(m.child);
    for (size_t i = 0; i < m.nsnaps; i++)
        free(m.snaps[i].tree);
    free(m.snaps);
    free(peak.tree);
    free(m.nodes);
    free(m.path);
    free(m.slot_stack);
    free(m.slot_live);
    free(m.slot_peak);
    free(m.slot_epoch);
    return rc;
}
