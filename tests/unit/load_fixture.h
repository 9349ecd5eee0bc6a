/* load_fixture.h — what the loader's unit tests share: write a synthetic
 * capture to a temp file, load it into a DB beside it and open that
 * read-only, clean both up, and pull one integer or string out of the DB.
 * Header-only, static; include after cmocka.h and capture_builder.h. */
#ifndef VHEAP_TESTS_LOAD_FIXTURE_H
#define VHEAP_TESTS_LOAD_FIXTURE_H

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "analyze/store/db.h"
#include "analyze/load/load.h"
#include "tests/unit/capture_builder.h"

/* The analyzer objects (cli.o among them) are linked without main.o, so the
 * CLI helpers the commands reference come from analyze/cmd/cli.c. */

/* Every test in a binary reuses one capture/DB path pair; done() removes them. */
static char cap_path[256], db_path[300];

/* Writes the capture and loads it with `o`. 0, or the loader's -errno with
 * err saying why (the DB is not opened then). */
__attribute__((unused))
static int fx_write_and_load(struct capb *b, const struct load_opts *o, struct load_stats *st,
                             char *err, size_t errlen)
{
    assert_int_equal(capb__write_tmp(b, cap_path, sizeof cap_path), 0);
    snprintf(db_path, sizeof db_path, "%s.sqlite", cap_path);
    return load__capture(cap_path, db_path, o, st, err, errlen);
}

/* Opens the loaded DB read-only; fails the test if it cannot. */
__attribute__((unused))
static sqlite3 *fx_open(void)
{
    sqlite3 *db = NULL;
    char err[256];

    if (db__open_read(db_path, &db, err, sizeof err))
        fail_msg("open: %s", err);
    return db;
}

/* Writes, loads with `o` (stats in *st) and opens; any failure fails the
 * test. */
__attribute__((unused))
static sqlite3 *fx_load_stats(struct capb *b, const struct load_opts *o, struct load_stats *st)
{
    char err[512];

    if (fx_write_and_load(b, o, st, err, sizeof err))
        fail_msg("load: %s", err);
    return fx_open();
}

/* fx_load_stats() without the stats. */
__attribute__((unused))
static sqlite3 *fx_load(struct capb *b, const struct load_opts *o)
{
    struct load_stats st;
    return fx_load_stats(b, o, &st);
}

__attribute__((unused))
static void done(sqlite3 *db, struct capb *b)
{
    sqlite3_close(db);
    unlink(cap_path);
    unlink(db_path);
    capb__destroy(b);
}

/* One integer from a query with printf-style parameters in the SQL text
 * (tests only: the values are our own integers). -1 for NULL / no row. */
__attribute__((unused, format(printf, 2, 3)))
static long long q(sqlite3 *db, const char *fmt, ...)
{
    char sql[1024];
    sqlite3_stmt *st = NULL;
    long long v = -1;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Column `col` of heap `heap`'s row. */
#define HEAP(db, col, heap) q(db, "SELECT " col " FROM heaps WHERE id=%d", heap)

/* The first column of the first row as text into out ("" for NULL / no row). */
__attribute__((unused))
static const char *qs(sqlite3 *db, const char *sql, char *out, size_t outlen)
{
    sqlite3_stmt *st = NULL;
    out[0] = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(out, outlen, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return out;
}

#endif
