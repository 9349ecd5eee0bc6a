/* query/frag_series.c — the headline numbers of frag.h over time (`frag
 * --series`): the live set at the window's start into a fragtrack, then
 * every event after it, the totals read at each interval's end. Events are
 * read ahead and hinted to the tracker so that, with a large live set, what
 * an event changes is in cache when it is applied. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "analyze/query/frag_run.h"
#include "analyze/util/diag.h"

#define SERIES_ROWS 200u
#define MAX_POINTS 1000000u
#define SERIES_AHEAD 16u              /* events read ahead                     */

static uint64_t nice_interval(uint64_t span)
{
    uint64_t want = span / SERIES_ROWS, step = 1000;      /* at least 1 µs */
    static const uint64_t mul[] = { 1, 2, 5 };
    for (;;)
        for (int i = 0; i < 3; i++) {
            if (step * mul[i] >= want)
                return step * mul[i];
            if (i == 2)
                step *= 10;
        }
}

/* The heaps' and regions' beginnings and ends not yet applied. */
struct changes {
    struct frag_change *ch;
    size_t n, next;
};

/* Applies the changes up to time t, in order: a heap or region is there,
 * or gone, before the events at or after the time it began or ended (a
 * block the loom takes where a road or region just was must not meet the
 * space it left). */
static int catch_up(const struct frag_run *c, struct fragtrack *ft, struct changes *cs,
                    uint64_t t)
{
    for (; cs->next < cs->n && cs->ch[cs->next].time <= t; cs->next++)
        if (frag_run__change(c, ft, &cs->ch[cs->next]))
            return -ENOMEM;
    return 0;
}

/* Brings the heaps' existence to time t, then reads the totals. The whole
 * declaration again: a nested region kept out by a block at its base is
 * tried again. */
static int take_point(const struct frag_run *c, struct fragtrack *ft, struct changes *cs,
                      uint64_t t, struct frag_point *p)
{
    if (catch_up(c, ft, cs, t) || frag_run__declare(c, ft, t))
        return -ENOMEM;
    p->time = t;
    fragtrack__totals(ft, &p->t);
    const struct frag_rss *r = frag_run__rss_at(c, t);
    p->rss = r ? r->bytes : -1;
    return 0;
}

static void hint(const struct fragtrack *ft, const struct vh_ev *ev, int near)
{
    if (ev->kind == VH_EV_FAILED)
        return;
    fragtrack__prefetch(ft, ev->heap_id, ev->addr, ev->usable, near);
    if (ev->kind == VH_EV_MOVE)
        fragtrack__prefetch(ft, ev->heap_id, ev->to, ev->usable, near);
}

static int apply_event(struct fragtrack *ft, const struct vh_ev *ev, struct frag_misses *miss)
{
    struct vh_block b;
    int rc = 0;
    switch (ev->kind) {
    case VH_EV_ALLOC:
        b = (struct vh_block){ .addr = ev->addr, .size = ev->size, .usable = ev->usable,
                               .time = ev->time, .heap_id = ev->heap_id,
                               .stack_id = ev->stack_id };
        rc = fragtrack__add(ft, &b);
        if (rc == -EEXIST) {           /* the loader frees first: counted */
            miss->onto_live++;
            rc = fragtrack__remove(ft, ev->heap_id, ev->addr);
            if (rc != -ENOMEM)
                rc = fragtrack__add(ft, &b);
            return rc == -ENOMEM ? rc : 0;
        }
        break;
    case VH_EV_FREE:
        rc = fragtrack__remove(ft, ev->heap_id, ev->addr);
        break;
    case VH_EV_RESIZE:
        rc = fragtrack__resize(ft, ev->heap_id, ev->addr, ev->size, ev->usable);
        break;
    case VH_EV_MOVE:
        rc = fragtrack__move(ft, ev->heap_id, ev->addr, ev->to);
        break;
    default:
        break;
    }
    if (rc == -ENOENT || rc == -EEXIST)
        miss->unknown++;
    return rc == -ENOMEM ? rc : 0;
}

/* Point k's time: from + k * interval, the last one at `to`. */
static uint64_t point_time(uint64_t from, uint64_t k, uint64_t iv, uint64_t to)
{
    return from + k * iv < to ? from + k * iv : to;
}

int frag_run__series(const struct frag_run *c, const struct frag_opts *fo, uint64_t from,
                     uint64_t to, uint64_t interval, struct frag_point **out, size_t *npts_out,
                     struct frag_misses *miss)
{
    struct fragtrack *ft = NULL;
    struct liveset *ls = NULL;
    struct evstream *es = NULL;
    struct frag_point *pts = NULL;
    struct changes cs = { 0 };
    struct vh_ev ev, ring[SERIES_AHEAD];
    char err[256];
    uint64_t iv, npts, k = 0;
    size_t n, i;
    int rc;

    *miss = (struct frag_misses){ 0, 0 };
    if (to == UINT64_MAX)
        to = c->end_time;
    if (to < from)
        to = from;
    iv = interval ? interval : nice_interval(to - from);
    npts = (to - from + iv - 1) / iv + 1;
    if (npts > MAX_POINTS) {
        vh_errorf(c->cmd, "--interval: %" PRIu64 " rows is too many (at most %u): choose a "
                                "longer interval", npts, MAX_POINTS);
        return -EINVAL;
    }
    if ((rc = fragtrack__new(fo, &ft))) {
        if (rc == -ENOMEM)
            goto oom;
        vh_errorf(c->cmd, "the fragmentation options are not usable (page size?)");
        goto out;
    }
    if (!(pts = calloc(npts, sizeof *pts)))
        goto oom;
    if (frag_run__declare(c, ft, from) || frag_run__changes(c, from, &cs.ch, &cs.n))
        goto oom;
    if ((rc = frag_run__live_at(c, from, &ls)))
        goto out;
    for (size_t i = 0; i < ls->n; i++)
        if (fragtrack__add(ft, &ls->blocks[i]) == -ENOMEM)
            goto oom;
    liveset__free(ls);
    ls = NULL;
    if (take_point(c, ft, &cs, from, &pts[k++]))
        goto oom;
    if ((rc = evstream__open(c->db, from + 1, &es, err, sizeof err))) {
        vh_errorf(c->cmd, "reading events: %s", err);
        goto out;
    }
    /* point k is at min(from + k * iv, to): the state after every event
     * up to and including that time. Events are read SERIES_AHEAD ahead of
     * the one applied, and each hints the tracker as it enters the window:
     * with a large live set its tree leaves and page slots are then in
     * cache when it is applied. */
    for (n = 0; n < SERIES_AHEAD && (rc = evstream__next(es, &ring[n])) == 1; n++)
        hint(ft, &ring[n], 0);
    for (i = 0; n && k < npts; i = (i + 1) % SERIES_AHEAD) {
        ev = ring[i];
        if (n > SERIES_AHEAD / 2)
            hint(ft, &ring[(i + SERIES_AHEAD / 2) % SERIES_AHEAD], 1);
        if (rc == 1 && (rc = evstream__next(es, &ring[i])) == 1)
            hint(ft, &ring[i], 0);
        else
            n--;
        while (k < npts && ev.time > point_time(from, k, iv, to)) {
            if (take_point(c, ft, &cs, point_time(from, k, iv, to), &pts[k]))
                goto oom;
            k++;
        }
        if (k == npts)
            break;
        if (c->heap && !frag_run__heap(c, ev.heap_id))
            continue;
        if (catch_up(c, ft, &cs, ev.time) || apply_event(ft, &ev, miss))
            goto oom;
    }
    if (rc < 0) {
        vh_errorf(c->cmd, "reading events: %s", evstream__error(es));
        goto out;
    }
    for (; k < npts; k++)
        if (take_point(c, ft, &cs, point_time(from, k, iv, to), &pts[k]))
            goto oom;

    *out = pts;
    *npts_out = npts;
    pts = NULL;
    rc = 0;
    goto out;
oom:
    rc = -ENOMEM;
    vh_errorf(c->cmd, "out of memory");
out:
    evstream__close(es);
    liveset__free(ls);
    fragtrack__free(ft);
    free(cs.ch);
    free(pts);
    return rc;
}
