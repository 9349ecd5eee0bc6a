/* json.h — the one JSON string writer: every query's --format json, the
 * exports and the HTML report's data, and the argv the loader stores.
 * Quotes and backslashes escaped, \n \t \r as such, other control bytes and
 * DEL as \u00XX, and bytes that are not UTF-8 as U+FFFD (JSON must be
 * UTF-8; a path or argv in a capture may be anything). */
#ifndef VHEAP_JSON_H
#define VHEAP_JSON_H

#include <stddef.h>

/* Where the bytes go: a FILE, an output file, a growing buffer. */
typedef void vh_json_sink(void *arg, const char *s, size_t n);

enum {
    /* '<' as \u003c too, so that the JSON can sit inside an HTML <script>. */
    VH_JSON_HTML = 1,
};

/* Writes s[0..n) as a quoted JSON string (NUL bytes in it as \u0000). */
void vh_json_str(vh_json_sink *sink, void *arg, const char *s, size_t n, unsigned flags);

/* The length of the well-formed UTF-8 sequence at s (1 to 4), or 0 when it
 * is not one (overlong, a surrogate, above U+10FFFF, cut short). s must
 * have a terminator or enough bytes after it. */
size_t vh_utf8_len(const unsigned char *s);

#endif
