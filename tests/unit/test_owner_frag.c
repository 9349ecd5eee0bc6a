/* test_owner_frag.c — query/owner_frag.c (`frag --by owner`) over a
 * hand-built DB: the schema's tables holding two snapshots whose blocks lie
 * at addresses chosen here, so each owner's pages touched, pages shared
 * with another owner, slack and occupancy are known; the last snapshot is
 * the default, unknown blocks (no size) are not counted, and a DB without
 * snapshots or a snapshot past the last is an error. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/query/owner_frag.h"
#include "analyze/store/db.h"

#define PS 4096ll

static void exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
}

static sqlite3 *empty_db(void)
{
    sqlite3 *db = NULL;
    char err[256];
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(vh_schema_apply(db, VH_SCHEMA_TABLES, err, sizeof err), 0);
    return db;
}

static void snapshot(sqlite3 *db, int id)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO owner_snapshots (id, heap_id, label, start_time, end_time, complete,"
             " blocks, bytes, walk_bytes, unknown_blocks, repeated_blocks, depth_lost,"
             " lost_entries) VALUES (%d, 1, 'grab', %d, %d, 1, 0, 0, 0, 0, 0, 0, 0)",
             id, id * 10, id * 10 + 5);
    exec(db, sql);
}

/* owner 0: none (NULL) */
static void block(sqlite3 *db, int snap, int owner, long long addr, long long size,
                  long long usable)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO owned_blocks (snapshot_id, owner_id, heap_id, address, size, usable,"
             " walk_bytes) VALUES (%d, nullif(%d, 0), 1, %lld, %lld, %lld, %lld)",
             snap, owner, addr, size, usable, size);
    exec(db, sql);
}

/* Snapshot 1: anything (the default is the last). Snapshot 2, pages of
 * 4 KiB from 0x100000 (page P):
 *   owner 1 "kernel": P+0 (1000/1024 B), P+4096 (5000/5120 B: pages 1, 2)
 *   owner 2 "kernel/apps": P+2048 (100/128 B, page 0, shared with 1),
 *                          P+3*4096+100 (8/16 B, page 3, alone)
 *   no owner: P+2*4096+4000 (200/256 B: pages 2 and 3, shared with 1, 2)
 *   an unknown block (size NULL) on page 5: not counted. */
static sqlite3 *two_snapshots(void)
{
    const long long P = 0x100000;
    sqlite3 *db = empty_db();
    exec(db, "INSERT INTO owners (id, parent_id, label, path, depth) VALUES"
             " (1, NULL, 'kernel', 'kernel', 1), (2, 1, 'apps', 'kernel/apps', 2)");
    snapshot(db, 1);
    snapshot(db, 2);
    block(db, 1, 1, P, 64, 64);
    block(db, 2, 1, P, 1000, 1024);
    block(db, 2, 1, P + PS, 5000, 5120);
    block(db, 2, 2, P + 2048, 100, 128);
    block(db, 2, 2, P + 3 * PS + 100, 8, 16);
    block(db, 2, 0, P + 2 * PS + 4000, 200, 256);
    exec(db, "INSERT INTO owned_blocks (snapshot_id, owner_id, address, size, walk_bytes)"
             " VALUES (2, 1, 1054720, NULL, 32)");
    return db;
}

struct csvrow {
    char owner[64];
    long long blocks, bytes, slack, pages, shared;
    double occ;
};

/* vh_owner_frag's rows, from its CSV. */
static size_t owner_rows(sqlite3 *db, int64_t snap, int64_t limit, struct csvrow *r, size_t max)
{
    size_t len = 0, n = 0;
    char *text = NULL;
    FILE *f = open_memstream(&text, &len);
    struct out *o = out__begin(OUT_CSV, 0, f);
    assert_int_equal(vh_owner_frag("frag", db, snap, PS, limit, o), 0);
    assert_int_equal(out__end(o), 0);
    fclose(f);
    char *line = strtok(text, "\r\n");      /* the header */
    assert_string_equal(line, "owner,blocks,bytes,slack,pages,occupancy_pct,shared_pages");
    while ((line = strtok(NULL, "\r\n")) && n < max) {
        struct csvrow *x = &r[n++];
        assert_int_equal(sscanf(line, "%63[^,],%lld,%lld,%lld,%lld,%lf,%lld", x->owner,
                                &x->blocks, &x->bytes, &x->slack, &x->pages, &x->occ,
                                &x->shared),
                         7);
    }
    free(text);
    return n;
}

static void test_pages_and_sharing(void **state)
{
    struct csvrow r[8];
    (void)state;
    sqlite3 *db = two_snapshots();
    size_t n = owner_rows(db, 0, 0, r, 8);

    assert_int_equal(n, 3);
    /* most pages first: kernel 3, then kernel/apps and (no owner) with 2
     * each, in owner id order (none = 0 first) */
    assert_string_equal(r[0].owner, "kernel");
    assert_int_equal(r[0].blocks, 2);
    assert_int_equal(r[0].bytes, 6000);
    assert_int_equal(r[0].slack, 24 + 120);
    assert_int_equal(r[0].pages, 3);
    assert_int_equal(r[0].shared, 2);           /* page 0 (apps), page 2 (none) */
    assert_float_equal(r[0].occ, 100.0 * 6144 / (3 * PS), 0.01);
    assert_string_equal(r[1].owner, "(no owner)");
    assert_int_equal(r[1].blocks, 1);
    assert_int_equal(r[1].pages, 2);
    assert_int_equal(r[1].shared, 2);
    assert_string_equal(r[2].owner, "kernel/apps");
    assert_int_equal(r[2].blocks, 2);
    assert_int_equal(r[2].bytes, 108);
    assert_int_equal(r[2].slack, 36);
    assert_int_equal(r[2].pages, 2);
    assert_int_equal(r[2].shared, 2);           /* page 0 (kernel), page 3 (none) */

    /* --limit 1; snapshot 1 by number */
    assert_int_equal(owner_rows(db, 0, 1, r, 8), 1);
    assert_int_equal(owner_rows(db, 1, 0, r, 8), 1);
    assert_string_equal(r[0].owner, "kernel");
    assert_int_equal(r[0].pages, 1);
    assert_int_equal(r[0].shared, 0);
    sqlite3_close(db);
}

static void test_no_snapshot(void **state)
{
    (void)state;
    sqlite3 *db = empty_db();
    struct out *o = out__begin(OUT_CSV, 0, stdout);
    assert_int_equal(vh_owner_frag("frag", db, 0, PS, 0, o), -EINVAL);
    out__abort(o);
    sqlite3_close(db);

    db = two_snapshots();
    o = out__begin(OUT_CSV, 0, stdout);
    assert_int_equal(vh_owner_frag("frag", db, 3, PS, 0, o), -EINVAL);
    out__abort(o);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_and_sharing),
        cmocka_unit_test(test_no_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
