/* sql.c — prepared statements with the commands' error line (sql.h). */
#include <errno.h>
#include <stddef.h>

#include "analyze/store/sql.h"
#include "analyze/util/diag.h"

int vh_prepare(const char *cmd, sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
    if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK) {
        vh_errorf(cmd, "query failed: %s (is this DB from another vheap version?)",
                  sqlite3_errmsg(db));
        return -EINVAL;
    }
    return 0;
}

int vh_step_all(const char *cmd, sqlite3 *db, sqlite3_stmt *st,
                int (*row)(sqlite3_stmt *st, void *arg), void *arg)
{
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int r = row(st, arg);
        if (r)
            return r;
    }
    if (rc != SQLITE_DONE) {
        vh_errorf(cmd, "query failed: %s", sqlite3_errmsg(db));
        return -EIO;
    }
    return 0;
}

int vh_step_one(const char *cmd, sqlite3 *db, sqlite3_stmt *st)
{
    if (sqlite3_step(st) != SQLITE_ROW) {
        vh_errorf(cmd, "query failed: %s", sqlite3_errmsg(db));
        return -EIO;
    }
    return 0;
}
