/* cmd/top_event.c — the events a program marked as they committed (Vere's
 * "event N %vane /wire"): what each allocated, left live, grew the home
 * road by, how long its blocks lived, and the most in use while it ran;
 * ranked for `top --by-event`, in time order for `series --by-event`. One
 * SELECT over event_spans (the loader's, load/spans.c). */
#include <stdio.h>
#include <string.h>

#include "analyze/cmd/query.h"
#include "analyze/cmd/top_event.h"

enum {
    E_ID, E_LABEL, E_START, E_END, E_ALLOCS, E_BYTES, E_FREES, E_LIVE, E_LIFETIME, E_HOME,
    E_GROWTH, E_IN_USE, E_PEAK, E_HEADROOM, E_N
};

static const struct out_col cols[E_N] = {
    [E_ID] = { "event_id", "#", OUT_INT, OUT_F_NO_TABLE },
    [E_LABEL] = { "event", "event", OUT_TEXT, 0 },
    [E_START] = { "start_ns", "from", OUT_NS, OUT_F_NO_TABLE },
    [E_END] = { "time_ns", "at", OUT_NS, 0 },
    [E_ALLOCS] = { "allocations", "calls", OUT_INT, 0 },
    [E_BYTES] = { "bytes_allocated", "allocated", OUT_BYTES, 0 },
    [E_FREES] = { "frees", "freed blocks", OUT_INT, OUT_F_NO_TABLE },
    [E_LIVE] = { "live_bytes", "still live", OUT_BYTES, 0 },
    [E_LIFETIME] = { "mean_lifetime_ns", "mean lifetime", OUT_NS, 0 },
    [E_HOME] = { "home_bytes", "home road", OUT_BYTES, OUT_F_NO_TABLE },
    [E_GROWTH] = { "home_growth", "home growth", OUT_BYTES, 0 },
    [E_IN_USE] = { "in_use_bytes", "in use", OUT_BYTES, OUT_F_NO_TABLE },
    [E_PEAK] = { "in_use_peak", "most in use", OUT_BYTES, 0 },
    [E_HEADROOM] = { "least_headroom", "least headroom", OUT_BYTES, OUT_F_NO_TABLE },
};

/* The measures: fixed SQL expressions chosen by name, never user text. */
static const struct measure {
    const char *name, *expr, *what;
} measures[] = {
    { "bytes", "e.bytes_allocated", "bytes allocated" },
    { "allocations", "e.allocations", "calls to allocation functions" },
    { "leaked", "(e.bytes_allocated - e.bytes_freed)", "bytes still live at the end" },
    { "growth", "e.home_growth", "growth of the home road" },
    { "lifetime", "(e.lifetime_ns / max(e.frees, 1))", "mean lifetime of their blocks" },
    { "peak", "e.in_use_peak", "most in use" },
};

/* Headroom: the sizes of the outermost custom heaps that existed during
 * the event, less the most in use then. */
static const char select_cols[] =
    "SELECT e.id, e.label, e.start_time, e.end_time, e.allocations, e.bytes_allocated,"
    "       e.frees, e.bytes_allocated - e.bytes_freed,"
    "       CASE WHEN e.frees > 0 THEN CAST(e.lifetime_ns / e.frees AS INTEGER) END,"
    "       e.home_bytes, e.home_growth, e.in_use_bytes, e.in_use_peak,"
    "       (SELECT sum(h.size) FROM heaps h WHERE h.parent_id IS NULL AND h.id != 0"
    "        AND h.size > 0 AND h.create_time <= e.end_time"
    "        AND (h.destroy_time IS NULL OR h.destroy_time >= e.end_time)) - e.in_use_peak"
    " FROM event_spans e";

static int row(sqlite3_stmt *st, void *arg)
{
    struct vh_query *q = arg;
    struct out_val v[E_N];

    for (int i = 0; i < E_N; i++)
        v[i] = vh_col_val(st, i);
    return out__row(q->out, v, NULL);
}

static const struct measure *find(const char *by)
{
    for (size_t i = 0; i < sizeof measures / sizeof measures[0]; i++)
        if (!strcmp(by ? by : "bytes", measures[i].name))
            return &measures[i];
    return NULL;
}

int vh_top_events(struct vh_query *q, const char *by, int in_time)
{
    const struct measure *m = find(by);
    sqlite3_stmt *st = NULL, *count = NULL;
    char sql[2048], title[160];
    int rc;

    if (!m)
        return vh_query__usage(q, "--by: '%s' is not one of bytes, allocations, leaked, growth, "
                                  "lifetime, peak (with --by-event)", by);
    if (in_time)
        snprintf(sql, sizeof sql, "%s ORDER BY e.id LIMIT ?1", select_cols);
    else
        snprintf(sql, sizeof sql, "%s ORDER BY %s DESC, e.id LIMIT ?1", select_cols, m->expr);
    if ((rc = vh_query__prepare(q, sql, &st)) ||
        (rc = vh_query__prepare(q, "SELECT count(*) FROM event_spans", &count)))
        return rc;
    sqlite3_bind_int64(st, 1, vh_qopts_sql_limit(&q->o));
    if ((rc = vh_step_one(q->cmd->name, q->db, count)))
        return rc;
    long long total = sqlite3_column_int64(count, 0);
    long long shown = q->o.limit && q->o.limit < total ? q->o.limit : total;
    if (in_time)
        snprintf(title, sizeof title, "%lld of %lld events in time order", shown, total);
    else
        snprintf(title, sizeof title, "top %lld of %lld events by %s", shown, total, m->what);
    static struct out_col vis[E_N];   /* outlives q->out, which keeps it */
    memcpy(vis, cols, sizeof vis);
    if (in_time)                   /* event by event: the loom's headroom */
        vis[E_HEADROOM].flags &= ~OUT_F_NO_TABLE;
    if ((rc = out__section(q->out, "events", OUT_LIST, title, vis, E_N)) ||
        (rc = vh_step_all(q->cmd->name, q->db, st, row, q)))
        return rc;
    if (!total)
        out__table_note(q->out, "no event marks ('event N ...', 'replay N ...', 'boot ...'): "
                                "see docs/vere.md");
    return 0;
}
