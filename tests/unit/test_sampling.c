/* test_sampling.c — issue 17's analyzer side on synthetic data: the 1/p
 * weights (weight.h) are unbiased and a free takes away what its
 * allocation added; the trend fit (trend.h) against lines, steps and
 * constants worked out by hand; the loader's sampled counters, WINDOW
 * records (windows table, unknown frees) and growth table. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analyze/util/trend.h"
#include "analyze/util/weight.h"
#include "tests/unit/capture_builder.h"
#include "tests/unit/load_fixture.h"

static const struct load_opts opts = { .progress = 0, .no_symbols = 1 };

static double qd(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    double v = NAN;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* ---- weights ---------------------------------------------------------------- */

static void test_weight_edges(void **state)
{
    struct vh_weight w = vh_weigh(1234, 0, 7);
    assert_int_equal(w.count, 1);              /* not sampled: itself */
    assert_int_equal(w.bytes, 1234);
    w = vh_weigh(0, 4096, 7);                  /* cannot be sampled: once */
    assert_int_equal(w.count, 1);
    assert_int_equal(w.bytes, 0);
    w = vh_weigh(100 << 20, 4096, 7);          /* p = 1 - e^-25600 = 1 */
    assert_int_equal(w.count, 1);
    assert_int_equal(w.bytes, 100 << 20);
    /* the same block weighs the same at its free */
    for (uint32_t s = 1; s < 1000; s++) {
        struct vh_weight a = vh_weigh(100, 4096, s), b = vh_weigh(100, 4096, s);
        assert_memory_equal(&a, &b, sizeof a);
    }
    assert_true(fabs(vh_sample_p(4096, 4096) - (1 - exp(-1))) < 1e-12);
    /* a rate no shim writes (a damaged header) gives big weights, not
     * overflow: 1/p stops at 2^40 */
    w = vh_weigh(1, UINT64_MAX, 3);
    assert_int_equal(w.count, 1ull << 40);
    assert_int_equal(w.bytes, 1ull << 40);
    assert_int_equal(vh_weigh_bytes(UINT64_MAX / 2, UINT64_MAX), 1ull << 63);
    assert_int_equal(vh_weigh_bytes(1000, 0), 1000);
}

/* Mean weight over many blocks of one size is 1/p (count) and s/p (bytes),
 * also where rounding to nearest would be off by a third (s = R: 1/p =
 * 1.582). */
static void test_weight_unbiased(void **state)
{
    static const uint64_t sizes[] = { 16, 1000, 4096, 10000, 40000 };
    const uint64_t rate = 4096;
    const uint32_t n = 200000;

    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        double p = vh_sample_p(sizes[i], rate), c = 0, b = 0;
        for (uint32_t s = 1; s <= n; s++) {
            struct vh_weight w = vh_weigh(sizes[i], rate, s);
            c += (double)w.count;
            b += (double)w.bytes;
        }
        c /= n;
        b /= n;
        assert_true(fabs(c * p - 1) < 2e-3);
        assert_true(fabs(b * p / (double)sizes[i] - 1) < 2e-3);
    }
}

/* Poisson sampling of a known population, then the estimator: within a
 * few percent of the truth (the population's own sampling error). */
static void test_estimate_of_population(void **state)
{
    const uint64_t rate = 65536;
    uint64_t x = 88172645463325252ull, true_n = 0, true_b = 0;
    double est_n = 0, est_b = 0;

    for (uint32_t i = 1; i <= 400000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t size = 8 + x % 20000;
        true_n++;
        true_b += size;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if ((double)(x >> 11) * 0x1p-53 < vh_sample_p(size, rate)) {
            struct vh_weight w = vh_weigh(size, rate, i);
            est_n += (double)w.count;
            est_b += (double)w.bytes;
        }
    }
    assert_true(fabs(est_b / (double)true_b - 1) < 0.02);
    assert_true(fabs(est_n / (double)true_n - 1) < 0.03);
}

/* ---- trend -------------------------------------------------------------- */

#define S 1000000000ull

static void test_trend_line(void **state)
{
    struct trend tr;
    struct trend_fit f;

    /* y = 1000 t, in 3600 steps of a second: slope 1000/s, R^2 ~ 1 */
    trend__start(&tr, 0);
    for (uint64_t k = 0; k < 3600; k++)
        trend__set(&tr, k * S, 1000.0 * (double)k);
    f = trend__fit(&tr, 3600 * S);
    assert_true(fabs(f.slope - 1000) < 1);
    assert_true(f.r2 > 0.9999);
    assert_true(fabs(f.seconds - 3600) < 1e-9);

    /* a constant: slope 0, R^2 0 (nothing to explain) */
    trend__start(&tr, 0);
    trend__set(&tr, 0, 5e8);
    f = trend__fit(&tr, 3600 * S);
    assert_true(fabs(f.slope) < 1e-6);
    assert_true(f.r2 == 0);
    assert_true(fabs(f.mean - 5e8) < 1e-3);

    /* a step at fraction a of the window: R^2 = 3a(1 - a) */
    for (int i = 1; i < 10; i++) {
        double a = i / 10.0;
        trend__start(&tr, 100 * S);            /* the window need not start at 0 */
        trend__set(&tr, 100 * S + (uint64_t)(a * 1000) * S, 7.0);
        f = trend__fit(&tr, 1100 * S);
        assert_true(fabs(f.r2 - 3 * a * (1 - a)) < 1e-9);
        assert_true(fabs(f.slope - 7.0 * 6 * a * (1 - a) / 1000) < 1e-9);
        assert_int_equal(tr.first, 100 * S + (uint64_t)(a * 1000) * S);
    }

    /* a cache filled in the first minute of an hour is held, not growing */
    trend__start(&tr, 0);
    for (uint64_t k = 1; k <= 60; k++)
        trend__set(&tr, k * S, 1e8 * (double)k / 60);
    f = trend__fit(&tr, 3600 * S);
    assert_true(f.r2 < 0.1);
}

/* ---- the loader ------------------------------------------------------------ */

/* Sampled at R: 1000 blocks of 10 bytes (1/p ~ 100.5 each) and 10 of 1 MB
 * (1/p = 1); the small ones freed: every counter weighted, live back to
 * exactly what the big ones hold. */
static void test_load_sampled(void **state)
{
    struct capb b;
    const uint64_t rate = 1000;
    uint32_t ch;
    sqlite3 *db;

    capb__init(&b, 1 << 20);
    capb__header(&b)->sample_rate = rate;
    ch = capb__chunk(&b);
    capb__thread(&b, ch, 1, 1);
    for (uint64_t i = 0; i < 1000; i++)
        capb__alloc(&b, ch, 10 + i, 0x100000 + i * 16, 10, 16, 1);
    for (uint64_t i = 0; i < 10; i++)
        capb__alloc(&b, ch, 2000 + i, 0x10000000 + i * 0x200000, 1 << 20, 1 << 20, 2);
    for (uint64_t i = 0; i < 1000; i++)
        capb__free(&b, ch, 3000 + i, 0x100000 + i * 16);
    capb__end(&b, ch, 5000);
    db = fx_load(&b, &opts);

    double w = 1 / vh_sample_p(10, rate);      /* 100.5 */
    long long n = q(db, "SELECT allocations FROM stack_stats WHERE stack_id = 1");
    assert_true(fabs((double)n / (1000 * w) - 1) < 0.01);
    assert_int_equal(q(db, "SELECT frees FROM stack_stats WHERE stack_id = 1"), n);
    long long bytes = q(db, "SELECT bytes_allocated FROM stack_stats WHERE stack_id = 1");
    assert_true(fabs((double)bytes / (1000 * 10 * w) - 1) < 0.01);
    assert_int_equal(q(db, "SELECT allocations FROM stack_stats WHERE stack_id = 2"), 10);
    assert_int_equal(q(db, "SELECT bytes_allocated FROM stack_stats WHERE stack_id = 2"),
                     10 << 20);
    /* frees took away exactly what was added */
    assert_int_equal(q(db, "SELECT live_bytes FROM heaps WHERE id = 0"), 10 << 20);
    assert_int_equal(q(db, "SELECT live_blocks FROM heaps WHERE id = 0"), 10);
    assert_int_equal(q(db, "SELECT leaked_bytes FROM stack_stats WHERE stack_id = 1"), 0);
    assert_int_equal(q(db, "SELECT allocations FROM heaps WHERE id = 0"), n + 10);
    assert_int_equal(q(db, "SELECT peak_bytes FROM heaps WHERE id = 0"),
                     bytes + (10 << 20));
    assert_int_equal(q(db, "SELECT sample_rate FROM processes"), (long long)rate);
    /* the series' live bytes end where the heap does */
    assert_int_equal(q(db, "SELECT live_bytes FROM series ORDER BY bucket DESC LIMIT 1"),
                     10 << 20);
    done(db, &b);
}

/* Windows of a capture whose first records are WINDOW 0 at 50 and WINDOW 1
 * at 100, then an allocation, with the header's flags `flags`: the
 * windows table as "start-end ...". */
static const char *stop_before_events(uint32_t flags, char *s, size_t n)
{
    struct capb b;
    capb__init(&b, 0);
    capb__header(&b)->flags |= flags;
    uint32_t ch = capb__chunk(&b);
    capb__thread(&b, ch, 1, 1);
    capb__time_rec(&b, ch, VH_REC_WINDOW, 50, 0, 0);
    capb__time_rec(&b, ch, VH_REC_WINDOW, 100, 1, 0);
    capb__alloc(&b, ch, 110, 0x1000, 64, 64, 1);
    capb__end(&b, ch, 400);
    sqlite3 *db = fx_load(&b, &opts);
    qs(db, "SELECT group_concat(start_time || '-' || end_time, ' ') "
           "FROM (SELECT * FROM windows ORDER BY start_time)", s, n);
    done(db, &b);
    return s;
}

/* WINDOW records: the windows table; a free of a block allocated while
 * paused is an unknown free; a first WINDOW 1, or the header's
 * START_PAUSED, means it started paused; a first WINDOW 0 otherwise is a
 * pause after a window from the start, even before any event. */
static void test_load_windows(void **state)
{
    struct capb b;
    uint32_t ch;
    sqlite3 *db;
    char s[256];

    /* started paused: on at 100, off at 200, on at 300, end at 400 */
    capb__init(&b, 0);
    ch = capb__chunk(&b);
    capb__thread(&b, ch, 1, 1);
    capb__time_rec(&b, ch, VH_REC_WINDOW, 100, 1, 0);
    capb__alloc(&b, ch, 110, 0x1000, 64, 64, 1);
    capb__time_rec(&b, ch, VH_REC_WINDOW, 200, 0, 0);
    capb__time_rec(&b, ch, VH_REC_WINDOW, 300, 1, 0);
    capb__free(&b, ch, 310, 0x5000);           /* allocated while paused */
    capb__free(&b, ch, 320, 0x1000);
    capb__time_rec(&b, ch, VH_REC_WINDOW, 330, 1, 0);  /* no change */
    capb__end(&b, ch, 400);
    db = fx_load(&b, &opts);
    assert_string_equal(qs(db, "SELECT group_concat(start_time || '-' || end_time, ' ') "
                               "FROM (SELECT * FROM windows ORDER BY start_time)",
                           s, sizeof s),
                        "100-200 300-400");
    assert_int_equal(q(db, "SELECT unknown_frees FROM heaps WHERE id = 0"), 1);
    assert_int_equal(q(db, "SELECT frees FROM heaps WHERE id = 0"), 1);
    assert_int_equal(q(db, "SELECT meta.value FROM meta WHERE key = 'unknown_records'"), 0);
    done(db, &b);

    /* recording from the start, paused at 50 for good */
    capb__init(&b, 0);
    ch = capb__chunk(&b);
    capb__thread(&b, ch, 1, 1);
    capb__alloc(&b, ch, 10, 0x1000, 64, 64, 1);
    capb__time_rec(&b, ch, VH_REC_WINDOW, 50, 0, 0);
    capb__end(&b, ch, 400);
    db = fx_load(&b, &opts);
    assert_string_equal(qs(db, "SELECT group_concat(start_time || '-' || end_time) FROM windows",
                           s, sizeof s),
                        "0-50");
    done(db, &b);

    /* a vheap_stop() before the first allocation (a WINDOW 0 before any
     * event, the header not saying it started paused): recording was on
     * from the start until it, not paused from the start; the same
     * records from VHEAP_START=paused, which the header says */
    assert_string_equal(stop_before_events(0, s, sizeof s), "0-50 100-400");
    assert_string_equal(stop_before_events(VH_HDR_START_PAUSED, s, sizeof s), "100-400");

    /* no WINDOW record: one window, the whole run */
    capb__init(&b, 0);
    ch = capb__chunk(&b);
    capb__thread(&b, ch, 1, 1);
    capb__alloc(&b, ch, 10, 0x1000, 64, 64, 1);
    capb__end(&b, ch, 400);
    db = fx_load(&b, &opts);
    assert_string_equal(qs(db, "SELECT group_concat(start_time || '-' || end_time) FROM windows",
                           s, sizeof s),
                        "0-400");
    assert_int_equal(q(db, "SELECT sample_rate FROM processes"), 0);
    done(db, &b);
}

/* The growth table: a steady leak (stack 1) under a cache allocated at the
 * start and held (stack 2) and churn (stack 3). */
static void test_load_growth(void **state)
{
    struct capb b;
    uint32_t ch;
    sqlite3 *db;
    uint64_t t = 0;

    capb__init(&b, 1 << 20);
    ch = capb__chunk(&b);
    capb__thread(&b, ch, 0, 1);
    for (uint64_t i = 0; i < 100; i++)
        capb__alloc(&b, ch, i, 0x10000000 + i * 0x100000, 1 << 20, 1 << 20, 2);
    for (uint64_t k = 0; k < 1000; k++) {
        t = k * S;
        capb__alloc(&b, ch, t + 101, 0x20000000 + k * 0x1000, 4096, 4096, 3);
        if (k)
            capb__free(&b, ch, t + 102, 0x20000000 + (k - 1) * 0x1000);
        if (k % 10 == 0)
            capb__alloc(&b, ch, t + 103, 0x30000000 + k * 0x100, 256, 256, 1);
    }
    capb__end(&b, ch, 1000 * S);
    db = fx_load(&b, &opts);
    /* 256 bytes every 10 s: 92160 bytes an hour */
    assert_true(fabs(qd(db, "SELECT bytes_per_hour FROM growth WHERE stack_id = 1") - 92160) <
                0.01 * 92160);
    assert_true(qd(db, "SELECT r2 FROM growth WHERE stack_id = 1") > 0.99);
    assert_true(qd(db, "SELECT r2 FROM growth WHERE stack_id = 2") < 0.01);
    assert_true(qd(db, "SELECT r2 FROM growth WHERE stack_id = 3") < 0.01);
    assert_int_equal(q(db, "SELECT live_bytes FROM growth WHERE stack_id = 1"), 100 * 256);
    assert_int_equal(q(db, "SELECT first_time FROM growth WHERE stack_id = 1"), 103);
    assert_int_equal(q(db, "SELECT end_time FROM growth WHERE stack_id = 2"), 1000 * S);
    done(db, &b);
}

/* Recorded in two windows with a long pause between: the growth line runs
 * over recorded time, so a leak of 256 bytes a second while recorded is
 * 921600 bytes an hour, R^2 ~ 1, however long the pause. */
static void test_growth_across_windows(void **state)
{
    struct capb b;
    uint32_t ch;
    sqlite3 *db;
    uint64_t k, n = 0;

    capb__init(&b, 1 << 20);
    ch = capb__chunk(&b);
    capb__thread(&b, ch, 0, 1);
    capb__time_rec(&b, ch, VH_REC_WINDOW, 100 * S, 1, 0);       /* started paused */
    for (k = 100; k < 1000; k++)
        capb__alloc(&b, ch, k * S + 1, 0x30000000 + n++ * 0x100, 256, 256, 1);
    capb__time_rec(&b, ch, VH_REC_WINDOW, 1000 * S, 0, 0);
    capb__time_rec(&b, ch, VH_REC_WINDOW, 50000 * S, 1, 0);
    for (k = 50000; k < 50900; k++)
        capb__alloc(&b, ch, k * S + 1, 0x30000000 + n++ * 0x100, 256, 256, 1);
    capb__end(&b, ch, 50900 * S);
    db = fx_load(&b, &opts);
    assert_true(fabs(qd(db, "SELECT bytes_per_hour FROM growth WHERE stack_id = 1") - 921600) <
                0.01 * 921600);
    assert_true(qd(db, "SELECT r2 FROM growth WHERE stack_id = 1") > 0.999);
    assert_int_equal(q(db, "SELECT start_time FROM growth WHERE stack_id = 1"), 100 * S);
    assert_int_equal(q(db, "SELECT first_time FROM growth WHERE stack_id = 1"), 100 * S + 1);
    assert_int_equal(q(db, "SELECT end_time FROM growth WHERE stack_id = 1"), 50900 * S);
    assert_int_equal(q(db, "SELECT count(*) FROM windows"), 2);
    done(db, &b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weight_edges),
        cmocka_unit_test(test_weight_unbiased),
        cmocka_unit_test(test_estimate_of_population),
        cmocka_unit_test(test_trend_line),
        cmocka_unit_test(test_load_sampled),
        cmocka_unit_test(test_load_windows),
        cmocka_unit_test(test_load_growth),
        cmocka_unit_test(test_growth_across_windows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
