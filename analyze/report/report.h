/* report.h — what `report` (cmd/report.c: the HTML page) and `diff`
 * (cmd/diff.c: the table) share: the stack measures compared, and reading a
 * database's per-stack totals into a call tree (calltree.h) by frame names,
 * so that two runs or two builds line up stack by stack; and the data of one
 * run the page shows (report/data.c), written as JSON. */
#ifndef VHEAP_REPORT_H
#define VHEAP_REPORT_H

#include <sqlite3.h>
#include <stdint.h>

#include "analyze/report/calltree.h"
#include "analyze/render/xout.h"
#include "analyze/util/strtab.h"
#include "analyze/query/stack_names.h"

/* The measures of a stack, in this column order (stack_stats' columns). */
enum { VH_RM_ALLOCS, VH_RM_BYTES, VH_RM_TEMP, VH_RM_PEAK, VH_RM_LEAKED, VH_RM_N };

/* How rows are keyed by heap and tag: by the database's ids (one run), or
 * by heap name and tag label interned in `keys` (two runs: ids differ). */
struct vh_rkeys {
    struct vh_strtab *keys;        /* NULL: by id                            */
    int no_tags;                   /* every tag summed (key 0)               */
};

/* Adds every stack_stats row of db (summed per heap, stack and tag) to t's
 * columns col0 .. col0 + VH_RM_N - 1; `row` (may be NULL) is told each
 * tree row with the DB's heap, stack and tag ids. 0 or -errno, err set. */
int vh_report_add_stats(struct vh_ctree *t, sqlite3 *db, const struct vh_snames *sn, size_t col0,
                        const struct vh_rkeys *k,
                        int (*row)(void *arg, int64_t trow, int64_t heap, int64_t stack,
                                   int64_t tag),
                        void *arg, char *err, size_t errlen);

/* The key of heap `id` (named `name`) and tag `id` (labelled `label`). */
uint32_t vh_rkey_heap(const struct vh_rkeys *k, int64_t id, const char *name);
uint32_t vh_rkey_tag(const struct vh_rkeys *k, int64_t id, const char *label);

/* Classes of the allocation-size histogram (report/data.c: size_class). */
#define VH_REPORT_SIZE_CLASSES 40

struct vh_modmap;
struct vh_report_opts {
    unsigned snapshots;            /* live sets precomputed for the timeline */
    unsigned points;               /* timeline points                        */
    unsigned top;                  /* rows per measure in the top table      */
    double prune;                  /* a node's least share of some column    */
    size_t max_nodes;
    const struct vh_modmap *modmap; /* the base's module names as this run's  */
    int has_range;                 /* the page opens on [from, to] (ns)      */
    uint64_t from, to;
};

/* Writes the JSON object the page reads for run `db` (with `base`, the
 * baseline of a differential report, or NULL). 0 or -errno, err set. */
int vh_report_json(sqlite3 *db, sqlite3 *base, const char *db_name, const char *base_name,
                   const struct vh_report_opts *o, struct vh_xout *out, char *err,
                   size_t errlen);

#endif
