/* store/tlayout.h — the report timeline's layout (how many points, how wide,
 * where its live-set snapshots fall) and the cells of its per-stack columns:
 * one computation for the loader, which precomputes the report's data at the
 * default layout (load/rtl.c, tables report_timeline and report_stacks), and
 * for the report, which uses that data only when its own layout is this one. */
#ifndef VH_STORE_TLAYOUT_H
#define VH_STORE_TLAYOUT_H

#include <stdint.h>

#define VH_TL_POINTS 1000u         /* the report's default --points          */
#define VH_TL_SNAPSHOTS 24u        /* and --snapshots                        */
#define VH_TL_SIZE_CLASSES 40u     /* report.h's VH_REPORT_SIZE_CLASSES      */

/* A report_stacks cell's column: window w's bytes 2w and calls 2w + 1,
 * size class c's calls 2S + 2c and bytes 2S + 2c + 1 (S snapshots),
 * snapshot s's live bytes VH_TL_CELL_SNAP + s. */
#define VH_TL_CELL_SNAP (2u * VH_TL_SNAPSHOTS + 2u * VH_TL_SIZE_CLASSES)
/* A run: snapshots up to s (VH_TL_CELL_RUN + s, value 0) have the live
 * bytes of the last snapshot cell before it. */
#define VH_TL_CELL_RUN (VH_TL_CELL_SNAP + VH_TL_SNAPSHOTS)

struct vh_tl_layout {
    unsigned points;
    int by_event;                  /* x is the event count, not time         */
    uint64_t width;                /* ns (or events) per point               */
};

/* The coarse clock (one tick, 4 ms here) cannot place the events of a run
 * only a few ticks long: their order is then the honest axis. */
static inline struct vh_tl_layout vh_tl_layout(unsigned points, uint64_t nevents,
                                               uint64_t runtime, int64_t coarse_ns,
                                               int64_t precise_from)
{
    struct vh_tl_layout l = { .points = points };
    if (nevents && nevents < l.points)
        l.points = (unsigned)nevents;
    if (!l.points)
        l.points = 1;
    l.by_event = coarse_ns > 0 && precise_from == -1 && runtime < 50 * (uint64_t)coarse_ns &&
                 nevents > 0;
    uint64_t span = l.by_event ? nevents : runtime + 1;
    l.width = (span + l.points - 1) / l.points;
    if (!l.width)
        l.width = 1;
    l.points = (unsigned)((span + l.width - 1) / l.width);
    return l;
}

/* Snapshot s of `even` spread evenly: the point it closes. */
static inline uint64_t vh_tl_snap_point(unsigned s, unsigned even, unsigned points)
{
    uint64_t p = ((uint64_t)(s + 1) * points + even - 1) / even;
    return p ? p - 1 : 0;
}

/* A size's class in the report's histogram: 0 is up to 8 bytes, class
 * c > 0 the sizes in (2^(c+2), 2^(c+3)], the last every size above. */
static inline uint32_t vh_tl_size_class(uint64_t size)
{
    uint32_t c = 0;
    while (c + 1 < VH_TL_SIZE_CLASSES && size > (uint64_t)8 << c)
        c++;
    return c;
}

#endif
