/* ensure.h — "a DB or a capture", as every command takes its input: a
 * capture is loaded into its default DB (CAPTURE.sqlite) the first time and
 * again whenever it changed; a DB is used as it is. */
#ifndef VHEAP_ENSURE_H
#define VHEAP_ENSURE_H

#include <sqlite3.h>
#include <stddef.h>

/* Accepts a DB or a capture. For a capture, its default DB is (re)loaded
 * unless it exists and is up to date (same schema version, and the capture's
 * size and mtime recorded in meta match the file's); damage in the capture is
 * reported on stderr as a warning and does not fail. A progress bar is shown
 * when stderr is a terminal. The DB path goes to db_path_out. */
int load__ensure(const char *arg, char *db_path_out, size_t outlen, char *err, size_t errlen);

/* load__ensure() then db__open_read(). */
int load__open_any(const char *arg, sqlite3 **out, char *err, size_t errlen);

#endif
