/* export/heaptrack.c — heaptrack's data file (format 3, as heaptrack_print
 * and heaptrack_gui 1.4 read it) from the DB's event stream: strings,
 * instruction pointers with their inline chains, the prefix tree of
 * stacks, allocation infos, then every '+' and '-' in order, with 'c'
 * millisecond stamps and 'R' RSS samples. In short: lowercase hex
 * everywhere (the reader drops a line with an uppercase digit), 'a'
 * indices are 0-based and '+'/'-' refer to them, everything else is
 * 1-based with 0 meaning none, strings are length-prefixed (format 3).
 *
 * Both readers constrain the order of lines:
 * - heaptrack_gui counts allocations per info in a list it grows when a
 *   '+' names the info just past its end: infos must be first used by '+'
 *   lines in index order, none skipped (an info only a '-' uses, or a
 *   dummy, makes it index past the list and crash).
 * - heaptrack_print calls a '-' temporary when the '+'/'-' line before was
 *   a '+' of the same info (not the same block; any thread). A free that
 *   vheap does not count so but would look so: the '+' before it is given
 *   a twin info (same size and stack, the next index, first used by that
 *   very '+'), so each '+' is held back until the next event shows what
 *   follows it.
 * - After a '-' its reader compares with info 0, so a '- 0' after a '-'
 *   would count as temporary. Info 0 belongs to one block only (the first
 *   allocation; later ones of its size and stack get another info), and
 *   while that block lives the lines after the last '+' are held too, so
 *   that its '-' can go right after that '+'. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/store/db.h"
#include "analyze/store/events.h"
#include "analyze/export/export.h"
#include "analyze/util/grow.h"
#include "analyze/render/output.h"

#define NO_INFO UINT64_MAX

struct ht {
    struct vh_export *x;
    struct vh_xout *o;
    sqlite3_stmt *q_stack, *q_frame, *q_inl;

    struct vh_strtab *strs;        /* heaptrack's string indices = ours      */
    struct vh_map *frame_ip;       /* frame id -> ip index                   */
    struct vh_map *node;           /* (parent trace, ip) -> trace index      */
    struct vh_map *stack_trace;    /* stack id -> trace index                */
    struct vh_map *info;           /* (size, trace) -> info index            */
    struct vh_map *live;           /* (heap, addr) -> info index             */
    struct vh_map *tids, *other_heaps;
    uint64_t nips, ntraces, ninfos;
    uint64_t *info_size, *info_trace, *info_twin;
    size_t info_cap;

    /* The last '+' (not yet written) and the lines after it. */
    int held;
    uint64_t held_idx, held_addr;
    uint32_t held_heap;
    char *tail;
    size_t tail_len, tail_cap;
    int tail_minus;                /* a '-' is among them                    */
    int tail_first_match;          /* ... and the first matched the '+'      */
    int zero_pending;              /* info 0's block is freed, not written   */
    int plus_before;               /* the line before the held '+' is a '+'  */
    uint64_t idx_before;           /* ... of this info                       */
    int held_raised_peak;          /* the held '+' reached a new peak        */
    int64_t last_tid;              /* of the event before (-1: none)         */
    uint64_t ms;                   /* the last 'c' written                   */
    uint64_t page_size;

    /* what was written, and what was left out */
    uint64_t allocs, frees, live_bytes, peak, peak_time, rss_samples;
    uint64_t temp_vheap, temp_heaptrack, twins;
    uint64_t failed, moves, other_allocs, unknown;

    char *sbuf;                    /* sanitizing strings                     */
    size_t scap;
};

/* Text for the file: held back after a held '+', else written. */
static int out(struct ht *h, const void *p, size_t n)
{
    if (!h->held) {
        vh_xout__write(h->o, p, n);
        return 0;
    }
    while (h->tail_cap - h->tail_len < n)
        if (vh_grow(&h->tail, &h->tail_cap, h->tail_cap, 1, 4096))
            return -ENOMEM;
    memcpy(h->tail + h->tail_len, p, n);
    h->tail_len += n;
    return 0;
}

static int outf(struct ht *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int outf(struct ht *h, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap); /* numbers only: it fits */
    va_end(ap);
    return out(h, buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* "X a\n" or "X a b\n" in lowercase hex: the lines of every event, written
 * without printf (which would cost a third of an export's time). */
static int line(struct ht *h, char type, int nargs, uint64_t a, uint64_t b)
{
    static const char digits[] = "0123456789abcdef";
    char buf[2 + 2 * 17 + 1], *p = buf;
    uint64_t v[2] = { a, b };
    *p++ = type;
    for (int i = 0; i < nargs; i++) {
        char tmp[16];
        int n = 0;
        do
            tmp[n++] = digits[v[i] & 15];
        while (v[i] >>= 4);
        *p++ = ' ';
        while (n)
            *p++ = tmp[--n];
    }
    *p++ = '\n';
    return out(h, buf, (size_t)(p - buf));
}

/* Writes the held '+' and the lines after it; info 0's '-', when pending,
 * right after the '+' unless the '+' is matched by its own '-' (then it
 * waits for the next '+': see plus). */
static void release(struct ht *h)
{
    if (!h->held)
        return;
    h->held = 0;
    line(h, '+', 1, h->held_idx, 0);     /* not held now: cannot fail */
    h->plus_before = !h->tail_minus;
    h->idx_before = h->held_idx;
    if (h->zero_pending && !h->tail_first_match) {
        line(h, '-', 1, 0, 0);
        h->zero_pending = 0;
        h->plus_before = 0;
    }
    vh_xout__write(h->o, h->tail, h->tail_len);
    h->tail_len = 0;
    h->tail_minus = h->tail_first_match = 0;
}

/* ---- interned tables ---------------------------------------------------------- */

/* The string's index, writing its 's' line when new; 0 for NULL or "". A
 * line break would end the record early: it becomes a space. */
static int str_id(struct ht *h, const char *s, uint64_t *id)
{
    size_t n = s ? strlen(s) : 0;
    int added;
    *id = 0;
    if (!n)
        return 0;
    if (vh_reserve(&h->sbuf, &h->scap, n + 1, 1, 256))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        h->sbuf[i] = s[i] == '\n' || s[i] == '\r' ? ' ' : s[i];
    uint32_t sid = vh_strtab__intern(h->strs, h->sbuf, n, &added);
    if (!sid)
        return -ENOMEM;
    if (added && (outf(h, "s %zx ", n) || out(h, h->sbuf, n) || out(h, "\n", 1)))
        return -ENOMEM;
    *id = sid;
    return 0;
}

static int col_str_id(struct ht *h, sqlite3_stmt *st, int col, uint64_t *id)
{
    return str_id(h, (const char *)sqlite3_column_text(st, col), id);
}

/* The ip index of a frame, writing its strings and 'i' line when new. */
static int frame_ip(struct ht *h, int64_t frame_id, uint64_t *ip)
{
    struct vh_map_ent *e = vh_map__find(h->frame_ip, (uint64_t)frame_id, 0);
    uint64_t mod = 0, fn = 0, file = 0, ifn, ifile;
    int rc, existed;

    if (e) {
        *ip = e->v1;
        return 0;
    }
    sqlite3_reset(h->q_frame);
    sqlite3_bind_int64(h->q_frame, 1, frame_id);
    if ((rc = sqlite3_step(h->q_frame)) != SQLITE_ROW) {
        vh_errorf(h->x->cmd, "frame %" PRId64 " is missing from the DB", frame_id);
        return -EIO;
    }
    uint64_t addr = (uint64_t)sqlite3_column_int64(h->q_frame, 0);
    int has_fn = sqlite3_column_type(h->q_frame, 1) != SQLITE_NULL;
    int64_t line = sqlite3_column_int64(h->q_frame, 3);
    int64_t ninl = sqlite3_column_int64(h->q_frame, 4);
    if ((rc = col_str_id(h, h->q_frame, 5, &mod)) || (rc = col_str_id(h, h->q_frame, 1, &fn)) ||
        (rc = col_str_id(h, h->q_frame, 2, &file)))
        return rc;
    /* The inline chain's strings must be written before the 'i' line. */
    uint64_t (*chain)[3] = NULL;
    size_t nchain = 0, cap = 0;
    if (has_fn && ninl > 0) {
        sqlite3_reset(h->q_inl);
        sqlite3_bind_int64(h->q_inl, 1, frame_id);
        while ((rc = sqlite3_step(h->q_inl)) == SQLITE_ROW) {
            if (vh_grow(&chain, &cap, nchain, sizeof *chain, 8)) {
                free(chain);
                return -ENOMEM;
            }
            if ((rc = col_str_id(h, h->q_inl, 0, &ifn)) ||
                (rc = col_str_id(h, h->q_inl, 1, &ifile))) {
                free(chain);
                return rc;
            }
            int64_t il = sqlite3_column_int64(h->q_inl, 2);
            chain[nchain][0] = ifn;
            chain[nchain][1] = ifile;
            chain[nchain][2] = il > 0 ? (uint64_t)il : 0;
            nchain++;
        }
        if (rc != SQLITE_DONE) {
            free(chain);
            vh_errorf(h->x->cmd, "reading the inline frames of frame %" PRId64 ": %s",
                      frame_id, sqlite3_errmsg(h->x->db));
            return -EIO;
        }
    }
    /* heaptrack stores the return address - 1, so that it names the call */
    rc = outf(h, "i %" PRIx64 " %" PRIx64, addr ? addr - 1 : 0, mod);
    if (has_fn) {
        rc = rc ? rc : outf(h, " %" PRIx64 " %" PRIx64 " %" PRIx64, fn, file,
                            line > 0 ? (uint64_t)line : 0);
        for (size_t i = 0; i < nchain && !rc; i++)
            rc = outf(h, " %" PRIx64 " %" PRIx64 " %" PRIx64, chain[i][0], chain[i][1],
                      chain[i][2]);
    }
    rc = rc ? rc : out(h, "\n", 1);
    free(chain);
    if (rc)
        return rc;
    if (!(e = vh_map__insert(h->frame_ip, (uint64_t)frame_id, 0, &existed)))
        return -ENOMEM;
    e->v1 = *ip = ++h->nips;
    return 0;
}

/* The trace index of a stack: its frames from the outermost in, one node
 * of the prefix tree per (parent, ip). Stack 0 (none recorded) is trace 0. */
static int stack_trace(struct ht *h, uint32_t stack_id, uint64_t *trace)
{
    struct vh_map_ent *e = vh_map__find(h->stack_trace, stack_id, 0);
    int64_t *frames = NULL;
    size_t n = 0, cap = 0;
    int rc, existed;

    if (e) {
        *trace = e->v1;
        return 0;
    }
    sqlite3_reset(h->q_stack);
    sqlite3_bind_int64(h->q_stack, 1, stack_id);
    while ((rc = sqlite3_step(h->q_stack)) == SQLITE_ROW) {
        if (vh_grow(&frames, &cap, n, sizeof *frames, 64)) {
            free(frames);
            return -ENOMEM;
        }
        frames[n++] = sqlite3_column_int64(h->q_stack, 0);
    }
    if (rc != SQLITE_DONE) {
        free(frames);
        vh_errorf(h->x->cmd, "reading stack %" PRIu32 ": %s", stack_id,
                  sqlite3_errmsg(h->x->db));
        return -EIO;
    }
    uint64_t parent = 0;
    for (size_t i = n; i-- > 0;) {
        uint64_t ip;
        if ((rc = frame_ip(h, frames[i], &ip))) {
            free(frames);
            return rc;
        }
        struct vh_map_ent *ne = vh_map__insert(h->node, parent, ip, &existed);
        if (!ne) {
            free(frames);
            return -ENOMEM;
        }
        if (!existed) {
            ne->v1 = ++h->ntraces;
            if ((rc = line(h, 't', 2, ip, parent))) {
                free(frames);
                return rc;
            }
        }
        parent = ne->v1;
    }
    free(frames);
    if (!(e = vh_map__insert(h->stack_trace, stack_id, 0, &existed)))
        return -ENOMEM;
    e->v1 = *trace = parent;
    return 0;
}

/* A new 'a' line: its index. `before_held`: the line goes before the held
 * '+' (which is to use it). */
static int new_info(struct ht *h, uint64_t size, uint64_t trace, uint64_t *idx, int before_held)
{
    if (h->ninfos >= h->info_cap) {
        size_t cap = h->info_cap ? h->info_cap * 2 : 1024;
        uint64_t *s = realloc(h->info_size, cap * sizeof *s);
        if (!s)
            return -ENOMEM;
        h->info_size = s;
        uint64_t *t = realloc(h->info_trace, cap * sizeof *t);
        if (!t)
            return -ENOMEM;
        h->info_trace = t;
        uint64_t *w = realloc(h->info_twin, cap * sizeof *w);
        if (!w)
            return -ENOMEM;
        h->info_twin = w;
        h->info_cap = cap;
    }
    *idx = h->ninfos++;
    h->info_size[*idx] = size;
    h->info_trace[*idx] = trace;
    h->info_twin[*idx] = NO_INFO;
    int held = h->held;
    if (before_held)
        h->held = 0;
    int rc = line(h, 'a', 2, size, trace);
    h->held = held;
    return rc;
}

/* The allocation info of (size, stack), writing what it needs when new. */
static int info_of(struct ht *h, uint64_t size, uint32_t stack_id, uint64_t *idx)
{
    uint64_t trace;
    int rc, existed;
    if ((rc = stack_trace(h, stack_id, &trace)))
        return rc;
    struct vh_map_ent *e = vh_map__insert(h->info, size, trace, &existed);
    if (!e)
        return -ENOMEM;
    if (existed && e->v1) {
        *idx = e->v1;
        return 0;
    }
    /* new, or info 0, which only the first allocation uses (see the top) */
    if ((rc = new_info(h, size, trace, idx, 0)))
        return rc;
    if ((e = vh_map__find(h->info, size, trace)))
        e->v1 = *idx;
    return 0;
}

/* ---- events ------------------------------------------------------------------------ */

static int stamp(struct ht *h, uint64_t time_ns)
{
    uint64_t ms = time_ns / 1000000u;
    if (ms <= h->ms)
        return 0;
    h->ms = ms;
    return line(h, 'c', 1, ms, 0);
}

static int plus(struct ht *h, const struct vh_ev *ev)
{
    uint64_t idx;
    int rc, existed;
    if ((rc = info_of(h, ev->size, ev->stack_id, &idx)))
        return rc;
    struct vh_map_ent *e = vh_map__insert(h->live, ev->heap_id, ev->addr, &existed);
    if (!e)
        return -ENOMEM;
    e->v1 = idx;
    if (h->zero_pending && h->held && h->tail_first_match &&
        h->live_bytes + ev->size + h->info_size[0] > h->peak) {
        /* waiting past this '+' would raise heaptrack's peak: written here
         * it is counted temporary (the export says so) */
        if ((rc = line(h, '-', 1, 0, 0)))
            return rc;
        h->zero_pending = 0;
        h->temp_heaptrack++;
    }
    release(h);
    h->held = 1;
    h->held_idx = idx;
    h->held_heap = ev->heap_id;
    h->held_addr = ev->addr;
    h->allocs++;
    h->live_bytes += ev->size;
    h->held_raised_peak = h->live_bytes > h->peak;
    if (h->live_bytes > h->peak) {
        h->peak = h->live_bytes;
        h->peak_time = ev->time;
    }
    return 0;
}

/* The '-' of the live block at (heap, addr); `temporary`: vheap counts it. */
static int minus(struct ht *h, uint32_t heap, uint64_t addr, int temporary)
{
    struct vh_map_ent *e = vh_map__find(h->live, heap, addr);
    int rc;
    if (!e) {
        h->unknown++;              /* cannot happen in a stream read whole */
        return 0;
    }
    uint64_t idx = e->v1;
    vh_map__remove(h->live, e);
    h->temp_vheap += temporary != 0;
    h->frees++;
    h->live_bytes -= h->info_size[idx];
    if (h->held && !h->tail_minus && h->held_idx == idx) {
        /* right after a '+' of its info: heaptrack_print calls it temporary;
         * a twin cannot help when the block is that '+''s own */
        int own = h->held_heap == heap && h->held_addr == addr;
        if (!temporary && idx && !own) {
            uint64_t twin = h->info_twin[idx];
            if (twin == NO_INFO) {
                if ((rc = new_info(h, h->info_size[idx], h->info_trace[idx], &twin, 1)))
                    return rc;
                h->info_twin[idx] = twin;
            }
            h->held_idx = twin;
            if ((e = vh_map__find(h->live, h->held_heap, h->held_addr)))
                e->v1 = twin;
            h->twins++;
        } else {
            h->temp_heaptrack++;   /* vheap's too, or freed by another thread */
            h->tail_first_match = 1;
        }
    } else if (idx == 0) {
        /* after a '-' heaptrack_print would call it temporary: it goes right
         * after a '+' whose own '-' does not follow (see release) */
        h->zero_pending = 1;
        return 0;
    }
    h->tail_minus = 1;
    return line(h, '-', 1, idx, 0);
}

static int event(struct ht *h, const struct vh_ev *ev)
{
    int existed, temporary = (ev->flags & VH_EVF_TEMPORARY) != 0;
    if (!vh_export_heap_on(h->x, ev->heap_id)) {
        if (ev->kind == VH_EV_ALLOC || ev->kind == VH_EV_RESIZE) {
            h->other_allocs++;
            if (!vh_map__insert(h->other_heaps, ev->heap_id, 0, &existed))
                return -ENOMEM;
        }
        return 0;
    }
    if (ev->tid != h->last_tid && !vh_map__insert(h->tids, ev->tid, 0, &existed))
        return -ENOMEM;
    h->last_tid = ev->tid;
    switch (ev->kind) {
    case VH_EV_ALLOC: {
        int rc = stamp(h, ev->time);
        return rc ? rc : plus(h, ev);
    }
    case VH_EV_FREE: {
        int rc = stamp(h, ev->time);
        return rc ? rc : minus(h, ev->heap_id, ev->addr, temporary);
    }
    case VH_EV_RESIZE: {
        /* as heaptrack writes a realloc: '-' of the old block, '+' of the new */
        int rc = stamp(h, ev->time);
        rc = rc ? rc : minus(h, ev->heap_id, ev->addr, temporary);
        return rc ? rc : plus(h, ev);
    }
    case VH_EV_MOVE: {
        struct vh_map_ent *e = vh_map__find(h->live, ev->heap_id, ev->addr);
        h->moves++;
        if (!e)
            return 0;
        uint64_t idx = e->v1;
        vh_map__remove(h->live, e);
        if (!(e = vh_map__insert(h->live, ev->heap_id, ev->to, &existed)))
            return -ENOMEM;
        e->v1 = idx;
        return 0;
    }
    case VH_EV_FAILED:
        h->failed++;
        return 0;
    }
    return 0;
}

/* The RSS samples, merged into the events by time. */
struct rss {
    sqlite3_stmt *st;
    int have;
    uint64_t time;
    int64_t bytes;
};

static int rss_next(struct rss *r)
{
    int rc = sqlite3_step(r->st);
    r->have = rc == SQLITE_ROW;
    if (r->have) {
        int64_t t = sqlite3_column_int64(r->st, 0);
        r->time = t > 0 ? (uint64_t)t : 0;
        r->bytes = sqlite3_column_int64(r->st, 1);
    }
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -EIO;
}

/* RSS samples up to `until` (inclusive): 0, -EIO (SQLite) or -ENOMEM. */
static int rss_until(struct ht *h, struct rss *r, uint64_t until)
{
    while (r->have && r->time <= until) {
        if (stamp(h, r->time) ||
            line(h, 'R', 1, r->bytes > 0 ? (uint64_t)r->bytes / h->page_size : 0, 0))
            return -ENOMEM;
        h->rss_samples++;
        if (rss_next(r))
            return -EIO;
    }
    return 0;
}

/* The '-' of each block the query layer does not count as leaked
 * (temp.vh_suppressed: libstdc++'s emergency pool), as heaptrack, which
 * frees it at exit, writes it. */
static int free_suppressed(struct ht *h)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_export_prepare(h->x, "SELECT heap_id, address FROM main.leaks"
                                     " WHERE (heap_id, stack_id) IN"
                                     " (SELECT heap_id, stack_id FROM temp.vh_suppressed)",
                               &st);
    while (!rc && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        uint32_t heap = (uint32_t)sqlite3_column_int64(st, 0);
        rc = vh_export_heap_on(h->x, heap)
                 ? minus(h, heap, (uint64_t)sqlite3_column_int64(st, 1), 0)
                 : 0;
    }
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0) {
        vh_errorf(h->x->cmd, "reading the DB: %s", sqlite3_errmsg(h->x->db));
        rc = -EIO;
    }
    sqlite3_finalize(st);
    return rc;
}

/* ---- the file ------------------------------------------------------------------------ */

static void header(struct ht *h)
{
    struct vh_export *x = h->x;
    vh_xout__puts(h->o, "v 10400 3\n");
    vh_xout__printf(h->o, "# written by vheap-analyze export from pid %" PRId64 ", heap %s\n",
                    x->pid, x->heap_desc);
    const char *cmd = x->argv_text ? x->argv_text : x->exe;
    if (cmd && *cmd) {
        vh_xout__puts(h->o, "X ");
        for (const char *p = cmd; *p; p++)
            vh_xout__write(h->o, *p == '\n' || *p == '\r' ? " " : p, 1);
        vh_xout__write(h->o, "\n", 1);
    }
    vh_xout__printf(h->o, "I %" PRIx64 " %" PRIx64 "\n", h->page_size,
                    x->phys_pages > 0 ? (uint64_t)x->phys_pages : 0);
}

static void report(struct ht *h)
{
    struct vh_export *x = h->x;
    char peak[32], live[32], t[32];
    const char *file = vh_export_dest(x);
    static const char *const codec[] = { "", ", gzip", ", zstd" };

    vh_export_note(x, "%s: heaptrack data%s: heap %s, %" PRIu64 " allocations, %" PRIu64
                      " frees, peak %s at %s, leaked %s",
                   file, codec[vh_xout__codec(x->out)], x->heap_desc, h->allocs, h->frees,
                   out__human_bytes((int64_t)h->peak, peak, sizeof peak),
                   out__human_ns((int64_t)h->peak_time, t, sizeof t),
                   out__human_bytes((int64_t)h->live_bytes, live, sizeof live));

    /* What the format has no room for. */
    char other[160] = "", fail[64] = "", mv[64] = "";
    size_t nother = vh_map__count(h->other_heaps);
    if (nother)
        snprintf(other, sizeof other, ", %zu other heap%s (%" PRIu64 " allocations; --heap "
                                      "chooses)", nother, nother == 1 ? "" : "s",
                 h->other_allocs);
    if (h->failed)
        snprintf(fail, sizeof fail, ", %" PRIu64 " failed calls", h->failed);
    if (h->moves)
        snprintf(mv, sizeof mv, ", %" PRIu64 " block moves", h->moves);
    vh_export_note(x, "not in the heaptrack file: block addresses, usable sizes, thread ids "
                      "(%zu thread%s), tags, marks, times finer than 1 ms%s%s%s",
                   vh_map__count(h->tids), vh_map__count(h->tids) == 1 ? "" : "s", fail, mv,
                   other);
    if (x->nheaps > 1)
        vh_export_note(x, "%u heaps are merged into one: heaptrack_print's peak is the peak "
                          "of their sum", x->nheaps);
    if (h->temp_heaptrack != h->temp_vheap)
        vh_export_note(x, "heaptrack_print will count %" PRIu64 " temporary allocations where "
                          "vheap counts %" PRIu64 ": heaptrack takes a free right after the "
                          "last allocation of any thread, vheap of the same thread",
                       h->temp_heaptrack, h->temp_vheap);
    if (h->unknown)
        vh_export_note(x, "warning: %" PRIu64 " frees of blocks the event stream never "
                          "allocated were left out", h->unknown);
}

int vh_export_heaptrack(struct vh_export *x)
{
    struct ht h = { .x = x, .o = x->out, .last_tid = -1 };
    struct evstream *es = NULL;
    struct rss rss = { 0 };
    struct vh_ev ev;
    char err[256];
    int rc;

    h.page_size = x->page_size > 0 ? (uint64_t)x->page_size : 4096;
    if (db__meta_int(x->db, "events", -1) < 0) {
        vh_errorf(x->cmd, "this database has no event stream (made by an older vheap?): "
                                "load the capture again with `vheap-analyze load`");
        return -ENOTSUP;
    }
    if (!(h.strs = vh_strtab__new()) || !(h.frame_ip = vh_map__new()) ||
        !(h.node = vh_map__new()) || !(h.stack_trace = vh_map__new()) ||
        !(h.info = vh_map__new()) || !(h.live = vh_map__new()) || !(h.tids = vh_map__new()) ||
        !(h.other_heaps = vh_map__new())) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = vh_export_prepare(x, VH_SQL_STACK_UP("?1")
                                   "SELECT frame_id FROM up ORDER BY idx", &h.q_stack)) ||
        (rc = vh_export_prepare(x, "SELECT f.address, f.function, f.file, f.line,"
                                   "       f.inline_depth, m.path"
                                   " FROM frames f LEFT JOIN modules m ON m.id = f.module_id"
                                   " WHERE f.id = ?1", &h.q_frame)) ||
        (rc = vh_export_prepare(x, VH_SQL_FRAME_INLINES, &h.q_inl)) ||
        (rc = vh_export_prepare(x, "SELECT time, bytes FROM rss ORDER BY time", &rss.st)))
        goto out;
    if ((rc = rss_next(&rss)))
        goto sqlerr;

    header(&h);
    if ((rc = evstream__open(x->db, 0, &es, err, sizeof err))) {
        vh_errorf(x->cmd, "the event stream: %s", err);
        goto out;
    }
    while ((rc = evstream__next(es, &ev)) == 1) {
        vh_ev__weigh(&ev, x->rate);   /* sampled: estimates, as the DB's */
        if ((rc = rss_until(&h, &rss, ev.time)))
            goto rss_err;
        if ((rc = event(&h, &ev)))
            goto out;              /* said where it arose, or -ENOMEM */
    }
    if (rc < 0) {
        vh_errorf(x->cmd, "the event stream: %s", evstream__error(es));
        goto out;
    }
    if ((rc = rss_until(&h, &rss, UINT64_MAX)))
        goto rss_err;
    /* heaptrack frees libstdc++'s emergency pool at exit (shadow.h) */
    if ((rc = free_suppressed(&h)))
        goto out;
    /* heaptrack_print's runtime is the last 'c' + 1 ms */
    if ((rc = stamp(&h, x->runtime_ns)))
        goto out;
    /* Info 0's '-' still waiting (the last '+' is matched by its own '-'):
     * no '+' comes, so it goes before that last '+' when a '+' of another
     * info precedes it there and that '+' did not reach the peak (it lowers
     * heaptrack's live bytes at that one '+' only). */
    if (h.zero_pending && h.held && h.plus_before && h.idx_before && !h.held_raised_peak) {
        h.held = 0;
        line(&h, '-', 1, 0, 0);
        h.held = 1;
        h.zero_pending = 0;
    }
    release(&h);
    if (h.zero_pending) {
        line(&h, '-', 1, 0, 0);
        h.temp_heaptrack++;
    }
    report(&h);
    rc = 0;
    goto out;
rss_err:
    if (rc == -ENOMEM)
        goto out;
sqlerr:
    vh_errorf(x->cmd, "reading the DB: %s", sqlite3_errmsg(x->db));
out:
    evstream__close(es);
    sqlite3_finalize(rss.st);
    sqlite3_finalize(h.q_stack);
    sqlite3_finalize(h.q_frame);
    sqlite3_finalize(h.q_inl);
    vh_strtab__free(h.strs);
    vh_map__free(h.frame_ip);
    vh_map__free(h.node);
    vh_map__free(h.stack_trace);
    vh_map__free(h.info);
    vh_map__free(h.live);
    vh_map__free(h.tids);
    vh_map__free(h.other_heaps);
    free(h.info_size);
    free(h.info_trace);
    free(h.info_twin);
    free(h.sbuf);
    free(h.tail);
    return rc;
}
