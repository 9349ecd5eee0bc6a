/* output.c — renders query results as a table, JSON or CSV (output.h).
 *
 * Rows are rendered as they are added and spooled until out__end(): tables
 * need every width before the first line. Formatting rules live here only, so the
 * three formats cannot drift apart per command. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/util/grow.h"
#include "analyze/render/output.h"
#include "analyze/util/json.h"
#include "analyze/util/path.h"
#include "analyze/util/tmpfile.h"

struct cell {
    enum out_val_kind kind;
    int64_t i;
    double r;
    char *s;
    char **words;
    size_t nwords;
    char *note;
};

/* Rows are rendered as they come, in the format's own text, and kept in a
 * spool until out__end(): in memory up to SPOOL_MEM, then in an unnamed
 * scratch file in $TMPDIR (util/tmpfile.h), so that a result of any size
 * costs memory for one row; with no scratch file to be had, in memory all
 * along. A record is a flag (the row had a stack) and k strings, each
 * length first. */
#define SPOOL_MEM (1u << 20)

struct spool {
    char *mem;
    size_t len, cap;
    FILE *f;                       /* once mem would pass SPOOL_MEM          */
    size_t rpos;                   /* reading mem                            */
    int no_scratch;                /* vh_tmpfile_scratch failed: not again   */
    int err;                       /* -ENOMEM, or -EIO from the file: the
                                      first failure, which out__end reports */
};

struct section {
    char *name;
    char *title;
    enum out_section_kind kind;
    const struct out_col *cols;
    size_t ncols;
    size_t nrows;
    struct spool rows;
    int any_stack;                 /* some row had a stack                   */
    /* table lists: what needs every row, gathered row by row */
    size_t *width;                 /* widest text per column                 */
    unsigned char *nonzero;        /* a row not 0 (OUT_F_HIDE_ZERO)          */
    unsigned char *differs;        /* a row unlike the first (HIDE_SAME)     */
    struct cell *first;            /* the first row's cells                  */
    char **notes;
    size_t nnotes;
};

struct out {
    enum out_format fmt;
    unsigned flags;
    FILE *f;
    struct section *secs;
    size_t nsecs;
    int failed;                    /* an allocation failed: out__end errors */
};

static void spool_write(struct spool *sp, const void *p, size_t n)
{
    if (sp->err)
        return;
    if (!sp->f && !sp->no_scratch && sp->len + n > SPOOL_MEM) {
        if (!(sp->f = vh_tmpfile_scratch())) {
            sp->no_scratch = 1;
        } else {
            if (sp->len && fwrite(sp->mem, 1, sp->len, sp->f) != sp->len)
                sp->err = -EIO;
            free(sp->mem);
            sp->mem = NULL;
            sp->len = sp->cap = 0;
        }
    }
    if (sp->f) {
        if (n && fwrite(p, 1, n, sp->f) != n)
            sp->err = -EIO;
        return;
    }
    if (vh_reserve(&sp->mem, &sp->cap, sp->len + n, 1, 4096)) {
        sp->err = -ENOMEM;
        return;
    }
    memcpy(sp->mem + sp->len, p, n);
    sp->len += n;
}

static void spool_str(struct spool *sp, const struct out_buf *b)
{
    size_t n = b->p ? b->len : 0;
    spool_write(sp, &n, sizeof n);
    spool_write(sp, b->p ? b->p : "", n);
}

/* Back to the start for reading; 0, or the first failure in writing. */
static int spool_rewind(struct spool *sp)
{
    sp->rpos = 0;
    if (sp->err)
        return sp->err;
    return sp->f && (fflush(sp->f) || fseek(sp->f, 0, SEEK_SET)) ? -EIO : 0;
}

static int spool_read(struct spool *sp, void *p, size_t n)
{
    if (sp->f)
        return n && fread(p, 1, n, sp->f) != n ? -EIO : 0;
    if (sp->rpos + n > sp->len)
        return -EIO;
    memcpy(p, sp->mem + sp->rpos, n);
    sp->rpos += n;
    return 0;
}

/* The next string into b (b->len set, NUL-terminated). */
static int spool_read_str(struct spool *sp, struct out_buf *b)
{
    size_t n;
    if (spool_read(sp, &n, sizeof n) || vh_reserve(&b->p, &b->cap, n + 1, 1, 64))
        return -EIO;
    b->len = n;
    b->p[n] = 0;
    return spool_read(sp, b->p, n);
}

static void spool_free(struct spool *sp)
{
    if (sp->f)
        fclose(sp->f);
    free(sp->mem);
}

int out__parse_format(const char *s, enum out_format *fmt)
{
    if (!strcmp(s, "table"))
        *fmt = OUT_TABLE;
    else if (!strcmp(s, "json"))
        *fmt = OUT_JSON;
    else if (!strcmp(s, "csv"))
        *fmt = OUT_CSV;
    else
        return -EINVAL;
    return 0;
}

const char *out__human_bytes(int64_t bytes, char *buf, size_t len)
{
    static const char units[] = "BKMGTPE";
    const char *sign = "";
    uint64_t u = (uint64_t)bytes;
    if (bytes < 0) {
        sign = "-";
        u = -(uint64_t)bytes;
    }
    if (u < 1000) {
        snprintf(buf, len, "%s%" PRIu64 "B", sign, u);
        return buf;
    }
    double v = (double)u;
    size_t k = 0;
    while (v >= 1000.0 && k < sizeof units - 2) {
        v /= 1000.0;
        k++;
    }
    snprintf(buf, len, "%s%.2f%c", sign, v, units[k]);
    return buf;
}

const char *out__human_ns(int64_t ns, char *buf, size_t len)
{
    snprintf(buf, len, "%.3fs", (double)ns / 1e9);
    return buf;
}

/* ---- building ------------------------------------------------------------ */

struct out *out__begin(enum out_format fmt, unsigned flags, FILE *stream)
{
    struct out *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->fmt = fmt;
    o->flags = flags;
    o->f = stream;
    return o;
}

static char *dup_or_fail(struct out *o, const char *s)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        o->failed = 1;
    return d;
}

int out__section(struct out *o, const char *name, enum out_section_kind kind,
                 const char *title, const struct out_col *cols, size_t ncols)
{
    struct section *ns = realloc(o->secs, (o->nsecs + 1) * sizeof *ns);
    if (!ns) {
        o->failed = 1;
        return -ENOMEM;
    }
    o->secs = ns;
    struct section *s = &o->secs[o->nsecs++];
    memset(s, 0, sizeof *s);
    s->name = dup_or_fail(o, name);
    s->title = dup_or_fail(o, title);
    s->kind = kind;
    s->cols = cols;
    s->ncols = ncols;
    if (o->fmt == OUT_TABLE && kind == OUT_LIST) {
        size_t n = ncols ? ncols : 1;
        s->width = calloc(n, sizeof *s->width);
        s->nonzero = calloc(n, 1);
        s->differs = calloc(n, 1);
        if (!s->width || !s->nonzero || !s->differs)
            o->failed = 1;
    }
    return o->failed ? -ENOMEM : 0;
}

void out_stack__free(struct out_stack *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->n; i++) {
        struct out_frame *f = &st->frames[i];
        free(f->function);
        free(f->file);
        free(f->module);
        for (size_t j = 0; j < f->ninlined; j++) {
            free(f->inlined[j].function);
            free(f->inlined[j].file);
        }
        free(f->inlined);
    }
    free(st->frames);
    free(st);
}

/* A value as a cell, its strings borrowed from the caller's. */
static struct cell as_cell(const struct out_val *v)
{
    struct cell c = { .kind = v->kind, .i = v->i, .r = v->r, .note = (char *)v->note };
    if (v->kind == OV_TEXT && !(c.s = (char *)v->s))
        c.kind = OV_NULL;
    if (v->kind == OV_WORDS) {
        c.words = (char **)v->words;
        c.nwords = v->nwords;
    }
    return c;
}

/* A copy of a cell that owns its strings (the first row of a table list). */
static void cell_copy(struct out *o, struct cell *d, const struct cell *c)
{
    *d = *c;
    d->note = dup_or_fail(o, c->note);
    d->s = c->kind == OV_TEXT ? dup_or_fail(o, c->s) : NULL;
    d->words = NULL;
    d->nwords = 0;
    if (c->kind == OV_WORDS) {
        if (!(d->words = calloc(c->nwords ? c->nwords : 1, sizeof *d->words))) {
            o->failed = 1;
            d->kind = OV_NULL;
            return;
        }
        d->nwords = c->nwords;
        for (size_t w = 0; w < c->nwords; w++)
            d->words[w] = dup_or_fail(o, c->words[w] ? c->words[w] : "");
    }
}

/* A word of an OV_WORDS cell: NULL reads as "". */
static const char *word(const struct cell *c, size_t w)
{
    return c->words[w] ? c->words[w] : "";
}

static void cell_free(struct cell *c)
{
    free(c->s);
    free(c->note);
    for (size_t w = 0; w < c->nwords; w++)
        free(c->words[w]);
    free(c->words);
}

static void render_row(struct out *o, struct section *s, const struct cell *cells,
                       const struct out_stack *stack);

int out__row(struct out *o, const struct out_val *vals, struct out_stack *stack)
{
    if (!o->nsecs) {
        out_stack__free(stack);
        return -EINVAL;
    }
    struct section *s = &o->secs[o->nsecs - 1];
    struct cell *cells = calloc(s->ncols ? s->ncols : 1, sizeof *cells);
    if (!cells) {
        o->failed = 1;
        out_stack__free(stack);
        return -ENOMEM;
    }
    for (size_t c = 0; c < s->ncols; c++)
        cells[c] = as_cell(&vals[c]);
    render_row(o, s, cells, stack);
    free(cells);
    out_stack__free(stack);
    s->nrows++;
    /* A scratch file that cannot be written is out__end's to report, as
     * "writing the output failed", not "out of memory". */
    if (s->rows.err == -ENOMEM)
        o->failed = 1;
    return o->failed ? -ENOMEM : 0;
}

int out__table_note(struct out *o, const char *fmt, ...)
{
    if (!o->nsecs)
        return -EINVAL;
    struct section *s = &o->secs[o->nsecs - 1];
    char **nn = realloc(s->notes, (s->nnotes + 1) * sizeof *nn);
    if (!nn) {
        o->failed = 1;
        return -ENOMEM;
    }
    s->notes = nn;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s->notes[s->nnotes], fmt, ap);
    va_end(ap);
    if (n < 0) {
        o->failed = 1;
        return -ENOMEM;
    }
    s->nnotes++;
    return 0;
}

static void free_all(struct out *o)
{
    for (size_t k = 0; k < o->nsecs; k++) {
        struct section *s = &o->secs[k];
        spool_free(&s->rows);
        if (s->first)
            for (size_t c = 0; c < s->ncols; c++)
                cell_free(&s->first[c]);
        free(s->first);
        free(s->width);
        free(s->nonzero);
        free(s->differs);
        for (size_t i = 0; i < s->nnotes; i++)
            free(s->notes[i]);
        free(s->notes);
        free(s->name);
        free(s->title);
    }
    free(o->secs);
    free(o);
}

void out__abort(struct out *o)
{
    if (o)
        free_all(o);
}


/* Terminal-safe text: control characters (from file names in a capture) must
 * not move the cursor or break the table's layout. */
static void buf_safe(struct out_buf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f)
            out_buf__add(b, "?", 1);
        else
            out_buf__add(b, s, 1);
    }
}

/* ---- table ----------------------------------------------------------------- */

static int is_numeric(enum out_type t)
{
    return t == OUT_INT || t == OUT_BYTES || t == OUT_NS || t == OUT_REAL;
}

static void fmt_real(struct out_buf *b, double r)
{
    if (!isfinite(r))
        out_buf__puts(b, "-");
    else if (fabs(r) >= 100.0)
        out_buf__printf(b, "%.0f", r);
    else
        out_buf__printf(b, "%.2f", r);
}

/* The table text of one cell, without its note. */
static void table_value(const struct out *o, const struct out_col *col,
                        const struct cell *c, struct out_buf *b)
{
    char tmp[64];
    switch (c->kind) {
    case OV_NULL:
        out_buf__puts(b, "-");
        return;
    case OV_TEXT:
        buf_safe(b, c->s);
        return;
    case OV_WORDS:
        for (size_t w = 0; w < c->nwords; w++) {
            if (w)
                out_buf__puts(b, " ");
            buf_safe(b, word(c, w));
        }
        return;
    case OV_REAL:
        if (col->type == OUT_NS)
            out_buf__printf(b, "%.3fs", c->r / 1e9);
        else
            fmt_real(b, c->r);
        return;
    case OV_INT:
        break;
    }
    switch (col->type) {
    case OUT_BYTES:
        if (o->flags & OUT_RAW_BYTES)
            out_buf__printf(b, "%" PRId64, c->i);
        else
            out_buf__puts(b, out__human_bytes(c->i, tmp, sizeof tmp));
        break;
    case OUT_NS:
        out_buf__puts(b, out__human_ns(c->i, tmp, sizeof tmp));
        break;
    case OUT_BOOL:
        out_buf__puts(b, c->i ? "yes" : "no");
        break;
    case OUT_REAL:
        fmt_real(b, (double)c->i);
        break;
    default:
        out_buf__printf(b, "%" PRId64, c->i);
        break;
    }
}

static void table_cell(const struct out *o, const struct out_col *col,
                       const struct cell *c, struct out_buf *b)
{
    table_value(o, col, c, b);
    if (c->note && c->kind != OV_NULL) {
        out_buf__puts(b, " (");
        buf_safe(b, c->note);
        out_buf__puts(b, ")");
    }
}

static int cells_equal(const struct cell *a, const struct cell *b)
{
    if (a->kind != b->kind)
        return 0;
    switch (a->kind) {
    case OV_NULL: return 1;
    case OV_INT: return a->i == b->i;
    case OV_REAL: return a->r == b->r;
    case OV_TEXT: return !strcmp(a->s, b->s);
    case OV_WORDS:
        if (a->nwords != b->nwords)
            return 0;
        for (size_t w = 0; w < a->nwords; w++)
            if (strcmp(word(a, w), word(b, w)))
                return 0;
        return 1;
    }
    return 0;
}

static int is_zero(const struct cell *c)
{
    return c->kind == OV_INT && c->i == 0;
}

/* Whether a column is in the table at all, before any row. */
static int table_may_show(const struct section *s, size_t c)
{
    return !(s->cols[c].flags & (OUT_F_NO_TABLE | OUT_F_CSV_ONLY));
}

/* Whether a column is in the table, over every row (gathered by out__row). */
static int table_shows(const struct section *s, size_t c)
{
    const struct out_col *col = &s->cols[c];
    if (!table_may_show(s, c))
        return 0;
    if ((col->flags & OUT_F_HIDE_ZERO) && s->kind == OUT_LIST)
        return s->nonzero[c];
    if ((col->flags & OUT_F_HIDE_SAME) && s->kind == OUT_LIST)
        return s->differs[c];
    return 1;
}

static void where(struct out_buf *b, const char *file, int64_t line)
{
    if (!file)
        return;
    out_buf__puts(b, " (");
    buf_safe(b, file);
    if (line > 0)
        out_buf__printf(b, ":%" PRId64, line);
    out_buf__puts(b, ")");
}

/* One line per function, innermost first; functions inlined into a physical
 * frame are marked, and the module is named on the out-of-line one. */
static void table_stack(struct out_buf *out, const struct out_stack *st, const char *indent)
{
    struct out_buf b = { 0 };
    for (size_t i = 0; i < st->n; i++) {
        const struct out_frame *fr = &st->frames[i];
        b.len = 0;
        out_buf__puts(&b, indent);
        if (fr->function)
            buf_safe(&b, fr->function);
        else
            out_buf__printf(&b, "0x%" PRIx64, (uint64_t)fr->address);
        where(&b, fr->file, fr->line);
        for (size_t j = 0; j < fr->ninlined; j++) {
            const struct out_inline *in = &fr->inlined[j];
            out_buf__puts(&b, " [inlined]\n");
            out_buf__puts(&b, indent);
            buf_safe(&b, in->function ? in->function : "??");
            where(&b, in->file, in->line);
        }
        if (fr->module) {
            out_buf__puts(&b, " in ");
            buf_safe(&b, vh_base_name(fr->module));
            if (!fr->function && fr->has_offset)
                out_buf__printf(&b, "+0x%" PRIx64, (uint64_t)fr->offset);
        }
        if (!b.oom) {
            out_buf__add(out, b.p, b.len);
            out_buf__puts(out, "\n");
        }
    }
    if (st->omitted)
        out_buf__printf(out, "%s... %zu more frames\n", indent, st->omitted);
    else if (st->truncated)
        out_buf__printf(out, "%s... (stack truncated at the recording depth)\n", indent);
    if (!st->n && !st->omitted)
        out_buf__printf(out, "%s(no stack recorded)\n", indent);
    free(b.p);
}

/* A row of "title: value" lines (objects and records): all its text, the
 * blank line before every row but the first included. */
static void table_record_row(struct out *o, struct section *s, const struct cell *cells,
                             const struct out_stack *stack, struct out_buf *t)
{
    struct out_buf b = { 0 };
    if (s->nrows)
        out_buf__puts(t, "\n");
    for (size_t c = 0; c < s->ncols; c++) {
        if (!table_shows(s, c) || cells[c].kind == OV_NULL ||
            ((s->cols[c].flags & OUT_F_HIDE_ZERO) && is_zero(&cells[c])))
            continue;
        b.len = 0;
        table_cell(o, &s->cols[c], &cells[c], &b);
        if (!b.oom)
            out_buf__printf(t, "%s: %s\n", s->cols[c].title, b.p);
    }
    if (stack)
        table_stack(t, stack, "    ");
    free(b.p);
}

/* A row of an aligned list: each column's text (widths, and which columns
 * show, are known at the end), then the stack's lines. */
static void table_list_row(struct out *o, struct section *s, const struct cell *cells,
                           const struct out_stack *stack)
{
    struct out_buf b = { 0 };
    if (!s->nrows && s->ncols) {
        if (!(s->first = calloc(s->ncols, sizeof *s->first)))
            o->failed = 1;
        for (size_t c = 0; s->first && c < s->ncols; c++)
            cell_copy(o, &s->first[c], &cells[c]);
    }
    for (size_t c = 0; c < s->ncols; c++) {
        if (!is_zero(&cells[c]))
            s->nonzero[c] = 1;
        if (s->nrows && s->first && !cells_equal(&s->first[c], &cells[c]))
            s->differs[c] = 1;
        b.len = 0;
        if (table_may_show(s, c)) {
            table_cell(o, &s->cols[c], &cells[c], &b);
            if (b.p && b.len > s->width[c])
                s->width[c] = b.len;
        }
        spool_str(&s->rows, &b);
    }
    b.len = 0;
    if (stack)
        table_stack(&b, stack, "    ");
    spool_str(&s->rows, &b);
    if (b.oom)
        o->failed = 1;
    free(b.p);
}

static int table_list(const struct out *o, struct section *s)
{
    if (!s->nrows)
        return 0;                  /* a lone header says less than a note */
    size_t nc = s->ncols;
    int *show = calloc(nc ? nc : 1, sizeof *show);
    struct out_buf b = { 0 };
    unsigned char has_stack;
    int rc = -ENOMEM;
    if (!show)
        return rc;
    size_t last = 0;
    for (size_t c = 0; c < nc; c++) {
        show[c] = table_shows(s, c);
        if (show[c]) {
            size_t l = strlen(s->cols[c].title);
            if (l > s->width[c])
                s->width[c] = l;
            last = c;
        }
    }
    if ((rc = spool_rewind(&s->rows)))
        goto out;
    /* Line 0 is the header: titles align like their data (numbers right). */
    for (size_t i = 0; i <= s->nrows; i++) {
        const char *sep = "";
        if (i > 0 && (rc = spool_read(&s->rows, &has_stack, 1)))
            goto out;
        for (size_t c = 0; c < nc; c++) {
            if (i > 0 && (rc = spool_read_str(&s->rows, &b)))
                goto out;
            if (!show[c])
                continue;
            const char *t = i == 0 ? s->cols[c].title : b.p;
            if (is_numeric(s->cols[c].type))
                fprintf(o->f, "%s%*s", sep, (int)s->width[c], t);
            else if (c == last)
                fprintf(o->f, "%s%s", sep, t);
            else
                fprintf(o->f, "%s%-*s", sep, (int)s->width[c], t);
            sep = "  ";
        }
        fputc('\n', o->f);
        if (i > 0 && (rc = spool_read_str(&s->rows, &b)))
            goto out;
        if (i > 0 && has_stack) {
            fputs(b.p, o->f);
            if (i < s->nrows)
                fputc('\n', o->f);
        }
    }
out:
    free(b.p);
    free(show);
    return rc;
}

static int table_records(const struct out *o, struct section *s)
{
    struct out_buf b = { 0 };
    unsigned char has_stack;
    int rc = spool_rewind(&s->rows);
    for (size_t i = 0; !rc && i < s->nrows; i++)
        if (!(rc = spool_read(&s->rows, &has_stack, 1)) &&
            !(rc = spool_read_str(&s->rows, &b)))
            fputs(b.p, o->f);
    free(b.p);
    return rc;
}

static int render_table(struct out *o)
{
    int first = 1, rc = 0;
    for (size_t k = 0; !rc && k < o->nsecs; k++) {
        struct section *s = &o->secs[k];
        if (!first)
            fputc('\n', o->f);
        first = 0;
        if (s->title)
            fprintf(o->f, "%s\n", s->title);
        if (s->kind == OUT_LIST)
            rc = table_list(o, s);
        else
            rc = table_records(o, s);
        for (size_t i = 0; !rc && i < s->nnotes; i++)
            fprintf(o->f, "%s\n", s->notes[i]);
    }
    return rc;
}

/* ---- JSON ------------------------------------------------------------------ */

static void json_str(struct out_buf *b, const char *s)
{
    if (!s)
        out_buf__puts(b, "null");
    else
        vh_json_str(out_buf__sink, b, s, strlen(s), 0);
}

static void json_real(struct out_buf *b, double r)
{
    if (isfinite(r))
        out_buf__printf(b, "%.15g", r);
    else
        out_buf__puts(b, "null");
}

static void json_cell(struct out_buf *b, const struct out_col *col, const struct cell *c)
{
    switch (c->kind) {
    case OV_NULL: out_buf__puts(b, "null"); break;
    case OV_TEXT: json_str(b, c->s); break;
    case OV_REAL: json_real(b, c->r); break;
    case OV_WORDS:
        out_buf__puts(b, "[");
        for (size_t w = 0; w < c->nwords; w++) {
            if (w)
                out_buf__puts(b, ", ");
            json_str(b, word(c, w));
        }
        out_buf__puts(b, "]");
        break;
    case OV_INT:
        if (col->type == OUT_BOOL)
            out_buf__puts(b, c->i ? "true" : "false");
        else if (col->type == OUT_REAL)
            json_real(b, (double)c->i);
        else
            out_buf__printf(b, "%" PRId64, c->i);
        break;
    }
}

static void json_line(struct out_buf *b, int64_t line)
{
    if (line > 0)
        out_buf__printf(b, "%" PRId64, line);
    else
        out_buf__puts(b, "null");
}

static void json_stack(struct out_buf *b, const struct out_stack *st)
{
    out_buf__puts(b, "[");
    for (size_t i = 0; i < st->n; i++) {
        const struct out_frame *fr = &st->frames[i];
        out_buf__puts(b, i ? ", {\"function\": " : "{\"function\": ");
        json_str(b, fr->function);
        out_buf__puts(b, ", \"file\": ");
        json_str(b, fr->file);
        out_buf__puts(b, ", \"line\": ");
        json_line(b, fr->line);
        out_buf__puts(b, ", \"module\": ");
        json_str(b, fr->module);
        out_buf__printf(b, ", \"address\": %" PRId64 ", \"offset\": ", fr->address);
        if (fr->has_offset)
            out_buf__printf(b, "%" PRId64, fr->offset);
        else
            out_buf__puts(b, "null");
        out_buf__puts(b, ", \"inlined\": [");
        for (size_t j = 0; j < fr->ninlined; j++) {
            out_buf__puts(b, j ? ", {\"function\": " : "{\"function\": ");
            json_str(b, fr->inlined[j].function);
            out_buf__puts(b, ", \"file\": ");
            json_str(b, fr->inlined[j].file);
            out_buf__puts(b, ", \"line\": ");
            json_line(b, fr->inlined[j].line);
            out_buf__puts(b, "}");
        }
        out_buf__puts(b, "]}");
    }
    out_buf__puts(b, "]");
}

/* A row in two parts: its columns ("{" and every key, no closing brace;
 * empty with no columns) and its stack (what follows "stack": ), joined at
 * the end, when it is known whether any row of the section has a stack. */
static void json_row_parts(struct out *o, struct section *s, const struct cell *cells,
                           const struct out_stack *stack)
{
    struct out_buf b = { 0 };
    const char *sep = "{";
    for (size_t c = 0; c < s->ncols; c++) {
        if (s->cols[c].flags & OUT_F_CSV_ONLY)
            continue;
        out_buf__puts(&b, sep);
        json_str(&b, s->cols[c].key);
        out_buf__puts(&b, ": ");
        json_cell(&b, &s->cols[c], &cells[c]);
        sep = ", ";
    }
    spool_str(&s->rows, &b);
    b.len = 0;
    if (stack)
        json_stack(&b, stack);
    else
        out_buf__puts(&b, "null");
    out_buf__printf(&b, ", \"stack_truncated\": %s",
                    stack && (stack->truncated || stack->omitted) ? "true" : "false");
    spool_str(&s->rows, &b);
    if (b.oom)
        o->failed = 1;
    free(b.p);
}

static int json_row(FILE *f, struct section *s, struct out_buf *cols, struct out_buf *stack)
{
    unsigned char has_stack;
    int rc;
    if ((rc = spool_read(&s->rows, &has_stack, 1)) || (rc = spool_read_str(&s->rows, cols)) ||
        (rc = spool_read_str(&s->rows, stack)))
        return rc;
    fputs(cols->p, f);
    if (s->any_stack)
        fprintf(f, "%s\"stack\": %s}", cols->len ? ", " : "{", stack->p);
    else
        fputs(cols->len ? "}" : "{}", f);
    return 0;
}

/* A name composed in b (JSON key, CSV header) onto f; -ENOMEM when b ran
 * out of memory composing it, rather than a document missing the name. */
static int put_buf(FILE *f, const struct out_buf *b)
{
    if (b->oom)
        return -ENOMEM;
    if (b->p)
        fputs(b->p, f);
    return 0;
}

static int render_json(struct out *o)
{
    FILE *f = o->f;
    struct out_buf b = { 0 }, st = { 0 };
    int rc = 0;
    fputs("{", f);
    for (size_t k = 0; !rc && k < o->nsecs; k++) {
        struct section *s = &o->secs[k];
        fputs(k ? ",\n  " : "\n  ", f);
        b.len = 0;
        json_str(&b, s->name);
        if ((rc = put_buf(f, &b)))
            break;
        fputs(": ", f);
        if ((rc = spool_rewind(&s->rows)))
            break;
        if (s->kind == OUT_OBJECT) {
            if (s->nrows)
                rc = json_row(f, s, &b, &st);
            else
                fputs("null", f);
            continue;
        }
        fputs("[", f);
        for (size_t i = 0; !rc && i < s->nrows; i++) {
            fputs(i ? ",\n    " : "\n    ", f);
            rc = json_row(f, s, &b, &st);
        }
        fputs(s->nrows ? "\n  ]" : "]", f);
    }
    if (!rc)
        fputs(o->nsecs ? "\n}\n" : "}\n", f);
    free(b.p);
    free(st.p);
    return rc;
}

/* ---- CSV (RFC 4180) --------------------------------------------------------- */

static void csv_field(struct out_buf *b, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        out_buf__puts(b, s);
        return;
    }
    out_buf__puts(b, "\"");
    for (; *s; s++) {
        if (*s == '"')
            out_buf__puts(b, "\"");
        out_buf__add(b, s, 1);
    }
    out_buf__puts(b, "\"");
}

/* The stack as one field: "f (file:line) <- g (file:line) <- ...", inlined
 * callers in call order, like the schema's stack_text view. */
static void csv_stack_text(struct out_buf *b, const struct out_stack *st)
{
    const char *sep = "";
    for (size_t i = 0; i < st->n; i++) {
        const struct out_frame *fr = &st->frames[i];
        out_buf__puts(b, sep);
        if (fr->function)
            out_buf__puts(b, fr->function);
        else if (fr->module && fr->has_offset)
            out_buf__printf(b, "0x%" PRIx64 " (%s+0x%" PRIx64 ")", (uint64_t)fr->address,
                       vh_base_name(fr->module), (uint64_t)fr->offset);
        else
            out_buf__printf(b, "0x%" PRIx64, (uint64_t)fr->address);
        if (fr->file) {
            out_buf__printf(b, " (%s", fr->file);
            if (fr->line > 0)
                out_buf__printf(b, ":%" PRId64, fr->line);
            out_buf__puts(b, ")");
        }
        for (size_t j = 0; j < fr->ninlined; j++) {
            const struct out_inline *in = &fr->inlined[j];
            out_buf__puts(b, " <- ");
            out_buf__puts(b, in->function ? in->function : "??");
            if (in->file) {
                out_buf__printf(b, " (%s", in->file);
                if (in->line > 0)
                    out_buf__printf(b, ":%" PRId64, in->line);
                out_buf__puts(b, ")");
            }
        }
        sep = " <- ";
    }
}

static void csv_cell(struct out_buf *out, const struct out_col *col, const struct cell *c)
{
    struct out_buf b = { 0 };
    switch (c->kind) {
    case OV_NULL:
        return;
    case OV_TEXT:
        csv_field(out, c->s);
        return;
    case OV_WORDS:
        for (size_t w = 0; w < c->nwords; w++) {
            if (w)
                out_buf__puts(&b, " ");
            out_buf__puts(&b, word(c, w));
        }
        csv_field(out, b.p ? b.p : "");
        free(b.p);
        return;
    case OV_REAL:
        if (isfinite(c->r))
            out_buf__printf(out, "%.15g", c->r);
        return;
    case OV_INT:
        if (col->type == OUT_BOOL)
            out_buf__puts(out, c->i ? "1" : "0");
        else
            out_buf__printf(out, "%" PRId64, c->i);
        return;
    }
}

/* A row in two parts: its fields, and its stack's field (empty without). */
static void csv_row_parts(struct out *o, struct section *s, const struct cell *cells,
                          const struct out_stack *stack)
{
    struct out_buf b = { 0 }, t = { 0 };
    const char *sep = "";
    for (size_t c = 0; c < s->ncols; c++) {
        out_buf__puts(&b, sep);
        csv_cell(&b, &s->cols[c], &cells[c]);
        sep = ",";
    }
    spool_str(&s->rows, &b);
    b.len = 0;
    if (stack) {
        csv_stack_text(&t, stack);
        csv_field(&b, t.p ? t.p : "");
    }
    spool_str(&s->rows, &b);
    if (b.oom || t.oom)
        o->failed = 1;
    free(b.p);
    free(t.p);
}

static int render_csv(struct out *o)
{
    struct section *s = NULL;
    for (size_t k = 0; k < o->nsecs; k++)
        if (o->secs[k].kind != OUT_OBJECT)
            s = &o->secs[k];
    if (!s && o->nsecs)
        s = &o->secs[0];
    if (!s)
        return 0;
    FILE *f = o->f;
    struct out_buf b = { 0 }, st = { 0 };
    unsigned char has_stack;
    const char *sep = "";
    int rc = 0;
    for (size_t c = 0; !rc && c < s->ncols; c++) {
        fputs(sep, f);
        b.len = 0;
        csv_field(&b, s->cols[c].key);
        rc = put_buf(f, &b);
        sep = ",";
    }
    if (s->any_stack)
        fprintf(f, "%sstack", sep);
    fputs("\r\n", f);
    if (!rc)
        rc = spool_rewind(&s->rows);
    for (size_t i = 0; !rc && i < s->nrows; i++) {
        if ((rc = spool_read(&s->rows, &has_stack, 1)) || (rc = spool_read_str(&s->rows, &b)) ||
            (rc = spool_read_str(&s->rows, &st)))
            break;
        fputs(b.p, f);
        if (s->any_stack) {
            fputs(sep, f);
            fputs(st.p, f);
        }
        fputs("\r\n", f);
    }
    free(b.p);
    free(st.p);
    return rc;
}

/* ---- rows as they come ---------------------------------------------------- */

static void render_row(struct out *o, struct section *s, const struct cell *cells,
                       const struct out_stack *stack)
{
    unsigned char has_stack = stack != NULL;
    struct out_buf b = { 0 };
    if (stack)
        s->any_stack = 1;
    spool_write(&s->rows, &has_stack, 1);
    switch (o->fmt) {
    case OUT_TABLE:
        if (s->kind == OUT_LIST) {
            table_list_row(o, s, cells, stack);
        } else {
            table_record_row(o, s, cells, stack, &b);
            spool_str(&s->rows, &b);
        }
        break;
    case OUT_JSON: json_row_parts(o, s, cells, stack); break;
    case OUT_CSV: csv_row_parts(o, s, cells, stack); break;
    }
    if (b.oom)
        o->failed = 1;
    free(b.p);
}

int out__end(struct out *o)
{
    if (!o)
        return -ENOMEM;
    int rc = 0;
    if (o->failed) {
        rc = -ENOMEM;
        goto out;
    }
    switch (o->fmt) {
    case OUT_TABLE: rc = render_table(o); break;
    case OUT_JSON: rc = render_json(o); break;
    case OUT_CSV: rc = render_csv(o); break;
    }
    if (fflush(o->f) || ferror(o->f))
        rc = -EIO;
out:
    free_all(o);
    return rc;
}

int out__object(enum out_format fmt, FILE *stream, const char *name, const struct out_col *cols,
                size_t ncols, const struct out_val *vals)
{
    struct out *o = out__begin(fmt, 0, stream);
    int rc;
    if (!o)
        return -ENOMEM;
    if ((rc = out__section(o, name, OUT_OBJECT, NULL, cols, ncols)) ||
        (rc = out__row(o, vals, NULL))) {
        out__abort(o);
        return rc;
    }
    return out__end(o);
}
