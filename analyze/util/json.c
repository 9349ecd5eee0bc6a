/* json.c — JSON strings, UTF-8 checked (json.h). */
#include <stdint.h>
#include <stdio.h>

#include "analyze/util/json.h"

/* vh_utf8_len() reading no further than s[avail - 1]. */
static size_t utf8_len_within(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0) { n = 2; cp = c & 0x1f; }
    else if ((c & 0xf0) == 0xe0) { n = 3; cp = c & 0x0f; }
    else if ((c & 0xf8) == 0xf0) { n = 4; cp = c & 0x07; }
    else return 0;
    if (n > avail)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

size_t vh_utf8_len(const unsigned char *s)
{
    /* The terminator stops the scan: it is no continuation byte. */
    return utf8_len_within(s, 4);
}

void vh_json_str(vh_json_sink *sink, void *arg, const char *s, size_t n, unsigned flags)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    const unsigned char *run = p;  /* bytes that go out as they are */
    char esc[8];

    sink(arg, "\"", 1);
    while (p < end) {
        unsigned char c = *p;
        size_t k = 1;
        const char *rep = NULL;
        size_t replen = 2;
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c;
            rep = esc;
        } else if (c == '\n') {
            rep = "\\n";
        } else if (c == '\t') {
            rep = "\\t";
        } else if (c == '\r') {
            rep = "\\r";
        } else if (c < 0x20 || c == 0x7f || (c == '<' && (flags & VH_JSON_HTML))) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            rep = esc, replen = 6;
        } else if (c >= 0x80) {
            /* A sequence cut by the end of the string is not UTF-8 either. */
            k = utf8_len_within(p, (size_t)(end - p));
            if (!k)
                rep = "\\ufffd", replen = 6, k = 1;
        }
        if (rep) {
            if (p > run)
                sink(arg, (const char *)run, (size_t)(p - run));
            sink(arg, rep, replen);
            run = p + k;
        }
        p += k;
    }
    if (p > run)
        sink(arg, (const char *)run, (size_t)(p - run));
    sink(arg, "\"", 1);
}
