/* test_owners.c — ownership snapshots in the loader (load/owners.c): the
 * owner tree merged by path across snapshots, first owner wins, blocks the
 * heap does not hold kept with their walk bytes, a cut or damaged OWNED
 * record loaded up to the damage, a node never announced refused, a
 * snapshot without OWN_END incomplete, totals up the tree. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analyze/store/db.h"
#include "analyze/load/load.h"
#include "tests/unit/capture_builder.h"
#include "tests/unit/load_fixture.h"

#define BASE 0x200000000ull

static void own_begin(struct capb *b, uint32_t ch, uint64_t t, uint32_t snap, uint16_t heap,
                      const char *label)
{
    struct vh_rec_own r = { .h = { .type = VH_REC_OWN_BEGIN, .b = heap }, .time = t,
                            .snapshot = snap };
    capb__text_rec(b, ch, &r, sizeof r, label);
}

static void owner(struct capb *b, uint32_t ch, uint64_t t, uint32_t snap, uint32_t node,
                  uint32_t parent, const char *label)
{
    struct vh_rec_owner r = { .h = { .type = VH_REC_OWNER, .b = node }, .time = t,
                              .snapshot = snap, .parent = parent };
    capb__text_rec(b, ch, &r, sizeof r, label);
}

/* OWNED under `node`: n (address, walk bytes) pairs. `damaged`: the count
 * says one more, and the padding is a varint that runs past the record's
 * end (zero padding would read as entries: same address, no bytes). */
static void owned(struct capb *b, uint32_t ch, uint64_t t, uint32_t snap, uint32_t node,
                  const uint64_t (*e)[2], uint32_t n, int damaged)
{
    uint8_t rec[512] = { 0 }, *p = rec + sizeof(struct vh_rec_owned);
    struct vh_rec_owned *r = (struct vh_rec_owned *)rec;
    uint64_t prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        p = vh_uleb_put(p, vh_zigzag(e[i][0] - prev));
        p = vh_uleb_put(p, e[i][1]);
        prev = e[i][0];
    }
    size_t len = (size_t)(p - rec), size = (len + (damaged ? 8 : 7)) & ~(size_t)7;
    memset(rec + len, damaged ? 0x80 : 0, size - len);
    *r = (struct vh_rec_owned){ .h = { .type = VH_REC_OWNED, .a = (uint16_t)(size / 8),
                                       .b = node },
                                .time = t, .snapshot = snap, .count = n + (damaged != 0) };
    capb__raw(b, ch, rec, size);
}

static void own_end(struct capb *b, uint32_t ch, uint64_t t, uint32_t snap, uint16_t heap,
                    uint64_t entries)
{
    struct vh_rec_own_end r = { .h = { .type = VH_REC_OWN_END, .a = sizeof r / 8, .b = heap },
                                .time = t, .snapshot = snap, .entries = entries };
    capb__raw(b, ch, &r, sizeof r);
}

static sqlite3 *load(struct capb *b)
{
    struct load_opts o = { .progress = 0, .no_symbols = 1 };
    return fx_load(b, &o);
}

#define TOT(db, snap, path, col)                                                          \
    q(db, "SELECT t." col " FROM owner_totals t JOIN owners o ON o.id = t.owner_id"       \
          " WHERE t.snapshot_id = %d AND o.path = '%s'", snap, path)

/* Two snapshots: a/b/c's blocks, one named twice (first owner wins), one
 * the heap never held, bytes that are no block; then the second snapshot
 * reuses the path a/b (same owner rows) and is cut short. */
static void test_snapshots(void **state)
{
    (void)state;
    struct capb b;
    uint32_t ch = capb__start(&b, 10, 7);
    capb__heap_create(&b, ch, 11, 1, 0, BASE, 1 << 20, "arena");
    for (int i = 0; i < 4; i++)
        capb__heap_alloc(&b, ch, 12 + i, 1, BASE + 0x100 * i, 100 + i, 0, 0);
    own_begin(&b, ch, 20, 1, 1, "walk");
    owner(&b, ch, 21, 1, 1, 0, "a");
    owner(&b, ch, 22, 1, 2, 1, "b");
    const uint64_t e1[][2] = { { BASE, 112 }, { BASE + 0x100, 112 } };
    owned(&b, ch, 23, 1, 2, e1, 2, 0);
    owner(&b, ch, 24, 1, 3, 1, "c");
    const uint64_t e2[][2] = { { BASE + 0x100, 112 }, { BASE + 0x200, 112 },
                               { BASE + 0x9000, 64 }, { 0, 500 } };
    owned(&b, ch, 25, 1, 3, e2, 4, 0);
    owned(&b, ch, 26, 1, 9, e2, 1, 0);           /* node 9 was never pushed */
    own_end(&b, ch, 27, 1, 1, 6);
    own_begin(&b, ch, 30, 2, 1, "walk");       /* the program dies in it */
    owner(&b, ch, 31, 2, 1, 0, "a");
    owner(&b, ch, 32, 2, 2, 1, "b");
    const uint64_t e3[][2] = { { BASE + 0x300, 120 }, { BASE, 112 }, { BASE + 0x100, 112 } };
    owned(&b, ch, 33, 2, 2, e3, 2, 1);           /* a third entry cut short */
    sqlite3 *db = load(&b);

    assert_int_equal(q(db, "SELECT count(*) FROM owners"), 3);        /* a, a/b, a/c */
    assert_int_equal(q(db, "SELECT count(*) FROM owner_snapshots"), 2);
    /* snapshot 1: b holds blocks 0 and 1; c block 2 only (1 was b's) */
    assert_int_equal(TOT(db, 1, "a/b", "blocks"), 2);
    assert_int_equal(TOT(db, 1, "a/b", "bytes"), 100 + 101);
    assert_int_equal(TOT(db, 1, "a/c", "blocks"), 1);
    assert_int_equal(TOT(db, 1, "a/c", "bytes"), 102);
    /* walk bytes: c keeps the unknown block's and the non-block bytes */
    assert_int_equal(TOT(db, 1, "a/c", "walk_bytes"), 112 + 64 + 500);
    assert_int_equal(TOT(db, 1, "a", "walk_bytes"), 224 + 676);
    assert_int_equal(TOT(db, 1, "a", "self_walk_bytes"), 0);
    assert_int_equal(q(db, "SELECT repeated_blocks FROM owner_snapshots WHERE id = 1"), 1);
    assert_int_equal(q(db, "SELECT unknown_blocks FROM owner_snapshots WHERE id = 1"), 1);
    assert_int_equal(q(db, "SELECT complete FROM owner_snapshots WHERE id = 1"), 1);
    assert_int_equal(q(db, "SELECT walk_bytes FROM owner_snapshots WHERE id = 1"), 900);
    assert_int_equal(q(db, "SELECT count(*) FROM owned_blocks WHERE snapshot_id = 1"
                           " AND address = 0 AND heap_id IS NULL"), 1);
    /* snapshot 2: cut short, the damaged record loaded up to the damage */
    assert_int_equal(q(db, "SELECT complete FROM owner_snapshots WHERE id = 2"), 0);
    assert_int_equal(q(db, "SELECT end_time IS NULL FROM owner_snapshots WHERE id = 2"), 1);
    assert_int_equal(TOT(db, 2, "a/b", "blocks"), 2);
    assert_int_equal(TOT(db, 2, "a/b", "bytes"), 103 + 100);
    assert_int_equal(q(db, "SELECT count(*) FROM owned_blocks WHERE snapshot_id = 2"), 2);
    /* the block's stack and age come with it */
    assert_int_equal(q(db, "SELECT alloc_time FROM owned_blocks WHERE snapshot_id = 1"
                           " AND address = %llu", (unsigned long long)BASE), 12);
    done(db, &b);
}

/* A snapshot of a heap that was never announced: every block unknown, the
 * walk's bytes kept, nothing crashes. */
static void test_unknown_heap(void **state)
{
    (void)state;
    struct capb b;
    uint32_t ch = capb__start(&b, 10, 7);
    own_begin(&b, ch, 20, 1, 42, "walk");
    const uint64_t e[][2] = { { BASE, 16 } };
    owned(&b, ch, 21, 1, 0, e, 1, 0);
    own_end(&b, ch, 22, 1, 42, 1);
    sqlite3 *db = load(&b);
    assert_int_equal(q(db, "SELECT heap_id IS NULL FROM owner_snapshots"), 1);
    assert_int_equal(q(db, "SELECT unknown_blocks FROM owner_snapshots"), 1);
    assert_int_equal(q(db, "SELECT walk_bytes FROM owner_totals WHERE owner_id IS NULL"), 16);
    done(db, &b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshots),
        cmocka_unit_test(test_unknown_heap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
