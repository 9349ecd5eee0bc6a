/* tmpfile.h — a file that appears under its name only when complete: it is
 * written as NAME.tmp-XXXXXX in the same directory (mode 0600) and renamed
 * over NAME at the end, so a failed or interrupted run never leaves a
 * half-written DB or export under the name a user asked for. Until then
 * SIGINT, SIGTERM and SIGHUP remove the temporary file before the process
 * dies as it would have; the earlier handlers are back once no temporary
 * file is pending. Used by the loader's DB (store/db.c) and every exported
 * file (util/xout.c). */
#ifndef VHEAP_TMPFILE_H
#define VHEAP_TMPFILE_H

#include <stddef.h>
#include <stdio.h>

/* Creates the temporary file for `path`, its name into tmp[tmplen]: the
 * open descriptor (O_CLOEXEC), or -errno (-ENAMETOOLONG, -EBUSY when too
 * many are pending at once). */
int vh_tmpfile_create(const char *path, char *tmp, size_t tmplen);

/* Renames tmp over path: 0 or -errno (tmp then removed). */
int vh_tmpfile_publish(const char *tmp, const char *path);

/* Removes tmp. */
void vh_tmpfile_discard(const char *tmp);

/* A scratch file with no name, opened "w+", in $TMPDIR (else /tmp) like
 * SQLite's own temporary files: tmpfile(3) ignores TMPDIR, so a user who
 * points it at a roomy disk would still fill /tmp. It has no name to remove:
 * it vanishes with its last descriptor, signal or not. NULL with errno. */
FILE *vh_tmpfile_scratch(void);

#endif
