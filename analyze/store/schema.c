/* schema.c — schema/vheap.sql built into the binary (`.incbin`, so an
 * installed vheap-analyze never looks for it on disk; make runs from the
 * repository root, which the relative path assumes), and applying it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analyze/store/db.h"

__asm__(".pushsection .rodata\n"
        ".global vh_schema_sql\n"
        ".type vh_schema_sql, @object\n"
        ".balign 8\n"
        "vh_schema_sql:\n"
        ".incbin \"schema/vheap.sql\"\n"
        ".byte 0\n"
        ".size vh_schema_sql, . - vh_schema_sql\n"
        ".popsection\n");

/* Skips blanks and SQL comments: what precedes a statement's keyword. */
static const char *skip_noise(const char *p)
{
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (p[0] == '-' && p[1] == '-') {
            while (*p && *p != '\n')
                p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
        } else {
            return p;
        }
    }
}

static int is_index(const char *sql)
{
    const char *p = skip_noise(sql);
    if (strncasecmp(p, "CREATE", 6))
        return 0;
    p = skip_noise(p + 6);
    if (!strncasecmp(p, "UNIQUE", 6))
        p = skip_noise(p + 6);
    return !strncasecmp(p, "INDEX", 5);
}

/* Runs the embedded schema statement by statement. Indexes are kept apart so
 * the loader can build them once, after the bulk insert, which is faster
 * than maintaining them row by row. Statements are split with
 * sqlite3_complete() rather than by preparing them: preparing a CREATE
 * fails once its table exists. */
int vh_schema_apply(sqlite3 *db, enum vh_schema_part part, char *err, size_t errlen)
{
    size_t len = strlen(vh_schema_sql);
    char *buf = malloc(len + 1);
    const char *p = vh_schema_sql;
    int rc = 0;

    if (!buf) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    while (*skip_noise(p)) {
        size_t n = 0;
        /* the shortest prefix ending in ';' that is a complete statement */
        for (;;) {
            const char *semi = strchr(p + n, ';');
            if (!semi) {
                n = strlen(p);
                break;
            }
            n = (size_t)(semi - p) + 1;
            memcpy(buf, p, n);
            buf[n] = 0;
            if (sqlite3_complete(buf))
                break;
        }
        memcpy(buf, p, n);
        buf[n] = 0;
        p += n;
        if ((part == VH_SCHEMA_INDEXES) != is_index(buf))
            continue;
        char *msg = NULL;
        if (sqlite3_exec(db, buf, NULL, NULL, &msg) != SQLITE_OK) {
            snprintf(err, errlen, "schema: %s", msg ? msg : sqlite3_errmsg(db));
            sqlite3_free(msg);
            rc = -EIO;
            break;
        }
    }
    free(buf);
    return rc;
}
