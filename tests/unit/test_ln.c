/* test_ln.c — preload/ln.h's vh_ln, the shim's logarithm for the sampling
 * countdown, against libm's log: every draw the countdown can make
 * (u = k / 2^53, k in 1..2^53) is covered by its ends, each power of two
 * and a million random draws, all within 2 ulp. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "preload/ln.h"

static void near_libm(double x)
{
    double want = log(x), got = vh_ln(x);
    double tol = 2.0 * (nextafter(fabs(want), INFINITY) - fabs(want));
    if (want == 0.0)
        tol = 1e-300;
    if (fabs(got - want) > tol)
        fail_msg("vh_ln(%.17g) = %.17g, log = %.17g", x, got, want);
}

static void test_ends_and_powers(void **state)
{
    (void)state;
    near_libm(1.0);
    near_libm(1.0 / 9007199254740992.0);
    near_libm(1.0 - 1.0 / 9007199254740992.0);
    for (int e = -60; e <= 60; e++) {
        near_libm(ldexp(1.0, e));
        near_libm(ldexp(1.4142135623730951, e));
        near_libm(ldexp(1.4142135623730949, e));
        near_libm(ldexp(1.9999999999999998, e));
    }
}

static void test_random_draws(void **state)
{
    (void)state;
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 1000000; i++) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t r = x * 0x2545f4914f6cdd1dull;
        /* the countdown's own draw (sample.c) */
        near_libm(((double)(r >> 11) + 1.0) * (1.0 / 9007199254740992.0));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ends_and_powers),
        cmocka_unit_test(test_random_draws),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
