/* log.c — the shim's only way to speak: "vheap: ..." lines on fd 2.
 *
 * It runs inside arbitrary programs, possibly in a malloc hook or a signal
 * handler, so it formats with its own small formatter into a stack buffer
 * and write(2)s once: no stdio, no malloc, no locale. Rate-limited so a
 * broken environment cannot flood the program's stderr. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preload/internal.h"
#include "preload/sys.h"

#define VH_LOG_MAX_LINES 32

static unsigned log_lines;         /* atomic */

struct out {
    char *buf;
    size_t size, len;
    int escape;                    /* a line for stderr: escape %s controls */
};

static void put_char(struct out *o, char c)
{
    if (o->len + 1 < o->size)
        o->buf[o->len] = c;
    o->len++;
}

/* Strings are names the program or the user chose (paths, labels):
 * control bytes are written as \xNN, so none reaches a terminal raw. */
static void put_str(struct out *o, const char *s)
{
    if (!s)
        s = "(null)";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (o->escape && (c < 0x20 || c == 0x7f)) {
            put_char(o, '\\');
            put_char(o, 'x');
            put_char(o, "0123456789abcdef"[c >> 4]);
            put_char(o, "0123456789abcdef"[c & 15]);
        } else {
            put_char(o, (char)c);
        }
    }
}

static void put_unsigned(struct out *o, unsigned long long v, unsigned base)
{
    char tmp[24];
    int n = 0;
    do {
        unsigned d = (unsigned)(v % base);
        tmp[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
        v /= base;
    } while (v);
    while (n)
        put_char(o, tmp[--n]);
}

static size_t format(char *buf, size_t size, int escape, const char *fmt, va_list ap)
{
    struct out o = { buf, size, 0, escape };
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') {
            put_char(&o, *p);
            continue;
        }
        p++;
        int lng = 0, sz = 0;
        while (*p == 'l') {
            lng++;
            p++;
        }
        if (*p == 'z') {
            sz = 1;
            p++;
        }
        switch (*p) {
        case 's': put_str(&o, va_arg(ap, const char *)); break;
        case 'c': put_char(&o, (char)va_arg(ap, int)); break;
        case 'd': {
            long long v = lng ? (lng > 1 ? va_arg(ap, long long) : va_arg(ap, long))
                              : sz ? (long long)va_arg(ap, ssize_t) : va_arg(ap, int);
            if (v < 0) {
                put_char(&o, '-');
                put_unsigned(&o, (unsigned long long)0 - (unsigned long long)v, 10);
            } else {
                put_unsigned(&o, (unsigned long long)v, 10);
            }
            break;
        }
        case 'u':
        case 'x': {
            unsigned long long v = lng ? (lng > 1 ? va_arg(ap, unsigned long long)
                                                  : va_arg(ap, unsigned long))
                                       : sz ? va_arg(ap, size_t) : va_arg(ap, unsigned);
            put_unsigned(&o, v, *p == 'x' ? 16 : 10);
            break;
        }
        case 'p':
            put_str(&o, "0x");
            put_unsigned(&o, (uintptr_t)va_arg(ap, void *), 16);
            break;
        case '%': put_char(&o, '%'); break;
        case '\0': p--; break;
        default: put_char(&o, '%'); put_char(&o, *p); break;
        }
    }
    if (size)
        buf[o.len < size ? o.len : size - 1] = '\0';
    return o.len < size ? o.len : (size ? size - 1 : 0);
}

size_t vh_vformat(char *buf, size_t size, const char *fmt, va_list ap)
{
    return format(buf, size, 0, fmt, ap);
}

const char *vh_errname(int err)
{
    const char *n = strerrorname_np(err);
    return n ? n : "unknown error";
}

size_t vh_format(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t n = vh_vformat(buf, size, fmt, ap);
    va_end(ap);
    return n;
}

/* What fd 2 was when the shim started. A daemon that closes it and opens
 * its data file at number 2 must not get our lines appended to it: a
 * line is written only while fd 2 is still that file. */
static int stderr_state;           /* 0: not looked at, 1: known, -1: closed */
static dev_t stderr_dev;
static ino_t stderr_ino;

void vh_log_init(void)
{
    struct stat st;
    if (fstat(2, &st) == 0) {
        stderr_dev = st.st_dev;
        stderr_ino = st.st_ino;
        stderr_state = 1;
    } else {
        stderr_state = -1;
    }
}

static int stderr_same(void)
{
    struct stat st;
    if (stderr_state == 0)
        return 1;                  /* before init: nothing to compare with */
    return stderr_state > 0 && fstat(2, &st) == 0 && st.st_dev == stderr_dev &&
           st.st_ino == stderr_ino;
}

static void emit(const char *fmt, va_list ap)
{
    int saved = errno;             /* the program may be looking at errno */
    if (!stderr_same()) {
        errno = saved;
        return;
    }
    char buf[512];
    memcpy(buf, "vheap: ", 7);
    size_t n = 7 + format(buf + 7, sizeof buf - 8, 1, fmt, ap);
    buf[n++] = '\n';
    for (size_t off = 0; off < n;) {
        ssize_t w = vh_sys_write(2, buf + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    errno = saved;
}

void vh_log(const char *fmt, ...)
{
    if (__atomic_fetch_add(&log_lines, 1, __ATOMIC_RELAXED) >= VH_LOG_MAX_LINES)
        return;
    va_list ap;
    va_start(ap, fmt);
    emit(fmt, ap);
    va_end(ap);
}

void vh_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(fmt, ap);
    va_end(ap);
}
