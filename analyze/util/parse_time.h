/* parse_time.h — the durations and instants options take (--at, --from,
 * --to, --interval, --window): "100ms", "1.5s", "250us", "250µs",
 * "5000ns", "2" (seconds). Sizes: common/size_parse.h. */
#ifndef VHEAP_PARSE_TIME_H
#define VHEAP_PARSE_TIME_H

#include <stdint.h>

/* 0 and *ns, or -EINVAL (negative, signed, not finite, above 2^63 ns). */
int vh_parse_time(const char *s, uint64_t *ns);

#endif
