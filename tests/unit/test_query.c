/* test_query.c — query/ modules without a test of their own: the frame
 * rule that names stacks (frame_rule.h, and stack_names.h's reading of it)
 * and how a DB says it was recorded
 * (recording.h). The expected values are the documented examples of their
 * headers and what the rows put in say, not the modules' own output. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <string.h>

#include "analyze/query/frame_rule.h"
#include "analyze/query/recording.h"
#include "analyze/query/stack_names.h"

static void test_fn_short(void **state)
{
    char out[128];

    (void)state;
    vh_fn_short("void std::vector<int>::_M_realloc_insert<int>(int&&)", out, sizeof out);
    assert_string_equal(out, "std::vector::_M_realloc_insert");
    vh_fn_short("hold.constprop.0", out, sizeof out);
    assert_string_equal(out, "hold");
    vh_fn_short("main", out, sizeof out);
    assert_string_equal(out, "main");
}

/* A stack of malloc in libc, operator new in libstdc++, then the
 * program's own two functions: the program's name it, innermost first. */
static void test_naming_frames(void **state)
{
    const struct vh_lframe lf[] = {
        { .function = "malloc", .module = "/usr/lib/x86_64-linux-gnu/libc.so.6" },
        { .function = "operator new(unsigned long)",
          .module = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6" },
        { .function = "parse_config(char const*)", .file = "/src/app/config.c", .line = 42,
          .module = "/src/app/app" },
        { .function = "main", .file = "/src/app/main.c", .module = "/src/app/app" },
    };
    size_t pick[4];

    (void)state;
    assert_true(vh_frame_machinery(&lf[0]));
    assert_true(vh_frame_machinery(&lf[1]));
    assert_false(vh_frame_machinery(&lf[2]));
    assert_int_equal(vh_naming_frames(lf, 4, pick, 1), 1);
    assert_int_equal(pick[0], 2);
    assert_int_equal(vh_naming_frames(lf, 4, pick, 4), 2);
    assert_int_equal(pick[1], 3);
    /* all machinery: the innermost frame names it */
    assert_int_equal(vh_naming_frames(lf, 2, pick, 3), 1);
    assert_int_equal(pick[0], 0);
    assert_int_equal(vh_naming_frames(lf, 0, pick, 3), 0);
}

/* Debian's sqlite3, whose libsqlite3 has no symbols for its static
 * functions (as vheap recorded it): the static malloc wrapper inside
 * sqlite3Malloc, another static function, then sqlite3StrAccumEnlarge.
 * The named function names the stack, not the first address (every row of
 * the report read "libsqlite3.so.0+0xa7504"); a stack of addresses alone
 * is still named by its innermost one outside the allocator. */
static const struct vh_lframe stripped[] = {
    { .module = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0", .offset = 0xa7504, .has_offset = 1 },
    { .function = "sqlite3Malloc", .module = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0" },
    { .module = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0", .offset = 0xa70f1, .has_offset = 1 },
    { .function = "sqlite3StrAccumEnlarge", .module = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0" },
    { .module = "/usr/bin/sqlite3", .offset = 0x200c4, .has_offset = 1 },
};

static void test_naming_stripped(void **state)
{
    size_t pick[4];

    (void)state;
    assert_int_equal(vh_frame_naming(&stripped[0]), VH_NAMING_ADDRESS);
    assert_int_equal(vh_frame_naming(&stripped[1]), VH_NAMING_NEVER);
    assert_int_equal(vh_frame_naming(&stripped[3]), VH_NAMING_FUNCTION);
    assert_int_equal(vh_naming_frames(stripped, 5, pick, 1), 1);
    assert_int_equal(pick[0], 3);
    /* addresses only, and the allocator's: the innermost address */
    const struct vh_lframe addrs[] = { stripped[0], stripped[1], stripped[2], stripped[4] };
    assert_int_equal(vh_naming_frames(addrs, 4, pick, 2), 2);
    assert_int_equal(pick[0], 0);
    assert_int_equal(pick[1], 2);
}

/* The same stack as the report reads it (stack_names.h: outermost first). */
static void test_snames_stripped(void **state)
{
    struct vh_sname path[5];

    (void)state;
    for (size_t i = 0; i < 5; i++)
        path[4 - i] = (struct vh_sname){ .naming = vh_frame_naming(&stripped[i]) };
    assert_int_equal(vh_snames__naming(path, 5), 1);    /* sqlite3StrAccumEnlarge */
    path[1].naming = VH_NAMING_ADDRESS;                  /* had it no name */
    assert_int_equal(vh_snames__naming(path, 5), 4);    /* the innermost address */
    for (size_t i = 0; i < 5; i++)
        path[i].naming = VH_NAMING_NEVER;
    assert_int_equal(vh_snames__naming(path, 5), 4);    /* all machinery */
}

static void test_frame_name(void **state)
{
    struct vh_lframe f = { .module = "/opt/lib/libfoo.so.1", .offset = 0x1a2b, .has_offset = 1,
                           .address = 0x7f0012345678 };
    char buf[128];

    (void)state;
    vh_frame_name(&f, buf, sizeof buf);             /* no function: module+offset */
    assert_string_equal(buf, "libfoo.so.1+0x1a2b");
    f.has_offset = 0;                               /* nor an offset: the address */
    vh_frame_name(&f, buf, sizeof buf);
    assert_string_equal(buf, "0x7f0012345678");
    f.function = "ns::Pool<int>::grab(unsigned long)";
    vh_frame_name(&f, buf, sizeof buf);
    assert_string_equal(buf, "ns::Pool::grab");
}

static sqlite3 *rec_db(const char *rows)
{
    sqlite3 *db;

    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TABLE processes(id INTEGER, runtime_ns INTEGER, "
                                  "sample_rate INTEGER);"
                                  "CREATE TABLE windows(start_time INTEGER, end_time INTEGER);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, rows, NULL, NULL, NULL), SQLITE_OK);
    return db;
}

static void test_recording(void **state)
{
    static const struct {
        const char *rows;
        int64_t rate;
        int partial;
        const char *text;          /* what buf says, or holds (partial)     */
        int64_t on;
    } cases[] = {
        /* recorded throughout, every call */
        { "INSERT INTO processes VALUES (1, 10000000000, 0);"
          "INSERT INTO windows VALUES (0, 10000000000);",
          0, 0, "", 10000000000 },
        /* recording.h's own example: 3 s on of 10, sampled at 512 KiB */
        { "INSERT INTO processes VALUES (1, 10000000000, 524288);"
          "INSERT INTO windows VALUES (5000000000, 7000000000), (1000000000, 2000000000);",
          524288, 1, "2 windows, 3.000s of 10.000s: 1.000s-2.000s, 5.000s-7.000s", 3000000000 },
        /* never on; a nonsense rate reads as none */
        { "INSERT INTO processes VALUES (1, 10000000000, -5);", 0, 1, "nothing recorded", 0 },
    };
    char buf[256];
    int64_t on;

    (void)state;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        sqlite3 *db = rec_db(cases[k].rows);
        assert_int_equal(vh_rec_sample_rate(db), cases[k].rate);
        assert_int_equal(vh_rec_windows(db, buf, sizeof buf, &on), cases[k].partial);
        if (cases[k].partial)
            assert_non_null(strstr(buf, cases[k].text));
        else
            assert_string_equal(buf, cases[k].text);
        assert_int_equal(on, cases[k].on);
        /* a short buffer ends a list with ", ..." */
        if (k == 1) {
            assert_int_equal(vh_rec_windows(db, buf, 40, &on), 1);
            assert_non_null(strstr(buf, ", ..."));
            assert_true(strlen(buf) < 40);
        }
        sqlite3_close(db);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fn_short),
        cmocka_unit_test(test_naming_frames),
        cmocka_unit_test(test_naming_stripped),
        cmocka_unit_test(test_snames_stripped),
        cmocka_unit_test(test_frame_name),
        cmocka_unit_test(test_recording),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
