/* stacks.c — stacks with their symbols, for the renderer (stacks.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/query/stacks.h"
#include "analyze/store/db.h"
#include "analyze/util/diag.h"
#include "analyze/util/grow.h"

struct vh_stacks {
    sqlite3_stmt *frames, *inlines, *trunc;
    int64_t max_depth;
};

void vh_stacks__free(struct vh_stacks *s)
{
    if (!s)
        return;
    sqlite3_finalize(s->frames);
    sqlite3_finalize(s->inlines);
    sqlite3_finalize(s->trunc);
    free(s);
}

int vh_stacks__open(const char *cmd, sqlite3 *db, int64_t max_depth, struct vh_stacks **out)
{
    int rc = vh_stacks__new(db, max_depth, out);
    if (rc)
        vh_errorf(cmd, "reading stacks: %s", sqlite3_errmsg(db));
    return rc;
}

int vh_stacks__new(sqlite3 *db, int64_t max_depth, struct vh_stacks **out)
{
    struct vh_stacks *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->max_depth = max_depth;
    int rc = -EINVAL;
    if (sqlite3_prepare_v2(db,
                           VH_SQL_STACK_UP("?1")
                           "SELECT f.id, f.address, f.module_offset, f.function, f.file,"
                           "       f.line, f.inline_depth, m.path"
                           " FROM up JOIN frames f ON f.id = up.frame_id"
                           " LEFT JOIN modules m ON m.id = f.module_id ORDER BY up.idx",
                           -1, &s->frames, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, VH_SQL_FRAME_INLINES, -1, &s->inlines, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT truncated FROM stacks WHERE id = ?1", -1, &s->trunc,
                           NULL) != SQLITE_OK)
        goto out;
    *out = s;
    return 0;
out:
    vh_stacks__free(s);
    return rc;
}

static char *col_dup(sqlite3_stmt *st, int i, int *oom)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    if (!t)
        return NULL;
    char *d = strdup((const char *)t);
    if (!d)
        *oom = 1;
    return d;
}

static int read_inlines(struct vh_stacks *s, int64_t frame_id, struct out_frame *f)
{
    int rc, oom = 0;
    size_t cap = 0;
    sqlite3_reset(s->inlines);
    sqlite3_bind_int64(s->inlines, 1, frame_id);
    while ((rc = sqlite3_step(s->inlines)) == SQLITE_ROW) {
        if (vh_grow(&f->inlined, &cap, f->ninlined, sizeof *f->inlined, 4))
            return -ENOMEM;
        struct out_inline *in = &f->inlined[f->ninlined++];
        in->function = col_dup(s->inlines, 0, &oom);
        in->file = col_dup(s->inlines, 1, &oom);
        in->line = sqlite3_column_int64(s->inlines, 2);
    }
    if (oom)
        return -ENOMEM;
    return rc == SQLITE_DONE ? 0 : -EIO;
}

struct out_stack *vh_stacks__get(struct vh_stacks *s, int64_t id, int *err)
{
    struct out_stack *st = calloc(1, sizeof *st);
    size_t cap = 0;
    int rc, oom = 0;
    *err = 0;
    if (!st) {
        *err = -ENOMEM;
        return NULL;
    }
    sqlite3_reset(s->trunc);
    sqlite3_bind_int64(s->trunc, 1, id);
    if (sqlite3_step(s->trunc) == SQLITE_ROW)
        st->truncated = sqlite3_column_int(s->trunc, 0) != 0;
    sqlite3_reset(s->trunc);

    sqlite3_reset(s->frames);
    sqlite3_bind_int64(s->frames, 1, id);
    while ((rc = sqlite3_step(s->frames)) == SQLITE_ROW) {
        if (s->max_depth && (int64_t)st->n >= s->max_depth) {
            st->omitted++;
            continue;
        }
        if (vh_grow(&st->frames, &cap, st->n, sizeof *st->frames, 16)) {
            *err = -ENOMEM;
            goto fail;
        }
        struct out_frame *f = &st->frames[st->n++];
        memset(f, 0, sizeof *f);
        f->address = sqlite3_column_int64(s->frames, 1);
        f->has_offset = sqlite3_column_type(s->frames, 2) != SQLITE_NULL;
        f->offset = sqlite3_column_int64(s->frames, 2);
        f->function = col_dup(s->frames, 3, &oom);
        f->file = col_dup(s->frames, 4, &oom);
        f->line = sqlite3_column_int64(s->frames, 5);
        f->module = col_dup(s->frames, 7, &oom);
        if (sqlite3_column_int64(s->frames, 6) > 0 &&
            (*err = read_inlines(s, sqlite3_column_int64(s->frames, 0), f)))
            goto fail;
        if (oom) {
            *err = -ENOMEM;
            goto fail;
        }
    }
    if (rc != SQLITE_DONE) {
        *err = -EIO;
        goto fail;
    }
    sqlite3_reset(s->frames);
    return st;
fail:
    sqlite3_reset(s->frames);
    out_stack__free(st);
    return NULL;
}
