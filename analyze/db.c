/* db.c — opening vheap DBs read-only, creating them atomically (under
 * "<path>.tmp-XXXXXX", renamed when complete, removed on a signal), and
 * turning "a DB or a capture" arguments into an up-to-date DB. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/cli.h"
#include "analyze/db.h"
#include "analyze/load.h"
#include "common/capture_format.h"

#define SQLITE_MAGIC "SQLite format 3"   /* 16 bytes with its NUL */

long long db__meta_int(sqlite3 *db, const char *key, long long dflt)
{
    sqlite3_stmt *st = NULL;
    long long v = dflt;

    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) != SQLITE_OK)
        return dflt;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

int db__check(sqlite3 *db, const char *path, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;

    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &st,
                           NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        snprintf(err, errlen, "%s is not a vheap database", path);
        rc = -EINVAL;
        goto out;
    }
    if (sqlite3_column_type(st, 0) != SQLITE_INTEGER ||
        sqlite3_column_int64(st, 0) != VH_SCHEMA_VERSION) {
        const unsigned char *v = sqlite3_column_text(st, 0);
        snprintf(err, errlen, "%s: schema version %s, expected %d (load the capture again)", path,
                 v ? (const char *)v : "NULL", VH_SCHEMA_VERSION);
        rc = -EPROTO;
    }
out:
    sqlite3_finalize(st);
    return rc;
}

int db__open_read(const char *path, sqlite3 **out, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    struct stat sb;
    int rc;

    *out = NULL;
    if (stat(path, &sb)) {
        rc = -errno;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return rc;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s is not a vheap database (not a regular file)", path);
        return -EINVAL;
    }
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, db ? sqlite3_errmsg(db) : "cannot open");
        sqlite3_close(db);
        return -EIO;
    }
    /* A DB may come from someone else: its views and triggers must not
     * call functions with side effects, nor may SQL alter the file format. */
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
    sqlite3_busy_timeout(db, 5000);
    rc = db__check(db, path, err, errlen);
    if (rc) {
        sqlite3_close(db);
        return rc;
    }
    *out = db;
    return 0;
}

int db__file_kind(const char *path, enum vh_file_kind *kind, char *err, size_t errlen)
{
    char head[16] = { 0 };
    struct stat sb;
    ssize_t n;
    int fd, rc = 0;

    *kind = VH_FILE_OTHER;
    /* O_NONBLOCK: a FIFO must be refused, not waited on. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 || fstat(fd, &sb)) {
        rc = -errno;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        rc = -EINVAL;
        goto out;
    }
    n = pread(fd, head, sizeof head, 0);
    if (n < 0) {
        rc = -errno;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (n >= 8 && !memcmp(head, VH_CAPTURE_MAGIC, 8))
        *kind = VH_FILE_CAPTURE;
    else if (n == 16 && !memcmp(head, SQLITE_MAGIC, 16))
        *kind = VH_FILE_SQLITE;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

int db__default_path(const char *capture, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s%s", capture, VH_DB_SUFFIX);
    return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/* ---- creating ----------------------------------------------------------- */

/* The temporary file to remove if a signal ends the load. Only one DB is
 * created at a time in this process. */
static char cleanup_path[4096];
static volatile sig_atomic_t cleanup_armed;
static struct sigaction old_int, old_term, old_hup;

static void on_signal(int sig)
{
    if (cleanup_armed)
        unlink(cleanup_path);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void cleanup_arm(const char *tmp)
{
    struct sigaction sa;

    snprintf(cleanup_path, sizeof cleanup_path, "%s", tmp);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    cleanup_armed = 1;
}

static void cleanup_disarm(void)
{
    if (!cleanup_armed)
        return;
    cleanup_armed = 0;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
}

/* An existing file at the target may be replaced only if it is empty or a
 * vheap DB (of any schema version): never a user's other data, and never
 * the capture itself given twice by mistake. */
static int may_replace(const char *path, char *err, size_t errlen)
{
    enum vh_file_kind kind;
    struct stat sb;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int ok = 0;

    if (lstat(path, &sb)) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -errno;
    }
    if (S_ISREG(sb.st_mode) && sb.st_size == 0)
        return 0;
    if (!S_ISREG(sb.st_mode) || db__file_kind(path, &kind, err, errlen) || kind != VH_FILE_SQLITE)
        goto out;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT 1 FROM meta WHERE key = 'schema_version'", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        ok = 1;
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (ok)
        return 0;
    snprintf(err, errlen, "%s exists and is not a vheap database; not replacing it", path);
    return -EEXIST;
}

int db__create(const char *path, struct db_new *n, char *err, size_t errlen)
{
    int fd, rc;

    memset(n, 0, sizeof *n);
    if (snprintf(n->path, sizeof n->path, "%s", path) >= (int)sizeof n->path ||
        snprintf(n->tmp, sizeof n->tmp, "%s.tmp-XXXXXX", path) >= (int)sizeof n->tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return -ENAMETOOLONG;
    }
    rc = may_replace(path, err, errlen);
    if (rc)
        return rc;
    fd = mkstemp(n->tmp);              /* mode 0600, like the capture itself */
    if (fd < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        n->tmp[0] = 0;
        return rc;
    }
    close(fd);
    cleanup_arm(n->tmp);
    /* Serialized (FULLMUTEX): the loader's row writer thread (rowq.h)
     * shares the connection. Readers are NOMUTEX: one thread each. */
    if (sqlite3_open_v2(n->tmp, &n->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, NULL) !=
        SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", n->tmp, n->db ? sqlite3_errmsg(n->db) : "cannot open");
        db__discard(n);
        return -EIO;
    }
    return 0;
}

int db__publish(struct db_new *n, char *err, size_t errlen)
{
    int rc = 0;

    if (sqlite3_close(n->db) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", n->tmp, sqlite3_errmsg(n->db));
        n->db = NULL;
        db__discard(n);
        return -EIO;
    }
    n->db = NULL;
    if (rename(n->tmp, n->path)) {
        rc = -errno;
        snprintf(err, errlen, "cannot rename %s to %s: %s", n->tmp, n->path, strerror(errno));
        unlink(n->tmp);
    }
    n->tmp[0] = 0;
    cleanup_disarm();
    return rc;
}

void db__discard(struct db_new *n)
{
    if (n->db)
        sqlite3_close(n->db);
    n->db = NULL;
    if (n->tmp[0])
        unlink(n->tmp);
    n->tmp[0] = 0;
    cleanup_disarm();
}

/* ---- "a DB or a capture" ------------------------------------------------ */

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

int db__ensure(const char *arg, char *db_path_out, size_t outlen, char *err, size_t errlen)
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

int db__open_any(const char *arg, sqlite3 **out, char *err, size_t errlen)
{
    char path[4096];
    int rc = db__ensure(arg, path, sizeof path, err, errlen);
    return rc ? rc : db__open_read(path, out, err, errlen);
}
