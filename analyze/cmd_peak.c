/* cmd_peak.c — `vheap-analyze peak`: what was live at the moment each heap
 * reached its peak (largest live requested bytes), by allocating stack —
 * the loader attributes the peak exactly (stack_stats.peak_bytes). */
#include <errno.h>
#include <stdio.h>

#include "analyze/query_opts.h"

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
    "  --heap NAME      only this heap ('malloc' is the system allocator);\n"
    "                   NAME/* adds the heaps nested in it\n"
    "  --depth N        at most N frames per stack (default: all)\n"
    "  --format FMT     table (default), json or csv (the stacks)\n"
    "  --bytes          exact byte counts instead of 2.20K-style sizes\n"
    "  -h, --help       this text\n"
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

struct ctx {
    struct out *out;
    struct vh_stacks *stacks;
};

static int heap_row(sqlite3_stmt *st, void *arg)
{
    struct ctx *c = arg;
    struct out_val v[H_N];
    for (int i = 0; i < H_N; i++)
        v[i] = vh_col_val(st, i);
    return out__row(c->out, v, NULL);
}

static int stack_row(sqlite3_stmt *st, void *arg)
{
    struct ctx *c = arg;
    return vh_stack_row(&cmd_peak, c->out, c->stacks, st, S_N, S_STACK);
}

static int run(int argc, char **argv)
{
    const struct vh_command *cmd = &cmd_peak;
    struct vh_qopts o;
    struct ctx c = { 0 };
    sqlite3 *db = NULL;
    sqlite3_stmt *heaps = NULL, *rows = NULL;
    if (vh_qopts_parse(cmd, 0, argc, argv, &o))
        return VH_EXIT_USAGE;
    if (vh_query_open(cmd, &o, &db))
        return VH_EXIT_DATA;
    int rc = -ENOMEM;
    if (!(c.out = vh_out_begin(&o)))
        goto out;
    if ((rc = vh_stacks__open(cmd, db, o.depth, &c.stacks)))
        goto out;
    if ((rc = vh_prepare(cmd, db,
                         "SELECT h.id, h.name, h.peak_bytes, h.peak_blocks, h.peak_time"
                         " FROM heaps h WHERE" HEAP_FILTER " ORDER BY h.id",
                         &heaps)) ||
        (rc = vh_prepare(cmd, db,
                         "SELECT h.id, h.name, s.stack_id, t.label, s.peak_bytes,"
                         "       s.peak_blocks,"
                         "       CASE WHEN h.peak_bytes > 0"
                         "            THEN round(100.0 * s.peak_bytes / h.peak_bytes, 2) END,"
                         "       s.allocations, s.max_live_bytes"
                         " FROM stack_stats s JOIN heaps h ON h.id = s.heap_id"
                         " LEFT JOIN tags t ON t.id = s.tag_id AND s.tag_id != 0"
                         " WHERE" HEAP_FILTER " AND (s.peak_bytes > 0 OR s.peak_blocks > 0)"
                         " ORDER BY s.peak_bytes DESC, s.peak_blocks DESC, h.id, s.stack_id,"
                         "          s.tag_id"
                         " LIMIT ?2",
                         &rows)))
        goto out;
    vh_bind_heap(heaps, 1, &o);
    vh_bind_heap(rows, 1, &o);
    sqlite3_bind_int64(rows, 2, o.limit ? o.limit : -1);
    if ((rc = out__section(c.out, "heaps", OUT_RECORDS, NULL, hcols, H_N)) ||
        (rc = vh_step_all(cmd, db, heaps, heap_row, &c)) ||
        (rc = out__section(c.out, "peak", OUT_LIST, "live at the peak, by stack:", scols,
                           S_N)) ||
        (rc = vh_step_all(cmd, db, rows, stack_row, &c)))
        goto out;
    rc = vh_out_end(cmd, c.out);
    c.out = NULL;
out:
    out__abort(c.out);
    sqlite3_finalize(heaps);
    sqlite3_finalize(rows);
    vh_stacks__free(c.stacks);
    sqlite3_close(db);
    return rc ? VH_EXIT_DATA : VH_EXIT_OK;
}
