/* stack_names.c — every stack of a database as names, outermost first
 * (stack_names.h): `frames` and `frame_inlines` are read once into one list
 * of names per frame, the call tree (`stack_nodes`, `stacks.node`) once into
 * arrays by node id (not the `stack_frames` view, whose full scan walks the
 * tree once per stack); a stack's names are the lists of the frames on its
 * walk up the tree, joined on demand. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/util/strtab.h"
#include "analyze/util/grow.h"
#include "analyze/util/path.h"
#include "analyze/query/stack_names.h"
#include "analyze/query/modmap.h"
#include "analyze/query/frame_rule.h"

struct vh_snames {
    struct vh_strtab *str;
    struct vh_sname *names;        /* every frame's names, frame by frame    */
    uint64_t *frame_off;           /* by frame id: its first name            */
    uint32_t *frame_n;             /* by frame id: how many (0: unknown id)  */
    int64_t max_frame;
    uint32_t *node_parent;         /* by node id: its caller's node, 0: none */
    uint32_t *node_frame;          /* by node id: its frame id               */
    uint32_t *node_depth;          /* by node id: frames from it to the root */
    int64_t max_node;
    uint32_t *stack_node;          /* by stack id: its innermost node        */
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

/* "file.c:42" of a function, file and line (0 when there is no file). */
static uint32_t where_of(struct vh_snames *s, const unsigned char *file, int64_t line)
{
    char buf[512];
    if (!file)
        return 0;
    snprintf(buf, sizeof buf, "%s:%" PRId64, vh_base_name((const char *)file), line);
    return intern(s, buf);
}

/* How well a frame names a stack, by the rule every command names stacks
 * by: read with the full file and module paths, which the names drop. */
static uint32_t naming_of(const unsigned char *fn, const unsigned char *file,
                          const unsigned char *module)
{
    struct vh_lframe lf = { (const char *)fn, (const char *)file, (const char *)module, 0, 0,
                            0, 0 };
    return (uint32_t)vh_frame_naming(&lf);
}

/* The frames' names: for each frame its inlined callers, outermost first,
 * then the function at the address itself. */
static int load_frames(sqlite3 *db, struct vh_snames *s, const struct vh_modmap *map, char *err,
                       size_t errlen)
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
                    where_of(s, sqlite3_column_text(in, 2), sqlite3_column_int64(in, 3)),
                    naming_of(fn, sqlite3_column_text(in, 2), sqlite3_column_text(fr, 6)) };
            }
            irc = sqlite3_step(in);
        }
        const unsigned char *fn = sqlite3_column_text(fr, 1), *path = sqlite3_column_text(fr, 6);
        const char *mod = path ? vh_modmap__get(map, vh_base_name((const char *)path)) : NULL;
        char buf[600];
        if (!fn) {
            if (mod && sqlite3_column_type(fr, 4) != SQLITE_NULL)
                snprintf(buf, sizeof buf, "%s+0x%" PRIx64, mod,
                         (uint64_t)sqlite3_column_int64(fr, 4));
            else
                snprintf(buf, sizeof buf, "0x%" PRIx64, (uint64_t)sqlite3_column_int64(fr, 5));
        }
        if (vh_grow(&s->names, &cap, n, sizeof *s->names, 4096))
            goto out;
        s->names[n++] = (struct vh_sname){
            intern(s, fn ? (const char *)fn : buf), mod ? intern(s, mod) : 0,
            where_of(s, sqlite3_column_text(fr, 2), sqlite3_column_int64(fr, 3)),
            naming_of(fn, sqlite3_column_text(fr, 2), path) };
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
    int rc = -ENOMEM, src;

    s->max_stack = max_id(db, "SELECT max(id) FROM stacks");
    s->max_node = max_id(db, "SELECT max(id) FROM stack_nodes");
    size_t ns = s->max_stack >= 0 ? (size_t)s->max_stack + 1 : 1;
    size_t nn = s->max_node >= 0 ? (size_t)s->max_node + 1 : 1;
    if (!(s->stack_node = calloc(ns, sizeof *s->stack_node)) || !(s->truncated = calloc(ns, 1)) ||
        !(s->node_parent = calloc(nn, sizeof *s->node_parent)) ||
        !(s->node_frame = calloc(nn, sizeof *s->node_frame)) ||
        !(s->node_depth = calloc(nn, sizeof *s->node_depth)))
        return -ENOMEM;
    if (sqlite3_prepare_v2(db, "SELECT id, truncated, node FROM stacks", -1, &st, NULL) !=
        SQLITE_OK)
        return fail(db, "reading stacks", err, errlen);
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), node = sqlite3_column_int64(st, 2);
        if (id < 0 || id > s->max_stack)
            continue;
        s->truncated[id] = sqlite3_column_int64(st, 1) != 0;
        s->stack_node[id] = node > 0 && node <= s->max_node ? (uint32_t)node : 0;
    }
    sqlite3_finalize(st);
    st = NULL;
    /* In id order: a node's parent has a lower id (the schema's CHECK), so
     * its depth is known when the node is read. */
    if (src != SQLITE_DONE ||
        sqlite3_prepare_v2(db, "SELECT id, parent, frame_id FROM stack_nodes ORDER BY id", -1,
                           &st, NULL) != SQLITE_OK) {
        rc = fail(db, "reading the call tree", err, errlen);
        goto out;
    }
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), up = sqlite3_column_int64(st, 1),
                f = sqlite3_column_int64(st, 2);
        if (id <= 0 || id > s->max_node || f < 0 || f > UINT32_MAX)
            continue;
        if (up < 0 || up >= id)
            up = 0;                /* a damaged tree ends the walk here */
        s->node_parent[id] = (uint32_t)up;
        s->node_frame[id] = (uint32_t)f;
        s->node_depth[id] = s->node_depth[up] + 1;
    }
    if (src != SQLITE_DONE) {
        rc = fail(db, "reading the call tree", err, errlen);
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(st);
    return rc;
}

int vh_snames__load(sqlite3 *db, struct vh_snames **out, char *err, size_t errlen)
{
    return vh_snames__load_mapped(db, NULL, out, err, errlen);
}

int vh_snames__load_mapped(sqlite3 *db, const struct vh_modmap *map, struct vh_snames **out,
                           char *err, size_t errlen)
{
    struct vh_snames *s = calloc(1, sizeof *s);
    int rc = -ENOMEM;
    *out = NULL;
    if (!s || !(s->str = vh_strtab__new()) || !(s->s_truncated = intern(s, "[truncated]")) ||
        !(s->s_nostack = intern(s, "[no stack]")))
        goto fail;
    if ((rc = load_frames(db, s, map, err, errlen)) || (rc = load_stacks(db, s, err, errlen)))
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
    free(s->node_parent);
    free(s->node_frame);
    free(s->node_depth);
    free(s->stack_node);
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
    uint32_t node = known ? s->stack_node[id] : 0;
    uint32_t nf = s->node_depth[node];
    int cut = depth > 0 && nf > depth;
    if (cut)                       /* the innermost `depth` frames are kept */
        nf = (uint32_t)depth;
    if (known && (s->truncated[id] || cut) &&
        put(buf, cap, n++, (struct vh_sname){ s->s_truncated, 0, 0, 1 }))
        return -ENOMEM;
    if (!nf)
        return put(buf, cap, n, (struct vh_sname){ s->s_nostack, 0, 0, 1 }) ? -ENOMEM : (int)n + 1;
    /* Names go outermost first: each frame's are written at its place,
     * counted back from the end of the stack's span, as the walk goes up. */
    size_t total = n;
    for (uint32_t v = node, i = 0; v && i < nf; v = s->node_parent[v], i++) {
        uint32_t f = s->node_frame[v];
        if ((int64_t)f <= s->max_frame)
            total += s->frame_n[f];
    }
    if (total > *cap && vh_grow(buf, cap, total - 1, sizeof **buf, 64))
        return -ENOMEM;
    size_t end = total;
    for (uint32_t v = node, i = 0; v && i < nf; v = s->node_parent[v], i++) {
        uint32_t f = s->node_frame[v];
        if ((int64_t)f > s->max_frame)
            continue;
        end -= s->frame_n[f];
        memcpy(*buf + end, s->names + s->frame_off[f], s->frame_n[f] * sizeof **buf);
    }
    return (int)total;
}

size_t vh_snames__naming(const struct vh_sname *path, size_t n)
{
    size_t pick = n - 1;               /* all machinery: the innermost frame */
    uint32_t best = VH_NAMING_NEVER;
    for (size_t i = n; i-- > 0;)
        if (path[i].naming > best) {
            best = path[i].naming;
            pick = i;
        }
    return pick;
}
