/* loader.c — what every part of the loader shares: the load's first
 * failure, and stepping its SQL (loader.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/load/loader.h"

void loader__fail(struct loader *L, int rc, const char *fmt, ...)
{
    va_list ap;
    if (L->failed)
        return;
    L->failed = rc;
    va_start(ap, fmt);
    vsnprintf(L->errmsg, sizeof L->errmsg, fmt, ap);
    va_end(ap);
}

/* Steps an INSERT; the first failure is kept and ends the load. */
void loader__run(struct loader *L, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        loader__fail(L, -EIO, "sqlite: %s", sqlite3_errmsg(L->db));
    sqlite3_reset(st);
}

int loader__exec(struct loader *L, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(L->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        loader__fail(L, -EIO, "sqlite: %s", msg ? msg : sqlite3_errmsg(L->db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

sqlite3_stmt *loader__prep(struct loader *L, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(L->db, sql, -1, &st, NULL) != SQLITE_OK)
        loader__fail(L, -EIO, "sqlite: %s", sqlite3_errmsg(L->db));
    return st;
}

void loader__bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* A value that only some rows have (a destroy time, the peak's time). */
void loader__bind_int_if(sqlite3_stmt *st, int i, int has, uint64_t v)
{
    if (has)
        sqlite3_bind_int64(st, i, (sqlite3_int64)v);
    else
        sqlite3_bind_null(st, i);
}

/* A string field at the end of a record: up to its NUL or the record's end. */
char *loader__rec_string(struct loader *L, const struct vh_event *ev, size_t at)
{
    const char *p = (const char *)ev->rec + at;
    size_t max = ev->size > at ? ev->size - at : 0;
    char *s = strndup(max ? p : "", strnlen(p, max));
    if (!s)
        loader__fail(L, -ENOMEM, "out of memory");
    return s;
}
