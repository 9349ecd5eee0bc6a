/* test_frag_series.c — `frag --series` replays the event stream into a
 * fragtrack; at each point it must say what `frag --at` says of that
 * instant. The shapes here are where the two parted (issue 27 item 16,
 * frag_loomsim): a road or a declared region of the loom ends between two
 * points and the loom then takes, or moves a block to, the address where it
 * began. And a stream that disagrees with itself: what the replay cannot
 * apply is counted and said, not passed over. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "analyze/cmd/query.h"
#include "analyze/query/frag_rows.h"
#include "analyze/query/frag_run.h"
#include "analyze/store/events.h"
#include "tests/unit/capture_builder.h"
#include "tests/unit/load_fixture.h"

static const uint64_t L = 0x200000000ull, P = 0x4000;   /* a loom of 16 KiB pages */

/* The loom's life, each step between two points of a series every 4 ns;
 * the blocks live at each point are what this wrote. */
static sqlite3 *loom_capture(struct capb *b)
{
    struct load_opts o = { .progress = 0, .no_symbols = 1 };
    capb__init(b, 0);
    uint32_t ch = capb__chunk(b);
    capb__thread(b, ch, 1, 5);
    capb__heap_create(b, ch, 2, 1, 0, L, 64 * P, "loom");
    capb__region(b, ch, 2, 1, 2, VH_REGION_UNUSED, L + 8 * P, 8 * P);
    /* point 4: the region is at L + 8P; it shrinks, and the loom takes its
     * old base */
    capb__region(b, ch, 5, 1, 2, VH_REGION_UNUSED, L + 9 * P, 7 * P);
    capb__heap_alloc(b, ch, 6, 1, L + 8 * P, 100, 1, 0);
    /* point 12: a road at L + 20P; it goes, and the loom takes its base */
    capb__heap_create(b, ch, 10, 2, 1, L + 20 * P, 4 * P, "road");
    capb__heap_destroy(b, ch, 13, 2);
    capb__heap_alloc(b, ch, 14, 1, L + 20 * P, 200, 2, 0);
    /* point 20: a region at L + 40P; it ends, a block moves onto its base
     * and is freed there */
    capb__heap_alloc(b, ch, 18, 1, L + 30 * P, 300, 3, 0);
    capb__region(b, ch, 18, 1, 3, VH_REGION_UNUSED, L + 40 * P, 4 * P);
    capb__region(b, ch, 21, 1, 3, VH_REGION_NONE, 0, 0);
    capb__move(b, ch, 22, 1, L + 30 * P, L + 40 * P);
    capb__free_ex(b, ch, 26, 1, VH_FN_CUSTOM, L + 40 * P, 0);
    capb__end(b, ch, 30);
    return fx_load(b, &o);
}

static void test_series_equals_moments(void **state)
{
    static const uint64_t blocks[] = { 0, 0, 1, 1, 2, 3, 3, 2, 2 };  /* at 0, 4, ..., 28, 30 */
    struct capb b;
    struct frag_run run;
    struct frag_opts fo;
    struct frag_point *pts = NULL;
    size_t n = 0;
    (void)state;

    char err[256];
    sqlite3 *db = loom_capture(&b);
    // as frag --heap 'loom/*' chooses: the loom and its road (a line
    // comment: the pattern contains a slash-star)
    assert_int_equal(sqlite3_exec(db, "CREATE TEMP TABLE vh_heap_sel(id INTEGER PRIMARY KEY)",
                                  NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(vh_heap_select(db, "loom/*", "temp.vh_heap_sel", err, sizeof err), 2);
    frag_opts__default(&fo);
    assert_int_equal(frag_run__open("frag", db, "loom/*", &run), 0);
    struct frag_misses miss;
    assert_int_equal(frag_run__series(&run, &fo, 0, UINT64_MAX, 4, &pts, &n, &miss), 0);
    assert_int_equal(miss.onto_live + miss.unknown, 0);
    assert_int_equal(n, sizeof blocks / sizeof *blocks);
    for (size_t i = 0; i < n; i++) {
        struct frag_moment m;
        char at[32];
        const struct frag_totals *s = &pts[i].t, *w;
        snprintf(at, sizeof at, "%" PRIu64 "ns", pts[i].time);
        assert_int_equal(frag_run__moment(&run, at, &fo, &m), 0);
        w = &m.r->t;
        print_message("at %s: series %" PRIu64 " blocks, %" PRIu64 " free in %" PRIu64
                      " holes; the moment %" PRIu64 ", %" PRIu64 ", %" PRIu64 "\n",
                      at, s->blocks, s->free, s->holes, w->blocks, w->free, w->holes);
        assert_int_equal(s->blocks, blocks[i]);
        assert_int_equal(w->blocks, blocks[i]);
        assert_int_equal(s->usable, w->usable);
        assert_int_equal(s->free, w->free);
        assert_int_equal(s->holes, w->holes);
        assert_int_equal(s->largest, w->largest);
        assert_int_equal(s->footprint, w->footprint);
        assert_int_equal(s->reclaim, w->reclaim);
        assert_int_equal(s->pages, w->pages);
        frag_moment__free(&m);
    }
    free(pts);
    frag_run__free(&run);
    done(db, &b);
}

/* The DB's event stream replaced by one that allocates twice at 0x1000
 * and frees 0x9000, which it never allocated (what a damaged or foreign
 * DB may hold: the loader frees first and never frees what it did not
 * hold). */
static void rewrite_events(void)
{
    static const struct vh_ev ev[] = {
        { .time = 2, .addr = 0x1000, .size = 100, .usable = 112, .stack_id = 1,
          .kind = VH_EV_ALLOC },
        { .time = 3, .addr = 0x1000, .size = 50, .usable = 56, .stack_id = 1,
          .kind = VH_EV_ALLOC },
        { .time = 4, .addr = 0x9000, .size = 10, .usable = 16, .stack_id = 1,
          .kind = VH_EV_FREE },
        { .time = 5, .addr = 0x1000, .size = 50, .usable = 56, .stack_id = 1,
          .kind = VH_EV_FREE },
    };
    struct evwriter_opts eo = { 0 };
    struct evwriter *w = NULL;
    sqlite3 *db = NULL;
    char err[256];
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "BEGIN; DELETE FROM events; DELETE FROM checkpoints",
                                  NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(evwriter__new(db, &eo, &w, err, sizeof err), 0);
    for (size_t i = 0; i < sizeof ev / sizeof *ev; i++)
        assert_int_equal(evwriter__add(w, &ev[i]), 0);
    assert_int_equal(evwriter__finish(w, NULL), 0);
    evwriter__free(w);
    assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static void test_series_counts_misses(void **state)
{
    struct load_opts o = { .progress = 0, .no_symbols = 1 };
    struct frag_misses miss = { 9, 9 };
    struct frag_point *pts = NULL;
    struct frag_run run;
    struct frag_opts fo;
    struct capb b;
    size_t n = 0;
    (void)state;

    capb__init(&b, 0);
    uint32_t ch = capb__chunk(&b);
    capb__thread(&b, ch, 1, 5);
    capb__alloc(&b, ch, 2, 0x1000, 100, 112, 1);
    capb__free(&b, ch, 5, 0x1000);
    capb__end(&b, ch, 10);
    sqlite3_close(fx_load(&b, &o));
    rewrite_events();
    sqlite3 *db = fx_open();
    assert_int_equal(sqlite3_exec(db, "CREATE TEMP TABLE vh_heap_sel(id INTEGER PRIMARY KEY)",
                                  NULL, NULL, NULL), SQLITE_OK);
    frag_opts__default(&fo);
    assert_int_equal(frag_run__open("frag", db, NULL, &run), 0);
    assert_int_equal(frag_run__series(&run, &fo, 0, UINT64_MAX, 0, &pts, &n, &miss), 0);
    assert_int_equal(miss.onto_live, 1);
    assert_int_equal(miss.unknown, 1);

    /* and in the JSON, beside the series */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct out *out = out__begin(OUT_JSON, 0, f);
    assert_int_equal(frag_rows__series(&run, &fo, pts, n, &miss, out), 0);
    assert_int_equal(out__end(out), 0);
    fclose(f);
    assert_non_null(strstr(text, "\"replay\""));
    assert_non_null(strstr(text, "\"allocations_onto_live\": 1"));
    assert_non_null(strstr(text, "\"unknown_blocks\": 1"));
    free(text);
    free(pts);
    frag_run__free(&run);
    done(db, &b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_series_equals_moments),
        cmocka_unit_test(test_series_counts_misses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
