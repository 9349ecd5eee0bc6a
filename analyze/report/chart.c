/* chart.c — the drawing behind `chart` and `series --svg` (chart.h):
 * memory over time as a stacked area of the top stacks with RSS and marks,
 * and a second chart of allocator calls per interval (render/svg.h). The
 * numbers come from query/series.c (query/series.h); this file only draws. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/query/frame_rule.h"
#include "analyze/query/series.h"
#include "analyze/render/svg.h"
#include "analyze/report/chart.h"
#include "analyze/util/diag.h"
#include "analyze/util/fmt.h"

#define CHART_BINS 1200u           /* points drawn at most: about a pixel each */

/* Bytes as the axes show them: 3 significant digits, 1000-based. */
static const char *si_bytes(uint64_t b, char *buf, size_t len)
{
    static const char *const unit[] = { "B", "KB", "MB", "GB", "TB" };
    double v = (double)b;
    int k = 0;
    while (v >= 999.5 && k < 4) {
        v /= 1000;
        k++;
    }
    snprintf(buf, len, "%.*f %s", k == 0 || v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2, v, unit[k]);
    return buf;
}


/* ---- the points ------------------------------------------------------------ */

/* Point 0 is the state at `from`; point j > 0 the state at the end of bin j
 * with the calls made within it. A bin is one interval, or several when
 * there are many more intervals than pixels; per event, bins are equal
 * slices of the window (events are not evenly spaced, and a bar per event
 * would say nothing). */
struct pts {
    size_t n;
    double *x, *other, *rss, *allocs, *temp, *frees;
    double **stack;                /* ntop arrays                            */
    uint64_t bin_ns;
};

static void pts_free(struct pts *p, size_t ntop)
{
    free(p->x);
    free(p->other);
    free(p->rss);
    free(p->allocs);
    free(p->temp);
    free(p->frees);
    for (size_t k = 0; p->stack && k < ntop; k++)
        free(p->stack[k]);
    free(p->stack);
}

static int pts_make(const struct vh_series *s, struct pts *p)
{
    size_t nbins;
    uint64_t bw, span = s->to - s->from;

    memset(p, 0, sizeof *p);
    if (!s->per_event && s->nrows <= 2 * CHART_BINS) {
        nbins = s->nrows;
        bw = s->interval;
    } else if (!s->per_event) {
        size_t k = (s->nrows + CHART_BINS - 1) / CHART_BINS;
        bw = s->interval * k;
        nbins = (s->nrows + k - 1) / k;
    } else {
        nbins = span < CHART_BINS ? (size_t)span : CHART_BINS;
        bw = (span + nbins - 1) / nbins;
        nbins = (size_t)((span + bw - 1) / bw);
    }
    p->bin_ns = bw;
    p->n = nbins + 1;
    size_t n = p->n;
    if (!(p->x = calloc(n, sizeof(double))) || !(p->other = calloc(n, sizeof(double))) ||
        !(p->rss = calloc(n, sizeof(double))) || !(p->allocs = calloc(n, sizeof(double))) ||
        !(p->temp = calloc(n, sizeof(double))) || !(p->frees = calloc(n, sizeof(double))) ||
        !(p->stack = calloc(s->ntop ? s->ntop : 1, sizeof *p->stack)))
        return -ENOMEM;
    for (size_t k = 0; k < s->ntop; k++)
        if (!(p->stack[k] = calloc(n, sizeof(double))))
            return -ENOMEM;

    double live = (double)s->init_live, rss = NAN, sum = 0;
    p->x[0] = (double)s->from;
    p->rss[0] = NAN;
    for (size_t k = 0; k < s->ntop; k++) {
        p->stack[k][0] = s->init_slive ? (double)s->init_slive[k] : 0;
        sum += p->stack[k][0];
    }
    p->other[0] = live > sum ? live - sum : 0;
    size_t r = 0, last = SIZE_MAX;
    for (size_t b = 0; b < nbins; b++) {
        size_t j = b + 1;
        uint64_t end = b + 1 == nbins ? s->to : s->from + (uint64_t)(b + 1) * bw;
        p->x[j] = (double)end;
        for (; r < s->nrows && s->rows[r].start < end; r++) {
            p->allocs[j] += (double)s->rows[r].allocs;
            p->temp[j] += (double)s->rows[r].temporary;
            p->frees[j] -= (double)s->rows[r].frees;      /* below the axis */
            last = r;
        }
        /* temporary allocations are drawn apart, stacked on the others (a
         * temporary one counts when it is freed, maybe a bin later) */
        p->allocs[j] = p->allocs[j] > p->temp[j] ? p->allocs[j] - p->temp[j] : 0;
        if (last != SIZE_MAX) {
            live = (double)s->rows[last].live;
            rss = s->rows[last].rss >= 0 ? (double)s->rows[last].rss : NAN;
        }
        p->rss[j] = rss;
        sum = 0;
        for (size_t k = 0; k < s->ntop; k++) {
            p->stack[k][j] = last != SIZE_MAX ? (double)s->slive[last * s->ntop + k]
                                              : p->stack[k][j - 1];
            sum += p->stack[k][j];
        }
        p->other[j] = live > sum ? live - sum : 0;
    }
    return 0;
}

/* ---- the two charts ------------------------------------------------------------ */

static char *allocs_path(const char *path)
{
    size_t n = strlen(path);
    if (n > 4 && !strcmp(path + n - 4, ".svg"))
        return vh_xasprintf("%.*s-allocs.svg", (int)(n - 4), path);
    return vh_xasprintf("%s-allocs.svg", path);
}

static int add_marks(struct svg_chart *ch, const struct vh_series *s)
{
    for (size_t m = 0; m < s->nmarks; m++) {
        int rc = svg_chart__add_mark(ch, (double)s->marks[m].time, s->marks[m].label);
        if (rc)
            return rc;
    }
    return 0;
}

/* How both charts end: with rc 0 the marks are added last (drawn on top)
 * and the chart is the result; else it is freed. Returns rc. */
static int chart_end(struct svg_chart *ch, const struct vh_series *s, int rc,
                     struct svg_chart **out)
{
    if (!rc)
        rc = add_marks(ch, s);
    if (rc) {
        svg_chart__free(ch);
        ch = NULL;
    }
    *out = ch;
    return rc;
}

/* The title's end for a sampled capture: its numbers are estimates (a
 * single recorded 64-byte block at 512 KiB stands for 0.5 MB). */
static const char *estimate_label(const struct vh_series *s, char *buf, size_t n)
{
    char r[32];
    if (!s->rate)
        return "";
    si_bytes(s->rate, r, sizeof r);
    snprintf(buf, n, " (estimates from a sample: one every %s allocated)", r);
    return buf;
}

static int memory_chart(const struct vh_series *s, const struct pts *p, struct svg_chart **out)
{
    struct svg_chart *ch = NULL;
    char *title = NULL, *sub = NULL, *note = NULL, *tip = NULL;
    char peak[32], dur[32], heap[160] = "";
    const char *exe = s->exe ? vh_base_name(s->exe) : "?";
    int rc = -ENOMEM;

    /* the highest point, for the subtitle */
    uint64_t top = s->init_live, top_t = s->from;
    for (size_t i = 0; i < s->nrows; i++)
        if (s->rows[i].max_live > top) {
            top = s->rows[i].max_live;
            top_t = s->rows[i].start;
        }
    si_bytes(top, peak, sizeof peak);
    vh_fmt_duration(p->bin_ns, 1, dur, sizeof dur);
    if (s->heap)
        snprintf(heap, sizeof heap, " in heap %s", s->heap);
    else if (s->nheaps > 1)
        snprintf(heap, sizeof heap, " (%zu heaps summed)", s->nheaps);
    char est[96];
    if (!(title = vh_xasprintf("Heap memory of %s (pid %" PRId64 ")%s%s", exe, s->pid, heap,
                               estimate_label(s, est, sizeof est))))
        goto out;
    if (s->ntop)
        sub = vh_xasprintf("live bytes at the end of every %s%s, by the top %zu of %zu %s "
                        "ranked by %s; highest %s at %.3f s",
                        dur, s->per_event ? " (from single events)" : "", s->ntop, s->nstacks,
                        s->by->unit, s->by->what, peak, (double)top_t / 1e9);
    else
        sub = vh_xasprintf("live bytes at the end of every %s; highest %s at %.3f s", dur, peak,
                        (double)top_t / 1e9);
    if (!sub)
        goto out;
    struct svg_chart_opts o = {
        .title = title, .subtitle = sub, .x_title = s->x_title,
        .y_title = "consumed memory (live bytes requested)", .x_axis = SVG_AXIS_TIME_NS,
        .y_axis = SVG_AXIS_BYTES,
    };
    if (!(ch = svg_chart__new(&o)) || (rc = svg_chart__set_x(ch, p->x, p->n)))
        goto out;
    for (size_t k = 0; k < s->ntop; k++) {
        const struct vh_series_top *t = &s->tops[k];
        char m[32];
        if (s->by->bytes)
            si_bytes((uint64_t)t->measure, m, sizeof m);
        else
            snprintf(m, sizeof m, "%" PRId64, t->measure);
        free(note);
        free(tip);
        note = vh_xasprintf("%s %s%s%s%s%s", s->by->legend, m, t->where ? " \xc2\xb7 " : "",
                         t->where ? t->where : "", s->nheaps > 1 ? " \xc2\xb7 " : "",
                         s->nheaps > 1 ? t->heap : "");
        tip = vh_xasprintf("#%zu %s (%s %s)\n%s", k + 1, t->name, s->by->legend, m,
                        t->text ? t->text : "");
        if (!note || !tip) {
            rc = -ENOMEM;
            goto out;
        }
        struct svg_series a = { .style = SVG_AREA, .label = t->name, .note = note,
                                .tooltip = tip, .y = p->stack[k] };
        if ((rc = svg_chart__add(ch, &a)))
            goto out;
    }
    int any_other = 0;
    for (size_t i = 0; i < p->n; i++)
        any_other |= p->other[i] > 0;
    if (any_other || !s->ntop) {
        size_t rest = s->nstacks > s->ntop ? s->nstacks - s->ntop : 0;
        free(note);
        note = s->ntop ? vh_xasprintf("%zu more stack%s", rest, rest == 1 ? "" : "s") : NULL;
        struct svg_series a = {
            .style = SVG_AREA, .label = s->ntop ? "other stacks" : "all stacks",
            .note = note, .color = s->ntop ? "#bab0ac" : svg_palette(0), .y = p->other,
        };
        if ((rc = svg_chart__add(ch, &a)))
            goto out;
    }
    double max_rss = -1, max_live = 0;
    for (size_t i = 0; i < p->n; i++) {
        double live = p->other[i];
        for (size_t k = 0; k < s->ntop; k++)
            live += p->stack[k][i];
        max_live = fmax(max_live, live);
        if (isfinite(p->rss[i]))
            max_rss = fmax(max_rss, p->rss[i]);
    }
    if (max_rss >= 0) {
        /* RSS far above a small heap would flatten it to a sliver: then
         * the scale is the heap's, and RSS runs off the top */
        int off = max_rss > 4 * max_live && max_live > 0;
        char rss_note[64], b[32];
        if (off)
            snprintf(rss_note, sizeof rss_note, "up to %s: above the scale",
                     si_bytes((uint64_t)max_rss, b, sizeof b));
        else
            snprintf(rss_note, sizeof rss_note, "resident memory of the whole process");
        struct svg_series l = { .style = SVG_LINE, .label = "RSS", .note = rss_note,
                                .no_scale = off,
                                .tooltip = "RSS: resident set size of the process, as sampled "
                                           "while it ran (heap, code, stacks, vheap's own)",
                                .color = "#222222", .y = p->rss };
        rc = svg_chart__add(ch, &l);
    }
out:
    free(title);
    free(sub);
    free(note);
    free(tip);
    return chart_end(ch, s, rc, out);
}

static int calls_chart(const struct vh_series *s, const struct pts *p, struct svg_chart **out)
{
    struct svg_chart *ch = NULL;
    char *title = NULL, *sub = NULL, *ytitle = NULL, dur[32], heap[160] = "";
    const char *exe = s->exe ? vh_base_name(s->exe) : "?";
    uint64_t na = 0, nf = 0, nt = 0;
    int rc = -ENOMEM;

    for (size_t i = 0; i < s->nrows; i++) {
        na += s->rows[i].allocs;
        nf += s->rows[i].frees;
        nt += s->rows[i].temporary;
    }
    vh_fmt_duration(p->bin_ns, 1, dur, sizeof dur);
    if (s->heap)
        snprintf(heap, sizeof heap, " in heap %s", s->heap);
    char est[96];
    if (!(title = vh_xasprintf("Allocator calls of %s (pid %" PRId64 ")%s%s", exe, s->pid, heap,
                               estimate_label(s, est, sizeof est))) ||
        !(sub = vh_xasprintf("per %s: allocations above the axis, frees below; %" PRIu64
                          " allocations (%" PRIu64 " temporary) and %" PRIu64 " frees in all",
                          dur, na, nt, nf)) ||
        !(ytitle = vh_xasprintf("calls per %s", dur)))
        goto out;
    struct svg_chart_opts o = {
        .title = title, .subtitle = sub, .x_title = s->x_title,
        .y_title = ytitle, .x_axis = SVG_AXIS_TIME_NS, .y_axis = SVG_AXIS_NUMBER,
    };
    if (!(ch = svg_chart__new(&o)) || (rc = svg_chart__set_x(ch, p->x, p->n)))
        goto out;
    struct svg_series a = { .style = SVG_BARS, .label = "allocations",
                            .note = nt ? "malloc, new ...: the lasting ones" : "malloc, new ...",
                            .color = "#4e79a7", .y = p->allocs };
    struct svg_series t = { .style = SVG_BARS, .label = "temporary allocations",
                            .note = "freed before the next allocation",
                            .color = "#76b7b2", .y = p->temp };
    struct svg_series f = { .style = SVG_BARS, .label = "frees", .note = "drawn below the axis",
                            .color = "#f28e2b", .y = p->frees };
    rc = svg_chart__add(ch, &a);
    if (!rc && nt)
        rc = svg_chart__add(ch, &t);
    if (!rc)
        rc = svg_chart__add(ch, &f);
out:
    free(title);
    free(sub);
    free(ytitle);
    return chart_end(ch, s, rc, out);
}

int vh_series_draw(const char *cmd, const struct vh_series *s, const char *path)
{
    struct pts p;
    struct svg_chart *mem = NULL, *calls = NULL;
    char *path2 = allocs_path(path);
    int rc = -ENOMEM;

    if (!path2 || (rc = pts_make(s, &p)) || (rc = memory_chart(s, &p, &mem)) ||
        (rc = calls_chart(s, &p, &calls))) {
        if (rc == -ENOMEM || !path2)
            vh_errorf(cmd, "out of memory while drawing");
        else
            vh_errorf(cmd, "drawing failed (%s)", strerror(-rc));
        goto out;
    }
    if ((rc = svg_chart__write_file(mem, path))) {
        vh_errorf(cmd, "writing %s: %s", path, strerror(-rc));
        goto out;
    }
    if ((rc = svg_chart__write_file(calls, path2))) {
        vh_errorf(cmd, "writing %s: %s", path2, strerror(-rc));
        goto out;
    }
    vh_errorf(cmd, "wrote %s (memory by stack) and %s (allocator calls); "
                         "open them in a web browser", path, path2);
out:
    if (path2)
        pts_free(&p, s->ntop);
    svg_chart__free(mem);
    svg_chart__free(calls);
    free(path2);
    return rc;
}
