/* xout.h — the file an export or the report writes. A path ending in .gz
 * is written gzip-compressed (zlib), .zst zstd, anything else as is; "-"
 * is stdout, never compressed. A regular file is written under a temporary
 * name and renamed over its final one by commit (util/tmpfile.h), so a
 * failed or interrupted export leaves no half-written file under that name;
 * a device or FIFO is written in place. */
#ifndef VHEAP_XOUT_H
#define VHEAP_XOUT_H

#include <stddef.h>
#include <stdint.h>

struct vh_xout;

enum vh_xout_codec { VH_XOUT_PLAIN, VH_XOUT_GZIP, VH_XOUT_ZSTD };

/* 0 or -errno with the reason in err. */
int vh_xout__open(const char *path, struct vh_xout **out, char *err, size_t errlen);
enum vh_xout_codec vh_xout__codec(const struct vh_xout *o);
/* Buffered; a write error is remembered and reported by commit. */
void vh_xout__write(struct vh_xout *o, const void *p, size_t n);
void vh_xout__puts(struct vh_xout *o, const char *s);
void vh_xout__printf(struct vh_xout *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A JSON string: quotes, backslashes and control characters escaped, bytes
 * that are not UTF-8 replaced by U+FFFD (JSON must be UTF-8), '<' as \u003c
 * (safe inside an HTML <script>). NULL is "". */
void vh_xout__json_str(struct vh_xout *o, const char *s);
/* Bytes handed to write so far (before compression). */
uint64_t vh_xout__bytes(const struct vh_xout *o);
/* Finishes the stream and renames the file into place; frees o. 0 or -errno
 * (err filled; the temporary file is removed). */
int vh_xout__commit(struct vh_xout *o, char *err, size_t errlen);
/* Removes the temporary file; frees o. NULL is fine. */
void vh_xout__discard(struct vh_xout *o);

#endif
