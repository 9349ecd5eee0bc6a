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

    r = row_at(&s, 0);
    assert_int_equal(r->live, 0);
    assert_int_equal(r->allocs, 0);
    r = row_at(&s, 1 * MS);
    assert_int_equal(r->live, 100);
    assert_int_equal(r->allocs, 1);
    assert_int_equal(r->bytes_alloc, 100);
    r = row_at(&s, 2 * MS);
    assert_int_equal(r->live, 300);
    assert_int_equal(r->max_live, 300);
    r = row_at(&s, 3 * MS);
    assert_int_equal(r->live, 200);
    assert_int_equal(r->frees, 1);
    assert_int_equal(r->bytes_freed, 100);
    r = row_at(&s, 4 * MS);
    assert_int_equal(r->live, 200);
    assert_int_equal(r->max_live, 250);
    assert_int_equal(r->allocs, 1);
    assert_int_equal(r->frees, 1);
    assert_int_equal(r->temporary, 1);
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
