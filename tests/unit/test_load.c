/* test_load.c — the loader against synthetic captures with known answers
 * (peak attribution, per-thread temporary, realloc, leaks, heap destroy,
 * moves, unknown frees, damage, cross-thread misorders settled), against a
 * naive model on random runs, the live map against an array, and db.c's
 * open/create/ensure rules. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/load/ensure.h"
#include "analyze/cmd/cli.h"
#include "analyze/store/db.h"
#include "analyze/store/events.h"
#include "analyze/load/livemap.h"
#include "analyze/load/load.h"
#include "analyze/load/rowq.h"
#include "analyze/query/shadow.h"
#include "tests/unit/capture_builder.h"
#include "tests/unit/load_fixture.h"

/* ---- the multi-row writer ------------------------------------------------ */

/* Rows stepped directly and through the writer thread store the same
 * values: REAL where the mask says, NULL only where a NULL-able column holds
 * the sentinel (INT64_MIN in a column that may not be NULL is a number). */
static void test_rowq_null_and_real(void **state)
{
    (void)state;
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                     SQLITE_OPEN_FULLMUTEX, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(a INTEGER, b REAL, c INTEGER)", NULL, NULL,
                                  NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO t VALUES (?,?,?),(?,?,?)", -1, &st, NULL),
                     SQLITE_OK);
    struct vh_rowcols cols = { .n = 3, .real = 1u << 1, .null = 1u << 0 | 1u << 1 };
    union vh_rowv v[6] = { { .i = VH_ROWV_NULL }, { .d = NAN }, { .i = VH_ROWV_NULL },
                           { .i = 5 }, { .d = 2.5 }, { .i = 7 } };
    char err[128];
    assert_int_equal(rowq__step(db, st, cols, v, 6, err, sizeof err), 0);
    struct rowq *q = rowq__start(db);
    assert_non_null(q);
    rowq__put(q, st, cols, v, 6);
    assert_int_equal(rowq__stop(q, err, sizeof err), 0);
    sqlite3_finalize(st);

    assert_int_equal(sqlite3_prepare_v2(db, "SELECT typeof(a), a, typeof(b), b, c FROM t "
                                            "ORDER BY rowid", -1, &st, NULL), SQLITE_OK);
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_string_equal((const char *)sqlite3_column_text(st, 0), "null");
        assert_string_equal((const char *)sqlite3_column_text(st, 2), "null");
        assert_true(sqlite3_column_int64(st, 4) == INT64_MIN);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_string_equal((const char *)sqlite3_column_text(st, 0), "integer");
        assert_int_equal(sqlite3_column_int64(st, 1), 5);
        assert_string_equal((const char *)sqlite3_column_text(st, 2), "real");
        assert_true(sqlite3_column_double(st, 3) == 2.5);
        assert_int_equal(sqlite3_column_int64(st, 4), 7);
    }
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* ---- helpers ------------------------------------------------------------ */

static struct load_stats stats;
static char load_err[512];

/* Writes the capture, loads it (no symbols, no progress bar) and opens the
 * DB read-only. Returns NULL when the load fails (load_err says why). */
static sqlite3 *load(struct capb *b)
{
    struct load_opts o = { .progress = 0, .no_symbols = 1 };

    if (fx_write_and_load(b, &o, &stats, load_err, sizeof load_err))
        return NULL;
    return fx_open();
}

#define STAT(db, col, heap, stack) \
    q(db, "SELECT sum(" col ") FROM stack_stats WHERE heap_id=%d AND stack_id=%d", heap, stack)

/* A capture of two threads: tid 1 writes chunk *c1, tid 2 chunk *c2. */
static void two_threads(struct capb *b, uint32_t *c1, uint32_t *c2)
{
    capb__init(b, 0);
    *c1 = capb__chunk(b);
    *c2 = capb__chunk(b);
    capb__thread(b, *c1, 1, 1);
    capb__thread(b, *c2, 1, 2);
}

/* ---- tests --------------------------------------------------------------- */

static void test_counts_and_leaks(void **state)
{
    struct capb b;
    uint64_t frames[] = { 0x401000, 0x402000 };
    struct capb_alloc failed = { .stack = 2, .size = 1ull << 40, .flags = VH_RF_FAILED };
    (void)state;

    uint32_t ch = capb__start(&b, 1, 77);
    capb__stack(&b, ch, 2, 1, frames, 2, 0);
    capb__alloc(&b, ch, 10, 0x1000, 100, 112, 1);
    capb__alloc(&b, ch, 11, 0x2000, 200, 208, 2);     /* stack 2: no STACK record */
    capb__alloc(&b, ch, 12, 0x3000, 300, 304, 1);
    capb__free(&b, ch, 13, 0x2000);
    capb__alloc_ex(&b, ch, VH_REC_ALLOC, 14, &failed);
    capb__end(&b, ch, 20);
    sqlite3 *db = load(&b);
    assert_non_null(db);

    assert_int_equal(stats.records, 8);
    assert_int_equal(stats.damage_count, 0);
    assert_int_equal(HEAP(db, "allocations", 0), 3);
    assert_int_equal(HEAP(db, "failed", 0), 1);
    assert_int_equal(HEAP(db, "frees", 0), 1);
    assert_int_equal(HEAP(db, "bytes_allocated", 0), 600);
    assert_int_equal(HEAP(db, "leaked_bytes", 0), 400);
    assert_int_equal(HEAP(db, "leaked_blocks", 0), 2);
    assert_int_equal(HEAP(db, "peak_bytes", 0), 600);
    assert_int_equal(HEAP(db, "peak_time", 0), 12);
    assert_int_equal(STAT(db, "usable_allocated", 0, 1), 112 + 304);
    assert_int_equal(STAT(db, "failed", 0, 2), 1);
    assert_int_equal(q(db, "SELECT count(*) FROM leaks"), 2);
    assert_int_equal(q(db, "SELECT usable FROM leaks WHERE address=%d", 0x3000), 304);
    assert_int_equal(q(db, "SELECT time FROM leaks WHERE address=%d", 0x3000), 12);
    assert_int_equal(q(db, "SELECT tid FROM leaks WHERE address=%d", 0x1000), 77);
    assert_int_equal(q(db, "SELECT bytes FROM leaks_by_stack WHERE stack_id=1"), 400);
    /* stack 2 was referenced without a STACK record: it still has a row */
    assert_int_equal(q(db, "SELECT depth FROM stacks WHERE id=2"), 0);
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key='missing_stacks'"), 1);
    assert_int_equal(q(db, "SELECT count(*) FROM stack_frames WHERE stack_id=1"), 2);
    assert_int_equal(q(db, "SELECT allocations FROM threads WHERE tid=77"), 3);
    assert_int_equal(q(db, "SELECT frees FROM threads WHERE tid=77"), 1);
    assert_int_equal(q(db, "SELECT ended FROM processes"), 1);
    assert_int_equal(q(db, "SELECT runtime_ns FROM processes"), 20);
    assert_int_equal(q(db, "SELECT pid FROM processes"), 4242);
    done(db, &b);
}

/* A at 100, B at 50 (peak 150), free A, B +30 (80), then A +200 (280: the
 * new peak, with A 200 and B 80 live), free everything. */
static void test_peak_attribution(void **state)
{
    struct capb b;
    (void)state;

    uint32_t ch = capb__start(&b, 1, 1);
    capb__alloc(&b, ch, 10, 0x1000, 100, 100, 1);
    capb__alloc(&b, ch, 11, 0x2000, 50, 50, 2);
    capb__free(&b, ch, 12, 0x1000);
    capb__alloc(&b, ch, 13, 0x3000, 30, 30, 2);
    capb__alloc(&b, ch, 14, 0x4000, 200, 200, 1);
    capb__free(&b, ch, 15, 0x4000);
    capb__free(&b, ch, 16, 0x3000);
    capb__alloc(&b, ch, 17, 0x5000, 10, 10, 3);
    sqlite3 *db = load(&b);
    assert_non_null(db);

    assert_int_equal(HEAP(db, "peak_bytes", 0), 280);
    assert_int_equal(HEAP(db, "peak_blocks", 0), 3);
    assert_int_equal(HEAP(db, "peak_time", 0), 14);
    assert_int_equal(STAT(db, "peak_bytes", 0, 1), 200);
    assert_int_equal(STAT(db, "peak_blocks", 0, 1), 1);
    assert_int_equal(STAT(db, "peak_bytes", 0, 2), 80);
    assert_int_equal(STAT(db, "peak_blocks", 0, 2), 2);
    assert_int_equal(STAT(db, "peak_bytes", 0, 3), 0);
    assert_int_equal(STAT(db, "max_live_bytes", 0, 1), 200);
    assert_int_equal(STAT(db, "max_live_bytes", 0, 2), 80);
    assert_int_equal(q(db, "SELECT sum(peak_bytes) FROM stack_stats"), 280);
    assert_int_equal(HEAP(db, "leaked_bytes", 0), 60);
    done(db, &b);
}

/* Two threads, interleaved in time through two chunks. */
static void test_temporary_per_thread(void **state)
{
    struct capb b;
    (void)state;

    capb__init(&b, 0);
    uint32_t c1 = capb__chunk(&b), c2 = capb__chunk(&b);
    capb__thread(&b, c1, 1, 101);
    capb__thread(&b, c2, 2, 102);
    capb__alloc(&b, c1, 10, 0xa000, 8, 8, 1);      /* T1 a                    */
    capb__alloc(&b, c2, 11, 0xb000, 8, 8, 2);      /* T2 b                    */
    capb__free(&b, c1, 12, 0xa000);                /* T1 frees a: temporary   */
    capb__free(&b, c2, 13, 0xb000);                /* T2 frees b: temporary   */
    capb__alloc(&b, c1, 20, 0xc000, 8, 8, 1);      /* T1 c                    */
    capb__alloc(&b, c1, 21, 0xd000, 8, 8, 1);      /* T1 d                    */
    capb__free(&b, c1, 22, 0xc000);                /* not: d came after c     */
    capb__free(&b, c1, 23, 0xd000);                /* not: a free came after  */
    capb__alloc(&b, c1, 30, 0xe000, 8, 8, 1);      /* T1 e                    */
    capb__free(&b, c2, 31, 0xe000);                /* T2 frees e: not         */
    capb__alloc(&b, c1, 40, 0xf000, 8, 8, 3);      /* T1 f                    */
    capb__free(&b, c2, 41, 0xf000);                /* T2 frees f              */
    capb__alloc(&b, c2, 42, 0xf000, 8, 8, 3);      /* T2 reuses the address   */
    capb__free(&b, c1, 43, 0xf000);                /* T1: not its block: not  */
    sqlite3 *db = load(&b);
    assert_non_null(db);

    assert_int_equal(HEAP(db, "temporary", 0), 2);
    assert_int_equal(STAT(db, "temporary", 0, 1), 1);
    assert_int_equal(STAT(db, "temporary", 0, 2), 1);
    assert_int_equal(STAT(db, "temporary", 0, 3), 0);
    assert_int_equal(HEAP(db, "frees", 0), 7);
    assert_int_equal(q(db, "SELECT frees FROM threads WHERE tid=102"), 3);
    assert_int_equal(q(db, "SELECT sum(temporary) FROM series"), 2);

    /* --temporary heaptrack: its counts are looked up per stack_stats row
     * by key (a scan each made that quadratic: minutes for 400k stacks) */
    assert_int_equal(vh_shadow_apply("test", db, VH_TEMP_HEAPTRACK), 0);
    sqlite3_stmt *st;
    int keyed = 0;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "EXPLAIN QUERY PLAN SELECT (SELECT n FROM vh_ht_temp t"
                                        " WHERE t.heap_id = s.heap_id AND t.stack_id = s.stack_id"
                                        " AND t.tag_id = s.tag_id) FROM temp.stack_stats s",
                                        -1, &st, NULL),
                     SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW)
        keyed |= strstr((const char *)sqlite3_column_text(st, 3), "SEARCH t USING") != NULL;
    sqlite3_finalize(st);
    assert_true(keyed);
    done(db, &b);
}

/* In place: one RESIZE. Moving: FREE(realloc) + ALLOC(realloc). heaptrack
 * counts a realloc as '-' old, '+' new: one call, and the '-' of the block
 * just allocated is temporary. */
static void test_realloc_in_place_and_moving(void **state)
{
    struct capb b;
    struct capb_alloc mv = { .addr = 0x9000, .size = 400, .usable = 408, .stack = 3,
                             .func = VH_FN_REALLOC, .flags = VH_RF_REALLOC };
    (void)state;

    uint32_t ch = capb__start(&b, 1, 5);
    capb__alloc(&b, ch, 10, 0x1000, 100, 104, 1);
    capb__resize(&b, ch, 11, 0x1000, 200, 200, 2);           /* in place       */
    capb__free_ex(&b, ch, 12, 0, VH_FN_REALLOC, 0x1000, VH_RF_REALLOC);
    capb__alloc_ex(&b, ch, VH_REC_ALLOC, 13, &mv);           /* moved          */
    capb__alloc(&b, ch, 14, 0x2000, 1, 1, 4);
    capb__resize(&b, ch, 15, 0x7000, 50, 50, 5);             /* never seen     */
    sqlite3 *db = load(&b);
    assert_non_null(db);

    assert_int_equal(HEAP(db, "allocations", 0), 5);
    assert_int_equal(HEAP(db, "frees", 0), 0);
    assert_int_equal(HEAP(db, "temporary", 0), 2);
    assert_int_equal(HEAP(db, "unknown_frees", 0), 1);
    assert_int_equal(HEAP(db, "bytes_allocated", 0), 100 + 200 + 400 + 1 + 50);
    assert_int_equal(HEAP(db, "live_bytes", 0), 451);
    assert_int_equal(HEAP(db, "peak_bytes", 0), 451);
    assert_int_equal(STAT(db, "leaked_bytes", 0, 1), 0);
    assert_int_equal(STAT(db, "leaked_bytes", 0, 2), 0);
    assert_int_equal(STAT(db, "leaked_bytes", 0, 3), 400);
    assert_int_equal(STAT(db, "temporary", 0, 1), 1);
    assert_int_equal(STAT(db, "temporary", 0, 2), 1);
    assert_int_equal(q(db, "SELECT usable FROM leaks WHERE address=%d", 0x9000), 408);
    assert_int_equal(q(db, "SELECT time FROM leaks WHERE address=%d", 0x9000), 13);
    done(db, &b);
}

/* Heap 1 with heap 2 nested; destroying 1 frees both, with no leaks. */
static void test_heap_destroy_not_leak(void **state)
{
    struct capb b;
    (void)state;

    uint32_t ch = capb__start(&b, 1, 5);
    capb__heap_create(&b, ch, 2, 1, 0, 0x200000000ull, 1u << 30, "loom");
    capb__heap_create(&b, ch, 3, 2, 1, 0x210000000ull, 1u << 20, "road");
    capb__heap_create(&b, ch, 4, 3, 0, 0, 0, "pool");
    capb__heap_alloc(&b, ch, 10, 1, 0x200000010ull, 64, 1, 0);
    capb__heap_alloc(&b, ch, 11, 2, 0x210000010ull, 32, 2, 0);
    capb__heap_alloc(&b, ch, 12, 2, 0x210000020ull, 32, 2, 0);
    capb__heap_alloc(&b, ch, 13, 3, 0x300000000ull, 5, 3, 0);
    capb__alloc(&b, ch, 14, 0x1000, 7, 8, 4);
    capb__heap_destroy(&b, ch, 20, 1);
    sqlite3 *db = load(&b);
    assert_non_null(db);

    char s[64];
    assert_string_equal(qs(db, "SELECT name FROM heaps WHERE id=2", s, sizeof s), "road");
    assert_int_equal(HEAP(db, "parent_id", 2), 1);
    assert_int_equal(HEAP(db, "destroy_time", 1), 20);
    assert_int_equal(HEAP(db, "destroy_time", 2), 20);
    assert_int_equal(HEAP(db, "destroy_time", 3), -1);
    assert_int_equal(HEAP(db, "leaked_bytes", 1), 0);
    assert_int_equal(HEAP(db, "leaked_bytes", 2), 0);
    assert_int_equal(HEAP(db, "live_bytes", 2), 0);
    assert_int_equal(HEAP(db, "peak_bytes", 2), 64);
    assert_int_equal(HEAP(db, "frees", 2), 0);
    assert_int_equal(HEAP(db, "leaked_bytes", 3), 5);
    assert_int_equal(HEAP(db, "leaked_bytes", 0), 7);
    assert_int_equal(HEAP(db, "base", 1), 0x200000000ll);
    assert_int_equal(q(db, "SELECT count(*) FROM leaks"), 2);
    assert_int_equal(q(db, "SELECT count(*) FROM leaks WHERE heap_id IN (1, 2)"), 0);
    assert_int_equal(STAT(db, "peak_bytes", 2, 2), 64);
    assert_int_equal(q(db, "SELECT bytes_freed FROM series WHERE heap_id=2"), 64);
    assert_int_equal(q(db, "SELECT count(*) FROM summary"), 4);
    done(db, &b);
}

static void test_move_keeps_stack(void **state)
{
    struct capb b;
    (void)state;

    uint32_t ch = capb__start(&b, 1, 5);
    capb__heap_create(&b, ch, 2, 1, 0, 0, 0, "arena");
    capb__heap_alloc(&b, ch, 10, 1, 0x10, 16, 7, 3);
    capb__heap_alloc(&b, ch, 11, 1, 0x20, 32, 8, 0);
    capb__heap_alloc(&b, ch, 12, 1, 0x30, 48, 9, 0);
    capb__move(&b, ch, 13, 1, 0x10, 0x100);
    capb__move(&b, ch, 14, 1, 0x20, 0x200);
    capb__free_ex(&b, ch, 15, 1, VH_FN_CUSTOM, 0x200, 0);
    capb__move(&b, ch, 16, 1, 0x30, 0x100);   /* onto a live block */
    capb__move(&b, ch, 17, 1, 0x999, 0x1000); /* unknown */
    sqlite3 *db = load(&b);
    assert_non_null(db);

    assert_int_equal(STAT(db, "frees", 1, 8), 1);
    assert_int_equal(HEAP(db, "unknown_frees", 1), 0);
    assert_int_equal(q(db, "SELECT count(*) FROM leaks"), 1);
    assert_int_equal(q(db, "SELECT stack_id FROM leaks WHERE address=256"), 9);
    assert_int_equal(q(db, "SELECT time FROM leaks WHERE address=256"), 12);
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key='implicit_frees'"), 1);
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key='unknown_moves'"), 1);
    assert_int_equal(STAT(db, "leaked_bytes", 1, 7), 0);
    assert_int_equal(q(db, "SELECT tag_id FROM stack_stats WHERE stack_id=7"), 3);
    done(db, &b);
}

static void test_unknown_and_implicit_frees(void **state)
{
    struct capb b;
    (void)state;

    uint32_t ch = capb__start(&b, 1, 5);
    capb__free(&b, ch, 10, 0x5000);
    capb__alloc(&b, ch, 11, 0x6000, 10, 10, 1);
    capb__alloc(&b, ch, 12, 0x6000, 20, 20, 2);   /* its free was never seen */
    capb__free(&b, ch, 13, 0x6000);
    capb__free(&b, ch, 14, 0x6000);               /* double free: unknown   */
    sqlite3 *db = load(&b);
    assert_non_null(db);

    assert_int_equal(HEAP(db, "unknown_frees", 0), 2);
    assert_int_equal(HEAP(db, "frees", 0), 1);
    assert_int_equal(HEAP(db, "live_bytes", 0), 0);
    assert_int_equal(HEAP(db, "peak_bytes", 0), 20);
    assert_int_equal(STAT(db, "frees", 0, 2), 1);
    assert_int_equal(STAT(db, "frees", 0, 1), 0);
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key='implicit_frees'"), 1);
    done(db, &b);
}

static void test_modules_frames_tags_marks(void **state)
{
    struct capb b;
    const uint8_t id[] = { 0xde, 0xad, 0xbe, 0xef };
    uint64_t s1[] = { 0x401010, 0x7f0000001000, 0x12345 };
    uint64_t s2[] = { 0x401010, 0x7f0000001000 };
    (void)state;

    uint32_t ch = capb__start(&b, 1, 5);
    capb__module(&b, ch, 1, 0x400000, 0x400000, 0x500000, id, 4, "/bin/prog", VH_RF_MAIN_EXE);
    capb__module(&b, ch, 2, 0x7f0000000000ull, 0x7f0000000000ull, 0x7f0000100000ull, NULL, 0,
                 "/lib/liba.so", 0);
    capb__stack(&b, ch, 3, 1, s1, 3, VH_RF_TRUNCATED);
    capb__module_unload(&b, ch, 4, 0x7f0000000000ull);
    capb__module(&b, ch, 5, 0x7f0000000000ull, 0x7f0000000000ull, 0x7f0000100000ull, NULL, 0,
                 "/lib/libb.so", 0);
    capb__stack(&b, ch, 6, 2, s2, 2, 0);
    capb__tag(&b, ch, 7, 1, "jet:add");
    capb__mark(&b, ch, 8, "event 12");
    capb__rss(&b, ch, 9, 5000000);
    capb__rss(&b, ch, 10, 9000000);
    capb__rss(&b, ch, 11, 7000000);
    capb__heap_alloc(&b, ch, 12, 0, 0x1000, 10, 2, 1);
    sqlite3 *db = load(&b);
    assert_non_null(db);

    char s[64];
    assert_int_equal(q(db, "SELECT count(*) FROM modules"), 3);
    assert_string_equal(qs(db, "SELECT build_id FROM modules WHERE id=1", s, sizeof s), "deadbeef");
    assert_int_equal(q(db, "SELECT is_main FROM modules WHERE id=1"), 1);
    assert_int_equal(q(db, "SELECT unload_time FROM modules WHERE id=2"), 4);
    assert_int_equal(q(db, "SELECT unload_time FROM modules WHERE id=3"), -1);
    /* 0x401010 is shared; 0x7f..1000 is two frames (two module loads) */
    assert_int_equal(q(db, "SELECT count(*) FROM frames"), 4);
    assert_int_equal(q(db, "SELECT module_offset FROM frames WHERE address=%d", 0x401010), 0x1010);
    assert_int_equal(q(db, "SELECT count(*) FROM frames WHERE module_id IS NULL"), 1);
    assert_int_equal(q(db, "SELECT f.module_id FROM stack_frames sf JOIN frames f "
                           "ON f.id=sf.frame_id WHERE sf.stack_id=2 AND sf.idx=1"), 3);
    assert_int_equal(q(db, "SELECT f.module_offset FROM stack_frames sf JOIN frames f "
                           "ON f.id=sf.frame_id WHERE sf.stack_id=1 AND sf.idx=1"), 0x1000);
    assert_int_equal(q(db, "SELECT truncated FROM stacks WHERE id=1"), 1);
    assert_int_equal(q(db, "SELECT depth FROM stacks WHERE id=1"), 3);
    assert_string_equal(qs(db, "SELECT label FROM tags WHERE id=1", s, sizeof s), "jet:add");
    assert_string_equal(qs(db, "SELECT label FROM marks", s, sizeof s), "event 12");
    assert_int_equal(q(db, "SELECT time FROM marks"), 8);
    assert_int_equal(q(db, "SELECT peak_rss FROM processes"), 9000000);
    assert_int_equal(q(db, "SELECT peak_rss_time FROM processes"), 10);
    assert_int_equal(q(db, "SELECT count(*) FROM rss"), 3);
    assert_int_equal(q(db, "SELECT tag_id FROM leaks"), 1);
    assert_string_equal(qs(db, "SELECT text FROM stack_text WHERE stack_id=2", s, sizeof s),
                        "0x401010 <- 0x7f0000001000");
    done(db, &b);
}

/* Stacks as a call tree: shared outer frames are one node each, whether the
 * stack sharing them comes right after (the previous stack's path) or later
 * (the node map); a module loaded between two stacks makes the same address
 * another frame, hence another node. stack_frames gives every stack's frames
 * in order, as the table it replaced did. */
static void test_stack_tree(void **state)
{
    struct capb b;
    (void)state;
    /* innermost first, as recorded */
    const uint64_t s1[] = { 0x401100, 0x401800, 0x401900 };
    const uint64_t s2[] = { 0x401200, 0x401800, 0x401900 };   /* shares 2 with s1 */
    const uint64_t s3[] = { 0x401300, 0x401900 };             /* shares 1 */
    const uint64_t s4[] = { 0x401100, 0x401800, 0x401900 };   /* s1's frames again */
    const uint64_t s5[] = { 0x401900 };                       /* the root itself */
    const uint64_t s6[] = { 0x401400, 0x401800, 0x401900 };   /* after a module load */

    uint32_t ch = capb__start(&b, 0, 1);
    capb__stack(&b, ch, 1, 1, s1, 3, 0);
    capb__stack(&b, ch, 2, 2, s2, 3, 0);
    capb__stack(&b, ch, 3, 3, s3, 2, 0);
    capb__stack(&b, ch, 4, 4, s4, 3, 0);
    capb__stack(&b, ch, 5, 5, s5, 1, 0);
    capb__module(&b, ch, 6, 0x400000, 0x400000, 0x500000, NULL, 0, "/bin/prog", VH_RF_MAIN_EXE);
    capb__stack(&b, ch, 7, 6, s6, 3, 0);
    capb__alloc(&b, ch, 8, 0x1000, 10, 16, 4);
    sqlite3 *db = load(&b);
    assert_non_null(db);

    /* before the module: 0x401900, 0x401800, 0x401100, 0x401200, 0x401300
     * (s4 and s5 add none); after it: 0x401900, 0x401800, 0x401400 anew */
    assert_int_equal(q(db, "SELECT count(*) FROM stack_nodes"), 8);
    assert_int_equal(q(db, "SELECT count(*) FROM frames"), 8);
    assert_int_equal(q(db, "SELECT node FROM stacks WHERE id=4"),
                     q(db, "SELECT node FROM stacks WHERE id=1"));
    assert_int_equal(q(db, "SELECT count(*) FROM stack_nodes WHERE parent=0"), 2);
    assert_int_equal(q(db, "SELECT count(*) FROM stack_nodes WHERE parent >= id"), 0);
    assert_int_equal(q(db, "SELECT count(*) FROM stack_frames"), 15);
    assert_int_equal(q(db, "SELECT count(*) FROM stack_frames WHERE stack_id=3"), 2);
    assert_int_equal(q(db, "SELECT node FROM stacks WHERE id=0"), 0);
    /* every stack's frames, in order, against the recorded addresses */
    const uint64_t *want[] = { NULL, s1, s2, s3, s4, s5, s6 };
    const int depth[] = { 0, 3, 3, 2, 3, 1, 3 };
    for (int id = 1; id <= 6; id++) {
        assert_int_equal(q(db, "SELECT depth FROM stacks WHERE id=%d", id), depth[id]);
        for (int i = 0; i < depth[id]; i++)
            assert_int_equal(q(db, "SELECT f.address FROM stack_frames sf JOIN frames f "
                                   "ON f.id=sf.frame_id WHERE sf.stack_id=%d AND sf.idx=%d",
                               id, i),
                             (int64_t)want[id][i]);
    }
    assert_int_equal(q(db, "SELECT f.module_id FROM stack_frames sf JOIN frames f "
                           "ON f.id=sf.frame_id WHERE sf.stack_id=6 AND sf.idx=2"), 1);
    assert_int_equal(q(db, "SELECT count(*) FROM stack_frames sf JOIN frames f "
                           "ON f.id=sf.frame_id WHERE sf.stack_id=1 AND f.module_id IS NULL"), 3);
    char s[96];
    assert_string_equal(qs(db, "SELECT text FROM stack_text WHERE stack_id=3", s, sizeof s),
                        "0x401300 <- 0x401900");
    assert_int_equal(q(db, "SELECT count(*) FROM stack_text"), 6);
    assert_int_equal(q(db, "SELECT count(*) FROM stack_leaf"), 6);

    /* a DB made elsewhere with a cycle in the tree (the CHECK switched off):
     * the walks still end, each step going to a lower id */
    sqlite3 *rw = NULL;
    assert_int_equal(sqlite3_open(db_path, &rw), SQLITE_OK);
    assert_int_equal(sqlite3_exec(rw, "PRAGMA ignore_check_constraints = 1;"
                                      "UPDATE stack_tree SET up = id - (SELECT node FROM stacks"
                                      " WHERE id = 1) WHERE up = id",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(rw);
    sqlite3_close(db);
    db = fx_open();
    assert_int_equal(q(db, "SELECT count(*) FROM stack_frames WHERE stack_id=1"), 3);
    assert_true(q(db, "SELECT count(*) FROM stack_text") == 6);
    done(db, &b);
}

/* Stack ids that no STACK record describes keep counters of their own up to
 * a bound (max_missing_stacks); the events of further such ids count under
 * stack 0, so random ids in a damaged capture cannot grow the loader's
 * memory with the number of events. */
static void test_missing_stacks_bounded(void **state)
{
    struct capb b;
    struct load_opts o = { .progress = 0, .no_symbols = 1, .max_missing_stacks = 2 };
    const uint64_t s1[] = { 0x401100, 0x401900 };
    (void)state;

    uint32_t ch = capb__start(&b, 0, 1);
    capb__stack(&b, ch, 1, 1, s1, 2, 0);
    capb__alloc(&b, ch, 2, 0x1000, 10, 16, 1);
    capb__alloc(&b, ch, 3, 0x2000, 20, 32, 100);
    capb__alloc(&b, ch, 4, 0x3000, 30, 32, 101);
    capb__alloc(&b, ch, 5, 0x4000, 40, 48, 102);     /* beyond the bound */
    capb__alloc(&b, ch, 6, 0x5000, 50, 64, 103);
    capb__alloc(&b, ch, 7, 0x6000, 60, 64, 100);     /* has its counters */
    sqlite3 *db = fx_load(&b, &o);

    assert_int_equal(q(db, "SELECT value FROM meta WHERE key='missing_stacks'"), 2);
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key='missing_stacks_merged'"), 2);
    assert_int_equal(q(db, "SELECT allocations FROM stack_stats WHERE stack_id=100"), 2);
    assert_int_equal(q(db, "SELECT bytes_allocated FROM stack_stats WHERE stack_id=0"), 90);
    assert_int_equal(q(db, "SELECT count(*) FROM stack_stats WHERE stack_id IN (102, 103)"), 0);
    assert_int_equal(q(db, "SELECT count(*) FROM leaks WHERE stack_id=0"), 2);
    assert_int_equal(q(db, "SELECT sum(allocations) FROM stack_stats"), 6);
    done(db, &b);
}

static void test_process_and_series(void **state)
{
    struct capb b;
    /* the last: a Latin-1 byte, not UTF-8 (a file name from another era) */
    const char *argv[] = { "./prog", "a \"quoted\" arg", "tab\there", "caf\xe9" };
    (void)state;

    capb__init(&b, 0);
    capb__set_argv(&b, 4, argv);
    /* 10 s run: bucket 1 ms would give 10000 buckets (< 20000) */
    capb__header(&b)->end_time = 10000000000ull;
    capb__header(&b)->flags |= VH_HDR_FORKED;
    uint32_t ch = capb__chunk(&b);
    capb__thread(&b, ch, 0, 5);
    capb__alloc(&b, ch, 500000, 0x1000, 100, 100, 1);       /* bucket 0 */
    capb__alloc(&b, ch, 900000, 0x2000, 100, 100, 1);       /* bucket 0 */
    capb__free(&b, ch, 2500000, 0x1000);                    /* bucket 2 */
    capb__alloc(&b, ch, 9999000000ull, 0x3000, 7, 7, 1);    /* bucket 9999 */
    sqlite3 *db = load(&b);
    assert_non_null(db);

    char s[128];
    assert_string_equal(qs(db, "SELECT argv FROM processes", s, sizeof s),
                        "[\"./prog\",\"a \\\"quoted\\\" arg\",\"tab\\there\",\"caf\\ufffd\"]");
    assert_int_equal(q(db, "SELECT forked FROM processes"), 1);
    assert_int_equal(q(db, "SELECT ended FROM processes"), 0);
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key='bucket_ns'"), 1000000);
    assert_int_equal(q(db, "SELECT count(*) FROM series"), 3);
    assert_int_equal(q(db, "SELECT allocations FROM series WHERE bucket=0"), 2);
    assert_int_equal(q(db, "SELECT live_bytes FROM series WHERE bucket=0"), 200);
    assert_int_equal(q(db, "SELECT live_bytes FROM series WHERE bucket=2"), 100);
    assert_int_equal(q(db, "SELECT max_live_bytes FROM series WHERE bucket=2"), 200);
    assert_int_equal(q(db, "SELECT bytes_freed FROM series WHERE bucket=2"), 100);
    assert_int_equal(q(db, "SELECT live_bytes FROM series WHERE bucket=9999"), 107);
    /* the invariant documented in docs/schema.md */
    assert_int_equal(q(db, "SELECT sum(bytes_allocated) - sum(bytes_freed) FROM series"),
                     HEAP(db, "live_bytes", 0));
    done(db, &b);
}

static void test_damage_loaded_partially(void **state)
{
    struct capb b;
    (void)state;

    uint32_t c1, c2;
    two_threads(&b, &c1, &c2);
    capb__alloc(&b, c1, 10, 0x1000, 10, 10, 1);
    capb__alloc(&b, c2, 11, 0x2000, 20, 20, 1);
    capb__alloc(&b, c1, 12, 0x3000, 30, 30, 1);
    uint64_t bad = capb__raw(&b, c2, NULL, 16);     /* type 0: unknown fixed */
    capb__alloc(&b, c2, 13, 0x4000, 40, 40, 1);     /* after the damage: lost */
    sqlite3 *db = load(&b);
    assert_non_null(db);

    assert_int_equal(stats.damage_count, 1);
    char want[32];
    snprintf(want, sizeof want, "0x%llx", (unsigned long long)bad);
    assert_non_null(strstr(stats.damage, want));
    assert_int_equal(HEAP(db, "allocations", 0), 3);
    assert_int_equal(HEAP(db, "live_bytes", 0), 60);
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key='damage_count'"), 1);
    char s[320];
    assert_string_equal(qs(db, "SELECT value FROM meta WHERE key='damage'", s, sizeof s),
                        stats.damage);
    done(db, &b);
}

static void test_not_a_capture(void **state)
{
    char path[] = "/tmp/vheap-test-load.XXXXXX", db[64], err[256];
    struct load_opts o = { .progress = 0, .no_symbols = 1 };
    struct stat sb;
    int fd = mkstemp(path);
    (void)state;

    assert_true(fd >= 0);
    assert_int_equal(write(fd, "hello, world\n", 13), 13);
    close(fd);
    snprintf(db, sizeof db, "%s.sqlite", path);
    assert_true(load__capture(path, db, &o, &stats, err, sizeof err) < 0);
    assert_non_null(strstr(err, "not a vheap capture"));
    assert_non_null(strstr(err, path));
    assert_int_equal(stat(db, &sb), -1);            /* no DB left behind */
    assert_true(load__ensure(path, db, sizeof db, err, sizeof err) < 0);
    assert_non_null(strstr(err, "neither a vheap capture nor a vheap database"));
    unlink(path);
}

/* The target exists and is not a vheap DB (here: the capture itself). */
static void test_refuses_to_replace_other_files(void **state)
{
    struct capb b;
    struct load_opts o = { .progress = 0, .no_symbols = 1 };
    char err[512];
    struct stat before, after;
    (void)state;

    capb__init(&b, 0);
    uint32_t ch = capb__chunk(&b);
    capb__alloc(&b, ch, 1, 0x1000, 1, 1, 1);
    assert_int_equal(capb__write_tmp(&b, cap_path, sizeof cap_path), 0);
    assert_int_equal(stat(cap_path, &before), 0);
    assert_int_equal(load__capture(cap_path, cap_path, &o, &stats, err, sizeof err), -EEXIST);
    assert_non_null(strstr(err, "not a vheap database"));
    assert_int_equal(stat(cap_path, &after), 0);
    assert_int_equal(before.st_size, after.st_size);
    unlink(cap_path);
    capb__destroy(&b);
}

static void test_open_read_checks(void **state)
{
    char path[] = "/tmp/vheap-test-db.XXXXXX", err[256];
    sqlite3 *db = NULL;
    int fd = mkstemp(path);
    (void)state;

    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_true(db__open_read(path, &db, err, sizeof err) < 0);
    assert_non_null(strstr(err, "is not a vheap database"));

    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
                                      "INSERT INTO meta VALUES ('schema_version', 99)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    assert_true(db__open_read(path, &db, err, sizeof err) < 0);
    {
        char want[64];
        snprintf(want, sizeof want, "schema version 99, expected %d", VH_SCHEMA_VERSION);
        assert_non_null(strstr(err, want));
    }
    unlink(path);

    assert_true(db__open_read("/nonexistent/x.sqlite", &db, err, sizeof err) == -ENOENT);
}

/* load__ensure loads a capture into CAPTURE.sqlite once, reuses it while the
 * capture is unchanged, and reloads it when the capture changes. */
static void test_ensure(void **state)
{
    struct capb b;
    char dbp[512], err[512];
    sqlite3 *db;
    (void)state;

    capb__init(&b, 0);
    uint32_t ch = capb__chunk(&b);
    capb__alloc(&b, ch, 1, 0x1000, 1, 1, 1);
    assert_int_equal(capb__write_tmp(&b, cap_path, sizeof cap_path), 0);
    assert_int_equal(load__ensure(cap_path, dbp, sizeof dbp, err, sizeof err), 0);
    assert_non_null(strstr(dbp, VH_DB_SUFFIX));
    assert_int_equal(db__open_read(dbp, &db, err, sizeof err), 0);
    assert_int_equal(HEAP(db, "allocations", 0), 1);
    sqlite3_close(db);

    /* unchanged: the same DB file is used (its inode stays) */
    struct stat s1, s2;
    assert_int_equal(stat(dbp, &s1), 0);
    assert_int_equal(load__ensure(cap_path, dbp, sizeof dbp, err, sizeof err), 0);
    assert_int_equal(stat(dbp, &s2), 0);
    assert_int_equal(s1.st_ino, s2.st_ino);

    /* a DB path passes through unchanged */
    char again[512];
    assert_int_equal(load__ensure(dbp, again, sizeof again, err, sizeof err), 0);
    assert_string_equal(again, dbp);

    /* the capture grows: reloaded */
    capb__alloc(&b, ch, 2, 0x2000, 1, 1, 1);
    capb__header(&b)->last_time = 2;
    assert_int_equal(capb__write(&b, cap_path), 0);
    assert_int_equal(load__open_any(cap_path, &db, err, sizeof err), 0);
    assert_int_equal(HEAP(db, "allocations", 0), 2);
    sqlite3_close(db);
    unlink(dbp);
    unlink(cap_path);
    capb__destroy(&b);
}

/* ---- cross-thread misorders settled by the loader -------------------------
 * An allocation's time is read without a fence: it may come up to about a
 * memory latency before another thread's free of the same block. The
 * loader processes such a record of another thread, when it follows within
 * 50 us, ahead of the one that exposed it; never one of the same thread. */

#define X 0x7000ull                    /* the contested address */

static long long meta_reordered(sqlite3 *db)
{
    return q(db, "SELECT value FROM meta WHERE key='reordered'");
}

/* The emitted events for address addr, in stream order (at most max);
 * fails the test if any emitted time goes back. Returns how many. */
static size_t events_of(sqlite3 *db, uint64_t addr, struct vh_ev *out, size_t max)
{
    struct evstream *s = NULL;
    struct vh_ev ev;
    uint64_t last = 0;
    size_t n = 0;
    char err[256];
    int rc;

    if (evstream__open(db, 0, &s, err, sizeof err))
        fail_msg("evstream__open: %s", err);
    while ((rc = evstream__next(s, &ev)) == 1) {
        assert_true(ev.time >= last);
        last = ev.time;
        if (ev.addr == addr && n < max)
            out[n++] = ev;
    }
    assert_int_equal(rc, 0);
    evstream__close(s);
    return n;
}

/* Case A: tid 1 frees x at tfree, tid 2's malloc got x back, and its ALLOC
 * reads a time `gap` ns before that free (tid 2 frees it later on). */
static void build_case_a(struct capb *b, uint64_t gap)
{
    uint32_t c1, c2;
    two_threads(b, &c1, &c2);
    capb__alloc(b, c1, 100, X, 10, 16, 1);
    capb__alloc(b, c2, 1000000, X, 20, 32, 2);
    capb__free(b, c1, 1000000 + gap, X);
    capb__free(b, c2, 3000000, X);
}

/* Case B: tid 1 allocates x, hands it to tid 2, whose FREE reads a time
 * `gap` ns before the ALLOC. */
static void build_case_b(struct capb *b, uint64_t gap)
{
    uint32_t c1, c2;
    two_threads(b, &c1, &c2);
    capb__alloc(b, c1, 1000000 + gap, X, 10, 16, 1);
    capb__free(b, c2, 1000000, X);
    capb__alloc(b, c1, 4000000, 0x9000, 5, 16, 3);    /* a later event of tid 1 */
}

static void test_settle_free_before_alloc(void **state)
{
    struct capb b;
    struct vh_ev ev[8];
    (void)state;

    build_case_a(&b, 500);
    sqlite3 *db = load(&b);
    assert_non_null(db);
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key='implicit_frees'"), 0);
    assert_int_equal(HEAP(db, "unknown_frees", 0), 0);
    assert_int_equal(HEAP(db, "frees", 0), 2);
    assert_int_equal(HEAP(db, "live_bytes", 0), 0);
    assert_int_equal(HEAP(db, "leaked_blocks", 0), 0);
    assert_int_equal(STAT(db, "frees", 0, 1), 1);
    assert_int_equal(STAT(db, "frees", 0, 2), 1);
    /* each free is of its thread's latest allocation */
    assert_int_equal(STAT(db, "temporary", 0, 1), 1);
    assert_int_equal(STAT(db, "temporary", 0, 2), 1);
    assert_int_equal(HEAP(db, "peak_bytes", 0), 20);
    assert_int_equal(q(db, "SELECT frees FROM threads WHERE tid=1"), 1);
    assert_int_equal(q(db, "SELECT frees FROM threads WHERE tid=2"), 1);
    assert_int_equal(q(db, "SELECT last_time FROM threads WHERE tid=1"), 1000500);
    assert_int_equal(meta_reordered(db), 1);
    assert_int_equal(stats.reordered, 1);
    /* the stream: tid 1's free moved ahead, at the ALLOC's time */
    assert_int_equal(events_of(db, X, ev, 8), 4);
    assert_int_equal(ev[1].kind, VH_EV_FREE);
    assert_int_equal(ev[1].tid, 1);
    assert_int_equal(ev[1].stack_id, 1);
    assert_int_equal(ev[1].time, 1000000);
    assert_int_equal(ev[1].flags & VH_EVF_IMPLICIT, 0);
    assert_int_equal(ev[2].kind, VH_EV_ALLOC);
    assert_int_equal(ev[2].tid, 2);
    assert_int_equal(ev[3].kind, VH_EV_FREE);
    assert_int_equal(ev[3].stack_id, 2);
    assert_int_equal(ev[3].time, 3000000);
    done(db, &b);
}

static void test_settle_alloc_after_free(void **state)
{
    struct capb b;
    struct vh_ev ev[8];
    (void)state;

    build_case_b(&b, 500);
    sqlite3 *db = load(&b);
    assert_non_null(db);
    assert_int_equal(HEAP(db, "live_bytes", 0), 5);       /* only the later block */
    assert_int_equal(q(db, "SELECT count(*) FROM leaks WHERE address=%d", (int)X), 0);
    assert_int_equal(STAT(db, "leaked_blocks", 0, 1), 0);
    assert_int_equal(HEAP(db, "frees", 0), 1);
    assert_int_equal(HEAP(db, "unknown_frees", 0), 0);
    assert_int_equal(STAT(db, "frees", 0, 1), 1);
    assert_int_equal(q(db, "SELECT frees FROM threads WHERE tid=2"), 1);
    assert_int_equal(q(db, "SELECT allocations FROM threads WHERE tid=1"), 2);
    assert_int_equal(meta_reordered(db), 1);
    assert_int_equal(stats.reordered, 1);
    assert_int_equal(events_of(db, X, ev, 8), 2);
    assert_int_equal(ev[0].kind, VH_EV_ALLOC);
    assert_int_equal(ev[0].tid, 1);
    assert_int_equal(ev[0].time, 1000000);
    assert_int_equal(ev[1].kind, VH_EV_FREE);
    assert_int_equal(ev[1].tid, 2);
    done(db, &b);
}

/* Beyond the window (50 us) nothing moves: today's implicit / unknown
 * frees. Exactly at it, it does. */
static void test_settle_window(void **state)
{
    struct capb b;
    sqlite3 *db;
    (void)state;

    build_case_a(&b, 1000000);
    assert_non_null(db = load(&b));
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key='implicit_frees'"), 1);
    assert_int_equal(HEAP(db, "unknown_frees", 0), 1);
    assert_int_equal(HEAP(db, "frees", 0), 1);
    assert_int_equal(STAT(db, "frees", 0, 2), 1);     /* tid 1's free took tid 2's block */
    assert_int_equal(meta_reordered(db), 0);
    done(db, &b);

    build_case_b(&b, 1000000);
    assert_non_null(db = load(&b));
    assert_int_equal(HEAP(db, "unknown_frees", 0), 1);
    assert_int_equal(HEAP(db, "frees", 0), 0);
    assert_int_equal(q(db, "SELECT count(*) FROM leaks WHERE address=%d", (int)X), 1);
    assert_int_equal(meta_reordered(db), 0);
    done(db, &b);

    for (int k = 0; k < 2; k++) {
        build_case_a(&b, 50000 + (uint64_t)k);
        assert_non_null(db = load(&b));
        assert_int_equal(meta_reordered(db), !k);
        assert_int_equal(q(db, "SELECT value FROM meta WHERE key='implicit_frees'"), k);
        done(db, &b);
        build_case_b(&b, 50000 + (uint64_t)k);
        assert_non_null(db = load(&b));
        assert_int_equal(meta_reordered(db), !k);
        assert_int_equal(HEAP(db, "unknown_frees", 0), k);
        done(db, &b);
    }
}

/* Within one thread records are in program order: never moved. */
static void test_settle_not_same_thread(void **state)
{
    struct capb b;
    sqlite3 *db;
    (void)state;

    uint32_t c1, c2;
    two_threads(&b, &c1, &c2);
    capb__alloc(&b, c1, 5, X, 10, 16, 1);
    capb__alloc(&b, c1, 10, X, 20, 32, 2);     /* x live: its free was lost */
    capb__free(&b, c1, 11, X);
    capb__free(&b, c1, 20, 0x8000);            /* unknown, ... */
    capb__alloc(&b, c1, 21, 0x8000, 30, 32, 3);    /* ... then allocated */
    capb__alloc(&b, c2, 30, 0xa000, 1, 16, 4);     /* another thread exists */
    assert_non_null(db = load(&b));
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key='implicit_frees'"), 1);
    assert_int_equal(HEAP(db, "frees", 0), 1);
    assert_int_equal(STAT(db, "frees", 0, 2), 1);
    assert_int_equal(HEAP(db, "unknown_frees", 0), 1);
    assert_int_equal(q(db, "SELECT count(*) FROM leaks WHERE address=%d", 0x8000), 1);
    assert_int_equal(meta_reordered(db), 0);
    done(db, &b);
}

/* The misordered pair straddles two batches of the loader (1024 events):
 * the ALLOC is the last event of batch 1, the FREE the first of batch 2. */
static void test_settle_across_batches(void **state)
{
    enum { BATCH_EVENTS = 1024 };
    struct capb b;
    sqlite3 *db;
    uint64_t t = 1000;
    (void)state;

    for (int kase = 0; kase < 2; kase++) {
        capb__init(&b, 1u << 20);
        uint32_t c1 = capb__chunk(&b), c2 = capb__chunk(&b), c3 = capb__chunk(&b);
        capb__thread(&b, c1, 1, 1);
        capb__thread(&b, c2, 1, 2);
        capb__thread(&b, c3, 1, 3);
        /* events before the pair: 3 THREAD, (case A) the first ALLOC of x,
         * and pairs of tid 3 */
        int before = 3 + !kase, pairs = (BATCH_EVENTS + BATCH_EVENTS - 1 - before) / 2;
        if (!kase)
            capb__alloc(&b, c1, 100, X, 10, 16, 1);
        if ((before + 2 * pairs) % BATCH_EVENTS != BATCH_EVENTS - 1) {
            capb__rss(&b, c3, 200, 4096);          /* one more to line it up */
            before++;
        }
        assert_int_equal((before + 2 * pairs) % BATCH_EVENTS, BATCH_EVENTS - 1);
        for (int i = 0; i < pairs; i++, t += 10) {
            capb__alloc(&b, c3, t, 0x100000 + 16 * (uint64_t)i, 8, 16, 5);
            capb__free(&b, c3, t + 5, 0x100000 + 16 * (uint64_t)i);
        }
        t += 100;
        if (!kase) {
            capb__alloc(&b, c2, t, X, 20, 32, 2);   /* event 2047 */
            capb__free(&b, c1, t + 400, X);         /* event 2048 */
            capb__free(&b, c2, t + 1000, X);
        } else {
            capb__free(&b, c2, t, X);               /* event 2047 */
            capb__alloc(&b, c1, t + 400, X, 10, 16, 1);     /* event 2048 */
        }
        assert_non_null(db = load(&b));
        assert_int_equal(meta_reordered(db), 1);
        assert_int_equal(q(db, "SELECT value FROM meta WHERE key='implicit_frees'"), 0);
        assert_int_equal(HEAP(db, "unknown_frees", 0), 0);
        assert_int_equal(HEAP(db, "frees", 0), pairs + 2 - kase);
        assert_int_equal(HEAP(db, "live_bytes", 0), 0);
        assert_int_equal(q(db, "SELECT count(*) FROM leaks"), 0);
        assert_int_equal(stats.records, (uint64_t)(before + 2 * pairs + 3 - kase));
        done(db, &b);
    }
}

/* A moved record overtakes records of its own thread: heaptrack's
 * temporary is still decided in that thread's program order. */
static void test_settle_keeps_thread_order(void **state)
{
    struct capb b;
    sqlite3 *db;
    (void)state;

    /* A: tid 1's z comes between its allocation and its free of x (so that
     * free is not temporary), and its free of x between z and z's free (so
     * neither is that one); tid 2's free of its x is */
    uint32_t c1, c2;
    two_threads(&b, &c1, &c2);
    capb__alloc(&b, c1, 100, X, 10, 16, 1);
    capb__alloc(&b, c2, 1000000, X, 20, 32, 2);
    capb__alloc(&b, c1, 1000200, 0x9000, 30, 32, 3);
    capb__free(&b, c1, 1000500, X);
    capb__free(&b, c1, 1000600, 0x9000);
    capb__free(&b, c2, 2000000, X);
    assert_non_null(db = load(&b));
    assert_int_equal(meta_reordered(db), 1);
    assert_int_equal(HEAP(db, "temporary", 0), 1);
    assert_int_equal(STAT(db, "temporary", 0, 2), 1);
    assert_int_equal(HEAP(db, "frees", 0), 3);
    assert_int_equal(HEAP(db, "live_bytes", 0), 0);
    done(db, &b);

    /* B: tid 1 frees its latest block w after tid 2's early FREE of x and
     * before its own ALLOC of x: temporary */
    capb__init(&b, 0);
    c1 = capb__chunk(&b);
    c2 = capb__chunk(&b);
    capb__thread(&b, c1, 1, 1);
    capb__thread(&b, c2, 1, 2);
    capb__alloc(&b, c1, 900000, 0x9000, 30, 32, 3);
    capb__free(&b, c2, 1000000, X);
    capb__free(&b, c1, 1000200, 0x9000);
    capb__alloc(&b, c1, 1000500, X, 10, 16, 1);
    assert_non_null(db = load(&b));
    assert_int_equal(meta_reordered(db), 1);
    assert_int_equal(STAT(db, "temporary", 0, 3), 1);
    assert_int_equal(HEAP(db, "temporary", 0), 1);
    assert_int_equal(HEAP(db, "frees", 0), 2);
    assert_int_equal(HEAP(db, "unknown_frees", 0), 0);
    assert_int_equal(HEAP(db, "live_bytes", 0), 0);
    done(db, &b);
}

/* A moving realloc's halves follow the same rules: tid 1's realloc moves
 * its block away from x (FREE realloc) just after tid 2's malloc got x. */
static void test_settle_realloc_halves(void **state)
{
    struct capb b;
    sqlite3 *db;
    struct capb_alloc mv = { .addr = 0xb000, .size = 40, .usable = 48, .stack = 4,
                             .func = VH_FN_REALLOC, .flags = VH_RF_REALLOC };
    (void)state;

    uint32_t c1, c2;
    two_threads(&b, &c1, &c2);
    capb__alloc(&b, c1, 100, X, 10, 16, 1);
    capb__alloc(&b, c2, 1000000, X, 20, 32, 2);
    capb__free_ex(&b, c1, 1000300, 0, VH_FN_REALLOC, X, VH_RF_REALLOC);
    capb__alloc_ex(&b, c1, VH_REC_ALLOC, 1000300, &mv);
    capb__free(&b, c2, 2000000, X);
    capb__free(&b, c1, 2000100, 0xb000);
    assert_non_null(db = load(&b));
    assert_int_equal(meta_reordered(db), 1);
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key='implicit_frees'"), 0);
    assert_int_equal(HEAP(db, "unknown_frees", 0), 0);
    assert_int_equal(HEAP(db, "frees", 0), 2);
    assert_int_equal(STAT(db, "frees", 0, 2), 1);
    assert_int_equal(STAT(db, "frees", 0, 4), 1);
    assert_int_equal(STAT(db, "temporary", 0, 1), 1);  /* realloc of the latest */
    assert_int_equal(HEAP(db, "live_bytes", 0), 0);
    done(db, &b);
}

#undef X

/* ---- randomized: the loader against a naive model ------------------------- */

#define R_BLOCKS 4096
#define R_STACKS 6
#define R_THREADS 3

struct m_block {
    int live;
    uint16_t heap, tag;
    uint32_t stack, tid;
    uint64_t addr, size, serial;
};

struct m_stat {
    long long allocations, frees, temporary, bytes, live, peak;
};

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(uint64_t n)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state % n;
}

/* Two heaps, three threads, allocations, frees, reallocs (in place and
 * moving) over a small address space so addresses are reused; the model
 * recomputes every stack's live bytes by brute force at each new peak. */
static void test_random_against_model(void **state)
{
    static struct m_block blk[R_BLOCKS];
    struct m_stat st[2][R_STACKS + 1];
    long long live[2] = { 0 }, peak[2] = { 0 }, temp[2] = { 0 };
    uint64_t last[R_THREADS] = { 0 }, serial = 0, t = 100;
    uint32_t ch[R_THREADS];
    struct capb b;
    (void)state;

    memset(blk, 0, sizeof blk);
    memset(st, 0, sizeof st);
    capb__init(&b, 1u << 22);
    for (int i = 0; i < R_THREADS; i++) {
        ch[i] = capb__chunk(&b);
        capb__thread(&b, ch[i], 1, 1000 + (uint32_t)i);
    }
    capb__heap_create(&b, ch[0], 2, 1, 0, 0, 0, "custom");
    for (int step = 0; step < 30000; step++) {
        int th = (int)rnd(R_THREADS), i = (int)rnd(R_BLOCKS);
        struct m_block *m = &blk[i];
        t += 1 + rnd(3);
        if (!m->live) {
            m->live = 1;
            m->heap = (uint16_t)rnd(2);
            m->stack = 1 + (uint32_t)rnd(R_STACKS);
            m->tag = (uint16_t)rnd(2);
            m->tid = (uint32_t)th;
            m->addr = 0x10000 + (uint64_t)i * 16;
            m->size = 1 + rnd(1000);
            m->serial = ++serial;
            capb__heap_alloc(&b, ch[th], t, m->heap, m->addr, m->size, m->stack, m->tag);
            st[m->heap][m->stack].allocations++;
            st[m->heap][m->stack].bytes += (long long)m->size;
        } else if (rnd(4) == 0) {
            /* realloc: in place (RESIZE) or moving to a free slot */
            struct capb_alloc a = { .size = 1 + rnd(1000), .stack = 1 + (uint32_t)rnd(R_STACKS),
                                    .heap = m->heap, .func = VH_FN_REALLOC };
            int j = (int)rnd(R_BLOCKS);
            if (last[th] == m->serial)
                temp[m->heap]++, st[m->heap][m->stack].temporary++;
            if (blk[j].live || j == i) {
                a.addr = a.usable = 0;
                a.addr = m->addr;
                a.usable = a.size;
                capb__alloc_ex(&b, ch[th], VH_REC_RESIZE, t, &a);
            } else {
                capb__free_ex(&b, ch[th], t, m->heap, VH_FN_REALLOC, m->addr, VH_RF_REALLOC);
                a.addr = 0x10000 + (uint64_t)j * 16;
                a.usable = a.size;
                a.flags = VH_RF_REALLOC;
                capb__alloc_ex(&b, ch[th], VH_REC_ALLOC, t, &a);
                blk[j] = *m;
                m->live = 0;
                m = &blk[j];
                m->addr = a.addr;
            }
            live[m->heap] -= (long long)m->size;
            st[m->heap][m->stack].live -= (long long)m->size;
            m->size = a.size;
            m->stack = a.stack;
            m->tag = 0;
            m->tid = (uint32_t)th;
            m->serial = ++serial;
            st[m->heap][m->stack].allocations++;
            st[m->heap][m->stack].bytes += (long long)m->size;
        } else {
            capb__free_ex(&b, ch[th], t, m->heap, VH_FN_FREE, m->addr, 0);
            if (last[th] == m->serial)
                temp[m->heap]++, st[m->heap][m->stack].temporary++;
            st[m->heap][m->stack].frees++;
            st[m->heap][m->stack].live -= (long long)m->size;
            live[m->heap] -= (long long)m->size;
            m->live = 0;
            last[th] = 0;
            continue;
        }
        /* an allocation happened (m is the block now) */
        st[m->heap][m->stack].live += (long long)m->size;
        live[m->heap] += (long long)m->size;
        last[th] = m->serial;
        if (live[m->heap] > peak[m->heap]) {
            peak[m->heap] = live[m->heap];
            for (int s = 1; s <= R_STACKS; s++) {
                long long sum = 0;
                for (int k = 0; k < R_BLOCKS; k++)
                    if (blk[k].live && blk[k].heap == m->heap && blk[k].stack == (uint32_t)s)
                        sum += (long long)blk[k].size;
                st[m->heap][s].peak = sum;
            }
        }
    }
    sqlite3 *db = load(&b);
    assert_non_null(db);
    for (int h = 0; h < 2; h++) {
        assert_int_equal(HEAP(db, "peak_bytes", h), peak[h]);
        assert_int_equal(HEAP(db, "live_bytes", h), live[h]);
        assert_int_equal(HEAP(db, "temporary", h), temp[h]);
        for (int s = 1; s <= R_STACKS; s++) {
            const struct m_stat *m = &st[h][s];
            assert_int_equal(STAT(db, "allocations", h, s), m->allocations);
            assert_int_equal(STAT(db, "frees", h, s), m->frees);
            assert_int_equal(STAT(db, "temporary", h, s), m->temporary);
            assert_int_equal(STAT(db, "bytes_allocated", h, s), m->bytes);
            assert_int_equal(STAT(db, "leaked_bytes", h, s), m->live);
            assert_int_equal(STAT(db, "peak_bytes", h, s), m->peak);
        }
        assert_int_equal(q(db, "SELECT sum(size) FROM leaks WHERE heap_id=%d", h), live[h]);
    }
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key='implicit_frees'"), 0);
    assert_int_equal(q(db, "SELECT sum(unknown_frees) FROM heaps"), 0);
    done(db, &b);
}

/* The live map against a plain array, with heavy reuse so that deletion's
 * backward shifts and growth are both exercised. */
static void test_livemap(void **state)
{
    enum { N = 5000 };
    static uint64_t model[N];      /* size + 1 of the block at slot i, or 0 */
    struct livemap *m = livemap__new();
    size_t count = 0;
    (void)state;

    assert_non_null(m);
    memset(model, 0, sizeof model);
    for (int step = 0; step < 200000; step++) {
        int i = (int)rnd(step < 100000 ? N : N / 10);
        uint64_t addr = 0x7f0000000000ull + (uint64_t)i * 4096 * 16;  /* aliasing strides */
        struct vh_live_block *b = livemap__find(m, addr);
        assert_true((b != NULL) == (model[i] != 0));
        if (b) {
            assert_int_equal(b->size + 1, model[i]);
            livemap__remove(m, b);
            model[i] = 0;
            count--;
        } else {
            int existed;
            b = livemap__insert(m, addr, &existed);
            assert_non_null(b);
            assert_false(existed);
            b->size = (uint64_t)step;
            model[i] = (uint64_t)step + 1;
            count++;
        }
        assert_int_equal(livemap__count(m), count);
    }
    size_t pos = 0, seen = 0;
    struct vh_live_block *b;
    while ((b = livemap__next(m, &pos))) {
        int i = (int)((b->addr - 0x7f0000000000ull) / (4096 * 16));
        assert_int_equal(b->size + 1, model[i]);
        seen++;
    }
    assert_int_equal(seen, count);
    livemap__free(m);
}

/* Random streams of every record kind with small id and address spaces (so
 * that heaps are created, nested, destroyed and reused, blocks moved onto
 * live ones, ...) never fail the load, and the totals always agree with
 * each other: per heap, the stacks' at-peak bytes sum to the heap's peak,
 * leaks and stack leaks sum to the heap's leaked bytes, and the series
 * balance to the live bytes. Two threads a few ns apart: the loader also
 * settles misorders here (settle() runs), and the totals still agree. */
static void test_random_streams_consistent(void **state)
{
    uint64_t reordered = 0;
    (void)state;
    for (int round = 0; round < 60; round++) {
        struct capb b;
        uint64_t t = 1;
        capb__init(&b, 1u << 16);
        uint32_t ch[2] = { capb__chunk(&b), capb__chunk(&b) };
        capb__thread(&b, ch[0], 0, 1);
        capb__thread(&b, ch[1], 0, 2);
        for (int i = 0; i < 600; i++) {
            uint32_t c = ch[rnd(2)];
            uint16_t heap = (uint16_t)rnd(4);
            uint64_t addr = 16 * (1 + rnd(40));
            t += rnd(3);
            switch (rnd(12)) {
            case 0: case 1: case 2: case 3:
                capb__heap_alloc(&b, c, t, heap, addr, rnd(100), (uint32_t)rnd(5), (uint16_t)rnd(2));
                break;
            case 4: case 5:
                capb__free_ex(&b, c, t, heap, VH_FN_FREE, addr, rnd(4) ? 0 : VH_RF_REALLOC);
                break;
            case 6:
                capb__resize(&b, c, t, addr, rnd(100), 100, (uint32_t)rnd(5));
                break;
            case 7:
                capb__move(&b, c, t, heap, addr, 16 * (1 + rnd(40)));
                break;
            case 8:
                capb__heap_create(&b, c, t, (uint32_t)rnd(5), (uint32_t)rnd(5), 0, 0, "h");
                break;
            case 9:
                capb__heap_destroy(&b, c, t, heap);
                break;
            case 10: {
                struct capb_alloc a = { .size = 5, .stack = 1, .heap = heap,
                                        .flags = VH_RF_FAILED };
                capb__alloc_ex(&b, c, VH_REC_ALLOC, t, &a);
                break;
            }
            default: {
                uint64_t rec[3] = { 0x90 | (uint64_t)3 << 16, t, 0 };  /* unknown, 3 words */
                capb__raw(&b, c, rec, sizeof rec);
                break;
            }
            }
        }
        sqlite3 *db = load(&b);
        assert_non_null(db);
        assert_int_equal(stats.damage_count, 0);
        assert_int_equal(q(db, "SELECT count(*) FROM heaps h WHERE peak_bytes != "
                               "(SELECT coalesce(sum(peak_bytes), 0) FROM stack_stats "
                               "WHERE heap_id = h.id)"), 0);
        assert_int_equal(q(db, "SELECT count(*) FROM heaps h WHERE peak_blocks != "
                               "(SELECT coalesce(sum(peak_blocks), 0) FROM stack_stats "
                               "WHERE heap_id = h.id)"), 0);
        assert_int_equal(q(db, "SELECT count(*) FROM heaps h WHERE leaked_bytes != "
                               "(SELECT coalesce(sum(size), 0) FROM leaks WHERE heap_id = h.id) "
                               "OR leaked_bytes != (SELECT coalesce(sum(leaked_bytes), 0) "
                               "FROM stack_stats WHERE heap_id = h.id)"), 0);
        assert_int_equal(q(db, "SELECT count(*) FROM heaps h WHERE live_bytes != "
                               "(SELECT coalesce(sum(bytes_allocated) - sum(bytes_freed), 0) "
                               "FROM series WHERE heap_id = h.id)"), 0);
        assert_int_equal(q(db, "SELECT count(*) FROM heaps h WHERE allocations != "
                               "(SELECT coalesce(sum(allocations), 0) FROM stack_stats "
                               "WHERE heap_id = h.id)"), 0);
        assert_int_equal(q(db, "SELECT count(*) FROM heaps WHERE peak_bytes < live_bytes"), 0);
        assert_true(q(db, "SELECT value FROM meta WHERE key='unknown_records'") > 0);
        assert_int_equal(q(db, "SELECT value FROM meta WHERE key='reordered'"), stats.reordered);
        reordered += stats.reordered;
        done(db, &b);
    }
    assert_true(reordered > 0);
}

/* REACH records give leaks.class by address; a block they do not name, a
 * custom heap's, and every block when the scan did not finish, get NULL;
 * the REACH_END's totals are the reach row. */
static void reach_capture(struct capb *b, uint32_t status)
{
    struct {
        struct vh_rec_reach r;
        uint64_t e[2];
    } rec = { .r.h = { .type = VH_REC_REACH, .a = 4, .b = 2 }, .r.time = 15,
              .e = { 0x1000 | VH_REACH_LOST, 0x3000 | VH_REACH_POSSIBLE } };
    struct vh_rec_reach_end end = { .h = { .type = VH_REC_REACH_END, .a = 11 }, .time = 16,
                                    .blocks = 3, .root_bytes = 4096, .scan_ns = 777,
                                    .status = status };
    uint32_t ch = capb__start(b, 1, 77);
    capb__alloc(b, ch, 10, 0x1000, 100, 112, 1);
    capb__alloc(b, ch, 11, 0x2000, 200, 208, 1);
    capb__alloc(b, ch, 12, 0x3000, 300, 304, 1);
    capb__heap_alloc(b, ch, 13, 1, 0x1000 + 64, 8, 0, 1);
    capb__raw(b, ch, &rec, sizeof rec);
    capb__raw(b, ch, &end, sizeof end);
    capb__end(b, ch, 20);
}

static void test_reach_classes(void **state)
{
    struct capb b;
    (void)state;
    reach_capture(&b, VH_REACH_DONE);
    sqlite3 *db = load(&b);
    assert_non_null(db);
    assert_int_equal(q(db, "SELECT class FROM leaks WHERE heap_id = 0 AND address=%d", 0x1000),
                     VH_REACH_LOST);
    assert_int_equal(q(db, "SELECT class FROM leaks WHERE address=%d", 0x3000),
                     VH_REACH_POSSIBLE);
    assert_int_equal(q(db, "SELECT count(*) FROM leaks WHERE class IS NULL"), 2);
    assert_int_equal(q(db, "SELECT scan_ns FROM reach"), 777);
    assert_int_equal(q(db, "SELECT root_bytes FROM reach WHERE status = 'done'"), 4096);
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key='unknown_records'"), 0);
    done(db, &b);

    reach_capture(&b, VH_REACH_TIMEOUT);
    db = load(&b);
    assert_non_null(db);
    assert_int_equal(q(db, "SELECT count(*) FROM leaks WHERE class IS NOT NULL"), 0);
    assert_int_equal(q(db, "SELECT count(*) FROM reach WHERE status = 'timeout'"), 1);
    done(db, &b);
}

/* A scan on request (`ctl reach`): the live set at its BEGIN, classified
 * at its REQUEST END, is scan 1's reach_blocks; a block freed after the
 * BEGIN is in it, one allocated after is not; leaks.class is untouched
 * (no scan at exit). Then a BEGIN whose END never came: no scan at all. */
static void reach_request_capture(struct capb *b, int ended)
{
    struct {
        struct vh_rec_reach r;
        uint64_t e[2];
    } rec = { .r.h = { .type = VH_REC_REACH, .a = 4, .b = 2 }, .r.time = 17,
              .e = { 0x1000 | VH_REACH_LOST, 0x2000 | VH_REACH_REACHABLE } };
    struct vh_rec_reach begin = { .h = { .type = VH_REC_REACH, .flags = VH_REACH_F_BEGIN,
                                         .a = 2 }, .time = 14 };
    struct vh_rec_reach_end end = { .h = { .type = VH_REC_REACH_END,
                                           .flags = VH_REACH_F_REQUEST, .a = 11 },
                                    .time = 18, .blocks = 2, .status = VH_REACH_DONE };
    uint32_t ch = capb__start(b, 1, 77);
    capb__alloc(b, ch, 10, 0x1000, 100, 112, 1);
    capb__alloc(b, ch, 11, 0x2000, 200, 208, 1);
    capb__raw(b, ch, &begin, sizeof begin);
    capb__free(b, ch, 15, 0x2000);
    capb__alloc(b, ch, 16, 0x4000, 400, 400, 1);
    capb__raw(b, ch, &rec, sizeof rec);
    if (ended)
        capb__raw(b, ch, &end, sizeof end);
    capb__end(b, ch, 20);
}

static void test_reach_on_request(void **state)
{
    struct capb b;
    (void)state;
    reach_request_capture(&b, 1);
    sqlite3 *db = load(&b);
    assert_non_null(db);
    assert_int_equal(q(db, "SELECT count(*) FROM reach_blocks WHERE scan = 1"), 2);
    assert_int_equal(q(db, "SELECT class FROM reach_blocks WHERE address=%d", 0x1000),
                     VH_REACH_LOST);
    assert_int_equal(q(db, "SELECT class FROM reach_blocks WHERE address=%d", 0x2000),
                     VH_REACH_REACHABLE);
    assert_int_equal(q(db, "SELECT count(*) FROM reach_blocks WHERE address=%d", 0x4000), 0);
    assert_int_equal(q(db, "SELECT time FROM reach WHERE scan = 1 AND status = 'done'"), 14);
    assert_int_equal(q(db, "SELECT count(*) FROM reach WHERE scan = 0"), 0);
    assert_int_equal(q(db, "SELECT count(*) FROM leaks WHERE class IS NOT NULL"), 0);
    done(db, &b);

    reach_request_capture(&b, 0);
    db = load(&b);
    assert_non_null(db);
    assert_int_equal(q(db, "SELECT count(*) FROM reach_blocks"), 0);
    assert_int_equal(q(db, "SELECT count(*) FROM reach"), 0);
    done(db, &b);
}

static void test_schema_embedded(void **state)
{
    sqlite3 *db = NULL;
    char err[256];
    (void)state;

    assert_non_null(strstr(vh_schema_sql, "CREATE TABLE stack_totals"));
    assert_non_null(strstr(vh_schema_sql, "CREATE VIEW stack_stats"));
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(vh_schema_apply(db, VH_SCHEMA_TABLES, err, sizeof err), 0);
    assert_int_equal(q(db, "SELECT count(*) FROM sqlite_master WHERE type='index' "
                           "AND sql IS NOT NULL"), 0);
    assert_int_equal(vh_schema_apply(db, VH_SCHEMA_INDEXES, err, sizeof err), 0);
    assert_true(q(db, "SELECT count(*) FROM sqlite_master WHERE type='index' "
                      "AND sql IS NOT NULL") > 0);
    assert_int_equal(q(db, "SELECT count(*) FROM sqlite_master WHERE type='view'"), 9);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rowq_null_and_real),
        cmocka_unit_test(test_counts_and_leaks),
        cmocka_unit_test(test_reach_classes),
        cmocka_unit_test(test_reach_on_request),
        cmocka_unit_test(test_stack_tree),
        cmocka_unit_test(test_missing_stacks_bounded),
        cmocka_unit_test(test_peak_attribution),
        cmocka_unit_test(test_temporary_per_thread),
        cmocka_unit_test(test_realloc_in_place_and_moving),
        cmocka_unit_test(test_heap_destroy_not_leak),
        cmocka_unit_test(test_move_keeps_stack),
        cmocka_unit_test(test_unknown_and_implicit_frees),
        cmocka_unit_test(test_modules_frames_tags_marks),
        cmocka_unit_test(test_process_and_series),
        cmocka_unit_test(test_damage_loaded_partially),
        cmocka_unit_test(test_not_a_capture),
        cmocka_unit_test(test_refuses_to_replace_other_files),
        cmocka_unit_test(test_open_read_checks),
        cmocka_unit_test(test_ensure),
        cmocka_unit_test(test_settle_free_before_alloc),
        cmocka_unit_test(test_settle_alloc_after_free),
        cmocka_unit_test(test_settle_window),
        cmocka_unit_test(test_settle_not_same_thread),
        cmocka_unit_test(test_settle_across_batches),
        cmocka_unit_test(test_settle_keeps_thread_order),
        cmocka_unit_test(test_settle_realloc_halves),
        cmocka_unit_test(test_random_against_model),
        cmocka_unit_test(test_random_streams_consistent),
        cmocka_unit_test(test_livemap),
        cmocka_unit_test(test_schema_embedded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
