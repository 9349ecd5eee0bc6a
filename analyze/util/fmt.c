/* util/fmt.c — formatted and growing strings (fmt.h). */
#include <errno.h>
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
