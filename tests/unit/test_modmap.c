/* test_modmap.c — module names of one run read as another's
 * (query/modmap.h): the pairs of --map-module, the main programs of two
 * DBs, and the errors its header promises. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "analyze/query/modmap.h"

static void test_pairs(void **state)
{
    (void)state;
    struct vh_modmap *m = vh_modmap__new();
    assert_non_null(m);
    assert_int_equal(vh_modmap__parse(m, "/opt/a/libfoo.so.1=libfoo.so.2,prog-1.2=/usr/bin/prog-1.3"),
                     0);
    assert_string_equal(vh_modmap__get(m, "libfoo.so.1"), "libfoo.so.2");
    assert_string_equal(vh_modmap__get(m, "prog-1.2"), "prog-1.3");   /* file names only */
    assert_string_equal(vh_modmap__get(m, "libc.so.6"), "libc.so.6");
    /* a name mapped twice keeps its first pair */
    assert_int_equal(vh_modmap__parse(m, "libfoo.so.1=other.so"), 0);
    assert_string_equal(vh_modmap__get(m, "libfoo.so.1"), "libfoo.so.2");
    vh_modmap__free(m);
    assert_string_equal(vh_modmap__get(NULL, "x"), "x");
    vh_modmap__free(NULL);
}

static void test_bad_specs(void **state)
{
    (void)state;
    const char *bad[] = { "libfoo.so", "=b", "a=", "a=b,c", "/dir/=b" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct vh_modmap *m = vh_modmap__new();
        assert_int_equal(vh_modmap__parse(m, bad[i]), -EINVAL);
        vh_modmap__free(m);
    }
}

static sqlite3 *db_main(const char *path)
{
    sqlite3 *db = NULL;
    char sql[512];
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    snprintf(sql, sizeof sql,
             "CREATE TABLE modules(id INTEGER, path TEXT, is_main INTEGER);"
             "INSERT INTO modules VALUES(1, '/lib/libc.so.6', 0),(2, %s, 1);", path);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    return db;
}

/* A's main program reads as B's, after the pairs given (which win). */
static void test_mains(void **state)
{
    (void)state;
    char err[256];
    sqlite3 *a = db_main("'/build/old/prog-1.2'"), *b = db_main("'/usr/bin/prog-1.3'");
    struct vh_modmap *m = vh_modmap__new();
    assert_int_equal(vh_modmap__mains(m, a, b, err, sizeof err), 0);
    assert_string_equal(vh_modmap__get(m, "prog-1.2"), "prog-1.3");
    assert_string_equal(vh_modmap__get(m, "libc.so.6"), "libc.so.6");
    vh_modmap__free(m);

    m = vh_modmap__new();
    assert_int_equal(vh_modmap__parse(m, "prog-1.2=mine"), 0);
    assert_int_equal(vh_modmap__mains(m, a, b, err, sizeof err), 0);
    assert_string_equal(vh_modmap__get(m, "prog-1.2"), "mine");
    vh_modmap__free(m);

    /* a run without a main program: nothing to map, no error */
    sqlite3 *c = db_main("NULL");
    m = vh_modmap__new();
    assert_int_equal(vh_modmap__mains(m, a, c, err, sizeof err), 0);
    assert_string_equal(vh_modmap__get(m, "prog-1.2"), "prog-1.2");
    vh_modmap__free(m);

    /* no modules table: -EIO with the reason */
    sqlite3 *d = NULL;
    assert_int_equal(sqlite3_open(":memory:", &d), SQLITE_OK);
    m = vh_modmap__new();
    assert_int_equal(vh_modmap__mains(m, a, d, err, sizeof err), -EIO);
    assert_non_null(strstr(err, "modules"));
    vh_modmap__free(m);
    sqlite3_close(a);
    sqlite3_close(b);
    sqlite3_close(c);
    sqlite3_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs),
        cmocka_unit_test(test_bad_specs),
        cmocka_unit_test(test_mains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
