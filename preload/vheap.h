/* vheap.h — the public custom-allocator API: tell vheap about blocks that do
 * not come from malloc (arenas, pools, regions, Vere's loom).
 *
 * Header-only, no library to link: the first call looks the profiler up once
 * with dlsym(RTLD_DEFAULT, "vheap_api_v1") and, when the program runs without
 * vheap, every call is a load and a predictable branch. Works from a
 * main executable and from shared libraries alike. Programs link with -ldl on
 * glibc older than 2.34 (dlsym moved into libc there; `pkg-config --libs
 * vheap` says -ldl either way, which is harmless).
 *
 * Guarantees (see docs/custom-allocators.md):
 * - every function may be called from any thread, from a signal handler and
 *   around longjmp, once the lookup has happened: dlsym itself is not
 *   async-signal-safe, so call vheap_enabled() (or any function below) once
 *   from ordinary code at start-up before using the API in a handler;
 * - vheap never allocates from, reads or writes the custom heap's memory;
 * - pointers are only recorded as numbers, never dereferenced.
 *
 * Compile with -DVHEAP_DISABLE to turn every call into nothing at all. */
#ifndef VHEAP_H
#define VHEAP_H

#include <stddef.h>
#include <stdint.h>

#ifndef VHEAP_DISABLE
#include <dlfcn.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The table the profiler exports under the symbol `vheap_api_v1`. Version 1
 * of the ABI: later versions only append members, and raise `size`; a caller
 * checks `size` before using a member that was added after version 1. An
 * incompatible change would export a new symbol (vheap_api_v2). */
struct vheap_api {
    uint32_t size;                 /* sizeof the profiler's table, bytes    */
    uint32_t version;              /* 1                                     */
    int (*heap_create)(const char *name, int parent, void *base, size_t size);
    void (*heap_destroy)(int heap);
    /* block_*: not alloc/free/..., which programs sometimes #define.      */
    void (*block_alloc)(int heap, const void *p, size_t size, size_t usable);
    void (*block_free)(int heap, const void *p);
    void (*block_realloc)(int heap, const void *old, const void *p,
                          size_t size, size_t usable);
    void (*block_move)(int heap, const void *from, const void *to);
    void (*mark)(const char *label);
    void (*tag_push)(const char *label);
    void (*tag_pop)(void);
    /* appended after the first release: check `size` (VHEAP__HAS) */
    void (*range)(int heap, unsigned op, const void *from, const void *to, size_t len);
    void (*region)(int heap, unsigned id, unsigned kind, const void *base, size_t size);
    void (*tag_push2)(const char *first, const char *second);
    int (*tag_depth)(void);
    void (*tag_unwind)(int depth);
    /* How many times recording has started: 1 from the start, 0 under
     * VHEAP_START=paused until `vheap-analyze ctl start`, one more at each
     * start after a `ctl stop`. While paused, heaps are made and destroyed
     * as usual but blocks are not recorded: a program whose blocks outlive
     * a pause reports them again when this changes (Vere's patch does at
     * its next event: the loom afresh, every live block). */
    unsigned (*starts)(void);
    int (*record)(int want);
    /* Ownership snapshots (vheap_own_begin below). */
    void (*own_begin)(int heap, const char *label);
    void (*own_push)(const char *label);
    void (*own_pop)(void);
    void (*owned)(const void *p, size_t bytes);
    void (*own_end)(void);
};

/* Bytes of the table a version-1 caller relies on. */
#define VHEAP_API_V1_SIZE \
    (offsetof(struct vheap_api, tag_pop) + sizeof(void (*)(void)))

/* Whether the profiler's table `t` has member `m` (it may be older than
 * this header). */
#define VHEAP__HAS(t, m) ((t)->size >= offsetof(struct vheap_api, m) + sizeof((t)->m))

#define VHEAP__INLINE static inline __attribute__((always_inline))

#ifndef VHEAP_DISABLE

/* RTLD_DEFAULT needs _GNU_SOURCE; glibc defines it as a null handle. */
#ifdef RTLD_DEFAULT
#define VHEAP__RTLD_DEFAULT RTLD_DEFAULT
#else
#define VHEAP__RTLD_DEFAULT ((void *)0)
#endif

/* The lookup function; a test may substitute its own (same signature). */
#ifndef VHEAP_DLSYM
#define VHEAP_DLSYM dlsym
#endif

/* Marks "looked up, not there". Never a valid table address. */
#define VHEAP__ABSENT ((const struct vheap_api *)(uintptr_t)1)

/* The slow path, taken once per translation unit (or twice when two threads
 * race at start: harmless, both find the same answer). */
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wused-but-marked-unused"
#endif

/* `unused`: a file that includes this header and calls nothing is fine. */
static __attribute__((noinline, cold, unused)) const struct vheap_api *
vheap__lookup(const struct vheap_api **cache)
{
    const struct vheap_api *t =
        (const struct vheap_api *)VHEAP_DLSYM(VHEAP__RTLD_DEFAULT, "vheap_api_v1");
    if (!t || t->version < 1 || t->size < VHEAP_API_V1_SIZE)
        t = VHEAP__ABSENT;
    __atomic_store_n(cache, t, __ATOMIC_RELAXED);
    return t;
}

/* The profiler's table, or NULL when the program is not profiled. The table
 * is constant data of the loaded shim, complete before any code can see its
 * address, so a relaxed load suffices. */
VHEAP__INLINE const struct vheap_api *vheap__api(void)
{
    static const struct vheap_api *cache; /* one per translation unit */
    const struct vheap_api *t = __atomic_load_n(&cache, __ATOMIC_RELAXED);
    if (__builtin_expect(t == 0, 0))
        t = vheap__lookup(&cache);
    return t == VHEAP__ABSENT ? 0 : t;
}

#if defined(__clang__)
#pragma clang diagnostic pop
#endif

#else /* VHEAP_DISABLE: every call below folds away */

VHEAP__INLINE const struct vheap_api *vheap__api(void) { return 0; }

#endif /* VHEAP_DISABLE */

#define VHEAP__CALL(fn, ...)                                                  \
    do {                                                                      \
        const struct vheap_api *vheap__t = vheap__api();                      \
        if (vheap__t)                                                         \
            vheap__t->fn(__VA_ARGS__);                                        \
    } while (0)

/* 1 when running under vheap, else 0. Does the one-time lookup: call it once
 * at start-up if the API will later be used from signal handlers. */
VHEAP__INLINE int vheap_enabled(void)
{
    return vheap__api() != 0;
}

/* Declares a heap (an arena, a pool, a region) named `name` (copied; at most
 * 255 bytes are kept). `parent` is the enclosing heap's id, or 0; `base` and
 * `size` bound the region, or are 0 when unknown. Returns the new heap's id,
 * > 0, or 0 when not profiled — 0 is also safe to pass to the other calls,
 * which then do nothing. Ids count up from 1; once 65535 heaps have been
 * made, the ids of destroyed heaps are reused (docs/custom-allocators.md). */
VHEAP__INLINE int vheap_heap_create(const char *name, int parent, void *base,
                                    size_t size)
{
    const struct vheap_api *t = vheap__api();
    return t ? t->heap_create(name, parent, base, size) : 0;
}

/* Every block still live in `heap` and in the heaps nested in it is freed at
 * once (a road popped, a region reset); the heap ids become invalid. Blocks
 * freed this way are not leaks. */
VHEAP__INLINE void vheap_heap_destroy(int heap)
{
    VHEAP__CALL(heap_destroy, heap);
}

/* Block `p` of `size` requested bytes (`usable` >= size, or 0 = same as
 * size) was allocated from `heap`. Recorded like malloc, with the caller's
 * stack. Call it after the block exists. */
VHEAP__INLINE void vheap_alloc(int heap, const void *p, size_t size, size_t usable)
{
    VHEAP__CALL(block_alloc, heap, p, size, usable);
}

/* Block `p` of `heap` is freed. Call it before the memory can be reused. */
VHEAP__INLINE void vheap_free(int heap, const void *p)
{
    VHEAP__CALL(block_free, heap, p);
}

/* Block `old` became `p` with `size` bytes (p may equal old: resized in
 * place). old == NULL is an alloc; size == 0 with p == NULL is a free. */
VHEAP__INLINE void vheap_realloc(int heap, const void *old, const void *p,
                                 size_t size, size_t usable)
{
    VHEAP__CALL(block_realloc, heap, old, p, size, usable);
}

/* Compaction moved the live block at `from` to `to`: it keeps its identity,
 * allocation stack, tag and age. */
VHEAP__INLINE void vheap_move(int heap, const void *from, const void *to)
{
    VHEAP__CALL(block_move, heap, from, to);
}

/* A labelled point in time ("event 1234", "pack begin"), shown on series
 * and charts. The label is copied (at most 255 bytes). */
VHEAP__INLINE void vheap_mark(const char *label)
{
    VHEAP__CALL(mark, label);
}

/* Which levels of a deep tag stack keep their tags: all of them, to
 * VHEAP_TAG_OUTER + 1048576 levels. Vere's jets re-enter nock, which calls
 * jets, more than 256 levels deep in a boot, and each level popped back to
 * names its jet again. The outermost VHEAP_TAG_OUTER levels live in the
 * thread's own state; the deeper ones in memory the shim maps for the
 * thread the first time it goes deeper (2 MiB reserved, a page for every
 * 2048 levels it reaches, unmapped when the thread exits). Only if that
 * mapping fails: the innermost VHEAP_TAG_INNER levels pushed since the
 * stack was last below them keep their tags, and a level in between
 * (popped back to after more than VHEAP_TAG_INNER levels above it) has
 * lost its tag. A lost level's allocations carry the outermost kept
 * level's tag (level VHEAP_TAG_OUTER); the shim says so once. */
#define VHEAP_TAG_OUTER 32
#define VHEAP_TAG_INNER 224

/* Per-thread tag stack: every allocation records the innermost tag, so
 * memory can be attributed by logical owner (a jet, an agent). Labels are
 * interned by content. Any depth works (see VHEAP_TAG_OUTER for which
 * levels keep their tags); a pop on an empty stack does nothing. A longjmp out of a push/pop pair
 * skips the pop and leaves the stack deeper: the code that catches the
 * longjmp pops the tags it knows were pushed since its setjmp. */
VHEAP__INLINE void vheap_tag_push(const char *label)
{
    VHEAP__CALL(tag_push, label);
}

VHEAP__INLINE void vheap_tag_pop(void)
{
    const struct vheap_api *t = vheap__api();
    if (t)
        t->tag_pop();
}

/* ---- Added after the first release ---------------------------------------
 * A profiler older than this header lacks these: the calls then do nothing
 * (and vheap_tag_depth returns 0). */

#define VHEAP__CALL_NEW(fn, ...)                                              \
    do {                                                                      \
        const struct vheap_api *vheap__t = vheap__api();                      \
        if (vheap__t && VHEAP__HAS(vheap__t, fn))                             \
            vheap__t->fn(__VA_ARGS__);                                        \
    } while (0)

/* Every live block of `heap` whose address lies in [from, from + len)
 * moved by (to - from), keeping its identity, stack, tag and age: a
 * compactor copied a page or a run of pages. Blocks elsewhere are left
 * alone, so the range may hold blocks the program never reported (the
 * allocator's own) and free space. */
VHEAP__INLINE void vheap_move_range(int heap, const void *from, const void *to, size_t len)
{
    VHEAP__CALL_NEW(range, heap, 0u, from, to, len);
}

/* Every live block of `heap` whose address lies in [base, base + len) is
 * freed: a sweep dropped whole pages of unreachable blocks at once. */
VHEAP__INLINE void vheap_free_range(int heap, const void *base, size_t len)
{
    VHEAP__CALL_NEW(range, heap, 1u, base, (const void *)0, len);
}

/* Kinds of vheap_region. */
#define VHEAP_REGION_META 1u       /* the allocator's own tables, headers    */
#define VHEAP_REGION_UNUSED 2u     /* not heap: a stack, a reserved gap      */

/* Says that [base, base + size) inside `heap`'s bounds holds no blocks but
 * `kind`, so that fragmentation does not count it as free space. `id` is
 * the program's small number for the region: a later call with the same
 * heap and id replaces it (a stack that grew, a directory that moved);
 * size 0 ends it. A heap's regions end with the heap. */
VHEAP__INLINE void vheap_region(int heap, unsigned id, unsigned kind, const void *base,
                                size_t size)
{
    VHEAP__CALL_NEW(region, heap, id, kind, base, size);
}

/* vheap_tag_push of the label "first/second" without the caller building
 * it (second NULL or empty: just first): for names composed per call,
 * such as a jet's core and arm. */
VHEAP__INLINE void vheap_tag_push2(const char *first, const char *second)
{
    VHEAP__CALL_NEW(tag_push2, first, second);
}

/* The calling thread's tag depth (pushes not yet popped), 0 when not
 * profiled: save it where a longjmp may land... */
VHEAP__INLINE int vheap_tag_depth(void)
{
    const struct vheap_api *t = vheap__api();
    return t && VHEAP__HAS(t, tag_depth) ? t->tag_depth() : 0;
}

/* ...and pop back to it there: the tags pushed since and skipped by the
 * longjmp are popped. Nothing when the depth is already at most `depth`. */
VHEAP__INLINE void vheap_tag_unwind(int depth)
{
    VHEAP__CALL_NEW(tag_unwind, depth);
}

/* How many times recording has started (see `starts` above), 0 when not
 * profiled: a program that remembers it and sees it change reports its
 * live blocks again. */
VHEAP__INLINE unsigned vheap_starts(void)
{
    const struct vheap_api *t = vheap__api();
    return t && VHEAP__HAS(t, starts) ? t->starts() : 0;
}

/* Recording from inside the program (bytehound's memory_profiler_start /
 * _stop): vheap_stop() pauses recording and vheap_start() resumes it, both
 * in effect for the calling thread before they return (another thread's
 * call already under way may still be recorded). While paused, allocator
 * calls are passed through uncounted (marks are still recorded); the
 * capture keeps WINDOW records of when recording was on, and queries say
 * which windows their numbers cover. Start a program paused with
 * VHEAP_START=paused to record only the windows it opens. Both return 1 if
 * recording is on afterwards, 0 if not (or not profiled, or a profiler
 * older than this header). */
VHEAP__INLINE int vheap_start(void)
{
    const struct vheap_api *t = vheap__api();
    return t && VHEAP__HAS(t, record) ? t->record(1) : 0;
}

VHEAP__INLINE int vheap_stop(void)
{
    const struct vheap_api *t = vheap__api();
    return t && VHEAP__HAS(t, record) ? t->record(0) : 0;
}

/* 1 while recording is on, 0 while paused or not profiled. */
VHEAP__INLINE int vheap_recording(void)
{
    const struct vheap_api *t = vheap__api();
    return t && VHEAP__HAS(t, record) ? t->record(-1) : 0;
}

/* ---- Ownership: what the allocator's own walk says owns each block ------
 * An arena with a marking walk (a GC's mark phase, an accounting pass such
 * as Vere's `urbit grab`) tells vheap, for each live block the walk
 * reaches, which owner path it reached it from: a snapshot of "who holds
 * what", joined by the analyzer with each block's allocation stack, age
 * and address (`vheap-analyze owners`). The walk says it as it goes:
 *
 *     vheap_own_begin(heap, "grab");
 *     vheap_own_push("vane"); vheap_own_push("ames");
 *     ... for each block the walk marks first: vheap_owned(p, bytes);
 *     vheap_own_pop(); vheap_own_pop();
 *     vheap_own_end();
 *
 * First owner wins, as a marking walk counts: a block reported again in
 * the same snapshot keeps its first owner. One snapshot at a time, from
 * the thread that began it (calls from other threads are counted and
 * ignored). Owner paths nest up to VHEAP_OWN_DEPTH levels; deeper pushes
 * are counted and their blocks go to the deepest kept owner. Labels are
 * copied, at most 255 bytes (longer ones are cut, and flagged). Without
 * the profiler each call is a load and a predicted branch; under it,
 * vheap_owned appends two varints to a buffer. */
#define VHEAP_OWN_DEPTH 64

/* A snapshot of `heap` (and the heaps nested in it) begins; `label` names
 * it ("grab", "gc 12"). A snapshot still open ends first. */
VHEAP__INLINE void vheap_own_begin(int heap, const char *label)
{
    VHEAP__CALL_NEW(own_begin, heap, label);
}

/* The walk goes into owner `label`, below the current one. */
VHEAP__INLINE void vheap_own_push(const char *label)
{
    VHEAP__CALL_NEW(own_push, label);
}

/* ...and comes back out of it (nothing at the top). */
VHEAP__INLINE void vheap_own_pop(void)
{
    VHEAP__CALL_NEW(own_pop);
}

/* The walk reached block `p` of the snapshot's heap under the current
 * owner and counted `bytes` for it (what the walk's own total adds; 0 if
 * it counts none). p == NULL: `bytes` the walk counts that are no block
 * (the allocator's own tables), kept under the owner so that owners' sums
 * equal the walk's. A p the heap does not hold is counted by the analyzer
 * and said once. */
VHEAP__INLINE void vheap_owned(const void *p, size_t bytes)
{
    VHEAP__CALL_NEW(owned, p, bytes);
}

/* The snapshot is complete. A snapshot never ended (the program died in
 * the walk) is loaded as far as it got and marked incomplete. */
VHEAP__INLINE void vheap_own_end(void)
{
    VHEAP__CALL_NEW(own_end);
}

#ifdef __cplusplus
}
#endif

#endif /* VHEAP_H */
