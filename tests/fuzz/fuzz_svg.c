/* fuzz_svg.c — libFuzzer target: the SVG chart writer (analyze/render/svg.c), which
 * draws whatever a capture and its binaries hold: function names and paths
 * as labels and tooltips, sizes and times as values (NaN, infinities and
 * 2^63 included). The input is consumed as: axes, a point count, x and y
 * values as raw doubles, then NUL-separated strings for the texts. Checks:
 * the document is valid UTF-8 without control characters, every '<' has its
 * '>' (so no label opened a tag), and the functions return what svg.h says. */
#include <errno.h>
#include <math.h>

#include "analyze/render/svg.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct in {
    const uint8_t *p;
    size_t n;
};

static unsigned take_u8(struct in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static double take_double(struct in *in)
{
    double d = 0;
    if (in->n >= sizeof d) {
        memcpy(&d, in->p, sizeof d);
        in->p += sizeof d;
        in->n -= sizeof d;
    }
    return d;
}

/* The next NUL-terminated string of the tail (kept in `tail`, whose last
 * byte is always NUL), or "" when it is used up. */
static const char *take_str(char **tail, const char *end)
{
    char *s = *tail;
    if (s >= end)
        return "";
    *tail += strlen(s) + 1;
    return s;
}

static void check_document(const char *doc, size_t len)
{
    size_t lt = 0, gt = 0;
    for (size_t i = 0; i < len;) {
        unsigned char ch = (unsigned char)doc[i];
        size_t k = ch < 0x80 ? 1 : (ch & 0xe0) == 0xc0 ? 2 : (ch & 0xf0) == 0xe0 ? 3
                             : (ch & 0xf8) == 0xf0 ? 4 : 0;
        FZ_CHECK(k && i + k <= len, "invalid UTF-8 byte 0x%02x at %zu", ch, i);
        for (size_t j = 1; j < k; j++)
            FZ_CHECK(((unsigned char)doc[i + j] & 0xc0) == 0x80, "bad continuation at %zu",
                     i + j);
        FZ_CHECK(ch >= 0x20 || ch == '\t' || ch == '\n' || ch == '\r',
                 "control character 0x%02x at %zu", ch, i);
        lt += ch == '<';
        gt += ch == '>';
        i += k;
    }
    FZ_CHECK(lt == gt, "%zu '<' but %zu '>'", lt, gt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct in in = { data, size };
    struct svg_chart_opts o = { 0 };
    struct svg_chart *c;
    double x[64], y[8][64];
    size_t npts, nser, nmarks;
    char *texts, *tail, *end, *doc = NULL;
    size_t doclen = 0;
    FILE *f;
    int rc;

    o.x_axis = (enum svg_axis)(take_u8(&in) % 3);
    o.y_axis = (enum svg_axis)(take_u8(&in) % 3);
    o.width = (int)(take_u8(&in) % 4) * 400;    /* 0 = the default size */
    o.height = (int)(take_u8(&in) % 4) * 200;
    npts = take_u8(&in) % 65;
    nser = take_u8(&in) % 9;
    nmarks = take_u8(&in) % 6;
    for (size_t i = 0; i < npts; i++)
        x[i] = take_double(&in);
    for (size_t s = 0; s < nser; s++)
        for (size_t i = 0; i < npts; i++)
            y[s][i] = take_double(&in);
    /* The rest: strings. */
    texts = malloc(in.n + 1);
    if (!texts)
        return 0;
    memcpy(texts, in.p, in.n);
    texts[in.n] = '\0';
    tail = texts;
    end = texts + in.n + 1;
    o.title = take_str(&tail, end);
    o.subtitle = take_str(&tail, end);
    o.x_title = take_str(&tail, end);
    o.y_title = take_str(&tail, end);

    c = svg_chart__new(&o);
    FZ_CHECK(c, "svg_chart__new failed");
    /* x must be non-decreasing: an input that is not gets -EINVAL. */
    rc = svg_chart__set_x(c, x, npts);
    {
        int sorted = 1;
        for (size_t i = 1; i < npts; i++)
            if (!(x[i] >= x[i - 1]))
                sorted = 0;
        FZ_CHECK(rc == 0 || rc == -EINVAL, "set_x returned %d", rc);
        if (sorted && rc) {
            /* NaN or infinities may be refused too: only finite sorted x
             * must be accepted. */
            int finite = 1;
            for (size_t i = 0; i < npts; i++)
                finite &= isfinite(x[i]) != 0;
            FZ_CHECK(!finite || !npts, "set_x refused %zu finite sorted values", npts);
        }
    }
    if (rc == 0) {
        for (size_t s = 0; s < nser; s++) {
            struct svg_series ser = {
                .style = (enum svg_style)(take_u8(&in) % 3),
                .label = take_str(&tail, end),
                .note = take_str(&tail, end),
                .tooltip = take_str(&tail, end),
                .y = y[s],
            };
            ser.dashed = s & 1;
            ser.no_scale = (s >> 1) & 1;
            rc = svg_chart__add(c, &ser);
            FZ_CHECK(rc == 0 || rc == -EINVAL, "add returned %d", rc);
        }
        for (size_t m = 0; m < nmarks; m++) {
            rc = svg_chart__add_mark(c, npts ? x[m % npts] : (double)m, take_str(&tail, end));
            FZ_CHECK(rc == 0 || rc == -EINVAL, "add_mark returned %d", rc);
        }
    }
    f = open_memstream(&doc, &doclen);
    FZ_CHECK(f, "open_memstream");
    rc = svg_chart__write(c, f);
    fclose(f);
    FZ_CHECK(rc == 0, "write returned %d", rc);
    check_document(doc, doclen);
    free(doc);
    svg_chart__free(c);
    free(texts);
    return 0;
}
