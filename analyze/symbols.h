/* symbols.h — offline symbolization of a loaded capture's frames table.
 * The loader (analyze/load.c) fills modules and frames with raw addresses;
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
 * (DIR/.build-id/xx/rest.debug) and .gnu_debuglink in the debug directories,
 * ":.debug:/usr/lib/debug" unless VHEAP_DEBUGINFO_PATH names others
 * (colon-separated); debuginfod too if DEBUGINFOD_URLS is set.
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

#endif
