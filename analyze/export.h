/* export.h — what the writers behind `vheap-analyze export` share
 * (cmd_export.c): the parsed command and open DB, the output file (written
 * under a temporary name, renamed when complete, gzip or zstd by suffix),
 * two small hash tables and the chosen heaps. Each format is one file,
 * export_<format>.c, with one entry point declared at the bottom. */
#ifndef VHEAP_EXPORT_H
#define VHEAP_EXPORT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "analyze/cli.h"

/* ---- the output file -------------------------------------------------------
 * A path ending in .gz is written gzip-compressed (zlib), .zst zstd, anything
 * else as is; "-" is stdout, never compressed. A file is created mode 0600
 * next to its final name and renamed over it by commit, so a failed or
 * interrupted export leaves no half-written file under that name. */
struct vh_xout;

enum vh_xout_codec { VH_XOUT_PLAIN, VH_XOUT_GZIP, VH_XOUT_ZSTD };

/* 0 or -errno with the reason in err. */
int vh_xout__open(const char *path, struct vh_xout **out, char *err, size_t errlen);
enum vh_xout_codec vh_xout__codec(const struct vh_xout *o);
/* Buffered; a write error is remembered and reported by commit. */
void vh_xout__write(struct vh_xout *o, const void *p, size_t n);
void vh_xout__puts(struct vh_xout *o, const char *s);
void vh_xout__printf(struct vh_xout *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A JSON string: quotes, backslashes and control characters escaped, bytes
 * that are not UTF-8 replaced by U+FFFD (JSON must be UTF-8), '<' as \u003c
 * (safe inside an HTML <script>). NULL is "". */
void vh_xout__json_str(struct vh_xout *o, const char *s);
/* Bytes handed to write so far (before compression). */
uint64_t vh_xout__bytes(const struct vh_xout *o);
/* Finishes the stream and renames the file into place; frees o. 0 or -errno
 * (err filled; the temporary file is removed). */
int vh_xout__commit(struct vh_xout *o, char *err, size_t errlen);
/* Removes the temporary file; frees o. NULL is fine. */
void vh_xout__discard(struct vh_xout *o);

/* ---- (k1, k2) -> (v1, v2) ---------------------------------------------------
 * Open addressing with linear probing and backward-shift deletion, so that
 * endless insert/remove (a map of live blocks) never degrades it. */
struct vh_map_ent {
    uint64_t k1, k2, v1, v2;
};
struct vh_map;

struct vh_map *vh_map__new(void);                  /* NULL on ENOMEM */
void vh_map__free(struct vh_map *m);
struct vh_map_ent *vh_map__find(const struct vh_map *m, uint64_t k1, uint64_t k2);
/* The entry of (k1, k2), existing (*existed = 1) or new with v1 = v2 = 0.
 * NULL on ENOMEM. Invalidates earlier entry pointers. */
struct vh_map_ent *vh_map__insert(struct vh_map *m, uint64_t k1, uint64_t k2, int *existed);
/* Removes an entry returned by find/insert. Invalidates other pointers. */
void vh_map__remove(struct vh_map *m, struct vh_map_ent *e);
size_t vh_map__count(const struct vh_map *m);

/* ---- interned strings: ids 1, 2, ... in order of first appearance --------- */
struct vh_strtab;

struct vh_strtab *vh_strtab__new(void);            /* NULL on ENOMEM */
void vh_strtab__free(struct vh_strtab *t);
/* The id of s[0..len), adding it (*added = 1) when new. 0 on ENOMEM. */
uint32_t vh_strtab__intern(struct vh_strtab *t, const char *s, size_t len, int *added);
const char *vh_strtab__get(const struct vh_strtab *t, uint32_t id);
size_t vh_strtab__len(const struct vh_strtab *t, uint32_t id);
uint32_t vh_strtab__count(const struct vh_strtab *t);

/* ---- the export in progress --------------------------------------------- */

enum vh_cost {
    VH_COST_ALLOCATIONS, VH_COST_BYTES, VH_COST_LEAKED, VH_COST_PEAK, VH_COST_TEMPORARY,
};

enum vh_clock { VH_CLOCK_WALL, VH_CLOCK_START };

struct vh_export {
    const struct vh_command *cmd;
    sqlite3 *db;
    struct vh_xout *out;
    const char *out_path;          /* as given to -o                          */
    const char *heap;              /* --heap as given, NULL when not given    */
    enum vh_cost cost;
    int cost_given;
    int64_t depth;                 /* --depth: frames per stack, 0 = all      */
    enum vh_clock clock;
    int clock_given;
    const char *merge;             /* --merge: a trace whose events to add    */

    /* The chosen heaps: the format's default when --heap was not given. */
    uint8_t *heap_on;              /* heap_on[id] for id <= heap_max          */
    uint32_t heap_max;
    uint32_t nheaps;
    char *heap_desc;               /* for messages: "malloc", "every heap (3)" */

    /* The process (processes row 1). */
    int64_t pid;
    char *exe;                     /* NULL when unknown                       */
    char *argv_text;               /* argv joined by spaces, NULL if unknown  */
    int64_t start_realtime_ns;     /* 0 when unknown                          */
    uint64_t runtime_ns;
    int64_t page_size, phys_pages; /* 0 when unknown                          */

    char *notes;                   /* vh_export_note()'s lines, for the end   */
    size_t notes_len;
    FILE *notes_f;                 /* NULL: straight to stderr                */
};

/* 1 if heap `id` is among the chosen ones. */
static inline int vh_export_heap_on(const struct vh_export *x, uint32_t id)
{
    return id <= x->heap_max && x->heap_on[id];
}

/* "vheap-analyze: export: " + message, a line on stderr once the file is
 * complete (an export that fails says only why). */
void vh_export_note(const struct vh_export *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prepares sql, printing SQLite's message on failure: 0 or -EIO. */
int vh_export_prepare(const struct vh_export *x, const char *sql, sqlite3_stmt **st);

/* The last component of a path. */
const char *vh_export_basename(const char *path);

/* Each writes the whole file through x->out and returns 0, or -errno after
 * printing what went wrong. */
int vh_export_heaptrack(struct vh_export *x);
int vh_export_flamegraph(struct vh_export *x);
int vh_export_massif(struct vh_export *x);
int vh_export_chrome(struct vh_export *x);
int vh_export_pprof(struct vh_export *x);

#endif
