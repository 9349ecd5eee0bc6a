/* load.c — capture → DB in one streaming pass: the load's steps in order.
 * The parts (loader.h) each own a concern of the loader's state: heaps.c,
 * stacks.c, timeline.c, evstream.c, the hot pass stream.c (read by
 * feeder.c's thread), and tables.c that materializes what the commands
 * read at the end. Definitions: docs/schema.md. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "analyze/load/loader.h"
#include "analyze/store/db.h"

#if __has_include("analyze/symbols/symbols.h")
#include "analyze/symbols/symbols.h"
#define HAVE_SYMBOLS 1
#else
#define HAVE_SYMBOLS 0
#endif

#define SMALL_CAPTURE (64ull << 20)   /* a capture file below this size gets
                                         a DB of 1 KiB pages (load__db_begin) */
#define VH_STR_(x) #x
#define VH_STR(x) VH_STR_(x)

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

/* Opens the capture and takes its stamp (what load__ensure compares). The
 * stamp is taken before reading: a capture that changes while we load it
 * looks out of date afterwards, as it is. */
int load__open_capture(struct loader *L, const char *capture, struct capture_stamp *cs,
                       char *err, size_t errlen)
{
    const struct vh_capture_header *hd;
    struct stat sb;
    char msg[256];
    int rc;

    if (stat(capture, &sb)) {
        rc = -errno;
        snprintf(err, errlen, "%s: %s", capture, strerror(errno));
        return rc;
    }
    if ((rc = capture__open(capture, &L->cap, msg, sizeof msg))) {
        snprintf(err, errlen, "%s: %s", capture, msg);
        return rc;
    }
    hd = capture__header(L->cap);
    cs->size = (uint64_t)sb.st_size;
    cs->mtime_ns = (uint64_t)sb.st_mtim.tv_sec * 1000000000ull + (uint64_t)sb.st_mtim.tv_nsec;
    cs->chunks = __atomic_load_n(&hd->chunks_claimed, __ATOMIC_ACQUIRE);
    cs->last_time = __atomic_load_n(&hd->last_time, __ATOMIC_ACQUIRE);
    cs->flags = __atomic_load_n(&hd->flags, __ATOMIC_ACQUIRE);
    cs->coarse_res_ns = hd->coarse_res_ns;
    cs->precise_from = __atomic_load_n(&hd->precise_from, __ATOMIC_ACQUIRE);
    if (!realpath(capture, cs->path))
        snprintf(cs->path, sizeof cs->path, "%s", capture);
    return 0;
}

/* The DB's settings and tables, in the load's one transaction. A small
 * capture's DB holds a few pages per table and index, mostly empty at
 * SQLite's default 4 KiB: 1 KiB pages make it a fifth smaller (bench's
 * sqlite workload: 729 -> 598 KB). Big DBs keep 4 KiB, where the page size
 * changes the size by well under 1% and reading a blob follows four times
 * fewer overflow pages. */
int load__db_begin(struct loader *L, uint64_t capture_size)
{
    char msg[256];
    int rc;

    if (loader__exec(L, capture_size < SMALL_CAPTURE ? "PRAGMA page_size = 1024"
                                                     : "PRAGMA page_size = 4096") ||
        loader__exec(L, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; "
                        "PRAGMA locking_mode = EXCLUSIVE; PRAGMA temp_store = MEMORY; "
                        "PRAGMA cache_size = -65536; PRAGMA application_id = 1986553185; "
                        "PRAGMA user_version = " VH_STR(VH_SCHEMA_VERSION) "; BEGIN"))
        return -1;
    if ((rc = vh_schema_apply(L->db, VH_SCHEMA_TABLES, msg, sizeof msg))) {
        loader__fail(L, rc, "%s", msg);
        return -1;
    }
    return 0;
}

/* Every part's state, in the order the rows they write first need. */
int load__parts_init(struct loader *L)
{
    if (timeline__init(L) || stacks__init(L) || heaps__init(L) || evstream__init(L) ||
        stream__init(L) || owners__init(L))
        return -1;
    return 0;
}

/* Frees the in-memory state and statements; idempotent, so the DB handle
 * can go on (symbols, indexes) with the memory already returned. */
void load__parts_free(struct loader *L)
{
    rtl__free(L);                      /* before the aggregates it uses */
    timeline__free(L);
    stacks__free(L);
    evstream__free(L);
    heaps__free(L);
    stream__free(L);
    spans__free(L);
    reach__free(&L->reach);
    owners__free(L);
}

/* After the pass: the event stream's end, the tables, the commit. */
static int finish(struct loader *L, const struct capture_stamp *cs, struct load_stats *stats)
{
    const char *damage = NULL;

    evstream__finish(L);
    stats->damage_count = capture__damage(L->cap, &damage);
    if (stats->damage_count)
        snprintf(stats->damage, sizeof stats->damage, "%s", damage ? damage : "damaged");
    stacks__free_nodes(L);             /* room for stack_totals' copy */
    rtl__write(L, (int64_t)cs->coarse_res_ns, (int64_t)cs->precise_from);
    tables__write(L, cs, damage, stats->damage_count);
    stacks__close_rows(L);             /* their last rows */
    if (L->failed)
        return -1;
    load__parts_free(L);               /* the live set is not needed now */
    return loader__exec(L, "COMMIT");
}

/* What the symbolizer's thread found, written now: a failure leaves the
 * frames unresolved, the load's rows committed and the reason in meta. */
static void write_symbols(struct loader *L, struct load_stats *stats)
{
    if (L->opts->no_symbols) {
        snprintf(stats->symbols, sizeof stats->symbols, "skipped");
        return;
    }
#if HAVE_SYMBOLS
    char msg[256];

    if (!L->sk.sym)
        snprintf(stats->symbols, sizeof stats->symbols, "symbols: out of memory");
    else if (symbols__finish(L->sk.sym, msg, sizeof msg) < 0 ||
             symbols__write_db(L->sk.sym, L->db, msg, sizeof msg) < 0)
        snprintf(stats->symbols, sizeof stats->symbols, "%s", msg);
    symbols__free(L->sk.sym);
    L->sk.sym = NULL;
#else
    snprintf(stats->symbols, sizeof stats->symbols, "no symbolizer in this build");
#endif
}

/* The indexes (after the rows: faster than keeping them up), and meta's
 * last rows. */
static int index_db(struct loader *L, struct load_stats *stats, double t0, double t3)
{
    char msg[256];
    int rc = vh_schema_apply(L->db, VH_SCHEMA_INDEXES, msg, sizeof msg);

    if (rc) {
        loader__fail(L, rc, "%s", msg);
        return -1;
    }
    stats->seconds = now_s() - t0;
    stats->index_seconds = stats->seconds - (t3 - t0);
    tables__write_late_meta(L, stats->symbols[0] ? stats->symbols : "resolved", stats->seconds);
    return L->failed ? -1 : 0;
}

static void fill_stats(const struct loader *L, struct load_stats *stats)
{
    stats->records = L->records;
    stats->stacks = L->sk.nstacks;
    stats->frames = L->sk.nframes;
    stats->leaks = L->leaks;
    stats->reordered = L->fd.reordered;
    stats->nesting_steps = L->hp.nesting_steps;
}

int load__capture(const char *capture, const char *db_path, const struct load_opts *opts,
                  struct load_stats *stats, char *err, size_t errlen)
{
    static const struct load_opts defaults = { .progress = -1 };
    struct loader L = { .opts = opts ? opts : &defaults };
    struct capture_stamp cs = { 0 };
    struct db_new dbn = { 0 };
    double t0 = now_s(), t1, t2, cpu0;
    int rc;

    memset(stats, 0, sizeof *stats);
    if ((rc = load__open_capture(&L, capture, &cs, err, errlen)))
        return rc;
    if ((rc = db__create(db_path, &dbn, err, errlen)))
        goto out;
    L.db = dbn.db;
    if (load__db_begin(&L, cs.size) || load__parts_init(&L) || rtl__init(&L))
        goto fail;
    cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    stream__run(&L);
    t1 = now_s();
    stats->stream_seconds = t1 - t0;
    stats->stream_cpu_seconds = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    if (L.failed || finish(&L, &cs, stats))
        goto fail;
    t2 = now_s();
    stats->write_seconds = t2 - t1;
    write_symbols(&L, stats);
    stats->symbols_seconds = now_s() - t2;
    if (index_db(&L, stats, t0, t2 + stats->symbols_seconds))
        goto fail;
    if ((rc = db__publish(&dbn, err, errlen)))
        goto out;
    fill_stats(&L, stats);
    goto out;
fail:
    rc = L.failed ? L.failed : -EIO;
    snprintf(err, errlen, "%s: %s", capture, L.errmsg[0] ? L.errmsg : "load failed");
out:
    stacks__unqueue(&L);
    load__parts_free(&L);
#if HAVE_SYMBOLS
    symbols__free(L.sk.sym);
#endif
    if (dbn.db || dbn.tmp[0])
        db__discard(&dbn);
    capture__close(L.cap);
    return rc;
}
