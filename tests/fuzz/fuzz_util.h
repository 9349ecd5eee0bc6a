/* fuzz_util.h — what the libFuzzer targets of tests/fuzz/ share: the input
 * as a file (the analyzer reads paths, not buffers), stdout silenced, and a
 * check that aborts with a message so libFuzzer keeps the input.
 * Header-only; each target includes it once. */
#ifndef VHEAP_TESTS_FUZZ_UTIL_H
#define VHEAP_TESTS_FUZZ_UTIL_H

#include <fcntl.h>
#include <sanitizer/common_interface_defs.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A broken invariant is a finding like a crash: abort() makes libFuzzer
 * save the input and report it. The message goes through the sanitizer's
 * report descriptor: run.sh closes the targets' own stderr (-close_fd_mask=2),
 * which the analyzer's error lines would otherwise flood. */
#define FZ_CHECK(cond, ...)                                                   \
    do {                                                                      \
        if (!(cond))                                                          \
            fz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                  \
    } while (0)

__attribute__((noreturn, format(printf, 4, 5)))
static void fz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "fuzz check failed at %s:%d: %s: ", file, line, cond);
    va_list ap;

    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof msg)
        vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    __sanitizer_report_error_summary(msg);
    abort();
}

/* One memfd reused for every input: no disk traffic, and the reader maps
 * it like a real file. Its path is /proc/self/fd/N. */
static int fz_fd = -1;
static char fz_path[64];

static inline void fz_init(void)
{
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

    /* The renderers write to stdout; only libFuzzer's report (stderr)
     * matters. */
    if (null >= 0) {
        dup2(null, STDOUT_FILENO);
        close(null);
    }
    fz_fd = memfd_create("vheap-fuzz", MFD_CLOEXEC);
    if (fz_fd < 0) {
        perror("memfd_create");
        abort();
    }
    snprintf(fz_path, sizeof fz_path, "/proc/self/fd/%d", fz_fd);
}

/* Makes the memfd hold exactly `data`; returns its path. */
static inline const char *fz_file(const uint8_t *data, size_t size)
{
    size_t done = 0;

    if (fz_fd < 0)
        fz_init();
    if (ftruncate(fz_fd, 0) < 0 || ftruncate(fz_fd, (off_t)size) < 0)
        abort();
    while (done < size) {
        ssize_t w = pwrite(fz_fd, data + done, size - done, (off_t)done);
        if (w <= 0)
            abort();
        done += (size_t)w;
    }
    return fz_path;
}

/* The input as NUL-separated words (an argv, an environment): copied into
 * buf (size + 1 bytes), at most `max` words into words[], NULL after them.
 * The count. */
static inline int fz_words(const uint8_t *data, size_t size, char *buf, char **words, int max)
{
    int n = 0;
    if (size)
        memcpy(buf, data, size);
    buf[size] = '\0';
    for (size_t i = 0; i <= size && n < max;) {
        words[n++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    words[n] = NULL;
    return n;
}

/* An error message must be one non-empty line. */
static inline void fz_one_line(const char *what, const char *msg)
{
    FZ_CHECK(msg && msg[0], "%s: empty error message", what);
    FZ_CHECK(!strchr(msg, '\n'), "%s: error message spans lines: %s", what, msg);
}

#endif
