/* follow.h — a capture followed while its program runs (`top --live`):
 * loaded once, then each step reads only the records added since the
 * last one into the same loader state (its live blocks, its counters), so
 * a step costs what was added, not the capture's size. What the counters
 * mean is the load's (docs/schema.md): after a step, a (heap, stack, tag)
 * holds what stack_totals would say of the capture loaded whole then. */
#ifndef VHEAP_LOAD_FOLLOW_H
#define VHEAP_LOAD_FOLLOW_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/load/load.h"

struct load_follow;

/* One (heap, stack, tag): stack_totals' leaked_* (live now: 0 in a heap
 * destroyed) and bytes_allocated. */
struct load_follow_stack {
    uint32_t heap, stack;
    uint16_t tag;
    uint64_t live_bytes, live_blocks, allocated;
};

/* Sums over every heap (the heaps table's live_bytes, live_blocks,
 * bytes_allocated), and what the capture says of the run. */
struct load_follow_totals {
    uint64_t live_bytes, live_blocks, allocated;
    uint64_t records;              /* read so far                           */
    uint64_t last_time;            /* of the latest record, ns since start  */
    uint64_t start_realtime_ns;    /* the program's start, CLOCK_REALTIME   */
    uint64_t sample_rate;          /* 0: every call recorded                */
};

/* Opens `capture` and reads what it holds now (the first step) into a DB
 * at `db_path` that names its stacks (never published: load__follow_close
 * removes it). 0, or -errno with a one-line reason in err. */
int load__follow_open(const char *capture, const char *db_path, const struct load_opts *o,
                      struct load_follow **out, char *err, size_t errlen);
/* Reads the records added since the last step. 0, or -errno with the
 * reason in err (the state is then that of the last step). */
int load__follow_step(struct load_follow *f, char *err, size_t errlen);

/* The DB the stacks are named in (query/stacks.h reads it). */
sqlite3 *load__follow_db(const struct load_follow *f);
void load__follow_totals(const struct load_follow *f, struct load_follow_totals *t);
/* The (heap, stack, tag)s seen so far: i below load__follow_count. */
size_t load__follow_count(const struct load_follow *f);
void load__follow_stack(const struct load_follow *f, size_t i, struct load_follow_stack *s);

void load__follow_close(struct load_follow *f);

#endif
