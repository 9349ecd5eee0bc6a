/* test_bptree.c — util/bptree.h against a plain sorted array: random
 * inserts and deletes (splits, merges, freed leaves), then every entry in
 * order through the leaf chain, both ways, and every key found. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "analyze/util/bptree.h"

#define N 20000

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Every entry of t in key order equals in[0..n), forwards and backwards. */
static void check_order(const struct bpool *p, const struct btree *t, const uint8_t *in,
                        size_t n)
{
    size_t k = 0, count = 0;
    uint64_t prev = 0;
    uint32_t j = 0, leaf = bt_from(p, t->first, 0, &j);

    for (size_t key = 0; key < n; key++)
        count += in[key];
    for (; leaf; leaf = bt_from(p, leaf, j + 1, &j)) {
        uint64_t key = LF(p, leaf)->key[j];
        assert_true(key < n && in[key]);
        assert_int_equal(LF(p, leaf)->a[j], key * 3);
        assert_true(!k || key > prev);
        prev = key;
        k++;
    }
    assert_int_equal(k, count);
    k = 0;
    leaf = t->last;
    j = leaf ? LF(p, leaf)->n - 1 : 0;
    for (prev = UINT64_MAX; leaf; leaf = bt_before(p, leaf, j, &j)) {
        uint64_t key = LF(p, leaf)->key[j];
        assert_true(key < prev);
        prev = key;
        k++;
    }
    assert_int_equal(k, count);
}

static void test_bptree(void **state)
{
    struct bpool p = { 0 };
    struct btree t = { 0 };
    struct bpos pos;
    uint8_t *in = calloc(N, 1);
    uint64_t s = 88172645463325252ull;

    (void)state;
    assert_non_null(in);
    for (int round = 0; round < 4; round++) {
        /* rounds 0 and 2 mostly insert, 1 and 3 mostly delete */
        for (int i = 0; i < 3 * N; i++) {
            uint64_t key = rnd(&s) % N;
            int add = round % 2 ? rnd(&s) % 4 == 0 : rnd(&s) % 4 != 0;
            assert_int_equal(bpool_reserve(&p, 4, 4 * (MAXH + 1)), 0);
            int found = bt_seek(&p, &t, key, &pos);
            assert_int_equal(found, in[key]);
            if (add && !found) {
                bt_insert(&p, &t, &pos, key, key * 3, key * 5, 0);
                in[key] = 1;
            } else if (!add && found) {
                bt_delete(&p, &t, &pos);
                in[key] = 0;
            }
        }
        check_order(&p, &t, in, N);
        for (uint64_t key = 0; key < N; key++)
            assert_int_equal(bt_seek(&p, &t, key, &pos), in[key]);
    }
    free(p.l);
    free(p.in);
    free(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bptree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
