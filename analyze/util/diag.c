/* diag.c — the analyzer's diagnostics (diag.h). */
#include <stdarg.h>
#include <stdio.h>

#include "analyze/util/diag.h"

/* Diagnostics name files, programs and labels that other people chose: a
 * control byte in them is shown as \xNN, never sent to the terminal raw
 * (newlines and tabs of the message itself stay). */
static void put_diag(const char *prefix, const char *fmt, va_list ap)
{
    char buf[8192];
    vsnprintf(buf, sizeof buf, fmt, ap);
    fputs(prefix, stderr);
    for (const unsigned char *p = (const unsigned char *)buf; *p; p++) {
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f)
            fprintf(stderr, "\\x%02x", *p);
        else
            fputc(*p, stderr);
    }
    fputc('\n', stderr);
}

void vh_errorf(const char *cmd, const char *fmt, ...)
{
    char prefix[128];
    va_list ap;
    snprintf(prefix, sizeof prefix, "vheap-analyze: %s%s", cmd ? cmd : "", cmd ? ": " : "");
    va_start(ap, fmt);
    put_diag(prefix, fmt, ap);
    va_end(ap);
}

void vh_notef(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_diag("", fmt, ap);
    va_end(ap);
}
