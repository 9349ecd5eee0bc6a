/* bptree.c — the B+ trees' pools and their changes (bptree.h): a leaf or
 * inner node split on insert, merged or freed on delete. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/util/bptree.h"

static int grow_pool(void **v, uint32_t *cap, size_t size)
{
    uint32_t n = *cap ? *cap * 2 : 64;
    void *p;
    if (*cap > UINT32_MAX / 4 || !(p = aligned_alloc(64, (size_t)n * size)))
        return -ENOMEM;
    if (*v)
        memcpy(p, *v, (size_t)*cap * size);
    free(*v);
    *v = p;
    *cap = n;
    return 0;
}

int bpool_reserve(struct bpool *p, uint32_t leaves, uint32_t inners)
{
    if (!p->nl)
        p->nl = 1;                 /* index 0 is "none" */
    if (!p->ni)
        p->ni = 1;
    while ((p->capl > p->nl ? p->capl - p->nl : 0) + p->nfreel < leaves)
        if (grow_pool((void **)&p->l, &p->capl, sizeof *p->l))
            return -ENOMEM;
    while ((p->capi > p->ni ? p->capi - p->ni : 0) + p->nfreei < inners)
        if (grow_pool((void **)&p->in, &p->capi, sizeof *p->in))
            return -ENOMEM;
    return 0;
}

static uint32_t leaf_new(struct bpool *p)
{
    uint32_t x = p->freel;
    if (x) {
        p->freel = LF(p, x)->next;
        p->nfreel--;
    } else {
        x = p->nl++;
    }
    LF(p, x)->n = LF(p, x)->prev = LF(p, x)->next = 0;
    return x;
}

static void leaf_free(struct bpool *p, uint32_t x)
{
    LF(p, x)->next = p->freel;
    p->freel = x;
    p->nfreel++;
}

static uint32_t inner_new(struct bpool *p)
{
    uint32_t x = p->freei;
    if (x) {
        p->freei = IN(p, x)->child[0];
        p->nfreei--;
    } else {
        x = p->ni++;
    }
    IN(p, x)->n = 0;
    return x;
}

static void inner_free(struct bpool *p, uint32_t x)
{
    IN(p, x)->child[0] = p->freei;
    p->freei = x;
    p->nfreei++;
}



/* Puts (sep, right) after child slot s of the inner node at depth d of the
 * path, splitting upwards as needed. */
static void inner_put(struct bpool *p, struct btree *t, struct bpos *pos, int d, uint64_t sep,
                      uint32_t right)
{
    for (;;) {
        if (d < 0) {                   /* a new root over the old one */
            uint32_t r = inner_new(p);
            struct binner *in = IN(p, r);
            in->n = 1;
            in->child[0] = t->root;
            in->child[1] = right;
            in->key[0] = sep;
            t->root = r;
            t->height++;
            return;
        }
        uint32_t x = pos->node[d], s = pos->slot[d];
        struct binner *in = IN(p, x);
        memmove(&in->key[s + 1], &in->key[s], (in->n - s) * sizeof in->key[0]);
        memmove(&in->child[s + 2], &in->child[s + 1], (in->n - s) * sizeof in->child[0]);
        in->key[s] = sep;
        in->child[s + 1] = right;
        if (++in->n <= ICAP)
            return;
        /* split: the middle key goes up */
        uint32_t mid = in->n / 2, r = inner_new(p);
        struct binner *rn = IN(p, r);
        in = IN(p, x);
        rn->n = in->n - mid - 1;
        memcpy(rn->key, &in->key[mid + 1], rn->n * sizeof in->key[0]);
        memcpy(rn->child, &in->child[mid + 1], (rn->n + 1) * sizeof in->child[0]);
        sep = in->key[mid];
        in->n = mid;
        right = r;
        d--;
    }
}

/* Inserts key (absent) at the position bt_seek() found for it. Room for
 * one leaf and MAXH + 1 inner nodes must be reserved. */
void bt_insert(struct bpool *p, struct btree *t, struct bpos *pos, uint64_t key, uint64_t a,
               uint64_t b, uint8_t f)
{
    uint32_t x = pos->leaf, i = pos->i;
    struct bleaf *l;

    if (!x) {                          /* empty tree */
        x = t->root = t->first = t->last = leaf_new(p);
        t->height = 0;
        i = 0;
    }
    l = LF(p, x);
    memmove(&l->key[i + 1], &l->key[i], (l->n - i) * sizeof l->key[0]);
    memmove(&l->a[i + 1], &l->a[i], (l->n - i) * sizeof l->a[0]);
    memmove(&l->b[i + 1], &l->b[i], (l->n - i) * sizeof l->b[0]);
    memmove(&l->f[i + 1], &l->f[i], (l->n - i) * sizeof l->f[0]);
    l->key[i] = key;
    l->a[i] = a;
    l->b[i] = b;
    l->f[i] = f;
    if (++l->n <= LCAP)
        return;
    /* split: the upper half to a new leaf after it */
    uint32_t r = leaf_new(p), half = l->n / 2, m;
    struct bleaf *rl = LF(p, r);
    l = LF(p, x);
    m = l->n - half;
    memcpy(rl->key, &l->key[half], m * sizeof l->key[0]);
    memcpy(rl->a, &l->a[half], m * sizeof l->a[0]);
    memcpy(rl->b, &l->b[half], m * sizeof l->b[0]);
    memcpy(rl->f, &l->f[half], m * sizeof l->f[0]);
    rl->n = m;
    l->n = half;
    rl->prev = x;
    rl->next = l->next;
    if (l->next)
        LF(p, l->next)->prev = r;
    else
        t->last = r;
    l->next = r;
    inner_put(p, t, pos, pos->depth - 1, rl->key[0], r);
}

static void leaf_unchain(struct bpool *p, struct btree *t, uint32_t x)
{
    struct bleaf *l = LF(p, x);
    if (l->prev)
        LF(p, l->prev)->next = l->next;
    else
        t->first = l->next;
    if (l->next)
        LF(p, l->next)->prev = l->prev;
    else
        t->last = l->prev;
}

/* Appends leaf y's entries to leaf x (y follows x) and frees y. */
static void leaf_join(struct bpool *p, struct btree *t, uint32_t x, uint32_t y)
{
    struct bleaf *l = LF(p, x), *r = LF(p, y);
    memcpy(&l->key[l->n], r->key, r->n * sizeof r->key[0]);
    memcpy(&l->a[l->n], r->a, r->n * sizeof r->a[0]);
    memcpy(&l->b[l->n], r->b, r->n * sizeof r->b[0]);
    memcpy(&l->f[l->n], r->f, r->n * sizeof r->f[0]);
    l->n += r->n;
    leaf_unchain(p, t, y);
    leaf_free(p, y);
}

/* Removes child slot s of the inner node at depth d (the child itself is
 * already gone), then merges or collapses upwards as needed. */
static void inner_drop(struct bpool *p, struct btree *t, struct bpos *pos, int d, uint32_t s)
{
    for (;;) {
        uint32_t x = pos->node[d];
        struct binner *in = IN(p, x);

        if (!in->n) {                  /* its only child: it goes too */
            inner_free(p, x);
            if (!d) {
                t->root = t->first = t->last = 0;
                t->height = 0;
                return;
            }
            s = pos->slot[--d];
            continue;
        }
        if (s) {
            memmove(&in->key[s - 1], &in->key[s], (in->n - s) * sizeof in->key[0]);
            memmove(&in->child[s], &in->child[s + 1], (in->n - s) * sizeof in->child[0]);
        } else {
            memmove(&in->key[0], &in->key[1], (in->n - 1) * sizeof in->key[0]);
            memmove(&in->child[0], &in->child[1], in->n * sizeof in->child[0]);
        }
        in->n--;
        if (!d) {                      /* the root: collapse while one child */
            while (t->height && !IN(p, t->root)->n) {
                uint32_t r = t->root;
                t->root = IN(p, r)->child[0];
                t->height--;
                inner_free(p, r);
            }
            return;
        }
        if (in->n >= ICAP / 4)
            return;
        /* small: merge with a sibling when both fit in 3/4 of a node */
        uint32_t g = pos->node[d - 1], sg = pos->slot[d - 1], lx, rx, ls;
        struct binner *gn = IN(p, g);
        if (sg && IN(p, gn->child[sg - 1])->n + in->n + 1 <= ICAP * 3 / 4) {
            lx = gn->child[sg - 1], rx = x, ls = sg;
        } else if (sg < gn->n && IN(p, gn->child[sg + 1])->n + in->n + 1 <= ICAP * 3 / 4) {
            lx = x, rx = gn->child[sg + 1], ls = sg + 1;
        } else {
            return;
        }
        struct binner *ln = IN(p, lx), *rn = IN(p, rx);
        ln->key[ln->n] = gn->key[ls - 1];
        memcpy(&ln->key[ln->n + 1], rn->key, rn->n * sizeof rn->key[0]);
        memcpy(&ln->child[ln->n + 1], rn->child, (rn->n + 1) * sizeof rn->child[0]);
        ln->n += rn->n + 1;
        inner_free(p, rx);
        d--;
        s = ls;
    }
}

/* Removes the entry at the position bt_seek() found. */
void bt_delete(struct bpool *p, struct btree *t, struct bpos *pos)
{
    uint32_t x = pos->leaf, i = pos->i;
    struct bleaf *l = LF(p, x);
    int d = pos->depth - 1;

    l->n--;
    memmove(&l->key[i], &l->key[i + 1], (l->n - i) * sizeof l->key[0]);
    memmove(&l->a[i], &l->a[i + 1], (l->n - i) * sizeof l->a[0]);
    memmove(&l->b[i], &l->b[i + 1], (l->n - i) * sizeof l->b[0]);
    memmove(&l->f[i], &l->f[i + 1], (l->n - i) * sizeof l->f[0]);
    if (d < 0) {                       /* the root is this leaf */
        if (!l->n) {
            leaf_free(p, x);
            t->root = t->first = t->last = 0;
        }
        return;
    }
    if (!l->n) {
        leaf_unchain(p, t, x);
        leaf_free(p, x);
        inner_drop(p, t, pos, d, pos->slot[d]);
        return;
    }
    if (l->n >= LCAP / 4)
        return;
    uint32_t g = pos->node[d], s = pos->slot[d];
    const struct binner *in = IN(p, g);
    if (s && LF(p, in->child[s - 1])->n + l->n <= LCAP * 3 / 4) {
        leaf_join(p, t, in->child[s - 1], x);
        inner_drop(p, t, pos, d, s);
    } else if (s < in->n && LF(p, in->child[s + 1])->n + l->n <= LCAP * 3 / 4) {
        leaf_join(p, t, x, in->child[s + 1]);
        inner_drop(p, t, pos, d, s + 1);
    }
}

