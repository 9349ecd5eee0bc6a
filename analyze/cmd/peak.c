/* cmd/peak.c — `vheap-analyze peak`: what was live at the moment each heap
 * reached its peak (largest live requested bytes), by allocating stack —
 * the loader attributes the peak exactly (stack_stats.peak_bytes). */
#include <stdio.h>

#include "analyze/cmd/query.h"

static const char usage[] =
    "usage: vheap-analyze peak [OPTIONS] DB|CAPTURE\n"
    "\n"
    "The moment of peak heap consumption (the largest number of live requested\n"
    "bytes right after an allocation) and what was live then, grouped by the\n"
    "stack that allocated it, largest first. Every heap has its own peak; the\n"
    "share is of that heap's peak.\n"
    "\n"
    "options:\n"
    "  --limit N        at most N stacks (default 10; 0 = all)\n"
    VH_HELP_HEAP
    VH_HELP_DEPTH
    "  --format FMT     table (default), json or csv (the stacks)\n"
    VH_HELP_BYTES_HELP
    "\n"
    "examples:\n"
    "  vheap-analyze peak run.sqlite\n"
    "  vheap-analyze peak vheap.myprog.1234.vhcap --limit 3 --depth 5\n"
    "  vheap-analyze peak run.sqlite --format json | jq '.heaps[0].peak_time_ns'\n";

static int run(int argc, char **argv);

VH_COMMAND(cmd_peak, {
    .name = "peak",
    .summary = "what was live at the peak, by stack",
    .usage = usage,
    .run = run,
    .order = 50,
});

enum { H_ID, H_NAME, H_BYTES, H_BLOCKS, H_TIME, H_N };

static const struct out_col hcols[H_N] = {
    [H_ID] = { "heap_id", "heap id", OUT_INT, OUT_F_NO_TABLE },
    [H_NAME] = { "heap", "heap", OUT_TEXT, 0 },
    [H_BYTES] = { "peak_bytes", "peak heap memory consumption", OUT_BYTES, 0 },
    [H_BLOCKS] = { "peak_blocks", "blocks live at peak", OUT_INT, 0 },
    [H_TIME] = { "peak_time_ns", "peak reached at", OUT_NS, 0 },
};

enum { S_HEAP_ID, S_HEAP, S_STACK, S_TAG, S_BYTES, S_BLOCKS, S_SHARE, S_ALLOCS, S_MAX, S_N };

static const struct out_col scols[S_N] = {
    [S_HEAP_ID] = { "heap_id", "heap id", OUT_INT, OUT_F_NO_TABLE },
    [S_HEAP] = { "heap", "heap", OUT_TEXT, OUT_F_HIDE_SAME },
    [S_STACK] = { "stack_id", "stack", OUT_INT, OUT_F_NO_TABLE },
    [S_TAG] = { "tag", "tag", OUT_TEXT, OUT_F_HIDE_SAME },
    [S_BYTES] = { "peak_bytes", "at peak", OUT_BYTES, 0 },
    [S_BLOCKS] = { "peak_blocks", "blocks", OUT_INT, 0 },
    [S_SHARE] = { "percent", "% of peak", OUT_REAL, 0 },
    [S_ALLOCS] = { "allocations", "calls", OUT_INT, 0 },
    [S_MAX] = { "max_live_bytes", "own max", OUT_BYTES, 0 },
};

/* ?1 heap */
#define HEAP_FILTER " " VH_HEAP_SEL("h.id", "?1")

static int heap_row(sqlite3_stmt *st, void *arg)
{
    return vh_query__stack_row(arg, st, H_N, -1);
}

static int stack_row(sqlite3_stmt *st, void *arg)
{
    return vh_query__stack_row(arg, st, S_N, S_STACK);
}

static int list(struct vh_query *q)
{
    sqlite3_stmt *heaps, *rows;
    int rc;
    if ((rc = vh_query__prepare(q,
                                "SELECT h.id, h.name, h.peak_bytes, h.peak_blocks, h.peak_time"
                                " FROM heaps h WHERE" HEAP_FILTER " ORDER BY h.id",
                                &heaps)) ||
        (rc = vh_query__prepare(q,
                                "SELECT h.id, h.name, s.stack_id, t.label, s.peak_bytes,"
                                "       s.peak_blocks,"
                                "       CASE WHEN h.peak_bytes > 0"
                                "            THEN round(100.0 * s.peak_bytes / h.peak_bytes, 2)"
                                "       END,"
                                "       s.allocations, s.max_live_bytes"
                                " FROM stack_stats s JOIN heaps h ON h.id = s.heap_id"
                                " LEFT JOIN tags t ON t.id = s.tag_id AND s.tag_id != 0"
                                " WHERE" HEAP_FILTER
                                "   AND (s.peak_bytes > 0 OR s.peak_blocks > 0)"
                                " ORDER BY s.peak_bytes DESC, s.peak_blocks DESC, h.id,"
                                "          s.stack_id, s.tag_id"
                                " LIMIT ?2",
                                &rows)))
        return rc;
    vh_bind_heap(heaps, 1, &q->o);
    vh_bind_heap(rows, 1, &q->o);
    sqlite3_bind_int64(rows, 2, vh_qopts_sql_limit(&q->o));
    if ((rc = out__section(q->out, "heaps", OUT_RECORDS, NULL, hcols, H_N)) ||
        (rc = vh_step_all(q->cmd->name, q->db, heaps, heap_row, q)) ||
        (rc = out__section(q->out, "peak", OUT_LIST, "live at the peak, by stack:", scols,
                           S_N)))
        return rc;
    return vh_step_all(q->cmd->name, q->db, rows, stack_row, q);
}

static int run(int argc, char **argv)
{
    return vh_query_run(&cmd_peak, 0, VH_QUERY_OUTPUT | VH_QUERY_STACKS, argc, argv, list);
}
