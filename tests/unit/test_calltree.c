/* test_calltree.c — the report's call tree: stacks as names (stack_names.c:
 * unresolved frames as module+0xOFFSET or 0xADDRESS, outermost first,
 * "[truncated]" under --depth, "[no stack]"), and pruning (calltree.c): the
 * paths below the share asked for merge into one "[smaller stacks]" node per
 * kept parent, and the share doubles until few enough nodes are kept
 * (except a share of 0, which keeps them all). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/store/db.h"
#include "analyze/load/load.h"
#include "analyze/report/report.h"
#include "tests/unit/capture_builder.h"
#include "tests/unit/load_fixture.h"

/* Stack 1 (libx.so+0x100 called from +0x200) allocates 1000 bytes; stacks
 * 2..101 (libx.so+0x1000+16i, from +0x200) one byte each; stack 0 (none)
 * and stack 103 (0x5, outside any module) 500 bytes each. */
static sqlite3 *build(struct capb *b)
{
    struct load_opts o = { .progress = 0, .no_symbols = 1 };
    uint64_t fr[2];
    capb__init(b, 65536);
    uint32_t ch = capb__chunk(b);
    capb__thread(b, ch, 1, 5);
    capb__module(b, ch, 1, 0x10000, 0x10000, 0x20000, NULL, 0, "/opt/libx.so", 0);
    fr[0] = 0x10100, fr[1] = 0x10200;
    capb__stack(b, ch, 2, 1, fr, 2, 0);
    capb__alloc(b, ch, 3, 0x1000, 1000, 1008, 1);
    for (uint32_t i = 0; i < 100; i++) {
        fr[0] = 0x11000 + 16 * i;
        capb__stack(b, ch, 4 + 2 * i, 2 + i, fr, 2, 0);
        capb__alloc(b, ch, 5 + 2 * i, 0x2000 + 32 * i, 1, 16, 2 + i);
    }
    fr[0] = 0x5;
    capb__stack(b, ch, 300, 103, fr, 1, 0);
    capb__alloc(b, ch, 301, 0x9000, 500, 512, 103);
    capb__alloc(b, ch, 302, 0xa000, 500, 512, 0);
    capb__end(b, ch, 303);
    return fx_load(b, &o);
}

static const char *name_at(const struct vh_snames *s, int64_t stack, int64_t depth, int i,
                           int *n)
{
    static struct vh_sname *buf;
    static size_t cap;
    *n = vh_snames__stack(s, stack, depth, &buf, &cap);
    assert_true(*n > i);
    return vh_snames__str(s, buf[i].name);
}

static void test_names(void **state)
{
    struct capb b;
    struct vh_snames *s;
    char err[256];
    int n;
    (void)state;
    sqlite3 *db = build(&b);
    assert_int_equal(vh_snames__load(db, &s, err, sizeof err), 0);
    assert_string_equal(name_at(s, 1, 0, 0, &n), "libx.so+0x200");
    assert_string_equal(name_at(s, 1, 0, 1, &n), "libx.so+0x100");
    assert_int_equal(n, 2);
    assert_string_equal(name_at(s, 1, 1, 0, &n), "[truncated]");
    assert_string_equal(name_at(s, 1, 1, 1, &n), "libx.so+0x100");
    assert_int_equal(n, 2);
    assert_string_equal(name_at(s, 103, 0, 0, &n), "0x5");
    assert_string_equal(name_at(s, 0, 0, 0, &n), "[no stack]");
    assert_string_equal(name_at(s, 9999, 0, 0, &n), "[no stack]");
    vh_snames__free(s);
    done(db, &b);
}

/* The tree's JSON for these stacks, pruned at `frac` with at most max_nodes;
 * with `extra`, every row also has 1 in extra column 0 and 5 in column 2. */
static char *tree_json_x(sqlite3 *db, double frac, size_t max_nodes, int extra)
{
    struct vh_snames *s;
    struct vh_ctree *t = vh_ctree__new(VH_RM_N);
    struct vh_rkeys k = { 0 };
    struct vh_ctree_stats stats;
    struct vh_xout *o;
    char err[256], path[] = "/tmp/test_calltree.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0 && t);
    close(fd);
    assert_int_equal(vh_snames__load(db, &s, err, sizeof err), 0);
    assert_int_equal(vh_report_add_stats(t, db, s, 0, &k, NULL, NULL, err, sizeof err), 0);
    for (size_t r = 0; extra && r < vh_ctree__count(t); r++) {
        assert_int_equal(vh_ctree__xadd(t, (int64_t)r, 0, 1), 0);
        assert_int_equal(vh_ctree__xadd(t, (int64_t)r, 2, 2), 0);
        assert_int_equal(vh_ctree__xadd(t, (int64_t)r, 2, 3), 0);
    }
    assert_int_equal(vh_xout__open(path, &o, err, sizeof err), 0);
    assert_int_equal(vh_ctree__write_json(t, o, VH_RM_N, frac, max_nodes, &stats), 0);
    assert_int_equal(vh_xout__commit(o, err, sizeof err), 0);
    FILE *f = fopen(path, "r");
    char *text = calloc(1, 1 << 16);
    assert_true(f && text);
    assert_true(fread(text, 1, (1 << 16) - 1, f) > 0);
    fclose(f);
    unlink(path);
    vh_ctree__free(t);
    vh_snames__free(s);
    return text;
}

static char *tree_json(sqlite3 *db, double frac, size_t max_nodes)
{
    return tree_json_x(db, frac, max_nodes, 0);
}

/* Extra sparse columns follow the rows into the pruned tree: the 100 rows
 * merged into "[smaller stacks]" sum there (the report's time windows and
 * size classes are such columns); a column nothing was added to is empty. */
static void test_xsparse(void **state)
{
    struct capb b;
    (void)state;
    sqlite3 *db = build(&b);
    char *j = tree_json_x(db, 0.01, 1000, 1);
    char *x = strstr(j, "\"xsparse\":[[");
    assert_non_null(x);
    /* column 0: one pair per out row (3 stacks, the merged node), that one 100 */
    char *c1 = strstr(x, "],[]");      /* column 1: empty */
    assert_non_null(c1);
    int pairs = 0, hundred = 0;
    unsigned row, v;
    for (char *p = x + 12; p < c1 && sscanf(p, "%u,%u", &row, &v) == 2; pairs++) {
        hundred += v == 100;
        p = strchr(p, ',') + 1;
        p += strcspn(p, ",]");
        p += *p == ',';
    }
    assert_int_equal(pairs, 4);
    assert_int_equal(hundred, 1);
    assert_non_null(strstr(c1, "],[]"));
    assert_non_null(strstr(c1 + 3, ",500,"));   /* column 2: the merged row: 100 x 5 */
    free(j);
    done(db, &b);
}

static void test_prune(void **state)
{
    struct capb b;
    (void)state;
    sqlite3 *db = build(&b);
    /* 1% of 2100 bytes or 103 calls: each one-byte stack is below it */
    char *j = tree_json(db, 0.01, 1000);
    assert_non_null(strstr(j, "\"stats\":{\"nodes\":105,\"kept\":5,\"shown\":6,\"rows\":103,"
                              "\"pruned_rows\":100,"));
    /* the merged node comes last, under libx.so+0x200, holding the 100 */
    assert_non_null(strstr(j, "\"pruned\":[0,0,0,0,0,100]"));
    assert_non_null(strstr(j, "\"[smaller stacks]\""));
    free(j);
    /* nothing below 0.01% here: nothing pruned */
    j = tree_json(db, 0.0001, 1000);
    assert_non_null(strstr(j, "\"kept\":105,\"shown\":105,\"rows\":103,\"pruned_rows\":0,"));
    free(j);
    /* at most 3 nodes: the share doubles to 32% (root, +0x200, +0x100) */
    j = tree_json(db, 0.01, 3);
    assert_non_null(strstr(j, "\"kept\":3,"));
    assert_non_null(strstr(j, "\"frac\":0.32}"));
    free(j);
    /* --prune 0 keeps every path whatever the node limit (it doubled a share
     * of 0 forever: the alarm fails the test instead of hanging make unit) */
    alarm(60);
    j = tree_json(db, 0, 3);
    alarm(0);
    assert_non_null(strstr(j, "\"kept\":105,\"shown\":105,\"rows\":103,\"pruned_rows\":0,"));
    assert_non_null(strstr(j, "\"frac\":0}"));
    free(j);
    done(db, &b);
}

/* Frames of one function at several lines merge into one node, whose
 * "where" lists every line (the hover named the first path's alone). */
static void test_merged_where(void **state)
{
    struct capb b;
    (void)state;
    sqlite3 *db = build(&b);
    static const struct { unsigned addr; const char *file; int line; } at[] = {
        { 0x10100, "/src/a.c", 12 }, { 0x11000, "/src/a.c", 14 }, { 0x11010, "/src/b.h", 3 },
        { 0x11020, "/src/a.c", 12 }, { 0x11030, "/src/a.c", 20 }, { 0x11040, "/src/a.c", 21 },
    };
    /* the fixture's DB is read-only: a temp copy of frames hides it */
    assert_int_equal(sqlite3_exec(db, "CREATE TEMP TABLE frames AS SELECT * FROM main.frames",
                                  NULL, NULL, NULL), SQLITE_OK);
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        char *sql = sqlite3_mprintf("UPDATE frames SET function = 'work', file = %Q, line = %d"
                                    " WHERE address = %u", at[i].file, at[i].line, at[i].addr);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_free(sql);
    }
    char *j = tree_json(db, 0, 1000);
    /* stack 1 (a.c:12) comes first, then 2 (a.c:14), 3 (b.h:3), 4 (a.c:12
     * again), 5 (a.c:20) and 6 (a.c:21), which no longer fits */
    assert_non_null(strstr(j, "\"a.c:12\""));
    assert_non_null(strstr(j, "\"a.c:12, 14\""));
    assert_non_null(strstr(j, "\"a.c:12, 14, b.h:3, a.c:20, \u2026\""));
    assert_null(strstr(j, "a.c:12, 14, b.h:3, a.c:12"));
    free(j);
    done(db, &b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_prune),
        cmocka_unit_test(test_xsparse),
        cmocka_unit_test(test_merged_where),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
