/* timeline.c — what happens over time besides blocks: recording windows
 * (WINDOW), RSS samples, marks and tags, the program's end; and the
 * windows table at the end. */
#include <errno.h>
#include <stdlib.h>

#include "analyze/load/loader.h"

static void on_label(struct loader *L, const struct vh_event *ev, int is_tag)
{
    const struct vh_rec_label *r = (const struct vh_rec_label *)ev->rec;
    sqlite3_stmt *st = is_tag ? L->tl.ins_tag : L->tl.ins_mark;
    char *label = loader__rec_string(L, ev, sizeof *r);

    if (!label)
        return;
    sqlite3_bind_int64(st, 1, is_tag ? r->h.b : ev->time);
    if (is_tag) {
        sqlite3_bind_text(st, 2, label, -1, SQLITE_TRANSIENT);
    } else {
        sqlite3_bind_int64(st, 2, ev->tid);
        sqlite3_bind_text(st, 3, label, -1, SQLITE_TRANSIENT);
        spans__on_mark(L, ev->time, label);
    }
    loader__run(L, st);
    free(label);
}

void timeline__on_rss(struct loader *L, const struct vh_event *ev)
{
    const struct vh_rec_value *r = (const struct vh_rec_value *)ev->rec;

    sqlite3_bind_int64(L->tl.ins_rss, 1, (sqlite3_int64)ev->time);
    sqlite3_bind_int64(L->tl.ins_rss, 2, (sqlite3_int64)r->value);
    loader__run(L, L->tl.ins_rss);
    if (!L->tl.has_rss || r->value > L->tl.peak_rss) {
        L->tl.peak_rss = r->value;
        L->tl.peak_rss_time = ev->time;
        L->tl.has_rss = 1;
    }
}

/* WINDOW: recording on (a = 1) or paused (0) from here on. L->tl.windows
 * starts with one window open from time 0. A process started paused
 * (VHEAP_START=paused) writes a WINDOW 0 at its start, before any event (a
 * fork child of a paused parent too); a first "on" says the same of a
 * writer that wrote none: either way that first window never was. */
void timeline__on_window(struct loader *L, const struct vh_event *ev)
{
    int on = ev->rec->a != 0;

    if (!L->tl.windows_seen) {
        L->tl.windows_seen = 1;
        /* Paused from 0 when the header says so, or when recording first
         * turns on. A WINDOW 0 before any event is not enough: a program
         * may call vheap_stop() before its first allocation, and recording
         * was on from the start until then. */
        if (on || (capture__header(L->cap)->flags & VH_HDR_START_PAUSED)) {
            L->tl.nwindows = 0;
            L->tl.recording_off = 1;      /* paused from 0 (pause_start) */
            L->tl.pause_start = 0;
        }
    }
    if (on && L->tl.recording_off) {
        if (L->tl.nwindows == L->tl.capwindows) {
            size_t n = L->tl.capwindows * 2;
            struct window *p = realloc(L->tl.windows, n * sizeof *p);
            if (!p) {
                loader__fail(L, -ENOMEM, "out of memory");
                return;
            }
            L->tl.windows = p;
            L->tl.capwindows = n;
        }
        L->tl.windows[L->tl.nwindows++] = (struct window){ ev->time, UINT64_MAX };
        L->tl.recording_off = 0;
        L->tl.paused_ns += ev->time - L->tl.pause_start;
    } else if (!on && !L->tl.recording_off) {
        L->tl.windows[L->tl.nwindows - 1].end = ev->time;
        L->tl.recording_off = 1;
        L->tl.pause_start = ev->time;
    }
}

void timeline__on_mark(struct loader *L, const struct vh_event *ev)
{
    on_label(L, ev, 0);
}

void timeline__on_tag(struct loader *L, const struct vh_event *ev)
{
    on_label(L, ev, 1);
}

void timeline__on_end(struct loader *L, const struct vh_event *ev)
{
    (void)ev;
    L->tl.ended = 1;
}

int timeline__init(struct loader *L)
{
    struct ld_timeline *tl = &L->tl;

    if (!(tl->windows = malloc(8 * sizeof *tl->windows))) {
        loader__fail(L, -ENOMEM, "out of memory");
        return -1;
    }
    tl->capwindows = 8;
    tl->windows[tl->nwindows++] = (struct window){ 0, UINT64_MAX };
    tl->ins_rss = loader__prep(L, "INSERT INTO rss(time, bytes) VALUES (?,?)");
    tl->ins_mark = loader__prep(L, "INSERT INTO marks(time, tid, label) VALUES (?,?,?)");
    tl->ins_tag = loader__prep(L, "INSERT OR REPLACE INTO tags(id, label) VALUES (?,?)");
    return L->failed ? -1 : 0;
}

/* When recording was on (WINDOW records; one window from 0 when none). */
void timeline__write_windows(struct loader *L)
{
    sqlite3_stmt *st = loader__prep(L, "INSERT INTO windows(start_time, end_time) VALUES (?,?)");

    for (size_t i = 0; st && i < L->tl.nwindows && !L->failed; i++) {
        uint64_t end = L->tl.windows[i].end;
        sqlite3_bind_int64(st, 1, (sqlite3_int64)L->tl.windows[i].start);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)(end == UINT64_MAX ? L->tl.last_time : end));
        loader__run(L, st);
    }
    sqlite3_finalize(st);
}

void timeline__free(struct loader *L)
{
    struct ld_timeline *tl = &L->tl;
    sqlite3_stmt **sts[] = { &tl->ins_rss, &tl->ins_mark, &tl->ins_tag };

    for (size_t i = 0; i < sizeof sts / sizeof sts[0]; i++) {
        sqlite3_finalize(*sts[i]);
        *sts[i] = NULL;
    }
    free(tl->windows);
    tl->windows = NULL;
    tl->nwindows = tl->capwindows = 0;
}
