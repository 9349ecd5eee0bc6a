/* db.h — opening, creating and recognising vheap databases. Query commands
 * open DBs read-only (db__open_read; "a DB or a capture" is load/ensure.h);
 * the loader's DB appears at its path only when complete. Errors: one line
 * in `err`, naming the file; functions return 0 or -errno. */
#ifndef VHEAP_DB_H
#define VHEAP_DB_H

#include <stddef.h>
#include <sqlite3.h>

#define VH_SCHEMA_VERSION 9
#define VH_DB_SUFFIX ".sqlite"        /* default DB = capture path + this    */

/* ---- schema.c: schema/vheap.sql, embedded ------------------------------ */
extern const char vh_schema_sql[];   /* NUL-terminated */

enum vh_schema_part {
    VH_SCHEMA_TABLES,                /* tables and views                    */
    VH_SCHEMA_INDEXES,               /* CREATE INDEX statements only        */
};
int vh_schema_apply(sqlite3 *db, enum vh_schema_part part, char *err, size_t errlen);

/* ---- reading ------------------------------------------------------------ */

/* Opens `path` read-only (SQLITE_OPEN_READONLY) and checks that it is a vheap
 * DB of VH_SCHEMA_VERSION: "FILE is not a vheap database",
 * "FILE: schema version N, expected M (load the capture again)". */
int db__open_read(const char *path, sqlite3 **out, char *err, size_t errlen);

/* Checks an open handle the same way. */
int db__check(sqlite3 *db, const char *path, char *err, size_t errlen);

/* What a file is, from its first bytes. */
enum vh_file_kind { VH_FILE_OTHER, VH_FILE_CAPTURE, VH_FILE_SQLITE };
int db__file_kind(const char *path, enum vh_file_kind *kind, char *err, size_t errlen);

/* "CAPTURE.sqlite". Returns 0, or -ENAMETOOLONG. */
int db__default_path(const char *capture, char *out, size_t outlen);


/* A CTE `up(frame_id, idx)`: the frames of the stack whose id is the SQL
 * parameter `param` ("?1"), idx 0 the innermost — the stack_frames view's
 * rows for one stack, read from the call tree directly (one primary-key
 * lookup per frame; each step to a lower id, so it ends whatever the file
 * holds). Append "SELECT ... FROM up ... ORDER BY idx". */
#define VH_SQL_STACK_UP(param)                                                              \
    "WITH RECURSIVE up(id, parent, frame_id, idx) AS ("                                     \
    " SELECT n.id, n.parent, n.frame_id, 0 FROM stacks s JOIN stack_nodes n ON n.id = s.node" \
    " WHERE s.id = " param                                                                  \
    " UNION ALL SELECT n.id, n.parent, n.frame_id, up.idx + 1"                              \
    " FROM up JOIN stack_nodes n ON n.id = up.parent AND n.id < up.id) "

/* The functions inlined into the frame whose id is ?1, innermost first:
 * (function, file, line) rows. */
#define VH_SQL_FRAME_INLINES \
    "SELECT function, file, line FROM frame_inlines WHERE frame_id = ?1 ORDER BY depth"

/* One integer from meta, or `dflt` when the key is missing or not a number. */
long long db__meta_int(sqlite3 *db, const char *key, long long dflt);

/* ---- writing (the loader) ----------------------------------------------- */

/* A DB being created for `path`: the handle writes to a temporary file next
 * to it (same directory, so the final rename is atomic). Refuses to replace
 * an existing file that is not a vheap DB. Until db__publish or db__discard,
 * SIGINT/SIGTERM/SIGHUP remove the temporary file. */
struct db_new {
    sqlite3 *db;
    char path[4096];
    char tmp[4096];
};
int db__create(const char *path, struct db_new *out, char *err, size_t errlen);

/* Closes the handle and renames the temporary file to the final path. */
int db__publish(struct db_new *n, char *err, size_t errlen);

/* Closes the handle and removes the temporary file. */
void db__discard(struct db_new *n);

#endif
