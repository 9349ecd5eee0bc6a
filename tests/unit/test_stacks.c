/* test_stacks.c — the shim's stack table (preload/stacks.c, compiled in
 * here) against stand-ins for the rest of the shim: a stack id is only ever
 * handed out with its STACK record in the capture (also when the record
 * could not be written), a lookup while a dlclose runs settles the
 * module list before it unwinds and hashes, the hash does not depend on
 * who folded the frames, a reset forgets the thread's cached ids, and a
 * stack is written as a diff against the last one only within a run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "preload/stacks.c"

/* ---- stand-ins ------------------------------------------------------------ */
struct vh_options vh_opt = { .depth = 64 };
__thread struct vh_tls vh_tls __attribute__((tls_model("initial-exec")));
struct vh_capture vh_cap;
struct vh_clock vh_clk;
uint32_t vh_modules_closing;
uint32_t vh_module_gen;
uintptr_t vh_self_lo, vh_self_hi;     /* no shim code: no frame is dropped */

static uint64_t clock_ns;
uint64_t vh_now_slow(void)
{
    return ++clock_ns;
}

/* What the unwinder "finds": set by each test. */
static uint64_t frames[64];
static uint32_t nframes;
static int calls;                  /* event order, for the poll test */
static int polled_at, unwound_at;  /* first poll, last unwind */

uint32_t vh_unwind_want(uint32_t max)
{
    return max + 8;
}

/* What the unwinder says of the fold: 0 nothing (stacks.c folds), 1 the
 * fold of the frames (as cfi.c's memo), 2 a wrong one. */
static int fold_mode;
/* A memo's tag slot the unwinder hands over (cfi.c), when tag_mode is set. */
static int tag_mode;
static uint64_t tag_slot;
static uint32_t seen_era;          /* the era vh_stack_here asked with */

uint32_t vh_unwind(struct vh_tls *t, uint64_t fp, struct vh_walk *w)
{
    (void)fp;
    seen_era = w->era;
    w->tag = tag_mode ? &tag_slot : NULL;
    if (tag_mode && tag_slot >> 32 == w->era) {
        /* A known walk (cfi.c): its frames are not written. */
        w->fold = 0;
        w->truncated = 0;
        w->skip = 0;
        unwound_at = ++calls;
        return 0;
    }
    w->fold = fold_mode ? vh_hash_fold(frames, nframes) ^ (fold_mode == 2) : 0;
    unwound_at = ++calls;
    memcpy(w->buf, frames, nframes * sizeof *w->buf);
    w->truncated = 0;
    w->skip = 0;
    return nframes;
}

/* A poll that finds an unload: what modules.c's diff does to the generation. */
static int poll_bumps;
void vh_modules_poll(struct vh_tls *t)
{
    ++calls;
    if (!polled_at)
        polled_at = calls;
    if (poll_bumps)
        __atomic_fetch_add(&vh_module_gen, 1, __ATOMIC_RELEASE);
}

/* The capture: one chunk in memory while `recording`, none otherwise (as
 * when recording is being disabled: the slow path returns NULL). */
static union {
    struct vh_chunk_header h;
    char bytes[1 << 16];
} chunk;
static int recording;

void *vh_rec_begin_slow(struct vh_tls *t, size_t size, uint64_t time)
{
    if (!recording)
        return NULL;
    if (!t->chunk) {
        t->chunk = &chunk.h;
        t->pos = chunk.bytes + sizeof chunk.h;
        t->runs++;                 /* the THREAD record of a new chunk */
    }
    t->end = chunk.bytes + sizeof chunk.bytes;
    if ((size_t)(t->end - t->pos) < size)
        return NULL;
    return t->pos;
}

void vh_chunk_release(struct vh_tls *t)
{
}

static int is_stack(uint8_t type)
{
    return type == VH_REC_STACK_PACKED || type == VH_REC_STACK_DIFF;
}

/* The STACK record with this id among the committed bytes, or NULL. Struct
 * records start 8-aligned whatever padding precedes them. */
static const struct vh_rec_stack *find_stack(uint32_t id)
{
    const char *end = chunk.bytes + __atomic_load_n(&chunk.h.used, __ATOMIC_ACQUIRE);
    for (const char *p = chunk.bytes + sizeof chunk.h; p + sizeof(struct vh_rec_stack) <= end;
         p += 8) {
        const struct vh_rec_stack *r = (const struct vh_rec_stack *)p;
        if (is_stack(r->h.type) && r->h.b == id && r->h.a >= 2 && p + r->h.a * 8u <= end)
            return r;
    }
    return NULL;
}

static int count_stacks(void)
{
    int n = 0;
    const char *end = chunk.bytes + __atomic_load_n(&chunk.h.used, __ATOMIC_ACQUIRE);
    for (const char *p = chunk.bytes + sizeof chunk.h; p + sizeof(struct vh_rec_stack) <= end;
         p += 8) {
        const struct vh_rec_stack *r = (const struct vh_rec_stack *)p;
        if (is_stack(r->h.type) && r->h.a >= 2 && p + r->h.a * 8u <= end)
            n++;
    }
    return n;
}

static void set_frames(uint64_t base, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        frames[i] = base + 16 * i;
    nframes = n;
}

/* The frames of record r into out (VH_MAX_DEPTH of them): packed, a count
 * then zigzag deltas each from the frame before, zero padding after; or a
 * diff against an earlier record of the chunk. Returns the count. */
static uint32_t record_frames(const struct vh_rec_stack *r, uint64_t *out)
{
    const uint8_t *p = (const uint8_t *)r->frames, *end = (const uint8_t *)r + r->h.a * 8u;
    uint64_t n = 0, z = 0, f = 0;
    if (r->h.type == VH_REC_STACK_DIFF) {
        uint64_t base[VH_MAX_DEPTH];
        uint32_t base_id = 0, depth = 0;
        assert_int_equal(vh_diff_head(&p, end, r->h.b, &base_id, &depth), 0);
        const struct vh_rec_stack *b = find_stack(base_id);
        assert_non_null(b);
        assert_true((const char *)b < (const char *)r);
        uint32_t bn = record_frames(b, base);
        assert_int_equal(vh_diff_ops(p, end, base, bn, out, depth), 0);
        return depth;
    }
    assert_int_equal(vh_uleb_get(&p, end, &n), 0);
    assert_true(n <= VH_MAX_DEPTH);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(vh_uleb_get(&p, end, &z), 0);
        f += vh_unzigzag(z);
        out[i] = f;
    }
    assert_true((size_t)(end - p) < 8);      /* padding to the next word only */
    for (; p < end; p++)
        assert_int_equal(*p, 0);
    return (uint32_t)n;
}

/* The id's record is there, with these frames. */
static void assert_recorded(uint32_t id)
{
    const struct vh_rec_stack *r = find_stack(id);
    uint64_t got[VH_MAX_DEPTH];
    assert_non_null(r);
    assert_int_equal(record_frames(r, got), nframes);
    assert_memory_equal(got, frames, nframes * sizeof *frames);
}

static struct vh_capture_header header;

static int setup(void **state)
{
    vh_stacks_reset();
    vh_stacks_thread(&vh_tls);     /* the thread's id cache (kept between tests) */
    assert_non_null(vh_tls.ids);
    memset(&chunk, 0, sizeof chunk);
    memset(&header, 0, sizeof header);
    vh_tls.chunk = NULL;
    vh_tls.pos = vh_tls.end = NULL;
    vh_cap.hdr = &header;
    vh_module_gen = 0;
    vh_modules_closing = 0;
    recording = 1;
    poll_bumps = 0;
    fold_mode = 0;
    tag_mode = 0;
    tag_slot = 0;
    calls = polled_at = unwound_at = 0;
    return 0;
}

/* ---- tests ------------------------------------------------------------------ */
/* Same frames, same id, one record; other frames, another id and record. */
static void test_dedup(void **state)
{
    set_frames(0x401000, 5);
    uint32_t a = vh_stack_here(&vh_tls);
    assert_int_not_equal(a, 0);
    assert_recorded(a);
    assert_int_equal(vh_stack_here(&vh_tls), a);
    assert_int_equal(count_stacks(), 1);
    set_frames(0x402000, 3);
    uint32_t b = vh_stack_here(&vh_tls);
    assert_int_not_equal(b, 0);
    assert_int_not_equal(b, a);
    assert_recorded(b);
    assert_int_equal(count_stacks(), 2);
}

/* The record of a new stack cannot be written (recording is being disabled
 * while other threads still write into room they had): the caller gets 0,
 * which is no table overflow, and the id is never handed to anyone —
 * the next lookup of those frames writes a record for the id it returns. */
static void test_failed_write_not_published(void **state)
{
    set_frames(0x403000, 4);
    recording = 0;
    assert_int_equal(vh_stack_here(&vh_tls), 0);
    assert_int_equal(header.stack_table_full, 0);
    assert_int_equal(count_stacks(), 0);
    recording = 1;
    uint32_t id = vh_stack_here(&vh_tls);
    assert_int_not_equal(id, 0);
    assert_recorded(id);
    assert_int_equal(vh_stack_here(&vh_tls), id);
    assert_int_equal(count_stacks(), 1);
}

/* Without a dlclose running, a lookup neither polls nor changes ids. */
static void test_no_poll_outside_dlclose(void **state)
{
    set_frames(0x404000, 6);
    uint32_t id = vh_stack_here(&vh_tls);
    polled_at = 0;
    poll_bumps = 1;
    assert_int_equal(vh_stack_here(&vh_tls), id);
    assert_int_equal(polled_at, 0);
}

/* While a dlclose runs, the lookup polls before it unwinds; when the poll
 * finds the unload (generation bumped), the same addresses are a new stack
 * with a record of its own: they may belong to a library mapped where the
 * closed one was. */
static void test_poll_during_dlclose(void **state)
{
    set_frames(0x405000, 6);
    uint32_t old = vh_stack_here(&vh_tls);
    polled_at = 0;
    vh_modules_closing = 1;
    poll_bumps = 1;
    uint32_t now = vh_stack_here(&vh_tls);
    assert_int_not_equal(polled_at, 0);
    assert_true(polled_at < unwound_at);
    assert_int_not_equal(now, old);
    assert_recorded(now);
    assert_int_equal(count_stacks(), 2);
}

/* The hash is the same whether the unwinder handed over the fold of the
 * frames (cfi.c's memo) or stacks.c folded them itself: the same id, from
 * the shared table too (the per-thread cache keys on the hash alone). */
static void test_fold_from_unwinder(void **state)
{
    set_frames(0x405000, 7);
    uint32_t a = vh_stack_here(&vh_tls);
    memset(vh_tls.ids, 0, sizeof *vh_tls.ids);
    fold_mode = 1;
    assert_int_equal(vh_stack_here(&vh_tls), a);
    fold_mode = 2;
    uint32_t b = vh_stack_here(&vh_tls);
    assert_int_not_equal(b, a);        /* the fold is what is hashed */
    assert_int_equal(count_stacks(), 2);
    fold_mode = 1;
    set_frames(0x405000, 6);           /* a prefix: another stack */
    assert_int_not_equal(vh_stack_here(&vh_tls), a);
    assert_int_equal(count_stacks(), 3);
}

/* A reset (fork child) forgets every id, the thread's cache of recent ones
 * included: the same frames get an id again with a record in the new
 * capture. */
static void test_reset_forgets_cached_ids(void **state)
{
    set_frames(0x406000, 5);
    uint32_t a = vh_stack_here(&vh_tls);
    assert_int_equal(vh_stack_here(&vh_tls), a);
    set_frames(0x407000, 5);
    uint32_t b = vh_stack_here(&vh_tls);
    assert_int_not_equal(b, a);
    setup(state);                      /* the child's new table and capture */
    uint32_t c = vh_stack_here(&vh_tls);
    assert_int_not_equal(c, 0);
    assert_recorded(c);
    assert_int_equal(count_stacks(), 1);
    assert_int_equal(vh_stack_here(&vh_tls), c);
    assert_int_equal(count_stacks(), 1);
}

/* A walk the unwinder knew before (cfi.c's tag) is known by the id stored
 * there, without its frames (not written) or their hash: so here, where
 * the frames changed behind the unwinder's back, the old id comes back. A
 * tag of another epoch (before a fork child's reset) is not taken (the
 * unwinder is asked for the epoch's), and a new stack's id is stored in
 * the slot as it is found. */
static void test_tag_from_unwinder(void **state)
{
    tag_mode = 1;
    set_frames(0x408000, 5);
    uint32_t a = vh_stack_here(&vh_tls);
    assert_int_not_equal(a, 0);
    assert_int_equal(seen_era, epoch);
    assert_int_equal((uint32_t)tag_slot, a);
    set_frames(0x409000, 5);
    assert_int_equal(vh_stack_here(&vh_tls), a);     /* by the tag alone */
    tag_slot = 0;
    uint32_t b = vh_stack_here(&vh_tls);
    assert_int_not_equal(b, a);
    assert_int_equal((uint32_t)tag_slot, b);
    memset(vh_tls.ids, 0, sizeof *vh_tls.ids);
    tag_slot = (uint64_t)(epoch + 1) << 32 | a;      /* another epoch's */
    assert_int_equal(vh_stack_here(&vh_tls), b);
    assert_int_equal(tag_slot, (uint64_t)epoch << 32 | b);
}

/* A thread without its id cache (not mapped: the mapping failed) finds
 * ids in the shared table, the same ones. */
static void test_without_id_cache(void **state)
{
    (void)state;
    set_frames(0x40a000, 6);
    uint32_t a = vh_stack_here(&vh_tls);
    assert_int_not_equal(a, 0);
    struct vh_ids *was = vh_tls.ids;
    vh_tls.ids = NULL;
    assert_int_equal(vh_stack_here(&vh_tls), a);
    set_frames(0x40b000, 6);
    uint32_t b = vh_stack_here(&vh_tls);
    assert_true(b != 0 && b != a);
    assert_int_equal(vh_stack_here(&vh_tls), b);
    vh_tls.ids = was;
    assert_int_equal(vh_stack_here(&vh_tls), b);
    assert_int_equal(count_stacks(), 2);
}

/* A recursion cut at 64 frames, as in Vere's nock: leaf frames, then a
 * call cycle of five repeated, the window started `shift` frames into it. */
static void set_recursion(uint64_t leaf, uint32_t shift)
{
    static const uint64_t cycle[5] = { 0x55500a10, 0x55500b24, 0x55500c38, 0x55500d4c,
                                       0x55500e60 };
    frames[0] = leaf;
    frames[1] = leaf + 0x3000;
    for (uint32_t i = 2; i < 64; i++)
        frames[i] = cycle[(i + shift) % 5];
    nframes = 64;
}

/* The second stack of a run is a STACK_DIFF against the first (its
 * frames as before, in a fraction of the packed bytes); a stack in a new
 * run (a new chunk's THREAD) is packed, its base being in the last run. */
static void test_diff_against_last_stack(void **state)
{
    (void)state;
    set_recursion(0x555001000, 0);
    uint32_t a = vh_stack_here(&vh_tls);
    assert_int_equal(find_stack(a)->h.type, VH_REC_STACK_PACKED);
    assert_recorded(a);
    set_recursion(0x555002000, 2);
    uint32_t b = vh_stack_here(&vh_tls);
    const struct vh_rec_stack *r = find_stack(b);
    assert_int_equal(r->h.type, VH_REC_STACK_DIFF);
    assert_recorded(b);
    assert_true(r->h.a * 8u * 3 < words(packed_size(frames, nframes)));
    vh_tls.runs++;
    set_recursion(0x555003000, 4);
    uint32_t c = vh_stack_here(&vh_tls);
    assert_int_equal(find_stack(c)->h.type, VH_REC_STACK_PACKED);
    assert_recorded(c);
    assert_int_equal(count_stacks(), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_dedup, setup),
        cmocka_unit_test_setup(test_failed_write_not_published, setup),
        cmocka_unit_test_setup(test_no_poll_outside_dlclose, setup),
        cmocka_unit_test_setup(test_poll_during_dlclose, setup),
        cmocka_unit_test_setup(test_fold_from_unwinder, setup),
        cmocka_unit_test_setup(test_reset_forgets_cached_ids, setup),
        cmocka_unit_test_setup(test_tag_from_unwinder, setup),
        cmocka_unit_test_setup(test_without_id_cache, setup),
        cmocka_unit_test_setup(test_diff_against_last_stack, setup),
    };
    return cmocka_run_group_tests_name("stacks", tests, NULL, NULL);
}
