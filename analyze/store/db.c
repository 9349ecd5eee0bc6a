/* db.c — opening vheap DBs read-only, creating them atomically (under
 * "<path>.tmp-XXXXXX", renamed when complete, removed on a signal), and
 * turning "a DB or a capture" arguments into an up-to-date DB. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/store/db.h"
#include "analyze/util/diag.h"
#include "analyze/util/tmpfile.h"
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
    if (snprintf(n->path, sizeof n->path, "%s", path) >= (int)sizeof n->path) {
        snprintf(err, errlen, "%s: path too long", path);
        return -ENAMETOOLONG;
    }
    rc = may_replace(path, err, errlen);
    if (rc)
        return rc;
    fd = vh_tmpfile_create(path, n->tmp, sizeof n->tmp);
    if (fd < 0) {
        if (fd == -ENAMETOOLONG)
            snprintf(err, errlen, "%s: path too long", path);
        else
            snprintf(err, errlen, "cannot create %s: %s", path, strerror(-fd));
        n->tmp[0] = 0;
        return fd;
    }
    close(fd);
    /* Serialized (FULLMUTEX): the loader's row writer thread (load/rowq.h)
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
    rc = vh_tmpfile_publish(n->tmp, n->path);
    if (rc)
        snprintf(err, errlen, "cannot rename %s to %s: %s", n->tmp, n->path, strerror(-rc));
    n->tmp[0] = 0;
    return rc;
}

void db__discard(struct db_new *n)
{
    if (n->db)
        sqlite3_close(n->db);
    n->db = NULL;
    if (n->tmp[0])
        vh_tmpfile_discard(n->tmp);
    n->tmp[0] = 0;
}
