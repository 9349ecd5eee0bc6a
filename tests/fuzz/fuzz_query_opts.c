/* fuzz_query_opts.c — libFuzzer target: the option parser every query
 * command shares (analyze/cmd/query.c, vh_query__parse). The input is an
 * argv: NUL-separated words, the first being the command name. Checks that
 * parsing succeeds only with exactly one operand, that counts are never
 * negative, and that a --min-bytes value means what a reference reading of
 * its suffix says (4K = 4000, 4KiB = 4096, 3B = 3). */
#include <errno.h>

#include "analyze/cmd/query.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 64

/* The reference (common/size_parse.h's rule, read another way): digits,
 * then a suffix that, lowercased, is one of a table's. -1 if not a size or
 * it does not fit in int64. */
static int64_t ref_size(const char *s)
{
    static const struct { const char *suffix; unsigned __int128 mul; } units[] = {
        { "", 1 }, { "b", 1 },
        { "k", 1000 }, { "kb", 1000 }, { "ki", 1024 }, { "kib", 1024 },
        { "m", 1000000 }, { "mb", 1000000 }, { "mi", 1 << 20 }, { "mib", 1 << 20 },
        { "g", 1000000000 }, { "gb", 1000000000 }, { "gi", 1 << 30 }, { "gib", 1 << 30 },
        { "t", 1000000000000ull }, { "tb", 1000000000000ull },
        { "ti", 1ull << 40 }, { "tib", 1ull << 40 },
    };
    unsigned __int128 v = 0;
    const char *p = s;
    char low[8];

    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (unsigned)(*p - '0');
        if (v > INT64_MAX)
            return -1;
    }
    size_t n = strlen(p);
    if (n >= sizeof low)
        return -1;
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)((p[i] >= 'A' && p[i] <= 'Z') ? p[i] + 32 : p[i]);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(low, units[i].suffix))
            continue;
        v *= units[i].mul;
        return v > INT64_MAX ? -1 : (int64_t)v;
    }
    return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct vh_command cmd = { .name = "fuzz", .summary = "", .usage = "" };
    char *buf = malloc(size + 1), *argv[MAX_ARGS + 1];
    int argc = 0, rc;
    struct vh_query q;
    const char *min_bytes = NULL;
    int operands = 0, dashdash = 0;

    if (!buf)
        return 0;
    argc = fz_words(data, size, buf, argv, MAX_ARGS);
    if (fz_fd < 0)
        fz_init();

    rc = vh_query__parse(&q, &cmd, VH_QOPT_MIN_BYTES | VH_QOPT_BY, NULL, 0, argc, argv);
    FZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM, "rc %d", rc);
    const struct vh_qopts o = q.o;

    /* What the parser must have seen, read the simple way. */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (dashdash || a[0] != '-' || !a[1]) {
            operands++;
        } else if (!strcmp(a, "--")) {
            dashdash = 1;
        } else if (!strncmp(a, "--min-bytes=", 12)) {
            min_bytes = a + 12;
        } else if (!strcmp(a, "--min-bytes") && i + 1 < argc) {
            min_bytes = argv[++i];
        } else if ((!strcmp(a, "--format") || !strcmp(a, "--limit") ||
                    !strcmp(a, "--depth") || !strcmp(a, "--heap") || !strcmp(a, "--by")) &&
                   i + 1 < argc) {
            i++;
        }
    }
    if (rc == 0) {
        FZ_CHECK(operands == 1 && o.input, "accepted with %d operands", operands);
        FZ_CHECK(o.limit >= 0 && o.depth >= 0 && o.min_bytes >= 0, "negative count");
        FZ_CHECK(o.format == OUT_TABLE || o.format == OUT_JSON || o.format == OUT_CSV,
                 "format %d", (int)o.format);
        if (min_bytes)
            FZ_CHECK(o.min_bytes == ref_size(min_bytes),
                     "--min-bytes '%s' read as %lld, reference %lld", min_bytes,
                     (long long)o.min_bytes, (long long)ref_size(min_bytes));
    }
    vh_query__finish(&q, rc);
    free(buf);
    return 0;
}
