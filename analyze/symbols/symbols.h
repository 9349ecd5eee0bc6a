/* symbols.h — offline symbolization of a loaded capture's frames.
 * The loader (analyze/load/load.c) fills modules and frames with raw addresses;
 * this resolves them with elfutils libdw, in the analyzer, never in the
 * profiled program. Two halves: the resolver (symbols.c) is given modules
 * and frames and resolves them in memory, on a thread of its own while the
 * loader streams, or on the caller's; symbols_db.c writes what it found
 * into a DB, and feeds it from a DB for `vheap-analyze symbolize`. */
#ifndef VHEAP_SYMBOLS_H
#define VHEAP_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

/* Resolves every frame of `db` that has a module (frames.module_id and
 * module_offset set, modules.path/build_id/bias filled; schema/vheap.sql).
 *
 * Each frame gets function (demangled), file and line of the innermost —
 * possibly inlined — function at its return address minus one (so that
 * file:line is the call, as in heaptrack), and frame_inlines gets the chain
 * of inlined callers up to the out-of-line function; inline_depth counts
 * them. Without DWARF the function is the ELF symbol and file/line stay NULL.
 * Debug info is looked up as libdw does it: the file itself, then build-id
 * (DIR/.build-id/xx/rest.debug) and .gnu_debuglink in the debug directories:
 * those VHEAP_DEBUGINFO_PATH names (colon-separated) first, then libdw's
 * ":.debug:/usr/lib/debug"; debuginfod too if DEBUGINFOD_URLS is set.
 *
 * A module whose file is missing, or whose build-id differs from the one
 * recorded (rebuilt since the run), is not trusted: its frames keep module
 * and offset with NULL function. Each such module that has frames gets one
 * warning on stderr, and counts go into meta (symbols_frames,
 * symbols_resolved, symbols_with_line, symbols_modules_missing,
 * symbols_modules_rebuilt, symbols_kept) when that table exists.
 * Unresolvable frames are not an error. A result replaces a frame's row
 * only when it says as much (file:line > function > nothing): resolving a
 * DB again after debug info went keeps the better rows, counted in
 * symbols_kept and warned about.
 *
 * All writes happen in one SAVEPOINT, so it works inside or outside the
 * caller's transaction. Returns 0, or -errno with a one-line reason in err
 * (a database error: nothing of this call is kept). */
int symbols__resolve_db(sqlite3 *db, char *err, size_t errlen);

/* Where else to look, for a program or library moved since the run (the
 * build-id recorded still decides whether a file is the one that ran):
 * - exe_paths, "OLD=NEW": a module whose path is OLD, or starts with OLD
 *   followed by '/', is looked for at NEW (plus the rest of the path);
 * - search_dirs: a module is looked for in each by its file name, and each
 *   is a debug directory too (DIR/.build-id/..., DIR/NAME.debug).
 * Candidates are tried before the recorded path, in the order given. */
struct symbols_opts {
    const char *const *exe_paths;
    size_t nexe_paths;
    const char *const *search_dirs;
    size_t nsearch_dirs;
};

/* The options that fill symbols_opts (cmd/symbolize.c), for `load` and
 * `symbolize`: --exe-path OLD=NEW and --search-dir DIR, each repeatable. */
#define SYMBOLS_MAX_PLACES 16
struct symbols_places {
    const char *exe[SYMBOLS_MAX_PLACES], *dirs[SYMBOLS_MAX_PLACES];
    struct symbols_opts o;         /* pointing at the arrays above          */
};
/* Takes --exe-path's value (`exe`) or --search-dir's: 0, or -EINVAL after
 * printing why (a bad value, too many). */
int symbols__add_place(struct symbols_places *p, const char *cmd, int exe, const char *v);
#define SYMBOLS_PLACES_HELP \
    "  --exe-path OLD=NEW  a program or library moved since the run: a module\n" \
    "                   recorded as OLD (or under the directory OLD) is looked\n" \
    "                   for at NEW; repeatable. The build-id recorded decides\n" \
    "                   whether a file found is the one that ran\n" \
    "  --search-dir DIR    look for modules by file name in DIR, and for debug\n" \
    "                   info there (DIR/.build-id/..., NAME.debug); repeatable\n"

/* symbols__resolve_db with those places (o may be NULL). Resolving again a
 * DB already resolved replaces what the last time found. */
int symbols__resolve_db_opts(sqlite3 *db, const struct symbols_opts *o, char *err,
                             size_t errlen);

/* ---- the resolver, without a DB ------------------------------------------
 * What symbols__resolve_db_opts does, in parts, so that the expensive part
 * (libdw: opening files, inflating debug sections, walking DWARF) can run
 * while the loader is still streaming:
 *
 *   s = symbols__new(o);             o must outlive s
 *   symbols__start(s);               optional: resolve on a thread of s's own
 *   symbols__module(s, ...), symbols__frame(s, ...)   as rows are made
 *   symbols__finish(s, err);         waits for the thread (or resolves now)
 *   symbols__write_db(s, db, err);   the rows, meta and warnings
 *   symbols__free(s);
 *
 * module and frame only copy their arguments into a queue (taking a mutex
 * the thread holds just long enough to take the queue): the caller never
 * waits for libdw. A frame may come before its module; one whose module
 * never comes stays unresolved. Each distinct (file, offset) is resolved
 * once. libdw's objects belong to the thread that resolves; what finish
 * returns refers to none of them. Results do not depend on the order rows
 * come in. */
struct symbols;

/* NULL when out of memory. Reads VHEAP_DEBUGINFO_PATH now. */
struct symbols *symbols__new(const struct symbols_opts *o);
/* 0, or -errno (no thread: finish resolves on the caller's thread). */
int symbols__start(struct symbols *s);
/* A module row: path and build_id (lowercase hex, "" or NULL if none) are
 * copied. Modules that share path and build-id are one file. */
void symbols__module(struct symbols *s, int64_t id, const char *path, const char *build_id);
/* A frame row: module_id 0 for a frame no module maps, counted in
 * symbols_frames only; module_offset is the address in that module's ELF
 * file (a module's frame always has one). */
void symbols__frame(struct symbols *s, int64_t id, int64_t module_id, uint64_t module_offset);
/* Every row given has been resolved (the thread, if any, has let go of
 * them). 0, or -errno with the reason in err (out of memory, libdw failing
 * to start a session); symbols__write_db then writes nothing. */
int symbols__finish(struct symbols *s, char *err, size_t errlen);
/* After finish: clears the DB's frames' functions, files, lines and
 * frame_inlines, writes what was found and the symbols_* meta counts (if
 * meta exists), all in one SAVEPOINT; then the warnings about files missing
 * or rebuilt, on stderr. 0, or -errno with the reason in err (nothing
 * written, no warnings). */
int symbols__write_db(struct symbols *s, sqlite3 *db, char *err, size_t errlen);
/* symbols__write_db for frames added to a DB an earlier resolver wrote
 * (a followed capture, load/follow.h): the frames it has no result for are
 * other frames, not ones that kept a better row, so no warning says so. */
int symbols__write_db_more(struct symbols *s, sqlite3 *db, char *err, size_t errlen);
/* Stops the thread (waiting for the address it is on) and frees; NULL ok. */
void symbols__free(struct symbols *s);

/* What finish found, for symbols_db.c: the k-th frame with a result (in the
 * order frames came), NULL past the end. Its levels, innermost first: the
 * out-of-line function's is the last. Valid until symbols__free. */
struct symbols_level {
    const char *function, *file;   /* NULL: unknown                          */
    int line;                      /* 0: unknown                             */
};
const struct symbols_level *symbols__result(struct symbols *s, size_t k, int64_t *frame_id,
                                            size_t *nlevels);
struct symbols_counts {
    size_t frames;                 /* every frame given                      */
    size_t missing, rebuilt;       /* files with frames that are not trusted */
};
void symbols__counts(const struct symbols *s, struct symbols_counts *c);
/* The warnings, one per untrusted file with frames (at most 20, then a
 * count), in the order of (path, build-id). */
void symbols__warn(const struct symbols *s);

#endif
