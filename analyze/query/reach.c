/* reach.c — the reachability scan at exit as a loaded DB holds it:
 * totals per class over leaks.class, the scan's row, and the class names
 * the commands share. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analyze/query/heap_sel.h"
#include "analyze/query/reach.h"
#include "analyze/store/sql.h"

const char *const vh_class_names[VH_CLASS_N] = { "reachable", "possible", "indirect", "lost",
                                                 "none" };
const char *const vh_class_titles[VH_CLASS_N] = { "still reachable", "possibly lost",
                                                  "indirectly lost", "definitely lost",
                                                  "not classified" };

static int scan_row(const char *cmd, sqlite3 *db, int64_t scan, struct vh_reach_totals *t)
{
    sqlite3_stmt *st;
    int rc = vh_prepare(cmd, db,
                        "SELECT status, scan_ns, root_bytes, heap_bytes, unreadable_bytes,"
                        "       nonresident_bytes, threads, threads_unseen, cpu_ns"
                        " FROM reach WHERE scan = ?1",
                        &st);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, scan);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const unsigned char *s = sqlite3_column_text(st, 0);
        snprintf(t->status, sizeof t->status, "%s", s ? (const char *)s : "");
        int64_t *f[] = { &t->scan_ns, &t->root_bytes, &t->heap_bytes, &t->unreadable_bytes,
                         &t->nonresident_bytes, &t->threads, &t->threads_unseen, &t->cpu_ns };
        for (int i = 0; i < 8; i++)
            *f[i] = sqlite3_column_int64(st, i + 1);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -EIO;
}

int vh_reach__totals(const char *cmd, sqlite3 *db, const char *heap, struct vh_reach_totals *t)
{
    return vh_reach__scan_totals(cmd, db, heap, 0, t);
}

int vh_reach__scan_totals(const char *cmd, sqlite3 *db, const char *heap, int64_t scan,
                          struct vh_reach_totals *t)
{
    sqlite3_stmt *st;
    memset(t, 0, sizeof *t);
    int rc = scan_row(cmd, db, scan, t);
    if (rc <= 0)
        return rc;
    if ((rc = vh_prepare(cmd, db,
                         scan ? "SELECT coalesce(l.class, 4), count(*), sum(l.size)"
                                " FROM reach_blocks l JOIN heaps h ON h.id = l.heap_id"
                                " WHERE " VH_HEAP_SEL("h.id", "?1") " AND l.scan = ?2"
                                " GROUP BY 1"
                              : "SELECT coalesce(l.class, 4), count(*), sum(l.size) FROM leaks l"
                                " JOIN heaps h ON h.id = l.heap_id WHERE "
                                VH_HEAP_SEL("h.id", "?1") " GROUP BY 1",
                         &st)))
        return rc;
    _Static_assert(VH_CLASS_NONE == 4, "the SQL's class of no class");
    vh_bind_heap_sel(st, 1, heap);
    if (scan)
        sqlite3_bind_int64(st, 2, scan);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int c = sqlite3_column_int(st, 0);
        if (c < 0 || c >= VH_CLASS_N)
            c = VH_CLASS_NONE;
        t->blocks[c] += sqlite3_column_int64(st, 1);
        t->bytes[c] += sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 1 : -EIO;
}

int vh_class_mask(const char *list, const char **bad, int *badlen)
{
    int mask = 0;
    for (const char *p = list;;) {
        size_t n = strcspn(p, ",");
        int c = 0;
        while (c < VH_CLASS_N && !(strlen(vh_class_names[c]) == n &&
                                   !strncmp(vh_class_names[c], p, n)))
            c++;
        if (c == VH_CLASS_N) {
            *bad = p;
            *badlen = (int)n;
            return -1;
        }
        mask |= 1 << c;
        if (!p[n])
            return mask;
        p += n + 1;
    }
}
