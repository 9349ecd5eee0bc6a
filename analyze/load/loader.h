/* loader.h — the loader's state, shared by the files of load/ (never
 * included outside it). One sub-struct a concern, each with the file that
 * owns it: heaps (heaps.c), the live blocks and their counters (stream.c),
 * the normalized event stream (evstream.c), stacks and frames (stacks.c),
 * the timeline (timeline.c), the feeder's position (stream.c). The inline
 * helpers here are on an event's path: what crosses files per event is
 * inlined, so that no event calls out of stream.c but into the event
 * store. */
#ifndef VHEAP_LOAD_LOADER_H
#define VHEAP_LOAD_LOADER_H

#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sqlite3.h>

#include "analyze/capture/reader.h"
#include "analyze/load/idxmap.h"
#include "analyze/load/livemap.h"
#include "analyze/load/owners.h"
#include "analyze/load/reach.h"
#include "analyze/load/load.h"
#include "analyze/store/events.h"
#include "analyze/store/tlayout.h"
#include "analyze/util/map.h"
#include "analyze/util/trend.h"
#include "analyze/util/weight.h"

#define MAX_HEAPS 65536u              /* ALLOC/FREE carry the heap in 16 bits */
#define MAX_MISSING_STACKS 1000000u   /* (heap, stack, tag) counters kept for
                                         stack ids never described; beyond,
                                         such ids count as stack 0, so that a
                                         damaged or hostile capture naming
                                         ids at random cannot grow the
                                         counters with its event count      */

/* Activity of one heap in the current series bucket. */
struct bucket_acc {
    uint64_t allocations, frees, temporary, bytes_allocated, bytes_freed, max_live;
};

struct heap {
    uint32_t id, parent;               /* DB ids (see heaps__new)            */
    int destroyed, has_parent, has_create, has_peak;
    char *name;
    uint64_t base, size, create_time, destroy_time;
    uint64_t allocations, failed, frees, temporary, bytes_allocated, unknown_frees;
    uint64_t live_bytes, live_blocks, peak_bytes, peak_blocks, peak_time;
    uint64_t epoch;                    /* bumped at each new peak            */
    uint64_t addr_or, addr_and;        /* of every address ever live here:
                                          the bits that may differ          */
    struct livemap *live;
    struct heap *up, *child, *next, *prev;  /* nesting among live heaps      */
    int64_t bucket;                    /* series bucket in progress, or -1   */
    uint64_t bucket_start;             /* its first ns                       */
    struct bucket_acc acc;
    /* The tree of nested heaps a custom heap belongs to, summed at its
     * outermost heap (root): what an arena with nested regions (Vere's
     * loom and its roads) has in use at once, and its most (spans.c). */
    struct heap *root;                 /* outermost custom heap; NULL for the
                                          system heap and destroyed heaps  */
    uint64_t live_usable;              /* this heap's own blocks            */
    uint64_t tree_live, tree_peak, tree_peak_time;  /* root only: usable bytes
                                          of the whole tree now, at most,
                                          when                              */
    uint32_t tree_peak_heap;           /* whose block made that most       */
    int has_tree_peak;
};

/* Counters of one (heap, stack, tag). peak_* hold the values at the heap's
 * peak once `epoch` matches the heap's; until then the current values are
 * the at-peak ones (nothing changed since): see agg_sync(). */
/* rtl.c's counters of an aggregate (beside the loader's, in its cache
 * lines: a separate array cost a cache miss an event). */
struct rtl_agg {
    uint64_t live, wbytes, wcalls;     /* now; the window in progress        */
    struct rtl_cls {
        uint64_t cc, bytes;            /* the class << 58 | calls; bytes     */
    } c1, *more;                       /* its first size class, the others   */
    uint8_t *cells;                    /* (column, value) varint pairs       */
    size_t ncells, capcells;
    uint64_t snap_v;                   /* the live bytes of the last snapshot
                                          cell and the snapshots it covers */
    uint32_t run_end;                  /* where a run's cell ends in cells  */
    uint8_t snap_cov;
    uint8_t nmore;
    uint8_t dirty;                     /* on the window's list               */
};

struct agg {
    uint32_t heap, stack;
    uint16_t tag;
    uint64_t allocations, failed, bytes, usable, frees, temporary;
    uint64_t live_blocks, live_bytes, max_live_bytes;
    uint64_t peak_blocks, peak_bytes, epoch;
    struct trend tr;                   /* live_bytes over recorded time: the
                                          growth table's line               */
    uint64_t first_time;               /* of its first allocation            */
    struct rtl_agg rt;
};

struct thread {
    uint32_t tid;
    int exited;
    uint64_t first_time, last_time, allocations, frees;
    uint64_t last_addr;                /* its latest allocation, if nothing */
    uint32_t last_serial, last_heap;   /* of its own came after; serial 0:
                                          none                              */
};

/* A region of a heap (REGION records) until it is replaced or ends. */
struct open_region {
    uint32_t heap, id;                 /* DB heap id, the program's number   */
    uint8_t kind;
    uint64_t base, size, start;
};

struct module {
    char *path;
    char build_id[65];
    int unloaded, is_main;
    uint64_t bias, lo, hi, load_time, unload_time;
};

struct window { uint64_t start, end; };

/* The call tree's nodes: (parent, frame) -> node (stacks.c). Millions of
 * entries probed at random (compileall: 2.1M), so a slot is 16 bytes, the
 * key one word, and a miss becomes the insert at the slot it ended on: one
 * probe sequence a new node, not two. */
struct node_slot {
    uint64_t key;                      /* parent << 32 | frame; 0: empty
                                          (frame ids start at 1)            */
    uint32_t id;
};

struct nodemap {
    struct node_slot *s;
    size_t mask, count;
};

/* heaps.c: every heap, their nesting, regions and series buckets. */
struct ld_heaps {
    struct heap **heaps;               /* by capture id, MAX_HEAPS entries:
                                          the heap that id names now        */
    struct heap **byid;                /* every heap by DB id, nbyid entries */
    size_t nbyid, reused_ids;
    uint64_t implicit_heaps, bad_heap_records, heap_reuses;
    uint64_t nesting_steps;            /* heaps visited by heap_link's checks */
    struct open_region *regions;       /* declared and not ended yet         */
    size_t nregions, capregions;
    sqlite3_stmt *ins_region, *ins_series;
    uint64_t bucket_ns;                /* the series' bucket width           */
};

/* stream.c: the counters the blocks feed, and the threads. */
struct ld_live {
    struct agg *aggs;
    size_t naggs, capaggs;
    struct idxmap agg_map;             /* (heap<<48 | tag<<32 | stack) -> agg */
    uint32_t *agg_sys;                 /* the system heap's untagged counters
                                          by stack id below nagg_sys (the
                                          capture's dense ids; most events):
                                          an array, not agg_map; UINT32_MAX
                                          none yet                          */
    uint32_t nagg_sys;
    struct thread *threads;
    size_t nthreads, capthreads;
    struct vh_map *thread_map;         /* tid -> index in threads (v1)       */
    struct thread *last_thread;
    uint64_t serial;
    uint64_t implicit_frees, unknown_moves;
    uint64_t missing_aggs;             /* counters made for undescribed ids  */
    uint64_t missing_merged;           /* events counted under stack 0 since */
    uint64_t rate;                     /* the header's sample_rate: blocks
                                          weigh 1/p (weight.h); 0 none     */
    struct vh_live_block *range_buf;   /* the blocks one RANGE record names  */
    size_t caprange;
    uint32_t hint_agg;                 /* the record's aggregate as looked up
                                          ahead (see prefetch_agg), or
                                          UINT32_MAX                        */
    size_t hint_slot;                  /* a FREE's block's live map slot as
                                          looked up ahead, or SIZE_MAX      */
};

/* evstream.c: the normalized event stream and its checkpoints. */
struct ld_stream {
    struct evwriter *evw;
    struct evwriter_stats evst;
    uint64_t emitted, cp_at;           /* events so far; when to ask whether
                                          a checkpoint is due               */
    struct vh_live_block *scratch;     /* sorted_blocks(): the largest heap's */
    size_t scratch_cap;                /* live blocks                        */
};

/* stacks.c: modules, frames, stacks and the call tree. */
struct ld_stacks {
    struct module *mods;
    size_t nmods, capmods;
    uint32_t *active;                  /* loaded modules, sorted by lo       */
    size_t nactive;
    struct vh_map *frame_map;          /* (address, module id) -> frame id   */
    uint64_t nframes;
    uint64_t *seen_bits;               /* stack ids below seen_n with a row
                                          written, a bit each (ids are dense:
                                          the capture's largest id bounds
                                          them); larger ids in stack_seen  */
    uint32_t seen_n;
    struct vh_map *stack_seen;         /* stack ids with a row written: a set,
                                          since ids in a damaged capture may
                                          be anything                        */
    uint64_t nstacks, missing_stacks;
    struct nodemap node_map;           /* (parent node, frame id) -> node id */
    uint64_t nnodes;
    uint64_t *prev_addr;               /* the latest STACK's frames from the */
    uint32_t *prev_node;               /* outermost in, and their nodes: the */
    uint32_t *chain_frame;             /* (on_stack's new frames' ids)       */
    size_t prev_n, prev_cap;           /* next stack mostly shares its outer
                                          frames (see stacks__on_stack)      */
    struct rows *node_rows, *stack_rows;   /* stack_tree, stacks: many rows
                                          a statement (rows.h)               */
    struct rowq *rowq;                 /* their writer thread while streaming */
    struct symbols *sym;               /* resolving frames on its own thread
                                          as they are made; NULL: not asked */
    sqlite3_stmt *ins_frame;
};

/* timeline.c: recording windows, RSS, marks, tags, the clock. */
struct ld_timeline {
    uint64_t last_time;
    uint64_t coarse_groups;            /* ticks the coarse times spread over */
    uint64_t peak_rss, peak_rss_time;
    int ended, has_rss;
    struct window *windows;            /* recording on                       */
    size_t nwindows, capwindows;
    int recording_off;                 /* a WINDOW 0 came last             */
    int windows_seen;
    uint64_t pause_start, paused_ns;   /* the pause in progress; time paused
                                          so far: recorded time = time - it */
    sqlite3_stmt *ins_rss, *ins_mark, *ins_tag;
};

/* What an event (a mark "event N ...", "replay N ..." or "boot ...")
 * did: its span runs from the mark before it, of any kind, to its own. */
struct span {
    uint64_t start, end;               /* ns; end: the event's mark         */
    char *label;
    uint64_t allocations, bytes, frees, bytes_freed;
    double lifetime_ns;                /* of its blocks gone, summed        */
    uint64_t home_start, home_end;     /* outermost heaps' own usable bytes */
    uint64_t in_use_peak, in_use_end;  /* all trees' usable bytes: most, and
                                          at its mark                       */
};

/* spans.c: the events' spans; `open` collects until a mark closes it. */
struct ld_spans {
    struct span *spans;                /* closed, in time order             */
    size_t n, cap;
    struct span open;
    uint64_t home_live, in_use;        /* now: outermost heaps' own usable
                                          bytes, and every tree's          */
};

/* rtl.c: the report's data at its default layout, counted as events are
 * emitted. */
struct ld_rtl {
    int on;                            /* counting (the layout is known)    */
    struct vh_tl_layout lay;
    uint64_t snap_point[VH_TL_SNAPSHOTS];
    unsigned next_snap;
    uint64_t point1;                   /* the point in progress + 1; 0 none  */
    uint64_t last_time, nevents;       /* as the stream stores them          */
    int64_t total, custom;             /* every heap's live bytes, all but
                                          malloc's                          */
    uint64_t total_max, custom_max;    /* and their highs in the point       */
    struct rtl_heap *heaps;            /* per DB heap id                     */
    size_t nheaps;
    uint32_t old_agg;                  /* a RESIZE's block's, before it      */
    uint32_t *dirty;                   /* aggregates the window allocated in */
    size_t ndirty, capdirty;
    sqlite3_stmt *ins_tl;
};

/* stream.c: where settle() looks ahead. */
struct ld_feed {
    struct feeder *feed;               /* the reader: the                    */
    struct batch *cur_b;               /* batch in progress, its number and  */
    uint64_t cur_k;                    /* the record's index in it           */
    size_t cur_j;
    int settling;                      /* a moved record is being processed */
    uint64_t reordered;                /* records moved by settle()          */
};

struct loader {
    struct capture *cap;
    sqlite3 *db;
    const struct load_opts *opts;
    uint64_t records, unknown_records, leaks;
    struct ld_heaps hp;
    struct ld_live lv;
    struct ld_stream es;
    struct ld_stacks sk;
    struct ld_timeline tl;
    struct ld_feed fd;
    struct ld_spans sp;
    struct reach reach;                /* the scan at exit (load/reach.h)   */
    struct ld_owners ow;               /* ownership snapshots (owners.h)    */
    struct ld_rtl rt;
    int failed;                        /* -errno of the first failure        */
    char errmsg[256];
};

/* ---- loader.c: failure and SQL steps ------------------------------------- */

/* The first failure is kept (its -errno and message) and ends the load. */
__attribute__((format(printf, 3, 4)))
void loader__fail(struct loader *L, int rc, const char *fmt, ...);
/* Steps an INSERT; a failure is the load's. */
void loader__run(struct loader *L, sqlite3_stmt *st);
int loader__exec(struct loader *L, const char *sql);
sqlite3_stmt *loader__prep(struct loader *L, const char *sql);
void loader__bind_text_or_null(sqlite3_stmt *st, int i, const char *s);
/* A value that only some rows have (a destroy time, the peak's time). */
void loader__bind_int_if(sqlite3_stmt *st, int i, int has, uint64_t v);
/* A string field at the end of a record: up to its NUL or the record's end;
 * NULL (and the load failed) when out of memory. */
char *loader__rec_string(struct loader *L, const struct vh_event *ev, size_t at);

/* ---- heaps.c -------------------------------------------------------------- */

/* A heap for capture id `id`, which it names from now on; NULL when out of
 * memory. */
struct heap *heaps__new(struct loader *L, uint32_t id, uint64_t time);
/* The row of heap h's series bucket in progress, if any. */
void heaps__series_flush(struct loader *L, struct heap *h);

/* The heap an event names; one never announced is created on first use. */
static inline struct heap *heap_get(struct loader *L, uint32_t id, uint64_t time)
{
    struct heap *h = L->hp.heaps[id];
    if (__builtin_expect(h != NULL, 1))
        return h;
    L->hp.implicit_heaps++;
    return heaps__new(L, id, time);
}

/* Called before an event changes heap h: closes the bucket in progress when
 * the event belongs to a later one. Buckets without activity get no row. */
static inline void series_touch(struct loader *L, struct heap *h, uint64_t time)
{
    int64_t b;
    uint64_t w = L->hp.bucket_ns;

    if (__builtin_expect(h->bucket >= 0 && time - h->bucket_start < w, 1))
        return;
    b = (int64_t)(time / w);
    if (h->bucket > b)                 /* cannot happen in a merged stream */
        return;
    heaps__series_flush(L, h);
    memset(&h->acc, 0, sizeof h->acc);
    h->acc.max_live = h->live_bytes;
    h->bucket = b;
    h->bucket_start = (uint64_t)b * w;
}

/* ---- the accounting every block change shares ---------------------------- */

/* Whether stack id has its stacks row (stacks__mark). */
static inline int stack_seen(const struct loader *L, uint32_t id)
{
    if (id < L->sk.seen_n)
        return (int)(L->sk.seen_bits[id / 64] >> (id % 64) & 1);
    return vh_map__find(L->sk.stack_seen, id, 0) != NULL;
}

/* Before an aggregate's live numbers change: if the heap reached a new peak
 * since they last changed, they are what was live at that peak. */
static inline void agg_sync(struct agg *a, const struct heap *h)
{
    if (a->epoch != h->epoch) {
        a->peak_bytes = a->live_bytes;
        a->peak_blocks = a->live_blocks;
        a->epoch = h->epoch;
    }
}

/* Time with the pauses so far left out (the growth table's axis): a
 * stack that leaks while recorded grows on a line across the windows. */
static inline uint64_t rec_time(const struct loader *L, uint64_t time)
{
    return time > L->tl.paused_ns ? time - L->tl.paused_ns : 0;
}

/* What block b stands for in the counters: itself in a full capture, 1/p
 * of it in a sampled one (weight.h). Its free takes away the same. */
static inline struct vh_weight block_weight(const struct loader *L, uint64_t size, uint32_t serial)
{
    if (__builtin_expect(!L->lv.rate, 1))
        return (struct vh_weight){ 1, size };
    return vh_weigh(size, L->lv.rate, serial);
}

/* ---- spans.c: events and the trees of nested heaps ---------------------- */

/* The closed span holding time t (its start < t <= end), or NULL. */
struct span *spans__find(struct loader *L, uint64_t t);

/* Usable bytes `u` (count n, `bytes` requested) join heap h at `time`: its
 * tree's total, its peak, and the open event's. */
static inline void tree_add(struct loader *L, struct heap *h, uint64_t u, uint64_t n,
                            uint64_t bytes, uint64_t time)
{
    struct heap *r = h->root;

    L->sp.open.allocations += n;
    L->sp.open.bytes += bytes;
    h->live_usable += u;
    if (!r)
        return;
    if (r == h)
        L->sp.home_live += u;
    r->tree_live += u;
    L->sp.in_use += u;
    if (L->sp.in_use > L->sp.open.in_use_peak)
        L->sp.open.in_use_peak = L->sp.in_use;
    if (r->tree_live > r->tree_peak || !r->has_tree_peak) {
        r->has_tree_peak = 1;
        r->tree_peak = r->tree_live;
        r->tree_peak_time = time;
        r->tree_peak_heap = h->id;
    }
}

/* Usable bytes `u` of block b (count n, `bytes` requested) leave heap h at
 * `time`: the tree's total, and the event that allocated it. */
static inline void tree_sub(struct loader *L, struct heap *h, const struct vh_live_block *b,
                            uint64_t u, uint64_t n, uint64_t bytes, uint64_t time)
{
    struct heap *r = h->root;
    struct span *s = b->time >= L->sp.open.start ? &L->sp.open
                     : __builtin_expect(L->sp.n != 0, 0) ? spans__find(L, b->time) : NULL;

    if (s) {
        s->frees += n;
        s->bytes_freed += bytes;
        s->lifetime_ns += (double)(time - b->time) * (double)n;
    }
    h->live_usable -= u;
    if (!r)
        return;
    if (r == h)
        L->sp.home_live -= u;
    r->tree_live -= u;
    L->sp.in_use -= u;
}

/* A live block leaves heap h (free, realloc, implicit free, destroy). */
static inline void block_gone(struct loader *L, struct heap *h, const struct vh_live_block *b,
                              uint64_t time)
{
    struct agg *a = &L->lv.aggs[b->agg];
    struct vh_weight w = block_weight(L, b->size, b->serial);
    tree_sub(L, h, b, w.bytes + b->slack * w.count, w.count, w.bytes, time);
    agg_sync(a, h);
    a->live_bytes -= w.bytes;
    a->live_blocks -= w.count;
    trend__set(&a->tr, rec_time(L, time), (double)a->live_bytes);
    h->live_bytes -= w.bytes;
    h->live_blocks -= w.count;
    h->acc.bytes_freed += w.bytes;
}

/* ---- the normalized event stream (events.h) ------------------------------ */

void rtl__event(struct loader *L, const struct vh_ev *e, uint32_t ai, uint32_t old_ai);

/* Event e; ai is its block's aggregate (UINT32_MAX: no block), old_ai a
 * RESIZE's block's before it. */
static inline void emit_agg(struct loader *L, const struct vh_ev *e, uint32_t ai, uint32_t old_ai)
{
    int rc;
    L->es.emitted++;
    rtl__event(L, e, ai, old_ai);
    if (__builtin_expect(!L->failed && L->es.evw, 1) && (rc = evwriter__add(L->es.evw, e)))
        loader__fail(L, rc, "event stream: %s", evwriter__error(L->es.evw));
}

static inline void emit(struct loader *L, const struct vh_ev *e)
{
    emit_agg(L, e, UINT32_MAX, UINT32_MAX);
}

/* An event about live block b of heap h, by thread tid. */
static inline void emit_block(struct loader *L, uint8_t kind, uint8_t flags, const struct heap *h,
                              uint32_t tid, uint64_t time, const struct vh_live_block *b,
                              uint64_t old_size, uint64_t to)
{
    const struct agg *a = &L->lv.aggs[b->agg];
    struct vh_ev e = { .time = time, .addr = b->addr, .to = to, .size = b->size,
                       .old_size = old_size, .usable = b->size + b->slack, .heap_id = h->id,
                       .stack_id = a->stack, .tag_id = a->tag, .tid = tid, .kind = kind,
                       .flags = flags };
    emit_agg(L, &e, b->agg, L->rt.old_agg);
}

/* ---- the parts: each one's init (0, or -1 with the load failed), its
 * records' handlers, its end and its free (idempotent) ------------------ */

/* rtl.c: the report's data (its layout for the runtime announced). */
int rtl__init(struct loader *L);
void rtl__write(struct loader *L, int64_t coarse_ns, int64_t precise_from);
void rtl__free(struct loader *L);

/* heaps.c: the heap table, nesting, regions, series buckets. */
int heaps__init(struct loader *L);
void heaps__on_create(struct loader *L, const struct vh_event *ev);
void heaps__on_destroy(struct loader *L, const struct vh_event *ev);
void heaps__on_region(struct loader *L, const struct vh_event *ev);
void heaps__end_regions(struct loader *L);     /* rows of the regions left */
void heaps__free(struct loader *L);

/* spans.c: a mark that may close an event's span; the table; free. */
void spans__on_mark(struct loader *L, uint64_t time, const char *label);
void spans__write(struct loader *L);
void spans__free(struct loader *L);
/* A heap's tree: h nested in `parent` (NULL: outermost), or destroyed. */
void spans__reroot(struct loader *L, struct heap *h, struct heap *parent);
void spans__unroot(struct loader *L, struct heap *h);

/* stacks.c: modules, frames, stacks, the call tree. */
int stacks__init(struct loader *L);
void stacks__on_stack(struct loader *L, const struct vh_event *ev);
void stacks__on_module(struct loader *L, const struct vh_event *ev);
void stacks__on_module_unload(struct loader *L, const struct vh_event *ev);
/* Marks stack id as written; 1 if it already was. */
int stacks__mark(struct loader *L, uint32_t id);
void stacks__row(struct loader *L, uint32_t id, uint32_t depth, int truncated, uint32_t node);
/* Ends the rows' writer thread, once what it was given is stored; the
 * rows that follow are stepped where they are made. */
void stacks__unqueue(struct loader *L);
/* The call tree's lookup: needed while STACK records come, not after. */
void stacks__free_nodes(struct loader *L);
/* The stack_tree and stacks rows left, written (unless the load failed). */
void stacks__close_rows(struct loader *L);
/* The rows made so far, written now, the statements kept for more (a
 * followed capture: its DB names the stacks between two steps). */
void stacks__write_rows(struct loader *L);
/* The frames made so far resolved and written into the DB; a new resolver
 * takes the frames that come after (a followed capture). 0, or -errno
 * with the reason in err. */
int stacks__symbols_round(struct loader *L, char *err, size_t errlen);
void stacks__free(struct loader *L);

/* timeline.c: windows, RSS, marks, tags, the end. */
int timeline__init(struct loader *L);
void timeline__on_rss(struct loader *L, const struct vh_event *ev);
void timeline__on_window(struct loader *L, const struct vh_event *ev);
void timeline__on_mark(struct loader *L, const struct vh_event *ev);
void timeline__on_tag(struct loader *L, const struct vh_event *ev);
void timeline__on_end(struct loader *L, const struct vh_event *ev);
void timeline__write_windows(struct loader *L);
void timeline__free(struct loader *L);

/* evstream.c: the event stream's writer, checkpoints, a heap's frees. */
int evstream__init(struct loader *L);
/* Every block of heap h leaves it (destroyed, or its id reused): one FREE
 * flagged DESTROY each, in address order, and when `gone` the accounting
 * of block_gone(). 0 or -ENOMEM. */
int evstream__destroy(struct loader *L, struct heap *h, const struct vh_event *ev, int gone);
/* Every live block into a checkpoint, between two records. */
void evstream__checkpoint(struct loader *L);
/* The final checkpoint and the stream's last block. */
void evstream__finish(struct loader *L);
void evstream__free(struct loader *L);

/* stream.c: the pass over every record. */
int stream__init(struct loader *L);
int stream__run(struct loader *L);
void stream__free(struct loader *L);

/* tables.c: the end of the load, in one transaction. */
/* What load__ensure() compares to decide whether a DB is up to date. */
struct capture_stamp {
    uint64_t size, mtime_ns, chunks, last_time, flags;
    uint64_t coarse_res_ns, precise_from;
    char path[PATH_MAX];
};

/* load.c: the load's first steps, which follow.c shares: the capture
 * opened and stamped (0 or -errno, the reason in err), the DB's settings
 * and tables in its one transaction, every part's state (each 0, or -1
 * with the load failed); and that state freed (idempotent). */
int load__open_capture(struct loader *L, const char *capture, struct capture_stamp *cs,
                       char *err, size_t errlen);
int load__db_begin(struct loader *L, uint64_t capture_size);
int load__parts_init(struct loader *L);
void load__parts_free(struct loader *L);
void tables__write(struct loader *L, const struct capture_stamp *cs, const char *damage,
                   unsigned damage_count);
/* meta's rows known after the commit: the symbols' outcome, the time. */
void tables__write_late_meta(struct loader *L, const char *symbols, double seconds);

#endif
