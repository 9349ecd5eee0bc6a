/* query/live.c — successive looks at a running program's capture (live.h):
 * per stack its live bytes and blocks and bytes allocated, from each look's
 * rows, kept beside those of the first and the previous look. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/query/live.h"
#include "analyze/util/cmp.h"
#include "analyze/util/grow.h"
#include "analyze/util/map.h"

struct vh_live {
    struct vh_live_row *rows;      /* every stack seen, in order of first look */
    size_t nrows, cap;
    struct vh_live_row *ranked;    /* vh_live__top's answer                   */
    size_t ranked_cap;
    struct vh_map *index;          /* stack id -> rows index                   */
    struct vh_live_totals t;
    uint64_t prev_ns;              /* the previous look, caller's clock        */
    uint64_t prev_last;            /* its latest record's time                 */
    double first_live;             /* live bytes at the first look             */
};

struct vh_live *vh_live__new(void)
{
    struct vh_live *l = calloc(1, sizeof *l);
    if (l && !(l->index = vh_map__new())) {
        free(l);
        l = NULL;
    }
    return l;
}

void vh_live__free(struct vh_live *l)
{
    if (!l)
        return;
    vh_map__free(l->index);
    free(l->rows);
    free(l->ranked);
    free(l);
}

const struct vh_live_totals *vh_live__totals(const struct vh_live *l)
{
    return &l->t;
}

const char *vh_live__by_name(enum vh_live_by by)
{
    static const char *const names[VH_LIVE_BY_N] = { "live", "growth", "rate" };
    return by < VH_LIVE_BY_N ? names[by] : "?";
}

static struct vh_live_row *row_of(struct vh_live *l, int64_t stack_id)
{
    int existed;
    struct vh_map_ent *e = vh_map__insert(l->index, (uint64_t)stack_id, 0, &existed);
    if (!e)
        return NULL;
    if (!existed) {
        if (vh_grow(&l->rows, &l->cap, l->nrows, sizeof *l->rows, 256)) {
            vh_map__remove(l->index, e);
            return NULL;
        }
        l->rows[l->nrows] = (struct vh_live_row){ .stack_id = stack_id };
        e->v1 = l->nrows++;
    }
    return &l->rows[e->v1];
}

/* Seconds between this look and the previous one: between their latest
 * records (what the bytes allocated between them took, however long a
 * look's reading took), else of the caller's clock; for the first look
 * the program's run so far (its average rate). */
static double interval_s(const struct vh_live *l, const struct vh_live_in *in, uint64_t now_ns)
{
    if (!l->t.looks)
        return l->t.runtime_ns ? (double)l->t.runtime_ns / 1e9 : 1.0;
    if (in->last_time_ns > l->prev_last)
        return (double)(in->last_time_ns - l->prev_last) / 1e9;
    double s = (double)(now_ns - l->prev_ns) / 1e9;
    return s > 1e-3 ? s : 1e-3;
}

static void read_totals(struct vh_live *l, const struct vh_live_in *in, uint64_t now_ns)
{
    l->t.live_bytes = in->live_bytes;
    l->t.live_blocks = in->live_blocks;
    l->t.allocated = in->allocated;
    l->t.runtime_ns = in->start_realtime_ns > 0 && in->start_realtime_ns < now_ns
                          ? now_ns - in->start_realtime_ns
                          : in->last_time_ns;
    l->t.sample_rate = in->sample_rate;
}

/* The rows summed by stack: a stack's totals over its heaps and tags. */
static int read_stacks(struct vh_live *l, const struct vh_live_in_row *in, size_t n, double dt)
{
    int first = !l->t.looks;
    size_t had = l->nrows;
    double *prev = NULL;

    if (had && !(prev = malloc(had * sizeof *prev)))
        return -ENOMEM;
    for (size_t i = 0; i < had; i++) {
        prev[i] = l->rows[i].allocated;
        l->rows[i].live_bytes = l->rows[i].live_blocks = l->rows[i].allocated = 0;
    }
    for (size_t i = 0; i < n; i++) {
        struct vh_live_row *r = row_of(l, in[i].stack_id);
        if (!r) {
            free(prev);
            return -ENOMEM;
        }
        r->live_bytes += in[i].live_bytes;
        r->live_blocks += in[i].live_blocks;
        r->allocated += in[i].allocated;
    }
    for (size_t i = 0; i < l->nrows; i++) {
        struct vh_live_row *r = &l->rows[i];
        if (first)
            r->first_live = r->live_bytes;
        /* a stack that stopped allocating has no rate now */
        r->rate = (r->allocated - (i < had ? prev[i] : 0)) / dt;
        r->growth = r->live_bytes - r->first_live;
    }
    free(prev);
    return 0;
}

int vh_live__look(struct vh_live *l, const struct vh_live_in *in, const struct vh_live_in_row *rows,
                  size_t n, uint64_t now_ns)
{
    double prev_allocated = l->t.allocated;
    read_totals(l, in, now_ns);
    double dt = interval_s(l, in, now_ns);
    if (read_stacks(l, rows, n, dt))
        return -ENOMEM;
    l->t.rate = (l->t.allocated - (l->t.looks ? prev_allocated : 0)) / dt;
    if (!l->t.looks)
        l->first_live = l->t.live_bytes;
    l->t.growth = l->t.live_bytes - l->first_live;
    l->t.looks++;
    l->prev_ns = now_ns;
    l->prev_last = in->last_time_ns;
    return 0;
}

static double measure(const struct vh_live_row *r, enum vh_live_by by)
{
    return by == VH_LIVE_BY_GROWTH ? r->growth : by == VH_LIVE_BY_RATE ? r->rate : r->live_bytes;
}

static enum vh_live_by sort_by;    /* qsort has no argument for it */

static int by_measure(const void *a, const void *b)
{
    const struct vh_live_row *x = a, *y = b;
    double mx = measure(x, sort_by), my = measure(y, sort_by);
    if (mx != my)
        return mx < my ? 1 : -1;
    return vh_cmp((uint64_t)x->stack_id, (uint64_t)y->stack_id);
}

const struct vh_live_row *vh_live__top(struct vh_live *l, enum vh_live_by by, size_t *n)
{
    size_t k = 0;
    if (vh_reserve(&l->ranked, &l->ranked_cap, l->nrows ? l->nrows : 1, sizeof *l->ranked, 256)) {
        *n = 0;
        return NULL;
    }
    for (size_t i = 0; i < l->nrows; i++)
        if (measure(&l->rows[i], by) > 0)
            l->ranked[k++] = l->rows[i];
    sort_by = by;
    qsort(l->ranked, k, sizeof *l->ranked, by_measure);
    if (k < *n)
        *n = k;
    return l->ranked;
}
