/* capstat.c — counts what a vheap capture holds, for bench/run.sh: events
 * by kind, distinct stacks, bytes used versus file size, and the loss
 * counters of the header. A plain scan of the chunks in file order (no merge,
 * no symbols), so it costs about as much as reading the file once.
 *
 * usage: capstat [--types] CAPTURE...
 * prints per capture: allocs frees resizes moves stacks dropped nested
 *                     stack_full used_bytes file_bytes damaged_chunks
 * and with --types a line a record type after it: type=0xTT records bytes
 * (PAD bytes as type 0x7f), what fills a capture. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/capture_format.h"

struct counts {
    uint64_t allocs, frees, resizes, moves, stacks, used, damaged;
    uint64_t type_n[256], type_bytes[256]; /* --types: records and bytes a type */
};

/* Counts the records of one chunk; returns 0 if it ended cleanly. Version
 * 2's compact records are decoded (their length is only known that way). */
static int scan_chunk(const uint8_t *chunk, uint64_t chunk_size, uint32_t header_size,
                      int v1, struct counts *n)
{
    const struct vh_chunk_header *ch = (const void *)chunk;
    uint64_t used = __atomic_load_n(&ch->used, __ATOMIC_ACQUIRE);
    struct vh_cursor cur = { 0 };
    union vh_rec_compact dec;
    if (used == 0)
        return v1 ? 0 : -1;        /* v1: claimed, never written; v2: lost */
    if (ch->magic != VH_CHUNK_MAGIC || used < header_size || used > chunk_size)
        return -1;
    n->used += used;
    for (uint64_t off = header_size; off < used;) {
        const struct vh_rec_hdr *h = (const void *)(chunk + off);
        size_t size;
        uint8_t type = h->type;
        if (!v1 && h->type == VH_REC_PAD) {
            n->type_n[VH_REC_PAD]++;
            n->type_bytes[VH_REC_PAD]++;
            off++;
            continue;
        }
        if (!v1 && vh_rec_is_compact(h->type)) {
            long len = vh_dec_compact(chunk + off, chunk + used, &cur, &dec);
            if (len <= 0)
                return -1;
            size = (size_t)len;
            type = dec.h.type;
        } else {
            if (used - off < sizeof *h)
                return -1;
            size = vh_record_size(h);
            if (size < 16 || size > used - off)
                return -1;
            /* moves the compact records' bases as the writer did */
            vh_cursor_struct(&cur, h->type, ((const struct vh_rec_time *)(const void *)h)->time);
        }
        n->type_n[h->type]++;              /* --types: as written */
        n->type_bytes[h->type] += size;
        /* a compact record counts as what it decodes to (version 3's
         * short forms are ALLOC or FREE) */
        switch (type) {
        case VH_REC_ALLOC: n->allocs++; break;
        case VH_REC_FREE: n->frees++; break;
        case VH_REC_RESIZE: n->resizes++; break;
        case VH_REC_MOVE: n->moves++; break;
        case VH_REC_STACK:
        case VH_REC_STACK_PACKED:
        case VH_REC_STACK_DIFF: n->stacks++; break;
        default: break;
        }
        off += size;
    }
    return 0;
}

/* --types: a line a record type present, "type=0xTT records bytes". */
static void print_types(const struct counts *n)
{
    for (unsigned t = 0; t < 256; t++)
        if (n->type_n[t])
            printf("type=0x%02x %" PRIu64 " %" PRIu64 "\n", t, n->type_n[t], n->type_bytes[t]);
}

static int stat_one(const char *path, int types)
{
    int rc = 1;
    void *map = MAP_FAILED;
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0) {
        fprintf(stderr, "capstat: %s: %s\n", path, strerror(errno));
        goto out;
    }
    if ((uint64_t)st.st_size < VH_HEADER_SIZE) {
        fprintf(stderr, "capstat: %s: too small for a capture\n", path);
        goto out;
    }
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        fprintf(stderr, "capstat: %s: mmap: %s\n", path, strerror(errno));
        goto out;
    }
    const struct vh_capture_header *hd = map;
    if (memcmp(hd->magic, VH_CAPTURE_MAGIC, 8) ||
        (hd->version != VH_CAPTURE_VERSION && hd->version != VH_CAPTURE_VERSION_V3 &&
         hd->version != VH_CAPTURE_VERSION_V2 &&
         hd->version != VH_CAPTURE_VERSION_V1) ||
        hd->chunk_size < hd->chunk_header_size || hd->chunk_header_size < sizeof(struct vh_chunk_header)) {
        fprintf(stderr, "capstat: %s: not a vheap capture of version %u to %u\n", path,
                VH_CAPTURE_VERSION_V1, VH_CAPTURE_VERSION);
        goto out;
    }
    static struct counts n;
    memset(&n, 0, sizeof n);
    uint64_t chunks = __atomic_load_n(&hd->chunks_claimed, __ATOMIC_ACQUIRE);
    for (uint64_t i = 0; i < chunks; i++) {
        uint64_t off = hd->chunk_offset + i * hd->chunk_size;
        if (off + hd->chunk_size > (uint64_t)st.st_size) {
            n.damaged++;
            break;
        }
        if (scan_chunk((const uint8_t *)map + off, hd->chunk_size, hd->chunk_header_size,
                       hd->version == VH_CAPTURE_VERSION_V1, &n))
            n.damaged++;
    }
    printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
           " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
           n.allocs, n.frees, n.resizes, n.moves, n.stacks, hd->dropped_events, hd->nested_events,
           hd->stack_table_full, n.used + VH_HEADER_SIZE, (uint64_t)st.st_size, n.damaged);
    if (types)
        print_types(&n);
    rc = 0;
out:
    if (map != MAP_FAILED)
        munmap(map, (size_t)st.st_size);
    if (fd >= 0)
        close(fd);
    return rc;
}

int main(int argc, char **argv)
{
    int types = argc > 1 && !strcmp(argv[1], "--types");
    if (argc < 2 + types) {
        fprintf(stderr, "usage: capstat [--types] CAPTURE...\n");
        return 2;
    }
    int rc = 0;
    for (int i = 1 + types; i < argc; i++)
        rc |= stat_one(argv[i], types);
    return rc;
}
