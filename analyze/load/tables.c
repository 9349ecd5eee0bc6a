/* tables.c — the end of a load: what was kept in memory goes to the DB.
 * The definitions the commands read are materialized here: leaks (the
 * blocks live at the end in heaps that still exist), stack_totals (per
 * (heap, stack, tag): totals, the values at the heap's peak, the growth
 * fit), heaps, threads, modules, the process and meta. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/load/loader.h"
#include "analyze/load/rows.h"
#include "analyze/util/json.h"
#include "analyze/util/diag.h"
#include "analyze/util/fmt.h"
#include "analyze/store/db.h"

static int by_key(const void *x, const void *y, void *arg)
{
    const struct agg *aggs = arg;
    const struct agg *a = &aggs[*(const uint32_t *)x], *b = &aggs[*(const uint32_t *)y];
    if (a->heap != b->heap)
        return a->heap < b->heap ? -1 : 1;
    if (a->stack != b->stack)
        return a->stack < b->stack ? -1 : 1;
    return (a->tag > b->tag) - (a->tag < b->tag);
}

/* Aggregate indices in (heap, stack, tag) order: the primary key order of
 * stack_stats, so its rows append to the B-tree. NULL when out of memory. */
static uint32_t *agg_order(struct loader *L)
{
    uint32_t *order = malloc((L->lv.naggs ? L->lv.naggs : 1) * sizeof *order);

    if (!order) {
        loader__fail(L, -ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < L->lv.naggs; i++)
        order[i] = (uint32_t)i;
    qsort_r(order, L->lv.naggs, sizeof *order, by_key, L->lv.aggs);
    return order;
}

/* One leaked block, copied out of the live map so that writing rows in key
 * order reads memory sequentially. */
struct leak_row {
    uint64_t addr, size, time;
    uint32_t stack, tid, slack, heap;
    uint16_t tag;
};

static int by_addr(const void *x, const void *y)
{
    uint64_t a = ((const struct leak_row *)x)->addr, b = ((const struct leak_row *)y)->addr;
    return (a > b) - (a < b);
}

/* The next live block of any heap not destroyed, heap by heap: start
 * with *id = *pos = 0; NULL after the last. */
static struct vh_live_block *live_next(const struct loader *L, size_t *id, size_t *pos)
{
    for (; *id < L->hp.nbyid; (*id)++, *pos = 0) {
        struct heap *h = L->hp.byid[*id];
        struct vh_live_block *b;
        if (h && !h->destroyed && (b = livemap__next(h->live, pos)))
            return b;
    }
    return NULL;
}

/* The live blocks of heaps that still exist, in (heap, stack, address)
 * order: a counting sort by (heap, stack) group, then each group by
 * address. Linear but for the small per-group sorts. */
static void write_leaks(struct loader *L, const uint32_t *order)
{
    struct rows rw;                    /* 8 KiB */
    int ok = !rows__open(L, &rw, "INSERT INTO leaks(heap_id, address, size, usable, stack_id, "
                                "tag_id, tid, time, class) VALUES", 9);
    rw.cols.null = 1u << 8;            /* class: not classified */
    uint32_t *group = malloc((L->lv.naggs ? L->lv.naggs : 1) * sizeof *group);
    size_t ngroups = 0, total = 0;
    size_t *start = NULL;
    struct leak_row *rows = NULL;
    struct vh_live_block *b;

    if (!group)
        goto oom;
    for (size_t k = 0; k < L->lv.naggs; k++) {
        const struct agg *a = &L->lv.aggs[order[k]], *p = k ? &L->lv.aggs[order[k - 1]] : NULL;
        if (!p || p->heap != a->heap || p->stack != a->stack)
            ngroups++;
        group[order[k]] = (uint32_t)ngroups - 1;
    }
    start = calloc(ngroups + 1, sizeof *start);
    if (!start)
        goto oom;
    for (size_t id = 0, pos = 0; (b = live_next(L, &id, &pos)); total++)
        start[group[b->agg] + 1]++;
    for (size_t g = 0; g < ngroups; g++)
        start[g + 1] += start[g];
    rows = malloc((total ? total : 1) * sizeof *rows);
    if (!rows)
        goto oom;
    for (size_t id = 0, pos = 0; (b = live_next(L, &id, &pos));) {
        const struct agg *a = &L->lv.aggs[b->agg];
        rows[start[group[b->agg]]++] = (struct leak_row){
            .addr = b->addr, .size = b->size, .time = b->time, .stack = a->stack,
            .tid = b->tid, .slack = b->slack, .heap = a->heap, .tag = a->tag };
    }
    /* start[g] is now the end of group g, i.e. the start of g + 1 */
    for (size_t g = 0, from = 0; g < ngroups; from = start[g++])
        if (start[g] - from > 1)
            qsort(rows + from, start[g] - from, sizeof *rows, by_addr);
    for (size_t i = 0; ok && i < total && !L->failed; i++) {
        const struct leak_row *r = &rows[i];
        rows__set(&rw, 0, r->heap);
        rows__set(&rw, 1, (sqlite3_int64)r->addr);
        rows__set(&rw, 2, (sqlite3_int64)r->size);
        rows__set(&rw, 3, (sqlite3_int64)(r->size + r->slack));
        rows__set(&rw, 4, r->stack);
        rows__set(&rw, 5, r->tag);
        rows__set(&rw, 6, r->tid);
        rows__set(&rw, 7, (sqlite3_int64)r->time);
        int cls = r->heap == VH_HEAP_SYSTEM ? reach__class(&L->reach, r->addr) : -1;
        if (cls < 0)
            rows__set_null(&rw, 8);
        else
            rows__set(&rw, 8, cls);
        rows__next(&rw);
    }
    L->leaks = total;
    goto out;
oom:
    loader__fail(L, -ENOMEM, "out of memory");
out:
    rows__close(&rw);
    free(group);
    free(start);
    free(rows);
}

/* A WITHOUT ROWID table filled in key order by INSERTs keeps its pages
 * about 88% full (SQLite splits a full leaf, as it must for inserts
 * anywhere); one copied whole by `INSERT INTO t SELECT * FROM u` from a
 * table of the same definition goes through SQLite's transfer
 * optimization, which fills them (as VACUUM does): 11% fewer pages for
 * stack_totals. So `table` is first filled as temp.vh_bulk (in memory:
 * temp_store), created here with its definition, then bulk_end copies it
 * over. Should SQLite not transfer, the copy is an ordinary INSERT: the
 * same rows, only less packed. */
static int bulk_begin(struct loader *L, const char *table)
{
    sqlite3_stmt *st = loader__prep(L, "SELECT sql FROM main.sqlite_schema WHERE type = 'table' AND name = ?");
    const char *sql;
    char *create = NULL;
    size_t n = strlen(table);
    int rc = -1;

    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    /* "CREATE TABLE <table> (" becomes "CREATE TEMP TABLE vh_bulk (" */
    if (sqlite3_step(st) == SQLITE_ROW && (sql = (const char *)sqlite3_column_text(st, 0)) &&
        !strncmp(sql, "CREATE TABLE ", 13) && !strncmp(sql + 13, table, n) &&
        sql[13 + n] == ' ') {
        create = sqlite3_mprintf("CREATE TEMP TABLE vh_bulk%s", sql + 13 + n);
        if (!create)
            loader__fail(L, -ENOMEM, "out of memory");
        else
            rc = loader__exec(L, create);
    } else {
        loader__fail(L, -EIO, "sqlite: no table %s to fill", table);
    }
    sqlite3_free(create);
    sqlite3_finalize(st);
    return rc;
}

static void bulk_end(struct loader *L, const char *table)
{
    char sql[160];

    snprintf(sql, sizeof sql, "INSERT INTO main.%s SELECT * FROM temp.vh_bulk; DROP TABLE temp.vh_bulk",
             table);
    if (!L->failed)
        loader__exec(L, sql);
}

/* stack_totals: per (heap, stack, tag) the totals (the stack_stats view)
 * and the fit of its live bytes to a line over the recorded time (trend.h;
 * 0 before its first allocation: the growth view). Heaps destroyed before
 * the end hold nothing and get no fit (NULL: no growth row), nor do
 * (heap, stack, tag)s that never allocated. */
static void write_stack_totals(struct loader *L, const uint32_t *order)
{
    struct rows *rw = malloc(sizeof *rw);
    /* the fit ends where recording did: at the end, or where it paused */
    uint64_t rec_end = rec_time(L, L->tl.recording_off ? L->tl.pause_start : L->tl.last_time);

    if (!rw || bulk_begin(L, "stack_totals")) {
        if (!rw)
            loader__fail(L, -ENOMEM, "out of memory");
        free(rw);
        return;
    }
    int ok = !rows__open(L, rw,
                        "INSERT INTO temp.vh_bulk(heap_id, stack_id, tag_id, allocations, failed, "
                        "bytes_allocated, usable_allocated, frees, temporary, peak_blocks, "
                        "peak_bytes, max_live_bytes, leaked_blocks, leaked_bytes, first_time, "
                        "mean_bytes, bytes_per_hour, r2) VALUES",
                        18);
    rw->cols.real = 1u << 16 | 1u << 17;
    rw->cols.null = 0xfu << 14;        /* the fit's four */
    for (size_t k = 0; ok && k < L->lv.naggs && !L->failed; k++) {
        struct agg *a = &L->lv.aggs[order[k]];
        const struct heap *h = L->hp.byid[a->heap];
        int leaked = !h->destroyed;

        agg_sync(a, h);                /* untouched since the peak: current */
        if (a->stack && !stacks__mark(L, a->stack)) {
            stacks__row(L, a->stack, 0, 0, 0);   /* referenced, never described */
            L->sk.missing_stacks++;
        }
        rows__set(rw, 0, a->heap);
        rows__set(rw, 1, a->stack);
        rows__set(rw, 2, a->tag);
        rows__set(rw, 3, (sqlite3_int64)a->allocations);
        rows__set(rw, 4, (sqlite3_int64)a->failed);
        rows__set(rw, 5, (sqlite3_int64)a->bytes);
        rows__set(rw, 6, (sqlite3_int64)a->usable);
        rows__set(rw, 7, (sqlite3_int64)a->frees);
        rows__set(rw, 8, (sqlite3_int64)a->temporary);
        rows__set(rw, 9, (sqlite3_int64)a->peak_blocks);
        rows__set(rw, 10, (sqlite3_int64)a->peak_bytes);
        rows__set(rw, 11, (sqlite3_int64)a->max_live_bytes);
        rows__set(rw, 12, leaked ? (sqlite3_int64)a->live_blocks : 0);
        rows__set(rw, 13, leaked ? (sqlite3_int64)a->live_bytes : 0);
        if (leaked && a->tr.first != UINT64_MAX) {
            struct trend_fit f = trend__fit(&a->tr, rec_end);
            rows__set(rw, 14, (sqlite3_int64)a->first_time);
            rows__set(rw, 15, (sqlite3_int64)llround(f.mean));
            rows__set_real(rw, 16, f.slope * 3600.0);
            rows__set_real(rw, 17, f.r2);
        } else {
            for (int c = 14; c < 18; c++)
                rows__set_null(rw, c);
        }
        rows__next(rw);
    }
    rows__close(rw);
    free(rw);
    bulk_end(L, "stack_totals");
}

static void write_heaps(struct loader *L)
{
    sqlite3_stmt *st = loader__prep(L, "INSERT INTO heaps(id, name, parent_id, base, size, create_time, "
                               "destroy_time, allocations, failed, frees, temporary, "
                               "bytes_allocated, peak_bytes, peak_blocks, peak_time, live_bytes, "
                               "live_blocks, leaked_bytes, leaked_blocks, unknown_frees, "
                               "tree_peak_bytes, tree_peak_time, tree_peak_heap_id) "
                               "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    if (!st)
        return;
    for (size_t id = 0; id < L->hp.nbyid && !L->failed; id++) {
        struct heap *h = L->hp.byid[id];
        if (!h)
            continue;
        heaps__series_flush(L, h);
        sqlite3_bind_int64(st, 1, h->id);
        sqlite3_bind_text(st, 2, h->name, -1, SQLITE_STATIC);
        if (h->has_parent)
            sqlite3_bind_int64(st, 3, h->parent);
        else
            sqlite3_bind_null(st, 3);
        if (h->base || h->size) {
            sqlite3_bind_int64(st, 4, (sqlite3_int64)h->base);
            sqlite3_bind_int64(st, 5, (sqlite3_int64)h->size);
        } else {
            sqlite3_bind_null(st, 4);
            sqlite3_bind_null(st, 5);
        }
        sqlite3_bind_int64(st, 6, (sqlite3_int64)h->create_time);
        loader__bind_int_if(st, 7, h->destroyed, h->destroy_time);
        sqlite3_bind_int64(st, 8, (sqlite3_int64)h->allocations);
        sqlite3_bind_int64(st, 9, (sqlite3_int64)h->failed);
        sqlite3_bind_int64(st, 10, (sqlite3_int64)h->frees);
        sqlite3_bind_int64(st, 11, (sqlite3_int64)h->temporary);
        sqlite3_bind_int64(st, 12, (sqlite3_int64)h->bytes_allocated);
        sqlite3_bind_int64(st, 13, (sqlite3_int64)h->peak_bytes);
        sqlite3_bind_int64(st, 14, (sqlite3_int64)h->peak_blocks);
        loader__bind_int_if(st, 15, h->has_peak, h->peak_time);
        sqlite3_bind_int64(st, 16, (sqlite3_int64)h->live_bytes);
        sqlite3_bind_int64(st, 17, (sqlite3_int64)h->live_blocks);
        sqlite3_bind_int64(st, 18, h->destroyed ? 0 : (sqlite3_int64)h->live_bytes);
        sqlite3_bind_int64(st, 19, h->destroyed ? 0 : (sqlite3_int64)h->live_blocks);
        sqlite3_bind_int64(st, 20, (sqlite3_int64)h->unknown_frees);
        loader__bind_int_if(st, 21, h->has_tree_peak, h->tree_peak);
        loader__bind_int_if(st, 22, h->has_tree_peak, h->tree_peak_time);
        loader__bind_int_if(st, 23, h->has_tree_peak, h->tree_peak_heap);
        loader__run(L, st);
    }
    sqlite3_finalize(st);
}

static void write_threads_modules(struct loader *L)
{
    sqlite3_stmt *st = loader__prep(L, "INSERT INTO threads(tid, first_time, last_time, allocations, "
                               "frees, exited) VALUES (?,?,?,?,?,?)");
    for (size_t i = 0; st && i < L->lv.nthreads; i++) {
        const struct thread *t = &L->lv.threads[i];
        sqlite3_bind_int64(st, 1, t->tid);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)t->first_time);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)t->last_time);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)t->allocations);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)t->frees);
        sqlite3_bind_int64(st, 6, t->exited);
        loader__run(L, st);
    }
    sqlite3_finalize(st);

    st = loader__prep(L, "INSERT INTO modules(id, path, build_id, bias, lo, hi, load_time, "
                 "unload_time, is_main) VALUES (?,?,?,?,?,?,?,?,?)");
    for (size_t i = 0; st && i < L->sk.nmods; i++) {
        const struct module *m = &L->sk.mods[i];
        sqlite3_bind_int64(st, 1, (sqlite3_int64)i + 1);
        sqlite3_bind_text(st, 2, m->path, -1, SQLITE_STATIC);
        loader__bind_text_or_null(st, 3, m->build_id[0] ? m->build_id : NULL);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)m->bias);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)m->lo);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)m->hi);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)m->load_time);
        loader__bind_int_if(st, 8, m->unloaded, m->unload_time);
        sqlite3_bind_int64(st, 9, m->is_main);
        loader__run(L, st);
    }
    sqlite3_finalize(st);
}

/* The header's NUL-separated argv as a JSON array of strings. */
static char *argv_json(struct loader *L)
{
    struct out_buf b = { 0 };
    size_t alen = 0;
    const char *a = capture__argv(L->cap, &alen);

    out_buf__add(&b, "[", 1);
    for (size_t i = 0; a && i < alen;) {
        size_t k = strnlen(a + i, alen - i);
        if (i)
            out_buf__add(&b, ",", 1);
        vh_json_str(out_buf__sink, &b, a + i, k, 0);
        i += k + 1;
    }
    out_buf__add(&b, "]", 1);
    if (b.oom) {
        free(b.p);
        loader__fail(L, -ENOMEM, "out of memory");
        return NULL;
    }
    return b.p;
}

static void write_process(struct loader *L)
{
    const struct vh_capture_header *hd = capture__header(L->cap);
    sqlite3_stmt *st = loader__prep(L, "INSERT INTO processes(id, pid, ppid, exe, argv, "
                               "start_realtime_ns, runtime_ns, ended, forked, exec_generation, "
                               "page_size, phys_pages, max_depth, unwind, dropped_events, "
                               "nested_events, stack_table_full, peak_rss, peak_rss_time, "
                               "sample_rate) VALUES (1,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    char exe[VH_EXE_MAX + 1];
    char *argv = argv_json(L);

    if (!st || !argv)
        goto out;
    memcpy(exe, hd->exe, VH_EXE_MAX);
    exe[VH_EXE_MAX] = 0;
    sqlite3_bind_int64(st, 1, hd->pid);
    sqlite3_bind_int64(st, 2, hd->ppid);
    sqlite3_bind_text(st, 3, exe, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, argv, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)hd->start_realtime_ns);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)L->tl.last_time);
    sqlite3_bind_int64(st, 7, L->tl.ended || (hd->flags & (VH_HDR_ENDED | VH_HDR_EXITED)));
    sqlite3_bind_int64(st, 8, !!(hd->flags & VH_HDR_FORKED));
    sqlite3_bind_int64(st, 9, hd->exec_generation);
    sqlite3_bind_int64(st, 10, hd->page_size);
    sqlite3_bind_int64(st, 11, (sqlite3_int64)hd->phys_pages);
    sqlite3_bind_int64(st, 12, hd->max_depth);
    sqlite3_bind_text(st, 13, hd->unwind == VH_UNWIND_FP ? "fp" : "libunwind", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 14, (sqlite3_int64)hd->dropped_events);
    sqlite3_bind_int64(st, 15, (sqlite3_int64)hd->nested_events);
    sqlite3_bind_int64(st, 16, (sqlite3_int64)hd->stack_table_full);
    if (L->tl.has_rss) {
        sqlite3_bind_int64(st, 17, (sqlite3_int64)L->tl.peak_rss);
        sqlite3_bind_int64(st, 18, (sqlite3_int64)L->tl.peak_rss_time);
    } else {
        sqlite3_bind_null(st, 17);
        sqlite3_bind_null(st, 18);
    }
    sqlite3_bind_int64(st, 19, (sqlite3_int64)L->lv.rate);
    loader__run(L, st);
out:
    free(argv);
    sqlite3_finalize(st);
}

static void meta_int(struct loader *L, sqlite3_stmt *st, const char *key, uint64_t v)
{
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)v);
    loader__run(L, st);
}

static void meta_text(struct loader *L, sqlite3_stmt *st, const char *key, const char *v)
{
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    loader__bind_text_or_null(st, 2, v);
    loader__run(L, st);
}

static void write_meta(struct loader *L, const struct capture_stamp *cs, const char *damage,
                       unsigned damage_count)
{
    sqlite3_stmt *st = loader__prep(L, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)");
    char when[32];
    struct tm tm;
    time_t now = time(NULL);

    if (!st)
        return;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    meta_int(L, st, "schema_version", VH_SCHEMA_VERSION);
    meta_text(L, st, "vheap_version", VHEAP_VERSION);
    meta_text(L, st, "capture_path", cs->path);
    meta_int(L, st, "capture_size", cs->size);
    meta_int(L, st, "capture_mtime_ns", cs->mtime_ns);
    meta_int(L, st, "capture_chunks", cs->chunks);
    meta_int(L, st, "capture_last_time", cs->last_time);
    meta_int(L, st, "capture_flags", cs->flags);
    meta_int(L, st, "coarse_clock_ns", cs->coarse_res_ns);
    if (cs->coarse_res_ns)
        meta_int(L, st, "precise_from", cs->precise_from);   /* UINT64_MAX: -1 */
    /* coarse times spread over their ticks (coarse.c): what charts say */
    meta_text(L, st, "times", L->tl.coarse_groups ? "interpolated" : "exact");
    if (L->tl.coarse_groups)
        meta_int(L, st, "coarse_ticks", L->tl.coarse_groups);
    meta_text(L, st, "loaded_at", when);
    /* the growth view's start_time and end_time, the same in every row */
    meta_int(L, st, "growth_start_time", L->tl.nwindows ? L->tl.windows[0].start : 0);
    meta_int(L, st, "growth_end_time", L->tl.last_time);
    meta_int(L, st, "records", L->records);
    meta_text(L, st, "damage", damage_count ? damage : NULL);
    meta_int(L, st, "damage_count", damage_count);
    meta_int(L, st, "bucket_ns", L->hp.bucket_ns);
    meta_int(L, st, "implicit_frees", L->lv.implicit_frees);
    meta_int(L, st, "reordered", L->fd.reordered);
    meta_int(L, st, "unknown_moves", L->lv.unknown_moves);
    meta_int(L, st, "unknown_records", L->unknown_records);
    meta_int(L, st, "implicit_heaps", L->hp.implicit_heaps);
    meta_int(L, st, "bad_heap_records", L->hp.bad_heap_records);
    meta_int(L, st, "heap_reuses", L->hp.heap_reuses);
    meta_int(L, st, "missing_stacks", L->sk.missing_stacks);
    meta_int(L, st, "missing_stacks_merged", L->lv.missing_merged);
    meta_int(L, st, "events", L->es.evst.events);
    meta_int(L, st, "event_blocks", L->es.evst.blocks);
    meta_int(L, st, "event_bytes", L->es.evst.event_bytes);
    meta_int(L, st, "checkpoints", L->es.evst.checkpoints);
    meta_int(L, st, "checkpoint_bytes", L->es.evst.checkpoint_bytes);
    meta_int(L, st, "checkpoint_events", L->opts->checkpoint_events ? L->opts->checkpoint_events
                                                                    : VH_CHECKPOINT_EVENTS);
    sqlite3_finalize(st);
}

void tables__write(struct loader *L, const struct capture_stamp *cs, const char *damage,
                   unsigned damage_count)
{
    uint32_t *order = agg_order(L);

    if (order) {
        write_leaks(L, order);
        write_stack_totals(L, order);
    }
    timeline__write_windows(L);
    if (!L->failed && reach__write(&L->reach, L->db) != SQLITE_OK)
        loader__fail(L, -EIO, "reach: %s", sqlite3_errmsg(L->db));
    free(order);
    heaps__end_regions(L);             /* still there at the end */
    write_heaps(L);
    owners__write(L);
    spans__write(L);
    write_threads_modules(L);
    write_process(L);
    write_meta(L, cs, damage, damage_count);
}

void tables__write_late_meta(struct loader *L, const char *symbols, double seconds)
{
    sqlite3_stmt *st = loader__prep(L, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)");

    if (st) {
        meta_text(L, st, "symbols", symbols);
        sqlite3_bind_text(st, 1, "load_seconds", -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 2, seconds);
        loader__run(L, st);
    }
    sqlite3_finalize(st);
}
