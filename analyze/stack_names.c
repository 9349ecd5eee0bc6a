/* stack_names.c — every stack of a database as names, outermost first
 * (stack_names.h): `frames` and `frame_inlines` are read once into one list
 * of names per frame, `stack_frames` once into one list of frames per stack;
 * a stack's names are those lists joined on demand. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/export.h"
#include "analyze/grow.h"
#include "analyze/stack_names.h"

struct vh_snames {
    struct vh_strtab *str;
    struct vh_sname *names;        /* every frame's names, frame by frame    */
    uint64_t *frame_off;           /* by frame id: its first name            */
    uint32_t *frame_n;             /* by frame id: how many (0: unknown id)  */
    int64_t max_frame;
    uint32_t *stack_frames;        /* every stack's frame ids, innermost first */
    uint64_t *stack_off;           /* by stack id                            */
    uint32_t *stack_n;
    uint8_t *truncated;
    int64_t max_stack;
    uint32_t s_truncated, s_nostack;
};

static int fail(sqlite3 *db, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(db));
    return -EIO;
}

static uint32_t intern(struct vh_snames *s, const char *t)
{
    int added;
    return t ? vh_strtab__intern(s->str, t, strlen(t), &added) : 0;
}

static int64_t max_id(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* "file.c:42" of a function, file and line (0 when there is no file). */
static uint32_t where_of(struct vh_snames *s, const unsigned char *file, int64_t line)
{
    char buf[512];
    if (!file)
        return 0;
    snprintf(buf, sizeof buf, "%s:%" PRId64, base_name((const char *)file), line);
    return intern(s, buf);
}

/* The frames' names: for each frame its inlined callers, outermost first,
 * then the function at the address itself. */
static int load_frames(sqlite3 *db, struct vh_snames *s, char *err, size_t errlen)
{
    sqlite3_stmt *fr = NULL, *in = NULL;
    size_t cap = 0, n = 0;
    int rc = -ENOMEM, src, irc;

    s->max_frame = max_id(db, "SELECT max(id) FROM frames");
    size_t nf = s->max_frame >= 0 ? (size_t)s->max_frame + 1 : 1;
    if (!(s->frame_off = calloc(nf, sizeof *s->frame_off)) ||
        !(s->frame_n = calloc(nf, sizeof *s->frame_n)))
        return -ENOMEM;
    if (sqlite3_prepare_v2(db,
                           "SELECT f.id, f.function, f.file, f.line, f.module_offset, f.address,"
                           "       m.path FROM frames f LEFT JOIN modules m ON m.id = f.module_id"
                           " ORDER BY f.id",
                           -1, &fr, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "SELECT frame_id, function, file, line FROM frame_inlines"
                           " ORDER BY frame_id, depth DESC",
                           -1, &in, NULL) != SQLITE_OK) {
        rc = fail(db, "reading frames", err, errlen);
        goto out;
    }
    irc = sqlite3_step(in);
    while ((src = sqlite3_step(fr)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(fr, 0);
        if (id < 0 || id > s->max_frame)
            continue;
        s->frame_off[id] = n;
        /* the inlined callers, outermost (the out-of-line function) first */
        while (irc == SQLITE_ROW && sqlite3_column_int64(in, 0) <= id) {
            if (sqlite3_column_int64(in, 0) == id) {
                const unsigned char *fn = sqlite3_column_text(in, 1);
                if (vh_grow(&s->names, &cap, n, sizeof *s->names, 4096))
                    goto out;
                s->names[n++] = (struct vh_sname){
                    intern(s, fn ? (const char *)fn : "??"), 0,
                    where_of(s, sqlite3_column_text(in, 2), sqlite3_column_int64(in, 3)) };
            }
            irc = sqlite3_step(in);
        }
        const unsigned char *fn = sqlite3_column_text(fr, 1), *mod = sqlite3_column_text(fr, 6);
        char buf[600];
        if (!fn) {
            if (mod && sqlite3_column_type(fr, 4) != SQLITE_NULL)
                snprintf(buf, sizeof buf, "%s+0x%" PRIx64, base_name((const char *)mod),
                         (uint64_t)sqlite3_column_int64(fr, 4));
            else
                snprintf(buf, sizeof buf, "0x%" PRIx64, (uint64_t)sqlite3_column_int64(fr, 5));
        }
        if (vh_grow(&s->names, &cap, n, sizeof *s->names, 4096))
            goto out;
        s->names[n++] = (struct vh_sname){
            intern(s, fn ? (const char *)fn : buf), mod ? intern(s, base_name((const char *)mod)) : 0,
            where_of(s, sqlite3_column_text(fr, 2), sqlite3_column_int64(fr, 3)) };
        /* the module of the physical frame is the inlined callers' too */
        for (uint64_t k = s->frame_off[id]; k + 1 < n; k++)
            s->names[k].module = s->names[n - 1].module;
        s->frame_n[id] = (uint32_t)(n - s->frame_off[id]);
    }
    if (src != SQLITE_DONE || (irc != SQLITE_ROW && irc != SQLITE_DONE)) {
        rc = fail(db, "reading frames", err, errlen);
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(fr);
    sqlite3_finalize(in);
    return rc;
}

static int load_stacks(sqlite3 *db, struct vh_snames *s, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0, n = 0;
    int rc = -ENOMEM, src;

    s->max_stack = max_id(db, "SELECT max(id) FROM stacks");
    size_t ns = s->max_stack >= 0 ? (size_t)s->max_stack + 1 : 1;
    if (!(s->stack_off = calloc(ns, sizeof *s->stack_off)) ||
        !(s->stack_n = calloc(ns, sizeof *s->stack_n)) ||
        !(s->truncated = calloc(ns, 1)))
        return -ENOMEM;
    if (sqlite3_prepare_v2(db, "SELECT id FROM stacks WHERE truncated != 0", -1, &st, NULL) !=
        SQLITE_OK)
        return fail(db, "reading stacks", err, errlen);
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id >= 0 && id <= s->max_stack)
            s->truncated[id] = 1;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (src != SQLITE_DONE ||
        sqlite3_prepare_v2(db, "SELECT stack_id, frame_id FROM stack_frames ORDER BY stack_id, idx",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = fail(db, "reading stacks", err, errlen);
        goto out;
    }
    int64_t prev = -1;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), f = sqlite3_column_int64(st, 1);
        if (id < 0 || id > s->max_stack || f < 0 || f > UINT32_MAX)
            continue;
        if (id != prev)
            s->stack_off[id] = n;
        prev = id;
        if (vh_grow(&s->stack_frames, &cap, n, sizeof *s->stack_frames, 4096))
            goto out;
        s->stack_frames[n++] = (uint32_t)f;
        s->stack_n[id]++;
    }
    if (src != SQLITE_DONE) {
        rc = fail(db, "reading stack frames", err, errlen);
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(st);
    return rc;
}

int vh_snames__load(sqlite3 *db, struct vh_snames **out, char *err, size_t errlen)
{
    struct vh_snames *s = calloc(1, sizeof *s);
    int rc = -ENOMEM;
    *out = NULL;
    if (!s || !(s->str = vh_strtab__new()) || !(s->s_truncated = intern(s, "[truncated]")) ||
        !(s->s_nostack = intern(s, "[no stack]")))
        goto fail;
    if ((rc = load_frames(db, s, err, errlen)) || (rc = load_stacks(db, s, err, errlen)))
        goto fail;
    *out = s;
    return 0;
fail:
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    vh_snames__free(s);
    return rc;
}

void vh_snames__free(struct vh_snames *s)
{
    if (!s)
        return;
    vh_strtab__free(s->str);
    free(s->names);
    free(s->frame_off);
    free(s->frame_n);
    free(s->stack_frames);
    free(s->stack_off);
    free(s->stack_n);
    free(s->truncated);
    free(s);
}

const char *vh_snames__str(const struct vh_snames *s, uint32_t id)
{
    return id ? vh_strtab__get(s->str, id) : NULL;
}

static int put(struct vh_sname **buf, size_t *cap, size_t n, struct vh_sname v)
{
    if (vh_grow(buf, cap, n, sizeof **buf, 64))
        return -ENOMEM;
    (*buf)[n] = v;
    return 0;
}

int vh_snames__stack(const struct vh_snames *s, int64_t id, int64_t depth, struct vh_sname **buf,
                     size_t *cap)
{
    size_t n = 0;
    int known = id >= 0 && id <= s->max_stack;
    uint32_t nf = known ? s->stack_n[id] : 0;
    int cut = depth > 0 && nf > depth;
    if (cut)
        nf = (uint32_t)depth;
    if (known && (s->truncated[id] || cut) &&
        put(buf, cap, n++, (struct vh_sname){ s->s_truncated, 0, 0 }))
        return -ENOMEM;
    if (!nf)
        return put(buf, cap, n, (struct vh_sname){ s->s_nostack, 0, 0 }) ? -ENOMEM : (int)n + 1;
    for (uint32_t i = nf; i-- > 0;) {
        uint32_t f = s->stack_frames[s->stack_off[id] + i];
        if ((int64_t)f > s->max_frame)
            continue;
        for (uint32_t k = 0; k < s->frame_n[f]; k++)
            if (put(buf, cap, n++, s->names[s->frame_off[f] + k]))
                return -ENOMEM;
    }
    return (int)n;
}
