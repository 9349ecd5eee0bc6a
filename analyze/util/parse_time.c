/* parse_time.c — durations given on the command line (parse_time.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/util/parse_time.h"

int vh_parse_time(const char *s, uint64_t *ns)
{
    static const struct { const char *suffix; double mul; } units[] = {
        { "ns", 1 }, { "us", 1e3 }, { "\xc2\xb5s", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "", 1e9 },
    };
    char *end;
    if (!*s || *s == '-' || *s == '+' || *s == ' ')
        return -EINVAL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return -EINVAL;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix))
            continue;
        double t = v * units[i].mul;
        if (t >= 9.2e18)
            return -EINVAL;
        *ns = (uint64_t)llround(t);
        return 0;
    }
    return -EINVAL;
}
