/* rowq.c — a writer thread for the loader's multi-row INSERTs (rowq.h).
 * A small ring of statements' values: the loader copies a full statement's
 * values in and goes on; the thread binds and steps them in the order they
 * came, under the connection's mutex, so the loader's other statements on
 * the same connection interleave between two of its steps. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/load/rowq.h"

#define NSLOTS 16u                     /* statements in flight: 128 KiB     */

struct slot {
    sqlite3_stmt *st;
    struct vh_rowcols cols;
    int n;
    union vh_rowv v[VH_ROWS * VH_ROWS_MAX_COLS];
};

struct rowq {
    sqlite3 *db;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t more, room;         /* a slot filled; a slot emptied      */
    uint64_t head, tail;               /* slots taken / filled so far        */
    int quit, rc;
    char err[256];
    struct slot slots[NSLOTS];
};

int rowq__step(sqlite3 *db, sqlite3_stmt *st, struct vh_rowcols cols, const union vh_rowv *v,
               int n, char *err, size_t errlen)
{
    sqlite3_mutex *m = sqlite3_db_mutex(db);
    int rc, c = 0;

    sqlite3_mutex_enter(m);
    for (int i = 0; i < n; i++) {
        int real = cols.real >> c & 1;
        if (cols.null >> c & 1 && (real ? isnan(v[i].d) : v[i].i == VH_ROWV_NULL))
            sqlite3_bind_null(st, i + 1);
        else if (real)
            sqlite3_bind_double(st, i + 1, v[i].d);
        else
            sqlite3_bind_int64(st, i + 1, v[i].i);
        if (++c == cols.n)
            c = 0;
    }
    rc = sqlite3_step(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(db));
    sqlite3_reset(st);
    sqlite3_mutex_leave(m);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -EIO;
}

static void *writer(void *arg)
{
    struct rowq *q = arg;

    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (q->head == q->tail && !q->quit)
            pthread_cond_wait(&q->more, &q->mu);
        if (q->head == q->tail)
            break;
        struct slot *s = &q->slots[q->head % NSLOTS];
        pthread_mutex_unlock(&q->mu);
        /* the slot stays ours until head moves past it */
        char err[sizeof q->err];
        int rc = q->rc ? 0 : rowq__step(q->db, s->st, s->cols, s->v, s->n, err, sizeof err);
        pthread_mutex_lock(&q->mu);
        if (rc && !q->rc) {
            q->rc = rc;
            memcpy(q->err, err, sizeof err);
        }
        q->head++;
        pthread_cond_signal(&q->room);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

struct rowq *rowq__start(sqlite3 *db)
{
    struct rowq *q;

    if (!sqlite3_threadsafe() || !sqlite3_db_mutex(db) || !(q = calloc(1, sizeof *q)))
        return NULL;
    q->db = db;
    if (pthread_mutex_init(&q->mu, NULL))
        goto no_mutex;
    if (pthread_cond_init(&q->more, NULL))
        goto no_more;
    if (pthread_cond_init(&q->room, NULL))
        goto no_room;
    if (!pthread_create(&q->thread, NULL, writer, q))
        return q;
    pthread_cond_destroy(&q->room);
no_room:
    pthread_cond_destroy(&q->more);
no_more:
    pthread_mutex_destroy(&q->mu);
no_mutex:
    free(q);
    return NULL;
}

void rowq__put(struct rowq *q, sqlite3_stmt *st, struct vh_rowcols cols,
               const union vh_rowv *v, int n)
{
    struct slot *s;

    pthread_mutex_lock(&q->mu);
    while (q->tail - q->head == NSLOTS)
        pthread_cond_wait(&q->room, &q->mu);
    pthread_mutex_unlock(&q->mu);
    /* the writer reads slots below tail only: this one is ours */
    s = &q->slots[q->tail % NSLOTS];
    s->st = st;
    s->cols = cols;
    s->n = n < VH_ROWS * VH_ROWS_MAX_COLS ? n : VH_ROWS * VH_ROWS_MAX_COLS;
    memcpy(s->v, v, (size_t)s->n * sizeof *v);
    pthread_mutex_lock(&q->mu);
    q->tail++;
    pthread_cond_signal(&q->more);
    pthread_mutex_unlock(&q->mu);
}

int rowq__stop(struct rowq *q, char *err, size_t errlen)
{
    int rc;

    if (!q)
        return 0;
    pthread_mutex_lock(&q->mu);
    q->quit = 1;
    pthread_cond_signal(&q->more);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL);
    rc = q->rc;
    if (rc)
        snprintf(err, errlen, "%s", q->err);
    pthread_cond_destroy(&q->room);
    pthread_cond_destroy(&q->more);
    pthread_mutex_destroy(&q->mu);
    free(q);
    return rc;
}
