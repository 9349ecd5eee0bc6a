/* modmap.c — module names of one run read as another's (modmap.h): a short
 * list of (old, new) file names, looked up once per frame when a run's stack
 * names are loaded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/query/modmap.h"
#include "analyze/util/grow.h"

struct vh_modmap {
    char **from, **to;
    size_t n, cap_from, cap_to;
};

struct vh_modmap *vh_modmap__new(void)
{
    return calloc(1, sizeof(struct vh_modmap));
}

void vh_modmap__free(struct vh_modmap *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->from[i]);
        free(m->to[i]);
    }
    free(m->from);
    free(m->to);
    free(m);
}

static const char *file_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Adds from -> to (the first `nf`/`nt` bytes of each, as file names). */
static int add(struct vh_modmap *m, const char *from, size_t nf, const char *to, size_t nt)
{
    if (vh_grow(&m->from, &m->cap_from, m->n, sizeof *m->from, 8) ||
        vh_grow(&m->to, &m->cap_to, m->n, sizeof *m->to, 8))
        return -ENOMEM;
    char *f = strndup(from, nf), *t = strndup(to, nt);
    if (!f || !t) {
        free(f);
        free(t);
        return -ENOMEM;
    }
    /* file names: a path's directories are left out of stack names too */
    memmove(f, file_name(f), strlen(file_name(f)) + 1);
    memmove(t, file_name(t), strlen(file_name(t)) + 1);
    if (!*f || !*t) {
        free(f);
        free(t);
        return -EINVAL;
    }
    m->from[m->n] = f;
    m->to[m->n++] = t;
    return 0;
}

int vh_modmap__parse(struct vh_modmap *m, const char *spec)
{
    while (*spec) {
        size_t len = strcspn(spec, ",");
        const char *eq = memchr(spec, '=', len);
        if (!eq)
            return -EINVAL;
        int rc = add(m, spec, (size_t)(eq - spec), eq + 1, len - (size_t)(eq - spec) - 1);
        if (rc)
            return rc;
        spec += len + (spec[len] == ',');
    }
    return 0;
}

/* The main program's path of db into buf ("" when it has none): 0 or -EIO. */
static int main_path(sqlite3 *db, char *buf, size_t len, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc;
    *buf = 0;
    if (sqlite3_prepare_v2(db, "SELECT path FROM modules WHERE is_main AND path IS NOT NULL"
                               " ORDER BY id LIMIT 1", -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "reading modules: %s", sqlite3_errmsg(db));
        return -EIO;
    }
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
    else if (rc != SQLITE_DONE)
        snprintf(err, errlen, "reading modules: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -EIO;
}

int vh_modmap__mains(struct vh_modmap *m, sqlite3 *a, sqlite3 *b, char *err, size_t errlen)
{
    char pa[4096], pb[4096];
    int rc;
    if ((rc = main_path(a, pa, sizeof pa, err, errlen)) ||
        (rc = main_path(b, pb, sizeof pb, err, errlen)))
        return rc;
    if (!*pa || !*pb)
        return 0;
    rc = add(m, pa, strlen(pa), pb, strlen(pb));
    return rc == -EINVAL ? 0 : rc;          /* a path ending in '/': nothing to map */
}

const char *vh_modmap__get(const struct vh_modmap *m, const char *name)
{
    for (size_t i = 0; m && i < m->n; i++)
        if (!strcmp(m->from[i], name))
            return m->to[i];
    return name;
}
