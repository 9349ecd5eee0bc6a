/* reach.h — the reachability scan at exit, read back from a loaded DB: its
 * totals per class (leaks.class) and how the scan went (the reach table),
 * for summary and the report. */
#ifndef VHEAP_QUERY_REACH_H
#define VHEAP_QUERY_REACH_H

#include <sqlite3.h>
#include <stdint.h>

/* leaks.class, and a fifth for blocks without one (custom heaps, a block
 * the scan did not know). */
enum { VH_CLASS_REACHABLE, VH_CLASS_POSSIBLE, VH_CLASS_INDIRECT, VH_CLASS_LOST,
       VH_CLASS_NONE, VH_CLASS_N };

/* The class names `leaks --class` takes and prints, by class number. */
extern const char *const vh_class_names[VH_CLASS_N];
/* memcheck's words for them ("definitely lost", ...). */
extern const char *const vh_class_titles[VH_CLASS_N];

struct vh_reach_totals {
    char status[16];               /* "done", "timeout", "failed"           */
    int64_t bytes[VH_CLASS_N], blocks[VH_CLASS_N];
    int64_t scan_ns, cpu_ns, root_bytes, heap_bytes, unreadable_bytes, nonresident_bytes;
    int64_t threads, threads_unseen;
};

/* The totals of the heaps --heap chose (`heap`, NULL: all; heap_sel.h).
 * 1 with *t filled, 0 when the DB has no scan, or -errno (the error said
 * for `cmd`). */
int vh_reach__totals(const char *cmd, sqlite3 *db, const char *heap, struct vh_reach_totals *t);
/* The same for scan `scan` (reach.scan: 0 at exit, 1.. asked for by `ctl
 * reach`, whose classes are in reach_blocks). */
int vh_reach__scan_totals(const char *cmd, sqlite3 *db, const char *heap, int64_t scan,
                          struct vh_reach_totals *t);

/* Parses a --class list ("lost,indirect"): a bit mask of classes (bit
 * VH_CLASS_NONE for "none"), or -1 naming the bad word in *bad. */
int vh_class_mask(const char *list, const char **bad, int *badlen);

#endif
