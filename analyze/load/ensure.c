/* ensure.c — loading a capture given where a DB is expected, unless its
 * DB is already up to date (ensure.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/load/ensure.h"
#include "analyze/load/load.h"
#include "analyze/store/db.h"
#include "analyze/util/diag.h"
#include "common/capture_format.h"

/* Whether the DB at db_path was loaded from the capture as it is now. The
 * size and mtime catch a rewritten file; the header's chunk count and
 * liveness time catch a capture still being written through its mapping
 * (whose mtime may lag). */
static int up_to_date(const char *capture, const char *db_path)
{
    struct vh_capture_header h;
    struct stat sc, sd;
    sqlite3 *db = NULL;
    char err[256];
    int fd, ok = 0;

    if (stat(db_path, &sd) || stat(capture, &sc))
        return 0;
    fd = open(capture, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
        close(fd);
        return 0;
    }
    close(fd);
    if (db__open_read(db_path, &db, err, sizeof err))
        return 0;
    ok = db__meta_int(db, "capture_size", -1) == (long long)sc.st_size &&
         db__meta_int(db, "capture_mtime_ns", -1) ==
             (long long)sc.st_mtim.tv_sec * 1000000000ll + sc.st_mtim.tv_nsec &&
         db__meta_int(db, "capture_chunks", -1) == (long long)h.chunks_claimed &&
         db__meta_int(db, "capture_last_time", -1) == (long long)h.last_time &&
         db__meta_int(db, "capture_flags", -1) == (long long)h.flags;
    sqlite3_close(db);
    return ok;
}

int load__ensure(const char *arg, char *db_path_out, size_t outlen, char *err, size_t errlen)
{
    struct load_opts opts = { .progress = -1 };
    struct load_stats st;
    enum vh_file_kind kind;
    int rc;

    rc = db__file_kind(arg, &kind, err, errlen);
    if (rc)
        return rc;
    if (kind == VH_FILE_SQLITE) {
        if (snprintf(db_path_out, outlen, "%s", arg) >= (int)outlen) {
            snprintf(err, errlen, "%s: path too long", arg);
            return -ENAMETOOLONG;
        }
        return 0;
    }
    if (kind != VH_FILE_CAPTURE) {
        snprintf(err, errlen, "%s is neither a vheap capture nor a vheap database", arg);
        return -EINVAL;
    }
    if (db__default_path(arg, db_path_out, outlen)) {
        snprintf(err, errlen, "%s: path too long", arg);
        return -ENAMETOOLONG;
    }
    if (up_to_date(arg, db_path_out))
        return 0;
    rc = load__capture(arg, db_path_out, &opts, &st, err, errlen);
    if (rc == -EACCES || rc == -EROFS || rc == -EPERM) {
        size_t n = strlen(err);
        snprintf(err + n, errlen - n, " (load it elsewhere: vheap-analyze load %s DB)", arg);
    }
    if (rc)
        return rc;
    vh_errorf(NULL, "loaded %s into %s", arg, db_path_out);
    if (st.damage_count)
        vh_errorf(NULL, "warning: %s: %s (%u damaged region%s); loaded what is valid",
                arg, st.damage, st.damage_count, st.damage_count == 1 ? "" : "s");
    return 0;
}

int load__open_any(const char *arg, sqlite3 **out, char *err, size_t errlen)
{
    char path[4096];
    int rc = load__ensure(arg, path, sizeof path, err, errlen);
    return rc ? rc : db__open_read(path, out, err, errlen);
}
