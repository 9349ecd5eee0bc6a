/* sql.h — running a query against a vheap DB with the one-line error every
 * command prints when SQLite fails ("vheap-analyze: <cmd>: query failed:
 * ..."). `cmd` names the command for the message (NULL: none). */
#ifndef VHEAP_SQL_H
#define VHEAP_SQL_H

#include <sqlite3.h>

/* Prepares `sql`, printing SQLite's message on failure: 0 or -EINVAL. */
int vh_prepare(const char *cmd, sqlite3 *db, const char *sql, sqlite3_stmt **st);

/* Runs the prepared statement to completion; each row goes to `row` (a
 * non-zero return stops and is returned). 0, or -EIO printed. */
int vh_step_all(const char *cmd, sqlite3 *db, sqlite3_stmt *st,
                int (*row)(sqlite3_stmt *st, void *arg), void *arg);

/* Steps a statement that must give one row (a count, a total): 0, or -EIO
 * with the one-line error printed. */
int vh_step_one(const char *cmd, sqlite3 *db, sqlite3_stmt *st);

#endif
