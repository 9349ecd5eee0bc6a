/* owner_frag.c — fragmentation by owner (owner_frag.h). One pass over the
 * snapshot's live blocks in address order: a page's owners are known when
 * the pass leaves it, so "shared" is counted then; an owner's pages are
 * counted once each because its blocks come in address order too. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/query/owner_frag.h"
#include "analyze/store/sql.h"
#include "analyze/util/diag.h"
#include "analyze/util/grow.h"

struct ofrag {
    int64_t owner;                 /* owners.id, 0: no owner              */
    uint64_t blocks, bytes, usable, pages, shared;
    uint64_t last_page;            /* +1: the last page counted, 0 none   */
};

struct pass {
    struct ofrag *o;
    size_t n, cap;
    uint64_t page;                 /* the page being visited, +1          */
    size_t here[8];                /* owners (indexes) seen on it         */
    size_t nhere;
    int many;                      /* more than fit in here[]             */
};

static struct ofrag *owner_at(struct pass *p, int64_t owner)
{
    for (size_t i = 0; i < p->n; i++)  /* owners are few (tens) */
        if (p->o[i].owner == owner)
            return &p->o[i];
    if (vh_grow(&p->o, &p->cap, p->n, sizeof *p->o, 32))
        return NULL;
    p->o[p->n] = (struct ofrag){ .owner = owner };
    return &p->o[p->n++];
}

/* The pass leaves its page: shared if more than one owner was on it. */
static void leave_page(struct pass *p)
{
    if (p->nhere > 1 || p->many)
        for (size_t i = 0; i < p->nhere; i++)
            p->o[p->here[i]].shared++;
    p->nhere = 0;
    p->many = 0;
}

static void touch(struct pass *p, struct ofrag *o, uint64_t page)
{
    size_t idx = (size_t)(o - p->o), i;
    if (page + 1 != p->page) {
        leave_page(p);
        p->page = page + 1;
    }
    if (o->last_page != page + 1) {
        o->last_page = page + 1;
        o->pages++;
    }
    for (i = 0; i < p->nhere && p->here[i] != idx; i++)
        ;
    if (i == p->nhere) {
        if (p->nhere < sizeof p->here / sizeof *p->here)
            p->here[p->nhere++] = idx;
        else
            p->many = 1;
    }
}

static int read_blocks(const char *cmd, sqlite3 *db, int64_t snap, uint64_t ps, struct pass *p)
{
    sqlite3_stmt *st;
    int rc = vh_prepare(cmd, db,
                        "SELECT coalesce(owner_id, 0), address, size, coalesce(usable, size)"
                        " FROM owned_blocks WHERE snapshot_id = ?1 AND size IS NOT NULL"
                        " ORDER BY address",
                        &st);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, snap);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct ofrag *o = owner_at(p, sqlite3_column_int64(st, 0));
        uint64_t a = (uint64_t)sqlite3_column_int64(st, 1);
        uint64_t u = (uint64_t)sqlite3_column_int64(st, 3);
        if (!o) {
            sqlite3_finalize(st);
            return -ENOMEM;
        }
        o->blocks++;
        o->bytes += (uint64_t)sqlite3_column_int64(st, 2);
        o->usable += u;
        for (uint64_t pg = a / ps; pg <= (a + (u ? u : 1) - 1) / ps; pg++)
            touch(p, o, pg);
    }
    leave_page(p);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        vh_errorf(cmd, "reading owned_blocks: %s", sqlite3_errmsg(db));
        return -EIO;
    }
    return 0;
}

static int by_pages(const void *a, const void *b)
{
    const struct ofrag *x = a, *y = b;
    return x->pages != y->pages ? (x->pages < y->pages ? 1 : -1)
                                : (x->owner > y->owner) - (x->owner < y->owner);
}

enum { F_OWNER, F_BLOCKS, F_BYTES, F_SLACK, F_PAGES, F_OCC, F_SHARED, F_N };

static const struct out_col fcols[F_N] = {
    [F_OWNER] = { "owner", "owner", OUT_TEXT, 0 },
    [F_BLOCKS] = { "blocks", "blocks", OUT_INT, 0 },
    [F_BYTES] = { "bytes", "live bytes", OUT_BYTES, 0 },
    [F_SLACK] = { "slack", "slack", OUT_BYTES, 0 },
    [F_PAGES] = { "pages", "pages touched", OUT_INT, 0 },
    [F_OCC] = { "occupancy_pct", "occupancy %", OUT_REAL, 0 },
    [F_SHARED] = { "shared_pages", "shared pages", OUT_INT, 0 },
};

static int rows(const char *cmd, sqlite3 *db, const struct pass *p, uint64_t ps, int64_t limit,
                struct out *out)
{
    sqlite3_stmt *st;
    int rc = vh_prepare(cmd, db, "SELECT path FROM owners WHERE id = ?1", &st);
    if (rc || (rc = out__section(out, "owners", OUT_LIST, NULL, fcols, F_N)))
        return rc;
    for (size_t i = 0; !rc && i < p->n && (!limit || (int64_t)i < limit); i++) {
        const struct ofrag *o = &p->o[i];
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, o->owner);
        const char *path = sqlite3_step(st) == SQLITE_ROW
                               ? (const char *)sqlite3_column_text(st, 0) : "(no owner)";
        struct out_val v[F_N] = {
            [F_OWNER] = OV_S(path),
            [F_BLOCKS] = OV_I((int64_t)o->blocks),
            [F_BYTES] = OV_I((int64_t)o->bytes),
            [F_SLACK] = OV_I((int64_t)(o->usable - o->bytes)),
            [F_PAGES] = OV_I((int64_t)o->pages),
            [F_OCC] = OV_R(o->pages ? 100.0 * (double)o->usable / ((double)o->pages * (double)ps)
                                    : 0),
            [F_SHARED] = OV_I((int64_t)o->shared),
        };
        rc = out__row(out, v, NULL);
    }
    sqlite3_finalize(st);
    return rc;
}

int vh_owner_frag(const char *cmd, sqlite3 *db, int64_t snapshot, uint64_t page_size,
                  int64_t limit, struct out *out)
{
    struct pass p = { 0 };
    sqlite3_stmt *st;
    int rc = vh_prepare(cmd, db, "SELECT coalesce(max(id), 0) FROM owner_snapshots", &st);
    if (rc)
        return rc;
    rc = vh_step_one(cmd, db, st);
    int64_t last = rc ? 0 : sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (!rc && !last) {
        vh_errorf(cmd, "--by owner: no ownership snapshot in this capture (vheap_own_begin; "
                       "for Vere: run `urbit grab` under vheap)");
        rc = -EINVAL;
    } else if (!rc && snapshot > last) {
        vh_errorf(cmd, "--snapshot: %lld is not one of the %lld snapshots", (long long)snapshot,
                  (long long)last);
        rc = -EINVAL;
    }
    if (!rc)
        rc = read_blocks(cmd, db, snapshot ? snapshot : last, page_size, &p);
    if (!rc) {
        qsort(p.o, p.n, sizeof *p.o, by_pages);
        rc = rows(cmd, db, &p, page_size, limit, out);
    }
    free(p.o);
    return rc == -ENOMEM ? (vh_errorf(cmd, "out of memory"), rc) : rc;
}
