/* trend.h — a least-squares line through a step function of time (one
 * stack's live bytes), kept as running integrals so that the loader needs
 * O(1) memory per stack and no second pass: the growth table's slope and R². */
#ifndef VHEAP_TREND_H
#define VHEAP_TREND_H

#include <stdint.h>

/* y(t) is 0 from t0 to the first update and constant between updates.
 * Integrals are over [t0, last], in seconds since t0 (doubles: ns squared
 * would overflow, and seconds keep the sums well conditioned for runs of
 * days). Every stack is fitted over the same window (from the start of
 * recording), so a block allocated once and held is a single step — its
 * R² is at most 0.75 (3a(1 - a) for a step at fraction a of the window) —
 * while a steady leak's is near 1. */
struct trend {
    uint64_t t0, last, first;          /* ns; first = first update          */
    double y;                          /* the value since `last`            */
    double sy, sty, syy;               /* ∫y dt, ∫t·y dt, ∫y² dt             */
    int started;
};

/* The window starts at t0 (ns), y = 0. */
static inline void trend__start(struct trend *tr, uint64_t t0)
{
    *tr = (struct trend){ .t0 = t0, .last = t0, .first = UINT64_MAX, .started = 1 };
}

/* The integrals up to t (ns, not before `last`). */
static inline void trend__advance(struct trend *tr, uint64_t t)
{
    double a = (double)(tr->last - tr->t0) * 1e-9, b = (double)(t - tr->t0) * 1e-9;
    double d = b - a, y = tr->y;

    tr->sy += y * d;
    tr->sty += y * (b * b - a * a) / 2;
    tr->syy += y * y * d;
    tr->last = t;
}

/* y changes to `y` at `t` (ns; an earlier t counts as `last`). Inline: the
 * loader calls it at every allocation and free. */
static inline void trend__set(struct trend *tr, uint64_t t, double y)
{
    if (t > tr->last)
        trend__advance(tr, t);
    if (__builtin_expect(tr->first == UINT64_MAX, 0))
        tr->first = t > tr->t0 ? t : tr->t0;
    tr->y = y;
}

struct trend_fit {
    double seconds;                    /* window length                     */
    double slope;                      /* per second                        */
    double r2;                         /* 0..1; 0 for a constant or a window
                                          of zero length                    */
    double mean;
};

/* The fit over [t0, end] (y holds from the last update until end). */
struct trend_fit trend__fit(const struct trend *tr, uint64_t end);

#endif
