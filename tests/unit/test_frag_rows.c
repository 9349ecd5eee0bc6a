/* test_frag_rows.c — query/frag_rows.c: one moment of `frag` as rows. Two
 * heaps with bounds hold blocks at addresses this file chose, so every
 * number is known by hand: the summary's totals, the regions largest
 * first (--limit cuts them), the holes by size, slack by requested size,
 * and RSS against the live bytes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/query/frag_rows.h"
#include "analyze/query/frag_run.h"
#include "tests/unit/capture_builder.h"
#include "tests/unit/load_fixture.h"

#define PAGE 4096ull
static const uint64_t A = 0x10000000, S = 0x20000000;   /* the arena, the small heap */
#define RSS_BYTES (1ull << 20)

/* The arena: 4 pages, blocks at 0, 1 page and 3 pages + 96 (usable =
 * requested + 8: capb__heap_alloc); the small heap: 1 page, one block at
 * its base. The holes: arena 108..4096 (3988), 5104..12384 (7280),
 * 12592..16384 (3792); small 108..4096 (3988). */
static sqlite3 *two_heaps(struct capb *b)
{
    struct load_opts o = { .progress = 0, .no_symbols = 1 };
    uint32_t ch = capb__start(b, 1, 7);
    capb__heap_create(b, ch, 2, 1, 0, A, 4 * PAGE, "arena");
    capb__heap_create(b, ch, 2, 2, 0, S, PAGE, "small");
    capb__heap_alloc(b, ch, 3, 1, A, 100, 0, 0);
    capb__heap_alloc(b, ch, 3, 1, A + PAGE, 1000, 0, 0);
    capb__heap_alloc(b, ch, 3, 1, A + 3 * PAGE + 96, 200, 0, 0);
    capb__heap_alloc(b, ch, 3, 2, S, 100, 0, 0);
    capb__rss(b, ch, 4, RSS_BYTES);
    capb__end(b, ch, 10);
    sqlite3 *db = fx_load(b, &o);
    assert_int_equal(sqlite3_exec(db, "CREATE TEMP TABLE vh_heap_sel(id INTEGER PRIMARY KEY)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    return db;
}

/* The moment at the end as JSON, at most `limit` regions. */
static char *moment_json(sqlite3 *db, int64_t limit)
{
    struct frag_run run;
    struct frag_opts fo;
    struct frag_moment m;
    size_t len = 0;
    char *text = NULL;

    frag_opts__default(&fo);
    fo.page_size = PAGE;
    assert_int_equal(frag_run__open("frag", db, NULL, &run), 0);
    assert_int_equal(frag_run__moment(&run, NULL, &fo, &m), 0);
    FILE *f = open_memstream(&text, &len);
    struct out *o = out__begin(OUT_JSON, 0, f);
    assert_int_equal(frag_rows__moment(&run, &fo, &m, limit, 0, o), 0);
    assert_int_equal(out__end(o), 0);
    fclose(f);
    frag_moment__free(&m);
    frag_run__free(&run);
    return text;
}

/* Section `name`'s text: from its key (at the document's top level) to
 * the next section's. */
static char *section(const char *json, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "\n  \"%s\":", name);
    const char *p = strstr(json, key);
    if (!p)
        fail_msg("no section %s", name);
    const char *end = strstr(p + strlen(key), "\n  \"");
    return strndup(p, end ? (size_t)(end - p) : strlen(p));
}

/* The number after "key": in s (the first one); fails if none. */
static long long num(const char *s, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(s, k);
    if (!p)
        fail_msg("no %s in %s", key, s);
    return strtoll(p + strlen(k), NULL, 10);
}

static double real(const char *s, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(s, k);
    if (!p)
        fail_msg("no %s in %s", key, s);
    return strtod(p + strlen(k), NULL);
}

static void test_summary(void **state)
{
    struct capb b;
    (void)state;
    sqlite3 *db = two_heaps(&b);
    char *json = moment_json(db, 0);
    char *s = section(json, "frag");

    assert_int_equal(num(s, "page_size"), PAGE);
    assert_int_equal(num(s, "live_blocks"), 4);
    assert_int_equal(num(s, "requested"), 100 + 1000 + 200 + 100);
    assert_int_equal(num(s, "usable"), 1400 + 4 * 8);
    assert_int_equal(num(s, "slack"), 4 * 8);
    assert_int_equal(num(s, "regions"), 2);
    assert_int_equal(num(s, "footprint"), 5 * PAGE);
    assert_int_equal(num(s, "free"), 5 * PAGE - 1432);
    assert_int_equal(num(s, "holes"), 4);
    assert_int_equal(num(s, "largest_hole"), 7280);
    assert_int_equal(num(s, "pages"), 4);                /* arena 0, 1, 3; small 0 */
    assert_int_equal(num(s, "page_bytes_used"), 1432);
    assert_int_equal(num(s, "page_free"), 4 * PAGE - 1432);
    /* 1 - largest / free, in per cent with two decimals */
    assert_float_equal(real(s, "external_fragmentation_pct"),
                       100.0 * (1.0 - 7280.0 / (double)(5 * PAGE - 1432)), 0.006);
    assert_float_equal(real(s, "utilization_pct"), 100.0 * 1432 / (5.0 * PAGE), 0.006);
    assert_int_equal(num(s, "rss"), RSS_BYTES);
    assert_int_equal(num(s, "rss_over_usable"), RSS_BYTES - 1432);
    /* the system heap is chosen too (no --heap), with nothing live */
    assert_non_null(strstr(s, "\"heaps\": [\"malloc\", \"arena\", \"small\"]"));
    free(s);
    free(json);
    done(db, &b);
}

/* Regions largest first, each with its own numbers; --limit 1 keeps the
 * arena only. */
static void test_regions(void **state)
{
    struct capb b;
    (void)state;
    sqlite3 *db = two_heaps(&b);
    char *json = moment_json(db, 0);
    char *s = section(json, "regions");
    char *small = strstr(s, "\"heap\": \"small\"");
    char *arena = strstr(s, "\"heap\": \"arena\"");

    assert_true(arena && small && arena < small);
    assert_int_equal(num(arena, "lo"), A);
    assert_int_equal(num(arena, "hi"), A + 4 * PAGE);
    assert_int_equal(num(arena, "blocks"), 3);
    assert_int_equal(num(arena, "usable"), 1324);
    assert_int_equal(num(arena, "free"), 4 * PAGE - 1324);
    assert_int_equal(num(arena, "holes"), 3);
    assert_int_equal(num(arena, "largest_hole"), 7280);
    assert_int_equal(num(arena, "largest_hole_at"), A + PAGE + 1008);
    assert_int_equal(num(arena, "pages"), 3);
    assert_int_equal(num(small, "lo"), S);
    assert_int_equal(num(small, "blocks"), 1);
    assert_int_equal(num(small, "largest_hole"), PAGE - 108);
    assert_int_equal(num(small, "largest_hole_at"), S + 108);
    free(s);
    free(json);

    json = moment_json(db, 1);
    s = section(json, "regions");
    assert_non_null(strstr(s, "\"heap\": \"arena\""));
    assert_null(strstr(s, "\"heap\": \"small\""));
    free(s);
    free(json);
    done(db, &b);
}

/* Holes by size: 3792, 3988 and 3988 in [2 KiB, 4 KiB), 7280 in [4 KiB,
 * 8 KiB). Slack by requested size: 8 B a block. */
static void test_holes_and_classes(void **state)
{
    struct capb b;
    (void)state;
    sqlite3 *db = two_heaps(&b);
    char *json = moment_json(db, 0);
    char *h = section(json, "hole_sizes");
    char *r2k = strstr(h, "\"min\": 2048"), *r4k = strstr(h, "\"min\": 4096");

    assert_true(r2k && r4k);
    assert_int_equal(num(r2k, "max"), 4095);
    assert_int_equal(num(r2k, "holes"), 3);
    assert_int_equal(num(r2k, "bytes"), 3792 + 2 * 3988);
    assert_int_equal(num(r4k, "holes"), 1);
    assert_int_equal(num(r4k, "bytes"), 7280);
    assert_null(strstr(h, "\"min\": 1024"));

    char *c = section(json, "size_classes");
    long long blocks = 0, slack = 0;
    for (char *p = strstr(c, "\"blocks\": "); p; p = strstr(p + 1, "\"blocks\": ")) {
        blocks += num(p, "blocks");
        slack += num(p, "slack");
        assert_int_equal(num(p, "slack"), 8 * num(p, "blocks"));
    }
    assert_int_equal(blocks, 4);
    assert_int_equal(slack, 32);
    free(c);
    free(h);
    free(json);
    done(db, &b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_regions),
        cmocka_unit_test(test_holes_and_classes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
