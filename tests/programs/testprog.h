/* testprog.h — what the vheap test programs share: a marked code section that
 * makes the program's own allocations identifiable in a capture, and a log of
 * what the program knows it did that never allocates (so logging does not
 * disturb the very counts it reports). Header-only; C and C++.
 *
 * Output lines a program prints (parsed by tests/lib.sh):
 *   user lo=0x.. hi=0x..   the address range of the USER section
 *   ev alloc FUNC ADDR SIZE USABLE [realloc] [failed] [align=N]
 *   ev free FUNC ADDR [realloc]
 *   ev resize FUNC ADDR SIZE USABLE
 *   expect allocs=N failed=N frees=N resizes=N bytes=N live_blocks=N live_bytes=N
 * "*" in an ev field matches anything (a size only the C++ runtime knows). */
#ifndef VHEAP_TESTPROG_H
#define VHEAP_TESTPROG_H

/* Include this first: gettid, reallocarray, pvalloc need it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Programs log a block's address after the call that freed or moved it: the
 * address is only printed, never dereferenced. */
#if defined(__GNUC__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

/* USER marks a function whose allocator calls are the program's own. The
 * linker gathers the section and defines __start_/__stop_ symbols for it; a
 * test counts a record as the program's when its stack has a frame in that
 * range. Why this criterion: libc allocates behind the program's back (stdio
 * buffers, a new thread's dtv in pthread_create, locale data), and those
 * stacks pass through main or _start but never through a USER function, as
 * long as USER code only logs through tp_note (which never allocates) and
 * leaves thread creation and stdio to main. noinline/noclone keep the code in
 * the section: an inlined or cloned copy would land in .text. */
#define USER __attribute__((section("tp_user"), noinline, noclone))

#ifdef __cplusplus
extern "C" {
#endif
extern char __start_tp_user[], __stop_tp_user[];
#ifdef __cplusplus
}
#endif

#define TP_LOG_SIZE (1u << 20)
#define TP_LIVE_MAX 8192

static struct {
    pthread_mutex_t lock;
    size_t len;
    char buf[TP_LOG_SIZE];
    const char *prefix;            /* e.g. "child " in a fork child        */
    /* what the program knows it did, for the expect line */
    unsigned long allocs, failed, frees, resizes, bytes;
    int bytes_unknown;             /* an allocation of a size we cannot know */
    struct { uintptr_t addr; size_t size; } live[TP_LIVE_MAX];
    unsigned nlive;
} tp = { PTHREAD_MUTEX_INITIALIZER, 0, {0}, "", 0, 0, 0, 0, 0, 0, {{0, 0}}, 0 };

/* Appends one formatted line to the log (vsnprintf into a static buffer:
 * no allocation). Thread-safe. Not async-signal-safe. */
static inline void tp_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void tp_note(const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&tp.lock);
    size_t room = TP_LOG_SIZE - tp.len;
    int n = snprintf(tp.buf + tp.len, room, "%s", tp.prefix);
    if (n > 0 && (size_t)n < room)
        tp.len += (size_t)n;
    room = TP_LOG_SIZE - tp.len;
    va_start(ap, fmt);
    n = vsnprintf(tp.buf + tp.len, room, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n + 1 < room) {
        tp.len += (size_t)n;
        tp.buf[tp.len++] = '\n';
    } else {
        static const char full[] = "testprog: log buffer full\n";
        (void)!write(2, full, sizeof full - 1);
        _exit(70);
    }
    pthread_mutex_unlock(&tp.lock);
}

/* Writes the log to fd 1 (write(2), not stdio) and empties it. */
static inline void tp_flush(void)
{
    pthread_mutex_lock(&tp.lock);
    size_t off = 0;
    while (off < tp.len) {
        ssize_t n = write(1, tp.buf + off, tp.len - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    tp.len = 0;
    pthread_mutex_unlock(&tp.lock);
}

/* Writes one formatted piece of output at once with write(2), unbuffered and
 * without allocating: for programs whose every allocator call is counted
 * (stdio would add its own). Exits 4 when the write falls short. */
static inline void tp_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void tp_say(const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line || write(1, line, (size_t)n) != n)
        _exit(4);
}

static inline void tp_range(void)
{
    tp_note("user lo=%p hi=%p", (void *)__start_tp_user, (void *)__stop_tp_user);
}

static inline int tp_live_find(uintptr_t a)
{
    for (unsigned i = 0; i < tp.nlive; i++)
        if (tp.live[i].addr == a)
            return (int)i;
    return -1;
}

/* An allocation the program made: p (NULL = failed), requested size, the
 * usable size the allocator reports, and extra words ("realloc", "align=N"). */
static inline void tp_alloc(const char *func, const void *p, size_t size, size_t usable,
                            const char *extra)
{
    if (!p) {
        tp.failed++;
        tp_note("ev alloc %s 0x0 %zu 0 failed", func, size);
        return;
    }
    tp.allocs++;
    tp.bytes += size;
    pthread_mutex_lock(&tp.lock);
    if (tp.nlive < TP_LIVE_MAX) {
        tp.live[tp.nlive].addr = (uintptr_t)p;
        tp.live[tp.nlive].size = size;
        tp.nlive++;
    }
    pthread_mutex_unlock(&tp.lock);
    tp_note("ev alloc %s %#lx %zu %zu%s%s", func, (unsigned long)(uintptr_t)p, size, usable,
            extra && *extra ? " " : "", extra ? extra : "");
}

/* A failed allocation whose recorded size we do not predict (overflowing
 * calloc/reallocarray products). */
static inline void tp_alloc_failed_anysize(const char *func)
{
    tp.failed++;
    tp_note("ev alloc %s 0x0 * 0 failed", func);
}

/* An allocation made on our behalf whose address and size only the runtime
 * knows (a C++ exception object). */
static inline void tp_alloc_unknown(const char *func)
{
    tp.allocs++;
    tp.bytes_unknown = 1;
    tp_note("ev alloc %s * * *", func);
}

static inline void tp_free(const char *func, const void *p, const char *extra)
{
    tp.frees++;
    pthread_mutex_lock(&tp.lock);
    int i = tp_live_find((uintptr_t)p);
    if (i >= 0)
        tp.live[i] = tp.live[--tp.nlive];
    pthread_mutex_unlock(&tp.lock);
    tp_note("ev free %s %#lx%s%s", func, (unsigned long)(uintptr_t)p,
            extra && *extra ? " " : "", extra ? extra : "");
}

static inline void tp_free_unknown(const char *func)
{
    tp.frees++;
    tp_note("ev free %s *", func);
}

static inline void tp_resize(const char *func, const void *p, size_t size, size_t usable)
{
    tp.resizes++;
    pthread_mutex_lock(&tp.lock);
    int i = tp_live_find((uintptr_t)p);
    if (i >= 0)
        tp.live[i].size = size;
    pthread_mutex_unlock(&tp.lock);
    tp_note("ev resize %s %#lx %zu %zu", func, (unsigned long)(uintptr_t)p, size, usable);
}

/* The expect line from the counters above (bytes are left out when an
 * allocation of unknown size was made). */
static inline void tp_expect(void)
{
    unsigned long live_bytes = 0;
    for (unsigned i = 0; i < tp.nlive; i++)
        live_bytes += tp.live[i].size;
    if (tp.bytes_unknown)
        tp_note("expect allocs=%lu failed=%lu frees=%lu resizes=%lu live_blocks=%u "
                "live_bytes=%lu",
                tp.allocs, tp.failed, tp.frees, tp.resizes, tp.nlive, live_bytes);
    else
        tp_note("expect allocs=%lu failed=%lu frees=%lu resizes=%lu bytes=%lu "
                "live_blocks=%u live_bytes=%lu",
                tp.allocs, tp.failed, tp.frees, tp.resizes, tp.bytes, tp.nlive, live_bytes);
}

/* Starts a fresh account (a fork child: what it inherited is not its own
 * doing) with every later line prefixed by `prefix`. Flush first. */
static inline void tp_reset(const char *prefix)
{
    pthread_mutex_init(&tp.lock, NULL);
    tp.len = 0;
    tp.prefix = prefix;
    tp.allocs = tp.failed = tp.frees = tp.resizes = tp.bytes = 0;
    tp.bytes_unknown = 0;
    tp.nlive = 0;
}

#ifdef __cplusplus
/* A delete expression, logged first as a free by FUNC (the operator vheap
 * records for it). A template, so that the expression sees p's own type:
 * the same sized or aligned operator delete as one written in place. */
template <class T> static inline void tp_delete(const char *func, T *p)
{
    tp_free(func, p, NULL);
    delete p;
}

template <class T> static inline void tp_delete_array(const char *func, T *p)
{
    tp_free(func, p, NULL);
    delete[] p;
}
#endif

/* Exits with a message when the program itself sees something wrong (an
 * allocator result that breaks its contract): a test failure, not a skip. */
#define TP_CHECK(cond)                                                         \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(3);                                                           \
        }                                                                      \
    } while (0)

/* xorshift64: a program's reproducible pseudo-random numbers, from a
 * nonzero seed *s (one per thread). */
static inline uint64_t tp_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Runs fn in n threads at once, thread i given (void *)(first + i), and
 * waits for them all. */
static inline void tp_run_threads(unsigned n, void *(*fn)(void *), uintptr_t first)
{
    pthread_t th[n ? n : 1];
    for (unsigned i = 0; i < n; i++)
        TP_CHECK(pthread_create(&th[i], NULL, fn, (void *)(first + i)) == 0);
    for (unsigned i = 0; i < n; i++)
        TP_CHECK(pthread_join(th[i], NULL) == 0);
}

/* ---- a tally instead of the log ------------------------------------------
 * The stress programs make too many calls for an ev line each: every
 * thread keeps a tally of what it did, and the program prints one expect
 * line from their sum. */
struct tp_tally {
    unsigned long allocs, frees, resizes, bytes, live_blocks, live_bytes;
};

static inline void tp_tally_alloc(struct tp_tally *t, size_t size)
{
    t->allocs++;
    t->bytes += size;
}

/* A realloc of `old` that returned `q`, now `size` bytes: in place, a
 * resize; moved, a free and an allocation (as vheap counts it). */
static inline void tp_tally_realloc(struct tp_tally *t, const void *old, const void *q,
                                    size_t size)
{
    if (q == old) {
        t->resizes++;
    } else {
        t->frees++;
        tp_tally_alloc(t, size);
    }
}

static inline void tp_tally_add(struct tp_tally *sum, const struct tp_tally *t)
{
    sum->allocs += t->allocs;
    sum->frees += t->frees;
    sum->resizes += t->resizes;
    sum->bytes += t->bytes;
    sum->live_blocks += t->live_blocks;
    sum->live_bytes += t->live_bytes;
}

/* Checks that every allocation is freed or live, and prints the expect
 * line. */
static inline void tp_tally_expect(const struct tp_tally *t)
{
    TP_CHECK(t->allocs == t->frees + t->live_blocks);
    printf("expect allocs=%lu failed=0 frees=%lu resizes=%lu bytes=%lu live_blocks=%lu "
           "live_bytes=%lu\n",
           t->allocs, t->frees, t->resizes, t->bytes, t->live_blocks, t->live_bytes);
}

#endif
