/* fuzz_shim_options.c — libFuzzer target: the shim's VHEAP_* environment
 * parser (preload/options.c) and its log formatter (preload/log.c), which
 * run inside every profiled program on whatever environment it was given.
 * The input is an environment: NUL-separated VAR=value strings. Checks that
 * every option stays within the bounds documented in options.c whatever the
 * input, and that VHEAP_OUT stays NUL-terminated. */
#include "preload/internal.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

extern char **environ;

#define MAX_VARS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct vh_options defaults;
    static int have_defaults;
    char *buf = malloc(size + 1), *env[MAX_VARS + 1], **saved = environ;

    if (!buf)
        return 0;
    if (!have_defaults) {
        defaults = vh_opt;
        have_defaults = 1;
        fz_init();
    }
    int n = fz_words(data, size, buf, env, MAX_VARS);

    vh_opt = defaults;
    environ = env;
    vh_options_load();
    environ = saved;

    FZ_CHECK(memchr(vh_opt.out, '\0', sizeof vh_opt.out), "VHEAP_OUT not terminated");
    FZ_CHECK(vh_opt.out[0], "VHEAP_OUT empty");
    FZ_CHECK(vh_opt.depth >= 1 && vh_opt.depth <= VH_MAX_DEPTH, "depth %u", vh_opt.depth);
    FZ_CHECK(vh_opt.unwind == VH_UNWIND_LIBUNWIND || vh_opt.unwind == VH_UNWIND_FP,
             "unwind %u", vh_opt.unwind);
    FZ_CHECK(vh_opt.quiet <= 1 && vh_opt.allow_setuid <= 1, "bool");
    FZ_CHECK(vh_opt.chunk_size >= (64u << 10) && vh_opt.chunk_size <= (64u << 20) &&
                 !(vh_opt.chunk_size & (vh_opt.chunk_size - 1)),
             "chunk size %u", vh_opt.chunk_size);
    FZ_CHECK(vh_opt.rss_interval_ns <= 60000ull * 1000000ull, "rss interval");

    /* The formatter on the input as a string argument, and as a format:
     * never past the buffer, always terminated. */
    {
        char out[64];
        size_t k = vh_format(out, sizeof out, "%s=%d %zu %x", buf, n, size, (unsigned)size);
        FZ_CHECK(k < sizeof out && out[k] == '\0', "vh_format length %zu", k);
    }
    free(buf);
    return 0;
}
