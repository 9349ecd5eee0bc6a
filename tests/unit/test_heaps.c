/* test_heaps.c — custom heaps in the database: a capture id used again after
 * its heap was destroyed (ids are 16-bit in the capture) starts a heap of its
 * own, with its own row, blocks, stack_stats, leaks and series; and --heap's
 * choice of heaps (NAME, ID, and NAME followed by a slash and a star). */
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
#include "analyze/cmd/query.h"
#include "tests/unit/capture_builder.h"
#include "tests/unit/load_fixture.h"

/* Writes the capture, loads it without symbols and opens the DB read-only;
 * the loader's stats in *st. */
static sqlite3 *load_stats(struct capb *b, struct load_stats *st)
{
    struct load_opts o = { .progress = 0, .no_symbols = 1 };
    return fx_load_stats(b, &o, st);
}

static sqlite3 *load(struct capb *b)
{
    struct load_stats st;
    return load_stats(b, &st);
}

/* What --heap `heap` chooses, as "id,id,..." in id order. */
static const char *chosen(sqlite3 *db, const char *heap, char *out, size_t len)
{
    char err[256];
    assert_int_equal(sqlite3_exec(db, "CREATE TEMP TABLE IF NOT EXISTS sel(id INTEGER PRIMARY KEY)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    int n = vh_heap_select(db, heap, "temp.sel", err, sizeof err);
    if (n < 0)
        fail_msg("vh_heap_select(%s): %s", heap, err);
    qs(db, "SELECT group_concat(id) FROM (SELECT id FROM temp.sel ORDER BY id)", out, len);
    assert_int_equal(q(db, "SELECT count(*) FROM temp.sel"), n);
    return out;
}

/* Heap 1 "a" is destroyed; id 1 comes back as "b", nested in "p", and
 * allocates at the address "a" used: a new heap, not a continuation. */
static void test_reused_id_is_a_new_heap(void **state)
{
    struct capb b;
    char s[256];
    (void)state;

    uint32_t ch = capb__start(&b, 1, 5);
    capb__heap_create(&b, ch, 2, 1, 0, 0x200000000ull, 1u << 20, "a");
    capb__heap_alloc(&b, ch, 3, 1, 0x200000010ull, 10, 1, 0);
    capb__heap_destroy(&b, ch, 4, 1);
    capb__heap_create(&b, ch, 5, 2, 0, 0, 0, "p");
    capb__tag(&b, ch, 5, 3, "jet:x");
    capb__heap_create(&b, ch, 6, 1, 2, 0x300000000ull, 4096, "b");
    capb__heap_alloc(&b, ch, 7, 1, 0x200000010ull, 20, 2, 3);   /* a's old address */
    capb__heap_alloc(&b, ch, 8, 1, 0x300000020ull, 5, 2, 3);
    capb__free_ex(&b, ch, 9, 1, VH_FN_CUSTOM, 0x300000020ull, 0);
    capb__heap_create(&b, ch, 10, 3, 0, 0, 0, "p/*");   /* a literal name */
    capb__end(&b, ch, 11);
    sqlite3 *db = load(&b);

    assert_int_equal(q(db, "SELECT count(*) FROM heaps"), 5);
    assert_string_equal(qs(db, "SELECT name FROM heaps WHERE id = 1", s, sizeof s), "a");
    assert_string_equal(qs(db, "SELECT name FROM heaps WHERE id = 65536", s, sizeof s), "b");
    /* the first heap: its own numbers, destroyed, no leak */
    assert_int_equal(HEAP(db, "destroy_time", 1), 4);
    assert_int_equal(HEAP(db, "allocations", 1), 1);
    assert_int_equal(HEAP(db, "peak_bytes", 1), 10);
    assert_int_equal(HEAP(db, "leaked_bytes", 1), 0);
    assert_int_equal(HEAP(db, "base", 1), 0x200000000ll);
    /* the second: created at 6 inside p, still there, one block leaked */
    assert_int_equal(HEAP(db, "create_time", 65536), 6);
    assert_int_equal(HEAP(db, "destroy_time", 65536), -1);
    assert_int_equal(HEAP(db, "parent_id", 65536), 2);
    assert_int_equal(HEAP(db, "base", 65536), 0x300000000ll);
    assert_int_equal(HEAP(db, "allocations", 65536), 2);
    assert_int_equal(HEAP(db, "frees", 65536), 1);
    assert_int_equal(HEAP(db, "peak_bytes", 65536), 25);
    assert_int_equal(HEAP(db, "leaked_bytes", 65536), 20);
    assert_int_equal(HEAP(db, "temporary", 65536), 1);
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key = 'heap_reuses'"), 1);
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key = 'implicit_frees'"), 0);
    /* blocks, counters and series follow the new heap */
    assert_int_equal(q(db, "SELECT count(*) FROM leaks"), 1);
    assert_int_equal(q(db, "SELECT heap_id FROM leaks"), 65536);
    assert_int_equal(q(db, "SELECT tag_id FROM leaks"), 3);
    assert_int_equal(q(db, "SELECT allocations FROM stack_stats WHERE heap_id = 1"), 1);
    assert_int_equal(q(db, "SELECT allocations FROM stack_stats WHERE heap_id = 65536"), 2);
    assert_int_equal(q(db, "SELECT leaked_bytes FROM stack_stats WHERE heap_id = 65536"), 20);
    assert_int_equal(q(db, "SELECT sum(bytes_allocated) - sum(bytes_freed) FROM series"
                           " WHERE heap_id = 1"), 0);
    assert_int_equal(q(db, "SELECT sum(bytes_allocated) - sum(bytes_freed) FROM series"
                           " WHERE heap_id = 65536"), 20);

    /* --heap */
    assert_string_equal(chosen(db, "a", s, sizeof s), "1");
    assert_string_equal(chosen(db, "b", s, sizeof s), "65536");
    assert_string_equal(chosen(db, "65536", s, sizeof s), "65536");
    assert_string_equal(chosen(db, "p", s, sizeof s), "2");
    assert_string_equal(chosen(db, "2/*", s, sizeof s), "2,65536");
    assert_string_equal(chosen(db, "p/*", s, sizeof s), "3");       /* literal first */
    assert_string_equal(chosen(db, "malloc/*", s, sizeof s), "0");
    assert_string_equal(chosen(db, "nosuch", s, sizeof s), "");
    assert_string_equal(chosen(db, "nosuch/*", s, sizeof s), "");
    assert_string_equal(chosen(db, "/*", s, sizeof s), "");
    done(db, &b);
}

/* Page copies and page sweeps (RANGE records): a range move carries every
 * block in the range, stacks and all, and leaves the others; a range free
 * frees the blocks in it (not leaks, counted as frees). Regions (REGION
 * records) get a row per declaration, replaced, ended, or ended with the
 * heap. */
static void test_ranges_and_regions(void **state)
{
    struct capb b;
    char s[256];
    (void)state;

    capb__init(&b, 0);
    uint32_t ch = capb__chunk(&b);
    const uint64_t L = 0x200000000ull, P = 0x4000;  /* a loom of 16 KiB pages */
    capb__thread(&b, ch, 1, 5);
    capb__heap_create(&b, ch, 2, 1, 0, L, 64 * P, "loom");
    capb__region(&b, ch, 2, 1, 1, VH_REGION_META, L, P);                /* directory */
    capb__region(&b, ch, 2, 1, 2, VH_REGION_UNUSED, L + 8 * P, 56 * P); /* gap */
    capb__heap_alloc(&b, ch, 3, 1, L + 4 * P + 0x10, 16, 1, 0);   /* page 4: two blocks */
    capb__heap_alloc(&b, ch, 3, 1, L + 4 * P + 0x20, 16, 2, 0);
    capb__heap_alloc(&b, ch, 3, 1, L + 5 * P, 100, 3, 0);         /* page 5 */
    capb__heap_alloc(&b, ch, 3, 1, L + 6 * P + 0x40, 32, 4, 0);   /* page 6: a leak */
    capb__heap_alloc(&b, ch, 3, 1, L + 7 * P, 64, 5, 0);          /* page 7: freed by a sweep */
    capb__heap_alloc(&b, ch, 3, 1, L + 7 * P + 0x100, 64, 5, 0);
    /* pack: page 4 to page 1, then page 5 onto page 2 and page 6 to page 3 */
    capb__range(&b, ch, 4, 1, VH_RANGE_MOVE, L + 4 * P, L + 1 * P, P);
    capb__range(&b, ch, 4, 1, VH_RANGE_MOVE, L + 5 * P, L + 2 * P, 2 * P);
    capb__range(&b, ch, 4, 1, VH_RANGE_MOVE, L + 30 * P, L + 31 * P, P);   /* nothing there */
    /* sweep: page 7 at once */
    capb__range(&b, ch, 5, 1, VH_RANGE_FREE, L + 7 * P, 0, P);
    capb__region(&b, ch, 6, 1, 2, VH_REGION_UNUSED, L + 4 * P, 60 * P);   /* the gap grew */
    capb__region(&b, ch, 7, 1, 1, VH_REGION_NONE, 0, 0);                  /* ended */
    capb__heap_create(&b, ch, 8, 2, 1, L + 40 * P, 8 * P, "road");
    capb__region(&b, ch, 8, 2, 1, VH_REGION_UNUSED, L + 40 * P, P);
    capb__heap_destroy(&b, ch, 9, 2);
    capb__end(&b, ch, 10);
    sqlite3 *db = load(&b);

    /* what is left: the three moved blocks and the one from page 6 */
    assert_int_equal(HEAP(db, "live_blocks", 1), 4);
    assert_int_equal(HEAP(db, "frees", 1), 2);
    assert_int_equal(q(db, "SELECT count(*) FROM leaks WHERE heap_id = 1"), 4);
    qs(db, "SELECT group_concat(printf('%x:%d', address, stack_id)) FROM"
           " (SELECT address, stack_id FROM leaks WHERE heap_id = 1 ORDER BY address)", s, sizeof s);
    assert_string_equal(s, "200004010:1,200004020:2,200008000:3,20000c040:4");
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key = 'unknown_moves'"), 0);
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key = 'implicit_frees'"), 0);
    /* regions: the directory 2..7, the gap 2..6 then 6..end, the road's
     * ended with the road */
    assert_int_equal(q(db, "SELECT count(*) FROM regions"), 4);
    qs(db, "SELECT group_concat(heap_id || ':' || region || ':' || kind || ':' || start_time || '-'"
           " || coalesce(end_time, 'end'), ' ') FROM (SELECT * FROM regions"
           " ORDER BY heap_id, start_time, region)", s, sizeof s);
    assert_string_equal(s, "1:1:meta:2-7 1:2:unused:2-6 1:2:unused:6-end 2:1:unused:8-9");
    assert_int_equal(q(db, "SELECT size FROM regions WHERE end_time IS NULL"), 60 * 0x4000);
    done(db, &b);
}

/* The shim's case: every id up to 65535 used and destroyed, then ids come
 * back. Each heap keeps its own row, and nesting follows the new heaps. */
static void test_65535_heaps_then_reuse(void **state)
{
    struct capb b;
    char s[64];
    uint64_t t = 1;
    (void)state;

    capb__init(&b, 1u << 23);
    uint32_t ch = capb__chunk(&b);
    capb__thread(&b, ch, t++, 5);
    for (uint32_t id = 1; id <= 65535; id++) {
        capb__heap_create(&b, ch, t++, id, 0, 0, 0, "road");
        if (id % 1000 == 0)
            capb__heap_alloc(&b, ch, t++, (uint16_t)id, 0x1000 + id * 16ull, 8, 1, 0);
        capb__heap_destroy(&b, ch, t++, (uint16_t)id);
    }
    capb__heap_create(&b, ch, t++, 7, 0, 0, 0, "again");
    capb__heap_create(&b, ch, t++, 8, 7, 0, 0, "inner");
    capb__heap_alloc(&b, ch, t++, 8, 0x5000, 64, 2, 0);
    capb__heap_create(&b, ch, t++, 9, 0, 0, 0, "gone");
    capb__heap_alloc(&b, ch, t++, 9, 0x6000, 32, 2, 0);
    capb__heap_destroy(&b, ch, t++, 9);
    capb__end(&b, ch, t++);
    sqlite3 *db = load(&b);

    assert_int_equal(q(db, "SELECT count(*) FROM heaps"), 1 + 65535 + 3);
    assert_int_equal(q(db, "SELECT count(*) FROM heaps WHERE name = 'road'"), 65535);
    assert_int_equal(q(db, "SELECT count(*) FROM heaps WHERE name = 'road' AND allocations = 1"),
                     65);
    assert_int_equal(q(db, "SELECT max(id) FROM heaps"), 65538);
    assert_string_equal(qs(db, "SELECT name FROM heaps WHERE id = 7", s, sizeof s), "road");
    assert_string_equal(qs(db, "SELECT name FROM heaps WHERE id = 65536", s, sizeof s), "again");
    assert_int_equal(HEAP(db, "parent_id", 65537), 65536);
    assert_int_equal(HEAP(db, "leaked_bytes", 65537), 64);
    assert_int_equal(HEAP(db, "leaked_bytes", 65538), 0);
    assert_int_equal(HEAP(db, "peak_bytes", 65538), 32);
    assert_int_equal(q(db, "SELECT count(*) FROM heaps WHERE destroy_time IS NULL"), 3);
    assert_int_equal(q(db, "SELECT heap_id FROM leaks"), 65537);
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key = 'heap_reuses'"), 3);
    assert_string_equal(chosen(db, "again/*", s, sizeof s), "65536,65537");
    assert_string_equal(chosen(db, "8", s, sizeof s), "8");
    done(db, &b);
}

/* A chain of 65534 nested heaps (each inside the one before), then 200000
 * HEAP_CREATEs announcing heaps of the chain again, under the same parent
 * or, for the innermost, under the outermost and back: the nesting check
 * visits no heap for any of them (it walked the whole chain above the new
 * parent each time: 140 s for this capture). The nesting holds: destroying
 * the outermost heap destroys them all. */
static void test_deep_chain_creates(void **state)
{
    struct capb b;
    struct load_stats st;
    uint64_t t = 1;
    (void)state;

    capb__init(&b, 1u << 24);
    uint32_t ch = capb__chunk(&b);
    capb__thread(&b, ch, t++, 5);
    for (uint32_t id = 1; id <= 65534; id++)
        capb__heap_create(&b, ch, t++, id, id - 1, 0, 0, "road");
    for (uint32_t i = 0; i < 200000; i++) {
        uint32_t id = 1 + (uint32_t)((i * 2654435761u) % 65534u);
        uint32_t parent = id - 1;
        if (id == 65534 && i % 2)
            parent = 1;                /* the leaf moves to the top's child */
        capb__heap_create(&b, ch, t++, id, parent, 0, 0, "road");
    }
    capb__heap_create(&b, ch, t++, 65534, 65533, 0, 0, "leaf");
    capb__heap_alloc(&b, ch, t++, 65534, 0x1000, 64, 1, 0);
    capb__heap_destroy(&b, ch, t++, 1);
    capb__end(&b, ch, t++);
    sqlite3 *db = load_stats(&b, &st);

    assert_int_equal(st.nesting_steps, 0);
    assert_int_equal(q(db, "SELECT count(*) FROM heaps"), 65535);
    assert_int_equal(q(db, "SELECT count(*) FROM heaps WHERE id > 1 AND parent_id = id - 1"),
                     65533);
    assert_int_equal(q(db, "SELECT count(*) FROM heaps WHERE destroy_time IS NOT NULL"), 65534);
    assert_int_equal(HEAP(db, "leaked_bytes", 65534), 0);
    assert_int_equal(HEAP(db, "live_bytes", 65534), 0);
    assert_int_equal(q(db, "SELECT value FROM meta WHERE key = 'bad_heap_records'"), 0);
    done(db, &b);
}

/* A heap with nested heaps moved inside one of them would be a cycle: the
 * nesting is refused (the walk up from the new parent finds the heap), the
 * row still names the parent asked for, and destroying works. */
static void test_nesting_cycle_refused(void **state)
{
    struct capb b;
    struct load_stats st;
    (void)state;

    uint32_t ch = capb__start(&b, 1, 5);
    capb__heap_create(&b, ch, 2, 1, 0, 0, 0, "a");
    capb__heap_create(&b, ch, 3, 2, 1, 0, 0, "b");
    capb__heap_create(&b, ch, 4, 3, 2, 0, 0, "c");
    capb__heap_create(&b, ch, 5, 1, 3, 0, 0, "a");   /* a inside c inside b inside a */
    capb__heap_alloc(&b, ch, 6, 3, 0x1000, 64, 1, 0);
    capb__heap_destroy(&b, ch, 7, 1);
    capb__end(&b, ch, 8);
    sqlite3 *db = load_stats(&b, &st);

    assert_int_equal(st.nesting_steps, 3);          /* c, b, a */
    assert_int_equal(HEAP(db, "parent_id", 1), 3);
    assert_int_equal(q(db, "SELECT count(*) FROM heaps WHERE destroy_time IS NOT NULL"), 3);
    assert_int_equal(HEAP(db, "leaked_bytes", 3), 0);
    done(db, &b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reused_id_is_a_new_heap),
        cmocka_unit_test(test_ranges_and_regions),
        cmocka_unit_test(test_65535_heaps_then_reuse),
        cmocka_unit_test(test_deep_chain_creates),
        cmocka_unit_test(test_nesting_cycle_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
