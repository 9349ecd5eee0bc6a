/* cmd/summary.c — `vheap-analyze summary`: the whole run in a few numbers,
 * per heap — heaptrack_print's summary lines (calls, temporary, peak, peak
 * RSS, leaked) plus what vheap records beyond them (frees, failures, loss,
 * the process identity, whether it exited cleanly). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/store/db.h"
#include "analyze/cmd/query.h"
#include "analyze/query/reach.h"
#include "analyze/query/recording.h"
#include "analyze/util/grow.h"

static const char usage[] =
    "usage: vheap-analyze summary [OPTIONS] DB|CAPTURE\n"
    "\n"
    "The run in numbers: runtime, calls to allocation functions, frees,\n"
    "temporary allocations, peak heap (live bytes) and when, peak RSS, bytes\n"
    "and blocks leaked, events lost, for each heap; and the process (pid,\n"
    "command, executable, whether it exited cleanly). A CAPTURE is loaded into\n"
    "CAPTURE.sqlite first (reused while up to date).\n"
    "Definitions are heaptrack's: see docs/usage.md.\n"
    "\n"
    "options:\n"
    "  --heap NAME      only this heap (a name from the heaps table, or its id;\n"
    "                   the system allocator is 'malloc'); NAME/* adds the\n"
    "                   heaps nested in it\n"
    "  --format FMT     table (default), json or csv (one row per heap)\n"
    "  --bytes          exact byte counts instead of 2.20K-style sizes\n"
    VH_HELP_TEMPORARY
    "  --limit N        the first N heaps by id (default: every heap; 0 = all)\n"
    "  --depth N        accepted for symmetry; unused here\n"
    "  -h, --help       this text\n"
    "\n"
    "A warning goes to stderr when the process did not exit cleanly (_exit,\n"
    "killed, crashed, exec'd or still running), when events were lost, or when\n"
    "the capture was damaged. A damaged capture also makes the exit status 1,\n"
    "after everything valid is shown. libstdc++'s emergency exception pool\n"
    "(72.70K, allocated by its initializer, freed at exit only under heaptrack)\n"
    "and the state glibc keeps for the process's life (nss modules, gconv,\n"
    "tzset, atexit's blocks, dlopen: heaptrack's built-in suppressions) are\n"
    "not counted as leaked: a 'suppressed leaks' line says so.\n"
    "With the reachability scan at exit (a full capture of a program that\n"
    "exited), the leaks follow by class, as memcheck names them: definitely,\n"
    "indirectly, possibly lost, still reachable; then what the scan read and\n"
    "skipped.\n"
    "\n"
    "examples:\n"
    "  vheap-analyze summary vheap.myprog.1234.vhcap\n"
    "  vheap-analyze summary run.sqlite --format json | python3 -m json.tool\n"
    "  vheap-analyze summary run.sqlite --heap malloc --bytes\n"
    "  vheap-analyze summary serf.sqlite --heap 'loom/*' --limit 5   # loom, 4 roads\n"
    "  vheap-analyze summary run.sqlite --temporary heaptrack   # heaptrack's count\n";

static int run(int argc, char **argv);

VH_COMMAND(cmd_summary, {
    .name = "summary",
    .summary = "runtime, calls, temporary, peak, leaked, per heap",
    .usage = usage,
    .run = run,
    .order = 25,
});

enum {
    P_PID, P_PPID, P_EXE, P_ARGV, P_FORKED, P_EXEC_GEN, P_ENDED, P_STARTED, P_START_NS,
    P_RUNTIME, P_PEAK_RSS, P_PEAK_RSS_TIME, P_DROPPED, P_NESTED, P_NO_STACK, P_UNWIND,
    P_MAX_DEPTH, P_CAPTURE, P_DAMAGE, P_DAMAGE_COUNT,
    /* only for a sampled capture or one recorded in windows (a full one's
     * output stays what it was) */
    P_SAMPLED, P_SAMPLE_RATE, P_WINDOWS, P_RECORDED, P_N
};

static const struct out_col pcols[P_N] = {
    [P_PID] = { "pid", "pid", OUT_INT, 0 },
    [P_PPID] = { "ppid", "parent pid", OUT_INT, 0 },
    [P_EXE] = { "exe", "executable", OUT_TEXT, 0 },
    [P_ARGV] = { "argv", "command", OUT_WORDS, 0 },
    [P_FORKED] = { "forked", "fork child", OUT_BOOL, 0 },
    [P_EXEC_GEN] = { "exec_generation", "exec generation", OUT_INT, OUT_F_NO_TABLE },
    [P_ENDED] = { "ended", "exited cleanly", OUT_BOOL, 0 },
    [P_STARTED] = { "started", "started", OUT_TEXT, 0 },
    [P_START_NS] = { "start_realtime_ns", "start", OUT_INT, OUT_F_NO_TABLE },
    [P_RUNTIME] = { "runtime_ns", "total runtime", OUT_NS, 0 },
    [P_PEAK_RSS] = { "peak_rss", "peak RSS (including vheap overhead)", OUT_BYTES, 0 },
    [P_PEAK_RSS_TIME] = { "peak_rss_time_ns", "peak RSS time", OUT_NS, OUT_F_NO_TABLE },
    [P_DROPPED] = { "dropped_events", "events not recorded (recording disabled)", OUT_INT, OUT_F_HIDE_ZERO },
    [P_NESTED] = { "nested_events", "events not recorded (nested in the shim)", OUT_INT, OUT_F_HIDE_ZERO },
    [P_NO_STACK] = { "stack_table_full", "events recorded without a stack", OUT_INT, OUT_F_HIDE_ZERO },
    [P_UNWIND] = { "unwind", "unwinder", OUT_TEXT, 0 },
    [P_MAX_DEPTH] = { "max_depth", "max stack depth", OUT_INT, 0 },
    [P_CAPTURE] = { "capture", "capture", OUT_TEXT, 0 },
    [P_DAMAGE] = { "damage", "capture damage", OUT_TEXT, 0 },
    [P_DAMAGE_COUNT] = { "damage_count", "damage count", OUT_INT, OUT_F_NO_TABLE },
    [P_SAMPLED] = { "sampled", "sampled", OUT_BOOL, OUT_F_NO_TABLE },
    [P_SAMPLE_RATE] = { "sample_rate", "sampled every (on average)", OUT_BYTES, OUT_F_HIDE_ZERO },
    [P_WINDOWS] = { "windows", "recorded over", OUT_TEXT, 0 },
    [P_RECORDED] = { "recorded_ns", "recorded time", OUT_NS, OUT_F_NO_TABLE },
};

enum {
    H_ID, H_NAME, H_ALLOCS, H_ALLOCS_RATE, H_FAILED, H_FREES, H_TEMP, H_TEMP_RATE, H_BYTES,
    H_PEAK, H_PEAK_BLOCKS, H_PEAK_TIME, H_LIVE, H_LIVE_BLOCKS, H_LEAKED, H_LEAKED_BLOCKS,
    H_SUPPRESSED, H_SUPPRESSED_BLOCKS, H_UNKNOWN_FREES, H_DESTROYED, H_RUNTIME, H_PEAK_RSS, H_DROPPED,
    H_HEADROOM, H_IN_USE_PEAK, H_IN_USE_TIME, H_IN_USE_HEAP, H_IN_USE_DEPTH, H_IN_USE_EVENT, H_N
};

static const struct out_col hcols[H_N] = {
    [H_ID] = { "heap_id", "heap id", OUT_INT, OUT_F_NO_TABLE },
    [H_NAME] = { "heap", "heap", OUT_TEXT, 0 },
    [H_ALLOCS] = { "allocations", "calls to allocation functions", OUT_INT, 0 },
    [H_ALLOCS_RATE] = { "allocations_per_s", "calls per second", OUT_REAL, OUT_F_NO_TABLE },
    [H_FAILED] = { "failed", "failed allocation calls", OUT_INT, OUT_F_HIDE_ZERO },
    [H_FREES] = { "frees", "calls to free", OUT_INT, 0 },
    [H_TEMP] = { "temporary", "temporary memory allocations", OUT_INT, 0 },
    [H_TEMP_RATE] = { "temporary_per_s", "temporary per second", OUT_REAL, OUT_F_NO_TABLE },
    [H_BYTES] = { "bytes_allocated", "bytes allocated in total", OUT_BYTES, 0 },
    [H_PEAK] = { "peak_bytes", "peak heap memory consumption", OUT_BYTES, 0 },
    [H_PEAK_BLOCKS] = { "peak_blocks", "blocks at peak", OUT_INT, OUT_F_NO_TABLE },
    [H_PEAK_TIME] = { "peak_time_ns", "peak time", OUT_NS, OUT_F_NO_TABLE },
    [H_LIVE] = { "live_bytes", "live at end", OUT_BYTES, 0 },
    [H_LIVE_BLOCKS] = { "live_blocks", "blocks live at end", OUT_INT, OUT_F_NO_TABLE },
    [H_LEAKED] = { "leaked_bytes", "total memory leaked", OUT_BYTES, 0 },
    [H_LEAKED_BLOCKS] = { "leaked_blocks", "blocks leaked", OUT_INT, OUT_F_NO_TABLE },
    /* live at the end but not leaked: libstdc++'s emergency pool (shadow.h) */
    [H_SUPPRESSED] = { "suppressed_bytes", "suppressed leaks", OUT_BYTES, OUT_F_HIDE_ZERO },
    [H_SUPPRESSED_BLOCKS] = { "suppressed_blocks", "suppressed blocks", OUT_INT,
                              OUT_F_NO_TABLE },
    [H_UNKNOWN_FREES] = { "unknown_frees", "frees of unknown addresses", OUT_INT, OUT_F_HIDE_ZERO },
    [H_DESTROYED] = { "destroyed_ns", "destroyed at", OUT_NS, 0 },
    /* A CSV has no process object: carry the per-process numbers that
     * heaptrack_print prints beside the heap's. */
    [H_RUNTIME] = { "runtime_ns", "total runtime", OUT_NS, OUT_F_CSV_ONLY },
    [H_PEAK_RSS] = { "peak_rss", "peak RSS", OUT_BYTES, OUT_F_CSV_ONLY },
    [H_DROPPED] = { "dropped_events", "dropped events", OUT_INT, OUT_F_CSV_ONLY },
    /* an outermost custom heap with its nested ones (Vere's loom, its
     * roads): the most in use at once, and what that left of its size */
    [H_HEADROOM] = { "least_headroom", "least headroom", OUT_BYTES, 0 },
    [H_IN_USE_PEAK] = { "in_use_peak", "most in use with nested heaps", OUT_BYTES,
                        OUT_F_NO_TABLE },
    [H_IN_USE_TIME] = { "in_use_peak_time_ns", "at", OUT_NS, OUT_F_NO_TABLE },
    [H_IN_USE_HEAP] = { "in_use_peak_heap_id", "in heap", OUT_INT, OUT_F_NO_TABLE },
    [H_IN_USE_DEPTH] = { "in_use_peak_depth", "nested", OUT_INT, OUT_F_NO_TABLE },
    [H_IN_USE_EVENT] = { "in_use_peak_event", "in event", OUT_TEXT, OUT_F_NO_TABLE },
};

struct ctx {
    const struct vh_command *cmd;
    sqlite3 *db;
    struct out *out;
    int64_t runtime_ns;
    int64_t peak_rss;
    int64_t dropped;
    int damaged;                   /* the capture was: shown, then exit 1 */
};

static const char *fmt_ns(int64_t ns, char *b, size_t n) { return out__human_ns(ns, b, n); }

static double per_s(int64_t count, int64_t runtime_ns)
{
    /* heaptrack_print rates over the runtime it prints (whole ms). */
    return runtime_ns > 0 ? (double)count * 1e9 / (double)runtime_ns : NAN;
}

/* "2024-05-01T12:00:00.123Z", from ns since the epoch. */
static const char *iso_time(int64_t ns, char *b, size_t n)
{
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    if (ns <= 0 || !gmtime_r(&t, &tm))
        return NULL;
    char d[32];
    strftime(d, sizeof d, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(b, n, "%s.%03dZ", d, (int)(ns / 1000000 % 1000));
    return b;
}

static char *meta_text(sqlite3 *db, const char *key)
{
    sqlite3_stmt *st;
    char *v = NULL;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL))
        return NULL;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
}

/* argv is stored as a JSON array; a DB edited by hand may hold anything. */
static int read_argv(sqlite3 *db, char ***words, size_t *n)
{
    sqlite3_stmt *st;
    size_t cap = 0;
    *words = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT j.value FROM processes p, json_each(p.argv) j"
                           " WHERE json_valid(p.argv) AND json_type(p.argv) = 'array'"
                           " ORDER BY p.id, j.key",
                           -1, &st, NULL))
        return -EINVAL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (vh_grow(words, &cap, *n, sizeof **words, 8))
            break;
        const unsigned char *t = sqlite3_column_text(st, 0);
        (*words)[(*n)++] = strdup(t ? (const char *)t : "");
    }
    sqlite3_finalize(st);
    return 0;
}

static int process_section(struct ctx *c)
{
    sqlite3_stmt *st = NULL;
    char **words = NULL;
    size_t nwords = 0;
    char *capture = NULL, *damage = NULL;
    char started[64], rss_note[64], damage_note[64], windows[256];
    int64_t rate = vh_rec_sample_rate(c->db), on_ns;
    int partial = vh_rec_windows(c->db, windows, sizeof windows, &on_ns);
    int rc = vh_prepare(c->cmd->name, c->db,
                        "SELECT pid, ppid, exe, argv, forked, exec_generation, ended,"
                        "       start_realtime_ns, runtime_ns, peak_rss, peak_rss_time,"
                        "       dropped_events, nested_events, stack_table_full, unwind,"
                        "       max_depth"
                        " FROM processes ORDER BY id LIMIT 1",
                        &st);
    if (rc)
        return rc;
    rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        vh_errorf(c->cmd->name, rc == SQLITE_DONE ? "the DB describes no process"
                                                  : "reading processes: %s",
                  sqlite3_errmsg(c->db));
        rc = rc == SQLITE_DONE ? -ENOENT : -EIO;
        goto out;
    }
    read_argv(c->db, &words, &nwords);
    capture = meta_text(c->db, "capture_path");
    damage = meta_text(c->db, "damage");

    struct out_val v[P_N];
    v[P_PID] = vh_col_val(st, 0);
    v[P_PPID] = vh_col_val(st, 1);
    v[P_EXE] = vh_col_val(st, 2);
    if (words || sqlite3_column_type(st, 3) == SQLITE_NULL)
        v[P_ARGV] = words ? (struct out_val){ .kind = OV_WORDS,
                                              .words = (const char *const *)words,
                                              .nwords = nwords }
                          : OV_NULLV;
    else
        v[P_ARGV] = vh_col_val(st, 3);
    v[P_FORKED] = vh_col_val(st, 4);
    v[P_EXEC_GEN] = vh_col_val(st, 5);
    v[P_ENDED] = vh_col_val(st, 6);
    int64_t start = sqlite3_column_int64(st, 7);
    v[P_STARTED] = OV_S(iso_time(start, started, sizeof started));
    v[P_START_NS] = vh_col_val(st, 7);
    v[P_RUNTIME] = vh_col_val(st, 8);
    c->runtime_ns = sqlite3_column_int64(st, 8);
    v[P_PEAK_RSS] = vh_col_val(st, 9);
    c->peak_rss = sqlite3_column_int64(st, 9);
    if (sqlite3_column_type(st, 10) != SQLITE_NULL && sqlite3_column_int64(st, 9) > 0) {
        char t[32];
        snprintf(rss_note, sizeof rss_note, "at %s",
                 fmt_ns(sqlite3_column_int64(st, 10), t, sizeof t));
        v[P_PEAK_RSS].note = rss_note;
    }
    v[P_PEAK_RSS_TIME] = vh_col_val(st, 10);
    v[P_DROPPED] = vh_col_val(st, 11);
    c->dropped = sqlite3_column_int64(st, 11);
    v[P_NESTED] = vh_col_val(st, 12);
    v[P_NO_STACK] = vh_col_val(st, 13);
    v[P_UNWIND] = vh_col_val(st, 14);
    v[P_MAX_DEPTH] = vh_col_val(st, 15);
    v[P_CAPTURE] = OV_S(capture);
    v[P_DAMAGE] = OV_S(damage);
    long long ndamage = db__meta_int(c->db, "damage_count", damage ? 1 : 0);
    v[P_DAMAGE_COUNT] = OV_I(ndamage);
    if (damage) {
        c->damaged = 1;
        /* The header's word on the exit stands, but records are missing. */
        v[P_ENDED].note = "but the capture is damaged";
        snprintf(damage_note, sizeof damage_note, "%lld damaged region%s", ndamage,
                 ndamage == 1 ? "" : "s");
        v[P_DAMAGE].note = damage_note;
    }

    /* Warnings are diagnostics: stderr, whatever the format. */
    if (sqlite3_column_type(st, 6) != SQLITE_NULL && !sqlite3_column_int64(st, 6))
        vh_errorf(c->cmd->name,
                  "warning: pid %lld did not exit cleanly (it called _exit, was killed, "
                  "crashed, exec'd or is still running): the numbers cover the run up to its last record, and blocks "
                  "live then count as leaked",
                  (long long)sqlite3_column_int64(st, 0));
    if (c->dropped > 0)
        vh_errorf(c->cmd->name, "warning: %lld events were not recorded: recording stopped "
                                "early (the disk or a limit was full; the program said why "
                                "on stderr); blocks live at the last record may have been "
                                "freed later, so they are not known leaks",
                  (long long)c->dropped);
    long long nested = sqlite3_column_int64(st, 12);
    if (nested > 0)
        vh_errorf(c->cmd->name, "warning: %lld allocator calls were not recorded: a signal "
                                "handler the shim could not hold back (installed by a raw "
                                "rt_sigaction system call) made them while its thread was "
                                "inside the shim",
                  nested);
    if (damage)
        vh_errorf(c->cmd->name, "warning: the capture is damaged (%s); what came before "
                                "the damage is loaded",
                  damage);

    v[P_SAMPLED] = (struct out_val){ .kind = OV_INT, .i = rate > 0 };
    v[P_SAMPLE_RATE] = OV_I(rate);
    if (rate)
        v[P_SAMPLE_RATE].note = "numbers are estimates";
    v[P_WINDOWS] = (struct out_val){ .kind = OV_TEXT, .s = partial ? windows : "the whole run" };
    v[P_RECORDED] = OV_I(on_ns);
    if ((rc = out__section(c->out, "process", OUT_OBJECT, NULL, pcols,
                           rate || partial ? P_N : P_SAMPLED)) ||
        (rc = out__row(c->out, v, NULL)))
        goto out;
out:
    for (size_t i = 0; i < nwords; i++)
        free(words[i]);
    free(words);
    free(capture);
    free(damage);
    sqlite3_finalize(st);
    return rc;
}

/* "512.00K in use at once with its nested heaps (of 1.00M), at 1.2s, in
 * heap 'road' (id 5, 3 deep), event 'event 27 %eyre /...'": the columns
 * from `at` on are least_headroom, in_use_peak, its time, heap, depth,
 * event, the heap's name and size. */
static void headroom_note(sqlite3_stmt *st, int at, char *b, size_t n)
{
    char peak[32], size[32], t[32], ev[200] = "";

    if (sqlite3_column_type(st, at) == SQLITE_NULL) {
        *b = 0;
        return;
    }
    out__human_bytes(sqlite3_column_int64(st, at + 1), peak, sizeof peak);
    out__human_bytes(sqlite3_column_int64(st, at + 7), size, sizeof size);
    if (sqlite3_column_type(st, at + 5) != SQLITE_NULL)
        snprintf(ev, sizeof ev, ", event '%s'", (const char *)sqlite3_column_text(st, at + 5));
    snprintf(b, n, "of %s: %s in use at once with its nested heaps, at %s, in heap '%s' "
             "(id %lld, %lld deep)%s", size, peak,
             fmt_ns(sqlite3_column_int64(st, at + 2), t, sizeof t),
             (const char *)sqlite3_column_text(st, at + 6),
             (long long)sqlite3_column_int64(st, at + 3),
             (long long)sqlite3_column_int64(st, at + 4), ev);
}

static int heap_row(sqlite3_stmt *st, void *arg)
{
    struct ctx *c = arg;
    struct out_val v[H_N];
    char arate[48], trate[48], peak_note[96], live_note[48], leak_note[48], t[32];
    char sup_note[160], hr_note[320];
    int64_t allocs = sqlite3_column_int64(st, 2), temp = sqlite3_column_int64(st, 5);
    double ar = per_s(allocs, c->runtime_ns), tr = per_s(temp, c->runtime_ns);

    for (int i = 0; i < 2; i++)
        v[H_ID + i] = vh_col_val(st, i);
    v[H_ALLOCS] = vh_col_val(st, 2);
    v[H_ALLOCS_RATE] = OV_R(ar);
    v[H_FAILED] = vh_col_val(st, 3);
    v[H_FREES] = vh_col_val(st, 4);
    v[H_TEMP] = vh_col_val(st, 5);
    v[H_TEMP_RATE] = OV_R(tr);
    v[H_BYTES] = vh_col_val(st, 6);
    v[H_PEAK] = vh_col_val(st, 7);
    v[H_PEAK_BLOCKS] = vh_col_val(st, 8);
    v[H_PEAK_TIME] = vh_col_val(st, 9);
    v[H_LIVE] = vh_col_val(st, 10);
    v[H_LIVE_BLOCKS] = vh_col_val(st, 11);
    v[H_LEAKED] = vh_col_val(st, 12);
    v[H_LEAKED_BLOCKS] = vh_col_val(st, 13);
    v[H_UNKNOWN_FREES] = vh_col_val(st, 14);
    v[H_DESTROYED] = vh_col_val(st, 15);
    v[H_SUPPRESSED] = vh_col_val(st, 16);
    v[H_SUPPRESSED_BLOCKS] = vh_col_val(st, 17);
    snprintf(sup_note, sizeof sup_note, "%lld block%s: libstdc++'s and glibc's own, kept for "
             "the process's life, which heaptrack does not count either",
             (long long)sqlite3_column_int64(st, 17), sqlite3_column_int64(st, 17) == 1 ? "" : "s");
    v[H_SUPPRESSED].note = sup_note;
    v[H_RUNTIME] = OV_I(c->runtime_ns);
    v[H_PEAK_RSS] = OV_I(c->peak_rss);
    v[H_DROPPED] = OV_I(c->dropped);
    for (int i = 0; i < 6; i++)
        v[H_HEADROOM + i] = vh_col_val(st, 18 + i);
    headroom_note(st, 18, hr_note, sizeof hr_note);
    v[H_HEADROOM].note = hr_note;

    if (!isnan(ar)) {
        snprintf(arate, sizeof arate, "%.0f/s", ar);
        snprintf(trate, sizeof trate, "%.0f/s", tr);
        v[H_ALLOCS].note = arate;
        v[H_TEMP].note = trate;
    }
    if (sqlite3_column_type(st, 9) != SQLITE_NULL)
        snprintf(peak_note, sizeof peak_note, "%lld blocks, at %s",
                 (long long)sqlite3_column_int64(st, 8),
                 fmt_ns(sqlite3_column_int64(st, 9), t, sizeof t));
    else
        snprintf(peak_note, sizeof peak_note, "%lld blocks",
                 (long long)sqlite3_column_int64(st, 8));
    v[H_PEAK].note = peak_note;
    snprintf(live_note, sizeof live_note, "%lld blocks", (long long)sqlite3_column_int64(st, 11));
    v[H_LIVE].note = live_note;
    snprintf(leak_note, sizeof leak_note, "%lld blocks", (long long)sqlite3_column_int64(st, 13));
    v[H_LEAKED].note = leak_note;
    return out__row(c->out, v, NULL);
}

/* Columns 18 on of a heap row: least headroom (size - the most in use in
 * it and its nested heaps, where it has a size), the most, when, the heap
 * whose block made it, how deep that heap is nested, the event holding
 * that time (event_spans), that heap's name, the size. */
#define VH_SQL_HEADROOM                                                                      \
    " CASE WHEN h.size > 0 THEN h.size - h.tree_peak_bytes END, h.tree_peak_bytes,"          \
    " h.tree_peak_time, h.tree_peak_heap_id,"                                                \
    " CASE WHEN h.tree_peak_heap_id IS NOT NULL THEN"                                     \
    " (WITH RECURSIVE up(id, d) AS (SELECT h.tree_peak_heap_id, 0 UNION ALL"                 \
    "    SELECT p.parent_id, up.d + 1 FROM up JOIN heaps p ON p.id = up.id"                  \
    "    WHERE p.parent_id IS NOT NULL) SELECT max(d) FROM up) END,"                         \
    " (SELECT e.label FROM event_spans e WHERE e.end_time >= h.tree_peak_time"               \
    "    AND e.start_time <= h.tree_peak_time ORDER BY e.end_time LIMIT 1),"                 \
    " (SELECT p.name FROM heaps p WHERE p.id = h.tree_peak_heap_id), h.size"

static int heaps_section(struct ctx *c, const struct vh_qopts *o)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_prepare(c->cmd->name, c->db,
                        "SELECT id, name, allocations, failed, frees, temporary,"
                        "       bytes_allocated, peak_bytes, peak_blocks, peak_time,"
                        "       live_bytes, live_blocks, leaked_bytes, leaked_blocks,"
                        "       unknown_frees, destroy_time,"
                        "       (SELECT coalesce(sum(bytes), 0) FROM temp.vh_suppressed v"
                        "        WHERE v.heap_id = h.id),"
                        "       (SELECT coalesce(sum(blocks), 0) FROM temp.vh_suppressed v"
                        "        WHERE v.heap_id = h.id),"
                        VH_SQL_HEADROOM
                        " FROM heaps h"
                        " WHERE " VH_HEAP_SEL("h.id", "?1")
                        " ORDER BY h.id LIMIT ?2",
                        &st);
    if (rc)
        return rc;
    vh_bind_heap(st, 1, o);
    /* every heap unless --limit is given: a program's few heaps all show,
     * a Vere serf's thousands of roads can be cut to the first N */
    sqlite3_bind_int64(st, 2, o->limit_given ? vh_qopts_sql_limit(o) : -1);
    if (!(rc = out__section(c->out, "heaps", OUT_RECORDS, NULL, hcols, H_N)))
        rc = vh_step_all(c->cmd->name, c->db, st, heap_row, c);
    sqlite3_finalize(st);
    return rc;
}

/* ---- reachability at exit (only when the capture has the scan) ------------- */
enum { R_CLASS, R_TITLE, R_BYTES, R_BLOCKS, R_N };

static const struct out_col rcols[R_N] = {
    [R_CLASS] = { "class", "class", OUT_TEXT, OUT_F_NO_TABLE },
    [R_TITLE] = { "title", "leaks by reachability at exit", OUT_TEXT, 0 },
    [R_BYTES] = { "bytes", "bytes", OUT_BYTES, 0 },
    [R_BLOCKS] = { "blocks", "blocks", OUT_INT, 0 },
};

enum { S_STATUS, S_NS, S_CPU, S_ROOTS, S_HEAP, S_UNREADABLE, S_NONRESIDENT, S_THREADS, S_UNSEEN, S_N };

static const struct out_col scols[S_N] = {
    [S_STATUS] = { "status", "reachability scan", OUT_TEXT, 0 },
    [S_NS] = { "scan_ns", "scan time", OUT_NS, 0 },
    [S_CPU] = { "cpu_ns", "scan CPU time", OUT_NS, OUT_F_NO_TABLE },
    [S_ROOTS] = { "root_bytes", "roots read", OUT_BYTES, 0 },
    [S_HEAP] = { "heap_bytes", "blocks read", OUT_BYTES, 0 },
    [S_UNREADABLE] = { "unreadable_bytes", "skipped: unreadable", OUT_BYTES, OUT_F_HIDE_ZERO },
    [S_NONRESIDENT] = { "nonresident_bytes", "skipped: not resident", OUT_BYTES, 0 },
    [S_THREADS] = { "threads", "other threads", OUT_INT, OUT_F_HIDE_ZERO },
    [S_UNSEEN] = { "threads_unseen", "threads running (stack read whole)", OUT_INT,
                   OUT_F_HIDE_ZERO },
};

/* memcheck's order: definitely, indirectly, possibly lost, still reachable. */
static int reach_section(struct ctx *c, const struct vh_qopts *o)
{
    static const int order[VH_CLASS_N] = { VH_CLASS_LOST, VH_CLASS_INDIRECT, VH_CLASS_POSSIBLE,
                                           VH_CLASS_REACHABLE, VH_CLASS_NONE };
    struct vh_reach_totals t;
    int rc = vh_reach__totals(c->cmd->name, c->db, o->heap, &t);
    if (rc <= 0)
        return rc;
    if ((rc = out__section(c->out, "reachability", OUT_LIST, NULL, rcols, R_N)))
        return rc;
    for (int i = 0; i < VH_CLASS_N && !rc; i++) {
        int k = order[i];
        if (k == VH_CLASS_NONE && !t.blocks[k])
            continue;
        struct out_val v[R_N] = { OV_S(vh_class_names[k]), OV_S(vh_class_titles[k]),
                                  OV_I(t.bytes[k]), OV_I(t.blocks[k]) };
        rc = out__row(c->out, v, NULL);
    }
    if (rc || (rc = out__section(c->out, "reach_scan", OUT_OBJECT, NULL, scols, S_N)))
        return rc;
    struct out_val s[S_N] = { OV_S(t.status), OV_I(t.scan_ns), OV_I(t.cpu_ns), OV_I(t.root_bytes),
                              OV_I(t.heap_bytes), OV_I(t.unreadable_bytes),
                              OV_I(t.nonresident_bytes), OV_I(t.threads),
                              OV_I(t.threads_unseen) };
    if (strcmp(t.status, "done"))
        vh_errorf(c->cmd->name, "warning: the reachability scan at exit did not finish (%s): "
                                "leaks are not classified", t.status);
    return out__row(c->out, s, NULL);
}

static int body(struct vh_query *q, int *damaged)
{
    struct ctx c = { .cmd = q->cmd, .db = q->db, .out = q->out };
    int rc = process_section(&c);
    *damaged = c.damaged;
    if (!rc)
        rc = heaps_section(&c, &q->o);
    return rc ? rc : reach_section(&c, &q->o);
}

/* A damaged capture shows everything valid, then fails the command: a
 * script that reads only the status must not take it for a whole run. */
static int run(int argc, char **argv)
{
    struct vh_query q;
    int damaged = 0;
    int rc = vh_query__parse(&q, &cmd_summary, VH_QOPT_TEMPORARY, NULL, 0, argc, argv);
    if (!rc && !(rc = vh_query__open(&q, VH_QUERY_OUTPUT)))
        rc = body(&q, &damaged);
    int code = vh_query__finish(&q, rc);
    return code == VH_EXIT_OK && damaged ? VH_EXIT_DATA : code;
}
