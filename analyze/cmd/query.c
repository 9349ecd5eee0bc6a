/* cmd/query.c — option parsing, DB opening, stack reading and the run of a
 * query command, shared by the query commands (cmd/query.h). Every
 * statement binds its parameters: no SQL is ever built from what the user
 * typed. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/size_parse.h"
#include "analyze/load/ensure.h"
#include "analyze/store/db.h"
#include "analyze/cmd/query.h"
#include "analyze/query/recording.h"
#include "analyze/util/grow.h"

static int unknown_opt(const struct vh_command *cmd, const char *arg)
{
    vh_errorf(cmd->name, "unknown option '%s' (see vheap-analyze %s --help)", arg, cmd->name);
    return -EINVAL;
}

/* A count (a size if `sized`, common/size_parse.h), non-negative: 0, or
 * -EINVAL with "NAME: 'VALUE' is not WHAT" printed. */
static int count_opt(const struct vh_command *cmd, const char *name, int sized, const char *what,
                     const char *v, int64_t *out)
{
    uint64_t n;
    if (vh_parse_size(v, sized, INT64_MAX, &n)) {
        vh_errorf(cmd->name, "%s: '%s' is not %s", name, v, what);
        return -EINVAL;
    }
    *out = (int64_t)n;
    return 0;
}

/* The shared options: getopt_long's val is one of these. */
enum {
    Q_FORMAT = 1, Q_LIMIT, Q_DEPTH, Q_HEAP, Q_BYTES, Q_MIN_BYTES, Q_BY_TAG, Q_TEMPORARY, Q_BY,
    Q_OWN = 256,                   /* + the index in the command's table     */
};

static const struct {
    const char *name;
    int has_value, val;
    unsigned extra;                /* 0: every command                       */
} shared[] = {
    { "format", 1, Q_FORMAT, 0 },           { "limit", 1, Q_LIMIT, 0 },
    { "depth", 1, Q_DEPTH, 0 },             { "heap", 1, Q_HEAP, 0 },
    { "bytes", 0, Q_BYTES, 0 },             { "min-bytes", 1, Q_MIN_BYTES, VH_QOPT_MIN_BYTES },
    { "by-tag", 0, Q_BY_TAG, VH_QOPT_BY_TAG }, { "temporary", 1, Q_TEMPORARY, VH_QOPT_TEMPORARY },
    { "by", 1, Q_BY, VH_QOPT_BY },
};
#define MAX_OPTS 48

/* The command's own options (their table) and the shared ones `extra`
 * allows, unless the command's table names them (to take them over, or to
 * refuse them), as getopt_long's tables. -ENOMEM: too many. */
static int opt_tables(unsigned extra, const struct vh_opt *own, size_t nown,
                      struct option *lo, char *so)
{
    size_t n = 0, ns = 0;
    so[ns++] = ':';
    for (size_t k = 0; k < nown; k++) {
        const char *name = own[k].name;
        if (!name || (!own[k].value && !own[k].flag))
            continue;
        if (n + 1 >= MAX_OPTS || k >= 256)
            return -ENOMEM;
        if (name[1] != '-') {      /* "-o" */
            so[ns++] = name[1];
            if (own[k].has_value)
                so[ns++] = ':';
            continue;
        }
        lo[n++] = (struct option){ name + 2, own[k].has_value ? required_argument : no_argument,
                                   NULL, Q_OWN + (int)k };
    }
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++) {
        int taken = 0;
        for (size_t k = 0; k < nown; k++)
            taken |= own[k].name && own[k].name[1] == '-' && !strcmp(own[k].name + 2,
                                                                      shared[i].name);
        if (taken || (shared[i].extra && !(extra & shared[i].extra)))
            continue;
        if (n + 1 >= MAX_OPTS)
            return -ENOMEM;
        lo[n++] = (struct option){ shared[i].name,
                                   shared[i].has_value ? required_argument : no_argument, NULL,
                                   shared[i].val };
    }
    lo[n] = (struct option){ 0 };
    so[ns] = 0;
    return 0;
}

/* The own option whose short letter is `c`. */
static int own_short(const struct vh_opt *own, size_t nown, int c)
{
    for (size_t k = 0; k < nown; k++)
        if (own[k].name && own[k].name[1] == c && !own[k].name[2] && (own[k].value || own[k].flag))
            return Q_OWN + (int)k;
    return -1;
}

/* The command's own options and the shared ones, then the one operand. */
static int parse_opts(const struct vh_command *cmd, unsigned extra, const struct vh_opt *own,
                      size_t nown, int argc, char **argv, struct vh_qopts *o)
{
    struct option lo[MAX_OPTS];
    char so[2 * MAX_OPTS + 2];
    const char *arg;
    int c;

    memset(o, 0, sizeof *o);
    o->format = OUT_TABLE;
    o->limit = 10;
    if (opt_tables(extra, own, nown, lo, so))
        return -ENOMEM;
    optind = 0;
    while ((c = vh_getopt(cmd, argc, argv, so, lo, &arg)) != -1) {
        if (c == '?')
            return -EINVAL;
        if (c == ':') {
            vh_errorf(cmd->name, "%s needs a value (see --help)", arg);
            return -EINVAL;
        }
        if (c > Q_BY && c < Q_OWN)         /* a letter: always the command's */
            c = own_short(own, nown, c);
        const char *v = optarg;
        switch (c) {
        case Q_FORMAT:
            if (out__parse_format(v, &o->format)) {
                vh_errorf(cmd->name, "--format: '%s' is not table, json or csv", v);
                return -EINVAL;
            }
            break;
        case Q_LIMIT:
            if (count_opt(cmd, "--limit", 0, "a count (0 = no limit)", v, &o->limit))
                return -EINVAL;
            o->limit_given = 1;
            break;
        case Q_DEPTH:
            if (count_opt(cmd, "--depth", 0, "a count (0 = every frame)", v, &o->depth))
                return -EINVAL;
            break;
        case Q_HEAP: o->heap = v; break;
        case Q_BYTES: o->raw_bytes = 1; break;
        case Q_MIN_BYTES:
            if (count_opt(cmd, "--min-bytes", 1, "a size (e.g. 4096, 4K, 1MiB)", v,
                          &o->min_bytes))
                return -EINVAL;
            break;
        case Q_BY_TAG: o->by_tag = 1; break;
        case Q_TEMPORARY:
            if (!strcmp(v, "heaptrack"))
                o->temporary = VH_TEMP_HEAPTRACK;
            else if (!strcmp(v, "vheap"))
                o->temporary = VH_TEMP_VHEAP;
            else {
                vh_errorf(cmd->name, "--temporary: '%s' is not vheap or heaptrack", v);
                return -EINVAL;
            }
            break;
        case Q_BY: o->by = v; break;
        default:
            if (c < Q_OWN || c >= Q_OWN + (int)nown)     /* cannot happen */
                return unknown_opt(cmd, arg);
            if (own[c - Q_OWN].has_value)
                *own[c - Q_OWN].value = v;
            else
                *own[c - Q_OWN].flag = 1;
        }
    }
    if (optind < argc)
        o->input = argv[optind];
    if (optind + 1 < argc) {
        vh_errorf(cmd->name, "one DB or capture expected, got '%s' and '%s'", o->input,
                  argv[optind + 1]);
        return -EINVAL;
    }
    if (!o->input) {
        vh_errorf(cmd->name, "a DB or capture is needed (see vheap-analyze %s --help)",
                  cmd->name);
        return -EINVAL;
    }
    return 0;
}

int vh_bind_heap(sqlite3_stmt *st, int idx, const struct vh_qopts *o)
{
    return vh_bind_heap_sel(st, idx, o->heap);
}

/* ---- --heap ------------------------------------------------------------------ */

struct hnode {
    int64_t id, parent;                /* parent -1: none                    */
    int on;
};

static int by_node_id(const void *a, const void *b)
{
    int64_t x = ((const struct hnode *)a)->id, y = ((const struct hnode *)b)->id;
    return (x > y) - (x < y);
}

static struct hnode *node_find(struct hnode *n, size_t count, int64_t id)
{
    struct hnode key = { .id = id };
    return bsearch(&key, n, count, sizeof *n, by_node_id);
}

/* Marks the heaps matching `name` (by name or id); with `subtree`, also
 * every heap below them. The tree is walked in memory: one pass per level
 * of nesting, never a query per heap (a Vere run has very many roads). */
static int mark_heaps(sqlite3 *db, const char *name, int subtree, struct hnode **out,
                      size_t *count, size_t *chosen)
{
    sqlite3_stmt *st = NULL;
    struct hnode *n = NULL;
    size_t len = 0, cap = 0;
    int rc;

    *chosen = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT id, coalesce(parent_id, -1),"
                           "       name = ?1 OR CAST(id AS TEXT) = ?1"
                           " FROM heaps ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (vh_grow(&n, &cap, len, sizeof *n, 64)) {
            rc = -ENOMEM;
            goto out;
        }
        n[len] = (struct hnode){ .id = sqlite3_column_int64(st, 0),
                                 .parent = sqlite3_column_int64(st, 1),
                                 .on = sqlite3_column_int(st, 2) };
        *chosen += (size_t)n[len].on;
        len++;
    }
    if (rc != SQLITE_DONE) {
        rc = -EIO;
        goto out;
    }
    rc = 0;
    for (int changed = subtree && *chosen; changed;) {
        changed = 0;
        for (size_t i = 0; i < len; i++) {
            if (n[i].on || n[i].parent < 0)
                continue;
            struct hnode *p = node_find(n, len, n[i].parent);
            if (p && p->on) {
                n[i].on = 1;
                (*chosen)++;
                changed = 1;
            }
        }
    }
out:
    sqlite3_finalize(st);
    if (rc) {
        free(n);
        n = NULL;
        len = 0;
    }
    *out = n;
    *count = len;
    return rc;
}

int vh_heap_select(sqlite3 *db, const char *heap, const char *sel, char *err, size_t errlen)
{
    struct hnode *n = NULL;
    size_t count = 0, chosen = 0;
    sqlite3_stmt *ins = NULL;
    char sql[160], *base = NULL;
    int rc;

    snprintf(sql, sizeof sql, "DELETE FROM %s", sel);
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        goto sqlerr;
    snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO %s(id) VALUES (?1)", sel);
    if (sqlite3_prepare_v2(db, sql, -1, &ins, NULL) != SQLITE_OK)
        goto sqlerr;
    if ((rc = mark_heaps(db, heap, 0, &n, &count, &chosen)))
        goto fail;
    size_t len = strlen(heap);
    if (!chosen && len > 2 && !strcmp(heap + len - 2, "/*")) {
        free(n);
        if (!(base = strndup(heap, len - 2))) {
            rc = -ENOMEM;
            goto fail;
        }
        if ((rc = mark_heaps(db, base, 1, &n, &count, &chosen)))
            goto fail;
    }
    for (size_t i = 0; i < count; i++) {
        if (!n[i].on)
            continue;
        sqlite3_bind_int64(ins, 1, n[i].id);
        if (sqlite3_step(ins) != SQLITE_DONE)
            goto sqlerr;
        sqlite3_reset(ins);
    }
    rc = (int)(chosen > INT32_MAX ? INT32_MAX : chosen);
    goto out;
sqlerr:
    rc = -EIO;
    snprintf(err, errlen, "reading heaps: %s", sqlite3_errmsg(db));
    goto out;
fail:
    snprintf(err, errlen, "reading heaps: %s",
             rc == -ENOMEM ? "out of memory" : sqlite3_errmsg(db));
out:
    sqlite3_finalize(ins);
    free(n);
    free(base);
    return rc;
}

/* --heap must choose a heap: a typo would otherwise read as "no leaks". The
 * temp table exists on every connection, so statements always prepare. */
static int select_heaps(const struct vh_command *cmd, sqlite3 *db, const char *heap)
{
    sqlite3_stmt *st = NULL;
    char err[256];
    int rc;

    if (sqlite3_exec(db, "PRAGMA temp_store = MEMORY;"
                         "CREATE TEMP TABLE IF NOT EXISTS vh_heap_sel(id INTEGER PRIMARY KEY)",
                     NULL, NULL, NULL) != SQLITE_OK) {
        vh_errorf(cmd->name, "cannot make a temporary table: %s", sqlite3_errmsg(db));
        return -EIO;
    }
    if (!heap)
        return 0;
    rc = vh_heap_select(db, heap, "temp.vh_heap_sel", err, sizeof err);
    if (rc < 0) {
        vh_errorf(cmd->name, "%s (is this DB from another vheap version?)", err);
        return rc;
    }
    if (rc > 0)
        return 0;
    rc = vh_prepare(cmd->name, db,
                    "SELECT group_concat(name, ', ') FROM"
                    " (SELECT name FROM heaps GROUP BY name ORDER BY min(id) LIMIT 20)",
                    &st);
    if (rc)
        return rc;
    const unsigned char *names = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_text(st, 0)
                                                                : NULL;
    vh_errorf(cmd->name, "no heap named '%s' (heaps: %s; NAME/* adds the heaps nested in NAME)",
              heap, names ? (const char *)names : "none");
    sqlite3_finalize(st);
    return -ENOENT;
}

/* vh_query__open()'s DB part, for `o` (a baseline's differs in its input). */
static int open_db(const struct vh_command *cmd, const struct vh_qopts *o, sqlite3 **db)
{
    char err[512];
    *db = NULL;
    int rc = load__open_any(o->input, db, err, sizeof err);
    if (rc) {
        vh_errorf(cmd->name, "%s", err);
        return rc;
    }
    if ((rc = select_heaps(cmd, *db, o->heap)) ||
        (rc = vh_shadow_apply(cmd->name, *db, o->temporary))) {
        sqlite3_close(*db);
        *db = NULL;
        return rc;
    }
    vh_rec_notes(cmd->name, *db);
    return 0;
}

/* vh_query__stack_row() for any output and stack reader. */
static int stack_row(const struct vh_command *cmd, struct out *out, struct vh_stacks *stacks,
                     sqlite3_stmt *st, int ncols, int stack_col)
{
    struct out_val v[VH_ROW_MAX];
    if (ncols > VH_ROW_MAX)
        return -EINVAL;
    for (int i = 0; i < ncols; i++)
        v[i] = vh_col_val(st, i);
    if (stack_col < 0)
        return out__row(out, v, NULL);
    int err;
    struct out_stack *stack = vh_stacks__get(stacks, sqlite3_column_int64(st, stack_col), &err);
    if (!stack) {
        vh_errorf(cmd->name, "reading stack %lld failed",
                  (long long)sqlite3_column_int64(st, stack_col));
        return err;
    }
    return out__row(out, v, stack);
}

struct out_val vh_col_val(sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER: return OV_I(sqlite3_column_int64(st, i));
    case SQLITE_FLOAT: return OV_R(sqlite3_column_double(st, i));
    case SQLITE_NULL: return OV_NULLV;
    default: return OV_S((const char *)sqlite3_column_text(st, i));
    }
}

int vh_out_end(const struct vh_command *cmd, struct out *o)
{
    int rc = out__end(o);
    if (rc == -ENOMEM)
        vh_errorf(cmd->name, "out of memory while rendering");
    else if (rc)
        vh_errorf(cmd->name, "writing the output failed");
    return rc;
}

/* ---- a query command's run ---------------------------------------------------- */

int vh_query__parse(struct vh_query *q, const struct vh_command *cmd, unsigned extra,
                    const struct vh_opt *own, size_t nown, int argc, char **argv)
{
    memset(q, 0, sizeof *q);
    q->cmd = cmd;
    int rc = parse_opts(cmd, extra, own, nown, argc, argv, &q->o);
    q->usage = rc == -EINVAL;
    return rc;
}

int vh_query__usage(struct vh_query *q, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vh_errorf(q->cmd->name, "%s", msg);
    q->usage = 1;
    return -EINVAL;
}

/* A sampled capture's JSON document opens with "sampling": {"sampled":
 * true, "sample_rate": R, "estimates": true}, so that a script reading any
 * query's numbers knows they are estimates (tables and CSV: the note on
 * stderr). Absent for a full capture. */
static const struct out_col sampling_cols[] = {
    { "sampled", "sampled", OUT_BOOL, OUT_F_NO_TABLE },
    { "sample_rate", "sampled every (on average)", OUT_BYTES, OUT_F_NO_TABLE },
    { "estimates", "numbers are estimates", OUT_BOOL, OUT_F_NO_TABLE },
};

static int sampling_section(struct vh_query *q)
{
    int64_t rate = vh_rec_sample_rate(q->db);
    if (!rate || q->o.format != OUT_JSON)
        return 0;
    const struct out_val v[] = { OV_I(1), OV_I(rate), OV_I(1) };
    int rc = out__section(q->out, "sampling", OUT_OBJECT, NULL, sampling_cols,
                          sizeof sampling_cols / sizeof sampling_cols[0]);
    return rc ? rc : out__row(q->out, v, NULL);
}

int vh_query__open(struct vh_query *q, unsigned flags)
{
    int rc = open_db(q->cmd, &q->o, &q->db);
    if (rc)
        return rc;
    if ((flags & VH_QUERY_OUTPUT) &&
        (!(q->out = out__begin(q->o.format, q->o.raw_bytes ? OUT_RAW_BYTES : 0, stdout)) ||
         sampling_section(q))) {
        vh_errorf(q->cmd->name, "out of memory");
        return -ENOMEM;
    }
    return flags & VH_QUERY_STACKS ? vh_stacks__open(q->cmd->name, q->db, q->o.depth, &q->stacks)
                                   : 0;
}

int vh_query__open_also(struct vh_query *q, const char *input, sqlite3 **db)
{
    struct vh_qopts o = q->o;
    o.input = input;
    *db = NULL;
    if (q->nalso == (int)(sizeof q->also / sizeof q->also[0])) {
        vh_errorf(q->cmd->name, "internal error: too many runs open");
        return -ENOSPC;
    }
    int rc = open_db(q->cmd, &o, db);
    if (!rc)
        q->also[q->nalso++] = *db;
    return rc;
}

struct out *vh_query__take_out(struct vh_query *q)
{
    struct out *o = q->out;
    q->out = NULL;
    return o;
}

int vh_query__stack_row(struct vh_query *q, sqlite3_stmt *st, int ncols, int stack_col)
{
    return stack_row(q->cmd, q->out, q->stacks, st, ncols, stack_col);
}

int vh_query__prepare(struct vh_query *q, const char *sql, sqlite3_stmt **st)
{
    if (q->nst == VH_QUERY_STMTS) {    /* a command asking for too many: a bug */
        vh_errorf(q->cmd->name, "internal error: more than %d statements", VH_QUERY_STMTS);
        return -ENOSPC;
    }
    int rc = vh_prepare(q->cmd->name, q->db, sql, st);
    if (!rc)
        q->st[q->nst++] = *st;
    return rc;
}

int vh_query__finish(struct vh_query *q, int rc)
{
    if (!rc && q->out)
        rc = vh_out_end(q->cmd, q->out);
    else
        out__abort(q->out);
    q->out = NULL;
    for (int i = 0; i < q->nst; i++)
        sqlite3_finalize(q->st[i]);
    q->nst = 0;
    vh_stacks__free(q->stacks);
    q->stacks = NULL;
    sqlite3_close(q->db);
    q->db = NULL;
    for (int i = 0; i < q->nalso; i++)
        sqlite3_close(q->also[i]);
    q->nalso = 0;
    if (q->usage)
        return VH_EXIT_USAGE;
    return rc ? VH_EXIT_DATA : VH_EXIT_OK;
}

int vh_query_run(const struct vh_command *cmd, unsigned extra, unsigned flags, int argc,
                 char **argv, int (*body)(struct vh_query *q))
{
    struct vh_query q;
    int rc = vh_query__parse(&q, cmd, extra, NULL, 0, argc, argv);
    if (!rc && !(rc = vh_query__open(&q, flags)))
        rc = body(&q);
    return vh_query__finish(&q, rc);
}
