/* load.h — turning a capture into a vheap SQLite database, in one pass whose
 * memory is bounded by the live set and the number of distinct stacks, never
 * by the capture's size. Definitions of every number: docs/schema.md. */
#ifndef VHEAP_LOAD_H
#define VHEAP_LOAD_H

#include <stddef.h>
#include <stdint.h>

struct symbols_opts;

struct load_opts {
    int progress;                  /* -1: when stderr is a tty, 0 no, 1 yes */
    int no_symbols;                /* skip symbolization (frames keep
                                      module + offset only)                 */
    uint32_t event_block;          /* events per stored block; 0: default
                                      (events.h; tests set tiny ones)       */
    uint64_t checkpoint_events;    /* least events between checkpoints; 0:
                                      default                               */
    uint32_t max_missing_stacks;   /* (heap, stack, tag) counters for stack
                                      ids without a STACK record, at most;
                                      0: default (1M; tests set tiny ones)  */
    const struct symbols_opts *symbols; /* where else to look for files
                                      (symbols.h); NULL: nowhere else       */
    int no_events;                 /* the event stream is not stored (a
                                      followed capture: nothing reads it,
                                      and it would grow with every look)   */
};

struct load_stats {
    uint64_t records;              /* records read from the capture         */
    uint64_t stacks, frames;       /* rows written                          */
    uint64_t leaks;                /* blocks live at the end                */
    uint64_t reordered;            /* records moved ahead to settle a cross-
                                      thread misorder (meta.reordered)      */
    uint64_t nesting_steps;        /* heaps visited checking that a nesting
                                      makes no cycle: none for a new heap or
                                      one announced again under the same
                                      parent (test_heaps counts them)       */
    double seconds;                /* wall time of the whole load           */
    double stream_seconds;         /* of which: reading the event stream,   */
    double write_seconds;          /* writing what was kept in memory,      */
    double symbols_seconds;        /* symbolization (what of it is left after
                                      the stream: its thread runs beside),  */
    double index_seconds;          /* building indexes                      */
    double stream_cpu_seconds;     /* CPU time of the stream phase (robust
                                      to a loaded machine)                  */
    unsigned damage_count;         /* damaged regions in the capture        */
    char damage[320];              /* first damage message, "" if none      */
    char symbols[256];             /* symbolizer's error, "" if none        */
};

/* Loads `capture` into the DB at `db_path` (replaced atomically when
 * complete). Returns 0 when a DB was written — check stats->damage_count:
 * a damaged capture is loaded as far as it is valid — or -errno with a
 * one-line reason in err ("FILE: not a vheap capture (bad magic)"). */
int load__capture(const char *capture, const char *db_path, const struct load_opts *opts,
                  struct load_stats *stats, char *err, size_t errlen);

#endif
