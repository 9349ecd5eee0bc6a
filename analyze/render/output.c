/* output.c — renders query results as a table, JSON or CSV (output.h).
 *
 * Rows are copied into the renderer and printed at out__end(): tables need
 * every width before the first line. Formatting rules live here only, so the
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

struct cell {
    enum out_val_kind kind;
    int64_t i;
    double r;
    char *s;
    char **words;
    size_t nwords;
    char *note;
};

struct row {
    struct cell *cells;
    struct out_stack *stack;
};

struct section {
    char *name;
    char *title;
    enum out_section_kind kind;
    const struct out_col *cols;
    size_t ncols;
    struct row *rows;
    size_t nrows, cap;
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

int out__row(struct out *o, const struct out_val *vals, struct out_stack *stack)
{
    if (!o->nsecs) {
        out_stack__free(stack);
        return -EINVAL;
    }
    struct section *s = &o->secs[o->nsecs - 1];
    if (vh_grow(&s->rows, &s->cap, s->nrows, sizeof *s->rows, 16)) {
        o->failed = 1;
        out_stack__free(stack);
        return -ENOMEM;
    }
    struct row *r = &s->rows[s->nrows++];
    r->stack = stack;
    r->cells = calloc(s->ncols ? s->ncols : 1, sizeof *r->cells);
    if (!r->cells) {
        o->failed = 1;
        return -ENOMEM;
    }
    for (size_t c = 0; c < s->ncols; c++) {
        const struct out_val *v = &vals[c];
        struct cell *cl = &r->cells[c];
        cl->kind = v->kind;
        cl->i = v->i;
        cl->r = v->r;
        cl->note = dup_or_fail(o, v->note);
        if (v->kind == OV_TEXT) {
            cl->s = dup_or_fail(o, v->s);
            if (!cl->s)
                cl->kind = OV_NULL;
        } else if (v->kind == OV_WORDS) {
            cl->words = calloc(v->nwords ? v->nwords : 1, sizeof *cl->words);
            if (!cl->words) {
                o->failed = 1;
                cl->kind = OV_NULL;
                continue;
            }
            cl->nwords = v->nwords;
            for (size_t w = 0; w < v->nwords; w++)
                cl->words[w] = dup_or_fail(o, v->words[w] ? v->words[w] : "");
        }
    }
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
        for (size_t i = 0; i < s->nrows; i++) {
            struct row *r = &s->rows[i];
            for (size_t c = 0; r->cells && c < s->ncols; c++) {
                free(r->cells[c].s);
                free(r->cells[c].note);
                for (size_t w = 0; w < r->cells[c].nwords; w++)
                    free(r->cells[c].words[w]);
                free(r->cells[c].words);
            }
            free(r->cells);
            out_stack__free(r->stack);
        }
        for (size_t i = 0; i < s->nnotes; i++)
            free(s->notes[i]);
        free(s->notes);
        free(s->rows);
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
            buf_safe(b, c->words[w]);
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
            if (strcmp(a->words[w], b->words[w]))
                return 0;
        return 1;
    }
    return 0;
}

static int is_zero(const struct cell *c)
{
    return c->kind == OV_INT && c->i == 0;
}

static int table_shows(const struct section *s, size_t c)
{
    const struct out_col *col = &s->cols[c];
    if (col->flags & (OUT_F_NO_TABLE | OUT_F_CSV_ONLY))
        return 0;
    if ((col->flags & OUT_F_HIDE_ZERO) && s->kind == OUT_LIST) {
        for (size_t i = 0; i < s->nrows; i++)
            if (!is_zero(&s->rows[i].cells[c]))
                return 1;
        return 0;
    }
    if ((col->flags & OUT_F_HIDE_SAME) && s->kind == OUT_LIST) {
        for (size_t i = 1; i < s->nrows; i++)
            if (!cells_equal(&s->rows[0].cells[c], &s->rows[i].cells[c]))
                return 1;
        return 0;
    }
    return 1;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
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
static void table_stack(FILE *f, const struct out_stack *st, const char *indent)
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
            buf_safe(&b, base_name(fr->module));
            if (!fr->function && fr->has_offset)
                out_buf__printf(&b, "+0x%" PRIx64, (uint64_t)fr->offset);
        }
        if (!b.oom)
            fprintf(f, "%s\n", b.p);
    }
    if (st->omitted)
        fprintf(f, "%s... %zu more frames\n", indent, st->omitted);
    else if (st->truncated)
        fprintf(f, "%s... (stack truncated at the recording depth)\n", indent);
    if (!st->n && !st->omitted)
        fprintf(f, "%s(no stack recorded)\n", indent);
    free(b.p);
}

static void table_records(const struct out *o, const struct section *s)
{
    struct out_buf b = { 0 };
    for (size_t i = 0; i < s->nrows; i++) {
        const struct row *r = &s->rows[i];
        if (i)
            fputc('\n', o->f);
        for (size_t c = 0; c < s->ncols; c++) {
            if (!table_shows(s, c) || r->cells[c].kind == OV_NULL ||
                ((s->cols[c].flags & OUT_F_HIDE_ZERO) && is_zero(&r->cells[c])))
                continue;
            b.len = 0;
            table_cell(o, &s->cols[c], &r->cells[c], &b);
            if (!b.oom)
                fprintf(o->f, "%s: %s\n", s->cols[c].title, b.p);
        }
        if (r->stack)
            table_stack(o->f, r->stack, "    ");
    }
    free(b.p);
}

static void table_list(const struct out *o, const struct section *s)
{
    if (!s->nrows)
        return;                    /* a lone header says less than a note */
    size_t nc = s->ncols;
    size_t *w = calloc(nc ? nc : 1, sizeof *w);
    int *show = calloc(nc ? nc : 1, sizeof *show);
    char **text = calloc(s->nrows * nc + 1, sizeof *text);
    if (!w || !show || !text)
        goto out;
    size_t last = 0;
    for (size_t c = 0; c < nc; c++) {
        show[c] = table_shows(s, c);
        if (show[c]) {
            w[c] = strlen(s->cols[c].title);
            last = c;
        }
    }
    for (size_t i = 0; i < s->nrows; i++) {
        for (size_t c = 0; c < nc; c++) {
            if (!show[c])
                continue;
            struct out_buf b = { 0 };
            table_cell(o, &s->cols[c], &s->rows[i].cells[c], &b);
            text[i * nc + c] = b.p ? b.p : strdup("");
            size_t l = text[i * nc + c] ? strlen(text[i * nc + c]) : 0;
            if (l > w[c])
                w[c] = l;
        }
    }
    /* Line 0 is the header: titles align like their data (numbers right). */
    for (size_t i = 0; i <= s->nrows; i++) {
        const char *sep = "";
        for (size_t c = 0; c < nc; c++) {
            if (!show[c])
                continue;
            const char *t = i == 0 ? s->cols[c].title : text[(i - 1) * nc + c];
            if (!t)
                t = "";
            if (is_numeric(s->cols[c].type))
                fprintf(o->f, "%s%*s", sep, (int)w[c], t);
            else if (c == last)
                fprintf(o->f, "%s%s", sep, t);
            else
                fprintf(o->f, "%s%-*s", sep, (int)w[c], t);
            sep = "  ";
        }
        fputc('\n', o->f);
        if (i > 0 && s->rows[i - 1].stack) {
            table_stack(o->f, s->rows[i - 1].stack, "    ");
            if (i < s->nrows)
                fputc('\n', o->f);
        }
    }
out:
    if (text)
        for (size_t i = 0; i < s->nrows * nc; i++)
            free(text[i]);
    free(text);
    free(show);
    free(w);
}

static void render_table(struct out *o)
{
    int first = 1;
    for (size_t k = 0; k < o->nsecs; k++) {
        const struct section *s = &o->secs[k];
        if (!first)
            fputc('\n', o->f);
        first = 0;
        if (s->title)
            fprintf(o->f, "%s\n", s->title);
        if (s->kind == OUT_LIST)
            table_list(o, s);
        else
            table_records(o, s);
        for (size_t i = 0; i < s->nnotes; i++)
            fprintf(o->f, "%s\n", s->notes[i]);
    }
}

/* ---- JSON ------------------------------------------------------------------ */

static void file_sink(void *f, const char *s, size_t n)
{
    fwrite(s, 1, n, f);
}

static void json_str(FILE *f, const char *s)
{
    if (!s)
        fputs("null", f);
    else
        vh_json_str(file_sink, f, s, strlen(s), 0);
}

static void json_real(FILE *f, double r)
{
    if (isfinite(r))
        fprintf(f, "%.15g", r);
    else
        fputs("null", f);
}

static void json_cell(FILE *f, const struct out_col *col, const struct cell *c)
{
    switch (c->kind) {
    case OV_NULL: fputs("null", f); break;
    case OV_TEXT: json_str(f, c->s); break;
    case OV_REAL: json_real(f, c->r); break;
    case OV_WORDS:
        fputc('[', f);
        for (size_t w = 0; w < c->nwords; w++) {
            if (w)
                fputs(", ", f);
            json_str(f, c->words[w]);
        }
        fputc(']', f);
        break;
    case OV_INT:
        if (col->type == OUT_BOOL)
            fputs(c->i ? "true" : "false", f);
        else if (col->type == OUT_REAL)
            json_real(f, (double)c->i);
        else
            fprintf(f, "%" PRId64, c->i);
        break;
    }
}

static void json_line(FILE *f, int64_t line)
{
    if (line > 0)
        fprintf(f, "%" PRId64, line);
    else
        fputs("null", f);
}

static void json_stack(FILE *f, const struct out_stack *st)
{
    fputc('[', f);
    for (size_t i = 0; i < st->n; i++) {
        const struct out_frame *fr = &st->frames[i];
        fputs(i ? ", {\"function\": " : "{\"function\": ", f);
        json_str(f, fr->function);
        fputs(", \"file\": ", f);
        json_str(f, fr->file);
        fputs(", \"line\": ", f);
        json_line(f, fr->line);
        fputs(", \"module\": ", f);
        json_str(f, fr->module);
        fprintf(f, ", \"address\": %" PRId64 ", \"offset\": ", fr->address);
        if (fr->has_offset)
            fprintf(f, "%" PRId64, fr->offset);
        else
            fputs("null", f);
        fputs(", \"inlined\": [", f);
        for (size_t j = 0; j < fr->ninlined; j++) {
            fputs(j ? ", {\"function\": " : "{\"function\": ", f);
            json_str(f, fr->inlined[j].function);
            fputs(", \"file\": ", f);
            json_str(f, fr->inlined[j].file);
            fputs(", \"line\": ", f);
            json_line(f, fr->inlined[j].line);
            fputc('}', f);
        }
        fputs("]}", f);
    }
    fputc(']', f);
}

static int section_has_stacks(const struct section *s)
{
    for (size_t i = 0; i < s->nrows; i++)
        if (s->rows[i].stack)
            return 1;
    return 0;
}

static void json_row(FILE *f, const struct section *s, const struct row *r, int stacks)
{
    const char *sep = "{";
    for (size_t c = 0; c < s->ncols; c++) {
        if (s->cols[c].flags & OUT_F_CSV_ONLY)
            continue;
        fprintf(f, "%s", sep);
        json_str(f, s->cols[c].key);
        fputs(": ", f);
        json_cell(f, &s->cols[c], &r->cells[c]);
        sep = ", ";
    }
    if (stacks) {
        fprintf(f, "%s\"stack\": ", sep);
        if (r->stack)
            json_stack(f, r->stack);
        else
            fputs("null", f);
        fprintf(f, ", \"stack_truncated\": %s",
                r->stack && (r->stack->truncated || r->stack->omitted) ? "true" : "false");
        sep = ", ";
    }
    fputs(*sep == '{' ? "{}" : "}", f);
}

static void render_json(struct out *o)
{
    FILE *f = o->f;
    fputs("{", f);
    for (size_t k = 0; k < o->nsecs; k++) {
        const struct section *s = &o->secs[k];
        int stacks = section_has_stacks(s);
        fputs(k ? ",\n  " : "\n  ", f);
        json_str(f, s->name);
        fputs(": ", f);
        if (s->kind == OUT_OBJECT) {
            if (s->nrows)
                json_row(f, s, &s->rows[0], stacks);
            else
                fputs("null", f);
            continue;
        }
        fputs("[", f);
        for (size_t i = 0; i < s->nrows; i++) {
            fputs(i ? ",\n    " : "\n    ", f);
            json_row(f, s, &s->rows[i], stacks);
        }
        fputs(s->nrows ? "\n  ]" : "]", f);
    }
    fputs(o->nsecs ? "\n}\n" : "}\n", f);
}

/* ---- CSV (RFC 4180) --------------------------------------------------------- */

static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
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
                       base_name(fr->module), (uint64_t)fr->offset);
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

static void csv_cell(FILE *f, const struct out_col *col, const struct cell *c)
{
    struct out_buf b = { 0 };
    switch (c->kind) {
    case OV_NULL:
        return;
    case OV_TEXT:
        csv_field(f, c->s);
        return;
    case OV_WORDS:
        for (size_t w = 0; w < c->nwords; w++) {
            if (w)
                out_buf__puts(&b, " ");
            out_buf__puts(&b, c->words[w]);
        }
        csv_field(f, b.p ? b.p : "");
        free(b.p);
        return;
    case OV_REAL:
        if (isfinite(c->r))
            fprintf(f, "%.15g", c->r);
        return;
    case OV_INT:
        if (col->type == OUT_BOOL)
            fputs(c->i ? "1" : "0", f);
        else
            fprintf(f, "%" PRId64, c->i);
        return;
    }
}

static void render_csv(struct out *o)
{
    const struct section *s = NULL;
    for (size_t k = 0; k < o->nsecs; k++)
        if (o->secs[k].kind != OUT_OBJECT)
            s = &o->secs[k];
    if (!s && o->nsecs)
        s = &o->secs[0];
    if (!s)
        return;
    int stacks = section_has_stacks(s);
    FILE *f = o->f;
    const char *sep = "";
    for (size_t c = 0; c < s->ncols; c++) {
        fputs(sep, f);
        csv_field(f, s->cols[c].key);
        sep = ",";
    }
    if (stacks)
        fprintf(f, "%sstack", sep);
    fputs("\r\n", f);
    for (size_t i = 0; i < s->nrows; i++) {
        const struct row *r = &s->rows[i];
        sep = "";
        for (size_t c = 0; c < s->ncols; c++) {
            fputs(sep, f);
            csv_cell(f, &s->cols[c], &r->cells[c]);
            sep = ",";
        }
        if (stacks) {
            fputs(sep, f);
            if (r->stack) {
                struct out_buf b = { 0 };
                csv_stack_text(&b, r->stack);
                csv_field(f, b.p ? b.p : "");
                free(b.p);
            }
        }
        fputs("\r\n", f);
    }
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
    case OUT_TABLE: render_table(o); break;
    case OUT_JSON: render_json(o); break;
    case OUT_CSV: render_csv(o); break;
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
