/* svg.h — a small SVG chart writer: one chart per document, an x axis of
 * time or numbers, a y axis of bytes or counts, stacked areas, stacked bars,
 * lines, labelled vertical marks and a legend. Meant for every command that
 * draws (series, chart, later fragmentation or diffs); knows nothing about
 * heaps. All text is XML-escaped and forced to valid UTF-8, so any function
 * name from a binary yields a well-formed document. */
#ifndef VHEAP_SVG_H
#define VHEAP_SVG_H

#include <stddef.h>
#include <stdio.h>

enum svg_axis {
    SVG_AXIS_NUMBER,       /* plain counts: 0 20k 40k                        */
    SVG_AXIS_TIME_NS,      /* nanoseconds, labelled in s, ms, µs or ns       */
    SVG_AXIS_BYTES,        /* 1000-based like the tables: 500 KB, 20 MB      */
};

enum svg_style {
    SVG_AREA,              /* stacked on the areas added before it; point i
                              drawn at x[i], straight segments between      */
    SVG_BARS,              /* stacked bars: value i spans (x[i-1], x[i]], so
                              y[0] is not drawn; negative values hang below
                              zero, stacked downwards                       */
    SVG_LINE,              /* a line over everything; NaN leaves a gap      */
};

struct svg_chart_opts {
    const char *title;     /* bold, top left                                */
    const char *subtitle;  /* smaller, under the title (may be NULL)        */
    const char *x_title, *y_title;   /* axis titles (may be NULL)           */
    enum svg_axis x_axis, y_axis;
    int width, height;     /* pixels; 0 = 1200 x 600                        */
};

struct svg_series {
    enum svg_style style;
    const char *label;     /* legend text; shortened to fit the legend      */
    const char *note;      /* second, smaller legend line (may be NULL)     */
    const char *tooltip;   /* shown on hover, e.g. a whole stack (or NULL)  */
    const char *color;     /* "#rrggbb", or NULL for the next palette colour */
    int dashed;            /* lines only                                    */
    int no_legend;         /* leave it out of the legend                    */
    int no_scale;          /* lines: left out of the y range, so a line far
                              above the rest (RSS over a small heap) does not
                              flatten it; clipped at the top                */
    const double *y;       /* n values (n from svg_chart__set_x), copied    */
};

struct svg_chart;

/* NULL on ENOMEM. Strings are copied. */
struct svg_chart *svg_chart__new(const struct svg_chart_opts *o);

/* The x value of each of the n points, non-decreasing (copied). Must be
 * called once, before svg_chart__add. Returns 0, -EINVAL or -ENOMEM. */
int svg_chart__set_x(struct svg_chart *c, const double *x, size_t n);

/* Adds a series of the n values given to set_x. Areas stack in the order
 * added (the first at the bottom), so do bars. Returns 0, -EINVAL or
 * -ENOMEM. */
int svg_chart__add(struct svg_chart *c, const struct svg_series *s);

/* A vertical line at x with a label at the top of the plot; labels that
 * would overlap are moved down a row, or left out when three rows are
 * taken there (the line stays; the label is in its tooltip). */
int svg_chart__add_mark(struct svg_chart *c, double x, const char *label);

/* Writes the whole document. Returns 0 or -EIO. */
int svg_chart__write(const struct svg_chart *c, FILE *f);

/* Writes to `path` (replacing it). Returns 0 or -errno. */
int svg_chart__write_file(const struct svg_chart *c, const char *path);

void svg_chart__free(struct svg_chart *c);

/* The i-th colour of the palette (12 distinguishable colours, cycling). */
const char *svg_palette(size_t i);

/* Writes `s` as XML character data or attribute text: & < > " ' escaped,
 * control characters dropped, invalid UTF-8 bytes replaced by '?'. */
void svg_put_text(FILE *f, const char *s);

#endif
