/* cmd/owners.c — `vheap-analyze owners`: what fills a heap, and who, as the
 * allocator's own marking walk saw it (ownership snapshots, vheap.h:
 * vheap_own_*): live bytes per owner path, owner x allocation stack, and
 * growth per owner between two snapshots; rows of owner_totals and
 * owned_blocks, one SELECT each. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/cmd/query.h"

static const char usage[] =
    "usage: vheap-analyze owners [OPTIONS] DB|CAPTURE\n"
    "\n"
    "What fills a heap, and who: the owners an allocator's own marking walk\n"
    "named for its live blocks (ownership snapshots: vheap_own_begin and\n"
    "vheap_owned in vheap.h; Vere's patch reports `urbit grab`'s walk, whose\n"
    "owners are the lines it prints: arvo/vane/ames/dot, total jet stuff/cold\n"
    "jet state, ...; labelled grab, quac for %peel /mass or mass for |mass).\n"
    "First owner wins, as the walk counts. Per owner path,\n"
    "in the walk's order: what the walk counted for the owner and everything\n"
    "below it (its own number: equal to what the walk prints), the live\n"
    "bytes and blocks vheap recorded for those blocks (requested sizes), and\n"
    "the owner's share of the snapshot. On a sampled capture the walk's\n"
    "numbers stay exact and the live bytes and blocks are estimates.\n"
    "\n"
    "With --by stack, each owner's blocks by allocation stack: bytes, blocks,\n"
    "the oldest and the mean age at the snapshot (\"ames' 32 MB: allocated\n"
    "where, when, how old\"), largest first. With --growth, each owner's\n"
    "change between two snapshots (--since, default the first; --snapshot,\n"
    "default the last) and that change per hour, largest growth first.\n"
    "\n"
    "A snapshot the program died in is loaded as far as it got and marked\n"
    "incomplete; blocks named that the heap did not hold, and labels cut or\n"
    "not UTF-8, are counted in the snapshot's line (see docs/schema.md,\n"
    "owner_snapshots).\n"
    "\n"
    "options:\n"
    "  --snapshot N     the N-th snapshot of the capture (default: the last)\n"
    "  --owner PATH     only this owner and those below it\n"
    "  --by stack       each owner's blocks by allocation stack\n"
    "  --growth         change per owner since --since (default the first)\n"
    "  --since N        with --growth: the snapshot compared against\n"
    "  --min-bytes N    only owners (or owner x stack) of N walk bytes or more\n"
    "  --limit N        at most N rows (default 10; 0 = all)\n"
    VH_HELP_DEPTH
    "  --format FMT     table (default), json or csv\n"
    VH_HELP_BYTES_HELP
    "\n"
    "examples:\n"
    "  vheap-analyze owners grab.vhcap --limit 0\n"
    "  vheap-analyze owners grab.vhcap --owner arvo/vane/ames --by stack --depth 6\n"
    "  vheap-analyze owners ship.sqlite --growth --limit 5\n"
    "  vheap-analyze owners ship.sqlite --snapshot 2 --format json | jq '.owners[0]'\n";

static int run(int argc, char **argv);

VH_COMMAND(cmd_owners, {
    .name = "owners",
    .summary = "what fills a heap, and who: owners of an allocator's walk",
    .usage = usage,
    .run = run,
    .order = 31,
});

struct ctx {
    struct vh_query *q;
    int64_t snap, since;           /* owner_snapshots ids                  */
    const char *owner;             /* --owner, or NULL                     */
};

/* ---- the snapshot ------------------------------------------------------- */
enum { S_ID, S_LABEL, S_TIME, S_COMPLETE, S_WALK, S_BYTES, S_BLOCKS, S_UNKNOWN, S_REPEATED,
       S_LOST, S_N };

static const struct out_col scols[S_N] = {
    [S_ID] = { "snapshot", "snapshot", OUT_INT, 0 },
    [S_LABEL] = { "label", "label", OUT_TEXT, 0 },
    [S_TIME] = { "time_ns", "taken at", OUT_NS, 0 },
    [S_COMPLETE] = { "complete", "complete", OUT_BOOL, 0 },
    [S_WALK] = { "walk_bytes", "walk counted", OUT_BYTES, 0 },
    [S_BYTES] = { "bytes", "live bytes named", OUT_BYTES, 0 },
    [S_BLOCKS] = { "blocks", "blocks named", OUT_INT, 0 },
    [S_UNKNOWN] = { "unknown_blocks", "blocks not in the heap", OUT_INT, OUT_F_HIDE_ZERO },
    [S_REPEATED] = { "repeated_blocks", "blocks named again", OUT_INT, OUT_F_HIDE_ZERO },
    [S_LOST] = { "lost_entries", "entries lost", OUT_INT, OUT_F_HIDE_ZERO },
};

static int snapshot_line(struct ctx *c, const char *section, int64_t id)
{
    sqlite3_stmt *st;
    struct out_val v[S_N];
    int rc = vh_prepare(c->q->cmd->name, c->q->db,
                        "SELECT id, label, start_time, complete, walk_bytes, bytes, blocks,"
                        "       unknown_blocks, repeated_blocks, lost_entries"
                        " FROM owner_snapshots WHERE id = ?1",
                        &st);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    if (!(rc = vh_step_one(c->q->cmd->name, c->q->db, st))) {
        for (int i = 0; i < S_N; i++)
            v[i] = vh_col_val(st, i);
        if (!(rc = out__section(c->q->out, section, OUT_OBJECT, NULL, scols, S_N)))
            rc = out__row(c->q->out, v, NULL);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The snapshot --snapshot (or --since) names: its id, the last one when
 * `arg` is NULL and `last`, else the first. -EINVAL when there is none. */
static int pick(struct ctx *c, const char *opt, const char *arg, int last, int64_t *id)
{
    sqlite3_stmt *st;
    char *end;
    int rc = vh_prepare(c->q->cmd->name, c->q->db, "SELECT count(*) FROM owner_snapshots", &st);
    if (rc)
        return rc;
    rc = vh_step_one(c->q->cmd->name, c->q->db, st);
    int64_t n = rc ? 0 : sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc)
        return rc;
    if (!n) {
        vh_errorf(c->q->cmd->name, "%s has no ownership snapshot (the program never called "
                                   "vheap_own_begin; for Vere: run `urbit grab` under vheap)",
                  c->q->o.input);
        return -EINVAL;
    }
    *id = last ? n : 1;
    if (arg) {
        *id = strtoll(arg, &end, 10);
        if (end == arg || *end || *id < 1 || *id > n)
            return vh_query__usage(c->q, "%s wants a snapshot from 1 to %lld, not '%s'", opt,
                                   (long long)n, arg);
    }
    return 0;
}

/* Every list binds ?1 the snapshot, ?2 --owner, ?3 --min-bytes, ?4 the
 * limit, and renders its rows as section `name`. */
static int rows_out(struct ctx *c, sqlite3_stmt *st, const char *name, const struct out_col *cols,
                    int ncols, int (*row)(sqlite3_stmt *st, void *arg))
{
    int rc;
    sqlite3_bind_int64(st, 1, c->snap);
    if (c->owner)
        sqlite3_bind_text(st, 2, c->owner, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, c->q->o.min_bytes);
    sqlite3_bind_int64(st, 4, vh_qopts_sql_limit(&c->q->o));
    if ((rc = out__section(c->q->out, name, OUT_LIST, NULL, cols, ncols)))
        return rc;
    return vh_step_all(c->q->cmd->name, c->q->db, st, row, c->q);
}

/* ---- owners --------------------------------------------------------------- */
static int owner_row(sqlite3_stmt *st, void *arg);
static int growth_row(sqlite3_stmt *st, void *arg);

enum { O_ID, O_PATH, O_DEPTH, O_WALK, O_BYTES, O_BLOCKS, O_SHARE, O_SELF_WALK, O_SELF_BYTES,
       O_SELF_BLOCKS, O_N };

static const struct out_col ocols[O_N] = {
    [O_ID] = { "owner_id", "owner id", OUT_INT, OUT_F_NO_TABLE },
    [O_PATH] = { "owner", "owner", OUT_TEXT, 0 },
    [O_DEPTH] = { "depth", "depth", OUT_INT, OUT_F_NO_TABLE },
    [O_WALK] = { "walk_bytes", "walk counted", OUT_BYTES, 0 },
    [O_BYTES] = { "bytes", "live bytes", OUT_BYTES, 0 },
    [O_BLOCKS] = { "blocks", "blocks", OUT_INT, 0 },
    [O_SHARE] = { "share", "share %", OUT_REAL, 0 },
    /* the blocks named directly under the owner, not below it */
    [O_SELF_WALK] = { "self_walk_bytes", "own walk bytes", OUT_BYTES, OUT_F_NO_TABLE },
    [O_SELF_BYTES] = { "self_bytes", "own live bytes", OUT_BYTES, OUT_F_NO_TABLE },
    [O_SELF_BLOCKS] = { "self_blocks", "own blocks", OUT_INT, OUT_F_NO_TABLE },
};

/* ?1 snapshot, ?2 --owner, ?3 --min-bytes; owners in the walk's order
 * (ids count up as the walk first pushed them). */
#define OWNER_SEL                                                                   \
    " FROM owner_totals t LEFT JOIN owners o ON o.id = t.owner_id"                  \
    " WHERE t.snapshot_id = ?1 AND t.walk_bytes >= ?3"                              \
    "   AND (?2 IS NULL OR o.path = ?2 OR o.path LIKE ?2 || '/%')"

static int list(struct ctx *c)
{
    sqlite3_stmt *st;
    int rc = vh_query__prepare(
        c->q,
        "SELECT t.owner_id, coalesce(o.path, '(no owner)'), coalesce(o.depth, 0),"
        "       t.walk_bytes, t.bytes, t.blocks,"
        "       round(100.0 * t.walk_bytes / max(1, (SELECT walk_bytes FROM owner_snapshots"
        "                                           WHERE id = ?1)), 2),"
        "       t.self_walk_bytes, t.self_bytes, t.self_blocks" OWNER_SEL
        " ORDER BY coalesce(t.owner_id, 0) LIMIT ?4",
        &st);
    if (rc || (rc = snapshot_line(c, "snapshot", c->snap)))
        return rc;
    return rows_out(c, st, "owners", ocols, O_N, owner_row);
}

static int owner_row(sqlite3_stmt *st, void *arg)
{
    return vh_query__stack_row(arg, st, O_N, -1);
}

/* ---- --by stack ----------------------------------------------------------- */
enum { B_PATH, B_STACK, B_WALK, B_BYTES, B_BLOCKS, B_OLDEST, B_AGE, B_N };

static const struct out_col bcols[B_N] = {
    [B_PATH] = { "owner", "owner", OUT_TEXT, OUT_F_HIDE_SAME },
    [B_STACK] = { "stack_id", "stack", OUT_INT, OUT_F_NO_TABLE },
    [B_WALK] = { "walk_bytes", "walk counted", OUT_BYTES, 0 },
    [B_BYTES] = { "bytes", "live bytes", OUT_BYTES, 0 },
    [B_BLOCKS] = { "blocks", "blocks", OUT_INT, 0 },
    [B_OLDEST] = { "first_time_ns", "oldest allocated", OUT_NS, 0 },
    [B_AGE] = { "mean_age_ns", "mean age", OUT_NS, 0 },
};

static int stack_row(sqlite3_stmt *st, void *arg)
{
    return vh_query__stack_row(arg, st, B_N, B_STACK);
}

static int by_stack(struct ctx *c)
{
    sqlite3_stmt *st;
    int rc = vh_query__prepare(
        c->q,
        "SELECT coalesce(o.path, '(no owner)'), b.stack_id, sum(b.walk_bytes),"
        "       sum(b.size), count(b.size), min(b.alloc_time),"
        "       CAST(avg(s.start_time - b.alloc_time) AS INTEGER)"
        " FROM owned_blocks b LEFT JOIN owners o ON o.id = b.owner_id"
        " JOIN owner_snapshots s ON s.id = b.snapshot_id"
        " WHERE b.snapshot_id = ?1 AND b.stack_id IS NOT NULL"
        "   AND (?2 IS NULL OR o.path = ?2 OR o.path LIKE ?2 || '/%')"
        " GROUP BY b.owner_id, b.stack_id HAVING sum(b.walk_bytes) >= ?3"
        " ORDER BY sum(b.walk_bytes) DESC, b.owner_id, b.stack_id LIMIT ?4",
        &st);
    if (rc || (rc = snapshot_line(c, "snapshot", c->snap)))
        return rc;
    return rows_out(c, st, "stacks", bcols, B_N, stack_row);
}

/* ---- --growth ------------------------------------------------------------- */
enum { G_PATH, G_BEFORE, G_AFTER, G_CHANGE, G_RATE, G_BYTES_CHANGE, G_N };

static const struct out_col gcols[G_N] = {
    [G_PATH] = { "owner", "owner", OUT_TEXT, 0 },
    [G_BEFORE] = { "walk_bytes_before", "before", OUT_BYTES, 0 },
    [G_AFTER] = { "walk_bytes_after", "after", OUT_BYTES, 0 },
    [G_CHANGE] = { "change", "change", OUT_BYTES, 0 },
    [G_RATE] = { "bytes_per_hour", "change/hour", OUT_BYTES, 0 },
    [G_BYTES_CHANGE] = { "live_bytes_change", "live bytes change", OUT_BYTES, OUT_F_NO_TABLE },
};

static int growth(struct ctx *c)
{
    sqlite3_stmt *st;
    int rc = vh_query__prepare(
        c->q,
        "WITH a AS (SELECT * FROM owner_totals WHERE snapshot_id = ?5),"
        "     b AS (SELECT * FROM owner_totals WHERE snapshot_id = ?1),"
        "     k AS (SELECT owner_id FROM a UNION SELECT owner_id FROM b),"
        "     dt AS (SELECT max(1, (SELECT start_time FROM owner_snapshots WHERE id = ?1)"
        "                        - (SELECT start_time FROM owner_snapshots WHERE id = ?5)) AS ns)"
        " SELECT coalesce(o.path, '(no owner)'), coalesce(a.walk_bytes, 0),"
        "        coalesce(b.walk_bytes, 0),"
        "        coalesce(b.walk_bytes, 0) - coalesce(a.walk_bytes, 0) AS change,"
        "        CAST(round((coalesce(b.walk_bytes, 0) - coalesce(a.walk_bytes, 0))"
        "                   * 3600e9 / (SELECT ns FROM dt)) AS INTEGER),"
        "        coalesce(b.bytes, 0) - coalesce(a.bytes, 0)"
        " FROM k LEFT JOIN a ON a.owner_id IS k.owner_id LEFT JOIN b ON b.owner_id IS k.owner_id"
        " LEFT JOIN owners o ON o.id = k.owner_id"
        " WHERE abs(change) >= ?3 AND (?2 IS NULL OR o.path = ?2 OR o.path LIKE ?2 || '/%')"
        " ORDER BY change DESC, coalesce(k.owner_id, 0) LIMIT ?4",
        &st);
    if (rc || (rc = snapshot_line(c, "since", c->since)) ||
        (rc = snapshot_line(c, "snapshot", c->snap)))
        return rc;
    sqlite3_bind_int64(st, 5, c->since);
    return rows_out(c, st, "growth", gcols, G_N, growth_row);
}

static int growth_row(sqlite3_stmt *st, void *arg)
{
    return vh_query__stack_row(arg, st, G_N, -1);
}

static int run(int argc, char **argv)
{
    struct vh_query q;
    struct ctx c = { .q = &q };
    const char *snap = NULL, *since = NULL, *by = NULL;
    int by_growth = 0, rc;
    const struct vh_opt own[] = { VH_OPT_VALUE("--snapshot", &snap),
                                  VH_OPT_VALUE("--since", &since),
                                  VH_OPT_VALUE("--owner", &c.owner),
                                  VH_OPT_VALUE("--by", &by),
                                  VH_OPT_FLAG("--growth", &by_growth) };

    rc = vh_query__parse(&q, &cmd_owners, VH_QOPT_MIN_BYTES, VH_OPTS(own), argc, argv);
    if (!rc && by && strcmp(by, "stack"))
        rc = vh_query__usage(&q, "--by wants stack, not '%s'", by);
    if (!rc && by && by_growth)
        rc = vh_query__usage(&q, "--by stack does not go with --growth");
    if (!rc && since && !by_growth)
        rc = vh_query__usage(&q, "--since goes with --growth");
    if (!rc)
        rc = vh_query__open(&q, VH_QUERY_OUTPUT | (by ? VH_QUERY_STACKS : 0));
    if (!rc)
        rc = pick(&c, "--snapshot", snap, 1, &c.snap);
    if (!rc && by_growth)
        rc = pick(&c, "--since", since, 0, &c.since);
    if (!rc)
        rc = by_growth ? growth(&c) : by ? by_stack(&c) : list(&c);
    return vh_query__finish(&q, rc);
}
