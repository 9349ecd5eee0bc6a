/* rows.c — many rows per INSERT (rows.h): the statements, and where their
 * rows go (the writer thread, or stepped here). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/load/loader.h"
#include "analyze/load/rows.h"

int rows__open(struct loader *L, struct rows *r, const char *sql, int cols)
{
    size_t n = strlen(sql), len = n + (size_t)ROWS * (2 + 2 * (size_t)cols) + 1;
    char *q = malloc(len), *p;

    memset(r, 0, sizeof *r);
    r->L = L;
    r->cols.n = cols;
    if (!q) {
        loader__fail(L, -ENOMEM, "out of memory");
        return -1;
    }
    memcpy(q, sql, n);
    p = q + n;
    for (int i = 0; i < ROWS; i++) {
        *p++ = i ? ',' : ' ';
        *p++ = '(';
        for (int c = 0; c < cols; c++) {
            *p++ = c ? ',' : '?';
            if (c)
                *p++ = '?';
        }
        *p++ = ')';
        if (!i) {
            *p = 0;
            r->one = loader__prep(L, q);
        }
    }
    *p = 0;
    r->many = loader__prep(L, q);
    free(q);
    return r->one && r->many ? 0 : -1;
}

static void rows_step(struct rows *r, sqlite3_stmt *st, const union vh_rowv *v, int n)
{
    char msg[256];

    if (r->q)
        rowq__put(r->q, st, r->cols, v, n);
    else if (rowq__step(r->L->db, st, r->cols, v, n, msg, sizeof msg))
        loader__fail(r->L, -EIO, "%s", msg);
}

void rows__flush(struct rows *r)
{
    rows_step(r, r->many, r->v, ROWS * r->cols.n);
    r->k = 0;
}

void rows__drain(struct rows *r)
{
    r->q = NULL;
    for (int i = 0; r->one && i < r->k && !r->L->failed; i++)
        rows_step(r, r->one, r->v + i * r->cols.n, r->cols.n);
    r->k = 0;
}

void rows__close(struct rows *r)
{
    rows__drain(r);
    sqlite3_finalize(r->one);
    sqlite3_finalize(r->many);
    r->one = r->many = NULL;
}

