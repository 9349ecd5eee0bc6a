/* test_follow.c — a capture read while it grows (capture__follow,
 * load/follow.h): a capture written in three steps by three threads, a
 * block allocated in one step freed in the next, a realloc, a custom heap
 * destroyed, a chunk claimed late, the file growing. Each step's records
 * are exactly the ones added, and the followed counters after each step
 * equal a whole load of the capture as it was then. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/capture/reader.h"
#include "analyze/load/follow.h"
#include "tests/unit/capture_builder.h"
#include "tests/unit/load_fixture.h"

#define STEPS 3

/* What the writer had published at the end of a step. */
struct cut {
    uint32_t nchunks;
    uint64_t used[8];
};

static void take_cut(struct capb *b, struct cut *c)
{
    c->nchunks = b->nchunks;
    for (uint32_t i = 0; i < b->nchunks; i++)
        c->used[i] = capb__chunk_header(b, i)->used;
}

/* The file as the program had written it at cut c: the chunks claimed
 * then, each published up to its `used` then (what lies past it is not
 * read), written over `path` in place. */
static void write_as_of(const struct capb *full, const struct cut *c, const char *path)
{
    struct capb b = *full;
    b.buf = malloc(full->cap);
    assert_non_null(b.buf);
    memcpy(b.buf, full->buf, full->cap);
    b.nchunks = c->nchunks;
    capb__header(&b)->chunks_claimed = c->nchunks;
    for (uint32_t i = 0; i < c->nchunks; i++)
        capb__chunk_header(&b, i)->used = c->used[i];
    assert_int_equal(capb__write(&b, path), 0);
    free(b.buf);
}

/* Three threads, three steps (see the file's comment); cuts[k] is where
 * step k ended. */
static void build(struct capb *b, struct cut cuts[STEPS])
{
    uint64_t f1[] = { 0x401000, 0x402000 }, f2[] = { 0x401100, 0x402000 },
             f3[] = { 0x401200 };

    uint32_t a = capb__start(b, 1, 11);
    capb__stack(b, a, 2, 1, f1, 2, 0);
    capb__stack(b, a, 3, 2, f2, 2, 0);
    capb__alloc(b, a, 10, 0x1000, 100, 112, 1);
    capb__alloc(b, a, 11, 0x2000, 200, 208, 2);
    capb__heap_create(b, a, 12, 1, 0, 0x9000, 0x1000, "arena");
    capb__heap_alloc(b, a, 13, 1, 0x9000, 64, 1, 0);
    uint32_t bb = capb__chunk(b);
    capb__thread(b, bb, 14, 12);
    capb__alloc(b, bb, 15, 0x3000, 300, 304, 2);
    take_cut(b, &cuts[0]);

    capb__free(b, a, 20, 0x1000);
    capb__resize(b, a, 21, 0x2000, 250, 256, 2);
    capb__alloc(b, bb, 22, 0x4000, 400, 400, 1);
    capb__heap_alloc(b, bb, 23, 1, 0x9100, 32, 2, 0);
    uint32_t c = capb__chunk(b);             /* claimed in step 2 */
    capb__thread(b, c, 24, 13);
    capb__stack(b, c, 25, 3, f3, 1, 0);
    capb__alloc(b, c, 26, 0x5000, 500, 512, 3);
    take_cut(b, &cuts[1]);

    capb__heap_destroy(b, a, 30, 1);
    capb__free(b, a, 31, 0x3000);           /* thread 12's block */
    capb__alloc(b, bb, 32, 0x1000, 50, 56, 3);  /* an address used before */
    capb__free(b, c, 33, 0x5000);
    capb__end(b, a, 40);
    take_cut(b, &cuts[2]);
}

/* Every record read from a capture written in steps, in order, is the
 * same as from the whole capture: the records of each step exactly once. */
static void test_reader_follows(void **state)
{
    struct capb b;
    struct cut cuts[STEPS];
    struct capture *c = NULL;
    struct vh_event ev;
    char err[256], path[256];
    uint64_t whole[64], seen[64];
    size_t nwhole = 0, nseen = 0;
    (void)state;

    build(&b, cuts);
    assert_int_equal(capb__write_tmp(&b, path, sizeof path), 0);
    assert_int_equal(capture__open(path, &c, err, sizeof err), 0);
    while (capture__next(c, &ev) && nwhole < 64)
        whole[nwhole++] = ev.offset;
    capture__close(c);

    write_as_of(&b, &cuts[0], path);
    assert_int_equal(capture__open(path, &c, err, sizeof err), 0);
    for (int k = 0; k < STEPS; k++) {
        if (k) {
            write_as_of(&b, &cuts[k], path);
            assert_int_equal(capture__follow(c, err, sizeof err), 0);
        }
        while (capture__next(c, &ev) && nseen < 64)
            seen[nseen++] = ev.offset;
    }
    /* nothing new: nothing read */
    assert_int_equal(capture__follow(c, err, sizeof err), 0);
    assert_int_equal(capture__next(c, &ev), 0);
    assert_int_equal(capture__damage(c, NULL), 0);
    assert_int_equal(nseen, nwhole);
    assert_memory_equal(seen, whole, nwhole * sizeof *whole);
    capture__close(c);
    unlink(path);
    capb__destroy(&b);
}

/* The followed counters as rows "heap stack tag live blocks allocated",
 * sorted, and the DB's stack_totals the same way. */
static int by_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static void follow_rows(const struct load_follow *f, char *out, size_t len)
{
    size_t n = load__follow_count(f), at = 0;
    char **s = calloc(n ? n : 1, sizeof *s);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++) {
        struct load_follow_stack r;
        load__follow_stack(f, i, &r);
        assert_true(asprintf(&s[i], "%u %u %u %llu %llu %llu\n", r.heap, r.stack, r.tag,
                             (unsigned long long)r.live_bytes,
                             (unsigned long long)r.live_blocks,
                             (unsigned long long)r.allocated) > 0);
    }
    qsort(s, n, sizeof *s, by_str);
    out[0] = 0;
    for (size_t i = 0; i < n; i++) {
        at += (size_t)snprintf(out + at, len - at, "%s", s[i]);
        free(s[i]);
    }
    free(s);
}

static void db_rows(sqlite3 *db, char *out, size_t len)
{
    sqlite3_stmt *st = NULL;
    size_t at = 0;
    out[0] = 0;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT heap_id || ' ' || stack_id || ' ' || tag_id || ' '"
                                        " || leaked_bytes || ' ' || leaked_blocks || ' ' ||"
                                        " bytes_allocated || char(10) AS r"
                                        " FROM stack_totals ORDER BY r",
                                        -1, &st, NULL),
                     SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW)
        at += (size_t)snprintf(out + at, len - at, "%s", sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
}

/* After each step, the followed counters and totals are those of a whole
 * load of the capture as it was then. */
static void test_follow_equals_load(void **state)
{
    struct capb b;
    struct cut cuts[STEPS];
    struct load_follow *f = NULL;
    struct load_opts o = { .no_symbols = 1 };
    struct load_stats st;
    char err[512], path[300], want[4096], got[4096], fdb[320];
    (void)state;

    build(&b, cuts);
    assert_int_equal(capb__write_tmp(&b, cap_path, sizeof cap_path), 0);
    snprintf(db_path, sizeof db_path, "%s.sqlite", cap_path);
    snprintf(path, sizeof path, "%s.growing", cap_path);
    snprintf(fdb, sizeof fdb, "%s.follow.sqlite", cap_path);
    for (int k = 0; k < STEPS; k++) {
        write_as_of(&b, &cuts[k], path);
        if (!k)
            assert_int_equal(load__follow_open(path, fdb, &o, &f, err, sizeof err), 0);
        else
            assert_int_equal(load__follow_step(f, err, sizeof err), 0);
        write_as_of(&b, &cuts[k], cap_path);
        if (load__capture(cap_path, db_path, &o, &st, err, sizeof err))
            fail_msg("load: %s", err);
        sqlite3 *db = fx_open();
        db_rows(db, want, sizeof want);
        follow_rows(f, got, sizeof got);
        assert_string_equal(got, want);

        struct load_follow_totals t;
        load__follow_totals(f, &t);
        assert_int_equal(t.live_bytes, q(db, "SELECT sum(live_bytes) FROM heaps"));
        assert_int_equal(t.live_blocks, q(db, "SELECT sum(live_blocks) FROM heaps"));
        assert_int_equal(t.allocated, q(db, "SELECT sum(bytes_allocated) FROM heaps"));
        assert_int_equal(t.records, st.records);
        sqlite3_close(db);
    }
    /* the program's own numbers at the end: 200 -> 250 at 0x2000, 400 at
     * 0x4000, 50 at 0x1000; the arena's blocks went with it */
    struct load_follow_totals t;
    load__follow_totals(f, &t);
    assert_int_equal(t.live_bytes, 250 + 400 + 50);
    assert_int_equal(t.live_blocks, 3);
    load__follow_close(f);
    unlink(path);
    done(NULL, &b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reader_follows),
        cmocka_unit_test(test_follow_equals_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
