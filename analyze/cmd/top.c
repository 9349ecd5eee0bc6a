/* cmd/top.c — `vheap-analyze top`: the call stacks that allocate most by one
 * measure (heaptrack_print's most-calls, most-temporary, peak and leak lists,
 * plus bytes, largest own live set, slack and failures), from stack_stats;
 * with --by-tag the same measures per tag (vheap_tag_push labels) instead. */
#include <stdio.h>
#include <string.h>

#include "analyze/cmd/query.h"
#include "analyze/cmd/top_event.h"
#include "analyze/cmd/top_live.h"

static const char usage[] =
    "usage: vheap-analyze top [OPTIONS] DB|CAPTURE\n"
    "\n"
    "The call stacks that allocate most by one measure, largest first, each\n"
    "with all its totals and its symbolized stack (innermost frame first).\n"
    "\n"
    "measures (--by):\n"
    "  allocations  calls to allocation functions (default)\n"
    "  bytes        bytes requested in total\n"
    "  temporary    allocations freed before the thread allocated again\n"
    "  peak         bytes this stack held live at the heap's peak\n"
    "  leaked       bytes still live at the end\n"
    "  max-live     the largest number of bytes this stack ever held live\n"
    "  slack        usable minus requested bytes, summed (allocator rounding)\n"
    "  failed       allocation calls that returned NULL\n"
    "\n"
    "With --by-tag, one row per tag (the label the program pushed with\n"
    "vheap_tag_push; '(none)' for allocations made without one) instead of\n"
    "per stack: its calls, bytes, temporary allocations, bytes at the peak and\n"
    "leaked bytes, summed over the heaps chosen (with several heaps, 'at peak'\n"
    "adds what the tag held at each heap's own peak). Every measure but\n"
    "max-live applies.\n"
    "\n"    "With --by-event, one row per event the program marked as it committed\n"
    "(marks 'event N ...', 'replay N ...', 'boot ...': what contrib/vere's\n"
    "patch writes, e.g. 'event 27 %eyre /e/http-server/... %request'), over\n"
    "the span from the mark before it: calls, bytes allocated, bytes still\n"
    "live at the end, the mean lifetime of its freed blocks, the growth of the\n"
    "home road (the outermost custom heaps' own blocks) and the most in use in\n"
    "them and their nested heaps while it ran. Its measures (--by): bytes\n"
    "(default), allocations, leaked, growth, lifetime (the slowest to free),\n"
    "peak. Every heap counts; --heap does not apply.\n"
    "\n"
    "options:\n"
    "  --by MEASURE     see above\n"
    "  --by-tag         rank tags instead of stacks\n"
    "  --by-event       rank marked events instead of stacks\n"
    "  --limit N        at most N stacks (default 10; 0 = all)\n"
    VH_HELP_HEAP
    VH_HELP_DEPTH
    VH_HELP_TEMPORARY
    "  --format FMT     table (default), json or csv\n"
    VH_HELP_BYTES_HELP
    "\n"
    "live view (--live): a running program, looked at again every second\n"
    "  vheap-analyze top --live [--by live|growth|rate] [--limit N]\n"
    "                    [--interval SEC] [--iterations N] CAPTURE|PID\n"
    "  shows its live bytes and blocks, how fast it allocates, how much its live\n"
    "  bytes grew since the view started, and the stacks that hold most now\n"
    "  (live), grew most since the view started (growth) or allocated most bytes\n"
    "  a second since the last look (rate). Each look reads only what the program\n"
    "  added since the last (the first: all of it, as long as a `load`). In a\n"
    "  terminal the screen is redrawn in place; keys: l, g, r (or Tab) switch the\n"
    "  measure, q quits; after the program exits its last state stays until q.\n"
    "  When the output is not a terminal, each look is printed as plain text,\n"
    "  until the program exits (said, exit 0) or --iterations looks (0 = no\n"
    "  limit). A sampled capture's numbers are estimates, and the view says so.\n"
    "  The PID or CAPTURE must be a running program's (as for `ctl`): anything\n"
    "  else is refused, exit 1.\n"
    "\n"
    "examples:\n"
    "  vheap-analyze top run.sqlite\n"
    "  vheap-analyze top run.sqlite --by temporary --limit 5\n"
    "  vheap-analyze top run.sqlite --by temporary --temporary heaptrack\n"
    "  vheap-analyze top vheap.myprog.1234.vhcap --by bytes --format json\n"
    "  vheap-analyze top run.sqlite --by peak --heap malloc --depth 6\n"
    "  vheap-analyze top run.sqlite --by-tag --heap 'loom/*' --by bytes\n"
    "  vheap-analyze top serf.sqlite --by-event --by growth --limit 5\n"
    "  vheap-analyze top serf.sqlite --by-event --by lifetime\n"
    "  vheap-analyze top --live $(pidof server)\n"
    "  vheap-analyze top --live --by growth --iterations 10 vheap.server.4242.vhcap >log\n";

static int run(int argc, char **argv);

VH_COMMAND(cmd_top, {
    .name = "top",
    .summary = "stacks (or tags) that allocate most (--by allocations|bytes|peak|leaked|...)",
    .usage = usage,
    .run = run,
    .order = 40,
});

enum {
    C_HEAP_ID, C_HEAP, C_STACK, C_TAG, C_ALLOCS, C_BYTES, C_TEMP, C_PEAK, C_LEAKED,
    C_MAX_LIVE, C_SLACK, C_FAILED, C_FREES, C_PEAK_BLOCKS, C_LEAKED_BLOCKS, C_N
};

static const struct out_col base_cols[C_N] = {
    [C_HEAP_ID] = { "heap_id", "heap id", OUT_INT, OUT_F_NO_TABLE },
    [C_HEAP] = { "heap", "heap", OUT_TEXT, OUT_F_HIDE_SAME },
    [C_STACK] = { "stack_id", "stack", OUT_INT, OUT_F_NO_TABLE },
    [C_TAG] = { "tag", "tag", OUT_TEXT, OUT_F_HIDE_SAME },
    [C_ALLOCS] = { "allocations", "calls", OUT_INT, 0 },
    [C_BYTES] = { "bytes_allocated", "allocated", OUT_BYTES, 0 },
    [C_TEMP] = { "temporary", "temporary", OUT_INT, 0 },
    [C_PEAK] = { "peak_bytes", "at peak", OUT_BYTES, 0 },
    [C_LEAKED] = { "leaked_bytes", "leaked", OUT_BYTES, 0 },
    [C_MAX_LIVE] = { "max_live_bytes", "max live", OUT_BYTES, OUT_F_NO_TABLE },
    [C_SLACK] = { "slack_bytes", "slack", OUT_BYTES, OUT_F_NO_TABLE },
    [C_FAILED] = { "failed", "failed", OUT_INT, OUT_F_NO_TABLE },
    [C_FREES] = { "frees", "frees", OUT_INT, OUT_F_NO_TABLE },
    [C_PEAK_BLOCKS] = { "peak_blocks", "blocks at peak", OUT_INT, OUT_F_NO_TABLE },
    [C_LEAKED_BLOCKS] = { "leaked_blocks", "blocks leaked", OUT_INT, OUT_F_NO_TABLE },
};

/* The measures: fixed SQL expressions chosen by name, never user text. */
static const struct measure {
    const char *name;
    const char *expr;
    int col;
    const char *what;
} measures[] = {
    { "allocations", "s.allocations", C_ALLOCS, "calls to allocation functions" },
    { "bytes", "s.bytes_allocated", C_BYTES, "bytes allocated" },
    { "temporary", "s.temporary", C_TEMP, "temporary allocations" },
    { "peak", "s.peak_bytes", C_PEAK, "bytes live at the peak" },
    { "leaked", "s.leaked_bytes", C_LEAKED, "bytes leaked" },
    { "max-live", "s.max_live_bytes", C_MAX_LIVE, "largest live bytes" },
    { "slack", "(s.usable_allocated - s.bytes_allocated)", C_SLACK, "slack bytes" },
    { "failed", "s.failed", C_FAILED, "failed allocations" },
};

/* --by-tag: one row per tag over the heaps chosen. */
enum {
    G_TAG_ID, G_TAG, G_HEAPS, G_HEAP, G_STACKS, G_ALLOCS, G_BYTES, G_TEMP, G_PEAK, G_LEAKED,
    G_SLACK, G_FAILED, G_FREES, G_PEAK_BLOCKS, G_LEAKED_BLOCKS, G_N
};

static const struct out_col tag_cols[G_N] = {
    [G_TAG_ID] = { "tag_id", "tag id", OUT_INT, OUT_F_NO_TABLE },
    [G_TAG] = { "tag", "tag", OUT_TEXT, 0 },
    [G_HEAPS] = { "heaps", "heaps", OUT_INT, OUT_F_NO_TABLE },
    [G_HEAP] = { "heap", "heap", OUT_TEXT, OUT_F_HIDE_SAME },
    [G_STACKS] = { "stacks", "stacks", OUT_INT, 0 },
    [G_ALLOCS] = { "allocations", "calls", OUT_INT, 0 },
    [G_BYTES] = { "bytes_allocated", "allocated", OUT_BYTES, 0 },
    [G_TEMP] = { "temporary", "temporary", OUT_INT, 0 },
    [G_PEAK] = { "peak_bytes", "at peak", OUT_BYTES, 0 },
    [G_LEAKED] = { "leaked_bytes", "leaked", OUT_BYTES, 0 },
    [G_SLACK] = { "slack_bytes", "slack", OUT_BYTES, OUT_F_NO_TABLE },
    [G_FAILED] = { "failed", "failed", OUT_INT, OUT_F_NO_TABLE },
    [G_FREES] = { "frees", "frees", OUT_INT, OUT_F_NO_TABLE },
    [G_PEAK_BLOCKS] = { "peak_blocks", "blocks at peak", OUT_INT, OUT_F_NO_TABLE },
    [G_LEAKED_BLOCKS] = { "leaked_blocks", "blocks leaked", OUT_INT, OUT_F_NO_TABLE },
};

/* The tag columns the stack measures map to (-1: not summable per tag). */
static int tag_col(int stack_col)
{
    switch (stack_col) {
    case C_ALLOCS: return G_ALLOCS;
    case C_BYTES: return G_BYTES;
    case C_TEMP: return G_TEMP;
    case C_PEAK: return G_PEAK;
    case C_LEAKED: return G_LEAKED;
    case C_SLACK: return G_SLACK;
    case C_FAILED: return G_FAILED;
    default: return -1;
    }
}

static int stack_row(sqlite3_stmt *st, void *arg)
{
    return vh_query__stack_row(arg, st, C_N, C_STACK);
}

static int tag_row(sqlite3_stmt *st, void *arg)
{
    struct vh_query *q = arg;
    struct out_val v[G_N];
    for (int i = 0; i < G_N; i++)
        v[i] = vh_col_val(st, i);
    /* tag 0 has no label: null for scripts, a word for people */
    if (v[G_TAG].kind == OV_NULL && q->o.format == OUT_TABLE)
        v[G_TAG] = OV_S("(none)");
    return out__row(q->out, v, NULL);
}

/* The two rankings: of stacks, and (--by-tag) of tags. Their SQL takes the
 * measure's expression where it says %s; ?1 is --heap, ?2 the limit. */
static const struct ranking {
    const char *rows, *count;
    const char *section, *noun;
    const char *none;              /* a table note when nothing ranks        */
    const struct out_col *cols;
    int ncols;
    int (*row)(sqlite3_stmt *st, void *arg);
} by_stack = {
    /* One row per (heap, stack, tag): tags split a stack's numbers. */
    .rows = "SELECT h.id, h.name, s.stack_id, t.label, s.allocations, s.bytes_allocated,"
            "       s.temporary, s.peak_bytes, s.leaked_bytes, s.max_live_bytes,"
            "       s.usable_allocated - s.bytes_allocated, s.failed, s.frees,"
            "       s.peak_blocks, s.leaked_blocks"
            " FROM stack_stats s JOIN heaps h ON h.id = s.heap_id"
            " LEFT JOIN tags t ON t.id = s.tag_id AND s.tag_id != 0"
            " WHERE " VH_HEAP_SEL("h.id", "?1") " AND %s > 0"
            " ORDER BY %s DESC, s.allocations DESC, h.id, s.stack_id, s.tag_id"
            " LIMIT ?2",
    .count = "SELECT count(*) FROM stack_stats s JOIN heaps h ON h.id = s.heap_id"
             " WHERE " VH_HEAP_SEL("h.id", "?1") " AND %s > 0",
    .section = "top",
    .noun = "stacks",
    .cols = base_cols,
    .ncols = C_N,
    .row = stack_row,
}, by_tag = {
    /* The heap column names the heap when the tag lives in one only. */
    .rows = "SELECT s.tag_id, t.label, count(DISTINCT s.heap_id),"
            "       CASE WHEN count(DISTINCT h.name) = 1 THEN min(h.name)"
            "            ELSE count(DISTINCT h.name) || ' heaps' END,"
            "       count(DISTINCT s.stack_id), sum(s.allocations), sum(s.bytes_allocated),"
            "       sum(s.temporary), sum(s.peak_bytes), sum(s.leaked_bytes),"
            "       sum(s.usable_allocated - s.bytes_allocated), sum(s.failed), sum(s.frees),"
            "       sum(s.peak_blocks), sum(s.leaked_blocks)"
            " FROM stack_stats s JOIN heaps h ON h.id = s.heap_id"
            " LEFT JOIN tags t ON t.id = s.tag_id AND s.tag_id != 0"
            " WHERE " VH_HEAP_SEL("h.id", "?1")
            " GROUP BY s.tag_id HAVING sum(%s) > 0"
            " ORDER BY sum(%s) DESC, sum(s.allocations) DESC, s.tag_id"
            " LIMIT ?2",
    .count = "SELECT count(*) FROM (SELECT 1 FROM stack_stats s JOIN heaps h ON h.id = s.heap_id"
             " WHERE " VH_HEAP_SEL("h.id", "?1")
             " GROUP BY s.tag_id HAVING sum(%s) > 0)",
    .section = "tags",
    .noun = "tags",
    .none = "no allocation has a %s",
    .cols = tag_cols,
    .ncols = G_N,
    .row = tag_row,
};

/* Lists what `r` ranks by measure `m`, its column `col` shown in tables;
 * the columns are copied into `cols`, which must outlive q->out. */
static int rank(struct vh_query *q, const struct ranking *r, const struct measure *m, int col,
                struct out_col cols[VH_ROW_MAX])
{
    sqlite3_stmt *rows, *count;
    char sql[2048], title[160];
    int rc;

    memcpy(cols, r->cols, (size_t)r->ncols * sizeof *cols);
    cols[col].flags &= ~OUT_F_NO_TABLE;
    snprintf(sql, sizeof sql, r->rows, m->expr, m->expr);
    if ((rc = vh_query__prepare(q, sql, &rows)))
        return rc;
    snprintf(sql, sizeof sql, r->count, m->expr);
    if ((rc = vh_query__prepare(q, sql, &count)))
        return rc;
    vh_bind_heap(rows, 1, &q->o);
    sqlite3_bind_int64(rows, 2, vh_qopts_sql_limit(&q->o));
    vh_bind_heap(count, 1, &q->o);
    if ((rc = vh_step_one(q->cmd->name, q->db, count)))
        return rc;
    long long total = sqlite3_column_int64(count, 0);
    long long shown = q->o.limit && q->o.limit < total ? q->o.limit : total;
    snprintf(title, sizeof title, "top %lld of %lld %s by %s", shown, total, r->noun, m->what);
    if ((rc = out__section(q->out, r->section, OUT_LIST, title, cols, (size_t)r->ncols)) ||
        (rc = vh_step_all(q->cmd->name, q->db, rows, r->row, q)))
        return rc;
    if (!total && r->none)
        out__table_note(q->out, r->none, m->what);
    return 0;
}

/* --by and --by-tag, checked before the DB is opened. */
static int choose_measure(struct vh_query *q, const struct measure **out)
{
    const struct measure *m = &measures[0];
    if (q->o.by) {
        m = NULL;
        for (size_t i = 0; i < sizeof measures / sizeof measures[0]; i++)
            if (!strcmp(q->o.by, measures[i].name))
                m = &measures[i];
        if (!m)
            return vh_query__usage(q, "--by: '%s' is not one of allocations, bytes, temporary, "
                                      "peak, leaked, max-live, slack, failed", q->o.by);
    }
    if (q->o.by_tag && tag_col(m->col) < 0)
        return vh_query__usage(q, "--by %s does not add up per tag: use it without --by-tag",
                               m->name);
    *out = m;
    return 0;
}

static int run(int argc, char **argv)
{
    struct vh_query q;
    const struct measure *m = NULL;
    struct out_col cols[VH_ROW_MAX];
    int by_event = 0, rc;
    const struct vh_opt own[] = { VH_OPT_FLAG("--by-event", &by_event) };

    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--live"))
            return vh_wants_help(&cmd_top, argc, argv) ? VH_EXIT_OK
                                                       : vh_top_live(&cmd_top, argc, argv);
    rc = vh_query__parse(&q, &cmd_top, VH_QOPT_BY | VH_QOPT_BY_TAG | VH_QOPT_TEMPORARY,
                         VH_OPTS(own), argc, argv);
    if (!rc && by_event) {
        if (q.o.by_tag)
            rc = vh_query__usage(&q, "--by-event and --by-tag: one or the other");
        else if (!(rc = vh_query__open(&q, VH_QUERY_OUTPUT)))
            rc = vh_top_events(&q, q.o.by, 0);
        return vh_query__finish(&q, rc);
    }
    if (!rc && !(rc = choose_measure(&q, &m)) &&
        !(rc = vh_query__open(&q, VH_QUERY_OUTPUT | (q.o.by_tag ? 0 : VH_QUERY_STACKS))))
        rc = q.o.by_tag ? rank(&q, &by_tag, m, tag_col(m->col), cols)
                        : rank(&q, &by_stack, m, m->col, cols);
    return vh_query__finish(&q, rc);
}
