/* util/fmt.c — formatted and growing strings (fmt.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/util/fmt.h"
#include "analyze/util/grow.h"

char *vh_xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

void out_buf__add(struct out_buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (vh_reserve(&b->p, &b->cap, b->len + n + 1, 1, 64)) {
        b->oom = 1;
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void out_buf__puts(struct out_buf *b, const char *s) { out_buf__add(b, s, strlen(s)); }

int out__vprint(void (*sink)(void *arg, const char *s, size_t n), void *arg, const char *fmt,
                va_list ap)
{
    char small[512], *text = small;
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n >= 0 && (size_t)n >= sizeof small) {
        if ((text = malloc((size_t)n + 1)))
            vsnprintf(text, (size_t)n + 1, fmt, again);
        else
            n = -ENOMEM;
    }
    va_end(again);
    if (n >= 0)
        sink(arg, text, (size_t)n);
    if (text != small)
        free(text);
    return n < 0 && n != -ENOMEM ? -EINVAL : n;
}

void out_buf__sink(void *b, const char *s, size_t n) { out_buf__add(b, s, n); }

void out_buf__printf(struct out_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (out__vprint(out_buf__sink, b, fmt, ap) == -ENOMEM)
        b->oom = 1;
    va_end(ap);
}

void vh_fmt_duration(uint64_t ns, int fine, char *buf, size_t len)
{
    static const struct { uint64_t div; const char *unit; } u[] = {
        { 1000000000, "s" }, { 1000000, "ms" }, { 1000, "\xc2\xb5s" }, { 1, "ns" },
    };
    size_t i = 0;
    while (i < 3 && ns < u[i].div)
        i++;
    double v = (double)ns / (double)u[i].div;
    snprintf(buf, len, "%.*f %s", ns % u[i].div ? (fine && v < 10 ? 2 : 1) : 0, v, u[i].unit);
}

void vh_fmt_secs(uint64_t ns, int dec, char *buf, size_t len)
{
    uint64_t div = 1;
    for (int i = dec; i < 9; i++)
        div *= 10;
    snprintf(buf, len, "%" PRIu64 ".%0*" PRIu64 "s", ns / 1000000000u, dec,
             (ns % 1000000000u) / div);
}
