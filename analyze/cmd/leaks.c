/* cmd/leaks.c — `vheap-analyze leaks`: the blocks still live when the
 * process ended (in heaps that still existed), grouped by the stack that
 * allocated them, largest first, with the symbolized stack; with --growth,
 * the stacks whose live bytes grow steadily (the growth table), for
 * programs that never exit. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/cmd/query.h"
#include "analyze/query/reach.h"
#include "analyze/query/recording.h"

static const char usage[] =
    "usage: vheap-analyze leaks [OPTIONS] DB|CAPTURE\n"
    "\n"
    "Blocks live at the end of the run (leaked: never freed, in a heap that\n"
    "still exists), grouped by allocating call stack, largest total first:\n"
    "bytes, blocks and the stack, innermost frame (the allocator's caller)\n"
    "first. Inlined functions are listed with [inlined]. A process that did not\n"
    "exit cleanly reports what was live at its last record.\n"
    "\n"
    "With --growth, for a program that runs until killed (where what is live\n"
    "at the end is mostly its working state): each stack's live bytes over the\n"
    "recorded time fitted to a straight line; stacks that grow steadily (slope\n"
    "above 0 and R^2 at least --min-r2) come first, fastest growth first, then\n"
    "the others by slope x R^2. Memory allocated once and held (a cache) is a\n"
    "step, not a line: its R^2 stays at or below 0.75. Columns: growth per\n"
    "hour, R^2, live at the end, mean live, first allocation, steady or not.\n"
    "\n"
    "With the reachability scan at exit (every full capture of a program that\n"
    "exited; docs/usage.md), each group is also one class, as valgrind's\n"
    "memcheck names them: lost (definitely: no pointer to the block left),\n"
    "indirect (reachable only from lost blocks), possible (only pointers into\n"
    "its middle), reachable (still pointed to from a global, a stack or a\n"
    "reachable block); a custom heap's blocks have none.\n"
    "\n"
    "A sampled capture (VHEAP_SAMPLE) gives estimates: each recorded block\n"
    "counts 1/p times (p its chance of being sampled). A capture recorded in\n"
    "windows (VHEAP_START=paused, vheap-analyze ctl) covers those windows only:\n"
    "a note on stderr says which.\n"
    "\n"
    "options:\n"
    "  --min-bytes N    only stacks leaking N bytes or more in total (with\n"
    "                   --growth: live at the end) (4096, 4K = 4000, 4KiB = 4096)\n"
    "  --growth         rank stacks by steady growth of their live bytes\n"
    "  --min-r2 X       with --growth: R^2 from which growth counts as steady\n"
    "                   (0..1, default 0.8)\n"
    "  --class LIST     only these classes, comma-separated: lost, indirect,\n"
    "                   possible, reachable, none (not classified)\n"
    "  --scan N         the blocks live at scan N instead, asked for while the\n"
    "                   program ran (vheap-analyze ctl reach; 1 = the first)\n"
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
    "  vheap-analyze leaks run.sqlite --format csv > leaks.csv\n"
    "  vheap-analyze leaks run.sqlite --class lost,indirect   # what memcheck calls leaked\n"
    "  vheap-analyze leaks run.sqlite --scan 1 --class lost   # lost when ctl reach looked\n"
    "  vheap-analyze leaks --growth vheap.redis-server.4242.vhcap --limit 5\n"
    "  vheap-analyze leaks --growth --min-r2 0.9 --format json run.sqlite | jq '.growth[0]'\n";

static int run(int argc, char **argv);

VH_COMMAND(cmd_leaks, {
    .name = "leaks",
    .summary = "blocks live at the end, grouped by stack",
    .usage = usage,
    .run = run,
    .order = 30,
});

/* L_CLASS last: shown only when the capture has the scan. */
enum { L_HEAP_ID, L_HEAP, L_STACK, L_BYTES, L_BLOCKS, L_USABLE, L_FIRST, L_LAST, L_CLASS, L_N };

static const struct out_col cols[L_N] = {
    [L_HEAP_ID] = { "heap_id", "heap id", OUT_INT, OUT_F_NO_TABLE },
    [L_HEAP] = { "heap", "heap", OUT_TEXT, OUT_F_HIDE_SAME },
    [L_STACK] = { "stack_id", "stack", OUT_INT, OUT_F_NO_TABLE },
    [L_BYTES] = { "bytes", "leaked", OUT_BYTES, 0 },
    [L_BLOCKS] = { "blocks", "blocks", OUT_INT, 0 },
    [L_USABLE] = { "usable", "usable", OUT_BYTES, OUT_F_NO_TABLE },
    [L_FIRST] = { "first_time_ns", "first allocated", OUT_NS, 0 },
    [L_LAST] = { "last_time_ns", "last allocated", OUT_NS, OUT_F_NO_TABLE },
    [L_CLASS] = { "class", "class", OUT_TEXT, 0 },
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

/* Groups of the leaks table, by stack and class (all NULL without the
 * scan); ?1 heap, ?5 the --class mask (bit 4: no class). %s: the sums
 * (below), then the blocks (leaks, or a scan's snapshot: ?6). */
#define GROUPS                                                                  \
    "SELECT h.id AS heap_id, h.name AS heap, l.stack_id AS stack_id, %s,"      \
    "       min(l.time) AS first, max(l.time) AS last,"                         \
    "       CASE l.class WHEN 0 THEN 'reachable' WHEN 1 THEN 'possible'"        \
    "                    WHEN 2 THEN 'indirect' WHEN 3 THEN 'lost' END AS class" \
    " FROM %s l JOIN heaps h ON h.id = l.heap_id"                               \
    " WHERE " VH_HEAP_SEL("h.id", "?1")                                       \
    "   AND (?5 >> coalesce(l.class, 4)) & 1"                                   \
    " GROUP BY l.heap_id, l.stack_id, l.class"
/* The leaks table holds the recorded blocks; in a sampled capture each
 * stands for 1/p blocks (?4: the rate). */
#define SUMS_FULL "sum(l.size) AS bytes, count(*) AS blocks, sum(l.usable) AS usable"
#define SUMS_SAMPLED                                                            \
    "CAST(round(sum(l.size * " VH_SQL_WEIGHT("l.size", "?4") ")) AS INTEGER) AS bytes," \
    " CAST(round(sum(" VH_SQL_WEIGHT("l.size", "?4") ")) AS INTEGER) AS blocks,"         \
    " CAST(round(sum(l.usable * " VH_SQL_WEIGHT("l.size", "?4") ")) AS INTEGER) AS usable"

struct ctx {
    struct vh_query *q;
    int64_t shown;
    int ncols;                     /* L_N, or L_CLASS: no scan */
};

static int leak_row(sqlite3_stmt *st, void *arg)
{
    struct ctx *c = arg;
    int rc = vh_query__stack_row(c->q, st, c->ncols, L_STACK);
    if (!rc)
        c->shown++;
    return rc;
}

static int list(struct vh_query *q, int classes, int mask, int64_t scan)
{
    struct ctx c = { .q = q, .ncols = classes ? L_N : L_CLASS };
    sqlite3_stmt *rows, *tot;
    int64_t rate = vh_rec_sample_rate(q->db);
    const char *sums = rate ? SUMS_SAMPLED : SUMS_FULL;
    const char *src = scan ? "(SELECT * FROM reach_blocks WHERE scan = ?6)" : "leaks";
    char sql[2][2048];
    int rc;

    snprintf(sql[0], sizeof sql[0],
             GROUPS " HAVING bytes >= ?2 ORDER BY bytes DESC, blocks DESC, heap_id, stack_id"
                    " LIMIT ?3",
             sums, src);
    snprintf(sql[1], sizeof sql[1],
             "SELECT coalesce(sum(bytes), 0), coalesce(sum(blocks), 0),"
             "       count(*), coalesce(sum(bytes >= ?2), 0)"
             " FROM (" GROUPS ")",
             sums, src);
    if ((rc = vh_query__prepare(q, sql[0], &rows)) || (rc = vh_query__prepare(q, sql[1], &tot)))
        return rc;
    vh_bind_heap(rows, 1, &q->o);
    sqlite3_bind_int64(rows, 2, q->o.min_bytes);
    sqlite3_bind_int64(rows, 3, vh_qopts_sql_limit(&q->o));
    vh_bind_heap(tot, 1, &q->o);
    sqlite3_bind_int64(tot, 2, q->o.min_bytes);
    sqlite3_bind_int(rows, 5, mask);
    sqlite3_bind_int(tot, 5, mask);
    if (scan) {
        sqlite3_bind_int64(rows, 6, scan);
        sqlite3_bind_int64(tot, 6, scan);
    }
    if (rate) {
        sqlite3_bind_int64(rows, 4, rate);
        sqlite3_bind_int64(tot, 4, rate);
    }

    if ((rc = out__section(q->out, "leaks", OUT_LIST, NULL, cols, c.ncols)) ||
        (rc = vh_step_all(q->cmd->name, q->db, rows, leak_row, &c)) ||
        (rc = vh_step_one(q->cmd->name, q->db, tot)))
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

/* ---- --growth ---------------------------------------------------------------- */

enum {
    G_HEAP_ID, G_HEAP, G_STACK, G_TAG_ID, G_TAG, G_STEADY, G_RATE, G_R2, G_LIVE, G_MEAN,
    G_FIRST, G_WINDOW, G_N
};

static const struct out_col gcols[G_N] = {
    [G_HEAP_ID] = { "heap_id", "heap id", OUT_INT, OUT_F_NO_TABLE },
    [G_HEAP] = { "heap", "heap", OUT_TEXT, OUT_F_HIDE_SAME },
    [G_STACK] = { "stack_id", "stack", OUT_INT, OUT_F_NO_TABLE },
    [G_TAG_ID] = { "tag_id", "tag id", OUT_INT, OUT_F_NO_TABLE },
    [G_TAG] = { "tag", "tag", OUT_TEXT, OUT_F_HIDE_SAME },
    [G_STEADY] = { "steady", "steady", OUT_BOOL, 0 },
    [G_RATE] = { "bytes_per_hour", "growth/hour", OUT_BYTES, 0 },
    [G_R2] = { "r2", "R^2", OUT_REAL, 0 },
    [G_LIVE] = { "live_bytes", "live at end", OUT_BYTES, 0 },
    [G_MEAN] = { "mean_bytes", "mean live", OUT_BYTES, 0 },
    [G_FIRST] = { "first_time_ns", "first allocated", OUT_NS, 0 },
    [G_WINDOW] = { "window_ns", "fitted over", OUT_NS, OUT_F_NO_TABLE },
};

/* ?1 heap, ?2 --min-r2, ?3 --min-bytes (live at the end), ?4 limit. */
#define GROWTH                                                                       \
    "SELECT g.heap_id, h.name, g.stack_id, g.tag_id, t.label,"                       \
    "       g.bytes_per_hour > 0 AND g.r2 >= ?2 AS steady,"                          \
    "       CAST(round(g.bytes_per_hour) AS INTEGER), round(g.r2, 3), g.live_bytes,"  \
    "       g.mean_bytes, g.first_time, g.end_time - g.start_time"                   \
    " FROM growth g JOIN heaps h ON h.id = g.heap_id LEFT JOIN tags t ON t.id = g.tag_id" \
    " WHERE " VH_HEAP_SEL("h.id", "?1") " AND g.live_bytes >= ?3"

static double min_r2 = 0.8;

static int growth_row(sqlite3_stmt *st, void *arg)
{
    struct ctx *c = arg;
    return vh_query__stack_row(c->q, st, G_N, G_STACK);
}

static int growth(struct vh_query *q)
{
    struct ctx c = { .q = q };
    sqlite3_stmt *rows, *tot;
    int rc;

    if ((rc = vh_query__prepare(q,
                                GROWTH " ORDER BY steady DESC,"
                                       " CASE WHEN steady THEN g.bytes_per_hour"
                                       "      ELSE g.bytes_per_hour * g.r2 END DESC,"
                                       " g.heap_id, g.stack_id, g.tag_id LIMIT ?4",
                                &rows)) ||
        (rc = vh_query__prepare(q,
                                "SELECT count(*), coalesce(sum(steady), 0) FROM (" GROWTH ")",
                                &tot)))
        return rc;
    for (int i = 0; i < 2; i++) {
        sqlite3_stmt *st = i ? tot : rows;
        vh_bind_heap(st, 1, &q->o);
        sqlite3_bind_double(st, 2, min_r2);
        sqlite3_bind_int64(st, 3, q->o.min_bytes);
    }
    sqlite3_bind_int64(rows, 4, vh_qopts_sql_limit(&q->o));
    if ((rc = out__section(q->out, "growth", OUT_LIST, NULL, gcols, G_N)) ||
        (rc = vh_step_all(q->cmd->name, q->db, rows, growth_row, &c)) ||
        (rc = vh_step_one(q->cmd->name, q->db, tot)))
        return rc;
    if (!sqlite3_column_int64(tot, 1))
        out__table_note(q->out, "no stack grows steadily (R^2 >= %g)", min_r2);
    return 0;
}

/* Whether the capture has the scan (1), with --class checked against it;
 * --scan's must exist. */
static int classes(struct vh_query *q, const char *list, int64_t scan)
{
    struct vh_reach_totals t;
    int rc = vh_reach__scan_totals(q->cmd->name, q->db, NULL, scan, &t);
    if (rc < 0)
        return rc;
    if (scan && !rc) {
        vh_errorf(q->cmd->name, "--scan %lld: %s has no such scan (scans asked for with "
                                "`vheap-analyze ctl reach` while the program ran are "
                                "numbered from 1; the reach table lists them)",
                  (long long)scan, q->o.input);
        return -EINVAL;
    }
    if (list && (!rc || strcmp(t.status, "done"))) {
        vh_errorf(q->cmd->name, "--class: %s has no reachability scan (a sampled capture, "
                                "VHEAP_REACH_TIMEOUT=0, a program that did not exit, or "
                                "a scan that did not finish)", q->o.input);
        return -EINVAL;
    }
    return rc;
}

static int run(int argc, char **argv)
{
    struct vh_query q;
    const char *r2 = NULL, *class_list = NULL, *scan_arg = NULL;
    int by_growth = 0, rc, mask = (1 << VH_CLASS_N) - 1;
    long long scan = 0;
    const struct vh_opt own[] = { VH_OPT_FLAG("--growth", &by_growth),
                                  VH_OPT_VALUE("--min-r2", &r2),
                                  VH_OPT_VALUE("--class", &class_list),
                                  VH_OPT_VALUE("--scan", &scan_arg) };

    rc = vh_query__parse(&q, &cmd_leaks, VH_QOPT_MIN_BYTES, VH_OPTS(own), argc, argv);
    if (!rc && r2) {
        char *end;
        min_r2 = strtod(r2, &end);
        if (end == r2 || *end || !(min_r2 >= 0 && min_r2 <= 1))
            rc = vh_query__usage(&q, "--min-r2 wants a number from 0 to 1, not '%s'", r2);
        else if (!by_growth)
            rc = vh_query__usage(&q, "--min-r2 goes with --growth");
    }
    if (!rc && class_list) {
        const char *bad;
        int badlen;
        if ((mask = vh_class_mask(class_list, &bad, &badlen)) < 0)
            rc = vh_query__usage(&q, "--class wants lost, indirect, possible, reachable or "
                                     "none, not '%.*s'", badlen, bad);
        else if (by_growth)
            rc = vh_query__usage(&q, "--class does not go with --growth");
    }
    if (!rc && scan_arg) {
        char *end;
        scan = strtoll(scan_arg, &end, 10);
        if (end == scan_arg || *end || scan < 1)
            rc = vh_query__usage(&q, "--scan wants a scan's number (1, 2, ...), not '%s'",
                                 scan_arg);
        else if (by_growth)
            rc = vh_query__usage(&q, "--scan does not go with --growth");
    }
    if (!rc && !(rc = vh_query__open(&q, VH_QUERY_OUTPUT | VH_QUERY_STACKS))) {
        int scanned = by_growth ? 0 : classes(&q, class_list, scan);
        rc = scanned < 0 ? scanned : by_growth ? growth(&q) : list(&q, scanned, mask, scan);
    }
    return vh_query__finish(&q, rc);
}
