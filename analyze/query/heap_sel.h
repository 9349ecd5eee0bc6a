/* query/heap_sel.h — the heaps --heap chooses, as SQL: how a query below
 * cmd/ filters by them (the choosing itself is cmd/query.c's
 * vh_heap_select, when a query command opens its DB). */
#ifndef VHEAP_HEAP_SEL_H
#define VHEAP_HEAP_SEL_H

#include <errno.h>
#include <sqlite3.h>

// What --heap chooses (a line comment: the syntax contains a slash-star).
// `NAME` or `ID`: every heap of that name (roads named by depth share one),
// or the heap of that id. `NAME/*` or `ID/*`: those heaps and every heap
// nested in them, at any depth (the loom and all its roads), unless a heap
// is literally named so. vh_query__open() puts the chosen ids in the
// connection's temp table vh_heap_sel(id); queries filter with
// VH_HEAP_SEL("h.id", "?N") and bind --heap to ?N with vh_bind_heap_sel() (NULL
// without --heap: every heap). The older filter "(?N IS NULL OR h.name = ?N
// OR CAST(h.id AS TEXT) = ?N)" still works for NAME and ID, not for NAME/*.
#define VH_HEAP_SEL(col, param) \
    "(" param " IS NULL OR " col " IN (SELECT id FROM temp.vh_heap_sel))"

/* Binds --heap (text, or NULL for every heap) to parameter `idx`. */
static inline int vh_bind_heap_sel(sqlite3_stmt *st, int idx, const char *heap)
{
    int rc = heap ? sqlite3_bind_text(st, idx, heap, -1, SQLITE_STATIC)
                  : sqlite3_bind_null(st, idx);
    return rc == SQLITE_OK ? 0 : -EINVAL;
}

#endif
