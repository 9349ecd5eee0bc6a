/* export.h — what the writers behind `vheap-analyze export` share
 * (cmd/export.c parses the command line): the open DB, the output file
 * (render/xout.h), the chosen heaps and the process every format names.
 * Each format is one file, export/<format>.c, with one entry point declared
 * at the bottom. */
#ifndef VHEAP_EXPORT_H
#define VHEAP_EXPORT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "analyze/render/xout.h"
#include "analyze/util/diag.h"
#include "analyze/util/map.h"
#include "analyze/util/path.h"
#include "analyze/util/strtab.h"

/* ---- the export in progress --------------------------------------------- */

enum vh_cost {
    VH_COST_ALLOCATIONS, VH_COST_BYTES, VH_COST_LEAKED, VH_COST_PEAK, VH_COST_TEMPORARY,
    VH_COST_OWNED,                 /* flamegraph: the last ownership snapshot */
};

enum vh_clock { VH_CLOCK_WALL, VH_CLOCK_START };

struct vh_export {
    const char *cmd;               /* the command's name, for messages       */
    sqlite3 *db;
    struct vh_xout *out;
    const char *out_path;          /* as given to -o                          */
    const char *heap;              /* --heap as given, NULL when not given    */
    enum vh_cost cost;
    int cost_given;
    int64_t depth;                 /* --depth: frames per stack, 0 = all      */
    enum vh_clock clock;
    int clock_given;
    const char *merge;             /* --merge: a trace whose events to add    */

    /* The chosen heaps: the format's default when --heap was not given. */
    uint8_t *heap_on;              /* heap_on[id] for id <= heap_max          */
    uint32_t heap_max;
    uint32_t nheaps;
    char *heap_desc;               /* for messages: "malloc", "every heap (3)" */

    /* The process (processes row 1). */
    int64_t pid;
    char *exe;                     /* NULL when unknown                       */
    char *argv_text;               /* argv joined by spaces, NULL if unknown  */
    int64_t start_realtime_ns;     /* 0 when unknown                          */
    uint64_t runtime_ns;
    int64_t page_size, phys_pages; /* 0 when unknown                          */
    uint64_t rate;                 /* VHEAP_SAMPLE, 0: every call recorded:
                                      formats built on the event stream scale
                                      its sizes (vh_ev__weigh)              */

    char *notes;                   /* vh_export_note()'s lines, for the end   */
    size_t notes_len;
    FILE *notes_f;                 /* NULL: straight to stderr                */
};

/* 1 if heap `id` is among the chosen ones. */
static inline int vh_export_heap_on(const struct vh_export *x, uint32_t id)
{
    return id <= x->heap_max && x->heap_on[id];
}

/* "vheap-analyze: export: " + message, a line on stderr once the file is
 * complete (an export that fails says only why). */
void vh_export_note(const struct vh_export *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Where the output went, for the closing note: the file, or "stdout". */
const char *vh_export_dest(const struct vh_export *x);

/* Prepares sql, printing SQLite's message on failure: 0 or -EIO. */
int vh_export_prepare(const struct vh_export *x, const char *sql, sqlite3_stmt **st);


/* A frame as valgrind's tools print it, which massif's and DHAT's readers
 * parse: "0xADDR: function (file:line)", or "(in module)" without a line.
 * Malloc'd; NULL on ENOMEM. */
char *vh_export_frame_label(uint64_t addr, const char *fn, const char *file, int64_t line,
                            const char *module);

/* A MOVE event (store/events.h) in a map of live blocks keyed (heap,
 * address): the block's entry, values kept, goes to its new address.
 * 0, or -ENOMEM. */
struct vh_ev;
int vh_export_block_move(struct vh_map *blocks, const struct vh_ev *ev);

/* Each writes the whole file through x->out and returns 0, or -errno after
 * printing what went wrong; -ENOMEM is not printed (cmd/export.c says it,
 * once). */
int vh_export_heaptrack(struct vh_export *x);
int vh_export_flamegraph(struct vh_export *x);
int vh_export_massif(struct vh_export *x);
int vh_export_chrome(struct vh_export *x);
int vh_export_pprof(struct vh_export *x);
int vh_export_dhat(struct vh_export *x);

#endif
