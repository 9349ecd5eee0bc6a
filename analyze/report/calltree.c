/* calltree.c — the report's call tree (calltree.h): nodes found by (parent,
 * name, module) in a hash map, rows by (leaf, heap, tag) in another; pruning
 * sums each column up the tree in one pass per column (children always have
 * higher ids than their parents), so it costs columns x (nodes + rows). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/report/calltree.h"
#include "analyze/util/cmp.h"
#include "analyze/util/grow.h"

struct node {
    uint32_t parent, name, module, where;
};

struct vh_ctree {
    size_t ncols;
    struct vh_strtab *str;
    struct node *nodes;
    size_t nnodes, ncap;
    struct vh_map *children;       /* (parent << 32 | name, module) -> node  */
    struct vh_map *rowmap;         /* (leaf, heap << 32 | tag) -> row        */
    uint32_t *row_key;             /* per row: leaf, heap, tag               */
    uint64_t *vals;                /* per row: ncols values                  */
    size_t nrows, rcap, vcap;
    struct vh_map *xmap;           /* (row, extra column) -> value           */
    struct xent {                  /* its entries, in the order added         */
        uint32_t col, row;
        uint64_t v;
    } *x;
    size_t nx, xcap;
    uint32_t nxcols;
    struct xlate {                 /* a source's string ids -> the tree's    */
        const struct vh_snames *src;
        uint32_t *id;              /* 0: not yet seen                        */
        size_t n;
    } xl[2];
};

struct vh_ctree *vh_ctree__new(size_t ncols)
{
    struct vh_ctree *t = calloc(1, sizeof *t);
    if (!t || !(t->str = vh_strtab__new()) || !(t->children = vh_map__new()) ||
        !(t->rowmap = vh_map__new()) || !(t->xmap = vh_map__new()) ||
        vh_grow(&t->nodes, &t->ncap, 0, sizeof *t->nodes, 1024)) {
        vh_ctree__free(t);
        return NULL;
    }
    t->ncols = ncols;
    t->nodes[0] = (struct node){ 0, 0, 0, 0 };     /* the root */
    t->nnodes = 1;
    return t;
}

void vh_ctree__free(struct vh_ctree *t)
{
    if (!t)
        return;
    vh_strtab__free(t->str);
    vh_map__free(t->children);
    vh_map__free(t->rowmap);
    vh_map__free(t->xmap);
    free(t->x);
    free(t->xl[0].id);
    free(t->xl[1].id);
    free(t->nodes);
    free(t->row_key);
    free(t->vals);
    free(t);
}

static uint32_t intern(struct vh_ctree *t, const char *s)
{
    int added;
    return s ? vh_strtab__intern(t->str, s, strlen(s), &added) : 0;
}

/* The tree's id of string `id` of `names`: interned once per source (a
 * stack's frames repeat the same few names millions of times). */
static uint32_t xlate(struct vh_ctree *t, const struct vh_snames *names, uint32_t id)
{
    if (!id)
        return 0;
    for (int i = 0; i < 2; i++) {
        struct xlate *x = &t->xl[i];
        if (x->src && x->src != names)
            continue;
        x->src = names;
        if (vh_reserve_zeroed(&x->id, &x->n, (size_t)id + 1, sizeof *x->id, 1024))
            return 0;
        if (!x->id[id])
            x->id[id] = intern(t, vh_snames__str(names, id));
        return x->id[id];
    }
    return intern(t, vh_snames__str(names, id));
}

#define WHERE_MAX 4                /* lines a merged node lists, then "…"   */

/* Whether the list `list` ("f.c:12, 14, g.h:3", a file named once for its
 * lines that follow) holds file:line `fl`; *n counts its items. */
static int where_has(const char *list, const char *fl, size_t *n)
{
    const char *colon = strrchr(fl, ':');
    size_t flen = colon ? (size_t)(colon - fl) : strlen(fl);
    const char *file = NULL, *line = colon ? colon + 1 : "";
    size_t file_len = 0;
    int has = 0;
    *n = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        const char *c = memchr(p, ':', len), *l = c ? c + 1 : p;
        if (c)
            file = p, file_len = (size_t)(c - p);
        size_t llen = len - (size_t)(l - p);
        has |= file && file_len == flen && !memcmp(file, fl, flen) && llen == strlen(line) &&
               !memcmp(l, line, llen);
        ++*n;
        p += len;
        p += strspn(p, ", ");
    }
    return has;
}

/* The file of the last item of a where list that names one, and its length. */
static const char *last_file(const char *list, size_t *len)
{
    const char *colon = strrchr(list, ':'), *p = colon;
    if (!colon)
        return NULL;
    while (p > list && p[-1] != ' ')
        p--;
    *len = (size_t)(colon - p);
    return p;
}

/* The "where" of a node that merges frames of one function called from
 * different lines: every line, not the first path's alone (the hover said
 * the line of a printf where the allocation's call was on another). */
static uint32_t merge_where(struct vh_ctree *t, uint32_t cur, uint32_t add)
{
    static const char more[] = "\u2026";
    char buf[512];
    size_t n, flen = 0;
    if (!add || add == cur || !cur)
        return cur ? cur : add;
    const char *list = vh_strtab__get(t->str, cur), *fl = vh_strtab__get(t->str, add);
    size_t ll = strlen(list);
    if (where_has(list, fl, &n) ||
        (ll >= sizeof more - 1 && !strcmp(list + ll - (sizeof more - 1), more)))
        return cur;
    const char *colon = strrchr(fl, ':'), *file = last_file(list, &flen);
    /* the same file as the list's last item: its line alone */
    const char *item = colon && file && flen == (size_t)(colon - fl) && !memcmp(file, fl, flen)
                           ? colon + 1
                           : fl;
    int w = snprintf(buf, sizeof buf, "%s, %s", list, n >= WHERE_MAX ? more : item);
    if (w < 0 || (size_t)w >= sizeof buf)
        return cur;
    uint32_t id = intern(t, buf);
    return id ? id : cur;
}

static int64_t child(struct vh_ctree *t, uint32_t parent, const struct vh_sname *f,
                     const struct vh_snames *names)
{
    int existed;
    uint32_t name = xlate(t, names, f->name);
    uint32_t module = xlate(t, names, f->module);
    if (!name)
        return -ENOMEM;
    struct vh_map_ent *e = vh_map__insert(t->children, (uint64_t)parent << 32 | name, module,
                                          &existed);
    if (!e)
        return -ENOMEM;
    if (existed) {
        struct node *nd = &t->nodes[e->v1];
        nd->where = merge_where(t, nd->where, xlate(t, names, f->where));
        return (int64_t)e->v1;
    }
    if (t->nnodes > UINT32_MAX - 2 ||
        vh_grow(&t->nodes, &t->ncap, t->nnodes, sizeof *t->nodes, 1024)) {
        vh_map__remove(t->children, e);
        return -ENOMEM;
    }
    e->v1 = t->nnodes;
    t->nodes[t->nnodes] = (struct node){ parent, name, module, xlate(t, names, f->where) };
    return (int64_t)t->nnodes++;
}

int64_t vh_ctree__row(struct vh_ctree *t, const struct vh_sname *path, size_t n,
                      const struct vh_snames *names, uint32_t heap, uint32_t tag)
{
    int64_t at = 0;
    int existed;
    for (size_t i = 0; i < n; i++)
        if ((at = child(t, (uint32_t)at, &path[i], names)) < 0)
            return at;
    struct vh_map_ent *e = vh_map__insert(t->rowmap, (uint64_t)at, (uint64_t)heap << 32 | tag,
                                          &existed);
    if (!e)
        return -ENOMEM;
    if (existed)
        return (int64_t)e->v1;
    size_t vc = t->vcap;
    if (vh_grow(&t->row_key, &t->rcap, t->nrows * 3 + 2, sizeof *t->row_key, 3072) ||
        vh_grow(&t->vals, &t->vcap, (t->nrows + 1) * t->ncols - 1, sizeof *t->vals,
                1024 * t->ncols)) {
        vh_map__remove(t->rowmap, e);
        return -ENOMEM;
    }
    if (t->vcap != vc)
        memset(t->vals + vc, 0, (t->vcap - vc) * sizeof *t->vals);
    t->row_key[t->nrows * 3] = (uint32_t)at;
    t->row_key[t->nrows * 3 + 1] = heap;
    t->row_key[t->nrows * 3 + 2] = tag;
    e->v1 = t->nrows;
    return (int64_t)t->nrows++;
}

/* (row, col) -> its entry in `x`, added with zero when new; -ENOMEM. */
static int64_t xent_of(struct vh_map *m, struct xent **x, size_t *n, size_t *cap, uint32_t row,
                       uint32_t col)
{
    int existed;
    struct vh_map_ent *e = vh_map__insert(m, row, col, &existed);
    if (!e)
        return -ENOMEM;
    if (existed)
        return (int64_t)e->v1;
    if (vh_grow(x, cap, *n, sizeof **x, 1024)) {
        vh_map__remove(m, e);
        return -ENOMEM;
    }
    (*x)[*n] = (struct xent){ col, row, 0 };
    e->v1 = *n;
    return (int64_t)(*n)++;
}

int vh_ctree__xadd(struct vh_ctree *t, int64_t row, uint32_t xcol, uint64_t delta)
{
    int64_t i = xent_of(t->xmap, &t->x, &t->nx, &t->xcap, (uint32_t)row, xcol);
    if (i < 0)
        return (int)i;
    t->x[i].v += delta;
    if (xcol >= t->nxcols)
        t->nxcols = xcol + 1;
    return 0;
}

uint64_t *vh_ctree__vals(struct vh_ctree *t, int64_t row)
{
    return t->vals + (size_t)row * t->ncols;
}

size_t vh_ctree__count(const struct vh_ctree *t)
{
    return t->nrows;
}

void vh_ctree__key(const struct vh_ctree *t, int64_t row, uint32_t *leaf, uint32_t *heap,
                   uint32_t *tag)
{
    *leaf = t->row_key[row * 3];
    *heap = t->row_key[row * 3 + 1];
    *tag = t->row_key[row * 3 + 2];
}

/* keep[i] = 1 for the nodes holding at least frac of some column's total. */
static size_t mark(const struct vh_ctree *t, double frac, uint64_t *sum, uint8_t *keep)
{
    size_t kept = 0;
    memset(keep, 0, t->nnodes);
    keep[0] = 1;
    for (size_t c = 0; c < t->ncols; c++) {
        uint64_t total = 0;
        memset(sum, 0, t->nnodes * sizeof *sum);
        for (size_t r = 0; r < t->nrows; r++) {
            sum[t->row_key[r * 3]] += t->vals[r * t->ncols + c];
            total += t->vals[r * t->ncols + c];
        }
        if (!total)
            continue;
        for (size_t i = t->nnodes; i-- > 1;)
            sum[t->nodes[i].parent] += sum[i];
        double thr = (double)total * frac;
        for (size_t i = 1; i < t->nnodes; i++)
            if (sum[i] && (double)sum[i] >= thr)
                keep[i] = 1;
    }
    for (size_t i = 0; i < t->nnodes; i++)
        kept += keep[i];
    return kept;
}

static void put_u32s(struct vh_xout *o, const char *key, const uint32_t *v, size_t n,
                     size_t stride)
{
    vh_xout__printf(o, "\"%s\":[", key);
    for (size_t i = 0; i < n; i++)
        vh_xout__printf(o, "%s%" PRIu32, i ? "," : "", v[i * stride]);
    vh_xout__puts(o, "]");
}

static int by_col_row(const void *a, const void *b)
{
    const struct xent *x = a, *y = b;
    return vh_cmp2(x->col, y->col, x->row, y->row);
}

/* "xsparse": the extra columns of the out rows (rout: a row's out row),
 * each a list of row, value pairs. 0 or -ENOMEM. */
static int write_xsparse(const struct vh_ctree *t, struct vh_xout *o, const uint32_t *rout)
{
    struct vh_map *m = vh_map__new();
    struct xent *x = NULL;
    size_t n = 0, cap = 0;
    int rc = -ENOMEM;
    if (!m)
        return -ENOMEM;
    for (size_t i = 0; i < t->nx; i++) {
        int64_t j = xent_of(m, &x, &n, &cap, rout[t->x[i].row], t->x[i].col);
        if (j < 0)
            goto out;
        x[j].v += t->x[i].v;
    }
    if (n)
        qsort(x, n, sizeof *x, by_col_row);
    vh_xout__puts(o, ",\"xsparse\":[");
    for (uint32_t c = 0, i = 0; c < t->nxcols; c++) {
        vh_xout__puts(o, c ? ",[" : "[");
        for (int first = 1; i < n && x[i].col == c; i++, first = 0)
            vh_xout__printf(o, "%s%" PRIu32 ",%" PRIu64, first ? "" : ",", x[i].row, x[i].v);
        vh_xout__puts(o, "]");
    }
    vh_xout__puts(o, "]");
    rc = 0;
out:
    vh_map__free(m);
    free(x);
    return rc;
}

int vh_ctree__write_json(struct vh_ctree *t, struct vh_xout *o, size_t dense, double frac,
                         size_t max_nodes, struct vh_ctree_stats *stats)
{
    uint64_t *sum = malloc((t->nnodes ? t->nnodes : 1) * sizeof *sum);
    uint8_t *keep = malloc(t->nnodes ? t->nnodes : 1);
    uint32_t *newid = malloc((t->nnodes ? t->nnodes : 1) * sizeof *newid);
    uint32_t *anc = malloc((t->nnodes ? t->nnodes : 1) * sizeof *anc);
    uint32_t *rout = malloc((t->nrows ? t->nrows : 1) * sizeof *rout);
    struct node *out = NULL;       /* kept and "[N smaller stacks]" nodes    */
    uint32_t *pruned_n = NULL;     /* per out node: rows merged into it       */
    uint32_t *okey = NULL;         /* out rows: node, heap, tag              */
    uint64_t *ovals = NULL;
    size_t nout = 0, ocap = 0, pcap = 0, nok = 0, okcap = 0, ovcap = 0, kept;
    struct vh_map *pnode = vh_map__new(), *orow = vh_map__new();
    int rc = -ENOMEM, existed;

    if (!sum || !keep || !newid || !anc || !rout || !pnode || !orow)
        goto out;
    /* 0 keeps every path: doubling it would never raise it (and never end) */
    while ((kept = mark(t, frac, sum, keep)) > max_nodes && frac > 0 && frac < 0.5)
        frac *= 2;
    *stats = (struct vh_ctree_stats){ .nodes = t->nnodes, .kept = kept, .rows = t->nrows,
                                      .frac = frac };
    /* kept nodes in id order, so parents still come first */
    for (size_t i = 0; i < t->nnodes; i++) {
        anc[i] = keep[i] ? (uint32_t)i : anc[t->nodes[i].parent];
        if (!keep[i])
            continue;
        if (vh_grow(&out, &ocap, nout, sizeof *out, 1024) ||
            vh_grow(&pruned_n, &pcap, nout, sizeof *pruned_n, 1024))
            goto out;
        newid[i] = (uint32_t)nout;
        out[nout] = t->nodes[i];
        out[nout].parent = i ? newid[t->nodes[i].parent] : 0;
        pruned_n[nout++] = 0;
    }
    uint32_t smaller = intern(t, "[smaller stacks]");
    if (!smaller)
        goto out;
    for (size_t r = 0; r < t->nrows; r++) {
        uint32_t leaf = t->row_key[r * 3], node;
        if (keep[leaf]) {
            node = newid[leaf];
        } else {
            /* one "[smaller stacks]" node under each kept ancestor */
            struct vh_map_ent *e = vh_map__insert(pnode, anc[leaf], 0, &existed);
            if (!e)
                goto out;
            if (!existed) {
                if (vh_grow(&out, &ocap, nout, sizeof *out, 1024) ||
                    vh_grow(&pruned_n, &pcap, nout, sizeof *pruned_n, 1024))
                    goto out;
                out[nout] = (struct node){ newid[anc[leaf]], smaller, 0, 0 };
                pruned_n[nout] = 0;
                e->v1 = nout++;
            }
            node = (uint32_t)e->v1;
            pruned_n[node]++;
            stats->pruned_rows++;
        }
        struct vh_map_ent *e = vh_map__insert(orow, node,
                                              (uint64_t)t->row_key[r * 3 + 1] << 32 |
                                                  t->row_key[r * 3 + 2], &existed);
        if (!e)
            goto out;
        if (!existed) {
            size_t vc = ovcap;
            if (vh_grow(&okey, &okcap, nok * 3 + 2, sizeof *okey, 3072) ||
                vh_grow(&ovals, &ovcap, (nok + 1) * t->ncols - 1, sizeof *ovals, 1024 * t->ncols))
                goto out;
            if (ovcap != vc)
                memset(ovals + vc, 0, (ovcap - vc) * sizeof *ovals);
            okey[nok * 3] = node;
            okey[nok * 3 + 1] = t->row_key[r * 3 + 1];
            okey[nok * 3 + 2] = t->row_key[r * 3 + 2];
            e->v1 = nok++;
        }
        rout[r] = (uint32_t)e->v1;
        for (size_t c = 0; c < t->ncols; c++)
            ovals[e->v1 * t->ncols + c] += t->vals[r * t->ncols + c];
    }

    /* the JSON: strings by id (index 0 is none) */
    vh_xout__puts(o, "{\"strings\":[null");
    for (uint32_t i = 1; i <= vh_strtab__count(t->str); i++) {
        vh_xout__puts(o, ",");
        vh_xout__json_str(o, vh_strtab__get(t->str, i));
    }
    vh_xout__puts(o, "],");
    put_u32s(o, "parent", &out[0].parent, nout, 4);
    vh_xout__puts(o, ",");
    put_u32s(o, "name", &out[0].name, nout, 4);
    vh_xout__puts(o, ",");
    put_u32s(o, "module", &out[0].module, nout, 4);
    vh_xout__puts(o, ",");
    put_u32s(o, "where", &out[0].where, nout, 4);
    vh_xout__puts(o, ",");
    put_u32s(o, "pruned", pruned_n, nout, 1);
    vh_xout__puts(o, ",\"rows\":[");
    for (size_t r = 0; r < nok; r++) {
        vh_xout__printf(o, "%s%" PRIu32 ",%" PRIu32 ",%" PRIu32, r ? "," : "", okey[r * 3],
                        okey[r * 3 + 1], okey[r * 3 + 2]);
        for (size_t c = 0; c < dense && c < t->ncols; c++)
            vh_xout__printf(o, ",%" PRIu64, ovals[r * t->ncols + c]);
    }
    vh_xout__puts(o, "],\"sparse\":[");
    for (size_t c = dense; c < t->ncols; c++) {
        int first = 1;
        vh_xout__puts(o, c > dense ? ",[" : "[");
        for (size_t r = 0; r < nok; r++)
            if (ovals[r * t->ncols + c]) {
                vh_xout__printf(o, "%s%zu,%" PRIu64, first ? "" : ",", r, ovals[r * t->ncols + c]);
                first = 0;
            }
        vh_xout__puts(o, "]");
    }
    vh_xout__puts(o, "]");
    if (write_xsparse(t, o, rout))
        goto out;
    vh_xout__printf(o, ",\"stats\":{\"nodes\":%zu,\"kept\":%zu,\"shown\":%zu,\"rows\":%zu,"
                       "\"pruned_rows\":%zu,\"frac\":%g}}",
                    stats->nodes, stats->kept, nout, stats->rows, stats->pruned_rows, frac);
    rc = 0;
out:
    free(sum);
    free(keep);
    free(newid);
    free(anc);
    free(rout);
    free(out);
    free(pruned_n);
    free(okey);
    free(ovals);
    vh_map__free(pnode);
    vh_map__free(orow);
    return rc;
}
