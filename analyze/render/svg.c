/* svg.c — the chart writer of svg.h. The layout is fixed and simple: title
 * and subtitle on top, the plot with its axes on the left, the legend in a
 * column on the right. Text sizes assume a browser's sans-serif font; widths
 * are estimated at 0.6 em per character, which errs on the wide side so that
 * labels never overlap. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/render/svg.h"
#include "analyze/util/json.h"

#define LEGEND_W 300            /* the legend column, when there is a legend */
#define MARK_ROWS 3             /* rows of mark labels before one is dropped */
#define EM 0.6                  /* estimated glyph width, in font sizes: wide
                                   enough for capitals and digits          */
#define EM_LOWER 0.56           /* ... for names, mostly lower case         */

struct series {
    enum svg_style style;
    char *label, *note, *tooltip;
    char color[16];
    int dashed, no_legend, no_scale;
    double *y;
};

struct mark {
    double x;
    char *label;
};

struct svg_chart {
    char *title, *subtitle, *x_title, *y_title;
    enum svg_axis x_axis, y_axis;
    int width, height;
    double *x;
    size_t n;
    struct series *s;
    size_t ns, next_color;
    struct mark *m;
    size_t nm;
};

/* Distinct hues first (Tableau 10 without its grey, which "other" and
 * neutral lines use), then three more that stay apart from those. */
static const char *const palette[] = {
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#17becf", "#bcbd22", "#1f3b73",
};

const char *svg_palette(size_t i)
{
    return palette[i % (sizeof palette / sizeof palette[0])];
}

/* ---- text ------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s, or 0 if s[0] does not start one
 * (util/json.h's rule, and U+FFFE/U+FFFF are not valid XML text either). */
static size_t utf8_len(const unsigned char *s)
{
    size_t n = vh_utf8_len(s);
    if (n == 3 && s[0] == 0xef && s[1] == 0xbf && (s[2] == 0xbe || s[2] == 0xbf))
        return 0;
    return n;
}

void svg_put_text(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    while (*s) {
        size_t n = utf8_len(s);
        if (!n) {
            fputc('?', f);
            s++;
            continue;
        }
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            if (*s < 0x20 && *s != '\t' && *s != '\n' && *s != '\r')
                break;                      /* not allowed in XML 1.0 */
            fwrite(s, 1, n, f);
        }
        s += n;
    }
}

/* Characters (code points; a stray byte counts as one) in s. */
static size_t text_chars(const char *str)
{
    size_t k = 0;
    for (const unsigned char *s = (const unsigned char *)str; *s; k++) {
        size_t n = utf8_len(s);
        s += n ? n : 1;
    }
    return k;
}

/* Writes s cut to at most max characters, the last being an ellipsis when
 * cut. */
static void put_fit(FILE *f, const char *str, size_t max)
{
    if (text_chars(str) <= max) {
        svg_put_text(f, str);
        return;
    }
    const unsigned char *s = (const unsigned char *)str;
    size_t k = 0, bytes = 0;
    while (s[bytes] && k + 1 < max) {
        size_t n = utf8_len(s + bytes);
        bytes += n ? n : 1;
        k++;
    }
    char *cut = strndup(str, bytes);
    svg_put_text(f, cut ? cut : "");
    free(cut);
    fputs("\xe2\x80\xa6", f);                /* … */
}

/* ---- building ---------------------------------------------------------------- */

static char *dup_or_null(const char *s, int *oom)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = 1;
    return d;
}

struct svg_chart *svg_chart__new(const struct svg_chart_opts *o)
{
    struct svg_chart *c = calloc(1, sizeof *c);
    int oom = 0;
    if (!c)
        return NULL;
    c->title = dup_or_null(o->title, &oom);
    c->subtitle = dup_or_null(o->subtitle, &oom);
    c->x_title = dup_or_null(o->x_title, &oom);
    c->y_title = dup_or_null(o->y_title, &oom);
    c->x_axis = o->x_axis;
    c->y_axis = o->y_axis;
    c->width = o->width > 0 ? o->width : 1200;
    c->height = o->height > 0 ? o->height : 600;
    if (oom) {
        svg_chart__free(c);
        return NULL;
    }
    return c;
}

int svg_chart__set_x(struct svg_chart *c, const double *x, size_t n)
{
    if (c->x || !n)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || (i && x[i] < x[i - 1]))
            return -EINVAL;
    if (!(c->x = malloc(n * sizeof *x)))
        return -ENOMEM;
    memcpy(c->x, x, n * sizeof *x);
    c->n = n;
    return 0;
}

int svg_chart__add(struct svg_chart *c, const struct svg_series *in)
{
    if (!c->x || !in->y)
        return -EINVAL;
    struct series *ns = realloc(c->s, (c->ns + 1) * sizeof *ns);
    if (!ns)
        return -ENOMEM;
    c->s = ns;
    struct series *s = &c->s[c->ns];
    int oom = 0;
    memset(s, 0, sizeof *s);
    s->style = in->style;
    s->dashed = in->dashed;
    s->no_legend = in->no_legend;
    s->no_scale = in->no_scale;
    s->label = dup_or_null(in->label ? in->label : "", &oom);
    s->note = dup_or_null(in->note, &oom);
    s->tooltip = dup_or_null(in->tooltip, &oom);
    /* a colour goes into an attribute unescaped: only "#" and hex digits */
    int ok = in->color && in->color[0] == '#' && strlen(in->color) < sizeof s->color &&
             strspn(in->color + 1, "0123456789abcdefABCDEF") == strlen(in->color) - 1;
    snprintf(s->color, sizeof s->color, "%s", ok ? in->color : svg_palette(c->next_color++));
    if (!oom && (s->y = malloc(c->n * sizeof *s->y)))
        memcpy(s->y, in->y, c->n * sizeof *s->y);
    if (oom || !s->y) {
        free(s->label);
        free(s->note);
        free(s->tooltip);
        free(s->y);
        return -ENOMEM;
    }
    c->ns++;
    return 0;
}

int svg_chart__add_mark(struct svg_chart *c, double x, const char *label)
{
    if (!isfinite(x))
        return -EINVAL;
    struct mark *nm = realloc(c->m, (c->nm + 1) * sizeof *nm);
    if (!nm)
        return -ENOMEM;
    c->m = nm;
    if (!(c->m[c->nm].label = strdup(label ? label : "")))
        return -ENOMEM;
    c->m[c->nm++].x = x;
    return 0;
}

void svg_chart__free(struct svg_chart *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->ns; i++) {
        free(c->s[i].label);
        free(c->s[i].note);
        free(c->s[i].tooltip);
        free(c->s[i].y);
    }
    for (size_t i = 0; i < c->nm; i++)
        free(c->m[i].label);
    free(c->s);
    free(c->m);
    free(c->x);
    free(c->title);
    free(c->subtitle);
    free(c->x_title);
    free(c->y_title);
    free(c);
}

/* ---- scales and ticks ------------------------------------------------------- */

struct scale {
    double lo, hi;          /* data range shown                              */
    double p0, p1;          /* pixel positions of lo and hi                  */
};

static double px(const struct scale *s, double v)
{
    return s->p0 + (v - s->lo) / (s->hi - s->lo) * (s->p1 - s->p0);
}

/* 1, 2 or 5 times a power of ten, at least v. */
static double nice_step(double v)
{
    if (!(v > 0))
        return 1;
    double e = pow(10, floor(log10(v)));
    double f = v / e;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * e;
}

/* The unit ticks are shown in: the largest that the largest tick reaches. */
static void tick_unit(enum svg_axis axis, double maxabs, double step, double *div,
                      const char **suffix)
{
    static const double pow1000[] = { 1, 1e3, 1e6, 1e9, 1e12 };
    static const char *const bytes[] = { " B", " KB", " MB", " GB", " TB" };
    static const char *const num[] = { "", "k", "M", "G", "T" };
    static const double tdiv[] = { 1, 1e3, 1e6, 1e9 };
    static const char *const tsuf[] = { "ns", "\xc2\xb5s", "ms", "s" };
    int k = 0;
    if (axis == SVG_AXIS_TIME_NS) {
        while (k < 3 && maxabs >= tdiv[k + 1])
            k++;
        *div = tdiv[k];
        *suffix = tsuf[k];
        return;
    }
    while (k < 4 && maxabs >= pow1000[k + 1])
        k++;
    /* counts: whole numbers where the step allows (500 1000 1500, not
     * 0.5k 1.0k 1.5k) */
    while (axis == SVG_AXIS_NUMBER && k > 0 && step < pow1000[k])
        k--;
    *div = pow1000[k];
    *suffix = axis == SVG_AXIS_BYTES ? bytes[k] : num[k];
}

/* A tick label: |v| in the axis unit with the decimals the step needs. */
static void tick_label(enum svg_axis axis, double v, double step, double maxabs, char *buf,
                       size_t len)
{
    double div;
    const char *suffix;
    if (fabs(v) < step * 1e-9) {
        snprintf(buf, len, "0");
        return;
    }
    tick_unit(axis, maxabs, step, &div, &suffix);
    double s = step / div;
    /* Clamped as a double: s may underflow to 0 (log10 -> inf), and
     * converting inf or NaN to int is undefined. */
    double want = s >= 1 ? 0 : ceil(-log10(s) - 1e-9);
    int dec = want < 6 ? (int)want : 6;
    snprintf(buf, len, "%.*f%s", dec, fabs(v) / div, suffix);
}

/* ---- writing ---------------------------------------------------------------- */

static void text_el(FILE *f, double x, double y, const char *attrs, const char *s)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
    svg_put_text(f, s);
    fputs("</text>\n", f);
}

/* One axis' ticks from `first`, `step` apart, up to the scale's end: the
 * y axis (`vertical`) as grid lines from x = a to b with the labels left of
 * a; the x axis as 5-pixel marks below y = a with the labels under them. */
static void write_ticks(FILE *f, enum svg_axis axis, const struct scale *s, double first,
                        double step, int vertical, double a, double b)
{
    double max_abs = fmax(fabs(s->lo), fabs(s->hi));
    fprintf(f, "<g class=\"%s\" font-size=\"12\" fill=\"#444\" text-anchor=\"%s\">\n",
            vertical ? "y-axis" : "x-axis", vertical ? "end" : "middle");
    /* Ticks by index, at most 1000: where |v| dwarfs the step (times near
     * 2^64 ns a few ns apart), v += step would never move. */
    for (int k = 0; k <= 1000; k++) {
        double v = first + k * step;
        char lab[48];
        if (v > s->hi + step * 1e-6)
            break;
        double p = px(s, v);
        tick_label(axis, v, step, max_abs, lab, sizeof lab);
        if (vertical) {
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>",
                    a, p, b, p, fabs(v) < step * 1e-6 ? "#999" : "#e4e4e4");
            text_el(f, a - 7, p + 4, "", lab);
        } else {
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>",
                    p, a, p, a + 5);
            text_el(f, p, a + 19, "", lab);
        }
    }
    fputs("</g>\n", f);
}

static double val(const double *y, size_t i)
{
    return isfinite(y[i]) ? y[i] : 0;
}

/* The y range: stacked areas and bars add up, lines stand alone. */
static void y_range(const struct svg_chart *c, double *lo, double *hi)
{
    *lo = 0;
    *hi = 0;
    for (size_t i = 0; i < c->n; i++) {
        double area = 0, up = 0, down = 0;
        for (size_t k = 0; k < c->ns; k++) {
            const struct series *s = &c->s[k];
            double v = val(s->y, i);
            if (s->style == SVG_AREA)
                area += v > 0 ? v : 0;
            else if (s->style == SVG_BARS && i > 0)
                *(v >= 0 ? &up : &down) += v;
            else if (s->style == SVG_LINE && !s->no_scale && isfinite(s->y[i])) {
                if (s->y[i] > *hi)
                    *hi = s->y[i];
                if (s->y[i] < *lo)
                    *lo = s->y[i];
            }
        }
        if (area > *hi)
            *hi = area;
        if (up > *hi)
            *hi = up;
        if (down < *lo)
            *lo = down;
    }
}

/* A series' tooltip (or its label) as its path's <title>. */
static void put_title(FILE *f, const struct series *s)
{
    if (s->tooltip || s->label) {
        fputs("<title>", f);
        svg_put_text(f, s->tooltip ? s->tooltip : s->label);
        fputs("</title>", f);
    }
}

static void write_areas(const struct svg_chart *c, FILE *f, const struct scale *xs,
                        const struct scale *ys)
{
    double *base = calloc(c->n, sizeof *base);
    if (!base)
        return;
    for (size_t k = 0; k < c->ns; k++) {
        const struct series *s = &c->s[k];
        if (s->style != SVG_AREA)
            continue;
        fprintf(f, "<path fill=\"%s\" fill-opacity=\"0.88\" stroke=\"%s\" stroke-width=\"0.8\" d=\"",
                s->color, s->color);
        for (size_t i = 0; i < c->n; i++) {
            double v = val(s->y, i);
            fprintf(f, "%c%.1f,%.1f", i ? 'L' : 'M', px(xs, c->x[i]),
                    px(ys, base[i] + (v > 0 ? v : 0)));
        }
        for (size_t i = c->n; i-- > 0;)
            fprintf(f, "L%.1f,%.1f", px(xs, c->x[i]), px(ys, base[i]));
        fputs("Z\">", f);
        put_title(f, s);
        fputs("</path>\n", f);
        for (size_t i = 0; i < c->n; i++) {
            double v = val(s->y, i);
            base[i] += v > 0 ? v : 0;
        }
    }
    free(base);
}

static void write_bars(const struct svg_chart *c, FILE *f, const struct scale *xs,
                       const struct scale *ys)
{
    double *up = calloc(c->n, sizeof *up), *down = calloc(c->n, sizeof *down);
    if (!up || !down)
        goto out;
    for (size_t k = 0; k < c->ns; k++) {
        const struct series *s = &c->s[k];
        if (s->style != SVG_BARS)
            continue;
        fprintf(f, "<path fill=\"%s\" d=\"", s->color);
        for (size_t i = 1; i < c->n; i++) {
            double v = val(s->y, i);
            if (v == 0)
                continue;
            double x0 = px(xs, c->x[i - 1]), x1 = px(xs, c->x[i]);
            if (x1 - x0 >= 4)
                x1 -= 1;                    /* a hairline between wide bars */
            else if (x1 - x0 < 0.6)
                x1 = x0 + 0.6;              /* never invisible */
            double *acc = v > 0 ? &up[i] : &down[i];
            double y0 = px(ys, *acc), y1 = px(ys, *acc + v);
            *acc += v;
            fprintf(f, "M%.1f,%.1fH%.1fV%.1fH%.1fZ", x0, y0, x1, y1, x0);
        }
        fputs("\">", f);
        put_title(f, s);
        fputs("</path>\n", f);
    }
out:
    free(up);
    free(down);
}

static void write_lines(const struct svg_chart *c, FILE *f, const struct scale *xs,
                        const struct scale *ys)
{
    for (size_t k = 0; k < c->ns; k++) {
        const struct series *s = &c->s[k];
        if (s->style != SVG_LINE)
            continue;
        fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-linejoin=\"round\"%s d=\"",
                s->color, s->dashed ? " stroke-dasharray=\"7 4\"" : "");
        int pen = 0;
        for (size_t i = 0; i < c->n; i++) {
            if (!isfinite(s->y[i])) {
                pen = 0;
                continue;
            }
            fprintf(f, "%c%.1f,%.1f", pen ? 'L' : 'M', px(xs, c->x[i]), px(ys, s->y[i]));
            pen = 1;
        }
        fputs("\">", f);
        put_title(f, s);
        fputs("</path>\n", f);
    }
}

static void write_marks(const struct svg_chart *c, FILE *f, const struct scale *xs,
                        double top, double bottom)
{
    double row_end[MARK_ROWS];
    for (int r = 0; r < MARK_ROWS; r++)
        row_end[r] = -1e9;
    /* many marks: fainter lines, so that the data stays readable */
    const char *line = c->nm > 16 ? "stroke=\"#777\" stroke-opacity=\"0.45\" stroke-width=\"1\""
                                  : "stroke=\"#333\" stroke-width=\"1\" stroke-dasharray=\"4 3\"";
    for (size_t i = 0; i < c->nm; i++) {
        const struct mark *m = &c->m[i];
        if (m->x < xs->lo || m->x > xs->hi)
            continue;
        double x = px(xs, m->x);
        fputs("<g class=\"mark\"><title>", f);
        svg_put_text(f, m->label);
        fprintf(f, "</title><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" %s/>", x,
                top, x, bottom, line);
        size_t chars = text_chars(m->label);
        if (chars > 28)
            chars = 28;
        double w = chars * 11 * EM;
        /* Labels go right of their line, or left of it near the right edge. */
        int left = x + 4 + w > xs->p1;
        double from = left ? x - 4 - w : x + 4;
        for (int r = 0; r < MARK_ROWS; r++) {
            if (from < row_end[r] + 6)
                continue;
            row_end[r] = from + w;
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#222\" "
                       "stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\"%s>",
                    left ? x - 4 : x + 4, top + 13 + 14 * r,
                    left ? " text-anchor=\"end\"" : "");
            put_fit(f, m->label, 28);
            fputs("</text>", f);
            break;
        }
        fputs("</g>\n", f);
    }
}

static void write_legend(const struct svg_chart *c, FILE *f, double x, double top,
                         double bottom)
{
    double y = top;
    size_t max_chars = (size_t)((LEGEND_W - 28) / (13 * EM_LOWER));
    size_t shown = 0, total = 0;
    for (size_t k = 0; k < c->ns; k++)
        total += !c->s[k].no_legend;
    for (size_t k = 0; k < c->ns; k++) {
        const struct series *s = &c->s[k];
        if (s->no_legend)
            continue;
        double h = s->note ? 34 : 22;
        if (y + h > bottom - (shown + 1 < total ? 18 : 0)) {
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#666\">"
                       "+%zu more (see the table output)</text>\n",
                    x, y + 12, total - shown);
            break;
        }
        fputs("<g class=\"legend\"><title>", f);
        svg_put_text(f, s->tooltip ? s->tooltip : s->label);
        fputs("</title>", f);
        if (s->style == SVG_LINE)
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                       "stroke-width=\"2.5\"%s/>",
                    x, y + 7, x + 16, y + 7, s->color,
                    s->dashed ? " stroke-dasharray=\"5 3\"" : "");
        else
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"14\" rx=\"2\" fill=\"%s\"/>",
                    x, y, s->color);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" fill=\"#222\">", x + 24, y + 12);
        put_fit(f, s->label, max_chars);
        fputs("</text>", f);
        if (s->note) {
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#666\">", x + 24,
                    y + 27);
            put_fit(f, s->note, (size_t)((LEGEND_W - 28) / (11 * EM_LOWER)));
            fputs("</text>", f);
        }
        fputs("</g>\n", f);
        y += h;
        shown++;
    }
}

int svg_chart__write(const struct svg_chart *c, FILE *f)
{
    int legend = 0;
    for (size_t k = 0; k < c->ns; k++)
        legend |= !c->s[k].no_legend;
    double W = c->width, H = c->height;
    double left = 84, right = W - 24 - (legend ? LEGEND_W : 0);
    double top = c->subtitle ? 70 : 52, bottom = H - 58;
    if (right < left + 100)
        right = left + 100;

    struct scale xs = { .p0 = left, .p1 = right }, ys = { .p0 = bottom, .p1 = top };
    if (c->n) {
        xs.lo = c->x[0];
        xs.hi = c->x[c->n - 1];
    }
    if (!(xs.hi > xs.lo))
        xs.hi = xs.lo + 1;
    double ylo, yhi;
    y_range(c, &ylo, &yhi);
    double ystep = nice_step((yhi - ylo > 0 ? yhi - ylo : 1) / 6);
    if (ystep < 1)
        ystep = 1;                  /* bytes and counts are whole numbers */
    ys.lo = floor(ylo / ystep) * ystep;
    ys.hi = ceil(yhi / ystep) * ystep;
    if (ys.hi <= ys.lo)
        ys.hi = ys.lo + ystep;

    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
            c->width, c->height, c->width, c->height);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", c->width, c->height);
    if (c->title)
        text_el(f, 16, 26, "font-size=\"17\" font-weight=\"bold\" fill=\"#222\"", c->title);
    if (c->subtitle)
        text_el(f, 16, 47, "font-size=\"12.5\" fill=\"#555\"", c->subtitle);

    /* horizontal grid and y ticks */
    write_ticks(f, c->y_axis, &ys, ys.lo, ystep, 1, left, right);

    /* x ticks: about one per 110 pixels */
    double xstep = nice_step((xs.hi - xs.lo) / ((right - left) / 110));
    if (xstep < 1 && c->x_axis == SVG_AXIS_TIME_NS)
        xstep = 1;
    write_ticks(f, c->x_axis, &xs, ceil(xs.lo / xstep - 1e-9) * xstep, xstep, 0, bottom, 0);

    /* the data, clipped to the plot */
    fprintf(f, "<clipPath id=\"plot\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>"
               "</clipPath>\n<g clip-path=\"url(#plot)\">\n",
            left, top - 1, right - left, bottom - top + 2);
    if (c->n) {
        write_areas(c, f, &xs, &ys);
        write_bars(c, f, &xs, &ys);
        write_lines(c, f, &xs, &ys);
    }
    fputs("</g>\n", f);
    write_marks(c, f, &xs, top, bottom);

    /* axes and their titles */
    fprintf(f, "<path d=\"M%.1f,%.1fV%.1fH%.1f\" fill=\"none\" stroke=\"#444\"/>\n", left, top,
            bottom, right);
    if (c->x_title) {
        char attrs[96];
        snprintf(attrs, sizeof attrs, "font-size=\"13\" fill=\"#333\" text-anchor=\"middle\"");
        text_el(f, (left + right) / 2, H - 16, attrs, c->x_title);
    }
    if (c->y_title) {
        fprintf(f, "<text transform=\"translate(18 %.1f) rotate(-90)\" font-size=\"13\" "
                   "fill=\"#333\" text-anchor=\"middle\">",
                (top + bottom) / 2);
        svg_put_text(f, c->y_title);
        fputs("</text>\n", f);
    }
    if (legend)
        write_legend(c, f, right + 24, top, H - 16);
    fputs("</svg>\n", f);
    return ferror(f) ? -EIO : 0;
}

int svg_chart__write_file(const struct svg_chart *c, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -errno;
    int rc = svg_chart__write(c, f);
    if (fclose(f) && !rc)
        rc = -errno;
    return rc;
}
