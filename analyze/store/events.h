/* events.h — the normalized event stream kept in the database, and the live
 * set rebuilt at any instant.
 *
 * `load` stores every event of the capture in the `events` table as
 * compressed blocks of a few ten thousand events, and a checkpoint of the
 * whole live set every VH_CHECKPOINT_EVENTS events in `checkpoints`. So any
 * later question at any resolution (time series down to single events, the
 * heaptrack export, fragmentation at time T) reads the database alone, and
 * the live set at T costs one checkpoint plus at most one interval of
 * events — never a replay from the start. */
#ifndef VHEAP_EVENTS_H
#define VHEAP_EVENTS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* Normalized kinds: the loader has already resolved what the raw records
 * mean. A moving realloc is FREE (flag REALLOC) + ALLOC (flag REALLOC); a
 * heap destroy becomes one FREE (flag DESTROY) per block still live in the
 * heap and its descendants; an ALLOC over a still-live address is preceded
 * by a FREE with flag IMPLICIT. */
enum vh_ev_kind {
    VH_EV_ALLOC = 1,      /* addr, size, usable, stack_id, tag_id          */
    VH_EV_FREE = 2,       /* addr, size/usable/stack_id/tag_id of the block */
    VH_EV_RESIZE = 3,     /* in place: addr, size (new), old_size, usable   */
    VH_EV_MOVE = 4,       /* addr (from) -> to; block keeps everything else */
    VH_EV_FAILED = 5,     /* allocation that returned NULL: size, stack_id  */
};

enum vh_ev_flags {
    VH_EVF_REALLOC = 1u << 0,   /* half of a moving realloc                 */
    VH_EVF_TEMPORARY = 1u << 1, /* FREE of a temporary allocation           */
    VH_EVF_DESTROY = 1u << 2,   /* FREE caused by a heap destroy            */
    VH_EVF_IMPLICIT = 1u << 3,  /* FREE implied by reuse of a live address  */
};

/* Details of what the loader emits (docs/schema.md, "events"): tid is the
 * thread that made the call (for a destroy's FREEs, the destroyer's); an
 * in-place RESIZE gives the block the realloc's stack, tag, time and thread,
 * and carries TEMPORARY when its implied '-' is heaptrack's temporary; a
 * RESIZE of a block never seen is an ALLOC flagged REALLOC; MOVE carries the
 * block's size, usable, stack and tag too; a MOVE onto a live block is
 * preceded by that block's FREE flagged IMPLICIT; a destroy's FREEs come
 * heap by heap (the destroyed one first, then those nested in it), in
 * address order; frees of blocks not live and moves from addresses not
 * live (counted in heaps.unknown_frees / meta.unknown_moves) emit nothing.
 * Times never go back along the stream. */
struct vh_ev {
    uint64_t seq;         /* 0-based position in the stream                 */
    uint64_t time;        /* ns since start                                 */
    uint64_t addr;
    uint64_t to;          /* MOVE destination                               */
    uint64_t size;        /* requested bytes                                */
    uint64_t old_size;    /* RESIZE: size before                            */
    uint64_t usable;
    uint32_t heap_id;
    uint32_t stack_id;    /* stacks.id in the database                     */
    uint32_t tag_id;
    uint32_t tid;
    uint8_t kind;         /* enum vh_ev_kind                                */
    uint8_t flags;        /* enum vh_ev_flags                               */
};

/* In a capture sampled at `rate` bytes (0: not sampled), makes ev's sizes
 * what its block stands for: s/p bytes (util/weight.h's vh_weigh_bytes),
 * usable scaled alike. A function of the size alone, so a free takes away
 * exactly what its allocation added. For the readers of the stream that
 * show bytes (the exports); counts are not scaled. */
void vh_ev__weigh(struct vh_ev *ev, uint64_t rate);

struct evstream;

/* Opens the stream at the first event with time >= from_time (0 = start).
 * Returns 0 or -errno / -EINVAL (err filled). */
int evstream__open(sqlite3 *db, uint64_t from_time, struct evstream **out,
                   char *err, size_t errlen);
/* 1 with *ev filled, 0 at the end, < 0 on a corrupt block (err via
 * evstream__error). */
int evstream__next(struct evstream *s, struct vh_ev *ev);
const char *evstream__error(const struct evstream *s);
void evstream__close(struct evstream *s);

struct vh_block {
    uint64_t addr, size, usable, time;   /* time: when it was allocated     */
    uint32_t heap_id, stack_id, tag_id, tid;
};

struct liveset {
    uint64_t time;        /* the instant it describes                       */
    size_t n;
    struct vh_block *blocks;             /* sorted by (heap_id, addr)       */
};

/* The blocks live at `time` (after every event with time <= `time`), in
 * heap `heap_id`, or in every heap when heap_id < 0. */
int liveset__at(sqlite3 *db, uint64_t time, int64_t heap_id, struct liveset **out,
                char *err, size_t errlen);
void liveset__free(struct liveset *ls);

/* ---- writing: the loader's side ------------------------------------------
 * Storage (docs/schema.md, tables events and checkpoints): events go in
 * blocks of at most VH_EVENT_BLOCK of varint-coded events (time, address
 * and tid/heap as deltas from the previous event), field by field in
 * columns, each column a zstd frame; a free of a block allocated in the
 * same block refers back to that event, an allocation at an address freed
 * just before in the block names it (encoding 3; blocks of encodings 1 and
 * 2 are read too); a
 * checkpoint holds every live block, sorted by (heap, address), in parts of
 * at most VH_CHECKPOINT_PART blocks, and starts a new event block. One is
 * due after max(VH_CHECKPOINT_EVENTS, 2 x min(live blocks now, live blocks
 * at the previous one)) events: writing them costs the loader about one
 * block copy per event, and a replay from one is at most about twice as
 * long as the checkpoint is big. Blobs are compressed in a worker thread;
 * rows are written on the caller's thread only. */
#define VH_EVENT_BLOCK 65536u
#define VH_CHECKPOINT_EVENTS 1000000u
#define VH_CHECKPOINT_PART 65536u

struct evwriter_opts {
    uint32_t block_events;         /* 0: VH_EVENT_BLOCK (tests: tiny)       */
    uint64_t checkpoint_events;    /* 0: VH_CHECKPOINT_EVENTS               */
};

struct evwriter_stats {
    uint64_t events, blocks, event_bytes;      /* bytes: compressed         */
    uint64_t checkpoints, checkpoint_rows, checkpoint_bytes;
};

struct evwriter;

/* Inserts into the `events` and `checkpoints` tables of db (they must
 * exist; the caller owns the transaction). 0 or -errno (err filled). */
int evwriter__new(sqlite3 *db, const struct evwriter_opts *opts, struct evwriter **out,
                  char *err, size_t errlen);
/* Appends one event; ev->seq is ignored (events are numbered in order) and
 * a time before the previous event's is stored as that time. 0 or -errno
 * (evwriter__error says why). */
int evwriter__add(struct evwriter *w, const struct vh_ev *ev);
/* 1 when the caller should checkpoint now. Ask between two capture records,
 * when the caller's live set is exactly what the events so far left. */
int evwriter__checkpoint_due(const struct evwriter *w);
/* A lower bound on the events that can be added before a checkpoint may be
 * due (0: it may be due now), so that a caller need not ask after every
 * record. */
uint64_t evwriter__due_in(const struct evwriter *w);
/* A checkpoint of the state after every event added so far: begin, then
 * every live block (heap ids ascending, addresses ascending within a heap;
 * any batch size), then end. Each 0 or -errno. */
int evwriter__checkpoint_begin(struct evwriter *w);
int evwriter__checkpoint_add(struct evwriter *w, const struct vh_block *blocks, size_t n);
int evwriter__checkpoint_end(struct evwriter *w);
/* Writes the last block; stats may be NULL. 0 or -errno. */
int evwriter__finish(struct evwriter *w, struct evwriter_stats *stats);
const char *evwriter__error(const struct evwriter *w);
void evwriter__free(struct evwriter *w);

#endif
