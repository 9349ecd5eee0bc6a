/* series.h — a time series of one run as `series` computes it
 * (cmd/series.c: options, reading the database, the numbers) and
 * report/chart.c draws it. */
#ifndef VHEAP_SERIES_H
#define VHEAP_SERIES_H

#include <stddef.h>
#include <stdint.h>


struct vh_series_top {
    int64_t heap_id, stack_id;
    int64_t measure;               /* the value it was ranked by             */
    char *name;                    /* short, unique among the top stacks     */
    char *where;                   /* "file.c:42" of the naming frame, NULL  */
    char *text;                    /* every frame, one a line (tooltips)     */
    char *heap;                    /* heap name                              */
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

struct vh_series {
    uint64_t from, to;             /* the window, ns since the start         */
    uint64_t interval;             /* ns (per event: the mean gap)           */
    int per_event;
    const char *exe;               /* the program, or NULL                   */
    int64_t pid;
    const char *heap;              /* --heap as given, or NULL (all summed)  */
    size_t nheaps;                 /* heaps summed                           */
    const char *measure_what;      /* "bytes live at the peak"               */
    const char *measure_legend;    /* "at peak"                              */
    int measure_bytes;             /* the measure is bytes (else a count)    */
    const struct vh_series_top *tops;
    size_t ntop, nstacks;          /* top stacks; stacks that held memory    */
    const struct vh_series_row *rows;
    size_t nrows;
    const uint64_t *slive;         /* nrows x ntop: live bytes per top stack */
    uint64_t init_live;            /* the state at `from`                    */
    const uint64_t *init_slive;    /* ntop values, or NULL for zeros         */
    const struct vh_series_mark *marks;
    size_t nmarks;
    const char *x_title;           /* what the time axis is (how exact)      */
};

#endif
