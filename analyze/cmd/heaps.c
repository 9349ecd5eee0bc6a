/* cmd/heaps.c — `vheap-analyze heaps`: every heap of the run as a tree (the
 * system allocator, custom heaps from vheap.h and the heaps nested in them,
 * such as Vere's roads in its loom), each with its bounds, lifetime, calls,
 * live, peak and leaked bytes, from the heaps table. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/util/grow.h"
#include "analyze/cmd/query.h"

static const char usage[] =
    "usage: vheap-analyze heaps [OPTIONS] DB|CAPTURE\n"
    "\n"
    "Every heap as a tree, nested heaps indented under the heap they were\n"
    "created in (children in creation order): 'malloc' is the system\n"
    "allocator; the others were declared with vheap_heap_create (vheap.h).\n"
    "Each heap: id, bounds (base and size, when declared), when it was\n"
    "created and destroyed, calls to allocation functions, bytes live at the\n"
    "end, peak live bytes and when, and leaked bytes and blocks. Destroying a\n"
    "heap frees its blocks and those of the heaps nested in it: a destroyed\n"
    "heap leaks nothing; blocks live at the end in a heap that still exists\n"
    "are leaked. Heaps share a name when the program gives them one (roads\n"
    "by depth); each is its own row, told apart by id.\n"
    "\n"
    "options:\n"
    "  --heap NAME      only the heaps of this name (or this id); NAME/* also\n"
    "                   lists every heap nested in them\n"
    "  --limit N        at most N heaps, in tree order (default 10; 0 = all)\n"
    "  --format FMT     table (default), json or csv\n"
    "  --bytes          exact byte counts instead of 2.20K-style sizes\n"
    "  --depth N        accepted for symmetry; unused here\n"
    "  -h, --help       this text\n"
    "\n"
    "JSON and CSV add parent_id, depth (0 for a heap nested in none), nested\n"
    "(heaps nested in it, at any depth), base, frees, bytes_allocated,\n"
    "live_blocks, peak_blocks and unknown_frees.\n"
    "\n"
    "examples:\n"
    "  vheap-analyze heaps run.sqlite\n"
    "  vheap-analyze heaps run.sqlite --heap 'loom/*' --limit 0\n"
    "  vheap-analyze heaps vheap.myprog.1234.vhcap --format json | jq '.heaps[1]'\n";

static int run(int argc, char **argv);

VH_COMMAND(cmd_heaps, {
    .name = "heaps",
    .summary = "every heap as a tree: bounds, lifetime, live, peak, leaked",
    .usage = usage,
    .run = run,
    .order = 27,
});

enum {
    H_NAME, H_ID, H_PARENT, H_DEPTH, H_NESTED, H_BASE, H_SIZE, H_CREATED,
    H_DESTROYED, H_ALLOCS, H_FREES, H_BYTES, H_LIVE, H_LIVE_BLOCKS, H_PEAK, H_PEAK_BLOCKS,
    H_PEAK_TIME, H_LEAKED, H_LEAKED_BLOCKS, H_UNKNOWN, H_N
};

static const struct out_col cols[H_N] = {
    [H_NAME] = { "heap", "heap", OUT_TEXT, 0 },
    [H_ID] = { "heap_id", "id", OUT_INT, 0 },
    [H_PARENT] = { "parent_id", "parent", OUT_INT, OUT_F_NO_TABLE },
    [H_DEPTH] = { "depth", "depth", OUT_INT, OUT_F_NO_TABLE },
    [H_NESTED] = { "nested", "nested", OUT_INT, OUT_F_NO_TABLE },
    [H_BASE] = { "base", "base", OUT_INT, OUT_F_NO_TABLE },
    /* the bounds, for people: "67.11M (at 0x200000000)" */
    [H_SIZE] = { "size", "region", OUT_BYTES, 0 },
    [H_CREATED] = { "created_ns", "created", OUT_NS, 0 },
    [H_DESTROYED] = { "destroyed_ns", "destroyed", OUT_NS, 0 },
    [H_ALLOCS] = { "allocations", "calls", OUT_INT, 0 },
    [H_FREES] = { "frees", "frees", OUT_INT, OUT_F_NO_TABLE },
    [H_BYTES] = { "bytes_allocated", "allocated", OUT_BYTES, OUT_F_NO_TABLE },
    [H_LIVE] = { "live_bytes", "live", OUT_BYTES, 0 },
    [H_LIVE_BLOCKS] = { "live_blocks", "live blocks", OUT_INT, OUT_F_NO_TABLE },
    [H_PEAK] = { "peak_bytes", "peak", OUT_BYTES, 0 },
    [H_PEAK_BLOCKS] = { "peak_blocks", "peak blocks", OUT_INT, OUT_F_NO_TABLE },
    [H_PEAK_TIME] = { "peak_time_ns", "peak at", OUT_NS, 0 },
    [H_LEAKED] = { "leaked_bytes", "leaked", OUT_BYTES, 0 },
    [H_LEAKED_BLOCKS] = { "leaked_blocks", "leaked blocks", OUT_INT, 0 },
    [H_UNKNOWN] = { "unknown_frees", "unknown frees", OUT_INT, OUT_F_HIDE_ZERO },
};

/* Columns of the row query below, in order. */
static const int qcol[] = {
    H_ID, H_NAME, H_BASE, H_SIZE, H_CREATED, H_DESTROYED, H_ALLOCS, H_FREES, H_BYTES,
    H_LIVE, H_LIVE_BLOCKS, H_PEAK, H_PEAK_BLOCKS, H_PEAK_TIME, H_LEAKED, H_LEAKED_BLOCKS,
    H_UNKNOWN,
};
#define NQ (sizeof qcol / sizeof qcol[0])

/* One heap's place in the tree. Only this is kept for every heap (a Vere
 * run has very many roads); a row's numbers are read when it is shown. */
struct hnode {
    int64_t id, parent;            /* parent -1: none (or not in the DB)    */
    size_t first_child, next_sibling;   /* indices; SIZE_MAX: none          */
    size_t up;                     /* parent's index in the walk, or SIZE_MAX */
    int64_t depth, nested;
    int64_t level;                 /* table indentation: chosen ancestors   */
    unsigned on : 1;               /* chosen by --heap                      */
    unsigned destroyed : 1;
    unsigned seen : 1;             /* emitted (or skipped) already          */
};

struct heaps {
    struct hnode *r;
    size_t n, cap;
    size_t *order;                 /* pre-order walk, n entries             */
};

static int by_id(const void *a, const void *b)
{
    int64_t x = ((const struct hnode *)a)->id, y = ((const struct hnode *)b)->id;
    return (x > y) - (x < y);
}

static struct hnode *find(struct heaps *h, int64_t id)
{
    struct hnode key = { .id = id };
    return id < 0 ? NULL : bsearch(&key, h->r, h->n, sizeof *h->r, by_id);
}

static int read_tree(const struct vh_command *cmd, sqlite3 *db, const struct vh_qopts *o,
                     struct heaps *h)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_prepare(cmd->name, db,
                        "SELECT id, parent_id, destroy_time IS NOT NULL, "
                        VH_HEAP_SEL("id", "?1") " FROM heaps ORDER BY id",
                        &st);
    if (rc)
        return rc;
    vh_bind_heap(st, 1, o);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (vh_grow(&h->r, &h->cap, h->n, sizeof *h->r, 64)) {
            rc = -ENOMEM;
            goto out;
        }
        h->r[h->n++] = (struct hnode){
            .id = sqlite3_column_int64(st, 0),
            .parent = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1
                                                                : sqlite3_column_int64(st, 1),
            .destroyed = sqlite3_column_int(st, 2) != 0,
            .on = sqlite3_column_int(st, 3) != 0,
            .first_child = SIZE_MAX,
            .next_sibling = SIZE_MAX,
        };
    }
    rc = rc == SQLITE_DONE ? 0 : -EIO;
    if (rc)
        vh_errorf(cmd->name, "reading heaps: %s", sqlite3_errmsg(db));
out:
    sqlite3_finalize(st);
    return rc;
}

/* Links children to parents and walks the forest once, in pre-order with
 * children in id order (creation order, but for reused capture ids), filling
 * h->order, depth, nested (heaps below, at any depth) and the table level.
 * Iterative and linear: roads may nest deeply and be very many. A heap
 * whose parent is missing is a root; a cycle (only a hand-edited DB has
 * one) is cut where the walk first meets it, so every heap comes once. */
static int build_tree(struct heaps *h)
{
    size_t *stack = malloc((h->n ? h->n : 1) * sizeof *stack), k = 0;

    h->order = malloc((h->n ? h->n : 1) * sizeof *h->order);
    if (!stack || !h->order) {
        free(stack);
        return -ENOMEM;
    }
    for (size_t i = h->n; i-- > 0;) {
        struct hnode *p = find(h, h->r[i].parent);
        if (!p || p == &h->r[i]) {
            h->r[i].parent = -1;
            continue;
        }
        h->r[i].next_sibling = p->first_child;
        p->first_child = i;
    }
    /* roots first, then whatever they did not reach (a cycle) */
    for (size_t j = 0; j < 2 * h->n; j++) {
        size_t root = j % h->n, sp = 0;
        if (h->r[root].seen || (j < h->n && h->r[root].parent >= 0))
            continue;
        h->r[root].up = SIZE_MAX;
        h->r[root].depth = h->r[root].level = 0;
        stack[sp++] = root;
        while (sp) {
            size_t i = stack[--sp];
            struct hnode *r = &h->r[i];
            if (r->seen)
                continue;
            r->seen = 1;
            h->order[k++] = i;
            /* push children last-first so that the first pops first */
            size_t n0 = sp;
            for (size_t c = r->first_child; c != SIZE_MAX; c = h->r[c].next_sibling) {
                if (h->r[c].seen)
                    continue;
                h->r[c].up = i;
                h->r[c].depth = r->depth + 1;
                h->r[c].level = r->level + r->on;
                stack[sp++] = c;
            }
            for (size_t a = n0, b = sp; b > a + 1; a++, b--) {
                size_t t = stack[a];
                stack[a] = stack[b - 1];
                stack[b - 1] = t;
            }
        }
    }
    for (size_t j = k; j-- > 0;) {
        const struct hnode *r = &h->r[h->order[j]];
        if (r->up != SIZE_MAX)
            h->r[r->up].nested += 1 + r->nested;
    }
    free(stack);
    return 0;
}

struct emit {
    const struct vh_command *cmd;
    sqlite3 *db;
    sqlite3_stmt *row;             /* one heap's numbers, by id             */
    struct out *out;
    int table;
    int64_t limit, shown, chosen, destroyed;
};

static int emit_row(struct emit *e, const struct hnode *r, int64_t indent)
{
    struct out_val v[H_N];
    char name[512], at[48];
    int rc;

    sqlite3_reset(e->row);
    sqlite3_bind_int64(e->row, 1, r->id);
    if ((rc = sqlite3_step(e->row)) != SQLITE_ROW) {
        vh_errorf(e->cmd->name, "reading heap %lld: %s", (long long)r->id,
                  rc == SQLITE_DONE ? "gone" : sqlite3_errmsg(e->db));
        return -EIO;
    }
    for (size_t k = 0; k < NQ; k++)
        v[qcol[k]] = vh_col_val(e->row, (int)k);
    v[H_PARENT] = r->parent < 0 ? OV_NULLV : OV_I(r->parent);
    v[H_DEPTH] = OV_I(r->depth);
    v[H_NESTED] = OV_I(r->nested);
    if (v[H_BASE].kind == OV_INT) {
        snprintf(at, sizeof at, "at 0x%" PRIx64, (uint64_t)v[H_BASE].i);
        v[H_SIZE].note = at;
    }
    if (e->table) {
        /* the tree, for people: two spaces a level */
        int64_t pad = indent > 60 ? 60 : indent;
        snprintf(name, sizeof name, "%*s%s", (int)(2 * pad), "",
                 v[H_NAME].kind == OV_TEXT ? v[H_NAME].s : "?");
        v[H_NAME] = (struct out_val){ .kind = OV_TEXT, .s = name };
    }
    e->shown++;
    return out__row(e->out, v, NULL);
}

/* The chosen heaps in tree order, indented under the nearest chosen heap
 * they are nested in. */
static int emit_tree(struct heaps *h, struct emit *e)
{
    int rc = 0;
    for (size_t j = 0; j < h->n && !rc; j++) {
        const struct hnode *r = &h->r[h->order[j]];
        if (!r->on)
            continue;
        e->chosen++;
        e->destroyed += r->destroyed;
        if (!e->limit || e->shown < e->limit)
            rc = emit_row(e, r, r->level);
    }
    return rc;
}

static int list(struct vh_query *q)
{
    struct heaps h = { 0 };
    struct emit e = { .cmd = q->cmd, .db = q->db, .out = q->out,
                      .table = q->o.format == OUT_TABLE, .limit = q->o.limit };
    int rc;

    if ((rc = read_tree(q->cmd, q->db, &q->o, &h)) ||
        (rc = vh_query__prepare(q,
                                "SELECT id, name, base, size, create_time, destroy_time,"
                                "       allocations, frees, bytes_allocated, live_bytes,"
                                "       live_blocks, peak_bytes, peak_blocks, peak_time,"
                                "       leaked_bytes, leaked_blocks, unknown_frees"
                                " FROM heaps WHERE id = ?1",
                                &e.row)) ||
        (rc = build_tree(&h)) ||
        (rc = out__section(e.out, "heaps", OUT_LIST, NULL, cols, H_N)) ||
        (rc = emit_tree(&h, &e)))
        goto out;
    if (e.shown < e.chosen)
        out__table_note(e.out, "%lld heaps (%lld destroyed), %lld shown: --limit 0 shows all",
                        (long long)e.chosen, (long long)e.destroyed, (long long)e.shown);
    else
        out__table_note(e.out, "%lld heaps (%lld destroyed)", (long long)e.chosen,
                        (long long)e.destroyed);
out:
    if (rc == -ENOMEM)
        vh_errorf(q->cmd->name, "out of memory");
    free(h.r);
    free(h.order);
    return rc;
}

static int run(int argc, char **argv)
{
    return vh_query_run(&cmd_heaps, 0, VH_QUERY_OUTPUT, argc, argv, list);
}
