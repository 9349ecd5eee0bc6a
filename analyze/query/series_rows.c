/* query/series_rows.c — a series (series.h) as rows for the renderer: the
 * top stacks, the marks and one row per interval or event, in table, JSON
 * or CSV (render/output.h). Apart from series.c, which computes the
 * numbers: `chart` draws them and prints none of this. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/query/series.h"
#include "analyze/store/events.h"
#include "analyze/util/diag.h"
#include "analyze/util/fmt.h"

/* OV_S of a local array (OV_S's NULL test would warn). */
static struct out_val ov_text(const char *s)
{
    return OV_S(s);
}

static const char *kind_name(uint8_t k)
{
    switch (k) {
    case VH_EV_ALLOC: return "alloc";
    case VH_EV_FREE: return "free";
    case VH_EV_RESIZE: return "resize";
    case VH_EV_MOVE: return "move";
    case VH_EV_FAILED: return "failed";
    }
    return "?";
}

static int time_decimals(const struct vh_series *s)
{
    if (s->per_event)
        return 6;
    return s->interval % 1000000 == 0 && s->from % 1000000 == 0 ? 3
         : s->interval % 1000 == 0 && s->from % 1000 == 0   ? 6
                                                       : 9;
}

/* The renderer keeps pointers to the columns until out__end(). */
struct cols {
    struct out_col stack[6];
    char measure_key[32];
};

static int emit_stacks(struct vh_series *s, enum out_format format, struct out *o,
                       struct cols *keep)
{
    enum { S_RANK, S_NAME, S_WHERE, S_HEAP, S_MEASURE, S_STACK, S_N };
    _Static_assert(S_N == sizeof keep->stack / sizeof keep->stack[0], "stack columns");
    struct out_col *cols = keep->stack;
    int heaps = s->by->heaps;
    char title[200];
    int rc;

    /* (a heap's measure is its peak; "heap" names another key) */
    snprintf(keep->measure_key, sizeof keep->measure_key, "%s",
             s->by->heaps ? "peak" : s->by->name);
    for (char *p = keep->measure_key; *p; p++)
        if (*p == '-')
            *p = '_';
    /* a heap's column (--by heap): its name and id; no place, no stack */
    unsigned stack_only = heaps ? OUT_F_NO_TABLE : 0;
    cols[S_RANK] = (struct out_col){ "rank", "#", OUT_INT, 0 };
    cols[S_NAME] = (struct out_col){ "name", heaps ? "heap" : "function", OUT_TEXT, 0 };
    cols[S_WHERE] = (struct out_col){ "where", "where", OUT_TEXT, stack_only };
    cols[S_HEAP] = (struct out_col){ "heap", "heap", OUT_TEXT, OUT_F_HIDE_SAME | stack_only };
    cols[S_MEASURE] = (struct out_col){ keep->measure_key, s->by->legend,
                                        s->by->bytes ? OUT_BYTES : OUT_INT, 0 };
    cols[S_STACK] = heaps ? (struct out_col){ "heap_id", "id", OUT_INT, 0 }
                          : (struct out_col){ "stack_id", "stack", OUT_INT, 0 };
    snprintf(title, sizeof title, "top %zu of %zu %s by %s (columns #1..#%zu; the rest is 'other')",
             s->ntop, s->nstacks, s->by->unit, s->by->what, s->ntop);
    if ((rc = out__section(o, s->by->unit, OUT_LIST, title, cols, S_N)))
        return rc;
    for (size_t i = 0; i < s->ntop; i++) {
        struct vh_series_top *t = &s->tops[i];
        struct out_val v[S_N] = {
            [S_RANK] = OV_I(i + 1),     [S_NAME] = OV_S(t->name),  [S_WHERE] = OV_S(t->where),
            [S_HEAP] = OV_S(t->heap),   [S_MEASURE] = OV_I(t->measure),
            [S_STACK] = OV_I(heaps ? t->heap_id : t->stack_id),
        };
        /* whole stacks only where a script reads them: tables stay short */
        struct out_stack *st = format == OUT_JSON ? t->stack : NULL;
        if (st)
            t->stack = NULL;
        if ((rc = out__row(o, v, st)))
            return rc;
    }
    return 0;
}

static int emit_marks(const struct vh_series *s, enum out_format format, struct out *o,
                      int dec)
{
    static const struct out_col json_cols[] = {
        { "time_ns", "time", OUT_NS, 0 }, { "tid", "thread", OUT_INT, 0 },
        { "label", "mark", OUT_TEXT, 0 },
    };
    static const struct out_col table_cols[] = {
        { "time", "time", OUT_TEXT, 0 }, { "tid", "thread", OUT_INT, 0 },
        { "label", "mark", OUT_TEXT, 0 },
    };
    int table = format == OUT_TABLE, rc;
    if ((rc = out__section(o, "marks", OUT_LIST, "marks", table ? table_cols : json_cols, 3)))
        return rc;
    for (size_t i = 0; i < s->nmarks; i++) {
        char t[40];
        vh_fmt_secs(s->marks[i].time, dec, t, sizeof t);
        struct out_val v[3] = { table ? ov_text(t) : OV_I(s->marks[i].time), OV_I(s->marks[i].tid),
                                OV_S(s->marks[i].label) };
        if ((rc = out__row(o, v, NULL)))
            return rc;
    }
    return 0;
}

/* The series columns, in order; some only per event, some only in JSON. */
enum {
    R_TIME, R_END, R_EVENT, R_SIZE, R_LIVE, R_MAX, R_ALLOCS, R_FREES, R_TEMP, R_BALLOC,
    R_BFREED, R_RSS, R_STACKS, R_OTHER, R_MARKS, R_N
};

/* The columns of the series section into cols (pos: where each R_ is),
 * the top stacks' keys and titles made into keys[]. Their count, or -ENOMEM. */
static int row_columns(const struct vh_series *s, enum out_format format, struct out_col *cols,
                       size_t pos[R_N], char **keys)
{
    int table = format == OUT_TABLE, json = format == OUT_JSON, per_event = s->per_event;
    size_t ncols = 0;
    /* one event per row: the counts and the maximum say nothing `event`
     * does not, so tables leave them out */
    unsigned in_events = per_event ? OUT_F_NO_TABLE : 0;
#define COL(id, ...) (pos[id] = ncols, cols[ncols++] = (struct out_col){ __VA_ARGS__ })
    if (table)
        COL(R_TIME, "time", "time", OUT_TEXT, 0);
    else
        COL(R_TIME, "time_ns", "time", OUT_NS, 0);
    COL(R_END, "end_ns", "end", OUT_NS, OUT_F_NO_TABLE);
    if (per_event) {
        COL(R_EVENT, "event", "event", OUT_TEXT, 0);
        COL(R_SIZE, "size", "size", OUT_BYTES, 0);
    }
    COL(R_LIVE, "live_bytes", "live", OUT_BYTES, 0);
    COL(R_MAX, "max_live_bytes", "max live", OUT_BYTES, in_events);
    COL(R_ALLOCS, "allocations", "allocs", OUT_INT, in_events);
    COL(R_FREES, "frees", "frees", OUT_INT, in_events);
    COL(R_TEMP, "temporary", "temporary", OUT_INT, per_event ? OUT_F_NO_TABLE : OUT_F_HIDE_ZERO);
    COL(R_BALLOC, "bytes_allocated", "allocated", OUT_BYTES, OUT_F_NO_TABLE);
    COL(R_BFREED, "bytes_freed", "freed", OUT_BYTES, OUT_F_NO_TABLE);
    COL(R_RSS, "rss_bytes", "RSS", OUT_BYTES, 0);
    pos[R_STACKS] = ncols;
    for (size_t k = 0; k < s->ntop; k++) {
        if (!(keys[2 * k] = vh_xasprintf("%s_%zu", s->by->heaps ? "heap" : "stack", k + 1)) ||
            !(keys[2 * k + 1] = vh_xasprintf("#%zu", k + 1)))
            return -ENOMEM;
        cols[ncols++] = (struct out_col){ keys[2 * k], keys[2 * k + 1], OUT_BYTES, 0 };
    }
    if (s->ntop)
        COL(R_OTHER, "other_bytes", "other", OUT_BYTES, 0);
    COL(R_MARKS, "marks", "marks", json ? OUT_WORDS : OUT_TEXT, OUT_F_HIDE_SAME);
#undef COL
    return (int)ncols;
}

/* Row r's marks into *mv: JSON a list (through words[]), else "a; b"
 * (labels may hold spaces, so a space cannot separate), where a table row
 * with many shows the first and last and a count; *joined holds the text
 * (the caller frees it). 0 or -ENOMEM. */
static int marks_cell(const struct vh_series *s, const struct vh_series_row *r,
                      enum out_format format, const char **words, char **joined,
                      struct out_val *mv)
{
    if (!r->nmarks) {
        *mv = OV_NULLV;
        return 0;
    }
    if (format == OUT_JSON) {
        for (uint32_t m = 0; m < r->nmarks; m++)
            words[m] = s->marks[r->mark0 + m].label;
        *mv = (struct out_val){ .kind = OV_WORDS, .words = words, .nwords = r->nmarks };
        return 0;
    }
    uint32_t nm = r->nmarks, show = format == OUT_TABLE && nm > 3 ? 2 : nm;
    size_t len = 32;
    for (uint32_t m = 0; m < nm; m++)
        len += strlen(s->marks[r->mark0 + m].label) + 2;
    char *j = *joined = malloc(len);
    if (!j)
        return -ENOMEM;
    j[0] = 0;
    for (uint32_t m = 0; m < show; m++) {
        uint32_t k = show < nm && m == 1 ? nm - 1 : m;
        if (m)
            strcat(j, show < nm ? " ... " : "; ");
        strcat(j, s->marks[r->mark0 + k].label);
    }
    if (show < nm)
        sprintf(j + strlen(j), " (%u marks)", nm);
    *mv = OV_S(j);
    return 0;
}

static int emit_rows(const char *cmd, const struct vh_series *s, enum out_format format,
                     struct out *o)
{
    int table = format == OUT_TABLE, dec = time_decimals(s), rc = -ENOMEM, ncols = 0;
    size_t pos[R_N] = { 0 };
    struct out_col *cols = calloc(R_N + s->ntop, sizeof *cols);
    struct out_val *v = calloc(R_N + s->ntop, sizeof *v);
    char **keys = calloc(s->ntop * 2 + 1, sizeof *keys);
    const char **words = calloc(s->nmarks + 1, sizeof *words);
    char *joined = NULL, title[160], dur[32];

    if (!cols || !v || !keys || !words || (ncols = row_columns(s, format, cols, pos, keys)) < 0)
        goto fail;
    vh_fmt_duration(s->interval, 0, dur, sizeof dur);
    if (s->per_event)
        snprintf(title, sizeof title, "%zu events", s->nrows);
    else
        snprintf(title, sizeof title, "%zu intervals of %s", s->nrows, dur);
    if ((rc = out__section(o, "series", OUT_LIST, title, cols, (size_t)ncols)))
        goto fail;
    for (size_t i = 0; i < s->nrows; i++) {
        const struct vh_series_row *r = &s->rows[i];
        char t[40];
        vh_fmt_secs(r->start, dec, t, sizeof t);
        v[pos[R_TIME]] = table ? ov_text(t) : OV_I(r->start);
        v[pos[R_END]] = OV_I(r->end);
        if (s->per_event) {
            v[pos[R_EVENT]] = OV_S(kind_name(r->kind));
            v[pos[R_SIZE]] = OV_I(r->size);
        }
        v[pos[R_LIVE]] = OV_I(r->live);
        v[pos[R_MAX]] = OV_I(r->max_live);
        v[pos[R_ALLOCS]] = OV_I(r->allocs);
        v[pos[R_FREES]] = OV_I(r->frees);
        v[pos[R_TEMP]] = OV_I(r->temporary);
        v[pos[R_BALLOC]] = OV_I(r->bytes_alloc);
        v[pos[R_BFREED]] = OV_I(r->bytes_freed);
        v[pos[R_RSS]] = r->rss >= 0 ? OV_I(r->rss) : OV_NULLV;
        uint64_t sum = 0;
        for (size_t k = 0; k < s->ntop; k++) {
            uint64_t b = s->slive[i * s->ntop + k];
            sum += b;
            v[pos[R_STACKS] + k] = OV_I(b);
        }
        if (s->ntop)
            v[pos[R_OTHER]] = OV_I(r->live > sum ? r->live - sum : 0);
        free(joined);
        joined = NULL;
        if ((rc = marks_cell(s, r, format, words, &joined, &v[pos[R_MARKS]])) ||
            (rc = out__row(o, v, NULL)))
            goto fail;
    }
    /* the renderer holds pointers into cols and keys until out__end() */
    if ((rc = out__end(o)) == -EIO)
        vh_errorf(cmd, "writing the output failed");
    o = NULL;
    goto out;
fail:
    out__abort(o);
    rc = rc ? rc : -ENOMEM;
out:
    free(joined);
    free(words);
    for (size_t k = 0; keys && k < s->ntop * 2; k++)
        free(keys[k]);
    free(keys);
    free(cols);
    free(v);
    return rc;
}

int vh_series__print(const char *cmd, struct vh_series *s, enum out_format format,
                     struct out *o)
{
    struct cols keep;
    int rc;
    if ((s->ntop && (rc = emit_stacks(s, format, o, &keep))) ||
        (rc = emit_marks(s, format, o, time_decimals(s)))) {
        out__abort(o);
        return rc;
    }
    return emit_rows(cmd, s, format, o);
}
