/* query/frag_run.h — one run as `frag` reads it (frag_run.c): the heaps
 * chosen with their bounds and lifetimes, the regions declared in them,
 * the RSS samples; the live set at one moment (--at) with what frag.h makes
 * of it; and the headline numbers over time, replayed from the event
 * stream into a fragtrack (frag_series.c). frag.h computes; these read the
 * database for it. */
#ifndef VHEAP_FRAG_RUN_H
#define VHEAP_FRAG_RUN_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/query/frag.h"
#include "analyze/store/events.h"

struct frag_hinfo {
    uint32_t id;
    int64_t parent;                /* -1: none                              */
    char *name;
    uint64_t base, size;           /* size 0: no bounds                     */
    int64_t create, destroy;       /* destroy -1: never                     */
    int64_t peak_bytes, peak_time;
};

struct frag_rss {
    uint64_t time;
    int64_t bytes;
};

/* A declared region of a chosen heap (the regions table), for as long as
 * it lasted: fragmentation counts it as occupied. */
struct frag_rinfo {
    uint32_t heap;
    uint64_t base, size;
    int64_t start, end;            /* end -1: still there at the end        */
};

struct frag_run {
    const char *cmd;               /* names the command in error lines      */
    sqlite3 *db;
    const char *heap;              /* --heap, or NULL                       */
    struct frag_hinfo *h;          /* the heaps chosen, by id               */
    size_t nh;
    uint64_t end_time;
    struct frag_rss *rss;
    size_t nrss;
    struct frag_rinfo *r;          /* regions of the chosen heaps           */
    size_t nr;
    char *exe;
};

/* Reads the heaps `heap` chooses (VH_HEAP_SEL: db has them in
 * temp.vh_heap_sel), their regions, the process and its RSS samples into
 * *run (cleared first). 0 or -errno, printed as cmd's; *run is for
 * frag_run__free() either way. */
int frag_run__open(const char *cmd, sqlite3 *db, const char *heap, struct frag_run *run);
void frag_run__free(struct frag_run *run);

/* The heap of that id among those chosen, or NULL; its name, or "?". */
const struct frag_hinfo *frag_run__heap(const struct frag_run *run, uint32_t id);
const char *frag_run__heap_name(const struct frag_run *run, uint32_t id);
/* The last RSS sample at or before t, or NULL. */
const struct frag_rss *frag_run__rss_at(const struct frag_run *run, uint64_t t);

/* The blocks of the chosen heaps live at t, sorted by heap and address.
 * 0 or -errno, printed. */
int frag_run__live_at(const struct frag_run *run, uint64_t t, struct liveset **out);

/* One moment in detail. */
struct frag_moment {
    uint64_t t;
    char what[160];                /* how --at names it: "end", "mark 'x'"  */
    struct liveset *ls;            /* the chosen heaps' blocks live at t    */
    struct frag_heap *fh;          /* the heaps and regions existing at t   */
    size_t nfh;
    struct frag_report *r;         /* frag__analyze() of ls                 */
};

/* --at `at` (NULL: end) resolved and analyzed with `fo` into *m (cleared
 * first). 0 or -errno, printed; *m is for frag_moment__free() either way. */
int frag_run__moment(const struct frag_run *run, const char *at, const struct frag_opts *fo,
                     struct frag_moment *m);
void frag_moment__free(struct frag_moment *m);

/* ---- over time (frag_series.c) ------------------------------------------ */

struct frag_point {
    uint64_t time;
    struct frag_totals t;
    int64_t rss;                   /* -1: no sample yet                     */
};

/* Declares the chosen heaps and their regions to `ft` as they are at time
 * t (which exist). 0 or -ENOMEM. */
int frag_run__declare(const struct frag_run *run, struct fragtrack *ft, uint64_t t);

/* A moment a chosen heap or region begins or stops existing: `what` is
 * heap what (an index of run->h) or region what - nh (of run->r). */
struct frag_change {
    uint64_t time;
    uint32_t what;
    uint8_t start;                 /* 0: it ends then                       */
};

/* The changes after time `after`, by time, the ends first at one time:
 * *out (the caller frees it) and *n. 0 or -ENOMEM (not printed). */
int frag_run__changes(const struct frag_run *run, uint64_t after, struct frag_change **out,
                      size_t *n);
/* Declares to ft the heap or region of one change as it is at its time
 * (the replay applies each before any event at or after that time). 0 or
 * -ENOMEM. */
int frag_run__change(const struct frag_run *run, struct fragtrack *ft,
                     const struct frag_change *ch);

/* Events the replay could not apply as the stream says: an allocation
 * onto a block the replay holds (that block taken out first), a free,
 * resize or move of a block it does not hold (or a move onto one it holds:
 * skipped). A DB the loader wrote has none; more say its event stream
 * disagrees with itself, and the numbers after them may be off. */
struct frag_misses {
    uint64_t onto_live, unknown;
};

/* The headline numbers at from, from + interval, ... up to `to` (the last
 * point at `to`; UINT64_MAX: the end of the run), each the state after
 * every event up to then; interval 0 gives about 200 points. *pts (the
 * caller frees it) and *n, and what the replay could not apply in *miss,
 * or -errno, printed. */
int frag_run__series(const struct frag_run *run, const struct frag_opts *fo, uint64_t from,
                     uint64_t to, uint64_t interval, struct frag_point **pts, size_t *n,
                     struct frag_misses *miss);

#endif
