/* test_capture.c — the capture reader against synthetic captures: every
 * record type round-trips (format versions 1 and 2), the compact records'
 * varints and cursors hold at their edges, chunks merge by (time, offset),
 * THREAD records set the tid, stacks are found by id, and every kind of
 * damage is reported with its offset while everything valid still comes
 * out. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/capture/reader.h"
#include "analyze/cmd/cli.h"
#include "tests/unit/capture_builder.h"

#define MAX_EVENTS 4096

static struct vh_event events[MAX_EVENTS];

/* Writes the image to a temporary file and opens it; the file is unlinked
 * at once (the mapping keeps it). Fails the test if open fails. */
static struct capture *open_image(const struct capb *b)
{
    char path[256], err[256];
    struct capture *c = NULL;
    int rc;

    assert_int_equal(capb__write_tmp(b, path, sizeof path), 0);
    rc = capture__open(path, &c, err, sizeof err);
    unlink(path);
    if (rc)
        fail_msg("capture__open: %s", err);
    return c;
}

/* Opens an image that must be refused; returns the error text. */
static const char *open_fails(const struct capb *b, size_t truncate_to)
{
    static char err[256];
    char path[256];
    struct capture *c = (struct capture *)1;

    assert_int_equal(capb__write_tmp(b, path, sizeof path), 0);
    if (truncate_to != (size_t)-1)
        assert_int_equal(truncate(path, (off_t)truncate_to), 0);
    assert_int_equal(capture__open(path, &c, err, sizeof err), -EINVAL);
    unlink(path);
    assert_null(c);
    return err;
}

static size_t drain(struct capture *c)
{
    size_t n = 0;
    while (n < MAX_EVENTS && capture__next(c, &events[n]))
        n++;
    assert_true(n < MAX_EVENTS);
    return n;
}

/* How many of the yielded events lie in chunk ch. */
static size_t in_chunk(size_t n, uint32_t ch)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += events[i].chunk == ch;
    return k;
}

/* The damage count, and that the first message names `off` in hex. */
static void expect_damage(struct capture *c, unsigned count, uint64_t off)
{
    const char *first = NULL;
    char hex[32];

    assert_int_equal(capture__damage(c, &first), count);
    if (!count) {
        assert_null(first);
        return;
    }
    assert_non_null(first);
    snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)off);
    if (!strstr(first, hex))
        fail_msg("damage message '%s' does not name %s", first, hex);
}

/* ---- round trip ------------------------------------------------------- */

static void every_record_type(uint32_t version)
{
    struct capb b;
    struct capture *c;
    uint64_t frames[3] = { 0x401136, 0x7f0011223344, 0x401000 };
    uint8_t build_id[20];
    uint64_t off[20];
    size_t n, len;
    const char *text;
    const char *argv[] = { "./prog", "--flag", "x y" };
    int k = 0;

    for (unsigned i = 0; i < sizeof build_id; i++)
        build_id[i] = (uint8_t)(0xa0 + i);
    capb__init_version(&b, version, 0);
    capb__set_argv(&b, 3, argv);
    capb__header(&b)->flags = VH_HDR_ENDED | VH_HDR_FORKED;
    capb__header(&b)->nested_events = 7;
    uint32_t ch = capb__chunk(&b);
    off[k++] = capb__thread(&b, ch, 10, 111);
    off[k++] = capb__module(&b, ch, 11, 0, 0x400000, 0x405000, build_id, 20, "/usr/bin/prog",
                            VH_RF_MAIN_EXE);
    off[k++] = capb__stack(&b, ch, 12, 3, frames, 3, VH_RF_TRUNCATED);
    off[k++] = capb__alloc(&b, ch, 13, 0x55d0c0a0, 100, 104, 3);
    off[k++] = capb__resize(&b, ch, 14, 0x55d0c0a0, 200, 216, 3);
    off[k++] = capb__free(&b, ch, 15, 0x55d0c0a0);
    off[k++] = capb__free_ex(&b, ch, 16, 0, VH_FN_REALLOC, 0x1234, VH_RF_REALLOC);
    off[k++] = capb__alloc_ex(&b, ch, VH_REC_ALLOC, 17,
                              &(struct capb_alloc){ .size = 1ull << 40, .stack = 3,
                                                    .func = VH_FN_CALLOC,
                                                    .flags = VH_RF_FAILED });
    off[k++] = capb__rss(&b, ch, 18, 1234567);
    off[k++] = capb__module_unload(&b, ch, 19, 0x7f0000000000);
    off[k++] = capb__heap_create(&b, ch, 20, 1, 0, 0x200000000, 2147483648u, "loom");
    off[k++] = capb__heap_destroy(&b, ch, 21, 2);
    off[k++] = capb__move(&b, ch, 22, 1, 0x1000, 0x2000);
    off[k++] = capb__mark(&b, ch, 23, "event 12");
    off[k++] = capb__tag(&b, ch, 24, 1, "jet:add");
    {
        /* A variable-size type this reader does not know: skipped over. */
        struct vh_rec_value u = { .h = { .type = 0x90, .a = 3 }, .time = 25, .value = 9 };
        off[k++] = capb__raw(&b, ch, &u, sizeof u);
    }
    off[k++] = capb__thread_exit(&b, ch, 26, 111);
    off[k++] = capb__end(&b, ch, 27);

    c = open_image(&b);
    assert_int_equal(capture__header(c)->version, version);
    assert_int_equal(capture__chunks(c), 1);
    assert_int_equal(capture__file_size(c), capb__size(&b));
    assert_int_equal(capture__header(c)->pid, 4242);
    assert_int_equal(capture__header(c)->flags, VH_HDR_ENDED | VH_HDR_FORKED);
    assert_int_equal(capture__header(c)->nested_events, 7);
    text = capture__argv(c, &len);
    assert_int_equal(len, sizeof "./prog" + sizeof "--flag" + sizeof "x y");
    assert_memory_equal(text, "./prog\0--flag\0x y", len);

    n = drain(c);
    assert_int_equal(n, (size_t)k);
    for (int i = 0; i < k; i++) {
        assert_int_equal(events[i].offset, off[i]);
        assert_int_equal(events[i].time, 10 + i);
        assert_int_equal(events[i].tid, 111);
        assert_int_equal(events[i].chunk, 0);
        /* Every record comes out as an aligned struct; in version 2 the
         * compact ones are decoded into the event, shorter in the file. */
        assert_int_equal((uintptr_t)events[i].rec % 8, 0);
        if (version != VH_CAPTURE_VERSION_V1 && vh_rec_is_compact(events[i].rec->type)) {
            assert_ptr_equal(events[i].rec, &events[i].dec.h);
            assert_true(events[i].size < 16);
        } else {
            assert_int_equal(events[i].offset % 8, 0);
        }
    }
    /* Field by field, through the mapping. */
    const struct vh_rec_module *mod = (const void *)events[1].rec;
    assert_int_equal(mod->h.type, VH_REC_MODULE);
    assert_int_equal(mod->h.flags, VH_RF_MAIN_EXE);
    assert_int_equal(mod->lo, 0x400000);
    assert_int_equal(mod->hi, 0x405000);
    assert_int_equal(mod->h.b, 20);
    assert_memory_equal(mod->build_id, build_id, 20);
    text = vh_event_text(&events[1], &len);
    assert_int_equal(len, strlen("/usr/bin/prog"));
    assert_memory_equal(text, "/usr/bin/prog", len);

    const struct vh_rec_stack *st = (const void *)events[2].rec;
    assert_int_equal(st->h.type, VH_REC_STACK);
    assert_int_equal(events[2].size, 16 + 3 * 8);
    assert_memory_equal(st->frames, frames, sizeof frames);

    const struct vh_rec_alloc *al = (const void *)events[3].rec;
    assert_int_equal(al->h.type, VH_REC_ALLOC);
    assert_int_equal(al->addr, 0x55d0c0a0);
    assert_int_equal(al->size, 100);
    assert_int_equal(al->slack, 4);
    assert_int_equal(al->h.b, 3);
    assert_int_equal(al->func, VH_FN_MALLOC);

    const struct vh_rec_alloc *rs = (const void *)events[4].rec;
    assert_int_equal(rs->h.type, VH_REC_RESIZE);
    assert_int_equal(rs->size + rs->slack, 216);
    assert_int_equal(rs->func, VH_FN_REALLOC);

    const struct vh_rec_free *fr = (const void *)events[6].rec;
    assert_int_equal(fr->h.type, VH_REC_FREE);
    assert_int_equal(fr->h.flags, VH_RF_REALLOC);
    assert_int_equal(fr->addr, 0x1234);
    assert_int_equal(fr->func, VH_FN_REALLOC);

    const struct vh_rec_alloc *fa = (const void *)events[7].rec;
    assert_int_equal(fa->h.flags, VH_RF_FAILED);
    assert_int_equal(fa->addr, 0);
    assert_int_equal(fa->size, 1ull << 40);

    assert_int_equal(((const struct vh_rec_value *)(const void *)events[8].rec)->value, 1234567);
    assert_int_equal(((const struct vh_rec_value *)(const void *)events[9].rec)->value,
                     0x7f0000000000);

    const struct vh_rec_heap *hc = (const void *)events[10].rec;
    assert_int_equal(hc->h.b, 1);
    assert_int_equal(hc->base, 0x200000000);
    assert_int_equal(hc->size, 2147483648u);
    text = vh_event_text(&events[10], &len);
    assert_int_equal(len, 4);
    assert_memory_equal(text, "loom", 4);

    assert_int_equal(events[11].rec->type, VH_REC_HEAP_DESTROY);
    assert_int_equal(events[11].rec->a, 2);
    const struct vh_rec_move *mv = (const void *)events[12].rec;
    assert_int_equal(mv->from, 0x1000);
    assert_int_equal(mv->to, 0x2000);
    text = vh_event_text(&events[13], &len);
    assert_int_equal(len, 8);
    assert_memory_equal(text, "event 12", 8);
    assert_int_equal(events[14].rec->b, 1);
    text = vh_event_text(&events[14], &len);
    assert_memory_equal(text, "jet:add", len);
    assert_int_equal(events[15].rec->type, 0x90);
    assert_int_equal(events[15].size, 24);
    assert_null(vh_event_text(&events[15], &len));
    assert_int_equal(events[16].rec->type, VH_REC_THREAD_EXIT);
    assert_int_equal(events[17].rec->type, VH_REC_END);

    expect_damage(c, 0, 0);
    assert_int_equal(capture__next(c, &events[0]), 0);
    capture__close(c);
    capb__destroy(&b);
}

static void test_every_record_type(void **state)
{
    every_record_type(VH_CAPTURE_VERSION);
}

/* Captures of the first format are still read, record for record. */
static void test_every_record_type_v1(void **state)
{
    every_record_type(VH_CAPTURE_VERSION_V1);
}

/* ---- compact records (version 2) --------------------------------------- */

static size_t uleb_len(uint64_t v)
{
    uint8_t buf[VH_ULEB_MAX];
    return (size_t)(vh_uleb_put(buf, v) - buf);
}

static void test_varint_edges(void **state)
{
    static const struct { uint64_t v; size_t len; } cases[] = {
        { 0, 1 }, { 1, 1 }, { 127, 1 }, { 128, 2 }, { 16383, 2 }, { 16384, 3 },
        { UINT32_MAX, 5 }, { 1ull << 56, 9 }, { (1ull << 63) - 1, 9 }, { 1ull << 63, 10 },
        { UINT64_MAX, 10 },
    };
    uint8_t buf[16];
    uint64_t v;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const uint8_t *p = buf;
        uint8_t *end = vh_uleb_put(buf, cases[i].v);
        assert_int_equal(end - buf, cases[i].len);
        assert_int_equal(vh_uleb_get(&p, end, &v), 0);
        assert_ptr_equal(p, end);
        assert_true(v == cases[i].v);
        /* With room to spare, and with none checked: the same. */
        memset(end, 0xaa, (size_t)(buf + sizeof buf - end));
        p = buf;
        assert_int_equal(vh_uleb_get(&p, buf + sizeof buf, &v), 0);
        assert_ptr_equal(p, end);
        assert_true(v == cases[i].v);
        p = buf;
        assert_int_equal(vh_uleb_get_near(&p, &v), 0);
        assert_ptr_equal(p, end);
        assert_true(v == cases[i].v);
        /* Every shorter read is cut, and leaves the pointer alone. */
        for (size_t k = 0; k < cases[i].len; k++) {
            p = buf;
            assert_int_equal(vh_uleb_get(&p, buf + k, &v), VH_DEC_CUT);
            assert_ptr_equal(p, buf);
        }
    }
    /* 128 is 0x80 0x01; 2^63 ends in a 10th byte of 1. */
    vh_uleb_put(buf, 128);
    assert_memory_equal(buf, "\x80\x01", 2);
    vh_uleb_put(buf, 1ull << 63);
    assert_memory_equal(buf, "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 10);
    /* A 10th byte above 1, or an 11th byte, is more than 64 bits, with
     * room after it or not. */
    const uint8_t *p = buf;
    buf[9] = 0x02;
    assert_int_equal(vh_uleb_get(&p, buf + 10, &v), VH_DEC_VARINT);
    assert_int_equal(vh_uleb_get(&p, buf + sizeof buf, &v), VH_DEC_VARINT);
    assert_int_equal(vh_uleb_get_near(&p, &v), VH_DEC_VARINT);
    assert_ptr_equal(p, buf);
    memset(buf, 0x80, 11);
    buf[10] = 0;
    assert_int_equal(vh_uleb_get(&p, buf + 11, &v), VH_DEC_VARINT);
    assert_int_equal(vh_uleb_get(&p, buf + sizeof buf, &v), VH_DEC_VARINT);
    assert_int_equal(vh_uleb_get_near(&p, &v), VH_DEC_VARINT);
    assert_ptr_equal(p, buf);
    /* An over-long zero (0x80 0x00) is still zero: the format asks for
     * the value, not the shortest form. */
    p = (const uint8_t *)"\x80\x00";
    assert_int_equal(vh_uleb_get(&p, p + 2, &v), 0);
    assert_true(v == 0);

    /* zigzag: small magnitudes of either sign stay small. */
    assert_true(vh_zigzag(0) == 0);
    assert_true(vh_zigzag((uint64_t)-1) == 1);
    assert_true(vh_zigzag(1) == 2);
    assert_true(vh_zigzag((uint64_t)-2) == 3);
    assert_true(vh_zigzag((uint64_t)INT64_MAX) == UINT64_MAX - 1);
    assert_true(vh_zigzag((uint64_t)INT64_MIN) == UINT64_MAX);
    for (uint64_t d = 0; d < 1000; d++) {
        assert_true(vh_unzigzag(vh_zigzag(d)) == d);
        assert_true(vh_unzigzag(vh_zigzag(-d)) == -d);
        assert_true(vh_unzigzag(vh_zigzag(UINT64_MAX / 2 + d)) == UINT64_MAX / 2 + d);
    }
    assert_int_equal(uleb_len(vh_zigzag((uint64_t)-64)), 1);
    assert_int_equal(uleb_len(vh_zigzag(64)), 2);
}

/* Records at the edges of every field: they come out exactly as they went
 * in, addresses jumping down and up across the whole range. */
static void test_compact_edges(void **state)
{
    static const struct capb_alloc in[] = {
        { .addr = 0x7fffffffe000, .size = 1, .usable = 8, .stack = 1 },
        { .addr = 0x1000, .size = 0, .usable = 0, .stack = 0 },          /* far below */
        { .addr = UINT64_MAX, .size = UINT64_MAX, .usable = UINT64_MAX,
          .stack = UINT32_MAX, .heap = UINT16_MAX, .func = VH_FN_COUNT - 1, .tag = UINT16_MAX,
          .flags = VH_RF_REALLOC | VH_RF_FAILED },
        { .addr = 0, .size = 100, .usable = 100 + (uint64_t)UINT32_MAX, .stack = 7 },
        { .addr = UINT64_MAX - 15, .size = 5, .usable = 1ull << 40, .stack = 2,
          .heap = 1, .flags = VH_RF_SLACK_CLAMPED },                      /* clamped */
        { .addr = 16, .size = 1ull << 63, .usable = 1ull << 63, .stack = 128, .tag = 1 },
    };
    const size_t nin = sizeof in / sizeof in[0];
    uint64_t frees[] = { UINT64_MAX, 0, 1ull << 63, 0x55d0c0a0 };
    struct capb b;
    struct capture *c;
    uint64_t t = 100;

    capb__start(&b, t, 9);
    for (size_t i = 0; i < nin; i++)
        capb__alloc_ex(&b, 0, i % 2 ? VH_REC_RESIZE : VH_REC_ALLOC, t += i * 1000003, &in[i]);
    for (size_t i = 0; i < 4; i++)
        capb__free_ex(&b, 0, t += (uint64_t)1 << (20 * i), (uint16_t)(i * 20000), i + 1,
                      frees[i], i == 1 ? VH_RF_REALLOC : 0);
    /* The largest time step a varint holds. */
    capb__free_ex(&b, 0, UINT64_MAX, 0, VH_FN_FREE, 0, 0);

    c = open_image(&b);
    assert_int_equal(drain(c), 1 + nin + 5);
    expect_damage(c, 0, 0);
    t = 100;
    for (size_t i = 0; i < nin; i++) {
        const struct vh_event *e = &events[1 + i];
        const struct vh_rec_alloc *r = (const void *)e->rec;
        uint64_t slack = in[i].usable > in[i].size ? in[i].usable - in[i].size : 0;
        t += i * 1000003;
        assert_int_equal(e->time, t);
        assert_int_equal(r->time, t);
        assert_int_equal(r->h.type, i % 2 ? VH_REC_RESIZE : VH_REC_ALLOC);
        assert_true(r->addr == in[i].addr);
        assert_true(r->size == in[i].size);
        assert_int_equal(r->slack, slack > UINT32_MAX ? UINT32_MAX : slack);
        assert_int_equal(r->h.b, in[i].stack);
        assert_int_equal(r->h.a, in[i].heap);
        assert_int_equal(r->func, in[i].func ? in[i].func : VH_FN_MALLOC);
        assert_int_equal(r->tag, in[i].tag);
        assert_int_equal(r->h.flags, in[i].flags | (slack > UINT32_MAX ? VH_RF_SLACK_CLAMPED : 0));
        assert_true(e->size <= VH_ENC_ALLOC_MAX);
    }
    for (size_t i = 0; i < 4; i++) {
        const struct vh_event *e = &events[1 + nin + i];
        const struct vh_rec_free *r = (const void *)e->rec;
        t += (uint64_t)1 << (20 * i);
        assert_int_equal(e->time, t);
        assert_true(r->addr == frees[i]);
        assert_int_equal(r->h.a, i * 20000);
        assert_int_equal(r->func, i + 1);
        assert_int_equal(r->h.flags, i == 1 ? VH_RF_REALLOC : 0);
        assert_true(e->size <= VH_ENC_FREE_MAX);
    }
    assert_true(events[nin + 5].time == UINT64_MAX);
    capture__close(c);
    capb__destroy(&b);
}

/* What the format promises a program's usual records cost: a malloc in a
 * few bytes, a free in fewer. Exact bytes of docs/capture-format.md's
 * worked example, PAD bytes before the struct record that follows. */
static void test_compact_worked_example(void **state)
{
    static const uint8_t want[] = {
        0x05, 0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00,             /* THREAD tid 42 */
        0xe8, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,             /* time 1000 */
        0x01, 0xfa, 0x01, 0xc0, 0x82, 0x86, 0xdd, 0x0a, 0x64, 0x04, 0x03, 0x01, /* malloc */
        0x0e, 0x32, 0xbf, 0x01, 0x18, 0x03,                         /* malloc below */
        0x02, 0x0a, 0xc0, 0x01, 0x05,                               /* free */
        0x10, 0x08,                                                 /* free below */
        0x13, 0x41, 0x64, 0x03,                                     /* malloc again */
        0x02, 0x00, 0x00, 0x43,                                     /* realloc's free */
        0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f,                   /* PAD */
        0x84, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00,             /* MARK, 3 words */
        0x24, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,             /* time 1316 */
        'h', 'i', 0, 0, 0, 0, 0, 0,
    };
    struct capb b;
    struct capture *c;

    capb__init(&b, 0);
    capb__chunk(&b);
    uint64_t at = capb__thread(&b, 0, 1000, 42);
    capb__alloc(&b, 0, 1250, 0x55d0c0a0, 100, 104, 3);
    capb__alloc(&b, 0, 1300, 0x55d0c040, 24, 24, 3);
    capb__free(&b, 0, 1310, 0x55d0c0a0);
    capb__free(&b, 0, 1311, 0x55d0c040);
    capb__alloc(&b, 0, 1312, 0x55d0c0a0, 100, 104, 3);
    capb__free_ex(&b, 0, 1305, 0, VH_FN_REALLOC, 0x55d0c0a0, VH_RF_REALLOC); /* clamped */
    capb__mark(&b, 0, 1316, "hi");
    assert_int_equal(capb__chunk_header(&b, 0)->used, sizeof(struct vh_chunk_header) + sizeof want);
    assert_memory_equal(capb__at(&b, at), want, sizeof want);

    c = open_image(&b);
    assert_int_equal(drain(c), 8);
    expect_damage(c, 0, 0);
    static const size_t sizes[] = { 12, 6, 5, 2, 4, 4 };
    for (int i = 0; i < 6; i++)
        assert_int_equal(events[1 + i].size, sizes[i]);
    assert_int_equal(events[6].time, 1312);   /* went back: clamped to the base */
    assert_int_equal(((const struct vh_rec_free *)(const void *)events[6].rec)->addr,
                     0x55d0c0a0);
    /* the short forms decode to what the long ones say */
    const struct vh_rec_alloc *below = (const void *)events[2].rec, *again = (const void *)events[5].rec;
    assert_true(below->h.type == VH_REC_ALLOC && below->addr == 0x55d0c040 && below->size == 24 &&
                below->slack == 0 && below->func == VH_FN_MALLOC && below->h.b == 3);
    assert_true(events[4].rec->type == VH_REC_FREE && events[4].time == 1311 &&
                ((const struct vh_rec_free *)(const void *)events[4].rec)->addr == 0x55d0c040 &&
                ((const struct vh_rec_free *)(const void *)events[4].rec)->func == VH_FN_FREE);
    assert_true(again->time == 1312 && again->addr == 0x55d0c0a0 && again->slack == 4 &&
                again->func == VH_FN_MALLOC);
    assert_int_equal(events[7].offset % 8, 0);
    assert_int_equal(events[7].offset, events[6].offset + 4 + 7);
    /* after a realloc's FREE half (the MARK between changes nothing) an
     * ALLOC is predicted from KA[1], 0 here: a malloc takes the long
     * form, and the next malloc a short one again */
    uint64_t half = capb__alloc(&b, 0, 1400, 0x55d0c0a0, 100, 104, 3);
    uint64_t next = capb__alloc(&b, 0, 1401, 0x55d0c0b0, 100, 104, 3);
    assert_int_equal(*(uint8_t *)capb__at(&b, half), VH_REC_ALLOC);
    assert_int_equal(*(uint8_t *)capb__at(&b, next), VH_REC_ALLOC_TICK);
    capture__close(c);
    capb__destroy(&b);
}

/* Version 3's short forms read the cursor: an ALLOC_TICK takes the kind
 * of the ALLOC before it and glibc's slack, a FREE_RECENT an address
 * allocated just before; after a THREAD record nothing was pushed, so a
 * FREE_RECENT there is damage, and the records before it still read. */
static void test_short_forms_cursor(void **state)
{
    struct capb b;
    struct capture *c;

    capb__start(&b, 1000, 1);
    uint64_t first = capb__alloc(&b, 0, 1001, 0x1000, 8, 24, 7);
    uint64_t tick = capb__alloc(&b, 0, 1002, 0x2000, 8, 24, 7);
    capb__free(&b, 0, 1003, 0x1000);
    uint64_t recent = capb__free(&b, 0, 1004, 0x2000);
    assert_int_equal(*(uint8_t *)capb__at(&b, first), VH_REC_ALLOC);
    assert_memory_equal(capb__at(&b, tick), "\x11\x80\x40\x08\x07", 5);
    assert_memory_equal(capb__at(&b, recent), "\x10\x08", 2);
    capb__thread(&b, 0, 2000, 2);
    uint64_t bad = capb__bytes(&b, 0, "\x10\x08", 2);

    c = open_image(&b);
    assert_int_equal(drain(c), 6);
    expect_damage(c, 1, bad);
    const struct vh_rec_alloc *a = (const void *)events[2].rec;
    assert_true(a->h.type == VH_REC_ALLOC && a->time == 1002 && a->addr == 0x2000 &&
                a->size == 8 && a->slack == 16 && a->func == VH_FN_MALLOC && a->h.b == 7);
    const struct vh_rec_free *f = (const void *)events[4].rec;
    assert_true(f->h.type == VH_REC_FREE && f->time == 1004 && f->addr == 0x2000 &&
                f->func == VH_FN_FREE);
    capture__close(c);
    capb__destroy(&b);
}

/* The records of test_v4_forms: what each form stands for. */
struct v4_rec {
    int free;                      /* 1: a FREE                             */
    uint64_t time, addr, size;
    unsigned func;
    uint8_t form;                  /* the form the writer must choose       */
};

/* b's image reads n events, then one damage at `at` that says `why`. */
static void expect_read_to(const struct capb *b, size_t n, uint64_t at, const char *why)
{
    const char *first;
    struct capture *c = open_image(b);
    assert_int_equal(drain(c), n);
    expect_damage(c, 1, at);
    capture__damage(c, &first);
    if (!strstr(first, why))
        fail_msg("'%s' does not say '%s'", first, why);
    capture__close(c);
}

static uint64_t v4_write(struct capb *b, const struct v4_rec *r)
{
    if (r->free)
        return capb__free(b, 0, r->time, r->addr);
    struct capb_alloc a = { .addr = r->addr, .size = r->size,
                            .usable = r->size + vh_usual_slack(r->size), .stack = 5,
                            .func = r->func };
    return capb__alloc_ex(b, 0, VH_REC_ALLOC, r->time, &a);
}

/* Version 4's forms: an allocation at one of the last 64 freed addresses
 * (ALLOC_FREED, and of the other kind ALLOC_FREED_ALT), of the kind
 * before the last (ALLOC_ALT), a free of one of the last 64 allocations
 * (FREE_FAR). Each decodes to what was written, and a chunk cut inside
 * any of them keeps every record before it and reads the cut one as
 * damage, never as a shorter record. */
static void test_v4_forms(void **state)
{
    enum { MALLOC = VH_FN_MALLOC, CALLOC = VH_FN_CALLOC, MAXR = 32 };
    struct v4_rec r[MAXR];
    uint64_t at[MAXR + 1];
    size_t n = 0;
    struct capb b;
    struct capture *c;

    r[n++] = (struct v4_rec){ 0, 1001, 0x1000, 40, MALLOC, VH_REC_ALLOC };
    r[n++] = (struct v4_rec){ 0, 1002, 0x2000, 40, CALLOC, VH_REC_ALLOC };   /* KB = malloc */
    r[n++] = (struct v4_rec){ 0, 1003, 0x3000, 40, MALLOC, VH_REC_ALLOC_ALT }; /* KB = calloc */
    for (unsigned i = 0; i < 16; i++)                 /* R: 16 more */
        r[n++] = (struct v4_rec){ 0, 1010 + 3 * i, 0x10000 + 0x100 * i, 24, MALLOC,
                                  VH_REC_ALLOC_NEXT };
    r[n++] = (struct v4_rec){ 1, 1100, 0x10300, 0, 0, VH_REC_FREE };      /* KF was 0 */
    r[n++] = (struct v4_rec){ 1, 1200, 0x10400, 0, 0, VH_REC_FREE_FAR };  /* R[11] */
    r[n++] = (struct v4_rec){ 1, 1300, 0x10f00, 0, 0, VH_REC_FREE_RECENT };
    r[n++] = (struct v4_rec){ 0, 1400, 0x10400, 24, MALLOC, VH_REC_ALLOC_FREED };     /* F[1] */
    r[n++] = (struct v4_rec){ 0, 1401, 0x10300, 24, CALLOC, VH_REC_ALLOC_FREED_ALT }; /* F[2] */
    capb__start(&b, 1000, 1);
    for (size_t i = 0; i < n; i++) {
        at[i] = v4_write(&b, &r[i]);
        if (*(uint8_t *)capb__at(&b, at[i]) != r[i].form)
            fail_msg("record %zu: form 0x%02x, not 0x%02x", i, *(uint8_t *)capb__at(&b, at[i]),
                     r[i].form);
    }
    at[n] = capb__chunk_offset(&b, 0) + capb__chunk_header(&b, 0)->used;
    /* docs/capture-format.md's layouts: dt 1, da zigzag(0x1000), size, stack */
    assert_memory_equal(capb__at(&b, at[2]), "\x15\x01\x80\x40\x28\x0b", 6); /* 5 << 1 | 1 */
    assert_memory_equal(capb__at(&b, at[20]), "\x16\x8b\x32", 3);     /* 100 << 6 | 11 */
    assert_memory_equal(capb__at(&b, at[22]), "\x13\x81\x32\x18\x05", 5); /* 100 << 6 | 1 */
    assert_memory_equal(capb__at(&b, at[23]), "\x14\x42\x18\x05", 4); /* 1 << 6 | 2 */

    c = open_image(&b);
    assert_int_equal(drain(c), 1 + n);
    expect_damage(c, 0, 0);
    for (size_t i = 0; i < n; i++) {
        const struct vh_event *e = &events[1 + i];
        assert_int_equal(e->time, r[i].time);
        if (r[i].free) {
            const struct vh_rec_free *f = (const void *)e->rec;
            assert_true(f->h.type == VH_REC_FREE && f->addr == r[i].addr &&
                        f->func == VH_FN_FREE);
        } else {
            const struct vh_rec_alloc *a = (const void *)e->rec;
            assert_true(a->h.type == VH_REC_ALLOC && a->addr == r[i].addr &&
                        a->size == r[i].size && a->slack == vh_usual_slack(r[i].size) &&
                        a->func == r[i].func && a->h.b == 5 && a->h.a == 0);
        }
    }
    capture__close(c);

    /* Cut inside each new form: the records before it stay. */
    for (size_t i = 0; i < n; i++) {
        if (r[i].form < VH_REC_ALLOC_FREED)
            continue;
        for (uint64_t cut = at[i] + 1; cut < at[i + 1]; cut++) {
            capb__set_used(&b, 0, cut - capb__chunk_offset(&b, 0));
            expect_read_to(&b, 1 + i, at[i], "runs past used");
        }
    }
    capb__destroy(&b);

    /* After a THREAD record F is empty and R holds one address: an index
     * past them is damage. */
    static const char *const empty[] = { "\x13\x40\x18\x05", "\x14\x40\x18\x05", "\x16\x41" };
    for (size_t i = 0; i < 3; i++) {
        capb__start(&b, 1000, 1);
        capb__alloc(&b, 0, 1001, 0x1000, 24, 24, 5);
        uint64_t bad = capb__bytes(&b, 0, empty[i], i < 2 ? 4 : 2);
        expect_read_to(&b, 2, bad, "out of range");
        capb__destroy(&b);
    }
}

/* Version 4's forms imply no slack on a custom heap (Vere's loom tells
 * usable = size), version 3's still glibc's: a loom block allocated again
 * at a freed address takes ALLOC_FREED, one elsewhere ALLOC_ALT (b 0),
 * one with slack the long form. */
static void test_v4_custom_heap_slack(void **state)
{
    struct capb b;
    struct capture *c;
    struct capb_alloc a = { .addr = 0x5000, .size = 100, .usable = 100, .stack = 9, .heap = 1,
                            .func = VH_FN_CUSTOM };

    capb__start(&b, 1000, 1);
    uint64_t first = capb__alloc_ex(&b, 0, VH_REC_ALLOC, 1001, &a);
    capb__free_ex(&b, 0, 1002, 1, VH_FN_CUSTOM, 0x5000, 0);
    uint64_t again = capb__alloc_ex(&b, 0, VH_REC_ALLOC, 1003, &a);
    a.addr = 0x6000;
    uint64_t other = capb__alloc_ex(&b, 0, VH_REC_ALLOC, 1004, &a);
    a.usable = 108;                /* neither rule's slack */
    uint64_t slack = capb__alloc_ex(&b, 0, VH_REC_ALLOC, 1005, &a);
    assert_int_equal(*(uint8_t *)capb__at(&b, first), VH_REC_ALLOC);
    assert_memory_equal(capb__at(&b, again), "\x13\x40\x64\x09", 4);   /* dt 1, F[0] */
    /* dt 1, da zigzag(0x1000), size 100, stack 9 << 1 | 0 */
    assert_memory_equal(capb__at(&b, other), "\x15\x01\x80\x40\x64\x12", 6);
    assert_int_equal(*(uint8_t *)capb__at(&b, slack), VH_REC_ALLOC);
    c = open_image(&b);
    assert_int_equal(drain(c), 6);
    assert_int_equal(((const struct vh_rec_alloc *)(const void *)events[5].rec)->slack, 8);
    expect_damage(c, 0, 0);
    for (int i = 3; i <= 4; i++) {
        const struct vh_rec_alloc *r = (const void *)events[i].rec;
        assert_true(r->addr == (i == 3 ? 0x5000u : 0x6000u) && r->size == 100 && r->slack == 0 &&
                    r->h.a == 1 && r->func == VH_FN_CUSTOM && r->h.b == 9);
    }
    capture__close(c);
    capb__destroy(&b);
}

/* A version 3 capture still reads: the worked example's records as
 * version 3's writer chose them (ALLOC_TICK where version 4 writes
 * ALLOC_FREED) decode to the same events. */
static void test_v3_still_reads(void **state)
{
    static const uint8_t v3[] = {
        0x01, 0xfa, 0x01, 0xc0, 0x82, 0x86, 0xdd, 0x0a, 0x64, 0x04, 0x03, 0x01, /* malloc */
        0x0e, 0x32, 0xbf, 0x01, 0x18, 0x03,                         /* malloc below */
        0x02, 0x0a, 0xc0, 0x01, 0x05,                               /* free */
        0x10, 0x08,                                                 /* free below */
        0x11, 0xc0, 0x01, 0x64, 0x03,                               /* malloc again */
    };
    static const uint64_t times[] = { 1250, 1300, 1310, 1311, 1312 },
                          addrs[] = { 0x55d0c0a0, 0x55d0c040, 0x55d0c0a0, 0x55d0c040,
                                      0x55d0c0a0 };
    struct capb b;
    struct capture *c;

    capb__init(&b, 0);
    capb__header(&b)->version = VH_CAPTURE_VERSION_V3;
    capb__chunk(&b);
    capb__thread(&b, 0, 1000, 42);
    capb__bytes(&b, 0, v3, sizeof v3);
    c = open_image(&b);
    assert_int_equal(capture__header(c)->version, 3);
    assert_int_equal(drain(c), 6);
    expect_damage(c, 0, 0);
    for (int i = 0; i < 5; i++) {
        const struct vh_rec_alloc *a = (const void *)events[1 + i].rec;
        assert_int_equal(events[1 + i].time, times[i]);
        assert_int_equal(a->addr, addrs[i]);   /* at the same offset in ALLOC and FREE */
        assert_int_equal(a->h.type, i == 2 || i == 3 ? VH_REC_FREE : VH_REC_ALLOC);
    }
    capture__close(c);
    capb__destroy(&b);
}

/* A new THREAD record restarts both bases: its time, address 0. */
static void test_thread_resets_cursor(void **state)
{
    struct capb b;
    struct capture *c;

    capb__start(&b, 1000, 1);
    capb__alloc(&b, 0, 2000, 0x7f0000001000, 8, 8, 1);
    capb__thread_exit(&b, 0, 2100, 1);
    /* The next owner took its time before claiming the chunk. */
    capb__thread(&b, 0, 500, 2);
    uint64_t a = capb__alloc(&b, 0, 505, 0x10, 1, 1, 1);
    capb__free(&b, 0, 506, 0x10);
    /* Encoded against (500, 0), not against the last owner's (2100, ...):
     * type, dt 5, da zigzag(0x10) = 0x20, size 1, slack 0, stack 1, meta. */
    assert_memory_equal(capb__at(&b, a), "\x01\x05\x20\x01\x00\x01\x01", 7);
    /* A third owner right after a compact record: PAD, then its THREAD. */
    uint64_t t3 = capb__thread(&b, 0, 3000, 3);
    assert_true(t3 % 8 == 0 && *(uint8_t *)capb__at(&b, t3 - 1) == VH_REC_PAD);
    capb__free(&b, 0, 3001, 0x7f0000001000);

    c = open_image(&b);
    assert_int_equal(drain(c), 8);
    expect_damage(c, 0, 0);
    assert_int_equal(events[6].offset, t3);
    assert_int_equal(events[7].tid, 3);
    assert_int_equal(((const struct vh_rec_free *)(const void *)events[7].rec)->addr,
                     0x7f0000001000);
    assert_int_equal(events[1].time, 505);
    assert_int_equal(events[1].tid, 2);
    assert_int_equal(((const struct vh_rec_alloc *)(const void *)events[1].rec)->addr, 0x10);
    assert_int_equal(events[2].time, 506);
    assert_int_equal(((const struct vh_rec_free *)(const void *)events[2].rec)->addr, 0x10);
    assert_int_equal(events[3].time, 1000);
    assert_int_equal(events[4].time, 2000);
    assert_int_equal(((const struct vh_rec_alloc *)(const void *)events[4].rec)->addr,
                     0x7f0000001000);
    /* Rewinding decodes the same stream again from fresh cursors. */
    capture__rewind(c);
    struct vh_event ev;
    for (int i = 0; i < 8; i++) {
        assert_int_equal(capture__next(c, &ev), 1);
        assert_int_equal(ev.time, events[i].time);
        assert_int_equal(ev.offset, events[i].offset);
    }
    capture__close(c);
    capb__destroy(&b);
}

/* Compact records that do not decode end their chunk, named by offset. */
static void test_compact_damage(void **state)
{
    static const struct { const char *bytes; size_t len; const char *why; } bad[] = {
        { "\x01\x01\x02\x03\x00\x01\x81\x80\x80\x01", 10, "out of range" }, /* meta bit 21 */
        { "\x02\x01\x02\x80\x02\x01", 6, "out of range" },    /* FREE with a tag bit */
        { "\x01\x01\x02\x03\x80\x80\x80\x80\x10\x01\x01", 11, "out of range" }, /* slack 2^32 */
        { "\x01\x01\x02\x03\x00\x01\x81\x01\x80\x80\x04", 11, "out of range" }, /* heap 2^16 */
        { "\x01\x01\x02\x03\x00\x01\x81\x10", 8, "out of range" }, /* realloc in bits 9+ */
        { "\x02\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f\x05", 13, "64 bits" },
        { "\x0c\x00\x00\x00\x00\x00\x00\x00", 8, "unknown fixed-size type" },
        { "\x00", 1, "unknown fixed-size type" },
    };

    /* Near the end of the valid bytes and far from it: the reader's two
     * ways through a record. */
    for (size_t i = 0; i < 2 * sizeof bad / sizeof bad[0]; i++) {
        struct capb b;
        struct capture *c;
        const char *first;
        int far = i % 2;

        capb__init(&b, 0);
        capb__chunk(&b);
        capb__chunk(&b);
        capb__thread(&b, 0, 10, 1);
        capb__alloc(&b, 0, 11, 0x100, 8, 8, 0);
        uint64_t at = capb__bytes(&b, 0, bad[i / 2].bytes, bad[i / 2].len);
        capb__free(&b, 0, 12, 0x100);      /* lost with the chunk's rest */
        if (far)
            capb__mark(&b, 0, 13, "a label long enough to be more than fifty bytes away");
        capb__thread(&b, 1, 10, 2);
        capb__free(&b, 1, 13, 0x200);
        c = open_image(&b);
        assert_int_equal(drain(c), 4);
        assert_int_equal(in_chunk(4, 1), 2);
        expect_damage(c, 1, at);
        capture__damage(c, &first);
        if (!strstr(first, bad[i / 2].why))
            fail_msg("case %zu: '%s' does not say '%s'", i, first, bad[i / 2].why);
        capture__close(c);
        capb__destroy(&b);
    }
}

/* `used` that ends inside a compact record: the record is cut, not read
 * shorter, whichever byte the cut falls after. */
static void test_compact_cut_by_used(void **state)
{
    struct capb b;
    struct capture *c;

    capb__start(&b, 10, 1);
    capb__alloc(&b, 0, 11, 0x100, 8, 8, 0);
    uint64_t at = capb__alloc_ex(&b, 0, VH_REC_ALLOC, 400,
                                 &(struct capb_alloc){ .addr = 0x55d0c0a0, .size = 300,
                                                       .usable = 312, .stack = 200,
                                                       .heap = 3, .tag = 2 });
    uint64_t end = capb__chunk_offset(&b, 0) + capb__chunk_header(&b, 0)->used;
    for (uint64_t cut = at; cut < end; cut++) {
        capb__set_used(&b, 0, cut - capb__chunk_offset(&b, 0));
        c = open_image(&b);
        assert_int_equal(drain(c), 2);
        if (cut == at) {
            expect_damage(c, 0, 0);
        } else {
            const char *first;
            expect_damage(c, 1, at);
            capture__damage(c, &first);
            assert_non_null(strstr(first, "runs past used"));
        }
        capture__close(c);
    }
    capb__set_used(&b, 0, end - capb__chunk_offset(&b, 0));
    c = open_image(&b);
    assert_int_equal(drain(c), 3);
    expect_damage(c, 0, 0);
    capture__close(c);
    capb__destroy(&b);
}

/* Struct records must sit at 8-aligned offsets, and PAD only runs up to
 * one: anything else is damage, not a guess. */
static void test_struct_alignment(void **state)
{
    struct capb b;
    struct capture *c;
    const char *first;

    /* A MARK right after a compact record, without its PAD bytes. */
    capb__start(&b, 10, 1);
    capb__alloc(&b, 0, 11, 0x100, 300, 300, 0);
    struct vh_rec_label m = { .h = { .type = VH_REC_MARK, .a = 2 }, .time = 12 };
    uint64_t at = capb__bytes(&b, 0, &m, sizeof m);
    assert_true(at % 8 != 0);
    c = open_image(&b);
    assert_int_equal(drain(c), 2);
    expect_damage(c, 1, at);
    capture__damage(c, &first);
    assert_non_null(strstr(first, "not a multiple of 8"));
    capture__close(c);
    capb__destroy(&b);

    /* A PAD byte at an aligned offset. */
    capb__start(&b, 10, 1);
    at = capb__bytes(&b, 0, "\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f", 8);
    capb__mark(&b, 0, 11, "x");
    c = open_image(&b);
    assert_int_equal(drain(c), 1);
    expect_damage(c, 1, at);
    capture__damage(c, &first);
    assert_non_null(strstr(first, "padding"));
    capture__close(c);
    capb__destroy(&b);

    /* A version 1 capture has no PAD: 0x7f there is an unknown type. */
    capb__init_v1(&b, 0);
    capb__chunk(&b);
    capb__thread(&b, 0, 10, 1);
    at = capb__bytes(&b, 0, "\x7f\x00\x00\x00\x00\x00\x00\x00" "\x0b\x00\x00\x00\x00\x00\x00\x00", 16);
    c = open_image(&b);
    assert_int_equal(drain(c), 1);
    expect_damage(c, 1, at);
    capture__close(c);
    capb__destroy(&b);
}

/* ---- merge order ------------------------------------------------------ */

struct key {
    uint64_t time, off;
};

static int key_cmp(const void *a, const void *b)
{
    const struct key *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return (x->off > y->off) - (x->off < y->off);
}

static void test_merge_order(void **state)
{
    struct capb b;
    struct capture *c;
    struct key want[300];
    size_t nwant = 0, n;
    uint64_t t[3] = { 0, 0, 0 };
    uint32_t seed = 12345;

    capb__init(&b, 0);
    for (int ch = 0; ch < 3; ch++)
        capb__chunk(&b);
    /* Times interleave across chunks and often tie (steps of 0..2). */
    for (int i = 0; i < 60; i++) {
        for (uint32_t ch = 0; ch < 3; ch++) {
            seed = seed * 1103515245 + 12345;
            t[ch] += (seed >> 16) % 3;
            want[nwant].time = t[ch];
            want[nwant].off = i == 0 ? capb__thread(&b, ch, t[ch], 100 + ch)
                                     : capb__alloc(&b, ch, t[ch], 0x1000 + nwant, 8, 8, 0);
            nwant++;
        }
    }
    qsort(want, nwant, sizeof want[0], key_cmp);

    c = open_image(&b);
    assert_int_equal(capture__chunks(c), 3);
    n = drain(c);
    assert_int_equal(n, nwant);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(events[i].time, want[i].time);
        assert_int_equal(events[i].offset, want[i].off);
        assert_int_equal(events[i].tid, 100 + events[i].chunk);
    }
    expect_damage(c, 0, 0);

    /* Rewind yields the same stream again; progress reaches the total,
     * the bytes of the records (PAD not counted). */
    uint64_t total, done = capture__progress(c, &total), sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += events[i].size;
    assert_int_equal(done, total);
    assert_int_equal(total, sum);
    /* A THREAD record, then compact ones only: no padding anywhere. */
    for (uint32_t ch = 0; ch < 3; ch++)
        sum -= capb__chunk_header(&b, ch)->used - sizeof(struct vh_chunk_header);
    assert_int_equal(sum, 0);
    capture__rewind(c);
    assert_int_equal(capture__progress(c, NULL), 0);
    for (size_t i = 0; i < nwant; i++) {
        struct vh_event ev;
        assert_int_equal(capture__next(c, &ev), 1);
        assert_int_equal(ev.offset, want[i].off);
    }
    assert_int_equal(capture__next(c, &events[0]), 0);
    capture__close(c);
    capb__destroy(&b);
}

/* ---- thread ids ------------------------------------------------------- */

static void test_tid_tracking(void **state)
{
    struct capb b;
    struct capture *c;

    capb__init(&b, 0);
    uint32_t c0 = capb__chunk(&b), c1 = capb__chunk(&b);
    uint64_t o_before = capb__alloc(&b, c0, 1, 0x10, 8, 8, 0);
    uint64_t o_t100 = capb__thread(&b, c0, 2, 100);
    uint64_t o_a100 = capb__alloc(&b, c0, 4, 0x20, 8, 8, 0);
    uint64_t o_x100 = capb__thread_exit(&b, c0, 5, 100);
    /* The chunk is reused by a later thread, which says so first. */
    uint64_t o_t200 = capb__thread(&b, c0, 6, 200);
    uint64_t o_f200 = capb__free(&b, c0, 8, 0x30);
    uint64_t o_t300 = capb__thread(&b, c1, 3, 300);
    uint64_t o_f300 = capb__free(&b, c1, 7, 0x20);
    struct { uint64_t off; uint32_t tid, chunk; } want[] = {
        { o_before, 0, 0 }, { o_t100, 100, 0 }, { o_t300, 300, 1 }, { o_a100, 100, 0 },
        { o_x100, 100, 0 }, { o_t200, 200, 0 }, { o_f300, 300, 1 }, { o_f200, 200, 0 },
    };

    c = open_image(&b);
    assert_int_equal(drain(c), 8);
    expect_damage(c, 0, 0);
    for (size_t i = 0; i < 8; i++) {
        assert_int_equal(events[i].offset, want[i].off);
        assert_int_equal(events[i].tid, want[i].tid);
        assert_int_equal(events[i].chunk, want[i].chunk);
    }
    /* Rewinding forgets the tids: the first record is again before any
     * THREAD record. */
    capture__rewind(c);
    assert_int_equal(capture__next(c, &events[0]), 1);
    assert_int_equal(events[0].tid, 0);
    capture__close(c);
    capb__destroy(&b);
}

/* A chunk handed to a later thread may go on with times a little before
 * the previous owner's last one (the new owner took its time, then claimed
 * the chunk): not damage, and the merge still orders everything by time. */
static void test_reused_chunk_time_overlap(void **state)
{
    struct capb b;
    struct capture *c;

    capb__init(&b, 0);
    uint32_t c0 = capb__chunk(&b), c1 = capb__chunk(&b);
    uint64_t a1 = capb__thread(&b, c0, 10, 100);
    uint64_t a2 = capb__alloc(&b, c0, 20, 0x10, 8, 8, 0);
    uint64_t a3 = capb__thread_exit(&b, c0, 30, 100);
    uint64_t b1 = capb__thread(&b, c0, 25, 200);
    uint64_t b2 = capb__free(&b, c0, 26, 0x10);
    uint64_t b3 = capb__alloc(&b, c0, 40, 0x20, 8, 8, 0);
    uint64_t x1 = capb__thread(&b, c1, 27, 300);
    /* Within one thread's run, going back is still damage (a struct
     * record: a compact one cannot go back, its writer clamps). */
    uint64_t y1 = capb__thread(&b, c1, 28, 400);
    uint64_t y2 = capb__alloc(&b, c1, 35, 0x30, 8, 8, 0);
    uint64_t y3 = capb__mark(&b, c1, 34, "back");
    capb__free(&b, c1, 50, 0x30);
    struct { uint64_t off, time; uint32_t tid; } want[] = {
        { a1, 10, 100 }, { a2, 20, 100 }, { b1, 25, 200 }, { b2, 26, 200 }, { x1, 27, 300 },
        { y1, 28, 400 }, { a3, 30, 100 }, { y2, 35, 400 }, { b3, 40, 200 },
    };

    c = open_image(&b);
    assert_int_equal(drain(c), 9);
    for (size_t i = 0; i < 9; i++) {
        assert_int_equal(events[i].offset, want[i].off);
        assert_int_equal(events[i].time, want[i].time);
        assert_int_equal(events[i].tid, want[i].tid);
    }
    expect_damage(c, 1, y3);
    capture__close(c);
    capb__destroy(&b);
}

/* ---- stacks ----------------------------------------------------------- */

static void check_stack(struct capture *c, uint32_t id, const uint64_t *frames, uint32_t depth,
                        uint8_t flags)
{
    uint32_t d = 99;
    uint8_t f = 99;
    const uint64_t *got = capture__stack(c, id, &d, &f);

    assert_non_null(got);
    assert_int_equal(d, depth);
    assert_int_equal(f, flags);
    if (depth)
        assert_memory_equal(got, frames, depth * 8);
}

/* Packed stacks (what the shim writes): capture__stack hands out their
 * frames, capture__next yields each as the STACK it packs; one whose
 * varints run past the record is damage, and ends its chunk. */
static void test_stack_packed(void **state)
{
    static const uint64_t f1[] = { 0x7f0000001000, 0x401136, 0x401200, 0x55550000ff00 };
    static const uint64_t f2[] = { 0x401136 };
    struct capb b;
    struct capture *c;
    struct vh_event ev;
    uint64_t deep[300];
    (void)state;

    for (int i = 0; i < 300; i++)
        deep[i] = 0x400000 + (uint64_t)(i % 7) * 4096 - (uint64_t)i;
    capb__init(&b, 0);
    uint32_t c0 = capb__chunk(&b), c1 = capb__chunk(&b);
    capb__stack_packed(&b, c0, 1, 1, f1, 4, 0, 0);
    capb__stack_packed(&b, c0, 2, 2, NULL, 0, 0, 0);
    capb__stack_packed(&b, c0, 3, 3, deep, 300, VH_RF_TRUNCATED, 0);
    capb__stack(&b, c0, 4, 4, f2, 1, 0);              /* a plain one beside them */
    capb__stack_packed(&b, c1, 5, 5, f2, 1, 0, 0);
    uint64_t bad = capb__stack_packed(&b, c1, 6, 6, f1, 4, 0, 1);
    capb__stack_packed(&b, c1, 7, 7, f2, 1, 0, 0);    /* after the damage: lost */

    c = open_image(&b);
    check_stack(c, 1, f1, 4, 0);
    check_stack(c, 2, NULL, 0, 0);
    check_stack(c, 3, deep, 300, VH_RF_TRUNCATED);
    check_stack(c, 4, f2, 1, 0);
    check_stack(c, 5, f2, 1, 0);
    assert_null(capture__stack(c, 6, NULL, NULL));
    assert_null(capture__stack(c, 7, NULL, NULL));
    expect_damage(c, 1, bad);
    unsigned seen = 0;
    while (capture__next(c, &ev) == 1) {
        if (ev.rec->type != VH_REC_STACK)
            continue;
        const struct vh_rec_stack *r = (const void *)ev.rec;
        uint32_t d;
        const uint64_t *want = capture__stack(c, r->h.b, &d, NULL);
        assert_int_equal(ev.size, sizeof *r + (size_t)d * 8);
        assert_int_equal(r->h.a, 2 + d);
        assert_int_equal(r->time, r->h.b);
        if (d)
            assert_memory_equal(r->frames, want, (size_t)d * 8);
        seen++;
    }
    assert_int_equal(seen, 5);
    capture__close(c);
    capb__destroy(&b);
}

/* A recursion cut at 64 frames (Vere's nock): two leaf frames, then a
 * cycle of five, the window `shift` frames into it. */
static void recursion(uint64_t *f, uint64_t leaf, uint32_t shift)
{
    f[0] = leaf;
    f[1] = leaf + 0x2400;
    for (uint32_t i = 2; i < 64; i++)
        f[i] = 0x555000a000 + (uint64_t)((i + shift) % 5) * 0x1234;
}

/* Diff stacks (what the shim writes after a run's first stack): each
 * decodes against its base, also a chain of them and one whose base lies in
 * another chunk; one whose base is not defined, or did not decode, or that
 * copies from before its window, is damage and lost alone; one whose ops
 * run past its frame count ends its chunk. capture__next yields each as
 * the STACK it stands for. */
static void test_stack_diff(void **state)
{
    static const uint64_t f5[] = { 0x401136, 0x401200, 0x7f0000001000 };
    static const uint64_t f6[] = { 0x401150, 0x401200, 0x7f0000001000, 0x401136 };
    /* base 5 (3 frames) at distance 17; 3 frames; a copy of 3 from 6 back */
    static const uint8_t before_window[] = { 17, 3, 3, 5 };
    /* base 1 at distance 23; 2 frames; a literal run of 3 */
    static const uint8_t past_count[] = { 23, 2, 4, 1, 1, 1 };
    uint64_t r1[64], r2[64], r3[64];
    struct capb b;
    struct vh_event ev;
    (void)state;

    recursion(r1, 0x555001000, 0);
    recursion(r2, 0x555002000, 2);
    recursion(r3, 0x555003000, 1);
    capb__init(&b, 0);
    uint32_t c0 = capb__chunk(&b), c1 = capb__chunk(&b), c2 = capb__chunk(&b);
    capb__stack_packed(&b, c0, 1, 1, r1, 64, VH_RF_TRUNCATED, 0);
    capb__stack_diff(&b, c0, 2, 2, r2, 64, 1, r1, 64, NULL, 0);
    capb__stack_diff(&b, c0, 3, 3, r3, 64, 2, r2, 64, NULL, 0);
    capb__stack_diff(&b, c0, 4, 4, NULL, 0, 1, r1, 64, NULL, 0);
    capb__stack(&b, c0, 5, 5, f5, 3, 0);
    capb__stack_diff(&b, c0, 6, 6, f6, 4, 5, f5, 3, NULL, 0);
    /* ids 7-19 are never defined */
    uint64_t bad = capb__stack_diff(&b, c1, 7, 20, f5, 3, 15, f5, 3, NULL, 0);
    capb__stack_diff(&b, c1, 8, 21, f5, 3, 20, f5, 3, NULL, 0);
    capb__stack_diff(&b, c1, 9, 22, NULL, 0, 0, NULL, 0, before_window, sizeof before_window);
    capb__stack_diff(&b, c1, 10, 23, r3, 64, 1, r1, 64, NULL, 0);
    capb__stack_diff(&b, c2, 11, 24, NULL, 0, 0, NULL, 0, past_count, sizeof past_count);
    capb__stack_packed(&b, c2, 12, 25, f5, 3, 0, 0);  /* after the damage: lost */

    struct capture *c = open_image(&b);
    check_stack(c, 1, r1, 64, VH_RF_TRUNCATED);
    check_stack(c, 2, r2, 64, 0);
    check_stack(c, 3, r3, 64, 0);
    check_stack(c, 4, NULL, 0, 0);
    check_stack(c, 6, f6, 4, 0);
    check_stack(c, 23, r3, 64, 0);
    for (uint32_t id = 20; id <= 25; id += id == 22 ? 2 : 1)
        assert_null(capture__stack(c, id, NULL, NULL));
    expect_damage(c, 4, bad);
    unsigned seen = 0, framed = 0;
    while (capture__next(c, &ev) == 1) {
        if (ev.rec->type != VH_REC_STACK)
            continue;
        const struct vh_rec_stack *r = (const void *)ev.rec;
        uint32_t d = 0;
        const uint64_t *want = capture__stack(c, r->h.b, &d, NULL);
        assert_int_equal(r->h.a, 2 + d);
        assert_int_equal(ev.size, sizeof *r + (size_t)d * 8);
        if (d)
            assert_memory_equal(r->frames, want, (size_t)d * 8);
        seen++;
        framed += want != NULL;
    }
    assert_int_equal(seen, 10);
    assert_int_equal(framed, 7);
    capture__close(c);
    capb__destroy(&b);
}

/* A capture of a packed stack and a chain of diffs against it, cut at every
 * offset: each stack whose record is whole is there with its frames (its
 * base lies before it in the chunk), and no cut makes a diff's base
 * missing. */
static void test_stack_diff_cut_everywhere(void **state)
{
    uint64_t r[4][64], end[5];
    char path[256], err[256];
    struct capb b;
    (void)state;

    capb__init(&b, 0);
    uint32_t c0 = capb__chunk(&b);
    for (uint32_t k = 0; k < 4; k++) {
        recursion(r[k], 0x555001000 + 0x1000 * k, k);
        uint64_t off = k ? capb__stack_diff(&b, c0, k + 1, k + 1, r[k], 64, k, r[k - 1], 64,
                                            NULL, 0)
                         : capb__stack_packed(&b, c0, 1, 1, r[0], 64, 0, 0);
        end[k + 1] = off + ((const struct vh_rec_hdr *)(const void *)(b.buf + off))->a * 8u;
    }
    assert_int_equal(capb__write_tmp(&b, path, sizeof path), 0);
    for (uint64_t cut = capb__size(&b); cut >= capb__chunk_offset(&b, c0); cut--) {
        struct capture *c;
        const char *first;
        assert_int_equal(truncate(path, (off_t)cut), 0);
        assert_int_equal(capture__open(path, &c, err, sizeof err), 0);
        for (uint32_t id = 1; id <= 4; id++) {
            if (end[id] <= cut)
                check_stack(c, id, r[id - 1], 64, 0);
            else
                assert_null(capture__stack(c, id, NULL, NULL));
        }
        if (capture__damage(c, &first))
            assert_null(strstr(first, "base"));
        capture__close(c);
    }
    unlink(path);
    capb__destroy(&b);
}

/* A capture followed while it grows (capture__follow, top --live): a diff
 * written after the snapshot that read its base decodes against it, and
 * the stacks read before keep their frames. */
static void test_stack_diff_followed(void **state)
{
    uint64_t r1[64], r2[64], r3[64];
    char path[256], err[256];
    struct capture *c;
    struct capb b;
    (void)state;

    recursion(r1, 0x555001000, 0);
    recursion(r2, 0x555002000, 3);
    recursion(r3, 0x555003000, 4);
    capb__init(&b, 0);
    uint32_t c0 = capb__chunk(&b);
    capb__stack_packed(&b, c0, 1, 1, r1, 64, 0, 0);
    capb__stack_diff(&b, c0, 2, 2, r2, 64, 1, r1, 64, NULL, 0);
    assert_int_equal(capb__write_tmp(&b, path, sizeof path), 0);
    assert_int_equal(capture__open(path, &c, err, sizeof err), 0);
    check_stack(c, 2, r2, 64, 0);
    for (int step = 0; step < 2; step++) {
        if (!step)
            capb__stack_diff(&b, c0, 3, 3, r3, 64, 2, r2, 64, NULL, 0);
        assert_int_equal(capb__write(&b, path), 0);
        assert_int_equal(capture__follow(c, err, sizeof err), 0);
        check_stack(c, 1, r1, 64, 0);
        check_stack(c, 2, r2, 64, 0);
        check_stack(c, 3, r3, 64, 0);
        expect_damage(c, 0, 0);
    }
    capture__close(c);
    unlink(path);
    capb__destroy(&b);
}

static void test_stack_lookup(void **state)
{
    static const uint64_t f1[] = { 0x401136, 0x401200, 0x7f0000001000 };
    static const uint64_t f7[] = { 1, 2, 3, 4, 5 };
    struct capb b;
    struct capture *c;
    uint64_t deep[300];

    for (int i = 0; i < 300; i++)
        deep[i] = 0x400000 + (uint64_t)i * 16;
    capb__init(&b, 0);
    uint32_t c0 = capb__chunk(&b), c1 = capb__chunk(&b);
    capb__stack(&b, c1, 1, 7, f7, 5, VH_RF_TRUNCATED);
    capb__stack(&b, c0, 2, 1, f1, 3, 0);
    capb__stack(&b, c0, 3, 2, NULL, 0, 0);
    capb__stack(&b, c1, 4, 9, deep, 300, 0);
    /* The same id again with the same frames: harmless, not damage. */
    capb__stack(&b, c1, 5, 1, f1, 3, 0);

    c = open_image(&b);
    check_stack(c, 1, f1, 3, 0);
    check_stack(c, 2, NULL, 0, 0);
    check_stack(c, 7, f7, 5, VH_RF_TRUNCATED);
    check_stack(c, 9, deep, 300, 0);
    assert_null(capture__stack(c, 0, NULL, NULL));
    assert_null(capture__stack(c, 3, NULL, NULL));
    assert_null(capture__stack(c, 10, NULL, NULL));
    assert_null(capture__stack(c, UINT32_MAX, NULL, NULL));
    assert_int_equal(capture__max_stack_id(c), 9);
    assert_int_equal(drain(c), 5);
    expect_damage(c, 0, 0);
    capture__close(c);
    capb__destroy(&b);

    /* Sparse ids: looked up without a table sized by the largest id. */
    capb__init(&b, 0);
    c0 = capb__chunk(&b);
    capb__stack(&b, c0, 1, 3000000000u, f7, 2, 0);
    capb__stack(&b, c0, 2, 5, f1, 1, 0);
    capb__stack(&b, c0, 3, 400000, f7, 4, 0);
    c = open_image(&b);
    check_stack(c, 3000000000u, f7, 2, 0);
    check_stack(c, 5, f1, 1, 0);
    check_stack(c, 400000, f7, 4, 0);
    assert_null(capture__stack(c, 6, NULL, NULL));
    assert_null(capture__stack(c, 1, NULL, NULL));
    assert_int_equal(capture__max_stack_id(c), 3000000000u);
    capture__close(c);
    capb__destroy(&b);
}

/* A capture big enough that pass one is split between threads (one a CPU,
 * at least 4 MiB of chunks each): the parts' segments, stacks and damage
 * merge as one thread would have found them, the first message the one
 * about the lowest offset. */
static void test_scan_in_parts(void **state)
{
    static const uint64_t fa[] = { 0x10, 0x20 }, fb[] = { 0x10, 0x30 };
    enum { NCHUNKS = 16 };
    uint64_t back[2];
    struct capb b;
    struct capture *c;
    size_t n;

    capb__init(&b, 1u << 20);
    for (uint32_t i = 0; i < NCHUNKS; i++) {
        uint64_t t = 1000 + 100 * (uint64_t)i;
        uint32_t ch = capb__chunk(&b);
        capb__thread(&b, ch, t, 100 + i);
        if (i == 14)     /* id 2 again, other frames: the first one stays */
            capb__stack(&b, ch, t + 1, 2, fb, 2, 0);
        else
            capb__stack(&b, ch, t + 1, i + 1, fa, i == 1 ? 2 : 1, 0);
        capb__alloc(&b, ch, t + 2, 0x1000 + 0x100 * (uint64_t)i, 16, 16, i + 1);
        capb__alloc(&b, ch, t + 3, 0x1010 + 0x100 * (uint64_t)i, 16, 16, i + 1);
        /* chunks 12 and 3 (in that order: the message is about the first
         * in the file, whichever part found it) go back in time */
        if (i == 3 || i == 12)
            back[i == 12] = capb__rss(&b, ch, t - 50, 4096);
        else
            capb__rss(&b, ch, t + 4, 4096);
        capb__alloc(&b, ch, t + 5, 0x1020 + 0x100 * (uint64_t)i, 16, 16, i + 1);
    }
    c = open_image(&b);
    n = drain(c);
    assert_int_equal(n, (NCHUNKS - 2) * 6 + 2 * 4);
    for (size_t i = 1; i < n; i++)
        assert_true(events[i].time >= events[i - 1].time);
    assert_int_equal(in_chunk(n, 3), 4);
    assert_int_equal(in_chunk(n, 12), 4);
    assert_int_equal(in_chunk(n, 15), 6);
    expect_damage(c, 3, back[0]);
    check_stack(c, 2, fa, 2, 0);
    check_stack(c, 16, fa, 1, 0);
    assert_null(capture__stack(c, 15, NULL, NULL));
    assert_int_equal(capture__max_stack_id(c), 16);
    capture__close(c);
    capb__destroy(&b);
}

/* ---- whole-file errors ------------------------------------------------ */

static void test_bad_magic(void **state)
{
    struct capb b;

    capb__init(&b, 0);
    capb__chunk(&b);
    capb__header(&b)->magic[0] = 'X';
    assert_string_equal(open_fails(&b, (size_t)-1), "not a vheap capture (bad magic)");
    /* Too short to even hold a magic. */
    assert_string_equal(open_fails(&b, 3), "not a vheap capture (bad magic)");
    assert_string_equal(open_fails(&b, 0), "not a vheap capture (bad magic)");
    capb__destroy(&b);
}

static void test_wrong_version(void **state)
{
    struct capb b;

    capb__init(&b, 0);
    capb__chunk(&b);
    capb__header(&b)->version = 5;
    assert_string_equal(open_fails(&b, (size_t)-1),
                        "capture format version 5, this vheap reads 1 to 4");
    capb__header(&b)->version = 0;
    assert_string_equal(open_fails(&b, (size_t)-1),
                        "capture format version 0, this vheap reads 1 to 4");
    capb__destroy(&b);
}

static void test_bad_header_fields(void **state)
{
    struct capb b;

    capb__init(&b, 0);
    capb__chunk(&b);
    /* A header cut short names where the file ends. */
    assert_non_null(strstr(open_fails(&b, 100), "0x64"));

    capb__header(&b)->chunk_size = 3000;
    assert_non_null(strstr(open_fails(&b, (size_t)-1), "chunk size 3000"));
    capb__header(&b)->chunk_size = 1024;
    assert_non_null(strstr(open_fails(&b, (size_t)-1), "chunk size 1024"));
    capb__header(&b)->chunk_size = b.chunk_size;
    capb__header(&b)->chunk_header_size = 16;
    assert_non_null(strstr(open_fails(&b, (size_t)-1), "chunk header size 16"));
    capb__header(&b)->chunk_header_size = 32;
    capb__header(&b)->chunk_offset = 100;
    assert_non_null(strstr(open_fails(&b, (size_t)-1), "chunk offset 0x64"));
    capb__header(&b)->chunk_offset = VH_HEADER_SIZE;
    capb__header(&b)->header_size = 512;
    assert_non_null(strstr(open_fails(&b, (size_t)-1), "header size 512"));
    capb__destroy(&b);

    char err[256];
    struct capture *c;
    assert_true(capture__open("/nonexistent/vheap.vhcap", &c, err, sizeof err) == -ENOENT);
    assert_non_null(strstr(err, "No such file"));
    assert_int_equal(capture__open("/", &c, err, sizeof err), -EINVAL);
}

/* ---- damage inside chunks --------------------------------------------- */

/* Three chunks with four records each; chunk `bad` is then damaged by the
 * caller. Returns the offsets of every record, chunk by chunk. */
static void three_chunks(struct capb *b, uint64_t off[3][4])
{
    capb__init(b, 0);
    for (uint32_t ch = 0; ch < 3; ch++) {
        capb__chunk(b);
        off[ch][0] = capb__thread(b, ch, 10 * ch, 100 + ch);
        off[ch][1] = capb__alloc(b, ch, 10 * ch + 1, 0x1000 * (ch + 1), 16, 24, 0);
        off[ch][2] = capb__mark(b, ch, 10 * ch + 2, "m");
        off[ch][3] = capb__free(b, ch, 10 * ch + 3, 0x1000 * (ch + 1));
    }
}

static void test_truncated_file(void **state)
{
    struct capb b;
    uint64_t off[3][4];
    char path[256], err[256];
    struct capture *c;
    size_t n;

    three_chunks(&b, off);
    /* Cut in the middle of chunk 1's mark record: its thread and alloc
     * records come out, and chunk 2 is gone. */
    assert_int_equal(capb__write_tmp(&b, path, sizeof path), 0);
    assert_int_equal(truncate(path, (off_t)off[1][2] + 8), 0);
    assert_int_equal(capture__open(path, &c, err, sizeof err), 0);
    unlink(path);
    n = drain(c);
    assert_int_equal(n, 6);
    assert_int_equal(in_chunk(n, 0), 4);
    assert_int_equal(in_chunk(n, 1), 2);
    assert_int_equal(capture__chunks(c), 2);
    /* Two regions: the chunk cut short, and the chunk the file lacks. */
    expect_damage(c, 2, off[1][2] + 8);
    const char *first;
    capture__damage(c, &first);
    assert_non_null(strstr(first, "chunk 1"));
    capture__close(c);
    capb__destroy(&b);
}

/* Every possible cut of a capture, at every byte: never a crash, exactly
 * the records that lie wholly before the cut, and damage exactly when
 * something was lost. */
static void test_truncated_everywhere(void **state)
{
    struct capb b;
    uint64_t off[3][4], rec_end[3][4];
    char path[256], err[256];
    struct capture *c;

    three_chunks(&b, off);
    assert_int_equal(capb__write_tmp(&b, path, sizeof path), 0);
    /* Where each record ends (PAD bytes may follow it). */
    assert_int_equal(capture__open(path, &c, err, sizeof err), 0);
    assert_int_equal(drain(c), 12);
    for (size_t i = 0; i < 12; i++)
        for (uint32_t ch = 0; ch < 3; ch++)
            for (int r = 0; r < 4; r++)
                if (events[i].offset == off[ch][r])
                    rec_end[ch][r] = events[i].offset + events[i].size;
    capture__close(c);
    for (uint64_t cut = capb__size(&b); cut >= VH_HEADER_SIZE; cut--) {
        size_t want = 0, n;
        unsigned regions = 0;
        uint64_t holds = (cut - VH_HEADER_SIZE + b.chunk_size - 1) / b.chunk_size;

        assert_int_equal(truncate(path, (off_t)cut), 0);
        assert_int_equal(capture__open(path, &c, err, sizeof err), 0);
        for (uint32_t ch = 0; ch < 3; ch++) {
            uint64_t used_end = capb__chunk_offset(&b, ch) + capb__chunk_header(&b, ch)->used;
            for (int r = 0; r < 4; r++)
                want += rec_end[ch][r] <= cut;
            /* The chunk the cut falls in is one damaged region if it lost
             * records; the chunks after it are one more. */
            regions += used_end > cut && capb__chunk_offset(&b, ch) < cut;
        }
        regions += holds < 3;
        n = drain(c);
        assert_int_equal(n, want);
        assert_int_equal(capture__damage(c, NULL), regions);
        capture__close(c);
    }
    unlink(path);
    capb__destroy(&b);
}

static void test_claims_more_chunks_than_file(void **state)
{
    struct capb b;
    uint64_t off[3][4];
    struct capture *c;
    const char *first;

    three_chunks(&b, off);
    capb__header(&b)->chunks_claimed = 5;
    c = open_image(&b);
    assert_int_equal(capture__chunks(c), 3);
    assert_int_equal(drain(c), 12);
    expect_damage(c, 1, capb__size(&b));
    capture__damage(c, &first);
    assert_non_null(strstr(first, "truncated: header claims 5 chunks, file holds 3"));
    capture__close(c);
    capb__destroy(&b);
}

static void test_used_past_chunk_end(void **state)
{
    struct capb b;
    uint64_t off[3][4];
    struct capture *c;
    size_t n;

    three_chunks(&b, off);
    capb__set_used(&b, 1, b.chunk_size + 8);
    c = open_image(&b);
    n = drain(c);
    assert_int_equal(n, 8);
    assert_int_equal(in_chunk(n, 1), 0);
    expect_damage(c, 1, capb__chunk_offset(&b, 1));
    capture__close(c);

    /* used smaller than the chunk header */
    capb__set_used(&b, 1, 8);
    c = open_image(&b);
    assert_int_equal(drain(c), 8);
    expect_damage(c, 1, capb__chunk_offset(&b, 1));
    capture__close(c);
    capb__destroy(&b);
}

static void test_bad_chunk_header(void **state)
{
    struct capb b;
    uint64_t off[3][4];
    struct capture *c;

    three_chunks(&b, off);
    capb__chunk_header(&b, 0)->magic = 0x12345678;
    capb__chunk_header(&b, 2)->index = 7;
    c = open_image(&b);
    assert_int_equal(drain(c), 4);
    assert_int_equal(in_chunk(4, 1), 4);
    expect_damage(c, 2, capb__chunk_offset(&b, 0));
    capture__close(c);
    capb__destroy(&b);
}

static void test_unknown_fixed_type(void **state)
{
    struct capb b;
    uint64_t off[3][4];
    struct capture *c;
    size_t n;

    three_chunks(&b, off);
    /* Chunk 2's mark becomes a fixed-size type nobody knows: its size is
     * unknown, so the chunk ends before it. */
    ((struct vh_rec_hdr *)capb__at(&b, off[2][2]))->type = 0x42;
    c = open_image(&b);
    n = drain(c);
    assert_int_equal(n, 10);
    assert_int_equal(in_chunk(n, 2), 2);
    expect_damage(c, 1, off[2][2]);
    const char *first;
    capture__damage(c, &first);
    assert_non_null(strstr(first, "0x42"));
    capture__close(c);
    capb__destroy(&b);
}

static void test_zero_length_variable(void **state)
{
    struct capb b;
    uint64_t off[3][4];
    struct capture *c;
    size_t n;

    three_chunks(&b, off);
    ((struct vh_rec_hdr *)capb__at(&b, off[0][2]))->a = 0;
    c = open_image(&b);
    n = drain(c);
    assert_int_equal(n, 10);
    assert_int_equal(in_chunk(n, 0), 2);
    expect_damage(c, 1, off[0][2]);
    capture__close(c);
    capb__destroy(&b);
}

static void test_variable_record_too_long_or_short(void **state)
{
    struct capb b;
    uint64_t off[3][4];
    struct capture *c;

    three_chunks(&b, off);
    ((struct vh_rec_hdr *)capb__at(&b, off[1][2]))->a = 400; /* past used */
    c = open_image(&b);
    assert_int_equal(drain(c), 10);
    expect_damage(c, 1, off[1][2]);
    capture__close(c);

    ((struct vh_rec_hdr *)capb__at(&b, off[1][2]))->a = 1; /* shorter than a label */
    c = open_image(&b);
    assert_int_equal(drain(c), 10);
    expect_damage(c, 1, off[1][2]);
    capture__close(c);
    capb__destroy(&b);

    /* A module record shorter than its fixed part. */
    capb__start(&b, 1, 5);
    uint64_t m = capb__mark(&b, 0, 2, "0123456789abcdefghijklmnopqrstuvwxyz");
    ((struct vh_rec_hdr *)capb__at(&b, m))->type = VH_REC_MODULE;
    c = open_image(&b);
    assert_int_equal(drain(c), 1);
    expect_damage(c, 1, m);
    capture__close(c);
    capb__destroy(&b);
}

static void test_time_backwards(void **state)
{
    struct capb b;
    uint64_t off[3][4];
    struct capture *c;
    size_t n;

    three_chunks(&b, off);
    /* Chunk 1's mark goes back before its alloc: the chunk ends there. */
    ((struct vh_rec_label *)capb__at(&b, off[1][2]))->time = 5;
    c = open_image(&b);
    n = drain(c);
    assert_int_equal(n, 10);
    assert_int_equal(in_chunk(n, 1), 2);
    expect_damage(c, 1, off[1][2]);
    capture__close(c);
    capb__destroy(&b);

    /* A compact record's time delta that wraps past 2^64 goes back too. */
    capb__start(&b, 1000, 5);
    uint64_t wrap = capb__bytes(&b, 0, (const uint8_t[]){ VH_REC_FREE,
                                    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
                                    0x00, VH_FN_FREE }, 13);
    c = open_image(&b);
    assert_int_equal(drain(c), 1);
    expect_damage(c, 1, wrap);
    capture__close(c);
    capb__destroy(&b);
}

static void test_duplicate_stack_id(void **state)
{
    static const uint64_t fa[] = { 0x10, 0x20 }, fb[] = { 0x10, 0x30 };
    struct capb b;
    struct capture *c;

    capb__init(&b, 0);
    capb__chunk(&b);
    capb__chunk(&b);
    capb__stack(&b, 0, 1, 4, fa, 2, 0);
    capb__stack(&b, 0, 2, 6, fa, 1, 0);
    uint64_t dup = capb__stack(&b, 1, 3, 4, fb, 2, 0);
    capb__alloc(&b, 1, 4, 0x100, 1, 8, 4);
    c = open_image(&b);
    /* Structurally every record is fine and comes out; the first definition
     * of id 4 wins. */
    assert_int_equal(drain(c), 4);
    check_stack(c, 4, fa, 2, 0);
    expect_damage(c, 1, dup);
    capture__close(c);
    capb__destroy(&b);
}

/* A version 1 writer counted a chunk before writing its header: a chunk
 * with no header, or one with nothing published, is empty, not damaged. */
static void test_claimed_but_unused_chunk_v1(void **state)
{
    struct capb b;
    struct capture *c;
    size_t n;

    capb__init_v1(&b, 0);
    capb__chunk(&b);
    capb__chunk_unused(&b); /* claimed, never written: all zero */
    capb__chunk(&b);
    capb__chunk(&b);        /* claimed, header written, nothing published */
    capb__set_used(&b, 3, 0);
    capb__thread(&b, 0, 1, 10);
    capb__alloc(&b, 0, 2, 0x10, 1, 8, 0);
    capb__thread(&b, 2, 1, 20);
    capb__free(&b, 2, 3, 0x10);
    c = open_image(&b);
    assert_int_equal(capture__chunks(c), 4);
    n = drain(c);
    assert_int_equal(n, 4);
    assert_int_equal(in_chunk(n, 0), 2);
    assert_int_equal(in_chunk(n, 2), 2);
    expect_damage(c, 0, 0);
    capture__close(c);
    capb__destroy(&b);
}

/* Version 2 writes the header and used before it counts the chunk: below
 * chunks_claimed a chunk without them is lost data, reported; a chunk
 * with a header and no record (used = the header) is merely empty. */
static void test_chunk_without_header(void **state)
{
    struct capb b;
    struct capture *c;
    const char *first;
    size_t n;

    capb__init(&b, 0);
    capb__chunk(&b);
    capb__chunk_unused(&b); /* all zero */
    capb__chunk(&b);
    capb__chunk(&b);        /* header, used 0 */
    capb__set_used(&b, 3, 0);
    capb__chunk(&b);        /* header, nothing after it: empty */
    capb__thread(&b, 0, 1, 10);
    capb__alloc(&b, 0, 2, 0x10, 1, 8, 0);
    capb__thread(&b, 2, 1, 20);
    capb__free(&b, 2, 3, 0x10);
    c = open_image(&b);
    assert_int_equal(capture__chunks(c), 5);
    n = drain(c);
    assert_int_equal(n, 4);
    assert_int_equal(in_chunk(n, 0), 2);
    assert_int_equal(in_chunk(n, 2), 2);
    expect_damage(c, 2, capb__chunk_offset(&b, 1));
    capture__damage(c, &first);
    char want[128];
    snprintf(want, sizeof want, "chunk 1 at offset 0x%llx: no chunk header",
             (unsigned long long)capb__chunk_offset(&b, 1));
    assert_string_equal(first, want);
    capture__close(c);
    capb__destroy(&b);
}

/* ---- a capture written while it is read ------------------------------- */

static void test_snapshot_while_writing(void **state)
{
    struct capb b;
    uint64_t off[3][4];
    char path[256], err[256];
    struct capture *c;
    FILE *f;

    three_chunks(&b, off);
    assert_int_equal(capb__write_tmp(&b, path, sizeof path), 0);
    assert_int_equal(capture__open(path, &c, err, sizeof err), 0);
    /* The writer goes on: one more record in chunk 0, used published. */
    capb__alloc(&b, 0, 50, 0x9000, 8, 8, 0);
    f = fopen(path, "r+");
    assert_non_null(f);
    assert_int_equal(fwrite(b.buf, 1, capb__size(&b), f), capb__size(&b));
    fclose(f);
    /* The open reader keeps its snapshot... */
    assert_int_equal(drain(c), 12);
    expect_damage(c, 0, 0);
    capture__close(c);
    /* ...and a new one sees the record. */
    assert_int_equal(capture__open(path, &c, err, sizeof err), 0);
    assert_int_equal(drain(c), 13);
    capture__close(c);
    unlink(path);
    capb__destroy(&b);
}

/* ---- random corruption ------------------------------------------------ */

/* A capture with every record type mutated at random: the reader may
 * refuse it or report damage, but never crashes and never yields a record
 * outside the file. Worth running under `make asan`. */
static void test_random_corruption(void **state)
{
    static const uint64_t frames[] = { 0x401000, 0x402000, 0x403000 };
    struct capb b, m;
    char path[256], err[256];
    uint32_t seed = 777;
    unsigned opened = 0, damaged = 0;

    capb__init(&b, 0);
    for (uint32_t ch = 0; ch < 3; ch++) {
        capb__chunk(&b);
        capb__thread(&b, ch, ch, 10 + ch);
        capb__stack(&b, ch, ch + 1, ch + 1, frames, 3 - ch, 0);
        capb__module(&b, ch, ch + 2, 0, 0x400000, 0x500000, (const uint8_t *)"abcd", 4,
                     "/lib/x.so", 0);
        capb__alloc(&b, ch, ch + 3, 0x100 * ch, 10, 16, ch + 1);
        capb__heap_create(&b, ch, ch + 4, ch + 1, 0, 0x1000, 0x1000, "h");
        capb__tag(&b, ch, ch + 5, 1, "tag");
        capb__free(&b, ch, ch + 6, 0x100 * ch);
        capb__end(&b, ch, ch + 7);
    }
    m = b;
    m.buf = malloc(b.cap);
    assert_non_null(m.buf);
    for (int iter = 0; iter < 3000; iter++) {
        struct capture *c;
        memcpy(m.buf, b.buf, capb__size(&b));
        int flips = 1 + (int)((seed >> 8) % 6);
        for (int k = 0; k < flips; k++) {
            size_t at;
            seed = seed * 1103515245 + 12345;
            /* Mostly the records, sometimes the key header words. */
            if ((seed >> 4) % 8 == 0)
                at = 8 + (seed >> 12) % 56;
            else
                at = VH_HEADER_SIZE + (seed >> 12) % (capb__size(&b) - VH_HEADER_SIZE);
            seed = seed * 1103515245 + 12345;
            m.buf[at] ^= (uint8_t)(1u << ((seed >> 16) % 8));
            if ((seed >> 20) % 4 == 0)
                m.buf[at] = (uint8_t)(seed >> 24);
        }
        assert_int_equal(capb__write_tmp(&m, path, sizeof path), 0);
        if (capture__open(path, &c, err, sizeof err) == 0) {
            struct vh_event ev;
            uint64_t total, bytes = 0;
            size_t len;
            opened++;
            while (capture__next(c, &ev)) {
                assert_true(ev.offset + ev.size <= capture__file_size(c));
                /* (a flipped version bit may make it a version 1 capture,
                 * whose records are all structs) */
                if (capture__header(c)->version != VH_CAPTURE_VERSION_V1 &&
                    vh_rec_is_compact(ev.rec->type)) {
                    assert_ptr_equal(ev.rec, &ev.dec.h);
                    assert_true(ev.size >= 2);   /* FREE_TICK, FREE_RECENT */
                } else {
                    assert_true(ev.size >= 16 && ev.offset % 8 == 0);
                }
                bytes += ev.size;
                vh_event_text(&ev, &len);
                if (ev.rec->type == VH_REC_ALLOC) {
                    uint32_t d;
                    const uint64_t *f = capture__stack(c, ev.rec->b, &d, NULL);
                    /* Touch the last frame: ASan catches a bad pointer. */
                    if (f && d)
                        bytes += 0 * *(volatile const uint64_t *)&f[d - 1];
                }
            }
            assert_int_equal(capture__progress(c, &total), bytes);
            assert_int_equal(bytes, total);
            damaged += capture__damage(c, NULL) > 0;
            capture__close(c);
        }
        unlink(path);
    }
    /* The mutations must have exercised both outcomes. */
    assert_true(opened > 100);
    assert_true(damaged > 100);
    free(m.buf);
    capb__destroy(&b);
}

/* ---- the dump text ---------------------------------------------------- */

/* Runs `vheap-analyze dump ARGS` in-process with stdout and stderr sent to
 * files; returns the exit code and the two outputs (caller frees). */
static int run_dump(int argc, const char **argv, char **out, char **err)
{
    const struct vh_command *cmd = vh_command_find("dump");
    char opath[256], epath[256];
    int ofd, efd, saved_out, saved_err, rc;

    assert_non_null(cmd);
    snprintf(opath, sizeof opath, "/tmp/vheap-dump-out.XXXXXX");
    snprintf(epath, sizeof epath, "/tmp/vheap-dump-err.XXXXXX");
    ofd = mkstemp(opath);
    efd = mkstemp(epath);
    assert_true(ofd >= 0 && efd >= 0);
    fflush(stdout);
    fflush(stderr);
    saved_out = dup(1);
    saved_err = dup(2);
    dup2(ofd, 1);
    dup2(efd, 2);
    rc = cmd->run(argc, (char **)argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    for (int k = 0; k < 2; k++) {
        int fd = k ? efd : ofd;
        off_t n = lseek(fd, 0, SEEK_END);
        char *buf = malloc((size_t)n + 1);
        assert_non_null(buf);
        assert_int_equal(pread(fd, buf, (size_t)n, 0), n);
        buf[n] = '\0';
        *(k ? err : out) = buf;
        close(fd);
    }
    unlink(opath);
    unlink(epath);
    return rc;
}

static void test_dump_text(void **state)
{
    static const uint64_t frames[] = { 0x401136, 0x7f0011223344 };
    static const uint8_t bid[] = { 0xab, 0xcd, 0xef, 0x01, 0x23 };
    const char *argv[] = { "./prog", "--flag", "tab\there" };
    struct capb b;
    char path[256], *out, *err;

    capb__init(&b, 0);
    capb__set_argv(&b, 3, argv);
    capb__header(&b)->pid = 1234;
    capb__header(&b)->flags = VH_HDR_ENDED | VH_HDR_ARGV_TRUNC;
    capb__header(&b)->dropped_events = 5;
    capb__chunk(&b);
    capb__chunk(&b);
    capb__thread(&b, 0, 100, 7);
    capb__thread(&b, 1, 101, 8);
    capb__module(&b, 0, 102, 0, 0x400000, 0x405000, bid, 5, "/usr/bin/prog", VH_RF_MAIN_EXE);
    capb__stack(&b, 1, 103, 3, frames, 2, VH_RF_TRUNCATED);
    capb__alloc(&b, 1, 104, 0x55d0c0a0, 100, 104, 3);
    capb__alloc_ex(&b, 0, VH_REC_ALLOC, 104,
                   &(struct capb_alloc){ .size = 100, .usable = 500, .stack = 3,
                                         .flags = VH_RF_FAILED });
    capb__free_ex(&b, 1, 105, 0, VH_FN_REALLOC, 0x55d0c0a0, VH_RF_REALLOC);
    capb__alloc_ex(&b, 1, VH_REC_ALLOC, 106,
                   &(struct capb_alloc){ .addr = 0x66000010, .size = 300, .usable = 312,
                                         .stack = 3, .func = VH_FN_REALLOC,
                                         .flags = VH_RF_REALLOC });
    capb__resize(&b, 1, 107, 0x66000010, 200, 216, 3);
    capb__free(&b, 1, 108, 0x66000010);
    capb__rss(&b, 0, 109, 1234567);
    capb__module_unload(&b, 0, 110, 0x7f0000000000);
    capb__heap_create(&b, 0, 111, 1, 0, 0x200000000, 2147483648u, "loom");
    capb__move(&b, 0, 112, 1, 0x1000, 0x2000);
    capb__heap_destroy(&b, 0, 113, 1);
    capb__mark(&b, 0, 114, "event 12\\x\n");
    capb__tag(&b, 0, 115, 1, "jet:add");
    struct vh_rec_value u = { .h = { .type = 0x90, .a = 3 }, .time = 116 };
    capb__raw(&b, 0, &u, sizeof u);
    capb__thread_exit(&b, 1, 117, 8);
    capb__end(&b, 0, 118);
    assert_int_equal(capb__write_tmp(&b, path, sizeof path), 0);

    const char *args[] = { "dump", path };
    assert_int_equal(run_dump(2, args, &out, &err), 0);
    char want[4096];
    snprintf(want, sizeof want,
             "# vheap capture version 4\n"
             "header pid=1234 ppid=1 exe=/usr/bin/prog page_size=4096 chunk_size=4096 "
             "chunks=2 start_realtime_ns=1790000000000000000 max_depth=64 unwind=libunwind "
             "exec_generation=0 flags=ended,argv_truncated\n"
             "argv 0 ./prog\n"
             "argv 1 --flag\n"
             "argv 2 tab\\x09here\n"
             "loss dropped=5 nested=0 stack_table_full=0 deferred_signals=0 guard_resets=0\n"
             "100 7 thread chunk=0\n"
             "101 8 thread chunk=1\n"
             "102 7 module bias=0x0 lo=0x400000 hi=0x405000 build_id=abcdef0123 "
             "path=/usr/bin/prog main\n"
             "103 8 stack id=3 depth=2 frames=0x401136,0x7f0011223344 truncated\n"
/* A tie in time: the lower file offset (chunk 0) first. */
             "104 7 alloc heap=0 func=malloc addr=0x0 size=100 usable=0 stack=3 tag=0 failed\n"
             "104 8 alloc heap=0 func=malloc addr=0x55d0c0a0 size=100 usable=104 stack=3 tag=0\n"
             "105 8 free heap=0 func=realloc addr=0x55d0c0a0 realloc\n"
             "106 8 alloc heap=0 func=realloc addr=0x66000010 size=300 usable=312 stack=3 "
             "tag=0 realloc\n"
             "107 8 resize heap=0 func=realloc addr=0x66000010 size=200 usable=216 stack=3 "
             "tag=0\n"
             "108 8 free heap=0 func=free addr=0x66000010\n"
             "109 7 rss bytes=1234567\n"
             "110 7 module_unload bias=0x7f0000000000\n"
             "111 7 heap_create id=1 parent=0 base=0x200000000 size=2147483648 name=loom\n"
             "112 7 move heap=1 from=0x1000 to=0x2000\n"
             "113 7 heap_destroy heap=1\n"
             "114 7 mark label=event 12\\x5cx\\x0a\n"
             "115 7 tag id=1 label=jet:add\n"
             "116 7 unknown type=0x90 size=24\n"
             "117 8 thread_exit\n"
             "118 7 end\n"
             "# records=20 allocs=3 frees=2 resizes=1 stacks=1 bytes_allocated=400\n");
    /* Line by line, so that a failure shows the line that differs. */
    for (char *o = out, *w = want; *o || *w;) {
        char *oe = strchr(o, '\n'), *we = strchr(w, '\n');
        assert_non_null(oe);
        assert_non_null(we);
        *oe = *we = '\0';
        assert_string_equal(o, w);
        *oe = *we = '\n';
        o = oe + 1;
        w = we + 1;
    }
    assert_string_equal(err, "");
    free(out);
    free(err);

    /* --no-header: only the record lines. */
    const char *args2[] = { "dump", "--no-header", path };
    assert_int_equal(run_dump(3, args2, &out, &err), 0);
    *strstr(want, "# records") = '\0';
    assert_string_equal(out, strstr(want, "100 7 thread"));
    free(out);
    free(err);

    /* Damage: the valid records, then one line on stderr, exit 1. Chunk
     * 1's used now ends inside its last record, the thread_exit at 117. */
    capb__set_used(&b, 1, capb__chunk_header(&b, 1)->used - 8);
    assert_int_equal(capb__write(&b, path), 0);
    assert_int_equal(run_dump(3, args2, &out, &err), 1);
    assert_null(strstr(out, "117 8 thread_exit"));
    assert_non_null(strstr(out, "108 8 free"));
    assert_non_null(strstr(out, "118 7 end"));
    char line[512];
    snprintf(line, sizeof line, "vheap-analyze: dump: %s: ", path);
    assert_memory_equal(err, line, strlen(line));
    assert_non_null(strstr(err, "runs past used (1 damaged regions)\n"));
    assert_int_equal(strchr(err, '\n') - err + 1, (long)strlen(err));
    free(out);
    free(err);

    /* Not a capture, and usage errors. */
    capb__header(&b)->magic[0] = 'x';
    assert_int_equal(capb__write(&b, path), 0);
    assert_int_equal(run_dump(2, args, &out, &err), 1);
    assert_string_equal(out, "");
    snprintf(line, sizeof line, "vheap-analyze: dump: %s: not a vheap capture (bad magic)\n",
             path);
    assert_string_equal(err, line);
    free(out);
    free(err);
    const char *bad1[] = { "dump" }, *bad2[] = { "dump", "--bogus", path },
               *bad3[] = { "dump", path, path };
    assert_int_equal(run_dump(1, bad1, &out, &err), 2);
    free(out);
    free(err);
    assert_int_equal(run_dump(3, bad2, &out, &err), 2);
    free(out);
    free(err);
    assert_int_equal(run_dump(3, bad3, &out, &err), 2);
    free(out);
    free(err);
    unlink(path);
    capb__destroy(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_record_type),
        cmocka_unit_test(test_every_record_type_v1),
        cmocka_unit_test(test_varint_edges),
        cmocka_unit_test(test_compact_edges),
        cmocka_unit_test(test_compact_worked_example),
        cmocka_unit_test(test_thread_resets_cursor),
        cmocka_unit_test(test_compact_damage),
        cmocka_unit_test(test_compact_cut_by_used),
        cmocka_unit_test(test_struct_alignment),
        cmocka_unit_test(test_merge_order),
        cmocka_unit_test(test_tid_tracking),
        cmocka_unit_test(test_reused_chunk_time_overlap),
        cmocka_unit_test(test_stack_lookup),
        cmocka_unit_test(test_stack_packed),
        cmocka_unit_test(test_stack_diff),
        cmocka_unit_test(test_stack_diff_cut_everywhere),
        cmocka_unit_test(test_stack_diff_followed),
        cmocka_unit_test(test_scan_in_parts),
        cmocka_unit_test(test_bad_magic),
        cmocka_unit_test(test_short_forms_cursor),
        cmocka_unit_test(test_v4_forms),
        cmocka_unit_test(test_v3_still_reads),
        cmocka_unit_test(test_v4_custom_heap_slack),
        cmocka_unit_test(test_wrong_version),
        cmocka_unit_test(test_bad_header_fields),
        cmocka_unit_test(test_truncated_file),
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_claims_more_chunks_than_file),
        cmocka_unit_test(test_used_past_chunk_end),
        cmocka_unit_test(test_bad_chunk_header),
        cmocka_unit_test(test_unknown_fixed_type),
        cmocka_unit_test(test_zero_length_variable),
        cmocka_unit_test(test_variable_record_too_long_or_short),
        cmocka_unit_test(test_time_backwards),
        cmocka_unit_test(test_duplicate_stack_id),
        cmocka_unit_test(test_claimed_but_unused_chunk_v1),
        cmocka_unit_test(test_chunk_without_header),
        cmocka_unit_test(test_snapshot_while_writing),
        cmocka_unit_test(test_random_corruption),
        cmocka_unit_test(test_dump_text),
    };
    return cmocka_run_group_tests_name("capture", tests, NULL, NULL);
}
