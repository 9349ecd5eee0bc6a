/* test_idxmap.c — the loader's (u64, u64) -> u32 map (load/idxmap.h):
 * every key put is found with its value through the growths, absent keys
 * are not, (a, b) and (b, a) are two keys, and a cleared map is empty and
 * usable again. Values are what the test put, checked against its own
 * record of them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "analyze/load/idxmap.h"

#define N 100000u

static void test_put_get(void **state)
{
    (void)state;
    struct idxmap m = { 0 };
    assert_int_equal(idxmap__get(&m, 0, 0), UINT32_MAX);     /* never grown */
    for (uint32_t i = 0; i < N; i++) {
        /* keys like the loader's: small ids, addresses, both halves used */
        uint64_t a = i % 7 == 0 ? 0 : (uint64_t)i << 4, b = i / 7;
        assert_int_equal(idxmap__get(&m, a, b), UINT32_MAX);
        assert_int_equal(idxmap__put(&m, a, b, i * 3u), 0);
    }
    assert_int_equal(m.count, N);
    assert_true(m.count * 2 <= m.mask + 1);                  /* at most half full */
    for (uint32_t i = 0; i < N; i++) {
        uint64_t a = i % 7 == 0 ? 0 : (uint64_t)i << 4, b = i / 7;
        assert_int_equal(idxmap__get(&m, a, b), i * 3u);
        assert_int_equal(idxmap__get(&m, a + 1, b), UINT32_MAX);
    }
    idxmap__clear(&m);
    assert_int_equal(m.count, 0);
    assert_int_equal(idxmap__get(&m, 16, 2), UINT32_MAX);
    assert_int_equal(idxmap__put(&m, 16, 2, 5), 0);
    assert_int_equal(idxmap__get(&m, 16, 2), 5);
    idxmap__clear(&m);
}

static void test_edges(void **state)
{
    (void)state;
    struct idxmap m = { 0 };
    assert_int_equal(idxmap__put(&m, 1, 2, 0), 0);           /* value 0 is a value */
    assert_int_equal(idxmap__put(&m, 2, 1, UINT32_MAX - 1), 0);
    assert_int_equal(idxmap__put(&m, UINT64_MAX, UINT64_MAX, 9), 0);
    assert_int_equal(idxmap__get(&m, 1, 2), 0);
    assert_int_equal(idxmap__get(&m, 2, 1), UINT32_MAX - 1);
    assert_int_equal(idxmap__get(&m, UINT64_MAX, UINT64_MAX), 9);
    assert_int_equal(idxmap__get(&m, 1, 1), UINT32_MAX);
    idxmap__clear(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get),
        cmocka_unit_test(test_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
