/* capture_builder.h — builds synthetic vheap captures in memory, for unit
 * tests, golden tests and fuzz seeds: a header page filled like the shim
 * fills it, chunks claimed one by one, one appender per record type, and
 * raw access for writing damage on purpose. Header-only. Misuse or running
 * out of memory aborts: in a test that is the right answer.
 *
 *   struct capb b;
 *   capb__init(&b, 0);                     // 4 KiB chunks
 *   uint32_t ch = capb__chunk(&b);
 *   capb__thread(&b, ch, 10, 1234);        // or all three: capb__start
 *   capb__stack(&b, ch, 11, 1, frames, 3, 0);
 *   capb__alloc(&b, ch, 12, 0x1000, 100, 112, 1);
 *   capb__write(&b, path);
 *   capb__destroy(&b);
 *
 * Appenders return the record's file offset; b.buf + offset is the record
 * until the next capb__chunk (which may move the buffer). The image is of
 * the current format version (2: ALLOC / RESIZE / FREE compact, struct
 * records 8-aligned after PAD bytes) unless made with capb__init_v1. Each
 * chunk keeps the writer's cursor, as the shim does. */
#ifndef VHEAP_TESTS_CAPTURE_BUILDER_H
#define VHEAP_TESTS_CAPTURE_BUILDER_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/capture_format.h"
#include "common/leb128.h"
#include "common/stack_diff.h"

#define CAPB_DEFAULT_CHUNK 4096u

struct capb {
    uint8_t *buf;                  /* the file image: header page + chunks  */
    size_t cap;                    /* bytes allocated at buf                */
    uint32_t chunk_size;
    uint32_t nchunks;              /* chunks in the image                   */
    uint32_t version;              /* VH_CAPTURE_VERSION or _V1             */
    struct vh_cursor *cur;         /* per chunk: time and address bases     */
};

/* Everything an ALLOC or RESIZE record holds; zero fields are defaults
 * (heap 0 = system, func 0 becomes malloc, no tag, no flags). */
struct capb_alloc {
    uint64_t addr, size, usable;   /* usable < size is stored as slack 0    */
    uint32_t stack;
    uint16_t heap, func, tag;
    uint8_t flags;                 /* enum vh_rec_flags                     */
};

static inline void capb__fail(const char *what)
{
    fprintf(stderr, "capture_builder: %s\n", what);
    abort();
}

static inline struct vh_capture_header *capb__header(struct capb *b)
{
    return (struct vh_capture_header *)(void *)b->buf;
}

static inline uint64_t capb__chunk_offset(const struct capb *b, uint32_t chunk)
{
    return VH_HEADER_SIZE + (uint64_t)chunk * b->chunk_size;
}

static inline struct vh_chunk_header *capb__chunk_header(struct capb *b, uint32_t chunk)
{
    if (chunk >= b->nchunks)
        capb__fail("no such chunk");
    return (struct vh_chunk_header *)(void *)(b->buf + capb__chunk_offset(b, chunk));
}

/* Bytes of the file image: the header page and every chunk, whole. */
static inline size_t capb__size(const struct capb *b)
{
    return (size_t)capb__chunk_offset(b, b->nchunks);
}

/* A header as the shim writes it at start: pid 4242, ppid 1, exe
 * /usr/bin/prog, argv "prog", libunwind at depth 64, no chunks yet. */
static inline void capb__init(struct capb *b, uint32_t chunk_size)
{
    struct vh_capture_header *h;

    memset(b, 0, sizeof *b);
    b->version = VH_CAPTURE_VERSION;
    b->chunk_size = chunk_size ? chunk_size : CAPB_DEFAULT_CHUNK;
    b->cap = VH_HEADER_SIZE + 4 * (size_t)b->chunk_size;
    b->buf = calloc(1, b->cap);
    if (!b->buf)
        capb__fail("out of memory");
    h = capb__header(b);
    memcpy(h->magic, VH_CAPTURE_MAGIC, sizeof h->magic);
    h->version = VH_CAPTURE_VERSION;
    h->header_size = VH_HEADER_SIZE;
    h->chunk_size = b->chunk_size;
    h->chunk_header_size = sizeof(struct vh_chunk_header);
    h->chunk_offset = VH_HEADER_SIZE;
    h->pid = 4242;
    h->ppid = 1;
    h->start_realtime_ns = 1790000000000000000ull;
    h->start_monotonic_ns = 1000000000ull;
    h->page_size = 4096;
    h->phys_pages = 1u << 20;
    h->max_depth = 64;
    h->unwind = VH_UNWIND_LIBUNWIND;
    strcpy(h->exe, "/usr/bin/prog");
    memcpy(h->argv, "prog", 5);
    h->argv_len = 5;
}

/* The same, writing format version 1 (every record a struct, no PAD). */
static inline void capb__init_v1(struct capb *b, uint32_t chunk_size)
{
    capb__init(b, chunk_size);
    b->version = VH_CAPTURE_VERSION_V1;
    capb__header(b)->version = VH_CAPTURE_VERSION_V1;
}

/* capb__init or capb__init_v1, by the format version asked for. */
static inline void capb__init_version(struct capb *b, uint32_t version, uint32_t chunk_size)
{
    if (version == VH_CAPTURE_VERSION_V1)
        capb__init_v1(b, chunk_size);
    else
        capb__init(b, chunk_size);
}

static inline void capb__destroy(struct capb *b)
{
    free(b->buf);
    free(b->cur);
    memset(b, 0, sizeof *b);
}

/* Replaces argv (each string NUL-terminated, as /proc/self/cmdline). */
static inline void capb__set_argv(struct capb *b, int argc, const char *const *argv)
{
    struct vh_capture_header *h = capb__header(b);
    size_t n = 0;

    memset(h->argv, 0, sizeof h->argv);
    for (int i = 0; i < argc; i++) {
        size_t k = strlen(argv[i]) + 1;
        if (n + k > sizeof h->argv)
            capb__fail("argv too long");
        memcpy(h->argv + n, argv[i], k);
        n += k;
    }
    h->argv_len = (uint32_t)n;
}

/* Claims the next chunk like a writer thread: index set, magic set, used =
 * the chunk header; chunks_claimed follows. Returns its index. */
static inline uint32_t capb__chunk(struct capb *b)
{
    struct vh_chunk_header *c;
    size_t need = capb__chunk_offset(b, b->nchunks + 1);

    if (need > b->cap) {
        size_t cap = b->cap * 2 > need ? b->cap * 2 : need;
        uint8_t *n = realloc(b->buf, cap);
        if (!n)
            capb__fail("out of memory");
        memset(n + b->cap, 0, cap - b->cap);
        b->buf = n;
        b->cap = cap;
    }
    if (b->nchunks % 16 == 0) {
        struct vh_cursor *n = realloc(b->cur, (b->nchunks + 16) * sizeof *n);
        if (!n)
            capb__fail("out of memory");
        b->cur = n;
    }
    b->cur[b->nchunks] = (struct vh_cursor){ 0 };
    b->nchunks++;
    capb__header(b)->chunks_claimed = b->nchunks;
    c = capb__chunk_header(b, b->nchunks - 1);
    c->magic = VH_CHUNK_MAGIC;
    c->index = b->nchunks - 1;
    c->used = sizeof *c;
    return b->nchunks - 1;
}

/* A chunk that was claimed but never written: all zero, used 0. A version
 * 1 writer could leave one; version 2 writes the header first, so there
 * the reader reports it as damage. */
static inline uint32_t capb__chunk_unused(struct capb *b)
{
    uint32_t i = capb__chunk(b);
    memset(capb__chunk_header(b, i), 0, sizeof(struct vh_chunk_header));
    return i;
}

static inline void capb__set_used(struct capb *b, uint32_t chunk, uint64_t used)
{
    capb__chunk_header(b, chunk)->used = used;
}

/* Appends `size` bytes at the chunk's used mark exactly as given (zeroed
 * when data is NULL), no alignment, and publishes them: for compact
 * records and bytes made on purpose. Returns their file offset. The
 * cursor is not moved. */
static inline uint64_t capb__bytes(struct capb *b, uint32_t chunk, const void *data, size_t size)
{
    struct vh_chunk_header *c = capb__chunk_header(b, chunk);
    uint64_t off = capb__chunk_offset(b, chunk) + c->used;

    if (c->used + size > b->chunk_size)
        capb__fail("chunk full");
    if (data)
        memcpy(b->buf + off, data, size);
    else
        memset(b->buf + off, 0, size);
    c->used += size;
    return off;
}

/* Moves the chunk's cursor past the struct record at `off`, as a reader
 * does: its time becomes the base; a THREAD record also resets the
 * address base (and what else the cursor keeps). */
static inline void capb__track(struct capb *b, uint32_t chunk, uint64_t off, size_t size)
{
    const uint8_t *p = b->buf + off;
    uint64_t time;

    if (size < 16 || vh_rec_is_compact(p[0]) || p[0] == VH_REC_PAD)
        return;
    memcpy(&time, p + 8, sizeof time);
    vh_cursor_struct(&b->cur[chunk], p[0], time);
}

/* Appends a struct record (or `size` zero bytes when rec is NULL) at the
 * chunk's next 8-aligned offset, PAD bytes before it in version 2, and
 * publishes it; the cursor follows its time. Returns the record's file
 * offset. */
static inline uint64_t capb__raw(struct capb *b, uint32_t chunk, const void *rec, size_t size)
{
    static const uint8_t pads[8] = { VH_REC_PAD, VH_REC_PAD, VH_REC_PAD, VH_REC_PAD,
                                     VH_REC_PAD, VH_REC_PAD, VH_REC_PAD, VH_REC_PAD };
    uint64_t used = capb__chunk_header(b, chunk)->used, off;

    if (b->version != VH_CAPTURE_VERSION_V1 && (used & 7))
        capb__bytes(b, chunk, pads, (size_t)(-used & 7));
    off = capb__bytes(b, chunk, rec, size);
    if (rec)
        capb__track(b, chunk, off, size);
    return off;
}

static inline void *capb__at(struct capb *b, uint64_t off)
{
    return b->buf + off;
}

static inline uint64_t capb__time_rec(struct capb *b, uint32_t chunk, uint8_t type,
                                      uint64_t time, uint16_t a, uint32_t bv)
{
    struct vh_rec_time r = { .h = { .type = type, .a = a, .b = bv }, .time = time };
    return capb__raw(b, chunk, &r, sizeof r);
}

static inline uint64_t capb__thread(struct capb *b, uint32_t chunk, uint64_t time, uint32_t tid)
{
    return capb__time_rec(b, chunk, VH_REC_THREAD, time, 0, tid);
}

/* How most captures start: 4 KiB chunks, one chunk claimed, and in it
 * the THREAD record of thread `tid` at `time`. Returns the chunk. */
static inline uint32_t capb__start(struct capb *b, uint64_t time, uint32_t tid)
{
    capb__init(b, 0);
    uint32_t ch = capb__chunk(b);
    capb__thread(b, ch, time, tid);
    return ch;
}

static inline uint64_t capb__thread_exit(struct capb *b, uint32_t chunk, uint64_t time,
                                         uint32_t tid)
{
    return capb__time_rec(b, chunk, VH_REC_THREAD_EXIT, time, 0, tid);
}

static inline uint64_t capb__end(struct capb *b, uint32_t chunk, uint64_t time)
{
    return capb__time_rec(b, chunk, VH_REC_END, time, 0, 0);
}

static inline uint64_t capb__heap_destroy(struct capb *b, uint32_t chunk, uint64_t time,
                                          uint16_t heap)
{
    return capb__time_rec(b, chunk, VH_REC_HEAP_DESTROY, time, heap, 0);
}

static inline uint64_t capb__value_rec(struct capb *b, uint32_t chunk, uint8_t type,
                                       uint64_t time, uint64_t value)
{
    struct vh_rec_value r = { .h = { .type = type }, .time = time, .value = value };
    return capb__raw(b, chunk, &r, sizeof r);
}

static inline uint64_t capb__rss(struct capb *b, uint32_t chunk, uint64_t time, uint64_t bytes)
{
    return capb__value_rec(b, chunk, VH_REC_RSS, time, bytes);
}

static inline uint64_t capb__module_unload(struct capb *b, uint32_t chunk, uint64_t time,
                                           uint64_t bias)
{
    return capb__value_rec(b, chunk, VH_REC_MODULE_UNLOAD, time, bias);
}

/* ALLOC (type VH_REC_ALLOC) or RESIZE (VH_REC_RESIZE) with every field.
 * Version 2 encodes it as the shim does: a time before the chunk's last
 * one is clamped to it. */
static inline uint64_t capb__alloc_ex(struct capb *b, uint32_t chunk, uint8_t type,
                                      uint64_t time, const struct capb_alloc *a)
{
    struct vh_rec_alloc r = {
        .h = { .type = type, .flags = a->flags, .a = a->heap, .b = a->stack },
        .time = time,
        .addr = a->addr,
        .size = a->size,
        .func = a->func ? a->func : VH_FN_MALLOC,
        .tag = a->tag,
    };
    uint64_t slack = a->usable > a->size ? a->usable - a->size : 0;

    if (slack > UINT32_MAX) {
        slack = UINT32_MAX;
        r.h.flags |= VH_RF_SLACK_CLAMPED;
    }
    r.slack = (uint32_t)slack;
    if (b->version != VH_CAPTURE_VERSION_V1) {
        uint8_t enc[VH_ENC_ALLOC_MAX];
        uint8_t *end;
        capb__chunk_header(b, chunk); /* checks the index */
        end = vh_enc_alloc(enc, &b->cur[chunk], type, r.h.flags, r.h.a, r.func, time, r.addr,
                           r.size, r.slack, r.h.b, r.tag,
                           vh_freed_find(&b->cur[chunk], r.addr));
        return capb__bytes(b, chunk, enc, (size_t)(end - enc));
    }
    return capb__raw(b, chunk, &r, sizeof r);
}

/* A successful malloc on the system heap. */
static inline uint64_t capb__alloc(struct capb *b, uint32_t chunk, uint64_t time, uint64_t addr,
                                   uint64_t size, uint64_t usable, uint32_t stack)
{
    struct capb_alloc a = { .addr = addr, .size = size, .usable = usable, .stack = stack };
    return capb__alloc_ex(b, chunk, VH_REC_ALLOC, time, &a);
}

/* What vheap_alloc records: an allocation in custom heap `heap` (tag 0:
 * none), with 8 bytes of slack. */
static inline uint64_t capb__heap_alloc(struct capb *b, uint32_t chunk, uint64_t time,
                                        uint16_t heap, uint64_t addr, uint64_t size,
                                        uint32_t stack, uint16_t tag)
{
    struct capb_alloc a = { .addr = addr, .size = size, .usable = size + 8, .stack = stack,
                            .heap = heap, .func = VH_FN_CUSTOM, .tag = tag };
    return capb__alloc_ex(b, chunk, VH_REC_ALLOC, time, &a);
}

/* An in-place realloc on the system heap. */
static inline uint64_t capb__resize(struct capb *b, uint32_t chunk, uint64_t time,
                                    uint64_t addr, uint64_t size, uint64_t usable,
                                    uint32_t stack)
{
    struct capb_alloc a = { .addr = addr, .size = size, .usable = usable, .stack = stack,
                            .func = VH_FN_REALLOC };
    return capb__alloc_ex(b, chunk, VH_REC_RESIZE, time, &a);
}

static inline uint64_t capb__free_ex(struct capb *b, uint32_t chunk, uint64_t time,
                                     uint16_t heap, uint64_t func, uint64_t addr, uint8_t flags)
{
    struct vh_rec_free r = { .h = { .type = VH_REC_FREE, .flags = flags, .a = heap },
                             .time = time, .addr = addr, .func = func };
    if (b->version != VH_CAPTURE_VERSION_V1) {
        uint8_t enc[VH_ENC_FREE_MAX];
        uint8_t *end;
        capb__chunk_header(b, chunk); /* checks the index */
        end = vh_enc_free(enc, &b->cur[chunk], flags, heap, (unsigned)func, time, addr,
                          vh_recent_find(&b->cur[chunk], addr));
        return capb__bytes(b, chunk, enc, (size_t)(end - enc));
    }
    return capb__raw(b, chunk, &r, sizeof r);
}

/* A plain free() on the system heap. */
static inline uint64_t capb__free(struct capb *b, uint32_t chunk, uint64_t time, uint64_t addr)
{
    return capb__free_ex(b, chunk, time, VH_HEAP_SYSTEM, VH_FN_FREE, addr, 0);
}

static inline uint64_t capb__move(struct capb *b, uint32_t chunk, uint64_t time, uint16_t heap,
                                  uint64_t from, uint64_t to)
{
    struct vh_rec_move r = { .h = { .type = VH_REC_MOVE, .a = heap }, .time = time,
                             .from = from, .to = to };
    return capb__raw(b, chunk, &r, sizeof r);
}

/* A RANGE record: op VH_RANGE_MOVE (by to - from) or VH_RANGE_FREE. */
static inline uint64_t capb__range(struct capb *b, uint32_t chunk, uint64_t time, uint16_t heap,
                                   uint8_t op, uint64_t from, uint64_t to, uint64_t len)
{
    struct vh_rec_range r = { .h = { .type = VH_REC_RANGE, .flags = op, .a = sizeof r / 8,
                                     .b = heap },
                              .time = time, .from = from, .to = to, .len = len };
    return capb__raw(b, chunk, &r, sizeof r);
}

/* A REGION record: kind VH_REGION_*, size 0 ends region `id`. */
static inline uint64_t capb__region(struct capb *b, uint32_t chunk, uint64_t time, uint16_t heap,
                                    uint32_t id, uint8_t kind, uint64_t base, uint64_t size)
{
    struct vh_rec_region r = { .h = { .type = VH_REC_REGION, .flags = kind, .a = sizeof r / 8,
                                      .b = heap },
                               .time = time, .base = base, .size = size, .id = id };
    return capb__raw(b, chunk, &r, sizeof r);
}

static inline uint64_t capb__stack(struct capb *b, uint32_t chunk, uint64_t time, uint32_t id,
                                   const uint64_t *frames, uint32_t depth, uint8_t flags)
{
    size_t size = sizeof(struct vh_rec_stack) + (size_t)depth * 8;
    struct vh_rec_stack r = { .h = { .type = VH_REC_STACK, .flags = flags,
                                     .a = (uint16_t)(size / 8), .b = id },
                              .time = time };
    uint64_t off;

    if (size / 8 > UINT16_MAX)
        capb__fail("stack too deep for one record");
    off = capb__raw(b, chunk, NULL, size);
    memcpy(b->buf + off, &r, sizeof r);
    if (depth)
        memcpy(b->buf + off + sizeof r, frames, (size_t)depth * 8);
    capb__track(b, chunk, off, size);
    return off;
}

/* A STACK_PACKED record (the shim's form): count and zigzag deltas as
 * LEB128, padded to 8 bytes. `extra` bytes of anything after the varints
 * (0xff: a malformed record whose last varint runs on). */
static inline uint64_t capb__stack_packed(struct capb *b, uint32_t chunk, uint64_t time,
                                          uint32_t id, const uint64_t *frames, uint32_t depth,
                                          uint8_t flags, int cut)
{
    uint8_t tmp[16 + 10 * 301];
    uint8_t *p = vh_uleb_put(tmp + 16, depth);
    for (uint32_t i = 0; i < depth; i++)
        p = vh_uleb_put(p, vh_zigzag(frames[i] - (i ? frames[i - 1] : 0)));
    if (cut)
        p[-1] |= 0x80;             /* the last varint goes on past the end */
    size_t size = ((size_t)(p - tmp) + 7) & ~(size_t)7;
    struct vh_rec_stack r = { .h = { .type = VH_REC_STACK_PACKED, .flags = flags,
                                     .a = (uint16_t)(size / 8), .b = id },
                              .time = time };
    if (depth > 300)
        capb__fail("capb__stack_packed: at most 300 frames");
    memcpy(tmp, &r, sizeof r);
    memset(p, cut ? 0xff : 0, size - (size_t)(p - tmp));
    uint64_t off = capb__raw(b, chunk, NULL, size);
    memcpy(b->buf + off, tmp, size);
    capb__track(b, chunk, off, size);
    return off;
}

/* A STACK_DIFF record (the shim's form for a stack after the first of a
 * run): `frames` as the shim encodes them against base_id's frames `base`,
 * or, with `body` set, those `blen` bytes instead; padded to 8 bytes. */
static inline uint64_t capb__stack_diff(struct capb *b, uint32_t chunk, uint64_t time,
                                        uint32_t id, const uint64_t *frames, uint32_t depth,
                                        uint32_t base_id, const uint64_t *base, uint32_t bn,
                                        const uint8_t *body, size_t blen)
{
    static struct vh_diff_work w;
    uint8_t tmp[sizeof(struct vh_rec_stack) + VH_DIFF_MAX + 8] = { 0 };
    uint8_t *p = tmp + sizeof(struct vh_rec_stack);
    if (depth > VH_MAX_DEPTH || bn > VH_MAX_DEPTH || blen > VH_DIFF_MAX)
        capb__fail("capb__stack_diff: at most VH_MAX_DEPTH frames");
    if (body) {
        memcpy(p, body, blen);
        p += blen;
    } else {
        p = vh_diff_encode(&w, p, id, frames, depth, base_id, base, bn);
    }
    size_t size = ((size_t)(p - tmp) + 7) & ~(size_t)7;
    struct vh_rec_stack r = { .h = { .type = VH_REC_STACK_DIFF, .a = (uint16_t)(size / 8),
                                     .b = id },
                              .time = time };
    memcpy(tmp, &r, sizeof r);
    uint64_t off = capb__raw(b, chunk, NULL, size);
    memcpy(b->buf + off, tmp, size);
    capb__track(b, chunk, off, size);
    return off;
}

/* A record whose fixed part `head` (hsize bytes, type set) is followed by
 * the NUL-terminated `text`, padded to 8 bytes; sets the length word. */
static inline uint64_t capb__text_rec(struct capb *b, uint32_t chunk, void *head, size_t hsize,
                                      const char *text)
{
    size_t tlen = strlen(text) + 1;
    size_t size = (hsize + tlen + 7) & ~(size_t)7;
    uint64_t off;

    if (size / 8 > UINT16_MAX)
        capb__fail("text too long for one record");
    ((struct vh_rec_hdr *)head)->a = (uint16_t)(size / 8);
    off = capb__raw(b, chunk, NULL, size);
    memcpy(b->buf + off, head, hsize);
    memcpy(b->buf + off + hsize, text, tlen);
    capb__track(b, chunk, off, size);
    return off;
}

static inline uint64_t capb__module(struct capb *b, uint32_t chunk, uint64_t time, uint64_t bias,
                                    uint64_t lo, uint64_t hi, const uint8_t *build_id,
                                    uint32_t build_id_len, const char *path, uint8_t flags)
{
    struct vh_rec_module r = { .h = { .type = VH_REC_MODULE, .flags = flags,
                                      .b = build_id_len },
                               .time = time, .bias = bias, .lo = lo, .hi = hi };
    if (build_id_len > sizeof r.build_id)
        capb__fail("build-id longer than 32 bytes");
    if (build_id_len)
        memcpy(r.build_id, build_id, build_id_len);
    return capb__text_rec(b, chunk, &r, sizeof r, path);
}

static inline uint64_t capb__heap_create(struct capb *b, uint32_t chunk, uint64_t time,
                                         uint32_t id, uint32_t parent, uint64_t base,
                                         uint64_t size, const char *name)
{
    struct vh_rec_heap r = { .h = { .type = VH_REC_HEAP_CREATE, .b = id }, .time = time,
                             .parent = parent, .base = base, .size = size };
    return capb__text_rec(b, chunk, &r, sizeof r, name);
}

static inline uint64_t capb__mark(struct capb *b, uint32_t chunk, uint64_t time,
                                  const char *label)
{
    struct vh_rec_label r = { .h = { .type = VH_REC_MARK }, .time = time };
    return capb__text_rec(b, chunk, &r, sizeof r, label);
}

static inline uint64_t capb__tag(struct capb *b, uint32_t chunk, uint64_t time, uint32_t id,
                                 const char *label)
{
    struct vh_rec_label r = { .h = { .type = VH_REC_TAG, .b = id }, .time = time };
    return capb__text_rec(b, chunk, &r, sizeof r, label);
}

/* Writes the whole image to `path` (created or truncated, mode 0600).
 * Returns 0 or -errno. */
static inline int capb__write(const struct capb *b, const char *path)
{
    size_t n = capb__size(b), done = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int rc = 0;

    if (fd < 0)
        return -errno;
    while (done < n) {
        ssize_t w = write(fd, b->buf + done, n - done);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            break;
        }
        done += (size_t)w;
    }
    if (close(fd) && !rc)
        rc = -errno;
    return rc;
}

/* Writes the image to a new temporary file; its name goes to path (at
 * least 64 bytes). The caller unlinks it. Returns 0 or -errno. */
static inline int capb__write_tmp(const struct capb *b, char *path, size_t len)
{
    const char *dir = getenv("TMPDIR");
    int fd;

    snprintf(path, len, "%s/vheap-capb.XXXXXX", dir && *dir ? dir : "/tmp");
    fd = mkstemp(path);
    if (fd < 0)
        return -errno;
    close(fd);
    return capb__write(b, path);
}

#endif
