/* fuzz_capture.c — libFuzzer target: the capture reader (analyze/capture/reader.c)
 * and `vheap-analyze dump` (analyze/cmd/dump.c) on any file contents.
 * Besides "no crash", it checks what the reader promises: every record it
 * yields lies inside the file (a struct record in place and 8-aligned, a
 * compact one decoded into the event), times never go back, stack frames
 * lie inside the file, a rewind yields the same stream, and a file that
 * does not change shows no new damage while it is read. */
#include "analyze/capture/reader.h"
#include "analyze/cmd/cli.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What a rewind must reproduce: where, when, and (compact records) the
 * decoded address, which depends on every cursor move before it. */
static uint64_t ev_key(const struct vh_event *ev)
{
    uint64_t k = ev->offset ^ ev->time;
    if (ev->rec == &ev->dec.h)
        k ^= ev->dec.alloc.addr * 0x9e3779b97f4a7c15ull;
    return k;
}

static void check_stream(struct capture *c, const char *path)
{
    const struct vh_capture_header *h = capture__header(c);
    const uint8_t *base = (const void *)h;
    uint64_t fsize = capture__file_size(c), last = 0, n = 0, n2 = 0, sum = 0, sum2 = 0;
    uint64_t consumed, total;
    unsigned damage_open = capture__damage(c, NULL);
    struct vh_event ev;
    size_t argv_len;

    capture__argv(c, &argv_len);
    FZ_CHECK(argv_len <= VH_ARGV_MAX, "argv length %zu", argv_len);
    while (capture__next(c, &ev)) {
        size_t tlen = 0;
        const char *text;

        FZ_CHECK(ev.offset >= h->chunk_offset && ev.offset < fsize, "offset 0x%llx",
                 (unsigned long long)ev.offset);
        /* A STACK_PACKED or STACK_DIFF record is yielded as the STACK it
         * stands for, in the reader's scratch: its size is the unpacked one */
        uint8_t raw_type = base[ev.offset];
        int unpacked = raw_type == VH_REC_STACK_PACKED || raw_type == VH_REC_STACK_DIFF;
        FZ_CHECK(unpacked || ev.size <= fsize - ev.offset, "record at 0x%llx has size %zu",
                 (unsigned long long)ev.offset, ev.size);
        if (unpacked) {
            FZ_CHECK(ev.rec->type == VH_REC_STACK && ev.size >= 16 && ev.size % 8 == 0 &&
                         ev.size == (size_t)ev.rec->a * 8 && ev.offset % 8 == 0,
                     "stack at 0x%llx (type 0x%02x) yielded as type 0x%02x, %zu bytes",
                     (unsigned long long)ev.offset, raw_type, ev.rec->type, ev.size);
        } else if (h->version != VH_CAPTURE_VERSION_V1 && vh_rec_is_compact(ev.rec->type)) {
            /* version 3's short forms (FREE_TICK, FREE_RECENT) and version
             * 4's FREE_FAR take 2 bytes: the type and one varint; version
             * 4's ALLOC_FREED forms 4 (type, index, size, stack) */
            uint8_t raw = base[ev.offset];
            size_t least = (raw >= VH_REC_ALLOC_NEXT && raw <= VH_REC_FREE_TICK) ||
                                   raw == VH_REC_FREE_FAR
                               ? 2
                               : 4;
            FZ_CHECK(ev.size >= least && ev.size <= VH_ENC_ALLOC_MAX, "compact record at 0x%llx "
                     "(type 0x%02x) has size %zu", (unsigned long long)ev.offset, raw, ev.size);
            FZ_CHECK(ev.rec == &ev.dec.h && ev.dec.alloc.time == ev.time, "decoded record");
        } else {
            FZ_CHECK(ev.size >= 16 && ev.size % 8 == 0 && ev.offset % 8 == 0,
                     "record at 0x%llx has size %zu", (unsigned long long)ev.offset, ev.size);
            FZ_CHECK((const uint8_t *)ev.rec == base + ev.offset, "record pointer");
        }
        FZ_CHECK(ev.time >= last, "time %llu after %llu", (unsigned long long)ev.time,
                 (unsigned long long)last);
        FZ_CHECK(ev.chunk < capture__chunks(c), "chunk %u", ev.chunk);
        last = ev.time;
        text = vh_event_text(&ev, &tlen);
        if (text)
            FZ_CHECK((const uint8_t *)text + tlen <= base + ev.offset + ev.size, "text");
        if (ev.rec->type == VH_REC_ALLOC || ev.rec->type == VH_REC_RESIZE ||
            ev.rec->type == VH_REC_STACK) {
            uint32_t depth = 0;
            uint8_t flags;
            const uint64_t *fr = capture__stack(c, ev.rec->b, &depth, &flags);
            if (fr) {
                /* a plain STACK's frames are in the file, a packed or diff
                 * one's in the reader's pool: read each (ASan checks) */
                const uint8_t *fb = (const uint8_t *)fr;
                volatile uint64_t sink = 0;
                for (uint32_t i = 0; i < depth; i++)
                    sink += fr[i];
                (void)sink;
                if (fb >= base && fb < base + fsize)
                    FZ_CHECK(fb >= base + h->chunk_offset &&
                                 (const uint8_t *)(fr + depth) <= base + fsize,
                             "stack %u frames outside the file", ev.rec->b);
                FZ_CHECK(ev.rec->b <= capture__max_stack_id(c), "stack id above max");
            }
        }
        n++;
        sum += ev_key(&ev);
    }
    consumed = capture__progress(c, &total);
    FZ_CHECK(consumed == total, "consumed %llu of %llu", (unsigned long long)consumed,
             (unsigned long long)total);
    FZ_CHECK(capture__damage(c, NULL) == damage_open,
             "damage %u after reading, %u at open (the file did not change)",
             capture__damage(c, NULL), damage_open);

    capture__rewind(c);
    while (capture__next(c, &ev)) {
        n2++;
        sum2 += ev_key(&ev);
    }
    FZ_CHECK(n == n2 && sum == sum2, "rewind: %llu records, then %llu (%s)",
             (unsigned long long)n, (unsigned long long)n2, path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct vh_command *dump;
    const char *path = fz_file(data, size);
    struct capture *c = NULL;
    char err[256];
    int rc;

    if (!dump)
        dump = vh_command_find("dump");
    FZ_CHECK(dump, "no dump command linked");

    unsigned damaged = 0;

    rc = capture__open(path, &c, err, sizeof err);
    if (rc) {
        FZ_CHECK(rc < 0 && !c, "open returned %d", rc);
        fz_one_line("capture__open", err);
    } else {
        const char *first = NULL;
        if (capture__damage(c, &first))
            fz_one_line("damage", first);
        check_stream(c, path);
        damaged = capture__damage(c, NULL);
        capture__close(c);
    }

    /* The whole command, as a user runs it: 0 for a clean capture, 1 for a
     * refused or damaged one, never anything else. */
    {
        char *argv[] = { (char *)"dump", (char *)path, NULL };
        char *argv2[] = { (char *)"dump", (char *)"--no-header", (char *)path, NULL };
        int want = rc || damaged ? VH_EXIT_DATA : VH_EXIT_OK;
        int x = dump->run(2, argv);
        FZ_CHECK(x == want, "dump exited %d, want %d", x, want);
        x = dump->run(3, argv2);
        FZ_CHECK(x == want, "dump --no-header exited %d, want %d", x, want);
    }
    return 0;
}
