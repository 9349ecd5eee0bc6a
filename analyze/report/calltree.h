/* calltree.h — the call tree the HTML report embeds: stacks merged by their
 * frames' names (stack_names.h), root to leaf, with rows of values per
 * (leaf, heap, tag) in columns the caller defines (allocations, bytes, peak,
 * ..., one column per live-set snapshot, or two runs side by side). Written
 * as JSON after pruning: a tree of a 500k-stack run would be millions of
 * nodes, too many for a browser, and nodes below a small share of every
 * column are too narrow to see anyway. */
#ifndef VHEAP_CALLTREE_H
#define VHEAP_CALLTREE_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/render/xout.h"
#include "analyze/util/map.h"
#include "analyze/util/strtab.h"
#include "analyze/query/stack_names.h"

struct vh_ctree;

/* A tree with ncols value columns per row. NULL on ENOMEM. */
struct vh_ctree *vh_ctree__new(size_t ncols);
void vh_ctree__free(struct vh_ctree *t);

/* The row of the stack `path` (n names of `names`, outermost first) in heap
 * and tag (the caller's numbers), created with zeros; -ENOMEM. */
int64_t vh_ctree__row(struct vh_ctree *t, const struct vh_sname *path, size_t n,
                      const struct vh_snames *names, uint32_t heap, uint32_t tag);
/* Its ncols values, for the caller to add to (valid until the next row). */
uint64_t *vh_ctree__vals(struct vh_ctree *t, int64_t row);

/* Extra columns kept sparse, as most rows have nothing in them (a time
 * window, a size class): adds delta to (row, xcol). 0 or -ENOMEM. */
int vh_ctree__xadd(struct vh_ctree *t, int64_t row, uint32_t xcol, uint64_t delta);

/* Rows so far, and the leaf, heap and tag of one. */
size_t vh_ctree__count(const struct vh_ctree *t);
void vh_ctree__key(const struct vh_ctree *t, int64_t row, uint32_t *leaf, uint32_t *heap,
                   uint32_t *tag);

struct vh_ctree_stats {
    size_t nodes, kept;            /* before pruning, and kept               */
    size_t rows, pruned_rows;      /* rows, and those merged into a pruned node */
    double frac;                   /* the share used (per column)            */
};

/* Prunes (a node is kept when it holds at least `frac` of some column's
 * total, doubled until at most max_nodes are kept; frac 0 keeps every node
 * whatever max_nodes says; rows below go to one
 * "[N smaller stacks]" node per kept parent) and writes the tree as a JSON
 * object: {"strings", "parent", "name", "module", "where", "rows" (node,
 * heap, tag, then the first `dense` columns, per row), "sparse" (per later
 * column: row, value pairs of its non-zero values), "xsparse" (the same,
 * per extra column of vh_ctree__xadd), "stats"}. */
int vh_ctree__write_json(struct vh_ctree *t, struct vh_xout *o, size_t dense, double frac,
                         size_t max_nodes, struct vh_ctree_stats *stats);

#endif
