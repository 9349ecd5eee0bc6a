/* export/dhat.c — valgrind DHAT's JSON (dhatFileVersion 2, "heap" mode, as
 * dh_main.c writes it), for valgrind's dh_view.html and the Firefox
 * Profiler's DHAT importer: one program point per stack with its totals
 * (tb, tbk), the lifetimes of its blocks (tl), its own largest live bytes
 * (mb, mbk), what was live at the heap's peak (gb, gbk) and at the end
 * (eb, ebk), all computed in one pass over the event stream. Times are
 * microseconds ("tu": "µs"), not DHAT's instructions; no access counts
 * (bkacc false: vheap does not watch reads and writes). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/export/export.h"
#include "analyze/query/recording.h"
#include "analyze/query/stacks.h"
#include "analyze/render/output.h"
#include "analyze/store/db.h"
#include "analyze/store/events.h"
#include "analyze/util/grow.h"
#include "analyze/util/weight.h"

/* dh_view calls a program point short-lived when its blocks' average
 * lifetime is at most this ("tuth"). */
#define SHORT_LIVED_US 1000

/* One program point: a stack's numbers, in bytes, blocks and ns. */
struct pp {
    uint64_t tb, tbk, cur_b, cur_bk, mb, mbk, gb, gbk;
    double tl_ns;                  /* lifetimes of the blocks that ended      */
    double born_ns;                /* sum of the live blocks' birth times     */
    uint32_t epoch;                /* gb/gbk hold the values at this peak     */
};

struct dh {
    struct vh_export *x;
    struct pp *pps;                /* by stack id                             */
    size_t npps;
    struct vh_map *blocks;         /* (heap, addr) -> (time, stack id)        */
    uint64_t rate;                 /* VHEAP_SAMPLE, 0 = every call            */
    uint64_t live, gmax, tg;       /* the chosen heaps' live bytes, peak     */
    uint32_t epoch;                /* bumped at each new peak                 */
};

/* What a block stands for: itself, or in a sampled capture 1/p of it
 * (weight.h), the same at its free as at its allocation because both
 * compute it from the block's size and allocation time. */
static struct vh_weight weigh(const struct dh *d, uint64_t size, uint64_t time)
{
    return vh_weigh(size, d->rate, (uint32_t)(time ^ time >> 32));
}

static struct pp *pp_of(struct dh *d, uint32_t stack)
{
    if (stack >= d->npps) {
        size_t cap = d->npps;
        if (vh_reserve_zeroed(&d->pps, &cap, (size_t)stack + 1, sizeof *d->pps, 1024))
            return NULL;
        d->npps = cap;
    }
    return &d->pps[stack];
}

/* Before a program point changes: if the heap peaked since it last did, its
 * value now is its value at that peak. */
static void settle(const struct dh *d, struct pp *p)
{
    if (p->epoch != d->epoch) {
        p->gb = p->cur_b;
        p->gbk = p->cur_bk;
        p->epoch = d->epoch;
    }
}

static int born(struct dh *d, uint32_t heap, uint64_t addr, uint32_t stack, uint64_t size,
                uint64_t time)
{
    struct pp *p = pp_of(d, stack);
    int existed;
    struct vh_map_ent *b = vh_map__insert(d->blocks, heap, addr, &existed);
    if (!p || !b)
        return -ENOMEM;
    struct vh_weight w = weigh(d, size, time);
    b->v1 = time;
    b->v2 = stack;
    settle(d, p);
    p->tb += w.bytes;
    p->tbk += w.count;
    p->cur_b += w.bytes;
    p->cur_bk += w.count;
    p->born_ns += (double)time * (double)w.count;
    if (p->cur_b > p->mb) {
        p->mb = p->cur_b;
        p->mbk = p->cur_bk;
    }
    d->live += w.bytes;
    if (d->live >= d->gmax) {      /* the latest of equal peaks, as DHAT */
        d->gmax = d->live;
        d->tg = time;
        d->epoch++;
    }
    return 0;
}

/* Block b (of `size` bytes) ends at `time`. */
static void gone(struct dh *d, struct vh_map_ent *b, uint64_t size, uint64_t time)
{
    struct pp *p = &d->pps[b->v2];
    struct vh_weight w = weigh(d, size, b->v1);
    settle(d, p);
    p->tl_ns += (double)(time - b->v1) * (double)w.count;
    p->born_ns -= (double)b->v1 * (double)w.count;
    p->cur_b -= w.bytes;
    p->cur_bk -= w.count;
    d->live -= w.bytes;
    vh_map__remove(d->blocks, b);
}

static int event(struct dh *d, const struct vh_ev *ev)
{
    struct vh_map_ent *b;
    if (!vh_export_heap_on(d->x, ev->heap_id))
        return 0;
    switch (ev->kind) {
    case VH_EV_ALLOC:
        return born(d, ev->heap_id, ev->addr, ev->stack_id, ev->size, ev->time);
    case VH_EV_FREE:
        if ((b = vh_map__find(d->blocks, ev->heap_id, ev->addr)))
            gone(d, b, ev->size, ev->time);
        return 0;
    case VH_EV_RESIZE:             /* in place: the old block ends, a new one */
        if ((b = vh_map__find(d->blocks, ev->heap_id, ev->addr)))
            gone(d, b, ev->old_size, ev->time);
        return born(d, ev->heap_id, ev->addr, ev->stack_id, ev->size, ev->time);
    case VH_EV_MOVE:
        return vh_export_block_move(d->blocks, ev);
    }
    return 0;
}

/* The whole stream, then the blocks still live at the end: their lifetime
 * runs to the end, as DHAT counts it. */
static int replay(struct dh *d, uint64_t *end_ns)
{
    struct evstream *es = NULL;
    struct vh_ev ev;
    char err[256];
    int rc = evstream__open(d->x->db, 0, &es, err, sizeof err);
    if (rc) {
        vh_errorf(d->x->cmd, "the event stream: %s", err);
        return rc;
    }
    while ((rc = evstream__next(es, &ev)) == 1) {
        if (ev.time > *end_ns)
            *end_ns = ev.time;
        if ((rc = event(d, &ev)))
            break;
    }
    if (rc < 0 && rc != -ENOMEM)
        vh_errorf(d->x->cmd, "the event stream: %s", evstream__error(es));
    evstream__close(es);
    if (rc)
        return rc;
    for (size_t i = 0; i < d->npps; i++) {
        struct pp *p = &d->pps[i];
        settle(d, p);
        p->tl_ns += (double)*end_ns * (double)p->cur_bk - p->born_ns;
    }
    return 0;
}

/* ---- the file ----------------------------------------------------------------- */

/* Interns one frame's label: its ftbl index, 0 on ENOMEM. */
static uint32_t frame_id(struct vh_strtab *ftbl, const struct out_frame *f,
                         const struct out_inline *in)
{
    int added;
    char *s = in ? vh_export_frame_label((uint64_t)f->address,
                                         in->function ? in->function : "???", in->file,
                                         in->line, f->module)
                 : vh_export_frame_label((uint64_t)f->address, f->function, f->file, f->line,
                                         f->module);
    uint32_t id = s ? vh_strtab__intern(ftbl, s, strlen(s), &added) : 0;
    free(s);
    return id;
}

struct fs {
    uint32_t *ids;
    size_t n, cap;
    struct vh_map *seen;           /* (hash, length) of every fs written      */
};

static int fs_add(struct fs *fs, uint32_t id)
{
    if (!id || vh_grow(&fs->ids, &fs->cap, fs->n, sizeof *fs->ids, 64))
        return -ENOMEM;
    fs->ids[fs->n++] = id;
    return 0;
}

/* dh_view refuses two points with the same frames ("repeated location"):
 * a stack whose labels another already had (the same code after a
 * dlclose and dlopen, a stack cut by --depth) gets its id as an outermost
 * pseudo-frame. */
static int fs_unique(struct fs *fs, struct vh_strtab *ftbl, uint32_t stack)
{
    uint64_t h = 0xcbf29ce484222325ull;
    int existed, added;
    for (size_t i = 0; i < fs->n; i++)
        h = (h ^ fs->ids[i]) * 0x100000001b3ull;
    struct vh_map_ent *e = vh_map__insert(fs->seen, h, fs->n, &existed);
    if (!e)
        return -ENOMEM;
    if (!existed)
        return 0;
    char name[48];
    int n = snprintf(name, sizeof name, "[vheap stack %" PRIu32 "]", stack);
    return fs_add(fs, vh_strtab__intern(ftbl, name, (size_t)n, &added));
}

/* The frames of `stack`, innermost first with inlined functions expanded
 * (as valgrind lists them), as indexes into ftbl: ftbl[0] is "[root]", a
 * strtab id is its index. */
static int put_frames(struct dh *d, struct vh_stacks *stacks, struct vh_strtab *ftbl,
                      struct fs *fs, uint32_t stack)
{
    int err = 0, added, rc = 0;
    struct out_stack *st = vh_stacks__get(stacks, stack, &err);
    if (!st) {
        if (err != -ENOMEM)
            vh_errorf(d->x->cmd, "reading stack %" PRIu32 ": %s", stack,
                      sqlite3_errmsg(d->x->db));
        return err ? err : -EIO;
    }
    fs->n = 0;
    for (size_t i = 0; i < st->n && !rc; i++) {
        const struct out_frame *f = &st->frames[i];
        for (size_t j = 0; j <= f->ninlined && !rc; j++)
            rc = fs_add(fs, frame_id(ftbl, f, j ? &f->inlined[j - 1] : NULL));
    }
    if (!st->n && !rc)             /* dh_view wants a frame to name the point */
        rc = fs_add(fs, vh_strtab__intern(ftbl, "[no stack recorded]", 19, &added));
    out_stack__free(st);
    if (!rc)
        rc = fs_unique(fs, ftbl, stack);
    vh_xout__puts(d->x->out, ",\"fs\":[");
    for (size_t i = 0; i < fs->n && !rc; i++)
        vh_xout__printf(d->x->out, "%s%" PRIu32, i ? "," : "", fs->ids[i]);
    vh_xout__puts(d->x->out, "]");
    return rc;
}

static uint64_t us(double ns)
{
    return ns <= 0 ? 0 : (uint64_t)(ns / 1000.0 + 0.5);
}

static int put_pps(struct dh *d, struct vh_strtab *ftbl, size_t *npoints)
{
    struct vh_stacks *stacks = NULL;
    struct fs fs = { .seen = vh_map__new() };
    if (!fs.seen)
        return -ENOMEM;
    int rc = vh_stacks__open(d->x->cmd, d->x->db, d->x->depth, &stacks);
    const char *sep = "\n ";
    vh_xout__puts(d->x->out, ",\"pps\":[");
    for (size_t i = 0; i < d->npps && !rc; i++) {
        const struct pp *p = &d->pps[i];
        if (!p->tbk)
            continue;
        vh_xout__printf(d->x->out,
                        "%s{\"tb\":%" PRIu64 ",\"tbk\":%" PRIu64 ",\"tl\":%" PRIu64
                        ",\"mb\":%" PRIu64 ",\"mbk\":%" PRIu64 ",\"gb\":%" PRIu64
                        ",\"gbk\":%" PRIu64 ",\"eb\":%" PRIu64 ",\"ebk\":%" PRIu64,
                        sep, p->tb, p->tbk, us(p->tl_ns), p->mb, p->mbk, p->gb, p->gbk,
                        p->cur_b, p->cur_bk);
        rc = put_frames(d, stacks, ftbl, &fs, (uint32_t)i);
        vh_xout__puts(d->x->out, "}");
        sep = "\n,";
        ++*npoints;
    }
    vh_xout__puts(d->x->out, "\n]");
    vh_stacks__free(stacks);
    vh_map__free(fs.seen);
    free(fs.ids);
    return rc;
}

static void put_ftbl(struct dh *d, const struct vh_strtab *ftbl)
{
    vh_xout__puts(d->x->out, ",\"ftbl\":[\n \"[root]\"");
    for (uint32_t id = 1; id <= vh_strtab__count(ftbl); id++) {
        vh_xout__puts(d->x->out, "\n,");
        vh_xout__json_str(d->x->out, vh_strtab__get(ftbl, id));
    }
    vh_xout__puts(d->x->out, "\n]\n}\n");
}

/* The header: DHAT's mandatory fields, "mode" saying what the numbers are. */
static void put_head(struct dh *d, uint64_t end_ns)
{
    struct vh_export *x = d->x;
    char mode[128];
    if (d->rate)
        snprintf(mode, sizeof mode, "heap (vheap, sampled every %" PRIu64 " bytes: estimates)",
                 d->rate);
    else
        snprintf(mode, sizeof mode, "heap (vheap)");
    vh_xout__puts(x->out, "{\"dhatFileVersion\":2\n,\"mode\":");
    vh_xout__json_str(x->out, mode);
    vh_xout__printf(x->out,
                    ",\"verb\":\"Allocated\"\n,\"bklt\":true,\"bkacc\":false\n"
                    ",\"tu\":\"µs\",\"Mtu\":\"s\"\n,\"tuth\":%d\n,\"cmd\":",
                    SHORT_LIVED_US);
    vh_xout__json_str(x->out, x->argv_text ? x->argv_text : x->exe ? x->exe : "(unknown)");
    vh_xout__printf(x->out, "\n,\"pid\":%" PRId64 "\n,\"te\":%" PRIu64 "\n,\"tg\":%" PRIu64 "\n",
                    x->pid, us((double)end_ns), us((double)d->tg));
}

int vh_export_dhat(struct vh_export *x)
{
    struct dh d = { .x = x };
    struct vh_strtab *ftbl = NULL;
    size_t npoints = 0;
    int rc = -ENOMEM;

    if (db__meta_int(x->db, "events", -1) < 0) {
        vh_errorf(x->cmd, "this database has no event stream (made by an older vheap?): "
                          "load the capture again with `vheap-analyze load`");
        return -ENOTSUP;
    }
    d.rate = (uint64_t)vh_rec_sample_rate(x->db);
    uint64_t end = x->runtime_ns;
    if (!(d.blocks = vh_map__new()) || !(ftbl = vh_strtab__new()))
        goto out;
    if ((rc = replay(&d, &end)))
        goto out;
    put_head(&d, end);
    if ((rc = put_pps(&d, ftbl, &npoints)))
        goto out;
    put_ftbl(&d, ftbl);

    char pb[32], pt[32];
    vh_export_note(x, "%s: DHAT data, heap %s: %zu program points, peak %s at %s; times in "
                      "microseconds, no access counts",
                   vh_export_dest(x), x->heap_desc, npoints,
                   out__human_bytes((int64_t)d.gmax, pb, sizeof pb),
                   out__human_ns((int64_t)d.tg, pt, sizeof pt));
    if (d.rate)
        vh_export_note(x, "a sampled capture (VHEAP_SAMPLE=%" PRIu64 "): every number is an "
                          "estimate, each recorded block counted 1/p times (the file's mode "
                          "says so)", d.rate);
    if (x->nheaps > 1)
        vh_export_note(x, "%u heaps are merged into one: the peak is the peak of their sum",
                       x->nheaps);
out:
    vh_map__free(d.blocks);
    vh_strtab__free(ftbl);
    free(d.pps);
    return rc;
}
