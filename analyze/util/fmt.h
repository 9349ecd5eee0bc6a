/* util/fmt.h — printf into a new string, for the labels and titles that
 * the charts and series tables compose. */
#ifndef VHEAP_FMT_H
#define VHEAP_FMT_H

/* The formatted text, malloc'd (the caller frees it), or NULL when out of
 * memory. */
char *vh_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
