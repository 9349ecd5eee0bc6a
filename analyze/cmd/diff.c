/* cmd/diff.c — `vheap-analyze diff A B`: per call stack, how allocations,
 * bytes, temporary allocations, bytes at the peak and leaked bytes changed
 * from run A to run B. Stacks are matched by their frames' function names and
 * modules (stack_names.h, through the report's call tree), never by
 * addresses, so two builds of a program, or two runs with different
 * libraries' load addresses, line up; tags are summed. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/cmd/query.h"
#include "analyze/query/modmap.h"
#include "analyze/report/report.h"

static const char usage[] =
    "usage: vheap-analyze diff [OPTIONS] A B\n"
    "\n"
    "How each call stack's allocations changed from run A to run B (DBs or\n"
    "captures): calls, bytes allocated, temporary allocations, bytes at its\n"
    "heap's peak and bytes leaked, in A, in B and the change. Stacks are\n"
    "matched by their frames' function names (inlined ones included) and\n"
    "modules, not by addresses, so two builds or two runs of a program\n"
    "compare; frames without symbols match by module and offset. Heaps are\n"
    "matched by name; tags are summed. Stacks whose numbers did not change\n"
    "are left out. A's main program is taken as B's whatever their file names\n"
    "(prog-1.2 and prog-1.3 match); --map-module does the same for libraries.\n"
    "\n"
    "Order: by --by's change (its absolute value), else by the largest change\n"
    "of any measure relative to that measure's total in the larger run.\n"
    "\n"
    "options:\n"
    "  --by MEASURE     allocations, bytes, temporary, peak or leaked\n"
    "  --map-module OLD=NEW[,OLD=NEW...]\n"
    "                   A's module OLD is B's NEW (file names; paths are\n"
    "                   reduced to them), e.g. libfoo.so.1=libfoo.so.2\n"
    "  --limit N        at most N stacks (default 10; 0 = all)\n"
    VH_HELP_DEPTH
    "  --format FMT     table (default), json or csv\n"
    VH_HELP_BYTES_HELP
    "\n"
    "The stack shown is B's (A's for a stack B lacks). `report B --diff A`\n"
    "draws the same comparison as a differential flame graph.\n"
    "\n"
    "examples:\n"
    "  vheap-analyze diff before.sqlite after.sqlite\n"
    "  vheap-analyze diff old.vhcap new.vhcap --by leaked --limit 5\n"
    "  vheap-analyze diff a.sqlite b.sqlite --format json | jq '.diff[0]'\n"
    "  vheap-analyze diff a.sqlite b.sqlite --format csv --limit 0 > diff.csv\n"
    "  vheap-analyze diff v1.sqlite v2.sqlite --map-module libcore.so.1=libcore.so.2\n";

static int run(int argc, char **argv);

VH_COMMAND(cmd_diff, {
    .name = "diff",
    .summary = "what changed per call stack between two runs (matched by names)",
    .usage = usage,
    .run = run,
    .order = 63,
});

enum { D_HEAP, D_STATUS, D_M0 };   /* then per measure: a, b, change */
#define D_N (D_M0 + 3 * VH_RM_N)

static const struct out_col cols[D_N] = {
    [D_HEAP] = { "heap", "heap", OUT_TEXT, OUT_F_HIDE_SAME },
    [D_STATUS] = { "status", "status", OUT_TEXT, 0 },
    [D_M0 + 0] = { "allocations_a", "calls A", OUT_INT, OUT_F_NO_TABLE },
    [D_M0 + 1] = { "allocations_b", "calls B", OUT_INT, OUT_F_NO_TABLE },
    [D_M0 + 2] = { "allocations_change", "calls", OUT_INT, 0 },
    [D_M0 + 3] = { "bytes_allocated_a", "allocated A", OUT_BYTES, OUT_F_NO_TABLE },
    [D_M0 + 4] = { "bytes_allocated_b", "allocated B", OUT_BYTES, OUT_F_NO_TABLE },
    [D_M0 + 5] = { "bytes_allocated_change", "allocated", OUT_BYTES, 0 },
    [D_M0 + 6] = { "temporary_a", "temporary A", OUT_INT, OUT_F_NO_TABLE },
    [D_M0 + 7] = { "temporary_b", "temporary B", OUT_INT, OUT_F_NO_TABLE },
    [D_M0 + 8] = { "temporary_change", "temporary", OUT_INT, 0 },
    [D_M0 + 9] = { "peak_bytes_a", "at peak A", OUT_BYTES, OUT_F_NO_TABLE },
    [D_M0 + 10] = { "peak_bytes_b", "at peak B", OUT_BYTES, OUT_F_NO_TABLE },
    [D_M0 + 11] = { "peak_bytes_change", "at peak", OUT_BYTES, 0 },
    [D_M0 + 12] = { "leaked_bytes_a", "leaked A", OUT_BYTES, OUT_F_NO_TABLE },
    [D_M0 + 13] = { "leaked_bytes_b", "leaked B", OUT_BYTES, OUT_F_NO_TABLE },
    [D_M0 + 14] = { "leaked_bytes_change", "leaked", OUT_BYTES, 0 },
};

enum { T_MEASURE, T_A, T_B, T_CHANGE, T_PCT, T_N };
static const struct out_col tcols[T_N] = {
    [T_MEASURE] = { "measure", "measure", OUT_TEXT, 0 },
    [T_A] = { "a", "A", OUT_INT, 0 },
    [T_B] = { "b", "B", OUT_INT, 0 },
    [T_CHANGE] = { "change", "change", OUT_INT, 0 },
    [T_PCT] = { "change_pct", "change %", OUT_REAL, 0 },
};

/* The measure names of --by, in VH_RM_* order. */
static const char *const by_names[VH_RM_N] = { "allocations", "bytes", "temporary", "peak",
                                               "leaked" };

struct drow {
    int64_t row;
    double score;
};

struct reps {                      /* per tree row: a stack of B's and of A's */
    int64_t *id;
    size_t n;
    int side;
};

static int remember(void *arg, int64_t trow, int64_t heap, int64_t stack, int64_t tag)
{
    struct reps *r = arg;
    (void)heap, (void)tag;
    if ((size_t)trow >= r->n) {
        size_t n = (size_t)trow * 2 + 256;
        int64_t *p = realloc(r->id, n * 2 * sizeof *p);
        if (!p)
            return -ENOMEM;
        for (size_t i = r->n * 2; i < n * 2; i++)
            p[i] = -1;
        r->id = p;
        r->n = n;
    }
    if (r->id[trow * 2 + r->side] < 0)
        r->id[trow * 2 + r->side] = stack;
    return 0;
}

static int by_score(const void *a, const void *b)
{
    const struct drow *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return (x->row > y->row) - (x->row < y->row);
}

/* The first operand (A), taken out of argv so that the shared parser sees
 * one (B). Options taking a value are skipped with it. */
static const char *take_first(int *argc, char **argv)
{
    static const char *const valued[] = { "--by", "--limit", "--depth", "--format", "--heap" };
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            i++, a = i < *argc ? argv[i] : NULL;
        else if (a[0] == '-' && a[1]) {
            for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
                if (!strcmp(a, valued[k]))
                    i++;
            continue;
        }
        if (!a)
            return NULL;
        memmove(&argv[i], &argv[i + 1], (size_t)(*argc - i) * sizeof *argv);
        (*argc)--;
        return a;
    }
    return NULL;
}

static int totals(struct vh_query *q, const uint64_t *ta, const uint64_t *tb)
{
    int rc = out__section(q->out, "totals", OUT_LIST, "totals, every heap", tcols, T_N);
    for (int m = 0; !rc && m < VH_RM_N; m++) {
        struct out_val v[T_N] = {
            OV_S(by_names[m]), OV_I(ta[m]), OV_I(tb[m]), OV_I((int64_t)tb[m] - (int64_t)ta[m]),
            ta[m] ? OV_R(100.0 * ((double)tb[m] - (double)ta[m]) / (double)ta[m]) : OV_NULLV,
        };
        rc = out__row(q->out, v, NULL);
    }
    return rc;
}

static int body(struct vh_query *q, sqlite3 *dba, const char *a_name, int by,
                const struct vh_modmap *map)
{
    struct vh_snames *sa = NULL, *sb = NULL;
    struct vh_ctree *t = vh_ctree__new(2 * VH_RM_N);
    struct vh_rkeys k = { .keys = vh_strtab__new(), .no_tags = 1 };
    struct vh_stacks *stacks_a = NULL;
    struct reps reps = { 0 };
    struct drow *rows = NULL;
    uint64_t ta[VH_RM_N] = { 0 }, tb[VH_RM_N] = { 0 };
    char err[512];
    size_t n = 0, unchanged = 0;
    int rc = -ENOMEM;

    if (!t || !k.keys)
        goto nomem;
    if ((rc = vh_snames__load_mapped(dba, map, &sa, err, sizeof err)) ||
        (rc = vh_snames__load(q->db, &sb, err, sizeof err)) ||
        (rc = vh_report_add_stats(t, dba, sa, 0, &k, remember, &reps, err, sizeof err)) ||
        ((reps.side = 1), (rc = vh_report_add_stats(t, q->db, sb, VH_RM_N, &k, remember, &reps,
                                                    err, sizeof err)))) {
        vh_errorf(q->cmd->name, "%s", err);
        goto out;
    }
    size_t nrows = vh_ctree__count(t);
    if (!(rows = malloc((nrows ? nrows : 1) * sizeof *rows)))
        goto nomem;
    for (size_t r = 0; r < nrows; r++) {
        const uint64_t *v = vh_ctree__vals(t, (int64_t)r);
        for (int m = 0; m < VH_RM_N; m++)
            ta[m] += v[m], tb[m] += v[VH_RM_N + m];
    }
    for (size_t r = 0; r < nrows; r++) {
        const uint64_t *v = vh_ctree__vals(t, (int64_t)r);
        double score = 0;
        int changed = 0;
        for (int m = 0; m < VH_RM_N; m++) {
            double d = fabs((double)v[VH_RM_N + m] - (double)v[m]);
            uint64_t tot = ta[m] > tb[m] ? ta[m] : tb[m];
            changed |= d > 0;
            if (by < 0 && tot && d / (double)tot > score)
                score = d / (double)tot;
            else if (by == m)
                score = d;
        }
        if (changed)
            rows[n++] = (struct drow){ (int64_t)r, score };
        else
            unchanged++;
    }
    qsort(rows, n, sizeof *rows, by_score);

    if ((rc = totals(q, ta, tb)) ||
        (rc = vh_stacks__open(q->cmd->name, dba, q->o.depth, &stacks_a)))
        goto out;
    char title[200];
    size_t shown = q->o.limit && (size_t)q->o.limit < n ? (size_t)q->o.limit : n;
    snprintf(title, sizeof title, "%zu of %zu stacks that changed, by %s", shown, n,
             by < 0 ? "the largest relative change" : by_names[by]);
    if ((rc = out__section(q->out, "diff", OUT_LIST, title, cols, D_N)))
        goto out;
    for (size_t i = 0; i < shown; i++) {
        int64_t r = rows[i].row;
        const uint64_t *v = vh_ctree__vals(t, r);
        uint32_t leaf, heap, tag;
        struct out_val val[D_N];
        int in_a = 0, in_b = 0, e = 0;
        vh_ctree__key(t, r, &leaf, &heap, &tag);
        for (int m = 0; m < VH_RM_N; m++) {
            val[D_M0 + 3 * m] = OV_I(v[m]);
            val[D_M0 + 3 * m + 1] = OV_I(v[VH_RM_N + m]);
            val[D_M0 + 3 * m + 2] = OV_I((int64_t)v[VH_RM_N + m] - (int64_t)v[m]);
            in_a |= v[m] != 0;
            in_b |= v[VH_RM_N + m] != 0;
        }
        val[D_HEAP] = OV_S(vh_strtab__get(k.keys, heap));
        val[D_STATUS] = OV_S(!in_a ? "new" : !in_b ? "gone" : "changed");
        int64_t sid_b = (size_t)r < reps.n ? reps.id[r * 2 + 1] : -1;
        int64_t sid_a = (size_t)r < reps.n ? reps.id[r * 2] : -1;
        struct out_stack *st = sid_b >= 0 ? vh_stacks__get(q->stacks, sid_b, &e)
                                          : vh_stacks__get(stacks_a, sid_a, &e);
        if (!st) {
            vh_errorf(q->cmd->name, "reading a stack: %s",
                      e == -ENOMEM ? "out of memory" : "database error");
            rc = e ? e : -EIO;
            goto out;
        }
        if ((rc = out__row(q->out, val, st)))
            goto out;
    }
    if (shown < n)
        out__table_note(q->out, "%zu more: --limit 0 shows all", n - shown);
    out__table_note(q->out, "%s: A; %s: B; %zu stacks unchanged (matched by function names)",
                    a_name, q->o.input, unchanged);
    rc = 0;
    goto out;
nomem:
    rc = -ENOMEM;
    vh_errorf(q->cmd->name, "out of memory");
out:
    vh_snames__free(sa);
    vh_snames__free(sb);
    vh_ctree__free(t);
    vh_strtab__free(k.keys);
    vh_stacks__free(stacks_a);
    free(reps.id);
    free(rows);
    return rc;
}

static int run(int argc, char **argv)
{
    struct vh_query q;
    sqlite3 *dba = NULL;
    char **args = malloc(((size_t)argc + 1) * sizeof *args);
    const char *map_spec = NULL;
    const struct vh_opt own[] = { VH_OPT_VALUE("--map-module", &map_spec) };
    struct vh_modmap *map = vh_modmap__new();
    char err[512];
    int by = -1, rc;

    if (!args || !map) {
        free(args);
        vh_modmap__free(map);
        vh_errorf(cmd_diff.name, "out of memory");
        return VH_EXIT_DATA;
    }
    memcpy(args, argv, (size_t)argc * sizeof *args);
    args[argc] = NULL;
    const char *a = take_first(&argc, args);
    rc = vh_query__parse(&q, &cmd_diff, VH_QOPT_BY, VH_OPTS(own), argc, args);
    if (!rc && !a)
        rc = vh_query__usage(&q, "two runs are needed: diff A B (see vheap-analyze diff --help)");
    if (!rc && q.o.by) {
        for (int m = 0; m < VH_RM_N; m++)
            if (!strcmp(q.o.by, by_names[m]))
                by = m;
        if (by < 0)
            rc = vh_query__usage(&q, "--by: '%s' is not one of allocations, bytes, temporary, "
                                     "peak, leaked", q.o.by);
    }
    if (!rc && q.o.heap)
        rc = vh_query__usage(&q, "--heap is not supported: heaps are matched by name");
    if (!rc && map_spec && (rc = vh_modmap__parse(map, map_spec))) {
        if (rc == -ENOMEM)
            vh_errorf(cmd_diff.name, "out of memory");
        else
            rc = vh_query__usage(&q, "--map-module: '%s' is not OLD=NEW[,OLD=NEW...]", map_spec);
    }
    if (!rc)
        rc = vh_query__open_also(&q, a, &dba);
    if (!rc)
        rc = vh_query__open(&q, VH_QUERY_OUTPUT | VH_QUERY_STACKS);
    if (!rc && (rc = vh_modmap__mains(map, dba, q.db, err, sizeof err)))
        vh_errorf(cmd_diff.name, "%s", err);
    if (!rc)
        rc = body(&q, dba, a, by, map);
    free(args);
    vh_modmap__free(map);
    return vh_query__finish(&q, rc);
}
