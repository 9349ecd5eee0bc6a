/* test_query_stacks.c — a loaded DB's stacks as the renderer gets them
 * (query/stacks.h): the frames of the STACK records the test wrote, in
 * their order, with their module and offset, truncation, the max_depth cut
 * counted as omitted, and a stack the DB does not have. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "tests/unit/capture_builder.h"
#include "tests/unit/load_fixture.h"
#include "analyze/query/stacks.h"

static void test_frames(void **state)
{
    struct capb b;
    uint64_t s1[] = { 0x401010, 0x402020, 0x12345 };
    uint64_t s2[] = { 0x401010, 0x403000, 0x404000, 0x405000, 0x406000 };
    const struct load_opts o = { .no_symbols = 1 };
    (void)state;

    uint32_t ch = capb__start(&b, 1, 5);
    capb__module(&b, ch, 1, 0x400000, 0x400000, 0x500000, NULL, 0, "/bin/prog", VH_RF_MAIN_EXE);
    capb__stack(&b, ch, 2, 1, s1, 3, VH_RF_TRUNCATED);
    capb__stack(&b, ch, 3, 2, s2, 5, 0);
    capb__alloc(&b, ch, 4, 0x1000, 10, 16, 1);
    capb__alloc(&b, ch, 5, 0x2000, 20, 32, 2);
    capb__end(&b, ch, 6);
    sqlite3 *db = fx_load(&b, &o);

    struct vh_stacks *s = NULL;
    int err = 0;
    assert_int_equal(vh_stacks__new(db, 0, &s), 0);
    struct out_stack *st = vh_stacks__get(s, 1, &err);
    assert_non_null(st);
    assert_int_equal(err, 0);
    assert_int_equal(st->n, 3);
    assert_true(st->truncated);
    assert_int_equal(st->omitted, 0);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(st->frames[i].address, s1[i]);
    assert_string_equal(st->frames[0].module, "/bin/prog");
    assert_true(st->frames[1].has_offset);
    assert_int_equal(st->frames[1].offset, 0x2020);
    assert_null(st->frames[2].module);          /* 0x12345 is in no module */
    assert_false(st->frames[2].has_offset);
    out_stack__free(st);
    vh_stacks__free(s);

    /* at most 2 frames: the other 3 are counted as omitted */
    assert_int_equal(vh_stacks__new(db, 2, &s), 0);
    st = vh_stacks__get(s, 2, &err);
    assert_non_null(st);
    assert_int_equal(st->n, 2);
    assert_int_equal(st->omitted, 3);
    assert_false(st->truncated);
    assert_int_equal(st->frames[1].address, 0x403000);
    out_stack__free(st);

    /* a stack the DB does not have: empty, not an error */
    st = vh_stacks__get(s, 99, &err);
    assert_non_null(st);
    assert_int_equal(err, 0);
    assert_int_equal(st->n, 0);
    out_stack__free(st);
    vh_stacks__free(s);
    done(db, &b);
}

/* A DB without the stack tables: vh_stacks__new fails, it does not crash. */
static void test_no_tables(void **state)
{
    (void)state;
    sqlite3 *db = NULL;
    struct vh_stacks *s = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(vh_stacks__new(db, 0, &s), -EINVAL);
    assert_null(s);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frames),
        cmocka_unit_test(test_no_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
