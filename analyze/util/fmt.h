/* util/fmt.h — formatted and growing strings: printf into a new string
 * (the labels and titles charts compose), a string that grows as it is
 * written (cell text, exported lines, the loader's argv JSON), and printf
 * into any sink; durations as people read them. (The out_ names are the renderer's, where they began.) */
#ifndef VHEAP_FMT_H
#define VHEAP_FMT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* The formatted text, malloc'd (the caller frees it), or NULL when out of
 * memory. */
char *vh_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A duration for people: "5 ms", "250 µs", "1.5 s": one decimal when not
 * whole, or with `fine` two below 10 of the unit ("1.25 ms", a chart's
 * bins). */
void vh_fmt_duration(uint64_t ns, int fine, char *buf, size_t len);

/* Seconds with `dec` decimals (0..9), cut, not rounded: "1.250s". */
void vh_fmt_secs(uint64_t ns, int dec, char *buf, size_t len);

/* A growing string. Appending never fails loudly: on ENOMEM `oom` is set
 * and later appends do nothing, so a caller checks once at the end. `p` is
 * NUL-terminated (NULL while nothing was added); set `len` to 0 to reuse
 * it, free(p) when done. */
struct out_buf {
    char *p;
    size_t len, cap;
    int oom;
};

void out_buf__add(struct out_buf *b, const char *s, size_t n);
void out_buf__puts(struct out_buf *b, const char *s);
void out_buf__printf(struct out_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* out_buf__add as a sink (vh_json_str, out__vprint): arg is the out_buf. */
void out_buf__sink(void *b, const char *s, size_t n);

/* Formats like vsnprintf and hands the text to sink(arg, text, length),
 * allocating only for long texts. Returns the length, or -EINVAL (a bad
 * format) / -ENOMEM, and then sink is not called. */
int out__vprint(void (*sink)(void *arg, const char *s, size_t n), void *arg, const char *fmt,
                va_list ap);

#endif
