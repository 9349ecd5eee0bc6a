/* export/flamegraph.c — folded stacks, the input of flamegraph.pl, inferno
 * and speedscope: one "outer;...;inner VALUE" line per distinct stack, the
 * value a stack_stats measure chosen by --cost and summed over tags. Inlined
 * functions become frames of their own (the out-of-line function, then what
 * was inlined into it); an unresolved frame is "module+0xOFFSET": the
 * names of stack_names.h, as the report's flame graph and diff use them. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/export/export.h"
#include "analyze/render/output.h"
#include "analyze/query/stack_names.h"
#include "analyze/util/grow.h"

/* Column sums per cost: fixed text, never built from user input. */
static const char *const cost_sql[] = {
    [VH_COST_ALLOCATIONS] = "SELECT heap_id, stack_id, sum(allocations) FROM stack_stats"
                            " GROUP BY heap_id, stack_id",
    [VH_COST_BYTES] = "SELECT heap_id, stack_id, sum(bytes_allocated) FROM stack_stats"
                      " GROUP BY heap_id, stack_id",
    [VH_COST_LEAKED] = "SELECT heap_id, stack_id, sum(leaked_bytes) FROM stack_stats"
                       " GROUP BY heap_id, stack_id",
    [VH_COST_PEAK] = "SELECT heap_id, stack_id, sum(peak_bytes) FROM stack_stats"
                     " GROUP BY heap_id, stack_id",
    [VH_COST_TEMPORARY] = "SELECT heap_id, stack_id, sum(temporary) FROM stack_stats"
                          " GROUP BY heap_id, stack_id",
    /* heap 0: no root frame a heap; the owner is the fourth column */
    [VH_COST_OWNED] = "SELECT 0, coalesce(stack_id, 0), sum(walk_bytes), coalesce(owner_id, 0)"
                      " FROM owned_blocks WHERE snapshot_id = (SELECT max(id) FROM owner_snapshots)"
                      " GROUP BY owner_id, stack_id",
};

static const char *const cost_what[] = {
    [VH_COST_ALLOCATIONS] = "allocation calls", [VH_COST_BYTES] = "bytes allocated",
    [VH_COST_LEAKED] = "bytes leaked",          [VH_COST_PEAK] = "bytes at the peak",
    [VH_COST_TEMPORARY] = "temporary allocations", [VH_COST_OWNED] = "bytes owned",
};

struct row {
    uint32_t heap, stack;
    uint64_t value;
    uint32_t owner;                /* --cost owned: owners.id, 0 none      */
};

/* One frame: ';' separates frames and a line break ends the record, so
 * neither may appear inside a name. */
static void add_frame(struct out_buf *l, const char *name)
{
    size_t start = l->len;
    if (l->len)
        out_buf__add(l, ";", 1);
    out_buf__puts(l, name);
    for (size_t i = start + (start ? 1 : 0); !l->oom && i < l->len; i++)
        if (l->p[i] == ';')
            l->p[i] = ':';
        else if (l->p[i] == '\n' || l->p[i] == '\r')
            l->p[i] = ' ';
}

static const struct vh_strtab *sort_tab;      /* qsort has no context pointer */

static int by_text(const void *a, const void *b)
{
    return strcmp(vh_strtab__get(sort_tab, *(const uint32_t *)a),
                  vh_strtab__get(sort_tab, *(const uint32_t *)b));
}

static int read_rows(struct vh_export *x, struct row **rows, size_t *nrows)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = vh_export_prepare(x, cost_sql[x->cost], &st);
    *rows = NULL;
    *nrows = 0;
    if (rc)
        return rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t h = sqlite3_column_int64(st, 0), s = sqlite3_column_int64(st, 1);
        int64_t v = sqlite3_column_int64(st, 2);
        if (v <= 0 || h < 0 || h > UINT32_MAX || s < 0 || s > UINT32_MAX ||
            !vh_export_heap_on(x, (uint32_t)h))
            continue;
        if (vh_grow(&*rows, &cap, *nrows, sizeof **rows, 1024)) {
            rc = -ENOMEM;
            goto out;
        }
        (*rows)[(*nrows)++] = (struct row){ (uint32_t)h, (uint32_t)s, (uint64_t)v,
                                            (uint32_t)sqlite3_column_int64(st, 3) };
    }
    if (rc != SQLITE_DONE) {
        vh_errorf(x->cmd, "reading stack_stats: %s", sqlite3_errmsg(x->db));
        rc = -EIO;
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(st);
    return rc;
}

/* --cost owned: the owner tree, label[id] and parent[id] (id 0: none),
 * so that an owner's path becomes its frames from the top down. */
struct owner_tree {
    char **label;
    uint32_t *parent;
    size_t n, cap, pcap;
};

static int owner_tree(struct vh_export *x, struct owner_tree *t)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_export_prepare(x, "SELECT id, coalesce(parent_id, 0), label FROM owners"
                                  " ORDER BY id", &st);
    if (rc)
        return rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *l = (const char *)sqlite3_column_text(st, 2);
        size_t id = (size_t)sqlite3_column_int64(st, 0);
        if (id != t->n + 1)
            continue;              /* ids count up from 1 (the loader's) */
        if (vh_reserve_zeroed(&t->parent, &t->pcap, id + 1, sizeof *t->parent, 64) ||
            vh_reserve_zeroed(&t->label, &t->cap, id + 1, sizeof *t->label, 64) ||
            !(t->label[id] = strdup(l ? l : ""))) {
            sqlite3_finalize(st);
            return -ENOMEM;
        }
        t->parent[id] = (uint32_t)sqlite3_column_int64(st, 1);
        t->n = id;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -EIO;
}

static void owner_tree_free(struct owner_tree *t)
{
    for (size_t i = 0; i <= t->n && t->label; i++)
        free(t->label[i]);
    free(t->label);
    free(t->parent);
}

/* The frames of owner `id`, outermost first (a parent's id is lower). */
static void owner_frames(struct out_buf *l, const struct owner_tree *t, uint32_t id)
{
    if (!id || id > t->n)
        return;
    owner_frames(l, t, t->parent[id] < id ? t->parent[id] : 0);
    add_frame(l, t->label[id]);
}

/* Heap names by id, for the root frames. */
static int heap_names(struct vh_export *x, struct vh_map *names, struct vh_strtab *tab)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_export_prepare(x, "SELECT id, name FROM heaps", &st), added, existed;
    if (rc)
        return rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char root[300];
        const unsigned char *n = sqlite3_column_text(st, 1);
        snprintf(root, sizeof root, "[heap %s]", n ? (const char *)n : "?");
        uint32_t id = vh_strtab__intern(tab, root, strlen(root), &added);
        struct vh_map_ent *e =
            id ? vh_map__insert(names, (uint64_t)sqlite3_column_int64(st, 0), 0, &existed) : NULL;
        if (!e) {
            sqlite3_finalize(st);
            return -ENOMEM;
        }
        e->v1 = id;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -EIO;
}

int vh_export_flamegraph(struct vh_export *x)
{
    struct row *rows = NULL;
    size_t nrows = 0, nheaps_seen = 0;
    struct vh_strtab *lines = vh_strtab__new(), *roots = vh_strtab__new();
    struct vh_map *heaps = vh_map__new(), *seen = vh_map__new();
    struct vh_snames *names = NULL;
    struct vh_sname *path = NULL;
    struct owner_tree owners = { 0 };
    size_t pcap = 0;
    char err[512];
    struct out_buf l = { 0 };
    uint64_t *values = NULL, total = 0;
    uint32_t *order = NULL;
    size_t vcap = 0;
    int rc = -ENOMEM, added, existed;

    if (!lines || !roots || !heaps || !seen)
        goto out;
    if ((rc = read_rows(x, &rows, &nrows)) || (rc = heap_names(x, heaps, roots)))
        goto out;
    if (x->cost == VH_COST_OWNED && (rc = owner_tree(x, &owners)))
        goto out;
    if ((rc = vh_snames__load(x->db, &names, err, sizeof err))) {
        vh_errorf(x->cmd, "reading stacks: %s", err);
        goto out;
    }
    for (size_t i = 0; i < nrows; i++) {
        if (!vh_map__insert(seen, rows[i].heap, 0, &existed)) {
            rc = -ENOMEM;
            goto out;
        }
        nheaps_seen += !existed;
    }
    for (size_t i = 0; i < nrows; i++) {
        int n = vh_snames__stack(names, rows[i].stack, x->depth, &path, &pcap);
        if (n < 0)
            goto nomem;
        l.len = 0;
        if (nheaps_seen > 1) {
            struct vh_map_ent *e = vh_map__find(heaps, rows[i].heap, 0);
            add_frame(&l, e ? vh_strtab__get(roots, (uint32_t)e->v1) : "[heap ?]");
        }
        owner_frames(&l, &owners, rows[i].owner);
        for (int f = 0; f < n && rows[i].stack; f++)
            add_frame(&l, vh_snames__str(names, path[f].name));
        uint32_t id = l.oom ? 0 : vh_strtab__intern(lines, l.p, l.len, &added);
        if (!id) {
            rc = -ENOMEM;
            goto out;
        }
        if (vh_reserve_zeroed(&values, &vcap, (size_t)id + 1, sizeof *values, 1024)) {
            rc = -ENOMEM;
            goto out;
        }
        values[id] += rows[i].value;
        total += rows[i].value;
    }

    /* Sorted, as stackcollapse scripts write them: diffs stay readable. */
    uint32_t n = vh_strtab__count(lines);
    if (!(order = malloc((n ? n : 1) * sizeof *order)))
        goto nomem;
    for (uint32_t i = 0; i < n; i++)
        order[i] = i + 1;
    sort_tab = lines;
    qsort(order, n, sizeof *order, by_text);
    for (uint32_t i = 0; i < n; i++) {
        vh_xout__write(x->out, vh_strtab__get(lines, order[i]), vh_strtab__len(lines, order[i]));
        vh_xout__printf(x->out, " %" PRIu64 "\n", values[order[i]]);
    }
    vh_export_note(x, "%s: %u stacks, %" PRIu64 " %s in total (%s)",
                   vh_export_dest(x), n, total,
                   cost_what[x->cost], x->heap_desc);
    rc = 0;
    goto out;
nomem:
    rc = -ENOMEM;
out:
    free(rows);
    free(values);
    free(order);
    free(l.p);
    free(path);
    owner_tree_free(&owners);
    vh_snames__free(names);
    vh_strtab__free(lines);
    vh_strtab__free(roots);
    vh_map__free(heaps);
    vh_map__free(seen);
    return rc;
}
