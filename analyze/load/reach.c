/* reach.c — the loader's side of reachability at exit (preload/reach.c
 * writes the records): classes by address for `leaks.class`, the scan's
 * totals for the `reach` table. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "analyze/load/reach.h"
#include "analyze/util/cmp.h"
#include "analyze/util/grow.h"

int reach__add(struct reach *r, const struct vh_rec_reach *rec, size_t size)
{
    size_t n = rec->h.b;
    if (size < sizeof *rec || (size - sizeof *rec) / 8 < n)
        return -EINVAL;
    if (vh_reserve(&r->entry, &r->cap, r->n + n, sizeof *r->entry, 1024) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        r->entry[r->n++] = rec->entry[i];
    return 0;
}

static int by_entry(const void *a, const void *b)
{
    return vh_cmp(*(const uint64_t *)a, *(const uint64_t *)b);
}

void reach__end(struct reach *r, const struct vh_rec_reach_end *rec)
{
    r->end = *rec;
    r->ended = 1;
    if (r->n)
        qsort(r->entry, r->n, sizeof *r->entry, by_entry);
}

int reach__class(const struct reach *r, uint64_t addr)
{
    if (!r->ended || r->end.status != VH_REACH_DONE || (addr & VH_REACH_CLASS_MASK))
        return -1;
    /* Entries sort by address: the class bits are below the alignment. */
    size_t i = VH_PARTITION_POINT(k, r->n, (r->entry[k] & ~(uint64_t)VH_REACH_CLASS_MASK) < addr);
    if (i == r->n || (r->entry[i] & ~(uint64_t)VH_REACH_CLASS_MASK) != addr)
        return -1;
    return (int)(r->entry[i] & VH_REACH_CLASS_MASK);
}

int reach__write(const struct reach *r, sqlite3 *db)
{
    static const char *const status[] = { "done", "timeout", "failed" };
    const struct vh_rec_reach_end *e = &r->end;
    sqlite3_stmt *st;
    int rc;

    if (!r->ended)
        return SQLITE_OK;
    rc = sqlite3_prepare_v2(db, "INSERT INTO reach VALUES (?,?,?,?,?,?,?,?,?,?,?)", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_bind_text(st, 1, e->status < 3 ? status[e->status] : "failed", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)e->blocks);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)e->root_bytes);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)e->heap_bytes);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)e->unreadable_bytes);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)e->nonresident_bytes);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)e->scan_ns);
    sqlite3_bind_int64(st, 8, (sqlite3_int64)e->cpu_ns);
    sqlite3_bind_int64(st, 9, e->threads);
    sqlite3_bind_int64(st, 10, e->threads_unseen);
    sqlite3_bind_int64(st, 11, e->misaligned);
    rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
    sqlite3_finalize(st);
    return rc;
}

void reach__free(struct reach *r)
{
    free(r->entry);
    *r = (struct reach){ 0 };
}
