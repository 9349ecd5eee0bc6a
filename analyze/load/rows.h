/* rows.h — many rows per INSERT. The big tables (stack_tree and stacks
 * while streaming; leaks and stack_totals at the end: a row per live
 * block, per (heap, stack, tag)) go ROWS rows per statement: a statement's
 * own cost (start, halt, reset) is about a third of a one-row insert.
 * While streaming, a writer thread steps them (rowq.h), when there is
 * one. */
#ifndef VHEAP_LOAD_ROWS_H
#define VHEAP_LOAD_ROWS_H

#include <math.h>
#include <sqlite3.h>
#include <stdint.h>

#include "analyze/load/rowq.h"

#define ROWS VH_ROWS

struct loader;

struct rows {
    struct loader *L;
    sqlite3_stmt *many, *one;
    struct rowq *q;                    /* the writer thread, or NULL         */
    struct vh_rowcols cols;            /* REAL and NULL-able columns: set
                                          after rows__open                   */
    int k;
    union vh_rowv v[ROWS * VH_ROWS_MAX_COLS];
};

/* sql: "INSERT INTO t(a, b, ...) VALUES " for `cols` integer columns.
 * 0, or -1 with the load failed. */
int rows__open(struct loader *L, struct rows *r, const char *sql, int cols);
/* The ROWS rows set so far, as one statement (rows__next calls it). */
void rows__flush(struct rows *r);
/* The rows left, one by one (never queued); then the statements go. */
void rows__close(struct rows *r);
/* The rows left, one by one, the statements kept (never queued). */
void rows__drain(struct rows *r);

static inline void rows__set(struct rows *r, int col, int64_t v)
{
    r->v[r->k * r->cols.n + col].i = v;
}

/* A REAL column (r->cols.real says which). */
static inline void rows__set_real(struct rows *r, int col, double v)
{
    r->v[r->k * r->cols.n + col].d = v;
}

/* NULL, in a column r->cols.null allows. */
static inline void rows__set_null(struct rows *r, int col)
{
    if (r->cols.real >> col & 1)
        rows__set_real(r, col, NAN);
    else
        rows__set(r, col, VH_ROWV_NULL);
}

/* The row set is complete: the next one starts. */
static inline void rows__next(struct rows *r)
{
    if (++r->k < ROWS)
        return;
    rows__flush(r);
}

#endif
