/* export/pprof.c — pprof's profile.proto (gzip-compressed protocol buffers),
 * as `go tool pprof`, Pyroscope, Parca and Grafana read it: one sample per
 * (heap, stack, tag) of stack_stats with four values, as a Go heap profile
 * has them — alloc_objects, alloc_space (calls and bytes over the run),
 * inuse_objects, inuse_space (blocks and bytes live at the end: leaked) —
 * and labels "heap" and "tag"; a location per frame (its inlined callers as
 * further lines, innermost first, as profile.proto orders them), a function
 * per (name, file), a mapping per module with its build-id. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "analyze/export/export.h"
#include "analyze/util/grow.h"
#include "analyze/util/protobuf.h"
#include "analyze/store/db.h"
#include "analyze/store/sql.h"

/* profile.proto's field numbers (github.com/google/pprof, proto/profile.proto) */
enum {
    P_SAMPLE_TYPE = 1, P_SAMPLE = 2, P_MAPPING = 3, P_LOCATION = 4, P_FUNCTION = 5,
    P_STRING_TABLE = 6, P_TIME_NANOS = 9, P_DURATION_NANOS = 10, P_PERIOD_TYPE = 11,
    P_PERIOD = 12, P_COMMENT = 13, P_DEFAULT_SAMPLE_TYPE = 14,
    VT_TYPE = 1, VT_UNIT = 2,
    S_LOCATION_ID = 1, S_VALUE = 2, S_LABEL = 3,
    L_KEY = 1, L_STR = 2,
    M_ID = 1, M_MEMORY_START = 2, M_MEMORY_LIMIT = 3, M_FILE_OFFSET = 4, M_FILENAME = 5,
    M_BUILD_ID = 6, M_HAS_FUNCTIONS = 7, M_HAS_FILENAMES = 8, M_HAS_LINE_NUMBERS = 9,
    M_HAS_INLINE_FRAMES = 10,
    LOC_ID = 1, LOC_MAPPING_ID = 2, LOC_ADDRESS = 3, LOC_LINE = 4,
    LN_FUNCTION_ID = 1, LN_LINE = 2,
    F_ID = 1, F_NAME = 2, F_SYSTEM_NAME = 3, F_FILENAME = 4,
};

#define NVALUES 4

struct pp {
    struct vh_export *x;
    sqlite3_stmt *q_stack, *q_frame, *q_inl;
    struct vh_strtab *strs;        /* string_table index = strtab id (0 = "") */
    struct vh_map *funcs;          /* (name, file) string ids -> function id  */
    struct vh_map *locs;           /* frame id -> 1 once written             */
    struct vh_map *heap_names;     /* heap id -> string id                   */
    /* the repeated fields, each built apart; tmp: the message being built
     * (a sample, a location), line: one inside it, fbuf: a function */
    struct pb samples, locations, functions, mappings, tmp, line, fbuf;
    uint64_t nfuncs, pseudo_truncated, pseudo_none;
    uint64_t *ids;                 /* one sample's location ids              */
    size_t nids, ids_cap;
    uint64_t total[NVALUES], nsamples, nlocs;
};

static uint64_t str(struct pp *p, const char *s)
{
    int added;
    if (!s || !*s)
        return 0;
    uint32_t id = vh_strtab__intern(p->strs, s, strlen(s), &added);
    if (!id)
        p->samples.oom = 1;        /* reported with the message's */
    return id;
}

static uint64_t function_id(struct pp *p, const char *name, const char *file)
{
    uint64_t n = str(p, name), f = str(p, file);
    int existed;
    struct vh_map_ent *e = vh_map__insert(p->funcs, n, f, &existed);
    if (!e) {
        p->samples.oom = 1;
        return 0;
    }
    if (!existed) {
        e->v1 = ++p->nfuncs;
        pb_uint(&p->fbuf, F_ID, e->v1);
        pb_uint(&p->fbuf, F_NAME, n);
        pb_uint(&p->fbuf, F_SYSTEM_NAME, n);
        if (f)
            pb_uint(&p->fbuf, F_FILENAME, f);
        pb_msg(&p->functions, P_FUNCTION, &p->fbuf);
    }
    return e->v1;
}

static void add_line(struct pp *p, const char *fn, const char *file, int64_t line)
{
    pb_uint(&p->line, LN_FUNCTION_ID, function_id(p, fn, file));
    if (line > 0)
        pb_uint(&p->line, LN_LINE, (uint64_t)line);
    pb_msg(&p->tmp, LOC_LINE, &p->line);
}

/* A location of no address, named like a frame ("[truncated]"). */
static void pseudo_location(struct pp *p, uint64_t id, const char *name)
{
    pb_uint(&p->tmp, LOC_ID, id);
    add_line(p, name, NULL, 0);
    pb_msg(&p->locations, P_LOCATION, &p->tmp);
    p->nlocs++;
}

/* The location of frame `id`, written when first met. */
static int location(struct pp *p, int64_t id)
{
    int existed, rc;
    struct vh_map_ent *e = vh_map__insert(p->locs, (uint64_t)id, 0, &existed);
    if (!e)
        return -ENOMEM;
    if (existed)
        return 0;
    sqlite3_reset(p->q_frame);
    sqlite3_bind_int64(p->q_frame, 1, id);
    if (sqlite3_step(p->q_frame) != SQLITE_ROW) {
        vh_errorf(p->x->cmd, "frame %" PRId64 " is missing from the DB", id);
        return -EIO;
    }
    sqlite3_stmt *f = p->q_frame;
    uint64_t addr = (uint64_t)sqlite3_column_int64(f, 0);
    int64_t module = sqlite3_column_int64(f, 1);
    const char *fn = (const char *)sqlite3_column_text(f, 2);
    pb_uint(&p->tmp, LOC_ID, (uint64_t)id);
    if (module > 0)
        pb_uint(&p->tmp, LOC_MAPPING_ID, (uint64_t)module);
    /* the return address - 1: inside the call, as file:line names it */
    pb_uint(&p->tmp, LOC_ADDRESS, addr ? addr - 1 : 0);
    if (fn) {
        add_line(p, fn, (const char *)sqlite3_column_text(f, 3), sqlite3_column_int64(f, 4));
        if (sqlite3_column_int64(f, 5) > 0) {
            sqlite3_reset(p->q_inl);
            sqlite3_bind_int64(p->q_inl, 1, id);
            while ((rc = sqlite3_step(p->q_inl)) == SQLITE_ROW) {
                const char *ifn = (const char *)sqlite3_column_text(p->q_inl, 0);
                add_line(p, ifn ? ifn : "??", (const char *)sqlite3_column_text(p->q_inl, 1),
                         sqlite3_column_int64(p->q_inl, 2));
            }
            if (rc != SQLITE_DONE) {
                vh_errorf(p->x->cmd, "reading the inline frames of frame %" PRId64 ": %s",
                          id, sqlite3_errmsg(p->x->db));
                return -EIO;
            }
        }
    } else {
        /* unresolved: named as the other exports name it, module+0xOFFSET */
        char name[600];
        const char *mod = (const char *)sqlite3_column_text(f, 6);
        if (mod && sqlite3_column_type(f, 7) != SQLITE_NULL)
            snprintf(name, sizeof name, "%s+0x%" PRIx64, vh_export_basename(mod),
                     (uint64_t)sqlite3_column_int64(f, 7));
        else
            snprintf(name, sizeof name, "0x%" PRIx64, addr);
        add_line(p, name, NULL, 0);
    }
    pb_msg(&p->locations, P_LOCATION, &p->tmp);
    p->nlocs++;
    return 0;
}

/* The location ids of stack `stack`, innermost first (profile.proto's order). */
static int stack_locations(struct pp *p, int64_t stack)
{
    int rc, truncated = 0;
    p->nids = 0;
    sqlite3_reset(p->q_stack);
    sqlite3_bind_int64(p->q_stack, 1, stack);
    while ((rc = sqlite3_step(p->q_stack)) == SQLITE_ROW) {
        int64_t frame = sqlite3_column_int64(p->q_stack, 0);
        truncated = sqlite3_column_int(p->q_stack, 1);
        if (vh_grow(&p->ids, &p->ids_cap, p->nids, sizeof *p->ids, 64))
            return -ENOMEM;
        p->ids[p->nids++] = (uint64_t)frame;
    }
    if (rc != SQLITE_DONE) {
        vh_errorf(p->x->cmd, "reading stack %" PRId64 ": %s", stack,
                  sqlite3_errmsg(p->x->db));
        return -EIO;
    }
    for (size_t i = 0; i < p->nids; i++)
        if ((rc = location(p, (int64_t)p->ids[i])))
            return rc;
    if (truncated || !p->nids) {
        if (vh_grow(&p->ids, &p->ids_cap, p->nids, sizeof *p->ids, 64))
            return -ENOMEM;
        p->ids[p->nids++] = truncated ? p->pseudo_truncated : p->pseudo_none;
    }
    return 0;
}

static void label(struct pp *p, const char *key, uint64_t value_str)
{
    pb_uint(&p->line, L_KEY, str(p, key));
    pb_uint(&p->line, L_STR, value_str);
    pb_msg(&p->tmp, S_LABEL, &p->line);
}

/* One row of stack_stats summed per (heap, stack, tag): one sample. */
static int sample_row(sqlite3_stmt *st, void *arg)
{
    struct pp *p = arg;
    int64_t heap = sqlite3_column_int64(st, 0);
    uint64_t v[NVALUES];
    int any = 0, rc;
    if (heap < 0 || heap > UINT32_MAX || !vh_export_heap_on(p->x, (uint32_t)heap))
        return 0;
    for (int i = 0; i < NVALUES; i++) {
        int64_t c = sqlite3_column_int64(st, 3 + i);
        v[i] = c > 0 ? (uint64_t)c : 0;
        any |= v[i] != 0;
    }
    if (!any)
        return 0;
    if ((rc = stack_locations(p, sqlite3_column_int64(st, 1))))
        return rc;
    pb_packed(&p->tmp, S_LOCATION_ID, p->ids, p->nids);
    pb_packed(&p->tmp, S_VALUE, v, NVALUES);
    struct vh_map_ent *e = vh_map__find(p->heap_names, (uint64_t)heap, 0);
    label(p, "heap", e ? e->v1 : 0);
    if (sqlite3_column_type(st, 2) != SQLITE_NULL)
        label(p, "tag", str(p, (const char *)sqlite3_column_text(st, 2)));
    pb_msg(&p->samples, P_SAMPLE, &p->tmp);
    for (int i = 0; i < NVALUES; i++)
        p->total[i] += v[i];
    p->nsamples++;
    return 0;
}

static int samples(struct pp *p)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_export_prepare(p->x, "SELECT s.heap_id, s.stack_id, t.label,"
                                     "  sum(s.allocations), sum(s.bytes_allocated),"
                                     "  sum(s.leaked_blocks), sum(s.leaked_bytes)"
                                     " FROM stack_stats s LEFT JOIN tags t ON t.id = s.tag_id"
                                     " GROUP BY s.heap_id, s.stack_id, s.tag_id", &st);
    if (!rc)
        rc = vh_step_all(p->x->cmd, p->x->db, st, sample_row, p);
    sqlite3_finalize(st);
    return rc;
}

/* Mappings (every module, with its build-id) and heap names. */
static int modules_and_heaps(struct pp *p)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_export_prepare(p->x, "SELECT id, path, build_id, lo, hi, bias FROM modules", &st);
    if (rc)
        return rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        uint64_t lo = (uint64_t)sqlite3_column_int64(st, 3);
        uint64_t hi = (uint64_t)sqlite3_column_int64(st, 4);
        uint64_t bias = (uint64_t)sqlite3_column_int64(st, 5);
        pb_uint(&p->tmp, M_ID, (uint64_t)sqlite3_column_int64(st, 0));
        pb_uint(&p->tmp, M_MEMORY_START, lo);
        pb_uint(&p->tmp, M_MEMORY_LIMIT, hi);
        /* the first segment's file offset is its ELF address (PIE and
         * shared objects start at 0) */
        pb_uint(&p->tmp, M_FILE_OFFSET, lo >= bias ? lo - bias : 0);
        pb_uint(&p->tmp, M_FILENAME, str(p, (const char *)sqlite3_column_text(st, 1)));
        pb_uint(&p->tmp, M_BUILD_ID, str(p, (const char *)sqlite3_column_text(st, 2)));
        /* symbolized already: pprof need not look for the files */
        pb_uint(&p->tmp, M_HAS_FUNCTIONS, 1);
        pb_uint(&p->tmp, M_HAS_FILENAMES, 1);
        pb_uint(&p->tmp, M_HAS_LINE_NUMBERS, 1);
        pb_uint(&p->tmp, M_HAS_INLINE_FRAMES, 1);
        pb_msg(&p->mappings, P_MAPPING, &p->tmp);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        goto sqlerr;
    if ((rc = vh_export_prepare(p->x, "SELECT id, name FROM heaps", &st)))
        return rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int existed;
        struct vh_map_ent *e =
            vh_map__insert(p->heap_names, (uint64_t)sqlite3_column_int64(st, 0), 0, &existed);
        if (!e) {
            sqlite3_finalize(st);
            return -ENOMEM;
        }
        e->v1 = str(p, (const char *)sqlite3_column_text(st, 1));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        goto sqlerr;
    if ((rc = vh_export_prepare(p->x, "SELECT coalesce(max(id), 0) FROM frames", &st)))
        return rc;
    rc = sqlite3_step(st);
    uint64_t max = rc == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
        goto sqlerr;
    p->pseudo_truncated = max + 1;
    p->pseudo_none = max + 2;
    pseudo_location(p, p->pseudo_truncated, "[truncated]");
    pseudo_location(p, p->pseudo_none, "[no stack]");
    return 0;
sqlerr:
    vh_errorf(p->x->cmd, "reading the DB: %s", sqlite3_errmsg(p->x->db));
    return -EIO;
}

static void value_type(struct pp *p, struct pb *b, uint32_t field, const char *type,
                       const char *unit)
{
    pb_uint(&p->line, VT_TYPE, str(p, type));
    pb_uint(&p->line, VT_UNIT, str(p, unit));
    pb_msg(b, field, &p->line);
}

/* The whole message, gzip-compressed (pprof reads both, but files are gzip
 * by convention); the output file's own gzip (a .gz name) does it instead. */
static int write_out(struct pp *p, const struct pb *m)
{
    struct vh_export *x = p->x;
    if (vh_xout__codec(x->out) == VH_XOUT_GZIP) {
        vh_xout__write(x->out, m->p, m->len);
        return 0;
    }
    z_stream z = { 0 };
    unsigned char buf[65536];
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    z.next_in = m->p;
    z.avail_in = (uInt)m->len;     /* a profile fits in 4 GiB */
    int zr;
    do {
        z.next_out = buf;
        z.avail_out = sizeof buf;
        zr = deflate(&z, Z_FINISH);
        vh_xout__write(x->out, buf, sizeof buf - z.avail_out);
    } while (zr == Z_OK || zr == Z_BUF_ERROR);
    deflateEnd(&z);
    return zr == Z_STREAM_END ? 0 : -EIO;
}

int vh_export_pprof(struct vh_export *x)
{
    struct pp p = { .x = x };
    struct pb m = { 0 };
    int rc = -ENOMEM;

    if (vh_xout__codec(x->out) == VH_XOUT_ZSTD) {
        vh_errorf(x->cmd, "pprof reads gzip-compressed profiles, not zstd: name the "
                                "file .pb.gz (or anything not .zst)");
        return -EINVAL;
    }
    if (!(p.strs = vh_strtab__new()) || !(p.funcs = vh_map__new()) ||
        !(p.locs = vh_map__new()) || !(p.heap_names = vh_map__new()))
        goto out;
    if ((rc = vh_export_prepare(x, "SELECT sf.frame_id, s.truncated FROM stack_frames sf"
                                   " JOIN stacks s ON s.id = sf.stack_id"
                                   " WHERE sf.stack_id = ?1 ORDER BY sf.idx", &p.q_stack)) ||
        (rc = vh_export_prepare(x, "SELECT f.address, f.module_id, f.function, f.file, f.line,"
                                   "       f.inline_depth, m.path, f.module_offset"
                                   " FROM frames f LEFT JOIN modules m ON m.id = f.module_id"
                                   " WHERE f.id = ?1", &p.q_frame)) ||
        (rc = vh_export_prepare(x, VH_SQL_FRAME_INLINES, &p.q_inl)))
        goto out;
    if ((rc = modules_and_heaps(&p)) || (rc = samples(&p)))
        goto out;

    value_type(&p, &m, P_SAMPLE_TYPE, "alloc_objects", "count");
    value_type(&p, &m, P_SAMPLE_TYPE, "alloc_space", "bytes");
    value_type(&p, &m, P_SAMPLE_TYPE, "inuse_objects", "count");
    value_type(&p, &m, P_SAMPLE_TYPE, "inuse_space", "bytes");
    if (x->start_realtime_ns > 0)
        pb_uint(&m, P_TIME_NANOS, (uint64_t)x->start_realtime_ns);
    pb_uint(&m, P_DURATION_NANOS, x->runtime_ns);
    value_type(&p, &m, P_PERIOD_TYPE, "space", "bytes");
    pb_uint(&m, P_PERIOD, 1);      /* values are per call: estimates when sampled */
    char comment[400];
    snprintf(comment, sizeof comment, "vheap: pid %" PRId64 " %s, heap %s; inuse = live at "
             "the end (leaked)%s", x->pid, x->exe ? x->exe : "", x->heap_desc,
             x->rate ? "; sampled capture: every value is an estimate" : "");
    pb_uint(&m, P_COMMENT, str(&p, comment));
    pb_uint(&m, P_DEFAULT_SAMPLE_TYPE, str(&p, "inuse_space"));
    /* repeated fields are their elements one after another (in any order
     * among the other fields): the sections were built as such */
    struct pb *sec[] = { &p.samples, &p.mappings, &p.locations, &p.functions };
    for (size_t i = 0; i < sizeof sec / sizeof sec[0]; i++) {
        if (sec[i]->oom)
            goto nomem;
        while (m.cap - m.len < sec[i]->len)
            if (vh_grow(&m.p, &m.cap, m.cap, 1, 4096))
                goto nomem;
        memcpy(m.p + m.len, sec[i]->p, sec[i]->len);
        m.len += sec[i]->len;
    }
    /* last: every string is interned by now */
    pb_bytes(&m, P_STRING_TABLE, "", 0);
    for (uint32_t i = 1; i <= vh_strtab__count(p.strs); i++)
        pb_bytes(&m, P_STRING_TABLE, vh_strtab__get(p.strs, i), vh_strtab__len(p.strs, i));
    if (m.oom)
        goto nomem;
    rc = write_out(&p, &m);
    if (rc)
        goto out;
    vh_export_note(x, "%s: pprof profile: %" PRIu64 " samples, %" PRIu64 " locations, %" PRIu64
                      " functions; %" PRIu64 " allocations of %" PRIu64 " bytes, %" PRIu64
                      " bytes leaked (%s)",
                   vh_export_dest(x), p.nsamples, p.nlocs,
                   p.nfuncs, p.total[0], p.total[1], p.total[3], x->heap_desc);
    rc = 0;
    goto out;
nomem:
    rc = -ENOMEM;
out:
    sqlite3_finalize(p.q_stack);
    sqlite3_finalize(p.q_frame);
    sqlite3_finalize(p.q_inl);
    vh_strtab__free(p.strs);
    vh_map__free(p.funcs);
    vh_map__free(p.locs);
    vh_map__free(p.heap_names);
    pb_free(&p.samples);
    pb_free(&p.locations);
    pb_free(&p.functions);
    pb_free(&p.mappings);
    pb_free(&p.tmp);
    pb_free(&p.line);
    pb_free(&p.fbuf);
    pb_free(&m);
    free(p.ids);
    return rc;
}
