/* query/frag_rows.c — frag's numbers as rows for the renderer (table, JSON,
 * CSV through render/output.h): one moment's summary, regions, hole sizes,
 * size classes and stacks, or the headline numbers over time, one row a
 * point. The numbers are frag.c's, read from the run by frag_run.c and
 * frag_series.c; this file names and formats them. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/query/frag_rows.h"
#include "analyze/query/stacks.h"
#include "analyze/util/cmp.h"
#include "analyze/util/diag.h"

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* A text cell from a buffer (OV_S tests its argument for NULL). */
static struct out_val ov_text(const char *s)
{
    return (struct out_val){ .kind = OV_TEXT, .s = s };
}

static struct out_val ov_pct(uint64_t part, uint64_t whole)
{
    return whole ? OV_R(round(pct(part, whole) * 100) / 100) : OV_NULLV;
}

/* External fragmentation, 1 - largest/free, as a percentage; none without
 * free bytes. */
static struct out_val ov_ext(uint64_t largest, uint64_t free)
{
    return free ? OV_R(round((1.0 - (double)largest / (double)free) * 10000) / 100) : OV_NULLV;
}

enum {
    S_AT, S_TIME, S_HEAPS, S_PAGE, S_BLOCKS, S_REQ, S_USABLE, S_SLACK, S_SLACK_PCT,
    S_PAGES, S_PUSED, S_PUTIL, S_PFREE, S_SPARSE, S_PINNED, S_REGIONS, S_FOOT, S_UTIL, S_FREE,
    S_HOLES, S_LARGEST, S_EXT, S_UNUSABLE, S_FIT64, S_FIT4K, S_FIT1M, S_GAPS, S_RECLAIM,
    S_RSS, S_RSS_TIME, S_RSS_OVER, S_MAPPED, S_N
};

static const struct out_col scols[S_N] = {
    [S_AT] = { "at", "at", OUT_TEXT, 0 },
    [S_TIME] = { "time_ns", "time", OUT_NS, 0 },
    [S_HEAPS] = { "heaps", "heaps", OUT_WORDS, 0 },
    [S_PAGE] = { "page_size", "page size (bytes)", OUT_INT, 0 },
    [S_BLOCKS] = { "live_blocks", "live blocks", OUT_INT, 0 },
    [S_REQ] = { "requested", "live requested", OUT_BYTES, 0 },
    [S_USABLE] = { "usable", "live usable", OUT_BYTES, 0 },
    [S_SLACK] = { "slack", "internal slack (usable - requested)", OUT_BYTES, 0 },
    [S_SLACK_PCT] = { "slack_pct", "slack % of usable", OUT_REAL, OUT_F_NO_TABLE },
    [S_PAGES] = { "pages", "pages touched", OUT_INT, 0 },
    [S_PUSED] = { "page_bytes_used", "page bytes used", OUT_BYTES, OUT_F_NO_TABLE },
    [S_PUTIL] = { "page_utilization_pct", "page utilization %", OUT_REAL, 0 },
    [S_PFREE] = { "page_free", "free bytes on touched pages", OUT_BYTES, 0 },
    [S_SPARSE] = { "sparse_pages", "sparse pages", OUT_INT, 0 },
    [S_PINNED] = { "pinned", "pinned by sparse pages (their free bytes)", OUT_BYTES, 0 },
    [S_REGIONS] = { "regions", "regions", OUT_INT, 0 },
    [S_FOOT] = { "footprint", "footprint (size of the regions)", OUT_BYTES, 0 },
    [S_UTIL] = { "utilization_pct", "utilization % (usable / footprint)", OUT_REAL, 0 },
    [S_FREE] = { "free", "free in holes", OUT_BYTES, 0 },
    [S_HOLES] = { "holes", "holes", OUT_INT, 0 },
    [S_LARGEST] = { "largest_hole", "largest hole", OUT_BYTES, 0 },
    [S_EXT] = { "external_fragmentation_pct", "external fragmentation % (1 - largest/free)",
                OUT_REAL, 0 },
    [S_UNUSABLE] = { "unusable", "free in pieces smaller than a page", OUT_BYTES, 0 },
    [S_FIT64] = { "fit_64", "free that 64 B blocks could fill", OUT_BYTES, 0 },
    [S_FIT4K] = { "fit_4k", "free that 4 KiB blocks could fill", OUT_BYTES, 0 },
    [S_FIT1M] = { "fit_1m", "free that 1 MiB blocks could fill", OUT_BYTES, 0 },
    [S_GAPS] = { "small_gaps", "gaps narrower than --min-hole (headers)", OUT_BYTES,
                 OUT_F_HIDE_ZERO },
    [S_RECLAIM] = { "reclaim", "compaction would reclaim", OUT_BYTES, 0 },
    [S_RSS] = { "rss", "RSS", OUT_BYTES, 0 },
    [S_RSS_TIME] = { "rss_time_ns", "RSS sampled at", OUT_NS, OUT_F_NO_TABLE },
    [S_RSS_OVER] = { "rss_over_usable", "RSS - live usable", OUT_BYTES, 0 },
    [S_MAPPED] = { "mapped", "of the live usable, mappings (the mmap heap)", OUT_BYTES,
                   OUT_F_HIDE_ZERO },
};

/* The live bytes of the mmap heap among the regions: address space the
 * program mapped, resident only where it touched it. */
static uint64_t mapped_bytes(const struct frag_run *c, const struct frag_report *r)
{
    uint64_t n = 0;
    for (size_t i = 0; i < r->nregions; i++)
        if (!r->regions[i].nested && !strcmp(frag_run__heap_name(c, r->regions[i].heap_id), "mmap"))
            n += r->regions[i].usable;
    return n;
}

enum {
    R_HEAP, R_KIND, R_LO, R_HI, R_RANGE, R_SIZE, R_BLOCKS, R_REQ, R_USABLE, R_FREE, R_HOLES,
    R_LARGEST, R_LARGEST_AT, R_EXT, R_SPAN, R_RECLAIM, R_PAGES, R_PUSED, R_PUTIL, R_SPARSE, R_PINNED,
    R_GAPS, R_UNUSABLE, R_FIT64, R_FIT4K, R_FIT1M, R_N
};

static const struct out_col rcols[R_N] = {
    [R_HEAP] = { "heap", "heap", OUT_TEXT, OUT_F_HIDE_SAME },
    [R_KIND] = { "kind", "bounds", OUT_TEXT, OUT_F_HIDE_SAME },
    [R_LO] = { "lo", "lo", OUT_INT, OUT_F_NO_TABLE },
    [R_HI] = { "hi", "hi", OUT_INT, OUT_F_NO_TABLE },
    [R_RANGE] = { "range", "address range", OUT_TEXT, 0 },
    [R_SIZE] = { "size", "size", OUT_BYTES, 0 },
    [R_BLOCKS] = { "blocks", "blocks", OUT_INT, 0 },
    [R_REQ] = { "requested", "requested", OUT_BYTES, OUT_F_NO_TABLE },
    [R_USABLE] = { "usable", "usable", OUT_BYTES, 0 },
    [R_FREE] = { "free", "free", OUT_BYTES, 0 },
    [R_HOLES] = { "holes", "holes", OUT_INT, 0 },
    [R_LARGEST] = { "largest_hole", "largest", OUT_BYTES, 0 },
    [R_LARGEST_AT] = { "largest_hole_at", "largest at", OUT_INT, OUT_F_NO_TABLE },
    [R_EXT] = { "external_fragmentation_pct", "ext frag %", OUT_REAL, 0 },
    [R_SPAN] = { "span", "span", OUT_BYTES, OUT_F_NO_TABLE },
    [R_RECLAIM] = { "reclaim", "reclaim", OUT_BYTES, OUT_F_HIDE_ZERO },
    [R_PAGES] = { "pages", "pages", OUT_INT, 0 },
    [R_PUSED] = { "page_bytes_used", "page bytes used", OUT_BYTES, OUT_F_NO_TABLE },
    [R_PUTIL] = { "page_utilization_pct", "page util %", OUT_REAL, 0 },
    [R_SPARSE] = { "sparse_pages", "sparse", OUT_INT, 0 },
    [R_PINNED] = { "pinned", "pinned", OUT_BYTES, 0 },
    [R_GAPS] = { "small_gaps", "small gaps", OUT_BYTES, OUT_F_NO_TABLE },
    [R_UNUSABLE] = { "unusable", "unusable", OUT_BYTES, OUT_F_NO_TABLE },
    [R_FIT64] = { "fit_64", "fit 64 B", OUT_BYTES, OUT_F_NO_TABLE },
    [R_FIT4K] = { "fit_4k", "fit 4 KiB", OUT_BYTES, OUT_F_NO_TABLE },
    [R_FIT1M] = { "fit_1m", "fit 1 MiB", OUT_BYTES, OUT_F_NO_TABLE },
};

enum { H_RANGE, H_MIN, H_MAX, H_HOLES, H_BYTES, H_PCT, H_N };

static const struct out_col hcols[H_N] = {
    [H_RANGE] = { "range", "hole size", OUT_TEXT, 0 },
    [H_MIN] = { "min", "min", OUT_INT, OUT_F_NO_TABLE },
    [H_MAX] = { "max", "max", OUT_INT, OUT_F_NO_TABLE },
    [H_HOLES] = { "holes", "holes", OUT_INT, 0 },
    [H_BYTES] = { "bytes", "bytes", OUT_BYTES, 0 },
    [H_PCT] = { "free_pct", "% of free", OUT_REAL, 0 },
};

enum { C_RANGE, C_MIN, C_MAX, C_BLOCKS, C_REQ, C_USABLE, C_SLACK, C_PCT, C_N };

static const struct out_col ccols[C_N] = {
    [C_RANGE] = { "range", "requested size", OUT_TEXT, 0 },
    [C_MIN] = { "min", "min", OUT_INT, OUT_F_NO_TABLE },
    [C_MAX] = { "max", "max", OUT_INT, OUT_F_NO_TABLE },
    [C_BLOCKS] = { "blocks", "blocks", OUT_INT, 0 },
    [C_REQ] = { "requested", "requested", OUT_BYTES, 0 },
    [C_USABLE] = { "usable", "usable", OUT_BYTES, 0 },
    [C_SLACK] = { "slack", "slack", OUT_BYTES, 0 },
    [C_PCT] = { "slack_pct", "slack %", OUT_REAL, 0 },
};

enum { K_HEAP_ID, K_HEAP, K_STACK, K_BLOCKS, K_REQ, K_USABLE, K_SLACK, K_PCT, K_PINNED, K_WASTE,
       K_N };

static const struct out_col kcols[K_N] = {
    [K_HEAP_ID] = { "heap_id", "heap id", OUT_INT, OUT_F_NO_TABLE },
    [K_HEAP] = { "heap", "heap", OUT_TEXT, OUT_F_HIDE_SAME },
    [K_STACK] = { "stack_id", "stack", OUT_INT, OUT_F_NO_TABLE },
    [K_BLOCKS] = { "blocks", "blocks", OUT_INT, 0 },
    [K_REQ] = { "requested", "requested", OUT_BYTES, 0 },
    [K_USABLE] = { "usable", "usable", OUT_BYTES, 0 },
    [K_SLACK] = { "slack", "slack", OUT_BYTES, 0 },
    [K_PCT] = { "slack_pct", "slack %", OUT_REAL, 0 },
    [K_PINNED] = { "pinned", "pinned", OUT_BYTES, 0 },
    [K_WASTE] = { "waste", "slack + pinned", OUT_BYTES, 0 },
};

/* "64 B", "4 KiB", "2 MiB": a power of two in binary units. */
static void pow2_name(unsigned k, char *buf, size_t len)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    snprintf(buf, len, "%llu %s", 1ull << (k % 10), unit[k / 10]);
}

/* Over pointers into the report's regions, which stay in heap and address
 * order for the map (report/frag_map.h) whichever is drawn first. */
static int by_region_size(const void *x, const void *y)
{
    const struct frag_region *a = *(const struct frag_region *const *)x,
                             *b = *(const struct frag_region *const *)y;
    uint64_t sa = a->hi - a->lo, sb = b->hi - b->lo;
    if (sa != sb)
        return sa > sb ? -1 : 1;
    return vh_cmp2(a->heap_id, b->heap_id, a->lo, b->lo);
}

static int emit_summary(const struct frag_run *c, const struct frag_opts *fo, struct out *o, const struct frag_report *r, uint64_t t,
                        const char *what, const struct frag_heap *fh, size_t nfh)
{
    const struct frag_totals *x = &r->t;
    struct out_val v[S_N];
    const char **names = calloc(nfh + 1, sizeof *names);
    char slack_note[64], sparse_note[64], rss_note[160], tb[32];
    int bounded = 0, rc;

    size_t nnames = 0;
    char more[48];
    if (!names)
        return -ENOMEM;
    size_t nheaps = 0;
    for (size_t i = 0; i < nfh; i++) {
        if (fh[i].region)          /* a part of a heap, named by none */
            continue;
        nheaps++;
        /* a Vere run has thousands of roads: name a few */
        if (nnames < 12)
            names[nnames++] = frag_run__heap_name(c, fh[i].id);
        bounded |= fh[i].size != 0;
    }
    if (nheaps > nnames) {
        snprintf(more, sizeof more, "(and %zu more)", nheaps - nnames);
        names[nnames++] = more;
    }
    for (int i = 0; i < S_N; i++)
        v[i] = OV_NULLV;
    v[S_AT] = OV_S(what);
    v[S_TIME] = OV_I(t);
    v[S_HEAPS] = (struct out_val){ .kind = OV_WORDS, .words = names, .nwords = nnames };
    v[S_PAGE] = OV_I(fo->page_size);
    v[S_BLOCKS] = OV_I(x->blocks);
    v[S_REQ] = OV_I(x->requested);
    v[S_USABLE] = OV_I(x->usable);
    v[S_SLACK] = OV_I(x->usable - x->requested);
    snprintf(slack_note, sizeof slack_note, "%.2f%% of usable", pct(x->usable - x->requested,
                                                                    x->usable));
    v[S_SLACK].note = slack_note;
    v[S_SLACK_PCT] = ov_pct(x->usable - x->requested, x->usable);
    v[S_PAGES] = OV_I(x->pages);
    v[S_PUSED] = OV_I(x->page_bytes_used);
    v[S_PUTIL] = ov_pct(x->page_bytes_used, x->pages * fo->page_size);
    v[S_PFREE] = OV_I(x->pages * fo->page_size - x->page_bytes_used);
    v[S_SPARSE] = OV_I(x->sparse_pages);
    snprintf(sparse_note, sizeof sparse_note, "less than %u%% used", fo->sparse_pct);
    v[S_SPARSE].note = sparse_note;
    v[S_PINNED] = OV_I(x->pinned);
    v[S_REGIONS] = OV_I(x->regions);
    v[S_FOOT] = OV_I(x->footprint);
    v[S_UTIL] = ov_pct(x->usable, x->footprint);
    v[S_FREE] = OV_I(x->free);
    v[S_HOLES] = OV_I(x->holes);
    v[S_LARGEST] = OV_I(x->largest);
    v[S_EXT] = ov_ext(x->largest, x->free);
    v[S_UNUSABLE] = OV_I(x->unusable);
    v[S_FIT64] = OV_I(x->fit[0]);
    v[S_FIT4K] = OV_I(x->fit[1]);
    v[S_FIT1M] = OV_I(x->fit[2]);
    v[S_GAPS] = OV_I(x->overhead);
    if (bounded)
        v[S_RECLAIM] = OV_I(x->reclaim);
    const struct frag_rss *rs = frag_run__rss_at(c, t);
    /* the mmap heap's mappings are not RSS until touched: RSS is set
     * against the other heaps' bytes, the mappings are said apart */
    uint64_t mapped = mapped_bytes(c, r), held = x->usable - mapped;
    v[S_MAPPED] = OV_I(mapped);
    if (rs) {
        v[S_RSS] = OV_I(rs->bytes);
        snprintf(rss_note, sizeof rss_note, "sampled at %s%s",
                 out__human_ns((int64_t)rs->time, tb, sizeof tb),
                 mapped ? "; set against the live usable less the mappings, resident "
                          "only where touched" : "");
        v[S_RSS].note = rss_note;
        v[S_RSS_TIME] = OV_I(rs->time);
        /* RSS is the process's resident memory: below the live bytes, the
         * chosen heap is an arena whose pages are not all resident (Vere's
         * demand-paged loom), and the difference says nothing about waste. */
        if (rs->bytes >= (int64_t)held)
            v[S_RSS_OVER] = OV_I(rs->bytes - (int64_t)held);
        else
            snprintf(rss_note, sizeof rss_note, "sampled at %s; below the live bytes: "
                     "not all of the heap's pages are resident",
                     out__human_ns((int64_t)rs->time, tb, sizeof tb));
    }
    rc = out__section(o, "frag", OUT_OBJECT, NULL, scols, S_N);
    if (!rc)
        rc = out__row(o, v, NULL);
    if (!rc && !x->blocks)
        rc = out__table_note(o, "nothing of the heaps chosen is live then; try --at peak, "
                                "--at TIME or --series");
    free(names);
    return rc;
}

static int emit_regions(const struct frag_run *c, const struct frag_opts *fo, int64_t limit,
                        struct out *o, const struct frag_report *r)
{
    size_t n = r->nregions, lim = limit ? (size_t)limit : n;
    const struct frag_region **by_size = malloc((n + 1) * sizeof *by_size);
    int rc = -ENOMEM;

    if (!by_size)
        return rc;
    for (size_t i = 0; i < n; i++)
        by_size[i] = &r->regions[i];
    if (n)
        qsort(by_size, n, sizeof *by_size, by_region_size);
    if ((rc = out__section(o, "regions", OUT_LIST, "regions, largest first:", rcols, R_N)))
        goto out;
    for (size_t i = 0; i < n && i < lim; i++) {
        const struct frag_region *g = by_size[i];
        struct out_val v[R_N];
        char range[64];
        snprintf(range, sizeof range, "0x%" PRIx64 "-0x%" PRIx64, g->lo, g->hi);
        v[R_HEAP] = OV_S(frag_run__heap_name(c, g->heap_id));
        v[R_KIND] = OV_S(g->bounded ? "heap bounds" : "blocks");
        v[R_LO] = OV_I(g->lo);
        v[R_HI] = OV_I(g->hi);
        v[R_RANGE] = ov_text(range);
        v[R_SIZE] = OV_I(g->hi - g->lo);
        v[R_BLOCKS] = OV_I(g->blocks);
        v[R_REQ] = OV_I(g->requested);
        v[R_USABLE] = OV_I(g->usable);
        v[R_FREE] = OV_I(g->free);
        v[R_HOLES] = OV_I(g->holes);
        v[R_LARGEST] = OV_I(g->largest);
        v[R_LARGEST_AT] = g->largest ? OV_I(g->largest_at) : OV_NULLV;
        v[R_EXT] = ov_ext(g->largest, g->free);
        v[R_SPAN] = g->bounded ? OV_I(g->span) : OV_NULLV;
        v[R_RECLAIM] = g->bounded ? OV_I(g->reclaim) : OV_I(0);
        v[R_PAGES] = OV_I(g->pages);
        v[R_PUSED] = OV_I(g->page_bytes_used);
        v[R_PUTIL] = ov_pct(g->page_bytes_used, g->pages * fo->page_size);
        v[R_SPARSE] = OV_I(g->sparse_pages);
        v[R_PINNED] = OV_I(g->pinned);
        v[R_GAPS] = OV_I(g->overhead);
        v[R_UNUSABLE] = OV_I(g->unusable);
        v[R_FIT64] = OV_I(g->fit[0]);
        v[R_FIT4K] = OV_I(g->fit[1]);
        v[R_FIT1M] = OV_I(g->fit[2]);
        if ((rc = out__row(o, v, NULL)))
            goto out;
    }
    if (lim < n)
        rc = out__table_note(o, "showing %zu of %zu regions (--limit)", lim, n);
out:
    free(by_size);
    return rc;
}

static int emit_holes(struct out *o, const struct frag_report *r)
{
    int rc = out__section(o, "hole_sizes", OUT_LIST, "holes by size:", hcols, H_N);
    for (unsigned k = 0; !rc && k < 64; k++) {
        const struct frag_hist *h = &r->hist[k];
        struct out_val v[H_N];
        char lo[24], hi[24], range[64];
        if (!h->holes)
            continue;
        pow2_name(k, lo, sizeof lo);
        if (k < 63) {
            pow2_name(k + 1, hi, sizeof hi);
            snprintf(range, sizeof range, "[%s, %s)", lo, hi);
        } else {
            snprintf(range, sizeof range, ">= %s", lo);
        }
        v[H_RANGE] = ov_text(range);
        v[H_MIN] = OV_I(1ull << k);
        v[H_MAX] = k < 63 ? OV_I((1ull << (k + 1)) - 1) : OV_NULLV;
        v[H_HOLES] = OV_I(h->holes);
        v[H_BYTES] = OV_I(h->bytes);
        v[H_PCT] = ov_pct(h->bytes, r->t.free);
        rc = out__row(o, v, NULL);
    }
    return rc;
}

static int emit_classes(struct out *o, const struct frag_report *r)
{
    int rc = out__section(o, "size_classes", OUT_LIST, "slack by requested size:", ccols, C_N);
    for (size_t i = 0; !rc && i < r->nclasses; i++) {
        const struct frag_class *k = &r->classes[i];
        struct out_val v[C_N];
        char lo[24], hi[24], range[64];
        unsigned b = k->hi == UINT64_MAX ? 64 : 63 - (unsigned)__builtin_clzll(k->hi);
        if (!k->lo) {
            pow2_name(b, hi, sizeof hi);
            snprintf(range, sizeof range, "[0, %s]", hi);
        } else if (b < 64) {
            pow2_name(b - 1, lo, sizeof lo);
            pow2_name(b, hi, sizeof hi);
            snprintf(range, sizeof range, "(%s, %s]", lo, hi);
        } else {
            snprintf(range, sizeof range, "> 8 EiB");
        }
        v[C_RANGE] = ov_text(range);
        v[C_MIN] = OV_I(k->lo);
        v[C_MAX] = k->hi > INT64_MAX ? OV_NULLV : OV_I(k->hi);
        v[C_BLOCKS] = OV_I(k->blocks);
        v[C_REQ] = OV_I(k->requested);
        v[C_USABLE] = OV_I(k->usable);
        v[C_SLACK] = OV_I(k->usable - k->requested);
        v[C_PCT] = ov_pct(k->usable - k->requested, k->usable);
        rc = out__row(o, v, NULL);
    }
    return rc;
}

static int emit_stacks(const struct frag_run *c, int64_t limit, int64_t depth, struct out *o,
                       const struct frag_report *r)
{
    struct vh_stacks *stk = NULL;
    size_t lim = limit ? (size_t)limit : r->nstacks;
    int rc = vh_stacks__open(c->cmd, c->db, depth, &stk);
    if (rc)
        return rc;
    rc = out__section(o, "stacks", OUT_LIST, "stacks by slack + pinned bytes:", kcols, K_N);
    for (size_t i = 0; !rc && i < r->nstacks && i < lim; i++) {
        const struct frag_stack *s = &r->stacks[i];
        struct out_val v[K_N];
        int err = 0;
        struct out_stack *st = vh_stacks__get(stk, s->stack_id, &err);
        if (!st) {
            vh_errorf(c->cmd, "reading stack %u failed", s->stack_id);
            rc = err ? err : -EIO;
            break;
        }
        v[K_HEAP_ID] = OV_I(s->heap_id);
        v[K_HEAP] = OV_S(frag_run__heap_name(c, s->heap_id));
        v[K_STACK] = OV_I(s->stack_id);
        v[K_BLOCKS] = OV_I(s->blocks);
        v[K_REQ] = OV_I(s->requested);
        v[K_USABLE] = OV_I(s->usable);
        v[K_SLACK] = OV_I(s->usable - s->requested);
        v[K_PCT] = ov_pct(s->usable - s->requested, s->usable);
        v[K_PINNED] = OV_I(s->pinned);
        v[K_WASTE] = OV_I(s->usable - s->requested + s->pinned);
        rc = out__row(o, v, st);
    }
    if (!rc && lim < r->nstacks)
        rc = out__table_note(o, "showing %zu of %zu stacks (--limit)", lim, r->nstacks);
    vh_stacks__free(stk);
    return rc;
}

enum {
    T_TIME, T_BLOCKS, T_LIVE, T_USABLE, T_SLACK, T_FOOT, T_FREE, T_LARGEST, T_EXT, T_UNUSABLE,
    T_PAGES, T_PAGE_BYTES, T_PUSED, T_PUTIL, T_SPARSE, T_PINNED, T_HOLES, T_REGIONS, T_RECLAIM, T_RSS,
    T_N
};

static const struct out_col tcols[T_N] = {
    [T_TIME] = { "time_ns", "time", OUT_NS, 0 },
    [T_BLOCKS] = { "blocks", "blocks", OUT_INT, 0 },
    [T_LIVE] = { "requested", "live", OUT_BYTES, 0 },
    [T_USABLE] = { "usable", "usable", OUT_BYTES, OUT_F_NO_TABLE },
    [T_SLACK] = { "slack", "slack", OUT_BYTES, 0 },
    [T_FOOT] = { "footprint", "footprint", OUT_BYTES, 0 },
    [T_FREE] = { "free", "free", OUT_BYTES, 0 },
    [T_LARGEST] = { "largest_hole", "largest", OUT_BYTES, 0 },
    [T_EXT] = { "external_fragmentation_pct", "ext frag %", OUT_REAL, 0 },
    [T_UNUSABLE] = { "unusable", "unusable", OUT_BYTES, 0 },
    [T_PAGES] = { "pages", "pages", OUT_INT, OUT_F_NO_TABLE },
    [T_PAGE_BYTES] = { "page_bytes", "touched", OUT_BYTES, 0 },
    [T_PUSED] = { "page_bytes_used", "page bytes used", OUT_BYTES, OUT_F_NO_TABLE },
    [T_PUTIL] = { "page_utilization_pct", "page util %", OUT_REAL, 0 },
    [T_SPARSE] = { "sparse_pages", "sparse", OUT_INT, 0 },
    [T_PINNED] = { "pinned", "pinned", OUT_BYTES, 0 },
    [T_HOLES] = { "holes", "holes", OUT_INT, OUT_F_NO_TABLE },
    [T_REGIONS] = { "regions", "regions", OUT_INT, OUT_F_NO_TABLE },
    [T_RECLAIM] = { "reclaim", "reclaim", OUT_BYTES, OUT_F_HIDE_ZERO },
    [T_RSS] = { "rss", "RSS", OUT_BYTES, 0 },
};

static int emit_series(const struct frag_run *c, const struct frag_opts *fo,
                       const struct frag_point *pts, size_t npts, struct out *o)
{
    int rc;
    if ((rc = out__section(o, "series", OUT_LIST, NULL, tcols, T_N)))
        return rc;
    int bounded = 0;
    for (size_t i = 0; i < c->nh; i++)
        bounded |= c->h[i].size != 0;
    for (size_t i = 0; i < npts; i++) {
        const struct frag_totals *t = &pts[i].t;
        struct out_val v[T_N];
        v[T_TIME] = OV_I(pts[i].time);
        v[T_BLOCKS] = OV_I(t->blocks);
        v[T_LIVE] = OV_I(t->requested);
        v[T_USABLE] = OV_I(t->usable);
        v[T_SLACK] = OV_I(t->usable - t->requested);
        v[T_FOOT] = OV_I(t->footprint);
        v[T_FREE] = OV_I(t->free);
        v[T_LARGEST] = OV_I(t->largest);
        v[T_EXT] = ov_ext(t->largest, t->free);
        v[T_UNUSABLE] = OV_I(t->unusable);
        v[T_PAGES] = OV_I(t->pages);
        v[T_PAGE_BYTES] = OV_I(t->pages * fo->page_size);
        v[T_PUSED] = OV_I(t->page_bytes_used);
        v[T_PUTIL] = ov_pct(t->page_bytes_used, t->pages * fo->page_size);
        v[T_SPARSE] = OV_I(t->sparse_pages);
        v[T_PINNED] = OV_I(t->pinned);
        v[T_HOLES] = OV_I(t->holes);
        v[T_REGIONS] = OV_I(t->regions);
        v[T_RECLAIM] = bounded ? OV_I(t->reclaim) : OV_I(0);
        v[T_RSS] = pts[i].rss >= 0 ? OV_I(pts[i].rss) : OV_NULLV;
        if ((rc = out__row(o, v, NULL)))
            return rc;
    }
    return 0;
}

/* The rows' one failure not said where it happens. */
static int oom_said(const struct frag_run *c, int rc)
{
    if (rc == -ENOMEM)
        vh_errorf(c->cmd, "out of memory");
    return rc;
}

static int emit_misses(const struct frag_misses *miss, struct out *o)
{
    static const struct out_col cols[] = {
        { "allocations_onto_live", "allocations onto a block the replay held", OUT_INT, 0 },
        { "unknown_blocks", "frees, resizes, moves of a block it did not hold", OUT_INT, 0 },
    };
    struct out_val v[] = { OV_I(miss->onto_live), OV_I(miss->unknown) };
    int rc;
    if (!miss->onto_live && !miss->unknown)
        return 0;
    if ((rc = out__section(o, "replay", OUT_OBJECT, "events the replay could not apply",
                           cols, 2)))
        return rc;
    return out__row(o, v, NULL);
}

int frag_rows__series(const struct frag_run *c, const struct frag_opts *fo,
                      const struct frag_point *pts, size_t npts,
                      const struct frag_misses *miss, struct out *o)
{
    int rc = emit_misses(miss, o);
    return oom_said(c, rc ? rc : emit_series(c, fo, pts, npts, o));
}

int frag_rows__moment(const struct frag_run *c, const struct frag_opts *fo,
                      const struct frag_moment *m, int64_t limit, int64_t depth, struct out *o)
{
    int rc;
    if ((rc = emit_summary(c, fo, o, m->r, m->t, m->what, m->fh, m->nfh)) ||
        (rc = emit_regions(c, fo, limit, o, m->r)) || (rc = emit_holes(o, m->r)) ||
        (rc = emit_classes(o, m->r)) || (rc = emit_stacks(c, limit, depth, o, m->r)))
        return oom_said(c, rc);
    return 0;
}
