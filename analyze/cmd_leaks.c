/* cmd_leaks.c — `vheap-analyze leaks`: the blocks still live when the
 * process ended (in heaps that still existed), grouped by the stack that
 * allocated them, largest first, with the symbolized stack. */
#include <stdio.h>

#include "analyze/query_opts.h"

static const char usage[] =
    "usage: vheap-analyze leaks [OPTIONS] DB|CAPTURE\n"
    "\n"
    "Blocks live at the end of the run (leaked: never freed, in a heap that\n"
    "still exists), grouped by allocating call stack, largest total first:\n"
    "bytes, blocks and the stack, innermost frame (the allocator's caller)\n"
    "first. Inlined functions are listed with [inlined]. A process that did not\n"
    "exit cleanly reports what was live at its last record.\n"
    "\n"
    "options:\n"
    "  --min-bytes N    only stacks leaking N bytes or more in total\n"
    "                   (4096, 4K = 4000, 4KiB = 4096)\n"
    "  --limit N        at most N stacks (default 10; 0 = all)\n"
    VH_HELP_HEAP
    VH_HELP_DEPTH
    "  --format FMT     table (default), json or csv\n"
    VH_HELP_BYTES_HELP
    "\n"
    "examples:\n"
    "  vheap-analyze leaks run.sqlite\n"
    "  vheap-analyze leaks vheap.myprog.1234.vhcap --min-bytes 1MiB --limit 0\n"
    "  vheap-analyze leaks run.sqlite --format json --depth 8 | jq '.leaks[0]'\n"
    "  vheap-analyze leaks run.sqlite --format csv > leaks.csv\n";

static int run(int argc, char **argv);

VH_COMMAND(cmd_leaks, {
    .name = "leaks",
    .summary = "blocks live at the end, grouped by stack",
    .usage = usage,
    .run = run,
    .order = 30,
});

enum { L_HEAP_ID, L_HEAP, L_STACK, L_BYTES, L_BLOCKS, L_USABLE, L_FIRST, L_LAST, L_N };

static const struct out_col cols[L_N] = {
    [L_HEAP_ID] = { "heap_id", "heap id", OUT_INT, OUT_F_NO_TABLE },
    [L_HEAP] = { "heap", "heap", OUT_TEXT, OUT_F_HIDE_SAME },
    [L_STACK] = { "stack_id", "stack", OUT_INT, OUT_F_NO_TABLE },
    [L_BYTES] = { "bytes", "leaked", OUT_BYTES, 0 },
    [L_BLOCKS] = { "blocks", "blocks", OUT_INT, 0 },
    [L_USABLE] = { "usable", "usable", OUT_BYTES, OUT_F_NO_TABLE },
    [L_FIRST] = { "first_time_ns", "first allocated", OUT_NS, 0 },
    [L_LAST] = { "last_time_ns", "last allocated", OUT_NS, OUT_F_NO_TABLE },
};

enum { T_BYTES, T_BLOCKS, T_STACKS, T_BIG, T_SHOWN, T_N };

/* Over every leak of the heaps asked for; --min-bytes only narrows the list. */
static const struct out_col tcols[T_N] = {
    [T_BYTES] = { "bytes", "total memory leaked", OUT_BYTES, 0 },
    [T_BLOCKS] = { "blocks", "blocks leaked", OUT_INT, 0 },
    [T_STACKS] = { "stacks", "leaking stacks", OUT_INT, 0 },
    [T_BIG] = { "stacks_min_bytes", "stacks leaking --min-bytes or more", OUT_INT,
                OUT_F_NO_TABLE },
    [T_SHOWN] = { "shown", "stacks shown", OUT_INT, 0 },
};

/* Groups of the leaks table; ?1 heap. */
#define GROUPS                                                                  \
    "SELECT h.id AS heap_id, h.name AS heap, l.stack_id AS stack_id,"           \
    "       sum(l.size) AS bytes, count(*) AS blocks, sum(l.usable) AS usable," \
    "       min(l.time) AS first, max(l.time) AS last"                          \
    " FROM leaks l JOIN heaps h ON h.id = l.heap_id"                            \
    " WHERE " VH_HEAP_SEL("h.id", "?1")                                       \
    " GROUP BY l.heap_id, l.stack_id"

struct ctx {
    struct vh_query *q;
    int64_t shown;
};

static int leak_row(sqlite3_stmt *st, void *arg)
{
    struct ctx *c = arg;
    int rc = vh_query__stack_row(c->q, st, L_N, L_STACK);
    if (!rc)
        c->shown++;
    return rc;
}

static int list(struct vh_query *q)
{
    struct ctx c = { .q = q };
    sqlite3_stmt *rows, *tot;
    int rc;
    if ((rc = vh_query__prepare(q,
                                GROUPS " HAVING sum(l.size) >= ?2"
                                       " ORDER BY bytes DESC, blocks DESC, heap_id, stack_id"
                                       " LIMIT ?3",
                                &rows)) ||
        (rc = vh_query__prepare(q,
                                "SELECT coalesce(sum(bytes), 0), coalesce(sum(blocks), 0),"
                                "       count(*), coalesce(sum(bytes >= ?2), 0)"
                                " FROM (" GROUPS ")",
                                &tot)))
        return rc;
    vh_bind_heap(rows, 1, &q->o);
    sqlite3_bind_int64(rows, 2, q->o.min_bytes);
    sqlite3_bind_int64(rows, 3, vh_qopts_sql_limit(&q->o));
    vh_bind_heap(tot, 1, &q->o);
    sqlite3_bind_int64(tot, 2, q->o.min_bytes);

    if ((rc = out__section(q->out, "leaks", OUT_LIST, NULL, cols, L_N)) ||
        (rc = vh_step_all(q->cmd, q->db, rows, leak_row, &c)) ||
        (rc = vh_step_one(q->cmd, q->db, tot)))
        return rc;
    int64_t nstacks = sqlite3_column_int64(tot, 2), nbig = sqlite3_column_int64(tot, 3);
    if (!nbig)
        out__table_note(q->out, q->o.min_bytes ? "no stack leaks %lld bytes or more"
                                               : "no leaks",
                        (long long)q->o.min_bytes);
    struct out_val t[T_N] = {
        [T_BYTES] = vh_col_val(tot, 0),
        [T_BLOCKS] = vh_col_val(tot, 1),
        [T_STACKS] = OV_I(nstacks),
        [T_BIG] = OV_I(nbig),
        [T_SHOWN] = OV_I(c.shown),
    };
    if ((rc = out__section(q->out, "totals", OUT_OBJECT, NULL, tcols, T_N)))
        return rc;
    return out__row(q->out, t, NULL);
}

static int run(int argc, char **argv)
{
    return vh_query_run(&cmd_leaks, VH_QOPT_MIN_BYTES, 1, argc, argv, list);
}
