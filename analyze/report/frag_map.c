/* frag_map.c — `frag --map`: one heap's address space at one moment as an
 * SVG picture (frag_map.h). svg.h draws charts over an x axis; a map is a grid
 * of equal cells instead, so it is drawn here, with svg.h's text escaping.
 * Cells of the same colour and shade in a row merge into one rectangle, so
 * the document stays small whatever the number of blocks. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/report/frag_map.h"
#include "analyze/render/output.h"
#include "analyze/render/svg.h"
#include "analyze/util/cmp.h"

#define COLS 512                  /* cells per row                           */
#define CELL 2                    /* pixels per cell                         */
#define MAX_ROWS 320              /* rows of cells in all bands together     */
#define MAX_BANDS 24              /* regions drawn; the largest are kept     */
#define MAX_PIECES 64             /* per band: drawn runs and collapsed holes */
#define LEFT 16
#define TOP 64
#define LABEL_H 16
#define BREAK_H 14                /* a collapsed hole                        */
#define BAND_GAP 10
#define LEGEND_W 360
#define FREE_COLOR "#e4e4e4"
#define HOLE_COLOR "#f2b8b8"      /* cells of the largest hole               */
#define BREAK_COLOR "#b0b0b0"
#define NO_KEY 255

static const double shade[4] = { 0, 0.35, 0.65, 1.0 };

/* Part of a region: drawn as cells, or (a hole too big to be worth the
 * rows) one labelled break line. */
struct piece {
    uint64_t lo, hi;
    int collapsed;
    uint64_t ncells;
    uint64_t *occ;
    uint8_t *key;
    int rows;
};

struct band {
    const struct frag_region *r;
    struct piece p[MAX_PIECES];
    int np;
};

/* Accumulates one cell's bytes per key until the walk leaves the cell. */
struct acc {
    struct piece *p;
    uint64_t cell;
    int have;
    uint64_t by_key[FRAG_MAP_MAX_KEYS];
};

static void acc_flush(struct acc *a)
{
    uint64_t sum = 0, best = 0;
    uint8_t k = NO_KEY;
    if (!a->have)
        return;
    for (int i = 0; i < FRAG_MAP_MAX_KEYS; i++) {
        sum += a->by_key[i];
        if (a->by_key[i] > best) {
            best = a->by_key[i];
            k = (uint8_t)i;
        }
    }
    a->p->occ[a->cell] = sum;
    a->p->key[a->cell] = k;
    a->have = 0;
    memset(a->by_key, 0, sizeof a->by_key);
}

static void acc_add(struct acc *a, uint64_t cell, uint8_t key, uint64_t bytes)
{
    if (a->have && a->cell != cell)
        acc_flush(a);
    a->cell = cell;
    a->have = 1;
    a->by_key[key % FRAG_MAP_MAX_KEYS] += bytes;
}

/* The first block ending after `at`. */
static size_t first_after(const struct frag_map *m, uint64_t at)
{
    return VH_PARTITION_POINT(i, m->nblocks, m->blocks[i].addr + m->blocks[i].usable <= at);
}

/* Splits a region at its holes of at least `big` bytes. */
static void make_pieces(struct band *bd, const struct frag_map *m, uint64_t big)
{
    const struct frag_region *r = bd->r;
    uint64_t prev = r->lo, start = r->lo;

    bd->np = 0;
    for (size_t i = first_after(m, r->lo); i <= m->nblocks; i++) {
        int last = i == m->nblocks || m->blocks[i].addr >= r->hi;
        uint64_t next = last ? r->hi : m->blocks[i].addr;
        if (next > prev && next - prev >= big && bd->np + 2 < MAX_PIECES) {
            if (prev > start)
                bd->p[bd->np++] = (struct piece){ .lo = start, .hi = prev };
            bd->p[bd->np++] = (struct piece){ .lo = prev, .hi = next, .collapsed = 1 };
            start = next;
        }
        if (last)
            break;
        uint64_t e = m->blocks[i].addr + m->blocks[i].usable;
        if (e > prev)
            prev = e > r->hi ? r->hi : e;
    }
    if (r->hi > start)
        bd->p[bd->np++] = (struct piece){ .lo = start, .hi = r->hi };
}

static void fill_piece(struct piece *pc, const struct frag_map *m, uint64_t bpc)
{
    struct acc a = { .p = pc };
    for (size_t i = first_after(m, pc->lo); i < m->nblocks && m->blocks[i].addr < pc->hi; i++) {
        const struct vh_block *b = &m->blocks[i];
        uint64_t s = b->addr < pc->lo ? pc->lo : b->addr;
        uint64_t e = b->addr + b->usable > pc->hi ? pc->hi : b->addr + b->usable;
        uint8_t k = m->key ? m->key[i] : 0;
        if (e <= s)
            continue;
        uint64_t c0 = (s - pc->lo) / bpc, c1 = (e - 1 - pc->lo) / bpc;
        if (c0 == c1) {
            acc_add(&a, c0, k, e - s);
            continue;
        }
        acc_add(&a, c0, k, pc->lo + (c0 + 1) * bpc - s);
        acc_flush(&a);
        for (uint64_t c = c0 + 1; c < c1; c++) {
            pc->occ[c] = bpc;
            pc->key[c] = k;
        }
        acc_add(&a, c1, k, e - (pc->lo + c1 * bpc));
    }
    acc_flush(&a);
}

/* 0 empty, 3 full; 4 = empty and inside the largest hole. */
static int level_of(const struct piece *pc, uint64_t c, uint64_t bpc, uint64_t hlo, uint64_t hhi)
{
    uint64_t start = pc->lo + c * bpc;
    uint64_t size = pc->hi - start < bpc ? pc->hi - start : bpc;
    uint64_t occ = pc->occ[c] > size ? size : pc->occ[c];
    if (!occ)
        return start >= hlo && start + size <= hhi ? 4 : 0;
    if (occ * 3 <= size)
        return 1;
    return occ * 3 <= size * 2 ? 2 : 3;
}

static void put_text(FILE *f, double x, double y, const char *attrs, const char *s)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
    svg_put_text(f, s);
    fputs("</text>\n", f);
}

/* At most `max` characters of s (whole UTF-8 sequences), "…" when cut. */
static void shorten(const char *s, size_t max, char *out, size_t outlen)
{
    size_t n = 0, i = 0, chars = 0;
    if (!s)
        s = "";
    while (s[i] && chars < max) {
        size_t len = 1;
        while ((s[i + len] & 0xc0) == 0x80)
            len++;
        i += len;
        chars++;
    }
    n = i < outlen - 4 ? i : outlen - 4;
    memcpy(out, s, n);
    if (s[i])
        memcpy(out + n, "\xe2\x80\xa6", 4);
    else
        out[n] = 0;
}

static int by_span(const void *x, const void *y)
{
    const struct band *a = x, *b = y;
    uint64_t sa = a->r->hi - a->r->lo, sb = b->r->hi - b->r->lo;
    return sa != sb ? (sa > sb ? -1 : 1) : (a->r->lo > b->r->lo) - (a->r->lo < b->r->lo);
}

static int by_addr(const void *x, const void *y)
{
    const struct band *a = x, *b = y;
    return vh_cmp(a->r->lo, b->r->lo);
}

static double band_height(const struct band *bd)
{
    double h = LABEL_H + BAND_GAP;
    for (int i = 0; i < bd->np; i++)
        h += bd->p[i].collapsed ? BREAK_H : bd->p[i].rows * CELL;
    return h;
}

static void draw_cells(FILE *f, const struct piece *pc, const struct frag_map *m, uint64_t bpc,
                       double y, uint64_t hlo, uint64_t hhi)
{
    uint64_t full = pc->ncells / COLS, rest = pc->ncells % COLS;
    if (full)
        fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%" PRIu64 "\" fill=\"%s\"/>\n",
                LEFT, y, COLS * CELL, full * CELL, FREE_COLOR);
    if (rest)
        fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%" PRIu64 "\" height=\"%d\" fill=\"%s\"/>\n",
                LEFT, y + (double)(full * CELL), rest * CELL, CELL, FREE_COLOR);
    for (int row = 0; row < pc->rows; row++) {
        uint64_t c = (uint64_t)row * COLS, end = c + COLS < pc->ncells ? c + COLS : pc->ncells;
        while (c < end) {
            int lv = level_of(pc, c, bpc, hlo, hhi);
            uint8_t k = pc->key[c];
            uint64_t run = c + 1;
            while (run < end && level_of(pc, run, bpc, hlo, hhi) == lv &&
                   (lv == 4 || pc->key[run] == k))
                run++;
            uint64_t x = LEFT + (c - (uint64_t)row * COLS) * CELL;
            if (lv == 4)
                fprintf(f, "<rect x=\"%" PRIu64 "\" y=\"%.1f\" width=\"%" PRIu64 "\" height=\"%d\" "
                           "fill=\"%s\"/>\n",
                        x, y + row * CELL, (run - c) * CELL, CELL, HOLE_COLOR);
            else if (lv && k < m->nkeys)
                fprintf(f, "<rect x=\"%" PRIu64 "\" y=\"%.1f\" width=\"%" PRIu64 "\" height=\"%d\" "
                           "fill=\"%s\" fill-opacity=\"%.2f\"/>\n",
                        x, y + row * CELL, (run - c) * CELL, CELL, m->keys[k].color, shade[lv]);
            c = run;
        }
    }
}

static void draw_band(FILE *f, const struct band *bd, const struct frag_map *m, uint64_t bpc,
                      double y)
{
    const struct frag_region *r = bd->r;
    char label[320], a[32], b[32], c[32], d[32];
    uint64_t hlo = r->largest ? r->largest_at : 0, hhi = r->largest ? hlo + r->largest : 0;

    snprintf(label, sizeof label,
             "0x%" PRIx64 " - 0x%" PRIx64 "  %s%s, %" PRIu64 " blocks, %s usable, %s free, "
             "largest hole %s",
             r->lo, r->hi, out__human_bytes((int64_t)(r->hi - r->lo), a, sizeof a),
             r->bounded ? " (heap bounds)" : "", r->blocks,
             out__human_bytes((int64_t)r->usable, b, sizeof b),
             out__human_bytes((int64_t)r->free, c, sizeof c),
             out__human_bytes((int64_t)r->largest, d, sizeof d));
    put_text(f, LEFT, y + 12, "font-size=\"11.5\" fill=\"#333\"", label);
    y += LABEL_H;
    for (int i = 0; i < bd->np; i++) {
        const struct piece *pc = &bd->p[i];
        if (!pc->collapsed) {
            draw_cells(f, pc, m, bpc, y, hlo, hhi);
            y += pc->rows * CELL;
            continue;
        }
        /* a break: dashed line, and what was left out */
        int largest = pc->lo == hlo && pc->hi == hhi;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"2\" stroke-dasharray=\"6 4\"/>\n",
                LEFT, y + BREAK_H / 2.0, LEFT + COLS * CELL, y + BREAK_H / 2.0,
                largest ? "#d62728" : BREAK_COLOR);
        snprintf(label, sizeof label, " %s free, not drawn%s (0x%" PRIx64 " - 0x%" PRIx64 ") ",
                 out__human_bytes((int64_t)(pc->hi - pc->lo), a, sizeof a),
                 largest ? ": the largest hole" : "", pc->lo, pc->hi);
        fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%zu\" height=\"%d\" fill=\"#fff\"/>\n",
                LEFT + 40, y, strlen(label) * 6 + 8, BREAK_H);
        put_text(f, LEFT + 44, y + 11, "font-size=\"11\" fill=\"#444\"", label);
        y += BREAK_H;
    }
}

static void draw_legend(FILE *f, const struct frag_map *m, uint64_t bpc)
{
    double x = LEFT + COLS * CELL + 24, y = TOP;
    char buf[160], b[32];

    put_text(f, x, y + 4, "font-size=\"13\" font-weight=\"bold\" fill=\"#222\"", "Legend");
    y += 16;
    for (size_t i = 0; i < m->nkeys; i++) {
        const struct frag_map_key *k = &m->keys[i];
        fputs("<g>", f);
        if (k->tooltip) {
            fputs("<title>", f);
            svg_put_text(f, k->tooltip);
            fputs("</title>", f);
        }
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\"/>\n", x,
                y, k->color);
        shorten(k->label, 44, buf, sizeof buf);
        put_text(f, x + 22, y + 11, "font-size=\"12.5\" fill=\"#222\"", buf);
        if (k->note) {
            shorten(k->note, 52, buf, sizeof buf);
            put_text(f, x + 22, y + 25, "font-size=\"11\" fill=\"#666\"", buf);
            y += 14;
        }
        fputs("</g>\n", f);
        y += 22;
    }
    y += 6;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\"/>\n", x, y,
            FREE_COLOR);
    put_text(f, x + 22, y + 11, "font-size=\"12.5\" fill=\"#222\"", "free (no live block)");
    y += 22;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\"/>\n", x, y,
            HOLE_COLOR);
    put_text(f, x + 22, y + 11, "font-size=\"12.5\" fill=\"#222\"", "the largest hole of a region");
    y += 22;
    for (int lv = 1; lv <= 3; lv++)
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"4.6\" height=\"14\" fill=\"#444\" "
                   "fill-opacity=\"%.2f\"/>\n",
                x + (lv - 1) * 4.7, y, shade[lv]);
    put_text(f, x + 22, y + 11, "font-size=\"12.5\" fill=\"#222\"",
             "cell used up to 1/3, 2/3, full");
    y += 22;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
               "stroke-width=\"2\" stroke-dasharray=\"6 4\"/>\n",
            x, y + 7, x + 14, y + 7, BREAK_COLOR);
    put_text(f, x + 22, y + 11, "font-size=\"12.5\" fill=\"#222\"", "a big hole, not drawn");
    y += 28;
    snprintf(buf, sizeof buf, "one cell = %s (%" PRIu64 " B), %d per row",
             out__human_bytes((int64_t)bpc, b, sizeof b), bpc, COLS);
    put_text(f, x, y, "font-size=\"11.5\" fill=\"#555\"", buf);
}

int frag_map__write(const struct frag_map *m, const char *path)
{
    struct band *bands = NULL;
    size_t nb = m->nregions;
    uint64_t span = 0, drawn = 0, bpc = 1, want, big;
    FILE *f = NULL;
    int rc = -ENOMEM;
    double y, height;

    if (m->nkeys > FRAG_MAP_MAX_KEYS)
        return -EINVAL;
    if (!(bands = calloc(nb ? nb : 1, sizeof *bands)))
        return -ENOMEM;
    for (size_t i = 0; i < nb; i++)
        bands[i].r = &m->regions[i];
    qsort(bands, nb, sizeof *bands, by_span);
    if (nb > MAX_BANDS)
        nb = MAX_BANDS;
    qsort(bands, nb, sizeof *bands, by_addr);
    /* holes above 1/32 of everything (and 32 KiB) become breaks */
    for (size_t i = 0; i < nb; i++)
        span += bands[i].r->hi - bands[i].r->lo;
    big = span / 32 > (32u << 10) ? span / 32 : 32u << 10;
    for (size_t i = 0; i < nb; i++) {
        make_pieces(&bands[i], m, big);
        for (int k = 0; k < bands[i].np; k++)
            if (!bands[i].p[k].collapsed)
                drawn += bands[i].p[k].hi - bands[i].p[k].lo;
    }
    want = drawn / ((uint64_t)COLS * MAX_ROWS) + 1;
    while (bpc < want)
        bpc *= 2;
    height = TOP;
    for (size_t i = 0; i < nb; i++) {
        for (int k = 0; k < bands[i].np; k++) {
            struct piece *pc = &bands[i].p[k];
            if (pc->collapsed)
                continue;
            pc->ncells = (pc->hi - pc->lo + bpc - 1) / bpc;
            pc->rows = (int)((pc->ncells + COLS - 1) / COLS);
            if (!(pc->occ = calloc(pc->ncells, sizeof *pc->occ)) || !(pc->key = malloc(pc->ncells)))
                goto out;
            memset(pc->key, NO_KEY, pc->ncells);
            fill_piece(pc, m, bpc);
        }
        height += band_height(&bands[i]);
    }
    if (!(f = fopen(path, "w"))) {
        rc = -errno;
        goto out;
    }
    double lh = TOP + 22.0 * (double)(m->nkeys + 5) + 14.0 * (double)m->nkeys + 40;
    if (lh > height)
        height = lh;
    height += m->nregions > nb ? 36 : 20;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
               "viewBox=\"0 0 %d %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
            LEFT + COLS * CELL + 24 + LEGEND_W, height, LEFT + COLS * CELL + 24 + LEGEND_W,
            height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
    put_text(f, LEFT, 26, "font-size=\"17\" font-weight=\"bold\" fill=\"#222\"",
             m->title ? m->title : "heap map");
    if (m->subtitle)
        put_text(f, LEFT, 47, "font-size=\"12.5\" fill=\"#555\"", m->subtitle);
    y = TOP;
    if (!nb)
        put_text(f, LEFT, y + 14, "font-size=\"13\" fill=\"#555\"",
                 "no region: nothing was live in this heap then");
    for (size_t i = 0; i < nb; i++) {
        draw_band(f, &bands[i], m, bpc, y);
        y += band_height(&bands[i]);
    }
    if (m->nregions > nb) {
        char note[96];
        snprintf(note, sizeof note, "%zu smaller regions not drawn", m->nregions - nb);
        put_text(f, LEFT, y + 4, "font-size=\"11.5\" fill=\"#555\"", note);
    }
    draw_legend(f, m, bpc);
    fputs("</svg>\n", f);
    rc = ferror(f) ? -EIO : 0;
out:
    if (f && fclose(f) && !rc)
        rc = -EIO;
    for (size_t i = 0; bands && i < m->nregions; i++)
        for (int k = 0; k < bands[i].np; k++) {
            free(bands[i].p[k].occ);
            free(bands[i].p[k].key);
        }
    free(bands);
    return rc;
}
