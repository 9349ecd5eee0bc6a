/* symbols_db.c — the resolver (symbols.c) and a DB: writes what it found
 * into frames, frame_inlines and meta, and feeds it a loaded DB's modules
 * and frames for `vheap-analyze symbolize`. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analyze/symbols/symbols.h"
#include "analyze/util/diag.h"

static int sql_fail(sqlite3 *db, char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "symbols: %s: %s", what, sqlite3_errmsg(db));
    return -EIO;
}

static void bind_line(sqlite3_stmt *st, int i, int line)
{
    if (line > 0)
        sqlite3_bind_int(st, i, line);
    else
        sqlite3_bind_null(st, i);
}

/* The counts, for `summary` and for people reading meta; optional: a DB
 * without a meta table (a unit test's) is fine. */
static int write_stats(sqlite3 *db, const struct symbols_counts *c, size_t resolved,
                       size_t with_line, size_t kept, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    const struct { const char *key; size_t value; } kv[] = {
        {"symbols_frames", c->frames},
        {"symbols_resolved", resolved},
        {"symbols_with_line", with_line},
        {"symbols_modules_missing", c->missing},
        {"symbols_modules_rebuilt", c->rebuilt},
        {"symbols_kept", kept},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof kv / sizeof kv[0] && !rc; i++) {
        sqlite3_bind_text(st, 1, kv[i].key, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)kv[i].value);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sql_fail(db, err, errlen, "writing meta");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

/* How much a frame's resolution says: 2 file:line, 1 a function, 0 nothing.
 * As SQL over a frames row, and for a result. */
#define RANK_SQL(f, file, line) \
    "(CASE WHEN " file " IS NOT NULL AND " line " > 0 THEN 2" \
    " WHEN " f " IS NOT NULL THEN 1 ELSE 0 END)"

static int rank(const struct symbols_level *lv)
{
    return lv->file && lv->line > 0 ? 2 : lv->function ? 1 : 0;
}

/* Frames resolved (rank >= 1) and with file:line (rank 2) in the DB now. */
static int count_ranks(sqlite3 *db, size_t n[2], char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT count(*) FILTER (WHERE r >= 1), count(*) FILTER (WHERE r = 2)"
                           " FROM (SELECT " RANK_SQL("function", "file", "line") " AS r"
                           " FROM frames)",
                           -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW)
        rc = sql_fail(db, err, errlen, "counting frames");
    for (int i = 0; i < 2 && !rc; i++)
        n[i] = (size_t)sqlite3_column_int64(st, i);
    sqlite3_finalize(st);
    return rc;
}

static int write_inlines(sqlite3 *db, sqlite3_stmt *del, sqlite3_stmt *ins, int64_t frame_id,
                         const struct symbols_level *lv, size_t nlv, char *err, size_t errlen)
{
    int rc = 0;
    sqlite3_bind_int64(del, 1, frame_id);
    if (sqlite3_step(del) != SQLITE_DONE)
        rc = sql_fail(db, err, errlen, "replacing frame_inlines");
    sqlite3_reset(del);
    for (size_t d = 1; !rc && d < nlv; d++) {
        sqlite3_bind_int64(ins, 1, frame_id);
        sqlite3_bind_int64(ins, 2, (sqlite3_int64)d);
        sqlite3_bind_text(ins, 3, lv[d].function, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 4, lv[d].file, -1, SQLITE_STATIC);
        bind_line(ins, 5, lv[d].line);
        if (sqlite3_step(ins) != SQLITE_DONE)
            rc = sql_fail(db, err, errlen, "writing frame_inlines");
        sqlite3_reset(ins);
    }
    return rc;
}

/* A result replaces a frame's row only when it says at least as much:
 * `symbolize` after debug info or a file has gone since the load must not
 * turn file:line back into a bare function or module+offset. A frame the
 * resolver has nothing for now keeps what it had. How many kept a better
 * row goes to *kept (and *kept_line of them with file:line). */
static int write_rows(struct symbols *s, sqlite3 *db, size_t kept[2], char *err,
                      size_t errlen)
{
    sqlite3_stmt *upd = NULL, *ins = NULL, *del = NULL;
    size_t written[2] = { 0, 0 }, now[2], nlv;
    int64_t frame_id;
    const struct symbols_level *lv;
    struct symbols_counts c;
    int rc = 0;

    if (sqlite3_prepare_v2(db,
                           "UPDATE frames SET function = ?1, file = ?2, line = ?3,"
                           " inline_depth = ?4 WHERE id = ?5"
                           " AND ?6 >= " RANK_SQL("function", "file", "line"),
                           -1, &upd, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "DELETE FROM frame_inlines WHERE frame_id = ?1", -1, &del,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO frame_inlines (frame_id, depth, function, file, line)"
                           " VALUES (?1, ?2, ?3, ?4, ?5)",
                           -1, &ins, NULL) != SQLITE_OK) {
        rc = sql_fail(db, err, errlen, "preparing updates");
        goto out;
    }
    for (size_t k = 0; !rc && (lv = symbols__result(s, k, &frame_id, &nlv)); k++) {
        /* a NULL pointer binds NULL (sqlite3_bind_text) */
        sqlite3_bind_text(upd, 1, lv[0].function, -1, SQLITE_STATIC);
        sqlite3_bind_text(upd, 2, lv[0].file, -1, SQLITE_STATIC);
        bind_line(upd, 3, lv[0].line);
        sqlite3_bind_int64(upd, 4, (sqlite3_int64)(nlv - 1));
        sqlite3_bind_int64(upd, 5, frame_id);
        sqlite3_bind_int(upd, 6, rank(&lv[0]));
        if (sqlite3_step(upd) != SQLITE_DONE)
            rc = sql_fail(db, err, errlen, "updating frames");
        sqlite3_reset(upd);
        if (rc || !sqlite3_changes(db))
            continue;              /* kept: it said more before */
        rc = write_inlines(db, del, ins, frame_id, lv, nlv, err, errlen);
        written[0] += rank(&lv[0]) >= 1;
        written[1] += rank(&lv[0]) == 2;
    }
    if (!rc)
        rc = count_ranks(db, now, err, errlen);
    for (int i = 0; i < 2 && !rc; i++)
        kept[i] = now[i] - written[i];
    symbols__counts(s, &c);
    if (!rc)
        rc = write_stats(db, &c, now[0], now[1], kept[0], err, errlen);
out:
    sqlite3_finalize(upd);
    sqlite3_finalize(ins);
    sqlite3_finalize(del);
    return rc;
}

static int write_db(struct symbols *s, sqlite3 *db, int more, char *err, size_t errlen);

int symbols__write_db(struct symbols *s, sqlite3 *db, char *err, size_t errlen)
{
    return write_db(s, db, 0, err, errlen);
}

int symbols__write_db_more(struct symbols *s, sqlite3 *db, char *err, size_t errlen)
{
    return write_db(s, db, 1, err, errlen);
}

static int write_db(struct symbols *s, sqlite3 *db, int more, char *err, size_t errlen)
{
    int rc;
    if (errlen)
        err[0] = '\0';
    if (sqlite3_exec(db, "SAVEPOINT vh_symbols", NULL, NULL, NULL) != SQLITE_OK)
        return sql_fail(db, err, errlen, "starting the update");
    size_t kept[2] = { 0, 0 };
    if ((rc = write_rows(s, db, kept, err, errlen))) {
        sqlite3_exec(db, "ROLLBACK TO vh_symbols; RELEASE vh_symbols", NULL, NULL, NULL);
        return rc;
    }
    if (sqlite3_exec(db, "RELEASE vh_symbols", NULL, NULL, NULL) != SQLITE_OK) {
        rc = sql_fail(db, err, errlen, "committing");
        sqlite3_exec(db, "ROLLBACK TO vh_symbols; RELEASE vh_symbols", NULL, NULL, NULL);
        return rc;
    }
    symbols__warn(s);
    if (kept[0] && !more)
        vh_errorf("symbols", "warning: %zu frame%s (%zu with file:line) kept %s earlier "
                  "resolution: the files found now say less (debug info or a module gone "
                  "or rebuilt since)", kept[0], kept[0] == 1 ? "" : "s", kept[1],
                  kept[0] == 1 ? "its" : "their");
    return 0;
}

/* ---- fed from a DB ---------------------------------------------------------- */

static int feed_modules(struct symbols *s, sqlite3 *db, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc = 0, step;
    if (sqlite3_prepare_v2(db, "SELECT id, path, build_id FROM modules ORDER BY id", -1, &st,
                           NULL) != SQLITE_OK)
        return sql_fail(db, err, errlen, "reading modules");
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        symbols__module(s, sqlite3_column_int64(st, 0),
                        (const char *)sqlite3_column_text(st, 1),
                        (const char *)sqlite3_column_text(st, 2));
    if (step != SQLITE_DONE)
        rc = sql_fail(db, err, errlen, "reading modules");
    sqlite3_finalize(st);
    return rc;
}

static int feed_frames(struct symbols *s, sqlite3 *db, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc = 0, step;
    /* module_offset is what the loader stores; address - bias is the same
     * thing for a loader that left it out (never NULL where m.id is not:
     * address and bias are NOT NULL). A module_id no module has is a frame
     * without a module. */
    if (sqlite3_prepare_v2(db,
                           "SELECT f.id, m.id, coalesce(f.module_offset, f.address - m.bias)"
                           " FROM frames f LEFT JOIN modules m ON m.id = f.module_id",
                           -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, err, errlen, "reading frames");
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t mod = sqlite3_column_int64(st, 1);     /* NULL reads 0 */
        symbols__frame(s, sqlite3_column_int64(st, 0), mod, (uint64_t)sqlite3_column_int64(st, 2));
    }
    if (step != SQLITE_DONE)
        rc = sql_fail(db, err, errlen, "reading frames");
    sqlite3_finalize(st);
    return rc;
}

int symbols__resolve_db(sqlite3 *db, char *err, size_t errlen)
{
    return symbols__resolve_db_opts(db, NULL, err, errlen);
}

int symbols__resolve_db_opts(sqlite3 *db, const struct symbols_opts *o, char *err,
                             size_t errlen)
{
    struct symbols *s = symbols__new(o);
    int rc;
    if (errlen)
        err[0] = '\0';
    if (!s) {
        snprintf(err, errlen, "symbols: out of memory");
        return -ENOMEM;
    }
    if (!(rc = feed_modules(s, db, err, errlen)) && !(rc = feed_frames(s, db, err, errlen)) &&
        !(rc = symbols__finish(s, err, errlen)))
        rc = symbols__write_db(s, db, err, errlen);
    symbols__free(s);
    return rc;
}
