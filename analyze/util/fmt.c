/* util/fmt.c — vh_xasprintf (fmt.h). */
#include <stdarg.h>
#include <stdio.h>

#include "analyze/util/fmt.h"

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
