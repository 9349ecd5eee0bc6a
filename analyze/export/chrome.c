/* export/chrome.c — Trace Event JSON (the format of chrome://tracing and
 * Perfetto, and of Vere's `urbit -j` traces): counter tracks of the live
 * bytes of each heap and of RSS, marks as instant events. Heaps of the same
 * name share one track (a program that names nested arenas by depth gets a
 * track per depth, not thousands); their live bytes are replayed from the
 * event stream. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/store/db.h"
#include "analyze/store/events.h"
#include "analyze/export/export.h"
#include "analyze/util/grow.h"

struct ch {
    struct vh_export *x;
    struct vh_xout *o;
    uint64_t base;                 /* ns added to every time: the epoch offset */
    int first;                     /* no event written yet                    */
    uint64_t nevents;
};

/* Wall-clock times are whole microseconds, as in `urbit -j` traces (a
 * double holds no more of an epoch time); times since the start keep ns. */
static void ts(struct ch *c, uint64_t time_ns)
{
    uint64_t t = c->base + time_ns;
    if (c->base)
        vh_xout__printf(c->o, "\"ts\":%" PRIu64, t / 1000u);
    else
        vh_xout__printf(c->o, "\"ts\":%" PRIu64 ".%03" PRIu64, t / 1000u, t % 1000u);
}

static void begin(struct ch *c)
{
    vh_xout__puts(c->o, c->first ? "\n" : ",\n");
    c->first = 0;
    c->nevents++;
}

static void counter(struct ch *c, const char *name, const char *key, uint64_t time_ns,
                    uint64_t value)
{
    begin(c);
    vh_xout__puts(c->o, "{\"ph\":\"C\",\"cat\":\"vheap\",\"name\":");
    vh_xout__json_str(c->o, name);
    vh_xout__printf(c->o, ",\"pid\":%" PRId64 ",", c->x->pid);
    ts(c, time_ns);
    vh_xout__printf(c->o, ",\"args\":{\"%s\":%" PRIu64 "}}", key, value);
}

/* ---- heaps ---------------------------------------------------------------------- */

/* Live bytes are replayed from the event stream and written per quantum of
 * time (about 50000 over the run, at least 1 us): for each track that
 * changed within it, its highest value at the moment it was reached, then
 * its value after the quantum's last event, at that moment. Every sample
 * is exact in value and time; what a track did between two samples of one
 * quantum (a dip) is left out, never a peak. */
#define QUANTA 50000u

struct group {
    char *track;                   /* "heap NAME"                            */
    uint64_t live, max, t_max, t_last;
    int touched, started;
};

struct tracks {
    struct ch *c;
    struct vh_strtab *names;
    struct vh_map *heap;           /* heap id -> group id (0: not chosen)    */
    struct group *g;               /* [1 .. names count]                     */
    size_t gcap;
    uint32_t *touched;
    size_t ntouched;
    uint64_t samples;
};

static void flush(struct tracks *t)
{
    for (size_t i = 0; i < t->ntouched; i++) {
        struct group *g = &t->g[t->touched[i]];
        if (!g->started) {
            counter(t->c, g->track, "live_bytes", 0, 0);     /* from the start */
            g->started = 1;
            t->samples++;
        }
        if (g->t_max < g->t_last && g->max != g->live) {
            counter(t->c, g->track, "live_bytes", g->t_max, g->max);
            t->samples++;
        }
        counter(t->c, g->track, "live_bytes", g->t_last, g->live);
        t->samples++;
        g->touched = 0;
    }
    t->ntouched = 0;
}

/* The track of a heap, made on first use; 0 when the heap is not chosen. */
static int group_of(struct tracks *t, uint32_t heap_id, sqlite3_stmt *name_q, uint32_t *gid)
{
    struct vh_map_ent *e = vh_map__find(t->heap, heap_id, 0);
    int added, existed;
    if (e) {
        *gid = (uint32_t)e->v1;
        return 0;
    }
    *gid = 0;
    if (vh_export_heap_on(t->c->x, heap_id)) {
        sqlite3_reset(name_q);
        sqlite3_bind_int64(name_q, 1, heap_id);
        const char *name = sqlite3_step(name_q) == SQLITE_ROW
                               ? (const char *)sqlite3_column_text(name_q, 0) : NULL;
        char fallback[32];
        if (!name) {
            snprintf(fallback, sizeof fallback, "%" PRIu32, heap_id);
            name = fallback;
        }
        if (!(*gid = vh_strtab__intern(t->names, name, strlen(name), &added)))
            return -ENOMEM;
        if (*gid > t->gcap) {
            size_t cap = t->gcap ? t->gcap * 2 : 16;
            while (cap < *gid)
                cap *= 2;
            struct group *ng = realloc(t->g, (cap + 1) * sizeof *ng);
            if (!ng)
                return -ENOMEM;
            t->g = ng;
            memset(t->g + t->gcap + 1, 0, (cap - t->gcap) * sizeof *t->g);
            uint32_t *nt = realloc(t->touched, (cap + 1) * sizeof *nt);
            if (!nt)
                return -ENOMEM;
            t->touched = nt;
            t->gcap = cap;
        }
        /* a sampled capture's counters are estimates: their names say so */
        if (added && asprintf(&t->g[*gid].track, "heap %s%s", name,
                              t->c->x->rate ? " (estimate)" : "") < 0) {
            t->g[*gid].track = NULL;
            return -ENOMEM;
        }
    }
    if (!(e = vh_map__insert(t->heap, heap_id, 0, &existed)))
        return -ENOMEM;
    e->v1 = *gid;
    return 0;
}

static int heap_tracks(struct ch *c, uint64_t *nsamples, size_t *ntracks, uint64_t *quantum)
{
    struct vh_export *x = c->x;
    struct tracks t = { .c = c };
    struct evstream *es = NULL;
    sqlite3_stmt *name_q = NULL;
    struct vh_ev ev;
    char err[256];
    uint64_t q = x->runtime_ns / QUANTA + 1, cur = 0;
    int rc = -ENOMEM;

    if (q < 1000)
        q = 1000;
    *quantum = q;
    if (!(t.names = vh_strtab__new()) || !(t.heap = vh_map__new()))
        goto out;
    if (db__meta_int(x->db, "events", -1) < 0) {
        vh_errorf(x->cmd, "this database has no event stream (made by an older vheap?): "
                                "load the capture again with `vheap-analyze load`");
        rc = -ENOTSUP;
        goto out;
    }
    if ((rc = vh_export_prepare(x, "SELECT name FROM heaps WHERE id = ?1", &name_q)))
        goto out;
    if ((rc = evstream__open(x->db, 0, &es, err, sizeof err))) {
        vh_errorf(x->cmd, "the event stream: %s", err);
        goto out;
    }
    while ((rc = evstream__next(es, &ev)) == 1) {
        vh_ev__weigh(&ev, x->rate);   /* sampled: estimates, as the DB's */
        uint32_t gid;
        int64_t delta;
        switch (ev.kind) {
        case VH_EV_ALLOC: delta = (int64_t)ev.size; break;
        case VH_EV_FREE: delta = -(int64_t)ev.size; break;
        case VH_EV_RESIZE: delta = (int64_t)(ev.size - ev.old_size); break;
        default: continue;
        }
        if ((rc = group_of(&t, ev.heap_id, name_q, &gid)))
            goto out;
        if (!gid)
            continue;
        if (ev.time / q != cur) {
            flush(&t);
            cur = ev.time / q;
        }
        struct group *g = &t.g[gid];
        g->live += (uint64_t)delta;
        if (!g->touched) {
            g->touched = 1;
            t.touched[t.ntouched++] = gid;
            g->max = g->live;
            g->t_max = ev.time;
        } else if (g->live > g->max) {
            g->max = g->live;
            g->t_max = ev.time;
        }
        g->t_last = ev.time;
    }
    if (rc < 0) {
        vh_errorf(x->cmd, "the event stream: %s", evstream__error(es));
        goto out;
    }
    flush(&t);
    *nsamples = t.samples;
    *ntracks = vh_strtab__count(t.names);
    rc = 0;
out:
    evstream__close(es);
    sqlite3_finalize(name_q);
    for (size_t i = 1; t.g && i <= t.gcap; i++)
        free(t.g[i].track);
    free(t.g);
    free(t.touched);
    vh_strtab__free(t.names);
    vh_map__free(t.heap);
    return rc;
}

/* ---- RSS and marks ---------------------------------------------------------------- */

static void rss_row(struct ch *c, sqlite3_stmt *st)
{
    int64_t t = sqlite3_column_int64(st, 0), b = sqlite3_column_int64(st, 1);
    counter(c, "RSS", "bytes", t > 0 ? (uint64_t)t : 0, b > 0 ? (uint64_t)b : 0);
}

static void mark_row(struct ch *c, sqlite3_stmt *st)
{
    int64_t t = sqlite3_column_int64(st, 0);
    begin(c);
    vh_xout__puts(c->o, "{\"ph\":\"i\",\"s\":\"p\",\"cat\":\"vheap.mark\",\"name\":");
    vh_xout__json_str(c->o, (const char *)sqlite3_column_text(st, 2));
    vh_xout__printf(c->o, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",", c->x->pid,
                    (int64_t)sqlite3_column_int64(st, 1));
    ts(c, t > 0 ? (uint64_t)t : 0);
    vh_xout__puts(c->o, "}");
}

/* Writes an event per row of `sql` with `row`, counting them in *n; a
 * failure is reported as "reading WHAT". */
static int each_row(struct ch *c, const char *sql, const char *what,
                    void (*row)(struct ch *c, sqlite3_stmt *st), uint64_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_export_prepare(c->x, sql, &st);
    *n = 0;
    if (rc)
        return rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        row(c, st);
        (*n)++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        vh_errorf(c->x->cmd, "reading %s: %s", what, sqlite3_errmsg(c->x->db));
        return -EIO;
    }
    return 0;
}

static int rss_track(struct ch *c, uint64_t *n)
{
    return each_row(c, "SELECT time, bytes FROM rss ORDER BY time", "rss", rss_row, n);
}

static int marks(struct ch *c, uint64_t *n)
{
    return each_row(c, "SELECT time, tid, label FROM marks ORDER BY time", "marks", mark_row, n);
}

/* --merge: the events of a JSON-array trace, copied as they are. urbit -j
 * writes "[ " and then "{...}, " lines and never closes the array, so the
 * text after '[' is taken up to the end of its last whole object.
 * The events themselves are not parsed: the trace's own writer vouches for
 * them. */
static int merge(struct ch *c, uint64_t *bytes)
{
    const char *path = c->x->merge;
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t len = 0, cap = 0, n;
    int rc = 0;

    *bytes = 0;
    if (!f) {
        vh_errorf(c->x->cmd, "--merge: cannot open %s: %s", path, strerror(errno));
        return -errno;
    }
    do {
        if (vh_reserve(&text, &cap, len + 65536, 1, 1 << 20)) {
            rc = -ENOMEM;
            goto out;
        }
        len += n = fread(text + len, 1, cap - len, f);
    } while (n);
    if (ferror(f)) {
        rc = -EIO;
        vh_errorf(c->x->cmd, "--merge: reading %s: %s", path, strerror(errno));
        goto out;
    }
    size_t a = 0, b = len;
    while (a < len && strchr(" \t\r\n", text[a]))
        a++;
    /* the last '}' that a ',' or ']' follows: the end of the last whole
     * event even when the writer was stopped in the middle of a line */
    for (size_t i = len; i > a; i--) {
        size_t j = i;
        if (text[i - 1] != '}')
            continue;
        while (j < len && strchr(" \t\r\n", text[j]))
            j++;
        if (b == len)
            b = i;                 /* the last '}' of all, if nothing better */
        if (j < len && (text[j] == ',' || text[j] == ']')) {
            b = i;
            break;
        }
    }
    if (b == len && (len == 0 || text[len - 1] != '}'))
        b = a + 1;                 /* no '}' at all: no events */
    if (a == len || text[a] != '[' || memchr(text, 0, len)) {
        rc = -EINVAL;
        vh_errorf(c->x->cmd, "--merge: %s is not a JSON array of trace events (as urbit -j "
                                   "writes)", path);
        goto out;
    }
    a++;
    while (a < b && strchr(" \t\r\n", text[a]))
        a++;
    if (a < b) {
        if (text[a] != '{') {
            rc = -EINVAL;
            vh_errorf(c->x->cmd, "--merge: %s: the array does not hold objects", path);
            goto out;
        }
        begin(c);
        vh_xout__write(c->o, text + a, b - a);
        *bytes = b - a;
    }
out:
    fclose(f);
    free(text);
    return rc;
}

int vh_export_chrome(struct vh_export *x)
{
    struct ch c = { .x = x, .o = x->out, .first = 1 };
    uint64_t nheap = 0, nrss = 0, nmarks = 0, quantum = 0;
    size_t ntracks = 0;
    int rc;

    if (x->clock == VH_CLOCK_WALL)
        c.base = (uint64_t)x->start_realtime_ns;
    vh_xout__puts(c.o, "{\"traceEvents\":[");
    begin(&c);
    vh_xout__printf(c.o, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRId64
                         ",\"args\":{\"name\":", x->pid);
    vh_xout__json_str(c.o, x->exe ? vh_export_basename(x->exe) : "vheap");
    vh_xout__puts(c.o, "}}");
    uint64_t merged = 0;
    if ((rc = heap_tracks(&c, &nheap, &ntracks, &quantum)) || (rc = rss_track(&c, &nrss)) ||
        (rc = marks(&c, &nmarks)) || (x->merge && (rc = merge(&c, &merged))))
        return rc;
    vh_xout__puts(c.o, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"source\":"
                       "\"vheap-analyze export\",\"clock\":");
    vh_xout__json_str(c.o, x->clock == VH_CLOCK_WALL ? "wall: us since the Unix epoch"
                                            : "start: us since the process started");
    vh_xout__puts(c.o, ",\"heaps\":");
    vh_xout__json_str(c.o, x->heap_desc);
    vh_xout__printf(c.o, ",\"start_realtime_ns\":%" PRId64 ",\"runtime_ns\":%" PRIu64
                         ",\"quantum_ns\":%" PRIu64 "}}\n",
                    x->start_realtime_ns, x->runtime_ns, quantum);
    char qb[32];
    if (quantum < 1000000)
        snprintf(qb, sizeof qb, "%g us", (double)quantum / 1e3);
    else
        snprintf(qb, sizeof qb, "%g ms", (double)quantum / 1e6);
    vh_export_note(x, "%s: Chrome trace: %zu heap track%s (%" PRIu64 " samples, quanta of %s),"
                      " RSS (%" PRIu64 " samples), %" PRIu64 " marks; times in us since %s",
                   vh_export_dest(x), ntracks,
                   ntracks == 1 ? "" : "s", nheap, qb,
                   nrss, nmarks,
                   x->clock == VH_CLOCK_WALL ? "the Unix epoch" : "the process started");
    if (x->merge)
        vh_export_note(x, "with the events of %s (%" PRIu64 " bytes)", x->merge, merged);
    return 0;
}
