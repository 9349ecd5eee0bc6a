/* output.h — the one renderer behind every query command's `--format`.
 *
 * A command declares sections (a single object, or a list of rows), each with
 * typed columns, adds rows, and calls out__end(): the same calls produce an
 * aligned table for people, JSON for scripts (exact integers, stable key
 * order) or RFC 4180 CSV. Each row is rendered when added, into a spool
 * (memory, then a temp file past 1 MiB) printed at out__end(), so that table
 * columns can be aligned and memory stays one row's whatever the number of
 * rows; only data goes to the stream given. */
#ifndef VHEAP_OUTPUT_H
#define VHEAP_OUTPUT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyze/util/fmt.h"

enum out_format { OUT_TABLE, OUT_JSON, OUT_CSV };

/* Parses "table" | "json" | "csv". Returns 0 or -EINVAL. */
int out__parse_format(const char *s, enum out_format *fmt);

enum out_type {
    OUT_INT,      /* integer count                                          */
    OUT_BYTES,    /* integer bytes: human 1000-based in tables (2.20K)      */
    OUT_NS,       /* integer nanoseconds: seconds in tables (1.234s)        */
    OUT_REAL,     /* floating point (rates)                                 */
    OUT_TEXT,
    OUT_BOOL,     /* JSON true/false, table yes/no, CSV 1/0                 */
    OUT_WORDS,    /* list of strings: JSON array, else joined by spaces     */
};

enum out_col_flags {
    OUT_F_NO_TABLE = 1u << 0,   /* omitted from tables                      */
    OUT_F_CSV_ONLY = 1u << 1,   /* only in CSV (where there are no objects) */
    OUT_F_HIDE_SAME = 1u << 2,  /* table: omitted when every row holds the
                                   same value (e.g. the heap, with one heap) */
    OUT_F_HIDE_ZERO = 1u << 3,  /* table: a 0 is not shown (a "title: value"
                                   line is left out; a list column is left
                                   out when it is 0 in every row)           */
};

struct out_col {
    const char *key;              /* JSON key and CSV header: snake_case     */
    const char *title;            /* table header or "title: value" label    */
    enum out_type type;
    unsigned flags;
};

enum out_val_kind { OV_NULL, OV_INT, OV_REAL, OV_TEXT, OV_WORDS };

/* One cell. Strings are copied by out__row(). `note` is shown after the value
 * in tables only, in parentheses (e.g. a rate: "1234 (9492/s)"). */
struct out_val {
    enum out_val_kind kind;
    int64_t i;
    double r;
    const char *s;
    const char *const *words;
    size_t nwords;
    const char *note;
};

#define OV_I(x) ((struct out_val){ .kind = OV_INT, .i = (int64_t)(x) })
#define OV_R(x) ((struct out_val){ .kind = OV_REAL, .r = (double)(x) })
#define OV_S(x) ((struct out_val){ .kind = (x) ? OV_TEXT : OV_NULL, .s = (x) })
#define OV_NULLV ((struct out_val){ .kind = OV_NULL })

/* A symbolized call stack, innermost frame first. Unknown strings are NULL,
 * unknown lines 0. Owned by the renderer once passed to out__row(). */
struct out_inline {
    char *function;
    char *file;
    int64_t line;
};

struct out_frame {
    char *function;
    char *file;
    int64_t line;
    char *module;                 /* path of the mapped module, or NULL      */
    int64_t address;              /* the recorded return address             */
    int64_t offset;               /* address inside the module's ELF file    */
    int has_offset;
    struct out_inline *inlined;   /* callers inlined at this address, depth 1
                                     first; the last is the out-of-line one  */
    size_t ninlined;
};

struct out_stack {
    struct out_frame *frames;
    size_t n;
    int truncated;                /* deeper frames were not recorded         */
    size_t omitted;               /* frames cut by --depth                   */
};

void out_stack__free(struct out_stack *st);

struct out;

enum out_flags {
    OUT_RAW_BYTES = 1u << 0,      /* tables: sizes as exact integers (--bytes) */
};

/* Starts a document written to `stream` at out__end(). NULL on ENOMEM. */
struct out *out__begin(enum out_format fmt, unsigned flags, FILE *stream);

enum out_section_kind {
    OUT_OBJECT,                   /* one row; table: "title: value" lines    */
    OUT_LIST,                     /* rows; table: aligned columns            */
    OUT_RECORDS,                  /* rows; table: a "title: value" block each */
};

/* Declares the next section; cols must outlive `o`. `title` (may be NULL) is
 * printed above the section in tables. In JSON the document is one object
 * with a key per section (`name`). CSV carries rows only: it prints the
 * last OUT_LIST/OUT_RECORDS section (the command's main result), so that
 * the file stays one table; the other sections are for tables and JSON. */
int out__section(struct out *o, const char *name, enum out_section_kind kind,
                 const char *title, const struct out_col *cols, size_t ncols);

/* Adds a row of ncols values to the current section; `stack` (may be NULL)
 * is taken over and printed under the row (table), as an array (JSON), or as
 * a text column "stack" (CSV). Returns 0 or -ENOMEM. */
int out__row(struct out *o, const struct out_val *vals, struct out_stack *stack);

/* A line of text printed after the section in tables only (e.g. "showing 10
 * of 42 stacks"); diagnostics belong on stderr, not here. */
int out__table_note(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Renders and frees everything. Returns 0, or -EIO if the stream failed. */
int out__end(struct out *o);

/* Frees without rendering (error paths). */
void out__abort(struct out *o);

/* A whole document of one object (a command's closing numbers): begin, one
 * OUT_OBJECT section `name`, one row, end. 0, or -ENOMEM / -EIO. */
int out__object(enum out_format fmt, FILE *stream, const char *name, const struct out_col *cols,
                size_t ncols, const struct out_val *vals);

/* Growing strings (struct out_buf) and out__vprint: util/fmt.h. */

/* Human sizes like heaptrack_print: below 1000 "123B", else 1000-based with
 * two decimals "2.20K", "3.82M". Writes into buf, returns buf. */
const char *out__human_bytes(int64_t bytes, char *buf, size_t len);

/* Seconds with millisecond precision: "1.234s". */
const char *out__human_ns(int64_t ns, char *buf, size_t len);

#endif
