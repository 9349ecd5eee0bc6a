/* symbols.h — offline symbolization of a loaded capture's frames table.
 * The loader (analyze/load/load.c) fills modules and frames with raw addresses;
 * this resolves them with elfutils libdw, in the analyzer, never in the
 * profiled program. */
#ifndef VHEAP_SYMBOLS_H
#define VHEAP_SYMBOLS_H

#include <stddef.h>
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
 * symbols_modules_rebuilt) when that table exists. Unresolvable frames are
 * not an error.
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

#endif
