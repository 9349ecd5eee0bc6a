/* test_live.c — `top --live`'s looks (query/live.h) over tables the test
 * fills: each look's live bytes, growth since the first look and rate
 * since the previous one are worked out here from the rows put in, not
 * taken from the module's own output. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <sqlite3.h>
#include <string.h>

#include "analyze/query/live.h"

#define S 1000000000ull            /* a second, in ns */

/* The columns live.c reads, as plain tables (the schema's stack_stats is
 * a view over more). */
static sqlite3 *db_with(const char *rows)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TABLE processes(id INTEGER, runtime_ns INTEGER,"
                                  " start_realtime_ns INTEGER, sample_rate INTEGER);"
                                  "CREATE TABLE heaps(live_bytes INTEGER, live_blocks INTEGER,"
                                  " bytes_allocated INTEGER);"
                                  "CREATE TABLE stack_stats(stack_id INTEGER, heap_id INTEGER,"
                                  " leaked_bytes INTEGER, leaked_blocks INTEGER,"
                                  " bytes_allocated INTEGER);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, rows, NULL, NULL, NULL), SQLITE_OK);
    return db;
}

static const struct vh_live_row *row(struct vh_live *l, int64_t id)
{
    size_t n = 16;
    const struct vh_live_row *r = vh_live__top(l, VH_LIVE_BY_LIVE, &n);
    for (size_t i = 0; i < n; i++)
        if (r[i].stack_id == id)
            return &r[i];
    return NULL;
}

/* Look 1 at t=10 s (the program started at t=6 s): stack 1 holds 100 of
 * 1000 allocated, in two heaps' rows; stack 2 holds 40 of 40. Look 2 two
 * seconds later: stack 1 holds 300 of 1600, stack 2 freed all, stack 3
 * is new with 50 of 80. */
static void test_two_looks(void **state)
{
    (void)state;
    struct vh_live *l = vh_live__new();
    char err[256];
    assert_non_null(l);
    sqlite3 *a = db_with("INSERT INTO processes VALUES(1, 0, 6000000000, 0);"
                         "INSERT INTO heaps VALUES(140, 3, 1040);"
                         "INSERT INTO stack_stats VALUES(1, 0, 60, 1, 600),(1, 1, 40, 1, 400),"
                         "(2, 0, 40, 1, 40);");
    assert_int_equal(vh_live__look(l, a, 10 * S, err, sizeof err), 0);
    const struct vh_live_totals *t = vh_live__totals(l);
    assert_int_equal(t->looks, 1);
    assert_true(t->runtime_ns == 4 * S);
    assert_true(t->live_bytes == 140 && t->growth == 0);
    assert_true(t->rate == 1040.0 / 4);     /* the first look: the run's average */
    assert_true(row(l, 1)->live_bytes == 100 && row(l, 1)->live_blocks == 2);
    assert_true(row(l, 1)->rate == 1000.0 / 4);

    sqlite3 *b = db_with("INSERT INTO processes VALUES(1, 0, 6000000000, 0);"
                         "INSERT INTO heaps VALUES(350, 5, 1720);"
                         "INSERT INTO stack_stats VALUES(1, 0, 300, 4, 1600),(2, 0, 0, 0, 40),"
                         "(3, 0, 50, 1, 80);");
    assert_int_equal(vh_live__look(l, b, 12 * S, err, sizeof err), 0);
    assert_int_equal(t->looks, 2);
    assert_true(t->growth == 350 - 140);
    assert_true(t->rate == (1720.0 - 1040) / 2);
    assert_true(row(l, 1)->growth == 200 && row(l, 1)->rate == 600.0 / 2);
    assert_true(row(l, 3)->growth == 50 && row(l, 3)->first_live == 0);
    assert_null(row(l, 2));                 /* holds nothing now: not ranked by live */

    size_t n = 16;
    const struct vh_live_row *g = vh_live__top(l, VH_LIVE_BY_GROWTH, &n);
    assert_int_equal(n, 2);                 /* stack 2 shrank: nothing to show */
    assert_int_equal(g[0].stack_id, 1);
    assert_int_equal(g[1].stack_id, 3);
    n = 1;
    const struct vh_live_row *r = vh_live__top(l, VH_LIVE_BY_RATE, &n);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].stack_id, 1);     /* 300/s beats stack 3's 40/s */
    sqlite3_close(a);
    sqlite3_close(b);
    vh_live__free(l);
}

/* A DB without the tables: an error with its reason, not a crash, and the
 * view keeps what it had. */
static void test_bad_db(void **state)
{
    (void)state;
    struct vh_live *l = vh_live__new();
    char err[256] = "";
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(vh_live__look(l, db, S, err, sizeof err), -EIO);
    assert_non_null(strstr(err, "heaps"));
    assert_int_equal(vh_live__totals(l)->looks, 0);
    sqlite3_close(db);
    vh_live__free(l);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(vh_live__by_name(VH_LIVE_BY_LIVE), "live");
    assert_string_equal(vh_live__by_name(VH_LIVE_BY_GROWTH), "growth");
    assert_string_equal(vh_live__by_name(VH_LIVE_BY_RATE), "rate");
    assert_string_equal(vh_live__by_name(VH_LIVE_BY_N), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_looks),
        cmocka_unit_test(test_bad_db),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
