/* coarse.c — spreading coarse record times over their real span (coarse.h).
 *
 * While one thread records, the shim stamps records with the kernel's
 * coarse clock: the time of its last tick plus half a tick, then 1 ns past
 * the record before while the tick has not moved (docs/capture-format.md).
 * The records that read one tick form a group: they happened at or after
 * that tick, before the next tick (res later, or the next group's tick
 * when earlier); the last group's last record is END, written at
 * exact_end when the header has it. A group's records are spread evenly over
 * that span in their order, the last at its end, so a run's last record
 * (END) gets the exact end. Records without a time (0) keep theirs, and
 * so do all records of a run that switched to the exact clock or is longer
 * than MAX_TICKS ticks. */
#include <errno.h>
#include <stdlib.h>

#include "analyze/capture/coarse.h"
#include "analyze/util/grow.h"

/* Spread only a coarse part this short: spreading assumes a steady rate
 * within a tick, which moves a burst's records up to a tick apart (a
 * malloc and its free into different intervals); over a longer run the
 * tick's own time, off by at most half a tick, is the better guess. */
#define MAX_TICKS 64

struct group {
    uint64_t lo, hi;               /* the span its records lie in            */
    uint64_t n;                    /* records in it                          */
};

struct coarse_map {
    struct group *g;
    size_t ng, cap;
    uint64_t limit;                /* precise_from: times below are coarse   */
    size_t cur;                    /* the group being mapped                 */
    uint64_t j, last;              /* records of it mapped, the last time out */
};

static int in_coarse(const struct coarse_map *m, uint64_t t)
{
    return t && t < m->limit;
}

int coarse__build(struct capture *cap, struct coarse_map **out)
{
    const struct vh_capture_header *h = capture__header(cap);
    uint64_t res = h->coarse_res_ns, half = res / 2, prev = 0;
    struct coarse_map *m;
    struct vh_event ev;

    *out = NULL;
    /* A run that went on to the exact clock (a second thread) has exact
     * times from there on, its end included: its short coarse start is
     * left as recorded rather than spread up against exact times. */
    if (!res || __atomic_load_n(&h->precise_from, __ATOMIC_ACQUIRE) != UINT64_MAX)
        return 0;
    if (!(m = calloc(1, sizeof *m)))
        return -ENOMEM;
    m->limit = __atomic_load_n(&h->precise_from, __ATOMIC_ACQUIRE);
    /* first: each group's first time (in lo) and its count */
    while (capture__next(cap, &ev) == 1) {
        if (!in_coarse(m, ev.time))
            continue;
        /* a new tick moves the time by about a tick; within one, 1 ns a
         * record (a tick cannot hold res / 2 records) */
        if (!m->ng || ev.time > prev + half) {
            if (m->ng == MAX_TICKS) {
                m->ng++;           /* too long: stop reading */
                break;
            }
            if (vh_grow(&m->g, &m->cap, m->ng, sizeof *m->g, 64)) {
                coarse__free(m);
                capture__rewind(cap);
                return -ENOMEM;
            }
            m->g[m->ng++] = (struct group){ .lo = ev.time > half ? ev.time - half : 0 };
        }
        m->g[m->ng - 1].n++;
        if (ev.time > prev)
            prev = ev.time;
    }
    capture__rewind(cap);
    if (m->ng > MAX_TICKS) {
        coarse__free(m);
        return 0;
    }
    uint64_t end = __atomic_load_n(&h->exact_end, __ATOMIC_ACQUIRE);
    for (size_t i = 0; i < m->ng; i++) {
        struct group *g = &m->g[i];
        /* a running process sees a tick every res ns: a group spans at
         * most that (the next one may start later: the process slept) */
        g->hi = g->lo + res;
        if (i + 1 < m->ng && m->g[i + 1].lo < g->hi)
            g->hi = m->g[i + 1].lo;
        if (i + 1 == m->ng && end > g->lo && m->limit == UINT64_MAX)
            g->hi = end;           /* END is its last record */
        if (g->hi < g->lo + g->n)  /* at least 1 ns apart, as recorded */
            g->hi = g->lo + g->n;
    }
    *out = m;
    return 0;
}

uint64_t coarse__map(struct coarse_map *m, uint64_t t)
{
    if (!in_coarse(m, t) || m->cur >= m->ng)
        return t;
    struct group *g = &m->g[m->cur];
    uint64_t out = g->lo + (uint64_t)((unsigned __int128)(g->hi - g->lo) * (m->j + 1) / g->n);
    if (++m->j == g->n) {
        m->cur++;
        m->j = 0;
    }
    if (out <= m->last)
        out = m->last + 1;
    m->last = out;
    return out;
}

uint64_t coarse__groups(const struct coarse_map *m)
{
    return m ? m->ng : 0;
}

void coarse__free(struct coarse_map *m)
{
    if (!m)
        return;
    free(m->g);
    free(m);
}
