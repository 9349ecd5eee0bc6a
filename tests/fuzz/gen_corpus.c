/* gen_corpus.c — writes the seed captures of tests/fuzz/corpus/: synthetic
 * ones from tests/unit/capture_builder.h (every record type, several
 * threads, a reused chunk, compact records at their edges, each kind of
 * damage, and version 1 captures, which are still read) and, for every real
 * capture given, its first records re-packed into 4 KiB chunks so the seed
 * stays small but keeps real module paths, stacks and addresses.
 *   gen_corpus OUTDIR [REAL.vhcap...]      (tests/fuzz/gen-corpus.sh runs it) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/capture/reader.h"
#include "tests/unit/capture_builder.h"

#define SEED_CHUNKS 5u   /* a re-packed real capture: at most this many chunks */

static const char *outdir;

static void save(struct capb *b, const char *name, size_t truncate_to)
{
    char path[4096];
    size_t n = capb__size(b);
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", outdir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(b->buf, 1, truncate_to && truncate_to < n ? truncate_to : n, f) == 0 ||
        fclose(f)) {
        perror(path);
        exit(1);
    }
    capb__destroy(b);
}

static const uint64_t frames[] = { 0x401136, 0x7f0011223344, 0x401000, 0x401200, 0x7f00aabb0000 };
static const uint8_t build_id[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6,
                                      7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

/* The records a program start writes: THREAD, the main module, libc. */
/* The program and libc, loaded at t and t + 1. */
static void modules(struct capb *b, uint32_t ch, uint64_t t)
{
    capb__module(b, ch, t, 0, 0x400000, 0x405000, build_id, 20, "/usr/bin/prog",
                 VH_RF_MAIN_EXE);
    capb__module(b, ch, t + 1, 0x7f0000000000, 0x7f0000000000, 0x7f00001f0000, build_id, 20,
                 "/lib/x86_64-linux-gnu/libc.so.6", 0);
}

/* Thread `tid` at t, then the modules. */
static void prologue(struct capb *b, uint32_t ch, uint64_t t, uint32_t tid)
{
    capb__thread(b, ch, t, tid);
    modules(b, ch, t + 1);
}

/* A capture of the current format begun by thread 1 at 1 and the modules:
 * its chunk. */
static uint32_t start(struct capb *b)
{
    uint32_t ch = capb__start(b, 1, 1);
    modules(b, ch, 2);
    return ch;
}

static void seed_minimal(uint32_t version, const char *name)
{
    struct capb b;
    capb__init_version(&b, version, 0);
    uint32_t ch = capb__chunk(&b);
    prologue(&b, ch, 10, 100);
    capb__stack(&b, ch, 20, 1, frames, 3, 0);
    capb__alloc(&b, ch, 21, 0x10000, 100, 104, 1);
    capb__free(&b, ch, 22, 0x10000);
    capb__alloc(&b, ch, 23, 0x10100, 7, 24, 1);
    capb__end(&b, ch, 30);
    capb__header(&b)->flags = VH_HDR_ENDED;
    save(&b, name, 0);
}

/* Sampled (VHEAP_SAMPLE) and recorded in windows: started paused, on,
 * off, on; a free of a block allocated while paused; a resize in place. */
static void seed_sampled_windows(void)
{
    struct capb b;
    capb__init(&b, 0);
    capb__header(&b)->sample_rate = 524288;
    capb__header(&b)->recording = 1;
    uint32_t ch = capb__chunk(&b);
    prologue(&b, ch, 10, 100);
    capb__stack(&b, ch, 20, 1, frames, 3, 0);
    capb__time_rec(&b, ch, VH_REC_WINDOW, 21, 1, 0);
    capb__alloc(&b, ch, 22, 0x10000, 16, 24, 1);
    capb__alloc(&b, ch, 23, 0x20000, 1 << 20, 1 << 20, 1);
    capb__resize(&b, ch, 24, 0x10000, 4096, 4096, 1);
    capb__time_rec(&b, ch, VH_REC_WINDOW, 25, 0, 0);
    capb__time_rec(&b, ch, VH_REC_WINDOW, 40, 1, 0);
    capb__free(&b, ch, 41, 0x30000);
    capb__free(&b, ch, 42, 0x10000);
    capb__end(&b, ch, 50);
    capb__header(&b)->flags = VH_HDR_ENDED;
    save(&b, "sampled_windows.vhcap", 0);
}

static void seed_every_type(uint32_t version, const char *name)
{
    struct capb b;
    const char *argv[] = { "./prog", "--flag", "x y" };
    capb__init_version(&b, version, 0);
    capb__set_argv(&b, 3, argv);
    capb__header(&b)->flags = VH_HDR_ENDED | VH_HDR_FORKED;
    capb__header(&b)->nested_events = 3;
    capb__header(&b)->dropped_events = 2;
    uint32_t ch = capb__chunk(&b);
    prologue(&b, ch, 10, 111);
    capb__stack(&b, ch, 12, 3, frames, 5, VH_RF_TRUNCATED);
    capb__stack(&b, ch, 12, 4, frames + 1, 2, 0);
    capb__alloc(&b, ch, 13, 0x55d0c0a0, 100, 104, 3);
    capb__resize(&b, ch, 14, 0x55d0c0a0, 200, 216, 3);
    capb__free_ex(&b, ch, 15, 0, VH_FN_REALLOC, 0x55d0c0a0, VH_RF_REALLOC);
    capb__alloc_ex(&b, ch, VH_REC_ALLOC, 15,
                   &(struct capb_alloc){ .addr = 0x55d0d000, .size = 400, .usable = 408,
                                         .stack = 4, .func = VH_FN_REALLOC,
                                         .flags = VH_RF_REALLOC });
    capb__alloc_ex(&b, ch, VH_REC_ALLOC, 16,
                   &(struct capb_alloc){ .size = 1ull << 40, .stack = 3, .func = VH_FN_CALLOC,
                                         .flags = VH_RF_FAILED });
    capb__rss(&b, ch, 17, 1234567);
    capb__heap_create(&b, ch, 18, 1, 0, 0x200000000, 1u << 20, "loom");
    capb__heap_create(&b, ch, 18, 2, 1, 0x200000000, 1u << 16, "road");
    capb__alloc_ex(&b, ch, VH_REC_ALLOC, 19,
                   &(struct capb_alloc){ .addr = 0x200000100, .size = 64, .usable = 64,
                                         .stack = 4, .heap = 2, .func = VH_FN_CUSTOM,
                                         .tag = 1 });
    capb__tag(&b, ch, 19, 1, "jet:add");
    capb__move(&b, ch, 20, 2, 0x200000100, 0x200000200);
    capb__free_ex(&b, ch, 21, 2, VH_FN_CUSTOM, 0x200000200, 0);
    capb__heap_destroy(&b, ch, 22, 2);
    capb__heap_destroy(&b, ch, 22, 1);
    capb__mark(&b, ch, 23, "event 12");
    capb__module_unload(&b, ch, 24, 0x7f0000000000);
    {
        /* A variable-size type no reader knows: skipped. */
        struct vh_rec_value u = { .h = { .type = 0x90, .a = 3 }, .time = 25, .value = 9 };
        capb__raw(&b, ch, &u, sizeof u);
    }
    capb__free(&b, ch, 26, 0x55d0d000);
    capb__thread_exit(&b, ch, 27, 111);
    capb__end(&b, ch, 28);
    save(&b, name, 0);
}

/* Compact records at the edges of their fields: the longest varints, the
 * address jumping across the whole range, heap and tag present. */
static void seed_compact_edges(void)
{
    struct capb b;
    uint32_t ch = capb__start(&b, 1, 5);
    capb__alloc_ex(&b, ch, VH_REC_ALLOC, UINT64_MAX / 2,
                   &(struct capb_alloc){ .addr = UINT64_MAX, .size = UINT64_MAX,
                                         .usable = UINT64_MAX, .stack = UINT32_MAX,
                                         .heap = UINT16_MAX, .func = VH_FN_COUNT - 1,
                                         .tag = UINT16_MAX, .flags = 0xff });
    capb__free_ex(&b, ch, UINT64_MAX / 2, UINT16_MAX, VH_FN_FREE, 0, VH_RF_REALLOC);
    capb__alloc_ex(&b, ch, VH_REC_RESIZE, UINT64_MAX / 2 + 128,
                   &(struct capb_alloc){ .addr = 1ull << 63, .size = 128, .usable = 1ull << 40,
                                         .stack = 128, .heap = 128, .tag = 128 });
    capb__mark(&b, ch, UINT64_MAX - 1, "late");
    capb__free(&b, ch, UINT64_MAX, 0x10);
    save(&b, "compact_edges.vhcap", 0);
}

/* Version 4's forms: malloc and calloc taking turns (ALLOC_ALT), blocks
 * allocated again at addresses just freed (ALLOC_FREED, ALLOC_FREED_ALT),
 * frees of one of the last 64 allocations (FREE_FAR); a second chunk
 * whose used ends inside an ALLOC_FREED. */
static void seed_v4_forms(void)
{
    struct capb b;
    uint32_t ch = capb__start(&b, 100, 7);
    uint64_t t = 101, cut = 0;
    for (unsigned i = 0; i < 40; i++) {
        struct capb_alloc a = { .addr = 0x10000 + 0x40 * i, .size = 24 + 16 * (i % 3),
                                .stack = 1 + i % 4, .func = i % 2 ? VH_FN_CALLOC : VH_FN_MALLOC };
        a.usable = a.size + vh_usual_slack(a.size);
        capb__alloc_ex(&b, ch, VH_REC_ALLOC, t++, &a);
    }
    for (unsigned i = 0; i < 40; i += 3)
        capb__free(&b, ch, t += 7, 0x10000 + 0x40 * i);
    for (unsigned i = 0; i < 40; i += 3) {
        struct capb_alloc a = { .addr = 0x10000 + 0x40 * i, .size = 24, .usable = 24, .stack = 2,
                                .func = i % 2 ? VH_FN_CALLOC : VH_FN_MALLOC };
        capb__alloc_ex(&b, ch, VH_REC_ALLOC, t += 300, &a);
    }
    ch = capb__chunk(&b);
    capb__thread(&b, ch, t, 8);
    capb__alloc(&b, ch, t + 1, 0x20000, 24, 24, 1);
    capb__free(&b, ch, t + 2, 0x20000);
    cut = capb__alloc(&b, ch, t + 3, 0x20000, 24, 24, 1);
    capb__set_used(&b, ch, cut + 2 - capb__chunk_offset(&b, ch));
    save(&b, "v4_forms.vhcap", 0);
}

/* Three threads over four chunks; chunk 1 is reused by a later thread whose
 * first time lies before the previous owner's last one. */
static void seed_threads(void)
{
    struct capb b;
    capb__init(&b, 0);
    uint32_t c0 = capb__chunk(&b), c1 = capb__chunk(&b), c2 = capb__chunk(&b);
    uint32_t c3 = capb__chunk_unused(&b);
    (void)c3;
    prologue(&b, c0, 1, 10);
    capb__stack(&b, c0, 5, 1, frames, 4, 0);
    capb__thread(&b, c1, 6, 11);
    capb__stack(&b, c1, 7, 2, frames + 1, 3, 0);
    capb__thread(&b, c2, 6, 12);
    for (uint64_t i = 0; i < 40; i++) {
        capb__alloc(&b, c0, 10 + 3 * i, 0x1000 + 0x40 * i, 16 + i, 32 + i, 1);
        capb__alloc(&b, c1, 11 + 3 * i, 0x9000 + 0x40 * i, 8, 24, 2);
        capb__free(&b, c2, 12 + 3 * i, 0x1000 + 0x40 * i); /* cross-thread free */
    }
    capb__thread_exit(&b, c1, 200, 11);
    capb__thread(&b, c1, 199, 13);  /* the new owner, a little earlier */
    capb__alloc(&b, c1, 201, 0x20000, 1, 24, 2);
    capb__free(&b, c1, 202, 0x20000);
    capb__end(&b, c0, 300);
    save(&b, "threads.vhcap", 0);
}

/* Each kind of damage the reader reports; the valid records around stay. */
static void seed_damage(void)
{
    struct capb b;
    uint32_t ch;
    uint64_t off;

    /* bad record in the middle: unknown fixed type, then good chunk */
    ch = start(&b);
    capb__alloc(&b, ch, 5, 0x1000, 10, 16, 0);
    off = capb__alloc(&b, ch, 6, 0x2000, 10, 16, 0);
    ((struct vh_rec_hdr *)capb__at(&b, off))->type = 0x3f;
    ch = capb__chunk(&b);
    capb__thread(&b, ch, 7, 2);
    capb__free(&b, ch, 8, 0x1000);
    save(&b, "damage_unknown_type.vhcap", 0);

    /* time goes backwards; duplicate stack id with other frames */
    ch = start(&b);
    capb__stack(&b, ch, 5, 1, frames, 3, 0);
    capb__stack(&b, ch, 6, 1, frames + 1, 3, 0);
    capb__alloc(&b, ch, 9, 0x1000, 10, 16, 1);
    capb__mark(&b, ch, 8, "back");
    save(&b, "damage_time_dup.vhcap", 0);

    /* malformed compact records: a varint of 11 bytes; a struct record
     * without its PAD; a chunk without header below chunks_claimed */
    ch = start(&b);
    capb__alloc(&b, ch, 5, 0x1000, 10, 16, 0);
    capb__bytes(&b, ch, "\x02\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x05", 14);
    ch = capb__chunk(&b);
    capb__thread(&b, ch, 2, 2);
    capb__alloc(&b, ch, 3, 0x2000, 300, 304, 0);
    {
        struct vh_rec_label m = { .h = { .type = VH_REC_MARK, .a = 2 }, .time = 4 };
        capb__bytes(&b, ch, &m, sizeof m);
    }
    capb__chunk_unused(&b);
    ch = capb__chunk(&b);
    capb__thread(&b, ch, 2, 3);
    capb__free(&b, ch, 6, 0x2000);
    save(&b, "damage_compact.vhcap", 0);

    /* used past the chunk end, a bad chunk header, a zero-length record */
    ch = start(&b);
    capb__set_used(&b, ch, 3 * CAPB_DEFAULT_CHUNK);
    ch = capb__chunk(&b);
    capb__thread(&b, ch, 2, 2);
    capb__chunk_header(&b, ch)->magic = 0x12345678;
    ch = capb__chunk(&b);
    capb__thread(&b, ch, 3, 3);
    off = capb__mark(&b, ch, 4, "zero");
    ((struct vh_rec_hdr *)capb__at(&b, off))->a = 0;
    save(&b, "damage_chunks.vhcap", 0);

    /* the file cut in the middle of a record, header claims more chunks */
    ch = start(&b);
    for (uint64_t i = 0; i < 30; i++)
        capb__alloc(&b, ch, 10 + i, 0x1000 + 16 * i, 8, 16, 0);
    capb__header(&b)->chunks_claimed = 9;
    save(&b, "damage_truncated.vhcap", VH_HEADER_SIZE + 1000);
}

/* Just the header page: a program that made no allocation. */
static void seed_header_only(void)
{
    struct capb b;
    capb__init(&b, 0);
    save(&b, "header_only.vhcap", 0);
}

/* A stack at VH_MAX_DEPTH and a long module path. */
static void seed_deep(void)
{
    struct capb b;
    uint64_t deep[VH_MAX_DEPTH];
    char path[600];

    for (unsigned i = 0; i < VH_MAX_DEPTH; i++)
        deep[i] = 0x401000 + 16 * i;
    memset(path, 'a', sizeof path - 1);
    path[0] = '/';
    path[sizeof path - 1] = '\0';
    capb__init(&b, 0);
    capb__header(&b)->max_depth = VH_MAX_DEPTH;
    uint32_t ch = capb__chunk(&b);
    capb__thread(&b, ch, 1, 7);
    capb__module(&b, ch, 2, 0x1000, 0x1000, 0x9000, NULL, 0, path, 0);
    capb__stack(&b, ch, 3, 5, deep, VH_MAX_DEPTH, VH_RF_TRUNCATED);
    capb__alloc(&b, ch, 4, 0x7000, 1u << 30, (1u << 30) + 4096, 5);
    save(&b, "deep.vhcap", 0);
}

/* Stacks as the shim writes them after a run's first: STACK_PACKED, then
 * STACK_DIFFs against the thread's previous stack (a recursion one level
 * deeper, a leaf changed, a base far back), each used by an allocation;
 * with `lost_base`, stack 2's record is left out, so that stack 3's diff
 * names a base no record defined (damage: only that stack is lost). */
static void seed_stack_forms(int lost_base, const char *name)
{
    struct capb b;
    uint64_t f[5][40];
    uint32_t n[5] = { 12, 15, 15, 18, 12 };

    for (unsigned i = 0; i < 40; i++) {            /* three frames repeating */
        f[0][i] = 0x401000 + 0x40 * (i % 3) + (i >= 36 ? 0x800 : 0);
        f[1][i] = i < 3 ? 0x402000 + 8 * i : f[0][i - 3];
        f[2][i] = i == 0 ? 0x403000 : f[1][i];
        f[3][i] = i < 3 ? 0x402100 + 8 * i : f[2][i - 3];
        f[4][i] = f[0][i] + (i == 11 ? 4 : 0);
    }
    uint32_t ch = capb__start(&b, 1, 9);
    uint64_t t = 2;
    capb__stack_packed(&b, ch, t++, 1, f[0], n[0], 0, 0);
    if (!lost_base)
        capb__stack_diff(&b, ch, t++, 2, f[1], n[1], 1, f[0], n[0], NULL, 0);
    capb__stack_diff(&b, ch, t++, 3, f[2], n[2], 2, f[1], n[1], NULL, 0);
    capb__stack_diff(&b, ch, t++, 4, f[3], n[3], 3, f[2], n[2], NULL, 0);
    capb__stack_diff(&b, ch, t++, 5, f[4], n[4], 1, f[0], n[0], NULL, 0);
    for (uint32_t id = 1; id <= 5; id++)
        capb__alloc(&b, ch, t++, 0x10000 + 0x40 * id, 32 * id, 32 * id + 8, id);
    for (uint32_t id = 1; id <= 5; id += 2)
        capb__free(&b, ch, t++, 0x10000 + 0x40 * id);
    save(&b, name, 0);
}

/* A real capture's first records, per source chunk, in 4 KiB chunks. */
static void seed_real(const char *src, const char *name)
{
    struct capture *c;
    struct vh_event ev;
    struct capb b;
    char err[256], out[256];
    uint32_t map[4096];        /* source chunk -> seed chunk + 1 */
    int full = 0;

    if (capture__open(src, &c, err, sizeof err)) {
        fprintf(stderr, "gen_corpus: %s: %s\n", src, err);
        exit(1);
    }
    capb__init(&b, 0);
    memcpy(capb__header(&b), capture__header(c), offsetof(struct vh_capture_header, reserved));
    struct vh_capture_header *h = capb__header(&b);
    h->chunk_size = CAPB_DEFAULT_CHUNK;
    h->chunk_offset = VH_HEADER_SIZE;
    h->chunks_claimed = 0;
    memset(map, 0, sizeof map);
    while (!full && capture__next(c, &ev)) {
        uint32_t sc = ev.chunk < 4096 ? ev.chunk : 4095, ch = map[sc];
        /* Room for the longest encoding, its PAD, and a THREAD record. */
        size_t room = (ev.size > VH_ENC_ALLOC_MAX ? ev.size : VH_ENC_ALLOC_MAX) + 7 + 16;
        if (ch && capb__chunk_header(&b, ch - 1)->used + room > b.chunk_size)
            ch = 0;
        if (!ch) {
            if (b.nchunks >= SEED_CHUNKS) {
                full = 1;
                break;
            }
            ch = map[sc] = capb__chunk(&b) + 1;
            if (ev.rec->type != VH_REC_THREAD)
                capb__thread(&b, ch - 1, ev.time, ev.tid);
        }
        if (ev.rec == &ev.dec.h && ev.rec->type == VH_REC_FREE) {
            const struct vh_rec_free *r = &ev.dec.free;
            capb__free_ex(&b, ch - 1, ev.time, r->h.a, r->func, r->addr, r->h.flags);
        } else if (ev.rec == &ev.dec.h) {
            /* Re-encoded: a compact record's bytes depend on the chunk. */
            const struct vh_rec_alloc *r = &ev.dec.alloc;
            struct capb_alloc a = { .addr = r->addr, .size = r->size,
                                    .usable = r->size + r->slack, .stack = r->h.b,
                                    .heap = r->h.a, .func = r->func, .tag = r->tag,
                                    .flags = r->h.flags };
            capb__alloc_ex(&b, ch - 1, r->h.type, ev.time, &a);
        } else {
            capb__raw(&b, ch - 1, ev.rec, ev.size);
        }
    }
    capture__close(c);
    snprintf(out, sizeof out, "%s.vhcap", name);
    save(&b, out, 0);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gen_corpus OUTDIR [NAME=REAL.vhcap...]\n");
        return 2;
    }
    outdir = argv[1];
    seed_minimal(VH_CAPTURE_VERSION, "minimal.vhcap");
    seed_every_type(VH_CAPTURE_VERSION, "every_type.vhcap");
    seed_minimal(VH_CAPTURE_VERSION_V1, "v1_minimal.vhcap");
    seed_every_type(VH_CAPTURE_VERSION_V1, "v1_every_type.vhcap");
    seed_compact_edges();
    seed_v4_forms();
    seed_threads();
    seed_damage();
    seed_header_only();
    seed_deep();
    seed_sampled_windows();
    seed_stack_forms(0, "stack_forms.vhcap");
    seed_stack_forms(1, "damage_stack_base.vhcap");
    for (int i = 2; i < argc; i++) {
        char name[128];
        const char *eq = strchr(argv[i], '=');
        if (!eq || (size_t)(eq - argv[i]) >= sizeof name) {
            fprintf(stderr, "gen_corpus: want NAME=CAPTURE, got %s\n", argv[i]);
            return 2;
        }
        memcpy(name, argv[i], (size_t)(eq - argv[i]));
        name[eq - argv[i]] = '\0';
        seed_real(eq + 1, name);
    }
    return 0;
}
