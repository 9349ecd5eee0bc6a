/* live.h — a running program seen look after look (`top --live`): its
 * live bytes and blocks, how fast it allocates, and per stack what it
 * holds now, how much that grew since the view started, and its
 * allocation rate since the previous look. Each look is given the
 * counters of the capture as read so far (load/follow.h: its (heap, stack,
 * tag) rows, whose stack ids are the capture's, so a stack keeps its id
 * from one look to the next). A sampled capture's numbers are estimates,
 * as the loader's are. */
#ifndef VHEAP_LIVE_H
#define VHEAP_LIVE_H

#include <stddef.h>
#include <stdint.h>

enum vh_live_by { VH_LIVE_BY_LIVE, VH_LIVE_BY_GROWTH, VH_LIVE_BY_RATE, VH_LIVE_BY_N };

struct vh_live_row {
    int64_t stack_id;
    double live_bytes, live_blocks;
    double growth;                 /* live bytes now - when the view started */
    double rate;                   /* bytes allocated a second, last interval
                                      (between the two looks' latest records) */
    double allocated;              /* bytes allocated since the program began */
    double first_live;             /* live bytes at the first look (0 if new) */
};

struct vh_live_totals {
    double live_bytes, live_blocks, allocated;
    double rate;                   /* bytes allocated a second, last interval */
    double growth;                 /* live bytes now - at the first look      */
    uint64_t runtime_ns;           /* since the program started               */
    int64_t sample_rate;           /* 0: every call recorded                  */
    unsigned looks;
};

/* What one look is given: the run so far, and a row per (heap, stack,
 * tag) with its live bytes and blocks and bytes allocated. */
struct vh_live_in {
    double live_bytes, live_blocks, allocated;
    uint64_t start_realtime_ns;    /* the program's start (0: not known)    */
    uint64_t last_time_ns;         /* of the latest record, since the start */
    int64_t sample_rate;
};

struct vh_live_in_row {
    int64_t stack_id;
    double live_bytes, live_blocks, allocated;
};

struct vh_live;

/* NULL on ENOMEM. */
struct vh_live *vh_live__new(void);
void vh_live__free(struct vh_live *l);

/* One look at `now_ns` (CLOCK_REALTIME: rates are per second of it, and
 * the run's length is counted from the start the capture records): `in`
 * and its n rows, several of which may name one stack (other heaps or
 * tags). 0, or -ENOMEM. */
int vh_live__look(struct vh_live *l, const struct vh_live_in *in, const struct vh_live_in_row *rows,
                  size_t n, uint64_t now_ns);

const struct vh_live_totals *vh_live__totals(const struct vh_live *l);

/* The stacks ranked by `by`, largest first (stacks with nothing to show
 * for that measure are left out): at most *n of them, *n set to how many. */
const struct vh_live_row *vh_live__top(struct vh_live *l, enum vh_live_by by, size_t *n);

/* "live", "growth", "rate": the measure's name. */
const char *vh_live__by_name(enum vh_live_by by);

#endif
