/* symbols_db.c — the resolver (symbols.c) and a DB: writes what it found
 * into frames, frame_inlines and meta, and feeds it a loaded DB's modules
 * and frames for `vheap-analyze symbolize`. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analyze/symbols/symbols.h"

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
                       size_t with_line, char *err, size_t errlen)
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

static int write_rows(struct symbols *s, sqlite3 *db, char *err, size_t errlen)
{
    sqlite3_stmt *upd = NULL, *ins = NULL;
    size_t resolved = 0, with_line = 0, nlv;
    int64_t frame_id;
    const struct symbols_level *lv;
    struct symbols_counts c;
    int rc = 0;

    if (sqlite3_exec(db,
                     "DELETE FROM frame_inlines;"
                     "UPDATE frames SET function = NULL, file = NULL, line = NULL,"
                     " inline_depth = 0 WHERE function IS NOT NULL OR file IS NOT NULL"
                     " OR line IS NOT NULL OR inline_depth != 0;",
                     NULL, NULL, NULL) != SQLITE_OK)
        return sql_fail(db, err, errlen, "clearing frames");
    if (sqlite3_prepare_v2(db,
                           "UPDATE frames SET function = ?1, file = ?2, line = ?3,"
                           " inline_depth = ?4 WHERE id = ?5",
                           -1, &upd, NULL) != SQLITE_OK ||
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
        if (sqlite3_step(upd) != SQLITE_DONE)
            rc = sql_fail(db, err, errlen, "updating frames");
        sqlite3_reset(upd);
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
        if (lv[0].function)
            resolved++;
        if (lv[0].file && lv[0].line > 0)
            with_line++;
    }
    symbols__counts(s, &c);
    if (!rc)
        rc = write_stats(db, &c, resolved, with_line, err, errlen);
out:
    sqlite3_finalize(upd);
    sqlite3_finalize(ins);
    return rc;
}

int symbols__write_db(struct symbols *s, sqlite3 *db, char *err, size_t errlen)
{
    int rc;
    if (errlen)
        err[0] = '\0';
    if (sqlite3_exec(db, "SAVEPOINT vh_symbols", NULL, NULL, NULL) != SQLITE_OK)
        return sql_fail(db, err, errlen, "starting the update");
    if ((rc = write_rows(s, db, err, errlen))) {
        sqlite3_exec(db, "ROLLBACK TO vh_symbols; RELEASE vh_symbols", NULL, NULL, NULL);
        return rc;
    }
    if (sqlite3_exec(db, "RELEASE vh_symbols", NULL, NULL, NULL) != SQLITE_OK) {
        rc = sql_fail(db, err, errlen, "committing");
        sqlite3_exec(db, "ROLLBACK TO vh_symbols; RELEASE vh_symbols", NULL, NULL, NULL);
        return rc;
    }
    symbols__warn(s);
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
