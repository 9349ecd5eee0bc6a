/* series.h — a time series of one run: what `series` and `chart` ask
 * (struct vh_series_ask, from their options in cmd/series.c), the numbers
 * query/series.c computes from the database (struct vh_series), their rows
 * for table, JSON and CSV (query/series_rows.c), and what report/chart.c
 * draws. */
#ifndef VHEAP_SERIES_H
#define VHEAP_SERIES_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/render/output.h"

/* How the top stacks are chosen (--by): a column of stack_stats summed
 * over the chosen heaps; or `heap`: a column a heap, ranked by its peak
 * (the mmap heap's address space beside malloc's bytes). */
struct vh_series_measure {
    const char *name;              /* "peak", "max-live", ...                */
    const char *expr;              /* its SQL over stack_stats s             */
    const char *what;              /* "bytes live at the peak"               */
    const char *legend;            /* "peak"                                 */
    int bytes;                     /* a byte count (else a count of calls)   */
    int heaps;                     /* columns are heaps, not stacks (--by heap) */
    const char *unit;              /* "stacks" or "heaps"                    */
};

/* The measure called `name` (NULL: peak, the default); NULL if none is. */
const struct vh_series_measure *vh_series_measure(const char *name);

struct vh_series_top {
    int64_t heap_id, stack_id;
    int64_t measure;               /* the value it was ranked by             */
    char *name;                    /* short, unique among the top stacks     */
    char *where;                   /* "file.c:42" of the naming frame, NULL  */
    char *text;                    /* every frame, one a line (tooltips)     */
    char *heap;                    /* heap name                              */
    struct out_stack *stack;       /* every frame, for JSON; NULL once given
                                      to the renderer                        */
};

/* One interval [start, end), or one event (start = its time). Live bytes
 * are at the end of the span; counts are of what happened within it. */
struct vh_series_row {
    uint64_t start, end;
    uint64_t live, max_live, allocs, frees, temporary, bytes_alloc, bytes_freed;
    int64_t rss;                   /* last sample before `end`, -1 if none   */
    uint64_t size, addr;           /* per event: the event's                 */
    uint8_t kind;                  /* per event: enum vh_ev_kind             */
    uint32_t mark0, nmarks;        /* its marks: marks[mark0 .. +nmarks)     */
};

struct vh_series_mark {
    uint64_t time;
    int64_t tid;
    char *label;
};

/* What is asked: the options of `series` and `chart`. */
struct vh_series_ask {
    const char *cmd;               /* names the command in error lines       */
    sqlite3 *db;                   /* opened with --heap resolved into
                                      temp.vh_heap_sel (cmd/query.h)         */
    const char *heap;              /* --heap, or NULL for every heap         */
    int64_t limit;                 /* rows at most; 0: all (per event, at
                                      most 1000000)                          */
    int64_t depth;                 /* frames per top stack, 0 = all          */
    uint64_t interval;             /* ns; 0 = a 1-2-5 step (default)         */
    int per_event;                 /* one row per event instead              */
    int64_t top;                   /* split live bytes by this many stacks   */
    uint64_t from, to;             /* the window; `to` only with has_to      */
    int has_to;
    const struct vh_series_measure *by;  /* ranks the top stacks             */
};

/* The series of one run; vh_series__read() fills it, vh_series__free()
 * frees what it owns. */
struct vh_series {
    uint64_t from, to;             /* the window, ns since the start         */
    uint64_t interval;             /* ns (per event: the mean gap)           */
    int per_event;
    char *exe;                     /* the program, or NULL                   */
    int64_t pid;
    const char *heap;              /* --heap as given, or NULL (all summed)  */
    size_t nheaps;                 /* heaps summed                           */
    const struct vh_series_measure *by;  /* how the top stacks were chosen */
    struct vh_series_top *tops;
    size_t ntop, nstacks;          /* top stacks; stacks that held memory    */
    struct vh_series_row *rows;
    size_t nrows;
    uint64_t *slive;               /* nrows x ntop: live bytes per top stack */
    uint64_t init_live;            /* the state at `from`                    */
    uint64_t *init_slive;          /* ntop values, or NULL for zeros         */
    struct vh_series_mark *marks;
    size_t nmarks;
    char x_title[160];             /* what the time axis is (how exact)      */
    uint64_t rate;                 /* VHEAP_SAMPLE: the numbers are estimates */
};

/* Computes the series `a` asks for into *s (cleared first): from the
 * `series` table where its buckets can answer, else by replaying the event
 * stream. 0 or -errno, the error printed as a->cmd's (-ENOMEM not). *s is
 * for vh_series__free() either way. */
int vh_series__read(const struct vh_series_ask *a, struct vh_series *s);
void vh_series__free(struct vh_series *s);

/* The top stacks, the marks and the rows into `o` in `format`, then
 * renders it (out__end); on failure drops it. The top stacks' frames go to
 * the renderer (JSON). 0 or -errno; an output error is printed as cmd's. */
int vh_series__print(const char *cmd, struct vh_series *s, enum out_format format,
                     struct out *o);

#endif
