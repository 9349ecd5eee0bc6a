/* reach.c — the loader's side of reachability (preload/reach.c writes the
 * records): at exit, classes by address for `leaks.class`; on request
 * (`ctl reach`), the live blocks of each snapshot with their classes for
 * `reach_blocks`; every scan's totals for the `reach` table. */
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

/* The class of addr among the entries (sorted), or -1. */
static int lookup(const struct reach *r, uint64_t addr)
{
    if (addr & VH_REACH_CLASS_MASK)
        return -1;
    /* Entries sort by address: the class bits are below the alignment. */
    size_t i = VH_PARTITION_POINT(k, r->n, (r->entry[k] & ~(uint64_t)VH_REACH_CLASS_MASK) < addr);
    if (i == r->n || (r->entry[i] & ~(uint64_t)VH_REACH_CLASS_MASK) != addr)
        return -1;
    return (int)(r->entry[i] & VH_REACH_CLASS_MASK);
}

void reach__begin(struct reach *r, uint64_t time)
{
    r->nrows = r->snap_start;      /* an earlier BEGIN whose END was lost */
    r->n = 0;
    r->pending = 1;
    r->begin_time = time;
}

int reach__keep(struct reach *r, const struct reach_row *row)
{
    if (vh_grow(&r->rows, &r->caprows, r->nrows, sizeof *r->rows, 1024) < 0)
        return -ENOMEM;
    r->rows[r->nrows++] = *row;
    return 0;
}

/* The END of a scan on request: its snapshot's blocks get their classes. */
static int requested_end(struct reach *r, const struct vh_rec_reach_end *rec)
{
    int done = r->pending && rec->status == VH_REACH_DONE;
    if (vh_grow(&r->scans, &r->capscans, r->nscans, sizeof *r->scans, 8) < 0)
        return -ENOMEM;
    r->scans[r->nscans++] = (struct reach_scan){ *rec, r->pending ? r->begin_time : rec->time };
    if (r->n)
        qsort(r->entry, r->n, sizeof *r->entry, by_entry);
    for (size_t i = r->snap_start; i < r->nrows; i++) {
        r->rows[i].scan = (uint32_t)r->nscans;
        r->rows[i].cls = done ? lookup(r, r->rows[i].addr) : -1;
    }
    r->snap_start = r->nrows;
    r->n = 0;
    r->pending = 0;
    return 0;
}

int reach__end(struct reach *r, const struct vh_rec_reach_end *rec)
{
    if (rec->h.flags & VH_REACH_F_REQUEST)
        return requested_end(r, rec);
    r->end = *rec;
    r->ended = 1;
    if (r->n)
        qsort(r->entry, r->n, sizeof *r->entry, by_entry);
    return 0;
}

int reach__class(const struct reach *r, uint64_t addr)
{
    if (!r->ended || r->end.status != VH_REACH_DONE)
        return -1;
    return lookup(r, addr);
}

static int write_scan(sqlite3_stmt *st, const struct vh_rec_reach_end *e, uint32_t scan,
                      uint64_t time)
{
    static const char *const status[] = { "done", "timeout", "failed" };
    sqlite3_reset(st);
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
    sqlite3_bind_int64(st, 12, scan);
    sqlite3_bind_int64(st, 13, (sqlite3_int64)time);
    return sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
}

static int write_rows(const struct reach *r, sqlite3 *db)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO reach_blocks(scan, heap_id, address,"
                                    " size, usable, stack_id, tag_id, tid, time, class)"
                                    " VALUES (?,0,?,?,?,?,?,?,?,?)", -1, &st, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < r->snap_start; i++) {
        const struct reach_row *w = &r->rows[i];
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, w->scan);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)w->addr);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)w->size);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)w->usable);
        sqlite3_bind_int64(st, 5, w->stack);
        sqlite3_bind_int64(st, 6, w->tag);
        sqlite3_bind_int64(st, 7, w->tid);
        sqlite3_bind_int64(st, 8, (sqlite3_int64)w->time);
        if (w->cls < 0)
            sqlite3_bind_null(st, 9);
        else
            sqlite3_bind_int(st, 9, w->cls);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    return rc;
}

int reach__write(const struct reach *r, sqlite3 *db)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "INSERT INTO reach VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", -1,
                                &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    if (r->ended)
        rc = write_scan(st, &r->end, 0, r->end.time);
    for (size_t i = 0; rc == SQLITE_OK && i < r->nscans; i++)
        rc = write_scan(st, &r->scans[i].end, (uint32_t)i + 1, r->scans[i].time);
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        rc = write_rows(r, db);
    return rc == SQLITE_OK ? rc : sqlite3_errcode(db);
}

void reach__free(struct reach *r)
{
    free(r->entry);
    free(r->rows);
    free(r->scans);
    *r = (struct reach){ 0 };
}
