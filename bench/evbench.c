/* evbench.c — the stored event stream at scale, for bench/run.sh and by
 * hand: writes a synthetic capture of N events (four threads, a live set
 * that grows to a target and then churns, temporary blocks, reallocs in
 * place and moving, failed calls, custom heaps with moves and destroys),
 * and times liveset__at / evstream over a loaded DB of it.
 *
 *   evbench gen CAPTURE EVENTS [LIVE]   write the capture (LIVE: live blocks
 *                                       of the steady state, default 1M)
 *   evbench at DB K                     liveset__at at K instants spread over
 *                                       the run (and at the end): ms each
 *   evbench scan DB                     evstream over every event: events/s
 *   evbench load CAPTURE DB [CP]        load (no symbols) with checkpoints
 *                                       every CP events (0: the default)
 * Linked with the analyzer's objects (like a unit test). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/cmd/cli.h"
#include "analyze/store/db.h"
#include "analyze/store/events.h"
#include "analyze/load/load.h"
#include "common/capture_format.h"

/* Linked with every analyzer object but main.o, so the CLI helpers the
 * commands reference come from analyze/cmd/cli.c. */

/* ---- the generator ------------------------------------------------------- */

#define CHUNK (1u << 20)
#define THREADS 4
#define STACKS 3000u
#define NHEAPS 8u                      /* custom heaps 1..NHEAPS, reused     */

static FILE *out;
static uint8_t *chunk_buf[THREADS];
static uint32_t chunk_idx[THREADS], nchunks;
static uint64_t chunk_used[THREADS];
static uint8_t stack_seen[STACKS + 1];

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static inline uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void die(const char *what)
{
    fprintf(stderr, "evbench: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void chunk_flush(int t)
{
    struct vh_chunk_header *h = (void *)chunk_buf[t];
    if (!chunk_used[t])
        return;
    h->used = chunk_used[t];
    h->magic = VH_CHUNK_MAGIC;
    h->index = chunk_idx[t];
    if (fseeko(out, (off_t)VH_HEADER_SIZE + (off_t)chunk_idx[t] * CHUNK, SEEK_SET) ||
        fwrite(chunk_buf[t], CHUNK, 1, out) != 1)
        die("write");
    chunk_used[t] = 0;
}

static void put(int t, uint64_t time, const void *rec, size_t size);

static void chunk_new(int t, uint64_t time)
{
    chunk_flush(t);
    memset(chunk_buf[t], 0, CHUNK);
    chunk_idx[t] = nchunks++;
    chunk_used[t] = sizeof(struct vh_chunk_header);
    struct vh_rec_time r = { .h = { .type = VH_REC_THREAD, .b = 1000 + (uint32_t)t },
                             .time = time };
    put(t, time, &r, sizeof r);
}

static void put(int t, uint64_t time, const void *rec, size_t size)
{
    if (!chunk_used[t] || chunk_used[t] + size > CHUNK)
        chunk_new(t, time);
    memcpy(chunk_buf[t] + chunk_used[t], rec, size);
    chunk_used[t] += size;
}

static uint32_t stack_for(int t, uint64_t time)
{
    /* a few hot stacks, a long tail */
    uint32_t id = (uint32_t)(rnd() % 8 ? rnd() % 64 : rnd() % STACKS) + 1;
    if (!stack_seen[id]) {
        uint64_t buf[2 + 8];
        struct vh_rec_stack *r = (void *)buf;
        stack_seen[id] = 1;
        memset(buf, 0, sizeof buf);
        r->h.type = VH_REC_STACK;
        r->h.a = 10;
        r->h.b = id;
        r->time = time;
        for (int i = 0; i < 8; i++)
            buf[2 + i] = 0x400000 + (id * 7919u + (unsigned)i * 131u) % 65536u * 16u;
        put(t, time, buf, sizeof buf);
    }
    return id;
}

/* Live blocks per heap, as an array (random pick and swap-remove). */
struct gblock {
    uint64_t addr, size;
};
struct gheap {
    struct gblock *b;
    size_t n, cap;
    uint64_t next_addr;
    uint64_t *freed;                   /* addresses to reuse, LIFO         */
    size_t nfreed, capfreed;
    int exists;
};
static struct gheap heaps[NHEAPS + 1];

static void gpush(struct gheap *h, uint64_t addr, uint64_t size)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 1024;
        if (!(h->b = realloc(h->b, h->cap * sizeof *h->b)))
            die("realloc");
    }
    h->b[h->n++] = (struct gblock){ addr, size };
}

static uint64_t gaddr(struct gheap *h, uint64_t size)
{
    if (h->nfreed && rnd() % 4)
        return h->freed[--h->nfreed];
    uint64_t a = h->next_addr;
    h->next_addr += (size + 31) & ~15ull;
    return a;
}

static void gfreed(struct gheap *h, uint64_t addr)
{
    if (h->nfreed == h->capfreed) {
        h->capfreed = h->capfreed ? h->capfreed * 2 : 1024;
        if (!(h->freed = realloc(h->freed, h->capfreed * sizeof *h->freed)))
            die("realloc");
    }
    h->freed[h->nfreed++] = addr;
}

static uint64_t gsize(void)
{
    unsigned k = (unsigned)(rnd() % 100);
    if (k < 60)
        return 8 + rnd() % 120;
    if (k < 95)
        return 128 + rnd() % 4000;
    return 4096 + rnd() % 200000;
}

static void alloc_rec(int t, uint64_t time, uint16_t heap, uint8_t type, uint8_t flags,
                      uint64_t addr, uint64_t size, uint32_t stack)
{
    struct vh_rec_alloc r = { .h = { .type = type, .flags = flags, .a = heap, .b = stack },
                              .time = time, .addr = addr, .size = size,
                              .slack = (uint32_t)((16 - size % 16) % 16 + 8),
                              .func = heap ? VH_FN_CUSTOM : VH_FN_MALLOC };
    put(t, time, &r, sizeof r);
}

static void free_rec(int t, uint64_t time, uint16_t heap, uint8_t flags, uint64_t addr)
{
    struct vh_rec_free r = { .h = { .type = VH_REC_FREE, .flags = flags, .a = heap },
                             .time = time, .addr = addr, .func = VH_FN_FREE };
    put(t, time, &r, sizeof r);
}

static int gen(const char *path, uint64_t events, uint64_t live)
{
    struct vh_capture_header hd;
    uint64_t time = 1000, n = 0, end;
    int t = 0;

    if (!(out = fopen(path, "w+")))
        die(path);
    for (int i = 0; i < THREADS; i++)
        if (!(chunk_buf[i] = malloc(CHUNK)))
            die("malloc");
    for (unsigned i = 0; i <= NHEAPS; i++)
        heaps[i].next_addr = 0x550000000000ull + (uint64_t)i * 0x10000000000ull;
    heaps[0].exists = 1;

    while (n < events) {
        if (!(n & 255))
            t = (int)(rnd() % THREADS);
        time += 20 + rnd() % 180;
        unsigned k = (unsigned)(rnd() % 1000);
        uint16_t hid = 0;
        if (k < 150) {                 /* custom heaps: create, use, destroy */
            hid = (uint16_t)(1 + rnd() % NHEAPS);
            struct gheap *h = &heaps[hid];
            if (!h->exists) {
                uint64_t buf[8] = { 0 };
                struct vh_rec_heap *r = (void *)buf;
                r->h.type = VH_REC_HEAP_CREATE;
                r->h.a = 8;
                r->h.b = hid;
                r->time = time;
                r->base = h->next_addr;
                r->size = 1ull << 36;
                snprintf((char *)buf + sizeof *r, sizeof buf - sizeof *r, "road%u", hid);
                put(t, time, buf, sizeof buf);
                h->exists = 1;
                n++;
                continue;
            }
            if (k < 1 && h->n) {       /* destroy: rare, frees everything  */
                struct vh_rec_time r = { .h = { .type = VH_REC_HEAP_DESTROY, .a = hid },
                                         .time = time };
                put(t, time, &r, sizeof r);
                n += h->n;
                h->n = 0;
                h->nfreed = 0;
                h->exists = 0;
                continue;
            }
            if (k < 6 && h->n) {       /* a move (compaction)              */
                size_t i = rnd() % h->n;
                uint64_t to = gaddr(h, h->b[i].size);
                struct vh_rec_move r = { .h = { .type = VH_REC_MOVE, .a = hid }, .time = time,
                                         .from = h->b[i].addr, .to = to };
                put(t, time, &r, sizeof r);
                gfreed(h, h->b[i].addr);
                h->b[i].addr = to;
                n++;
                continue;
            }
        }
        struct gheap *h = &heaps[hid];
        size_t target = hid ? live / 16 : live;
        int grow = h->n < target ? rnd() % 100 < 75 : rnd() % 100 < 50;
        if (k % 97 == 3) {             /* temporary: alloc + free at once */
            uint64_t size = gsize(), a = gaddr(h, size);
            alloc_rec(t, time, hid, VH_REC_ALLOC, 0, a, size, stack_for(t, time));
            free_rec(t, time + 5, hid, 0, a);
            gfreed(h, a);
            time += 5;
            n += 2;
        } else if (k % 97 == 5 && h->n) { /* realloc in place              */
            size_t i = rnd() % h->n;
            h->b[i].size += 16;
            alloc_rec(t, time, hid, VH_REC_RESIZE, 0, h->b[i].addr, h->b[i].size,
                      stack_for(t, time));
            n++;
        } else if (k % 97 == 7 && h->n) { /* moving realloc               */
            size_t i = rnd() % h->n;
            uint64_t size = h->b[i].size * 2, a = gaddr(h, size);
            free_rec(t, time, hid, VH_RF_REALLOC, h->b[i].addr);
            alloc_rec(t, time, hid, VH_REC_ALLOC, VH_RF_REALLOC, a, size, stack_for(t, time));
            gfreed(h, h->b[i].addr);
            h->b[i] = (struct gblock){ a, size };
            n += 2;
        } else if (k % 97 == 11) {     /* failed                           */
            alloc_rec(t, time, hid, VH_REC_ALLOC, VH_RF_FAILED, 0, 1ull << 40, stack_for(t, time));
            n++;
        } else if (grow || !h->n) {
            uint64_t size = gsize(), a = gaddr(h, size);
            alloc_rec(t, time, hid, VH_REC_ALLOC, 0, a, size, stack_for(t, time));
            gpush(h, a, size);
            n++;
        } else {
            size_t i = rnd() % h->n;
            free_rec(t, time, hid, 0, h->b[i].addr);
            gfreed(h, h->b[i].addr);
            h->b[i] = h->b[--h->n];
            n++;
        }
    }
    end = time + 1000;
    {
        struct vh_rec_time r = { .h = { .type = VH_REC_END }, .time = end };
        put(t, end, &r, sizeof r);
    }
    for (int i = 0; i < THREADS; i++)
        chunk_flush(i);

    memset(&hd, 0, sizeof hd);
    memcpy(hd.magic, VH_CAPTURE_MAGIC, sizeof hd.magic);
    hd.version = VH_CAPTURE_VERSION_V1; /* writes version 1 structs */
    hd.header_size = VH_HEADER_SIZE;
    hd.chunk_size = CHUNK;
    hd.chunk_header_size = sizeof(struct vh_chunk_header);
    hd.chunk_offset = VH_HEADER_SIZE;
    hd.chunks_claimed = nchunks;
    hd.pid = 4242;
    hd.ppid = 1;
    hd.start_realtime_ns = 1790000000000000000ull;
    hd.start_monotonic_ns = 1000000000ull;
    hd.page_size = 4096;
    hd.phys_pages = 1u << 20;
    hd.flags = VH_HDR_ENDED;
    hd.end_time = end;
    hd.last_time = end;
    hd.max_depth = 64;
    strcpy(hd.exe, "/usr/bin/evbench-synthetic");
    memcpy(hd.argv, "evbench", 8);
    hd.argv_len = 8;
    if (fseeko(out, 0, SEEK_SET) || fwrite(&hd, sizeof hd, 1, out) != 1 || fclose(out))
        die("write");
    printf("%s: about %" PRIu64 " events (records, destroys expanded), %u chunks, %.3f s of "
           "program time\n", path, n, nchunks, end / 1e9);
    return 0;
}

/* ---- timing --------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int at(const char *path, int k)
{
    sqlite3 *db;
    char err[512];
    double worst = 0, sum = 0;
    long long runtime;

    if (db__open_read(path, &db, err, sizeof err)) {
        fprintf(stderr, "evbench: %s\n", err);
        return 1;
    }
    runtime = db__meta_int(db, "capture_last_time", 0);
    for (int i = 1; i <= k + 1; i++) {
        /* k instants between checkpoints, then the end */
        uint64_t t = i <= k ? (uint64_t)runtime / (uint64_t)(k + 1) * (uint64_t)i + 7777
                            : UINT64_MAX;
        struct liveset *ls = NULL;
        double t0 = now(), dt;
        if (liveset__at(db, t, -1, &ls, err, sizeof err)) {
            fprintf(stderr, "evbench: liveset__at: %s\n", err);
            sqlite3_close(db);
            return 1;
        }
        dt = now() - t0;
        uint64_t bytes = 0;
        for (size_t j = 0; j < ls->n; j++)
            bytes += ls->blocks[j].size;
        printf("  liveset__at(%s%.3f s): %zu blocks, %" PRIu64 " bytes live: %.0f ms\n",
               i <= k ? "" : "end ", i <= k ? t / 1e9 : 0.0, ls->n, bytes, dt * 1e3);
        liveset__free(ls);
        sum += dt;
        if (dt > worst)
            worst = dt;
    }
    printf("liveset__at: mean %.0f ms, worst %.0f ms over %d instants\n", sum / (k + 1) * 1e3,
           worst * 1e3, k + 1);
    sqlite3_close(db);
    return 0;
}

static int scan(const char *path)
{
    sqlite3 *db;
    struct evstream *s;
    struct vh_ev ev;
    char err[512];
    uint64_t n = 0;
    double t0 = now();
    int rc;

    if (db__open_read(path, &db, err, sizeof err) ||
        evstream__open(db, 0, &s, err, sizeof err)) {
        fprintf(stderr, "evbench: %s\n", err);
        return 1;
    }
    while ((rc = evstream__next(s, &ev)) == 1)
        n++;
    if (rc < 0)
        fprintf(stderr, "evbench: %s\n", evstream__error(s));
    printf("evstream: %" PRIu64 " events in %.2f s (%.1f M events/s)\n", n, now() - t0,
           n / (now() - t0) / 1e6);
    evstream__close(s);
    sqlite3_close(db);
    return rc < 0;
}

static int load(const char *cap, const char *db, uint64_t cp)
{
    struct load_opts o = { .progress = 0, .no_symbols = 1, .checkpoint_events = cp };
    struct load_stats st;
    char err[512];

    if (load__capture(cap, db, &o, &st, err, sizeof err)) {
        fprintf(stderr, "evbench: %s\n", err);
        return 1;
    }
    printf("load: %" PRIu64 " records in %.2f s (stream %.2f s, CPU of both threads %.2f s; "
           "write %.2f s)\n", st.records, st.seconds, st.stream_seconds, st.stream_cpu_seconds,
           st.write_seconds);
    sqlite3 *d;
    if (!db__open_read(db, &d, err, sizeof err)) {
        long long ev = db__meta_int(d, "events", 0), eb = db__meta_int(d, "event_bytes", 0);
        printf("  %lld events in %.1f MB (%.1f bytes each), %lld checkpoints in %.1f MB\n", ev,
               eb / 1e6, ev ? (double)eb / (double)ev : 0.0, db__meta_int(d, "checkpoints", 0),
               db__meta_int(d, "checkpoint_bytes", 0) / 1e6);
        sqlite3_close(d);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "load"))
        return load(argv[2], argv[3], argc > 4 ? strtoull(argv[4], NULL, 0) : 0);
    if (argc >= 4 && !strcmp(argv[1], "gen"))
        return gen(argv[2], strtoull(argv[3], NULL, 0),
                   argc > 4 ? strtoull(argv[4], NULL, 0) : 1000000);
    if (argc == 4 && !strcmp(argv[1], "at"))
        return at(argv[2], atoi(argv[3]));
    if (argc == 3 && !strcmp(argv[1], "scan"))
        return scan(argv[2]);
    fprintf(stderr, "usage: evbench gen CAPTURE EVENTS [LIVE] | at DB K | scan DB\n");
    return 2;
}
