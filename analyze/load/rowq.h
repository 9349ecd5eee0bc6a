/* rowq.h — the loader's multi-row INSERTs, stepped on a thread of their own.
 *
 * Storing 2M call-tree nodes costs SQLite about as much as the rest of the
 * loader's work on a stack-heavy capture; a writer thread takes that off the
 * thread that reads events, on a connection opened in serialized mode. */
#ifndef VHEAP_ROWQ_H
#define VHEAP_ROWQ_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define VH_ROWS 64                     /* rows a statement                  */
#define VH_ROWS_MAX_COLS 18

/* One column's value: INTEGER, or REAL where the caller's mask says so. */
union vh_rowv {
    int64_t i;
    double d;
};

/* What the columns of a statement's rows hold: bit c of `real`, column c is
 * REAL; bit c of `null`, column c may be NULL, written as VH_ROWV_NULL (an
 * INTEGER column) or NaN (a REAL one). */
struct vh_rowcols {
    int n;
    unsigned real, null;
};
#define VH_ROWV_NULL INT64_MIN

/* Binds n values to st (cols.n columns a row), steps and resets it, holding
 * the connection's mutex throughout (none on a NOMUTEX connection). 0, or
 * -EIO with the reason in err. */
int rowq__step(sqlite3 *db, sqlite3_stmt *st, struct vh_rowcols cols, const union vh_rowv *v,
               int n, char *err, size_t errlen);

struct rowq;

/* A writer thread on db, or NULL when there can be none (a connection
 * without a mutex, an SQLite built single-threaded, no thread to be had):
 * the caller then steps its statements itself. */
struct rowq *rowq__start(sqlite3 *db);

/* Hands over one statement's values (copied; waits while the queue is
 * full). After a failure the values are dropped: rowq__stop reports it. */
void rowq__put(struct rowq *q, sqlite3_stmt *st, struct vh_rowcols cols,
               const union vh_rowv *v, int n);

/* Steps what is queued, ends the thread and frees q. 0, or the first
 * failure (-EIO) with its reason in err. NULL q: 0. */
int rowq__stop(struct rowq *q, char *err, size_t errlen);

#endif
