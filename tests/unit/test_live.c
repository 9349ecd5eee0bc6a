/* test_live.c — `top --live`'s looks (query/live.h) over tables the test
 * puts in (the loader's counters as load/follow.c hands them over): each
 * look's live bytes, growth since the first look and rate since the
 * previous one are worked out here from the rows put in, not taken from
 * the module's own output. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "analyze/query/live.h"

#define S 1000000000ull            /* a second, in ns */

static const struct vh_live_row *row(struct vh_live *l, int64_t id)
{
    size_t n = 16;
    const struct vh_live_row *r = vh_live__top(l, VH_LIVE_BY_LIVE, &n);
    for (size_t i = 0; i < n; i++)
        if (r[i].stack_id == id)
            return &r[i];
    return NULL;
}

/* Look 1 at t=10 s (the program started at t=6 s, its latest record 4 s
 * in): stack 1 holds 100 of 1000 allocated, in two heaps' rows; stack 2
 * holds 40 of 40. Look 2 two seconds later, its latest record 2 s later
 * too: stack 1 holds 300 of 1600, stack 2 freed all, stack 3 is new with
 * 50 of 80. */
static void test_two_looks(void **state)
{
    (void)state;
    struct vh_live *l = vh_live__new();
    assert_non_null(l);
    struct vh_live_in a = { .live_bytes = 140, .live_blocks = 3, .allocated = 1040,
                            .start_realtime_ns = 6 * S, .last_time_ns = 4 * S };
    const struct vh_live_in_row ra[] = { { 1, 60, 1, 600 }, { 1, 40, 1, 400 }, { 2, 40, 1, 40 } };
    assert_int_equal(vh_live__look(l, &a, ra, 3, 10 * S), 0);
    const struct vh_live_totals *t = vh_live__totals(l);
    assert_int_equal(t->looks, 1);
    assert_true(t->runtime_ns == 4 * S);
    assert_true(t->live_bytes == 140 && t->growth == 0);
    assert_true(t->rate == 1040.0 / 4);     /* the first look: the run's average */
    assert_true(row(l, 1)->live_bytes == 100 && row(l, 1)->live_blocks == 2);
    assert_true(row(l, 1)->rate == 1000.0 / 4);

    struct vh_live_in b = { .live_bytes = 350, .live_blocks = 5, .allocated = 1720,
                            .start_realtime_ns = 6 * S, .last_time_ns = 6 * S };
    const struct vh_live_in_row rb[] = { { 1, 300, 4, 1600 }, { 2, 0, 0, 40 }, { 3, 50, 1, 80 } };
    assert_int_equal(vh_live__look(l, &b, rb, 3, 12 * S), 0);
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
    vh_live__free(l);
}

/* A look with no newer record than the last (an idle program): the
 * interval is the caller's clock since the previous look, and nothing
 * allocated in it is a rate of 0, not a division by 0. */
static void test_idle_look(void **state)
{
    (void)state;
    struct vh_live *l = vh_live__new();
    assert_non_null(l);
    struct vh_live_in in = { .live_bytes = 64, .live_blocks = 1, .allocated = 64,
                             .start_realtime_ns = 1 * S, .last_time_ns = 1 * S };
    const struct vh_live_in_row rows[] = { { 7, 64, 1, 64 } };
    assert_int_equal(vh_live__look(l, &in, rows, 1, 2 * S), 0);
    in.allocated = 96;                      /* counted, but no newer record time */
    assert_int_equal(vh_live__look(l, &in, rows, 1, 6 * S), 0);
    assert_true(vh_live__totals(l)->rate == 32.0 / 4);
    assert_true(row(l, 7)->rate == 0);
    assert_true(vh_live__totals(l)->runtime_ns == 5 * S);
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
        cmocka_unit_test(test_idle_look),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
