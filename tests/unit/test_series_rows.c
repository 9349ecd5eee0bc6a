/* test_series_rows.c — query/series_rows.c: a series as the rows `series`
 * prints. The numbers must reach their columns as the series holds them
 * (a hand-built struct vh_series, and one computed from a capture whose
 * every event is known): live bytes split into the top stacks and "other",
 * the marks of each interval in it, per event the event's kind and size. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/query/series.h"
#include "analyze/store/events.h"
#include "tests/unit/capture_builder.h"
#include "tests/unit/load_fixture.h"

#define MS 1000000ull

/* The CSV `series` prints: its header and rows split into cells. */
struct csv {
    char *text;
    char **cell;                   /* rows x cols, row 0 the header          */
    size_t rows, cols;
};

static void csv_split(struct csv *c)
{
    size_t n = 0, cap = 64;
    c->cell = malloc(cap * sizeof *c->cell);
    c->rows = c->cols = 0;
    for (char *line = strtok(c->text, "\n"); line; line = strtok(NULL, "\n")) {
        size_t k = 0;
        line[strcspn(line, "\r")] = 0;           /* CSV rows end in CRLF */
        for (char *p = line;; k++) {
            char *end = strchr(p, ',');
            if (n == cap)
                c->cell = realloc(c->cell, (cap *= 2) * sizeof *c->cell);
            if (end)
                *end = 0;
            if (*p == '"' && p[strlen(p) - 1] == '"') {   /* no commas inside here */
                p[strlen(p) - 1] = 0;
                p++;
            }
            c->cell[n++] = p;
            if (!end)
                break;
            p = end + 1;
        }
        if (!c->rows)
            c->cols = k + 1;
        assert_int_equal(k + 1, c->cols);
        c->rows++;
    }
}

/* Prints s as `format` into a string (CSV: split). */
static char *print(struct vh_series *s, enum out_format format, struct csv *c)
{
    size_t len = 0;
    char *text = NULL;
    FILE *f = open_memstream(&text, &len);
    struct out *o = out__begin(format, OUT_RAW_BYTES, f);
    assert_non_null(o);
    assert_int_equal(vh_series__print("series", s, format, o), 0);
    fclose(f);
    if (c) {
        c->text = text;
        csv_split(c);
    }
    return text;
}

static const char *cell(const struct csv *c, size_t row, const char *key)
{
    for (size_t k = 0; k < c->cols; k++)
        if (!strcmp(c->cell[k], key))
            return c->cell[(row + 1) * c->cols + k];
    fail_msg("no column %s", key);
    return NULL;
}

static long long num(const struct csv *c, size_t row, const char *key)
{
    return strtoll(cell(c, row, key), NULL, 10);
}

static int has_column(const struct csv *c, const char *key)
{
    for (size_t k = 0; k < c->cols; k++)
        if (!strcmp(c->cell[k], key))
            return 1;
    return 0;
}

static void csv_free(struct csv *c)
{
    free(c->cell);
    free(c->text);
}

/* Three intervals, two top stacks: "other" is what the two do not hold;
 * an interval's marks are joined, in order. */
static void test_rows_split_live_bytes(void **state)
{
    static struct vh_series_row rows[] = {
        { .start = 0, .end = MS, .live = 100, .max_live = 150, .allocs = 2, .frees = 1,
          .bytes_alloc = 150, .bytes_freed = 50, .rss = 4096 },
        { .start = MS, .end = 2 * MS, .live = 700, .max_live = 700, .allocs = 3,
          .bytes_alloc = 600, .rss = -1, .mark0 = 0, .nmarks = 2 },
        { .start = 2 * MS, .end = 3 * MS, .live = 0, .max_live = 700, .frees = 4,
          .temporary = 1, .bytes_freed = 700, .rss = 8192, .mark0 = 2, .nmarks = 1 },
    };
    /* per row: stack 1, stack 2 */
    static uint64_t slive[] = { 60, 40, 300, 250, 0, 0 };
    static struct vh_series_mark marks[] = {
        { .time = MS + 5, .tid = 7, .label = "load start" },
        { .time = MS + 9, .tid = 7, .label = "load end" },
        { .time = 2 * MS + 1, .tid = 8, .label = "gc" },
    };
    struct vh_series_top tops[2] = {
        { .heap_id = 1, .stack_id = 11, .measure = 300, .name = "parse", .heap = "malloc" },
        { .heap_id = 1, .stack_id = 12, .measure = 250, .name = "grow", .heap = "malloc" },
    };
    struct vh_series s = {
        .from = 0, .to = 3 * MS, .interval = MS, .by = vh_series_measure(NULL),
        .tops = tops, .ntop = 2, .nstacks = 5, .rows = rows, .nrows = 3, .slive = slive,
        .marks = marks, .nmarks = 3,
    };
    struct csv c;

    (void)state;
    print(&s, OUT_CSV, &c);
    assert_int_equal(c.rows, 1 + 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(num(&c, i, "time_ns"), rows[i].start);
        assert_int_equal(num(&c, i, "end_ns"), rows[i].end);
        assert_int_equal(num(&c, i, "live_bytes"), rows[i].live);
        assert_int_equal(num(&c, i, "max_live_bytes"), rows[i].max_live);
        assert_int_equal(num(&c, i, "allocations"), rows[i].allocs);
        assert_int_equal(num(&c, i, "frees"), rows[i].frees);
        assert_int_equal(num(&c, i, "temporary"), rows[i].temporary);
        assert_int_equal(num(&c, i, "bytes_allocated"), rows[i].bytes_alloc);
        assert_int_equal(num(&c, i, "bytes_freed"), rows[i].bytes_freed);
        assert_int_equal(num(&c, i, "stack_1"), slive[2 * i]);
        assert_int_equal(num(&c, i, "stack_2"), slive[2 * i + 1]);
        assert_int_equal(num(&c, i, "other_bytes"), rows[i].live - slive[2 * i] - slive[2 * i + 1]);
    }
    assert_string_equal(cell(&c, 1, "rss_bytes"), "");        /* no sample: empty */
    assert_int_equal(num(&c, 2, "rss_bytes"), 8192);
    assert_string_equal(cell(&c, 0, "marks"), "");
    assert_string_equal(cell(&c, 1, "marks"), "load start; load end");
    assert_string_equal(cell(&c, 2, "marks"), "gc");
    assert_false(has_column(&c, "event"));
    csv_free(&c);

    /* JSON: the top stacks' section and the marks as a list */
    tops[0].stack = tops[1].stack = NULL;
    char *json = print(&s, OUT_JSON, NULL);
    assert_non_null(strstr(json, "\"marks\": [\"load start\", \"load end\"]"));
    assert_non_null(strstr(json, "\"stack_id\": 12"));
    assert_non_null(strstr(json, "\"peak\": 300"));
    free(json);
}

/* A table row with more than three marks shows the first and the last and
 * how many; one with fewer, all. */
static void test_table_many_marks(void **state)
{
    static struct vh_series_row rows[] = {
        { .start = 0, .end = MS, .live = 1, .rss = -1, .mark0 = 0, .nmarks = 4 },
        { .start = MS, .end = 2 * MS, .live = 1, .rss = -1, .mark0 = 2, .nmarks = 2 },
    };
    static struct vh_series_mark marks[] = {
        { .label = "m1" }, { .label = "m2" }, { .label = "m3" }, { .label = "m4" },
    };
    struct vh_series s = { .interval = MS, .to = 2 * MS, .by = vh_series_measure(NULL),
                           .rows = rows, .nrows = 2, .marks = marks, .nmarks = 4 };

    (void)state;
    char *table = print(&s, OUT_TABLE, NULL);
    assert_non_null(strstr(table, "m1 ... m4 (4 marks)"));
    assert_null(strstr(table, "m2 ..."));
    assert_non_null(strstr(table, "m3; m4\n"));
    free(table);
}

/* One row per event: its kind and size, in the event's order. */
static void test_per_event(void **state)
{
    static struct vh_series_row rows[] = {
        { .start = 10, .end = 10, .live = 64, .size = 64, .kind = VH_EV_ALLOC, .rss = -1 },
        { .start = 20, .end = 20, .live = 96, .size = 32, .kind = VH_EV_ALLOC, .rss = -1 },
        { .start = 30, .end = 30, .live = 32, .size = 64, .kind = VH_EV_FREE, .rss = -1 },
    };
    struct vh_series s = { .per_event = 1, .interval = 10, .to = 30,
                           .by = vh_series_measure(NULL), .rows = rows, .nrows = 3 };
    static const char *const kinds[] = { "alloc", "alloc", "free" };
    struct csv c;

    (void)state;
    print(&s, OUT_CSV, &c);
    assert_int_equal(c.rows, 1 + 3);
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(cell(&c, i, "event"), kinds[i]);
        assert_int_equal(num(&c, i, "size"), rows[i].size);
        assert_int_equal(num(&c, i, "live_bytes"), rows[i].live);
    }
    assert_false(has_column(&c, "other_bytes"));   /* no top stacks */
    csv_free(&c);
}

/* From a capture: two stacks, a mark; each interval's row holds what the
 * events put there, the stacks' columns what each stack held at its end. */
static void test_from_capture(void **state)
{
    struct load_opts o = { .progress = 0, .no_symbols = 1 };
    static const uint64_t f1[] = { 0x401000, 0x402000 }, f2[] = { 0x403000, 0x402000 };
    struct vh_series s;
    struct capb b;
    struct csv c;

    (void)state;
    uint32_t ch = capb__start(&b, 1, 7);
    capb__stack(&b, ch, 1, 1, f1, 2, 0);
    capb__stack(&b, ch, 1, 2, f2, 2, 0);
    capb__alloc(&b, ch, 1 * MS + 10, 0x1000, 100, 112, 1);  /* [1, 2): s1 100          */
    capb__alloc(&b, ch, 1 * MS + 20, 0x2000, 400, 400, 2);  /*         s2 400          */
    capb__mark(&b, ch, 2 * MS + 1, "phase two");
    capb__free(&b, ch, 2 * MS + 500, 0x2000);                /* [2, 3): s2 0            */
    capb__alloc(&b, ch, 2 * MS + 600, 0x3000, 50, 64, 1);   /*         s1 150          */
    capb__end(&b, ch, 3 * MS + 900);
    sqlite3 *db = fx_load(&b, &o);
    assert_int_equal(sqlite3_exec(db, "CREATE TEMP TABLE vh_heap_sel(id INTEGER PRIMARY KEY)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    struct vh_series_ask a = { .cmd = "series", .db = db, .interval = MS, .top = 2,
                               .by = vh_series_measure(NULL) };
    assert_int_equal(vh_series__read(&a, &s), 0);
    print(&s, OUT_CSV, &c);

    /* the stacks ranked by peak: s2 (400 at the peak, 500 B) first */
    size_t r1 = 0, r2 = 0;
    for (size_t i = 0; i + 1 < c.rows; i++) {
        if (num(&c, i, "time_ns") == (long long)MS)
            r1 = i;
        if (num(&c, i, "time_ns") == (long long)(2 * MS))
            r2 = i;
    }
    assert_true(r1 && r2);
    assert_int_equal(num(&c, r1, "live_bytes"), 500);
    assert_int_equal(num(&c, r1, "stack_1"), 400);
    assert_int_equal(num(&c, r1, "stack_2"), 100);
    assert_int_equal(num(&c, r1, "other_bytes"), 0);
    assert_string_equal(cell(&c, r1, "marks"), "");
    assert_int_equal(num(&c, r2, "live_bytes"), 150);
    assert_int_equal(num(&c, r2, "stack_1"), 0);
    assert_int_equal(num(&c, r2, "stack_2"), 150);
    assert_int_equal(num(&c, r2, "allocations"), 1);
    assert_int_equal(num(&c, r2, "frees"), 1);
    assert_string_equal(cell(&c, r2, "marks"), "phase two");
    csv_free(&c);
    vh_series__free(&s);
    done(db, &b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_split_live_bytes),
        cmocka_unit_test(test_table_many_marks),
        cmocka_unit_test(test_per_event),
        cmocka_unit_test(test_from_capture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
