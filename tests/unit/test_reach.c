/* test_reach.c — the reachability scan read back from a DB (query/reach.h):
 * `leaks --class` lists, and the totals per class over rows the test puts
 * in (its own sums are the expected values), for every heap and for the
 * heaps --heap chose. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <string.h>

#include "analyze/query/reach.h"

static void test_class_mask(void **state)
{
    (void)state;
    const char *bad = NULL;
    int len = 0;
    assert_int_equal(vh_class_mask("lost", &bad, &len), 1 << VH_CLASS_LOST);
    assert_int_equal(vh_class_mask("lost,indirect,none", &bad, &len),
                     1 << VH_CLASS_LOST | 1 << VH_CLASS_INDIRECT | 1 << VH_CLASS_NONE);
    assert_int_equal(vh_class_mask("reachable,possible", &bad, &len),
                     1 << VH_CLASS_REACHABLE | 1 << VH_CLASS_POSSIBLE);
    const char *list = "lost,lostx,possible";
    assert_int_equal(vh_class_mask(list, &bad, &len), -1);
    assert_ptr_equal(bad, list + 5);
    assert_int_equal(len, 5);
    assert_int_equal(vh_class_mask("", &bad, &len), -1);
    assert_int_equal(len, 0);
    assert_int_equal(vh_class_mask("lost,", &bad, &len), -1);   /* an empty word */
}

/* Heap 1 "sys": a lost block of 100, two reachable of 10 and 30; heap 2
 * "loom": one without a class, of 7, and an indirect one of 5. */
static sqlite3 *db_with_scan(int scanned)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db,
                     "CREATE TABLE reach(status TEXT, scan_ns INTEGER, root_bytes INTEGER,"
                     " heap_bytes INTEGER, unreadable_bytes INTEGER, nonresident_bytes INTEGER,"
                     " threads INTEGER, threads_unseen INTEGER, cpu_ns INTEGER, scan INTEGER);"
                     "CREATE TABLE heaps(id INTEGER, name TEXT);"
                     "CREATE TABLE leaks(heap_id INTEGER, size INTEGER, class INTEGER);"
                     "CREATE TEMP TABLE vh_heap_sel(id INTEGER);"
                     "INSERT INTO heaps VALUES(1, 'sys'),(2, 'loom');"
                     "INSERT INTO leaks VALUES(1, 100, 3),(1, 10, 0),(1, 30, 0),(2, 7, NULL),"
                     "(2, 5, 2);",
                     NULL, NULL, NULL),
        SQLITE_OK);
    if (scanned)
        assert_int_equal(sqlite3_exec(db,
                                      "INSERT INTO reach VALUES('timeout', 5000, 64, 4096,"
                                      " 8, 16, 3, 1, 4000, 0),"
                                      "('done', 9, 9, 9, 9, 9, 9, 0, 9, 1);",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
    return db;
}

static void test_totals(void **state)
{
    (void)state;
    struct vh_reach_totals t;
    sqlite3 *db = db_with_scan(1);
    assert_int_equal(vh_reach__totals("test", db, NULL, &t), 1);
    assert_string_equal(t.status, "timeout");       /* the scan at exit, not scan 1 */
    assert_int_equal(t.scan_ns, 5000);
    assert_int_equal(t.heap_bytes, 4096);
    assert_int_equal(t.threads_unseen, 1);
    assert_int_equal(t.cpu_ns, 4000);
    assert_int_equal(t.blocks[VH_CLASS_LOST], 1);
    assert_int_equal(t.bytes[VH_CLASS_LOST], 100);
    assert_int_equal(t.blocks[VH_CLASS_REACHABLE], 2);
    assert_int_equal(t.bytes[VH_CLASS_REACHABLE], 40);
    assert_int_equal(t.bytes[VH_CLASS_INDIRECT], 5);
    assert_int_equal(t.blocks[VH_CLASS_NONE], 1);          /* NULL class: none */
    assert_int_equal(t.bytes[VH_CLASS_NONE], 7);
    assert_int_equal(t.blocks[VH_CLASS_POSSIBLE], 0);

    /* --heap loom: only heap 2's rows */
    assert_int_equal(sqlite3_exec(db, "INSERT INTO temp.vh_heap_sel VALUES(2)", NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(vh_reach__totals("test", db, "loom", &t), 1);
    assert_int_equal(t.bytes[VH_CLASS_LOST] + t.bytes[VH_CLASS_REACHABLE], 0);
    assert_int_equal(t.bytes[VH_CLASS_NONE] + t.bytes[VH_CLASS_INDIRECT], 12);
    sqlite3_close(db);

    db = db_with_scan(0);                                   /* no scan: 0, all zero */
    assert_int_equal(vh_reach__totals("test", db, NULL, &t), 0);
    assert_int_equal(t.bytes[VH_CLASS_LOST], 0);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_class_mask),
        cmocka_unit_test(test_totals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
