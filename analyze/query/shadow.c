/* shadow.c — the query commands' view of heaps, stack_stats and leaks
 * (shadow.h): temp copies that SQLite looks in before the stored tables. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "analyze/store/events.h"
#include "analyze/store/sql.h"
#include "analyze/util/map.h"
#include "analyze/query/shadow.h"

static int exec(const char *cmd, sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    vh_errorf(cmd, "query failed: %s", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return -EIO;
}

/* The temp copies, once. */
static int shadow_tables(const char *cmd, sqlite3 *db, int *made)
{
    if (*made)
        return 0;
    *made = 1;
    return exec(cmd, db, "CREATE TEMP TABLE stack_stats AS SELECT * FROM main.stack_stats;"
                         "CREATE TEMP TABLE heaps AS SELECT * FROM main.heaps;"
                         "CREATE TEMP TABLE leaks AS SELECT * FROM main.leaks;");
}

/* Leaks that are not the program's, taken out of `leaked` as heaptrack
 * takes them out (its "suppressed leaks"), so that the two tools' totals
 * agree:
 *  - libstdc++'s emergency exception pool: a leaked stack of the malloc
 *    heap whose innermost frame is in libstdc++ and that went through the
 *    dynamic loader, not through the program (libstdc++'s own constructor
 *    allocates it; heaptrack frees it at exit through __gnu_cxx::__freeres);
 *  - state that glibc (and glib) keep for the process's life: a stack with
 *    a frame, or an inlined frame, named by heaptrack 1.4's built-in
 *    suppressions (a name found anywhere in the function's name, as its
 *    match without wildcards does). glibc would free most of it in
 *    __libc_freeres, which heaptrack does not call either: classifying the
 *    blocks keeps the numbers heaptrack's and runs nothing in the program
 *    at exit. */
#define POOL_FRAME(cond)                                                          \
    "EXISTS (SELECT 1 FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id"   \
    " JOIN modules m ON m.id = f.module_id WHERE sf.stack_id = s.stack_id AND " cond ")"
#define NAMED(x)                                                                  \
    "(instr(" x ", '__nss_module_allocate') OR instr(" x ", '__gconv_read_conf')" \
    " OR instr(" x ", '__new_exitfn') OR instr(" x ", 'tzset_internal')"          \
    " OR instr(" x ", 'dl_open_worker') OR instr(" x ", 'g_main_context_new')"    \
    " OR instr(" x ", 'g_thread_self'))"
#define PROCESS_STATE                                                             \
    "EXISTS (SELECT 1 FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id"   \
    " WHERE sf.stack_id = s.stack_id AND (" NAMED("f.function")                  \
    " OR EXISTS (SELECT 1 FROM frame_inlines fi WHERE fi.frame_id = f.id AND "    \
    NAMED("fi.function") ")))"
static const char pool_sql[] =
    "CREATE TEMP TABLE vh_suppressed AS"
    " SELECT s.heap_id, s.stack_id, sum(s.leaked_bytes) AS bytes,"
    "        sum(s.leaked_blocks) AS blocks"
    " FROM main.stack_stats s"
    " WHERE s.heap_id = 0 AND s.leaked_blocks > 0"
    "  AND ((" POOL_FRAME("sf.idx = 0 AND m.path LIKE '%/libstdc++.so%'")
    "  AND " POOL_FRAME("m.path LIKE '%/ld-linux%'")
    "  AND NOT " POOL_FRAME("m.is_main = 1") ") OR " PROCESS_STATE ")"
    " GROUP BY s.heap_id, s.stack_id";

static int suppress_pool(const char *cmd, sqlite3 *db, int *made)
{
    sqlite3_stmt *st = NULL;
    int rc = exec(cmd, db, pool_sql);
    if (rc || (rc = vh_prepare(cmd, db, "SELECT count(*) FROM temp.vh_suppressed", &st)) ||
        (rc = vh_step_one(cmd, db, st)))
        goto out;
    if (!sqlite3_column_int64(st, 0))
        goto out;
    rc = shadow_tables(cmd, db, made);
    rc = rc ? rc
            : exec(cmd, db,
                   "UPDATE temp.stack_stats SET leaked_bytes = 0, leaked_blocks = 0"
                   " WHERE heap_id = 0 AND stack_id IN (SELECT stack_id FROM vh_suppressed);"
                   "UPDATE temp.heaps SET"
                   " leaked_bytes = leaked_bytes - (SELECT sum(bytes) FROM vh_suppressed),"
                   " leaked_blocks = leaked_blocks - (SELECT sum(blocks) FROM vh_suppressed)"
                   " WHERE id = 0;"
                   "DELETE FROM temp.leaks"
                   " WHERE heap_id = 0 AND stack_id IN (SELECT stack_id FROM vh_suppressed);");
out:
    sqlite3_finalize(st);
    return rc;
}

/* ---- heaptrack's temporary allocations ------------------------------------ */

struct ht_temp {
    struct vh_map *live;           /* (heap, addr) -> (size, stack | tag << 32) */
    struct vh_map *last;           /* heap -> the '+' before, if the last line */
    struct vh_map *count;          /* (heap, stack | tag << 32) -> temporary  */
};

/* heaptrack's '-' of a block of (size, key): temporary when the line
 * before in that heap was a '+' of the same size and stack. */
static int minus(struct ht_temp *t, uint32_t heap, uint64_t size, uint64_t key)
{
    int existed;
    struct vh_map_ent *l = vh_map__find(t->last, heap, 0);
    if (l && l->v2 && l->v1 == size && (uint32_t)(l->v2 - 1) == (uint32_t)key) {
        struct vh_map_ent *c = vh_map__insert(t->count, heap, key, &existed);
        if (!c)
            return -ENOMEM;
        c->v1++;
    }
    if (l)
        l->v2 = 0;
    return 0;
}

static int plus(struct ht_temp *t, uint32_t heap, uint64_t addr, uint64_t size, uint64_t key)
{
    int existed;
    struct vh_map_ent *e = vh_map__insert(t->live, heap, addr, &existed);
    if (!e)
        return -ENOMEM;
    e->v1 = size;
    e->v2 = key;
    if (!(e = vh_map__insert(t->last, heap, 0, &existed)))
        return -ENOMEM;
    e->v1 = size;
    e->v2 = (uint32_t)key + 1ull;  /* 0: the line before was not a '+' */
    return 0;
}

static int replay(struct ht_temp *t, sqlite3 *db, char *err, size_t errlen)
{
    struct evstream *es = NULL;
    struct vh_ev ev;
    int rc = evstream__open(db, 0, &es, err, errlen);
    while (!rc && (rc = evstream__next(es, &ev)) == 1) {
        uint64_t key = ev.stack_id | (uint64_t)ev.tag_id << 32;
        struct vh_map_ent *e;
        rc = 0;
        switch (ev.kind) {
        case VH_EV_ALLOC:
            rc = plus(t, ev.heap_id, ev.addr, ev.size, key);
            break;
        case VH_EV_FREE:
            if ((e = vh_map__find(t->live, ev.heap_id, ev.addr)))
                vh_map__remove(t->live, e);
            /* a heap destroy is no free heaptrack would see */
            if (!(ev.flags & VH_EVF_DESTROY))
                rc = minus(t, ev.heap_id, ev.size, key);
            break;
        case VH_EV_RESIZE:
            /* heaptrack: '-' of the block as it was, '+' of the new one */
            if ((e = vh_map__find(t->live, ev.heap_id, ev.addr))) {
                uint64_t osize = e->v1, okey = e->v2;
                rc = minus(t, ev.heap_id, osize, okey);
            }
            rc = rc ? rc : plus(t, ev.heap_id, ev.addr, ev.size, key);
            break;
        case VH_EV_MOVE:
            if ((e = vh_map__find(t->live, ev.heap_id, ev.addr))) {
                uint64_t size = e->v1, k = e->v2;
                int existed;
                vh_map__remove(t->live, e);
                if (!(e = vh_map__insert(t->live, ev.heap_id, ev.to, &existed)))
                    rc = -ENOMEM;
                else
                    e->v1 = size, e->v2 = k;
            }
            break;
        }
    }
    if (rc < 0 && rc != -ENOMEM && es)
        snprintf(err, errlen, "the event stream: %s", evstream__error(es));
    evstream__close(es);
    return rc < 0 ? rc : 0;
}

static int temporary_heaptrack(const char *cmd, sqlite3 *db, int *made)
{
    struct ht_temp t = { vh_map__new(), vh_map__new(), vh_map__new() };
    sqlite3_stmt *ins = NULL;
    char err[256] = "out of memory";
    int rc = -ENOMEM;

    if (!t.live || !t.last || !t.count || (rc = replay(&t, db, err, sizeof err))) {
        vh_errorf(cmd, "--temporary heaptrack: %s", err);
        goto out;
    }
    if ((rc = shadow_tables(cmd, db, made)) ||
        /* keyed, with INTEGER columns (an untyped key is no index for the
         * INT columns of stack_stats): the UPDATEs below look a row up per
         * stack_stats row and per heap, a scan each without the key:
         * quadratic, over 13 minutes with 400k stacks */
        (rc = exec(cmd, db, "CREATE TEMP TABLE vh_ht_temp(heap_id INTEGER, stack_id INTEGER,"
                            " tag_id INTEGER, n INTEGER,"
                            " PRIMARY KEY (heap_id, stack_id, tag_id)) WITHOUT ROWID;")) ||
        (rc = vh_prepare(cmd, db, "INSERT INTO temp.vh_ht_temp VALUES (?1, ?2, ?3, ?4)",
                         &ins)))
        goto out;
    /* the counts, walked through the map's own API: every (heap, key) */
    sqlite3_stmt *keys = NULL;
    if ((rc = vh_prepare(cmd, db, "SELECT DISTINCT heap_id, stack_id, tag_id FROM stack_stats",
                         &keys)))
        goto out;
    while (sqlite3_step(keys) == SQLITE_ROW) {
        uint64_t heap = (uint64_t)sqlite3_column_int64(keys, 0);
        uint64_t key = (uint64_t)sqlite3_column_int64(keys, 1) |
                       (uint64_t)sqlite3_column_int64(keys, 2) << 32;
        struct vh_map_ent *c = vh_map__find(t.count, heap, key);
        if (!c)
            continue;
        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, (sqlite3_int64)heap);
        sqlite3_bind_int64(ins, 2, (sqlite3_int64)(uint32_t)key);
        sqlite3_bind_int64(ins, 3, (sqlite3_int64)(key >> 32));
        sqlite3_bind_int64(ins, 4, (sqlite3_int64)c->v1);
        if (sqlite3_step(ins) != SQLITE_DONE) {
            vh_errorf(cmd, "query failed: %s", sqlite3_errmsg(db));
            rc = -EIO;
            break;
        }
    }
    sqlite3_finalize(keys);
    if (!rc)
        rc = exec(cmd, db,
                  "UPDATE temp.stack_stats SET temporary = coalesce((SELECT n FROM vh_ht_temp t"
                  " WHERE t.heap_id = stack_stats.heap_id AND t.stack_id = stack_stats.stack_id"
                  " AND t.tag_id = stack_stats.tag_id), 0);"
                  "UPDATE temp.heaps SET temporary = coalesce((SELECT sum(n) FROM vh_ht_temp t"
                  " WHERE t.heap_id = heaps.id), 0);");
out:
    sqlite3_finalize(ins);
    vh_map__free(t.live);
    vh_map__free(t.last);
    vh_map__free(t.count);
    return rc;
}

int vh_shadow_apply(const char *cmd, sqlite3 *db, enum vh_temporary temporary)
{
    int made = 0, rc = suppress_pool(cmd, db, &made);
    if (!rc && temporary == VH_TEMP_HEAPTRACK)
        rc = temporary_heaptrack(cmd, db, &made);
    return rc;
}
