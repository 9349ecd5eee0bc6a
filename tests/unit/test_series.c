/* test_series.c — query/series.c against a capture whose every event is
 * known: per 1 ms interval, live bytes at its end, the peak within it,
 * and the calls and bytes that happened in it, as the events put in say. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "analyze/query/series.h"
#include "tests/unit/capture_builder.h"
#include "tests/unit/load_fixture.h"

#define MS 1000000ull

/* The row whose span holds time t. */
static const struct vh_series_row *row_at(const struct vh_series *s, uint64_t t)
{
    for (size_t i = 0; i < s->nrows; i++)
        if (s->rows[i].start <= t && t < s->rows[i].end)
            return &s->rows[i];
    fail_msg("no row holds %llu", (unsigned long long)t);
    return NULL;
}

static void test_series_intervals(void **state)
{
    struct load_opts o = { .progress = 0, .no_symbols = 1 };
    /* each interval as the events below make it (start: a time in it) */
    static const struct vh_series_row want[] = {
        { .start = 0, .live = 0, .max_live = 0 },
        { .start = 1 * MS, .live = 100, .max_live = 100, .allocs = 1, .bytes_alloc = 100 },
        { .start = 2 * MS, .live = 300, .max_live = 300, .allocs = 1, .bytes_alloc = 200 },
        { .start = 3 * MS, .live = 200, .max_live = 300, .frees = 1, .bytes_freed = 100 },
        { .start = 4 * MS, .live = 200, .max_live = 250, .allocs = 1, .frees = 1,
          .temporary = 1, .bytes_alloc = 50, .bytes_freed = 50 },
    };
    struct vh_series s;
    struct capb b;
    const struct vh_series_row *r;
    uint32_t ch;

    (void)state;
    ch = capb__start(&b, 1, 7);
    capb__alloc(&b, ch, 1 * MS + 10, 0x1000, 100, 112, 0);   /* [1, 2): +100          */
    capb__alloc(&b, ch, 2 * MS + 500, 0x2000, 200, 208, 0);  /* [2, 3): +200          */
    capb__free(&b, ch, 3 * MS + 500, 0x1000);                 /* [3, 4): -100          */
    capb__alloc(&b, ch, 4 * MS + 200, 0x3000, 50, 64, 0);    /* [4, 5): +50, then     */
    capb__free(&b, ch, 4 * MS + 300, 0x3000);                 /*   -50: a temporary    */
    capb__end(&b, ch, 5 * MS + 900);
    sqlite3 *db = fx_load(&b, &o);
    /* what a query command's open makes (cmd/query.c): --heap's choice */
    assert_int_equal(sqlite3_exec(db, "CREATE TEMP TABLE vh_heap_sel(id INTEGER PRIMARY KEY)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);

    struct vh_series_ask a = { .cmd = "series", .db = db, .interval = MS };
    assert_int_equal(vh_series__read(&a, &s), 0);
    assert_int_equal(s.interval, MS);
    assert_true(s.nrows >= 5);

    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        const struct vh_series_row *w = &want[k];
        r = row_at(&s, w->start);
        assert_int_equal(r->live, w->live);
        assert_int_equal(r->max_live, w->max_live);
        assert_int_equal(r->allocs, w->allocs);
        assert_int_equal(r->frees, w->frees);
        assert_int_equal(r->temporary, w->temporary);
        assert_int_equal(r->bytes_alloc, w->bytes_alloc);
        assert_int_equal(r->bytes_freed, w->bytes_freed);
    }
    vh_series__free(&s);
    done(db, &b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_series_intervals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
