/* reader.c — the capture reader: maps a capture, validates it, indexes its
 * STACK records, and merges its per-thread chunks into one time-ordered
 * stream. Every byte of the file is untrusted: each length is checked against
 * the snapshot taken at open, so a corrupt, truncated or still-growing
 * capture is read as far as it is valid and never crashes the reader. */
/* The merge runs over segments of chunks, each sorted by time. A chunk
 * reused by a later thread may start that thread's records with a time a
 * little before the previous owner's last one (the time was taken before
 * the chunk was claimed): the chunk splits there, at the THREAD record.
 * Compact records (versions 2 and 3) are decoded twice, in pass one to validate
 * and index (the chunks split between threads on a big capture), in pass
 * two into the event; each segment carries the cursor (time and address
 * bases) its next record decodes against. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/capture/reader.h"
#include "common/leb128.h"
#include "common/stack_diff.h"
#include "analyze/util/cmp.h"
#include "analyze/util/grow.h"

#define MIN_CHUNK_SIZE 4096u
#define MAX_CHUNK_SIZE (1u << 30)
#define CHDR ((uint64_t)sizeof(struct vh_chunk_header))
/* Every record carries its header word and a time: nothing is shorter. */
#define MIN_RECORD 16u

/* A run of one chunk's records in time order: the whole chunk, or the part
 * between THREAD records where the time went back. A run starts at the
 * chunk's first record or at a THREAD record, so it decodes from a fresh
 * cursor either way. */
struct seg {
    uint64_t first;                /* file offset of its first record       */
    uint64_t end;                  /* file offset where it ends             */
    uint64_t pos;                  /* next record to yield (pass two)       */
    struct vh_cursor cur;          /* compact records' bases at pos         */
    struct vh_cursor cur0;         /* ... and at first (capture__follow: a
                                      chunk's new records go on from its
                                      old ones' cursor)                     */
    uint32_t tid0;                 /* the thread writing at first           */
    long dec_n;                    /* the compact record at pos as seg_peek
                                      decoded it: its length, in dec, cur
                                      already moved past it (a cursor is
                                      over 1 KiB: not copied a record);
                                      < 0: why it did not decode (cur
                                      unchanged); 0: not one               */
    union vh_rec_compact dec;
    uint32_t tid;                  /* b of its THREAD record once yielded   */
    uint32_t chunk;
};

/* A segment's place in the merge, keyed by its next record's (time,
 * offset); the key is kept here so that sifting touches one array. */
struct heap_ent {
    uint64_t time, pos;
    size_t seg;
};

/* Where pass one stopped in a chunk, to go on from there when the capture
 * is followed (capture__follow): the next record, the cursor it decodes
 * against, the last time and THREAD seen; a damaged chunk is done. */
struct chunk_at {
    uint64_t pos;                  /* 0: not scanned yet                    */
    struct vh_cursor cur;
    uint64_t last;
    uint32_t tid;
    int done;
};

struct stack_ent {
    uint64_t off;                  /* file offset of the STACK record       */
    uint32_t id;
    uint32_t depth;
    uint64_t pool;                 /* STACK_PACKED, STACK_DIFF: frames at
                                      pool[pool - 1] once stacks_finish
                                      decoded them; 0: frames in the record;
                                      POOL_BAD: a diff that does not decode */
};
#define POOL_BAD UINT64_MAX

struct capture {
    const uint8_t *map;
    uint64_t size;                 /* of the file at the last snapshot      */
    uint64_t maplen;               /* mapped: more when the file shrank     */
    const struct vh_capture_header *hdr;
    int v1;                        /* version 1: struct records only        */
    int fd;                        /* kept for capture__follow              */

    uint32_t nchunks;              /* chunks in the snapshot                */
    struct chunk_at *at;           /* nchunks; shared by the scan's parts   */
    size_t capat;
    struct seg *segs;              /* in file order                         */
    size_t nsegs, capsegs;
    struct heap_ent *heap;         /* min-heap of the segments under way    */
    size_t nheap;
    struct heap_ent *pend;         /* segments not reached yet, by their    */
    size_t npend, ipend;           /* first record's key; from ipend on     */

    struct stack_ent *stacks;      /* sorted by id once pass one is done    */
    size_t nstacks, capstacks;
    uint32_t *dense;               /* id -> stacks index + 1, when compact  */
    uint32_t ndense;
    uint32_t max_stack_id;
    uint64_t *pool;                /* decoded frames of packed stacks       */
    size_t npool, cappool;
    uint64_t *scratch;             /* the STACK that capture__next yields for
                                      a packed one                           */
    size_t capscratch;

    uint64_t consumed, total;      /* record bytes (PAD not counted)        */

    unsigned damage;
    uint64_t damage_off;           /* offset the kept message is about      */
    char damage_msg[256];
};

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Keeps the message about the lowest file offset: "first" means first in
 * the file, whatever order the checks ran in. */
__attribute__((format(printf, 3, 4)))
static void damage(struct capture *c, uint64_t off, const char *fmt, ...)
{
    va_list ap;

    c->damage++;
    if (c->damage > 1 && off >= c->damage_off)
        return;
    c->damage_off = off;
    va_start(ap, fmt);
    vsnprintf(c->damage_msg, sizeof c->damage_msg, fmt, ap);
    va_end(ap);
}

/* Smallest valid size of each variable-length type: its fixed part. */
static size_t min_size(uint8_t type)
{
    switch (type) {
    case VH_REC_STACK: return sizeof(struct vh_rec_stack);
    case VH_REC_MODULE: return sizeof(struct vh_rec_module);
    case VH_REC_HEAP_CREATE: return sizeof(struct vh_rec_heap);
    case VH_REC_MARK:
    case VH_REC_TAG: return sizeof(struct vh_rec_label);
    case VH_REC_RANGE: return sizeof(struct vh_rec_range);
    case VH_REC_REGION: return sizeof(struct vh_rec_region);
    case VH_REC_REACH: return sizeof(struct vh_rec_reach);
    case VH_REC_REACH_END: return sizeof(struct vh_rec_reach_end);
    default: return MIN_RECORD;
    }
}

/* A record decoded from the file. */
struct rec {
    const struct vh_rec_hdr *h;    /* in the mapping, or the caller's dec   */
    size_t size;                   /* encoded size                          */
    uint64_t time;
};

/* Decodes the record at `pos` (not a PAD) if it lies wholly below `limit`,
 * moving the cursor as the writer did. 0 on damage, with the reason in *why
 * and *cut set when the record runs past `limit`. A compact record is
 * decoded into *dec. */
static inline int rec_decode(const struct capture *c, uint64_t pos, uint64_t limit,
                      struct vh_cursor *cur, union vh_rec_compact *dec, struct rec *r,
                      const char **why, int *cut)
{
    const uint8_t *p = c->map + pos;
    const struct vh_rec_hdr *h = (const void *)p;
    size_t size;

    *cut = 0;
    if (!c->v1 && vh_rec_is_compact(p[0])) {
        long n = vh_dec_compact(p, c->map + limit, cur, dec);
        if (n < 0) {
            *why = vh_dec_why((int)n);
            *cut = n == VH_DEC_CUT;
            return 0;
        }
        r->h = &dec->h;
        r->size = (size_t)n;
        r->time = dec->alloc.time;
        return 1;
    }
    /* The type byte alone says whether the reader knows it; the struct is
     * only looked at once its alignment is known. */
    if (p[0] < VH_REC_VARIABLE && !vh_record_size(&(struct vh_rec_hdr){ .type = p[0] })) {
        *why = "has an unknown fixed-size type";
        return 0;
    }
    if (pos & 7) {
        *why = "is a struct record at an offset not a multiple of 8";
        return 0;
    }
    if (limit - pos < sizeof *h) {
        *why = "runs past used";
        *cut = 1;
        return 0;
    }
    size = vh_record_size(h);
    if (size == 0) {
        *why = "has length 0";
        return 0;
    }
    if (size > limit - pos) {
        *why = "runs past used";
        *cut = 1;
        return 0;
    }
    if (size < min_size(h->type)) {
        *why = "is too short for its type";
        return 0;
    }
    r->h = h;
    r->size = size;
    r->time = rd64(p + 8);
    vh_cursor_struct(cur, h->type, r->time);
    return 1;
}

/* Starts a segment at `pos` in chunk i. */
static int seg_push(struct capture *c, uint32_t i, uint64_t pos, struct vh_cursor cur,
                    uint32_t tid)
{
    if (vh_grow(&c->segs, &c->capsegs, c->nsegs, sizeof *c->segs, 64))
        return -ENOMEM;
    c->segs[c->nsegs++] = (struct seg){ .first = pos, .end = pos, .pos = pos, .chunk = i,
                                        .cur0 = cur, .tid0 = tid };
    return 0;
}

/* The frame count of a STACK_DIFF record of `size` bytes at p, as far as
 * it can be checked without its base (pass one); -1 when malformed. */
static int diff_depth(const uint8_t *p, size_t size, uint32_t *depth)
{
    const uint8_t *q = p + sizeof(struct vh_rec_stack), *end = p + size;
    uint32_t base_id;
    if (size < sizeof(struct vh_rec_stack) ||
        vh_diff_head(&q, end, ((const struct vh_rec_hdr *)(const void *)p)->b, &base_id, depth))
        return -1;
    return vh_diff_ops(q, end, NULL, 0, NULL, *depth);
}

/* The frames of a STACK_PACKED record of `size` bytes at p: their count
 * in *depth and, unless out is NULL, the frames. -1 when malformed (a
 * varint cut or too long, more frames than a STACK record could hold). */
static int packed_frames(const uint8_t *p, size_t size, uint64_t *out, uint32_t *depth)
{
    const uint8_t *q = p + sizeof(struct vh_rec_stack), *end = p + size;
    uint64_t n, z, f = 0;
    if (size < sizeof(struct vh_rec_stack) || vh_uleb_get(&q, end, &n) ||
        n > (uint64_t)(end - q) || n > UINT16_MAX - 2)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        if (vh_uleb_get(&q, end, &z))
            return -1;
        f += vh_unzigzag(z);
        if (out)
            out[i] = f;
    }
    *depth = (uint32_t)n;
    return 0;
}

static int stack_push(struct capture *c, uint32_t id, uint32_t depth, uint64_t off)
{
    if (vh_grow(&c->stacks, &c->capstacks, c->nstacks, sizeof *c->stacks, 256))
        return -ENOMEM;
    c->stacks[c->nstacks++] = (struct stack_ent){ .off = off, .id = id, .depth = depth };
    return 0;
}

static int chunk_records(struct capture *c, uint32_t i, uint64_t base, uint64_t limit);

/* Pass one over chunk i: splits it into segments, finds where its valid
 * records end, indexes its stacks; from where the last pass stopped, when
 * the capture is followed. Damage ends the chunk; only -ENOMEM is an
 * error. */
static int chunk_scan(struct capture *c, uint32_t i)
{
    const struct vh_capture_header *hdr = c->hdr;
    uint64_t base = hdr->chunk_offset + (uint64_t)i * hdr->chunk_size;
    uint64_t avail = c->size - base;
    const struct vh_chunk_header *chdr = (const void *)(c->map + base);
    uint64_t used, limit;

    /* base < size at open (the snapshot is clamped); a file that shrank
     * while followed may end before a chunk read earlier */
    if (c->at[i].done || base >= c->size)
        return 0;

    if (avail > hdr->chunk_size)
        avail = hdr->chunk_size;
    if (avail < CHDR) {
        damage(c, base, "chunk %u at offset 0x%llx: cut by the end of the file at 0x%llx", i,
               (unsigned long long)base, (unsigned long long)c->size);
        c->at[i].done = 1;
        return 0;
    }
    /* used first, with acquire: what it covers was written before it. */
    used = __atomic_load_n(&chdr->used, __ATOMIC_ACQUIRE);
    if (c->v1) {
        /* A version 1 writer counted a chunk before writing its header. */
        if (used == 0 && (chdr->magic == 0 || chdr->magic == VH_CHUNK_MAGIC))
            return 0; /* claimed, nothing published yet */
    } else if (used == 0 && chdr->magic == 0 && chdr->index == 0) {
        /* Version 2 writes the header before it counts the chunk: no
         * header below chunks_claimed is lost data, never a race. */
        damage(c, base, "chunk %u at offset 0x%llx: no chunk header", i,
               (unsigned long long)base);
        c->at[i].done = 1;
        return 0;
    }
    if (chdr->magic != VH_CHUNK_MAGIC || chdr->index != i || used > hdr->chunk_size ||
        used < CHDR) {
        if (chdr->magic != VH_CHUNK_MAGIC)
            damage(c, base, "chunk %u at offset 0x%llx: bad chunk magic 0x%08x", i,
                   (unsigned long long)base, chdr->magic);
        else if (chdr->index != i)
            damage(c, base, "chunk %u at offset 0x%llx: header says it is chunk %u", i,
                   (unsigned long long)base, chdr->index);
        else
            damage(c, base, "chunk %u at offset 0x%llx: used %llu outside %llu..%u", i,
                   (unsigned long long)base, (unsigned long long)used,
                   (unsigned long long)CHDR, hdr->chunk_size);
        c->at[i].done = 1;
        return 0;
    }
    limit = used;
    if (used > avail) {
        damage(c, base + avail,
               "chunk %u at offset 0x%llx: used %llu runs past the end of the file at 0x%llx", i,
               (unsigned long long)base, (unsigned long long)used, (unsigned long long)c->size);
        limit = avail;
        c->at[i].done = 1;
    }
    return chunk_records(c, i, base, base + limit);
}

/* Chunk i's records from where pass one stopped up to limit. */
static int chunk_records(struct capture *c, uint32_t i, uint64_t base, uint64_t limit)
{
    struct chunk_at *at = &c->at[i];
    struct vh_cursor cur = at->pos ? at->cur : (struct vh_cursor){ 0 };
    union vh_rec_compact dec;
    uint64_t pos = at->pos ? at->pos : base + CHDR, last = at->last;
    uint32_t tid = at->tid;
    int dead = at->done;

    if (pos < limit && seg_push(c, i, pos, cur, tid))
        return -ENOMEM;
    while (pos < limit) {
        const char *why = NULL;
        struct rec r;
        int cut;

        if (!c->v1 && c->map[pos] == VH_REC_PAD) {
            if (!(pos & 7)) {
                damage(c, pos, "chunk %u at offset 0x%llx: padding at 0x%llx is not before "
                       "an 8-aligned record", i, (unsigned long long)base,
                       (unsigned long long)pos);
                dead = 1;
                break;
            }
            pos++;
            continue;
        }
        if (!rec_decode(c, pos, limit, &cur, &dec, &r, &why, &cut)) {
            /* A record cut by the end of the file is the damage already
             * reported for this chunk, not another region. */
            dead = 1;
            if (at->done && cut)
                break;
            damage(c, pos, "chunk %u at offset 0x%llx: record at 0x%llx (type 0x%02x) %s", i,
                   (unsigned long long)base, (unsigned long long)pos, c->map[pos], why);
            break;
        }
        /* A new owner whose time lies before the last owner's: its records
         * become a segment of their own (rare: only then is one needed). */
        if (r.h->type == VH_REC_THREAD && r.time < last) {
            c->segs[c->nsegs - 1].end = pos;
            if (seg_push(c, i, pos, (struct vh_cursor){ 0 }, 0))
                return -ENOMEM;
            last = 0;
        }
        if (r.time < last) {
            damage(c, pos,
                   "chunk %u at offset 0x%llx: time goes backwards at record 0x%llx "
                   "(%llu after %llu)",
                   i, (unsigned long long)base, (unsigned long long)pos,
                   (unsigned long long)r.time, (unsigned long long)last);
            dead = 1;
            break;
        }
        last = r.time;
        if (r.h->type == VH_REC_THREAD)
            tid = r.h->b;
        if (r.h->type == VH_REC_STACK || r.h->type == VH_REC_STACK_PACKED ||
            r.h->type == VH_REC_STACK_DIFF) {
            uint32_t depth = (uint32_t)((r.size - sizeof(struct vh_rec_stack)) / 8);
            if (r.h->b == 0) {
                damage(c, pos, "chunk %u at offset 0x%llx: stack record at 0x%llx has id 0", i,
                       (unsigned long long)base, (unsigned long long)pos);
            } else if ((r.h->type == VH_REC_STACK_PACKED &&
                        packed_frames(c->map + pos, r.size, NULL, &depth)) ||
                       (r.h->type == VH_REC_STACK_DIFF &&
                        diff_depth(c->map + pos, r.size, &depth))) {
                damage(c, pos, "chunk %u at offset 0x%llx: %s stack record at 0x%llx is "
                       "malformed", i, (unsigned long long)base,
                       r.h->type == VH_REC_STACK_DIFF ? "diff" : "packed",
                       (unsigned long long)pos);
                dead = 1;
                break;
            } else if (stack_push(c, r.h->b, depth, pos)) {
                return -ENOMEM;
            }
        }
        c->total += r.size;
        pos += r.size;
    }
    if (c->nsegs && c->segs[c->nsegs - 1].chunk == i)
        c->segs[c->nsegs - 1].end = pos;
    *at = (struct chunk_at){ .pos = pos, .cur = cur, .last = last, .tid = tid, .done = dead };
    return 0;
}

/* Pass one over the chunks [from, to) of a copy of the capture: its own
 * segments, stacks, byte count and damage, merged in chunk order after. */
struct scan_part {
    struct capture c;
    uint32_t from, to;
    int rc;
    pthread_t thread;
};

static void *scan_part_main(void *arg)
{
    struct scan_part *p = arg;
    for (uint32_t i = p->from; i < p->to && !p->rc; i++)
        p->rc = chunk_scan(&p->c, i);
    return NULL;
}

/* Appends part p's findings to c, which holds the chunks before p's. */
static int scan_merge(struct capture *c, struct scan_part *p)
{
    const struct capture *b = &p->c;

    for (size_t i = 0; i < b->nsegs; i++) {
        if (vh_grow(&c->segs, &c->capsegs, c->nsegs, sizeof *c->segs, 64))
            return -ENOMEM;
        c->segs[c->nsegs++] = b->segs[i];
    }
    for (size_t i = 0; i < b->nstacks; i++) {
        if (vh_grow(&c->stacks, &c->capstacks, c->nstacks, sizeof *c->stacks, 256))
            return -ENOMEM;
        c->stacks[c->nstacks++] = b->stacks[i];
    }
    c->total += b->total;
    /* the message about the lowest offset; at a tie, the earlier chunk's */
    if (b->damage && (!c->damage || b->damage_off < c->damage_off)) {
        c->damage_off = b->damage_off;
        memcpy(c->damage_msg, b->damage_msg, sizeof c->damage_msg);
    }
    c->damage += b->damage;
    return p->rc;
}

/* Pass one over every chunk. Chunks are independent, so a big capture's
 * are split between this thread and others (one a CPU, up to SCAN_PARTS
 * in all): decoding every record is most of what opening costs, and the
 * load cannot start before it is done. */
#define SCAN_PARTS 4
#define SCAN_PART_MIN (4u << 20)       /* bytes of chunks a part, at least */

static int scan_chunks(struct capture *c)
{
    struct scan_part part[SCAN_PARTS - 1];
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t bytes = (uint64_t)c->nchunks * c->hdr->chunk_size;
    uint32_t nparts = cpus > 1 ? (uint32_t)(cpus < SCAN_PARTS ? cpus : SCAN_PARTS) : 1;
    uint32_t started = 0, mine = c->nchunks;
    int rc = 0;

    while (nparts > 1 && bytes / nparts < SCAN_PART_MIN)
        nparts--;
    for (uint32_t k = 1; k < nparts; k++) {
        struct scan_part *p = &part[started];
        memset(p, 0, sizeof *p);
        p->c.map = c->map;
        p->c.size = c->size;
        p->c.hdr = c->hdr;
        p->c.v1 = c->v1;
        p->c.at = c->at;
        p->from = (uint32_t)((uint64_t)c->nchunks * k / nparts);
        p->to = (uint32_t)((uint64_t)c->nchunks * (k + 1) / nparts);
        if (pthread_create(&p->thread, NULL, scan_part_main, p))
            break;
        started++;
    }
    if (started == nparts - 1 && started)
        mine = part[0].from;
    for (uint32_t i = 0; i < mine && !rc; i++)
        rc = chunk_scan(c, i);
    for (uint32_t k = 0; k < started; k++) {
        pthread_join(part[k].thread, NULL);
        /* all parts or none: without a thread for one, this one did all */
        if (!rc && mine < c->nchunks)
            rc = scan_merge(c, &part[k]);
        free(part[k].c.segs);
        free(part[k].c.stacks);
    }
    return rc;
}

static int by_id_then_offset(const void *a, const void *b)
{
    const struct stack_ent *x = a, *y = b;
    return vh_cmp2(x->id, y->id, x->off, y->off);
}

/* The frames of an indexed stack: in its record, or in the pool. */
static const uint64_t *ent_frames(const struct capture *c, const struct stack_ent *e)
{
    return e->pool ? c->pool + e->pool - 1
                   : (const uint64_t *)(c->map + e->off + sizeof(struct vh_rec_stack));
}

/* The frames of STACK_DIFF entry i into the pool at `at` (room for its
 * depth), against its base: the first definition of the base's id, an
 * earlier entry (ids sorted), decoded before it. -1: no such base, or the
 * ops do not fit it. */
static int diff_unpack(struct capture *c, size_t i, uint64_t *at)
{
    const struct stack_ent *e = &c->stacks[i];
    const uint8_t *p = c->map + e->off, *end = p + (size_t)((const struct vh_rec_hdr *)(const void *)p)->a * 8;
    const uint8_t *q = p + sizeof(struct vh_rec_stack);
    uint32_t base_id, n;
    if (vh_diff_head(&q, end, e->id, &base_id, &n) || n != e->depth)
        return -1;
    size_t b = VH_PARTITION_POINT(k, i, c->stacks[k].id < base_id);
    if (b == i || c->stacks[b].id != base_id || c->stacks[b].pool == POOL_BAD)
        return -1;
    return vh_diff_ops(q, end, ent_frames(c, &c->stacks[b]), c->stacks[b].depth, at, n);
}

/* Decodes the frames of every packed or diff stack not decoded yet into
 * the pool (validated in pass one as far as they can be alone), so that
 * capture__stack hands out frames as for a plain STACK. In id order: a
 * diff's base, a lower id, comes first. */
static int unpack_stacks(struct capture *c)
{
    for (size_t i = 0; i < c->nstacks; i++) {
        struct stack_ent *e = &c->stacks[i];
        const struct vh_rec_hdr *h = (const void *)(c->map + e->off);
        uint32_t depth;
        if ((h->type != VH_REC_STACK_PACKED && h->type != VH_REC_STACK_DIFF) || e->pool)
            continue;
        if (vh_reserve(&c->pool, &c->cappool, c->npool + e->depth + 1, sizeof *c->pool, 1024) ||
            vh_reserve(&c->scratch, &c->capscratch, 2 + (size_t)e->depth, sizeof *c->scratch, 2))
            return -ENOMEM;
        if (h->type == VH_REC_STACK_PACKED)
            packed_frames(c->map + e->off, (size_t)h->a * 8, c->pool + c->npool, &depth);
        else if (diff_unpack(c, i, c->pool + c->npool)) {
            e->pool = POOL_BAD;
            continue;
        }
        e->pool = c->npool + 1;
        c->npool += e->depth + 1;  /* +1: a depth of 0 still has a place */
    }
    return 0;
}

/* Sorts the stacks, drops later definitions of an id (damage when their
 * frames differ from the first), and builds a dense id index when the ids
 * are compact enough for it to stay O(stacks). */
static int stacks_finish(struct capture *c)
{
    size_t n = 0;

    if (!c->nstacks)
        return 0;
    qsort(c->stacks, c->nstacks, sizeof *c->stacks, by_id_then_offset);
    if (unpack_stacks(c))
        return -ENOMEM;
    for (size_t i = 0; i < c->nstacks; i++) {
        struct stack_ent *e = &c->stacks[i];
        if (e->pool == POOL_BAD) {
            damage(c, e->off, "diff stack record at 0x%llx (id %u): its base is not an "
                   "earlier stack it fits", (unsigned long long)e->off, e->id);
            continue;
        }
        if (n && c->stacks[n - 1].id == e->id) {
            const struct stack_ent *k = &c->stacks[n - 1];
            if (k->depth != e->depth ||
                memcmp(ent_frames(c, k), ent_frames(c, e), (size_t)k->depth * 8))
                damage(c, e->off,
                       "stack record at 0x%llx: id %u already defined at 0x%llx "
                       "with other frames",
                       (unsigned long long)e->off, e->id, (unsigned long long)k->off);
            continue;
        }
        c->stacks[n++] = *e;
    }
    c->nstacks = n;
    if (!n)
        return 0;
    c->max_stack_id = c->stacks[n - 1].id;
    if ((uint64_t)c->max_stack_id <= 4 * (uint64_t)n + 65536) {
        c->ndense = c->max_stack_id + 1;
        c->dense = calloc(c->ndense, sizeof *c->dense);
        if (!c->dense)
            return -ENOMEM;
        for (size_t i = 0; i < n; i++)
            c->dense[c->stacks[i].id] = (uint32_t)i + 1;
    }
    return 0;
}

static int before(const struct heap_ent *x, const struct heap_ent *y)
{
    return x->time != y->time ? x->time < y->time : x->pos < y->pos;
}

static void sift_down(struct capture *c, size_t i)
{
    struct heap_ent *h = c->heap;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        struct heap_ent t;
        if (l < c->nheap && before(&h[l], &h[m]))
            m = l;
        if (r < c->nheap && before(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void sift_up(struct capture *c, size_t i)
{
    struct heap_ent *h = c->heap;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        struct heap_ent t;
        if (!before(&h[i], &h[up]))
            return;
        t = h[i];
        h[i] = h[up];
        h[up] = t;
        i = up;
    }
}

/* A segment joins the heap once the merge reaches its first record: the
 * heap then holds about one segment a thread running at that time, not
 * every chunk of the capture (hundreds), which makes each record's sift
 * short. The order is the same: the next record is still the least of
 * the heap's and the waiting segments' first ones. */
static void activate(struct capture *c)
{
    while (c->ipend < c->npend &&
           (!c->nheap || before(&c->pend[c->ipend], &c->heap[0]))) {
        c->heap[c->nheap] = c->pend[c->ipend++];
        sift_up(c, c->nheap++);
    }
}

static int by_key(const void *a, const void *b)
{
    return before(a, b) ? -1 : before(b, a);
}

/* A packed or diff STACK yielded as the STACK it stands for, in
 * c->scratch (valid until the next call; sized in pass one for the
 * deepest): ev->size is then that STACK's size. A packed record that
 * changed since pass one is yielded with no frames; a diff's frames are
 * its id's as indexed (none when it did not decode). */
static void unpack_one(struct capture *c, struct vh_event *ev)
{
    const uint8_t *p = (const uint8_t *)ev->rec;
    const uint64_t *known = NULL;
    uint32_t depth = 0;
    if (ev->rec->type == VH_REC_STACK_DIFF)
        known = capture__stack(c, ev->rec->b, &depth, NULL);
    else if (packed_frames(p, ev->size, NULL, &depth))
        depth = 0;
    if (2 + (size_t)depth > c->capscratch)
        depth = 0;
    size_t words = 2 + (size_t)depth;
    if (words > c->capscratch)
        return;                    /* no packed stack was indexed: none here */
    if (known)
        memcpy(c->scratch + 2, known, (size_t)depth * 8);
    else if (depth)
        packed_frames(p, ev->size, c->scratch + 2, &depth);
    struct vh_rec_stack *s = (struct vh_rec_stack *)(void *)c->scratch;
    s->h = *ev->rec;
    s->h.type = VH_REC_STACK;
    s->h.a = (uint16_t)words;
    s->time = ((const struct vh_rec_stack *)(const void *)p)->time;
    ev->rec = &s->h;
    ev->size = words * 8;
}

/* Moves segment sg past PAD bytes to its next record and fills `e` with
 * that record's merge key; 0 when the segment has no record left. A time
 * that does not decode is taken as the cursor's: capture__next then finds
 * the record damaged. */
static int seg_peek(const struct capture *c, struct seg *sg, struct heap_ent *e)
{
    const uint8_t *m = c->map;
    uint64_t t = sg->cur.time;

    if (!c->v1)
        while (sg->pos < sg->end && m[sg->pos] == VH_REC_PAD)
            sg->pos++;
    sg->dec_n = 0;
    if (sg->pos >= sg->end)
        return 0;
    if (!c->v1 && vh_rec_is_compact(m[sg->pos])) {
        /* decoded whole, once: capture__next hands this out */
        sg->dec_n = vh_dec_compact(m + sg->pos, m + sg->end, &sg->cur, &sg->dec);
        if (sg->dec_n > 0) {
            t = sg->dec.alloc.time;
        } else {
            vh_dec_compact_time(m + sg->pos, m + sg->end, &sg->cur, &t);
        }
    } else if (sg->end - sg->pos >= MIN_RECORD)
        t = rd64(m + sg->pos + 8);
    e->time = t;
    e->pos = sg->pos;
    return 1;
}

void capture__rewind(struct capture *c)
{
    c->nheap = 0;
    c->npend = c->ipend = 0;
    c->consumed = 0;
    for (size_t i = 0; i < c->nsegs; i++) {
        struct seg *sg = &c->segs[i];
        sg->pos = sg->first;
        sg->tid = sg->tid0;
        sg->cur = sg->cur0;
        if (seg_peek(c, sg, &c->pend[c->npend])) {
            c->pend[c->npend].seg = i;
            c->npend++;
        }
    }
    qsort(c->pend, c->npend, sizeof *c->pend, by_key);
}

int capture__next(struct capture *c, struct vh_event *ev)
{
    for (;;) {
        activate(c);
        if (!c->nheap)
            return 0;
        struct seg *sg = &c->segs[c->heap[0].seg];
        const char *why = NULL;
        struct rec r;
        int cut, ok;

        /* Decoded again (a compact record by seg_peek): the bytes are
         * shared with whoever else has the file open, and pass one's
         * verdict must not be trusted blindly. */
        if (sg->dec_n > 0) {
            ev->dec = sg->dec;
            r = (struct rec){ .h = &ev->dec.h, .size = (size_t)sg->dec_n,
                              .time = ev->dec.alloc.time };
            ok = 1;
        } else if (sg->dec_n < 0) {
            why = vh_dec_why((int)sg->dec_n);
            ok = 0;
        } else {
            ok = rec_decode(c, sg->pos, sg->end, &sg->cur, &ev->dec, &r, &why, &cut);
        }
        if (!ok) {
            damage(c, sg->pos, "chunk %u: record at 0x%llx %s (changed while being read)",
                   sg->chunk, (unsigned long long)sg->pos, why);
            sg->end = sg->pos;
            c->heap[0] = c->heap[--c->nheap];
            sift_down(c, 0);
            continue;
        }
        if (r.h->type == VH_REC_THREAD)
            sg->tid = r.h->b;
        ev->rec = r.h;
        ev->size = r.size;
        if (r.h->type == VH_REC_STACK_PACKED || r.h->type == VH_REC_STACK_DIFF)
            unpack_one(c, ev);
        ev->time = r.time;
        ev->offset = sg->pos;
        ev->tid = sg->tid;
        ev->chunk = sg->chunk;
        sg->pos += r.size;
        c->consumed += r.size;
        if (!seg_peek(c, sg, &c->heap[0]))
            c->heap[0] = c->heap[--c->nheap];
        sift_down(c, 0);
        return 1;
    }
}

/* Header checks that make the file unreadable as a whole. */
static int header_check(const struct vh_capture_header *h, char *err, size_t errlen)
{
    if (memcmp(h->magic, VH_CAPTURE_MAGIC, sizeof h->magic)) {
        snprintf(err, errlen, "not a vheap capture (bad magic)");
        return -EINVAL;
    }
    if (h->version != VH_CAPTURE_VERSION && h->version != VH_CAPTURE_VERSION_V3 &&
        h->version != VH_CAPTURE_VERSION_V2 && h->version != VH_CAPTURE_VERSION_V1) {
        snprintf(err, errlen, "capture format version %u, this vheap reads %u to %u",
                 h->version, VH_CAPTURE_VERSION_V1, VH_CAPTURE_VERSION);
        return -EINVAL;
    }
    if (h->header_size != VH_HEADER_SIZE) {
        snprintf(err, errlen, "bad header at 0xc: header size %u, version %u has %u",
                 h->header_size, h->version, VH_HEADER_SIZE);
        return -EINVAL;
    }
    if (h->chunk_size < MIN_CHUNK_SIZE || h->chunk_size > MAX_CHUNK_SIZE ||
        (h->chunk_size & (h->chunk_size - 1))) {
        snprintf(err, errlen,
                 "bad header at 0x10: chunk size %u is not a power of two in 4 KiB..1 GiB",
                 h->chunk_size);
        return -EINVAL;
    }
    if (h->chunk_header_size != CHDR) {
        snprintf(err, errlen, "bad header at 0x14: chunk header size %u, version %u has %u",
                 h->chunk_header_size, h->version, (unsigned)CHDR);
        return -EINVAL;
    }
    if (h->chunk_offset < VH_HEADER_SIZE || (h->chunk_offset & 7) ||
        h->chunk_offset > (1ull << 62)) {
        snprintf(err, errlen, "bad header at 0x18: chunk offset 0x%llx",
                 (unsigned long long)h->chunk_offset);
        return -EINVAL;
    }
    return 0;
}

/* How many chunks each part of the file holds now, pass one over what
 * they hold past the last snapshot (all of it at open), the merge made
 * ready over that. A `follow` adds no damage the last snapshot reported
 * about the header. */
static int snapshot(struct capture *c, int follow)
{
    uint64_t claimed, holds = 0, n;
    int rc;

    claimed = __atomic_load_n(&c->hdr->chunks_claimed, __ATOMIC_ACQUIRE);
    if (c->size > c->hdr->chunk_offset)
        holds = (c->size - c->hdr->chunk_offset + c->hdr->chunk_size - 1) / c->hdr->chunk_size;
    n = claimed < holds ? claimed : holds;
    n = n < UINT32_MAX ? (uint32_t)n : UINT32_MAX - 1; /* reported below */
    if (n > c->nchunks) {
        if (vh_reserve(&c->at, &c->capat, (size_t)n, sizeof *c->at, 64))
            return -ENOMEM;
        memset(c->at + c->nchunks, 0, (size_t)(n - c->nchunks) * sizeof *c->at);
        c->nchunks = (uint32_t)n;
    }
    c->nsegs = 0;                  /* the last snapshot's were all read */
    c->total = 0;
    rc = scan_chunks(c);
    free(c->heap);
    free(c->pend);
    c->heap = c->pend = NULL;
    if (!rc && (!(c->heap = calloc(c->nsegs ? c->nsegs : 1, sizeof *c->heap)) ||
                !(c->pend = calloc(c->nsegs ? c->nsegs : 1, sizeof *c->pend))))
        rc = -ENOMEM;
    /* After the chunks, so that a chunk cut at the same offset keeps the
     * first message: it says which records were lost. */
    if (follow)
        ;                          /* said at open, if at all */
    else if (claimed > holds)
        damage(c, c->size, "truncated: header claims %llu chunks, file holds %llu (ends at 0x%llx)",
               (unsigned long long)claimed, (unsigned long long)holds,
               (unsigned long long)c->size);
    else if (claimed > c->nchunks)
        damage(c, c->size, "header at 0x20: %llu chunks is more than this reader handles",
               (unsigned long long)claimed);
    if (!rc)
        rc = stacks_finish(c);
    if (!rc)
        capture__rewind(c);
    return rc;
}

int capture__open(const char *path, struct capture **out, char *err, size_t errlen)
{
    struct capture *c = NULL;
    struct stat st;
    int fd = -1, rc = 0;

    *out = NULL;
    if (errlen)
        err[0] = '\0';
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused
     * below like any other file that is not regular. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 || fstat(fd, &st) < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = -EINVAL;
        snprintf(err, errlen, "not a regular file");
        goto out;
    }
    if ((uint64_t)st.st_size < VH_HEADER_SIZE) {
        char magic[8];
        rc = -EINVAL;
        if (st.st_size < (off_t)sizeof magic || pread(fd, magic, sizeof magic, 0) != sizeof magic ||
            memcmp(magic, VH_CAPTURE_MAGIC, sizeof magic))
            snprintf(err, errlen, "not a vheap capture (bad magic)");
        else
            snprintf(err, errlen, "truncated header: file ends at 0x%llx, header needs 0x%x",
                     (unsigned long long)st.st_size, VH_HEADER_SIZE);
        goto out;
    }
    c = calloc(1, sizeof *c);
    if (!c) {
        rc = -ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    c->fd = -1;
    c->size = c->maplen = (uint64_t)st.st_size;
    c->map = mmap(NULL, c->size, PROT_READ, MAP_SHARED, fd, 0);
    if (c->map == MAP_FAILED) {
        c->map = NULL;
        rc = -errno;
        snprintf(err, errlen, "cannot map: %s", strerror(errno));
        goto out;
    }
    c->hdr = (const void *)c->map;
    rc = header_check(c->hdr, err, errlen);
    if (rc)
        goto out;
    c->v1 = c->hdr->version == VH_CAPTURE_VERSION_V1;

    c->fd = fd;
    fd = -1;
    if ((rc = snapshot(c, 0))) {
        snprintf(err, errlen, "out of memory indexing the capture");
        goto out;
    }
    *out = c;
    c = NULL;
out:
    if (fd >= 0)
        close(fd);
    capture__close(c);
    return rc;
}

int capture__follow(struct capture *c, char *err, size_t errlen)
{
    struct stat st;
    int rc;

    if (errlen)
        err[0] = '\0';
    if (fstat(c->fd, &st) < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot stat: %s", strerror(errno));
        return rc;
    }
    /* A capture grows (the writer's extents); the truncation at exit keeps
     * every claimed chunk, and the pages past a smaller size are not read
     * (they would fault). */
    if ((uint64_t)st.st_size > c->maplen) {
        void *m = mremap((void *)c->map, c->maplen, (size_t)st.st_size, MREMAP_MAYMOVE);
        if (m == MAP_FAILED) {
            rc = -errno;
            snprintf(err, errlen, "cannot map: %s", strerror(errno));
            return rc;
        }
        c->map = m;
        c->hdr = m;
        c->maplen = (uint64_t)st.st_size;
    }
    if ((uint64_t)st.st_size < VH_HEADER_SIZE) {
        snprintf(err, errlen, "truncated to %llu bytes while being read",
                 (unsigned long long)st.st_size);
        return -EINVAL;
    }
    c->size = (uint64_t)st.st_size;
    free(c->dense);
    c->dense = NULL;
    c->ndense = 0;
    if ((rc = snapshot(c, 1)))
        snprintf(err, errlen, "out of memory indexing the capture");
    return rc;
}

const struct vh_capture_header *capture__header(const struct capture *c)
{
    return c->hdr;
}

uint64_t capture__file_size(const struct capture *c)
{
    return c->size;
}

uint32_t capture__chunks(const struct capture *c)
{
    return c->nchunks;
}

const char *capture__argv(const struct capture *c, size_t *len)
{
    uint32_t n = c->hdr->argv_len;
    *len = n < VH_ARGV_MAX ? n : VH_ARGV_MAX;
    return c->hdr->argv;
}

const uint64_t *capture__stack(const struct capture *c, uint32_t id, uint32_t *depth,
                               uint8_t *flags)
{
    const struct stack_ent *e = NULL;

    if (c->dense) {
        if (id < c->ndense && c->dense[id])
            e = &c->stacks[c->dense[id] - 1];
    } else {
        size_t lo = VH_PARTITION_POINT(i, c->nstacks, c->stacks[i].id < id);
        if (lo < c->nstacks && c->stacks[lo].id == id)
            e = &c->stacks[lo];
    }
    if (!e)
        return NULL;
    if (depth)
        *depth = e->depth;
    if (flags)
        *flags = ((const struct vh_rec_hdr *)(c->map + e->off))->flags;
    return ent_frames(c, e);
}

uint32_t capture__max_stack_id(const struct capture *c)
{
    return c->max_stack_id;
}

uint32_t capture__dense_stacks(const struct capture *c)
{
    return c->dense ? c->ndense : 0;
}

unsigned capture__damage(const struct capture *c, const char **first)
{
    if (first)
        *first = c->damage ? c->damage_msg : NULL;
    return c->damage;
}

uint64_t capture__progress(const struct capture *c, uint64_t *total)
{
    if (total)
        *total = c->total;
    return c->consumed;
}

const char *vh_event_text(const struct vh_event *ev, size_t *len)
{
    size_t at;
    const char *s;

    switch (ev->rec->type) {
    case VH_REC_MODULE: at = sizeof(struct vh_rec_module); break;
    case VH_REC_HEAP_CREATE: at = sizeof(struct vh_rec_heap); break;
    case VH_REC_MARK:
    case VH_REC_TAG: at = sizeof(struct vh_rec_label); break;
    default: *len = 0; return NULL;
    }
    if (ev->size < at) {
        *len = 0;
        return NULL;
    }
    s = (const char *)ev->rec + at;
    *len = strnlen(s, ev->size - at);
    return s;
}

void capture__close(struct capture *c)
{
    if (!c)
        return;
    if (c->map)
        munmap((void *)c->map, c->maplen);
    if (c->fd >= 0)
        close(c->fd);
    free(c->at);
    free(c->segs);
    free(c->heap);
    free(c->pend);
    free(c->stacks);
    free(c->dense);
    free(c->pool);
    free(c->scratch);
    free(c);
}
