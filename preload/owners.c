/* owners.c — ownership snapshots (vheap.h: vheap_own_*): an allocator's
 * marking walk names, for each live block it reaches, the owner path it
 * reached it from. Written as OWN_BEGIN, one OWNER a push, OWNED batches
 * of (address, bytes) varints and OWN_END (capture_format.h).
 *
 * One snapshot at a time, process-wide, held by the thread that began it:
 * a walk is one thread's loop, and the state (owner stack, the batch being
 * filled) lives in static memory, no malloc, no lock. Another thread's
 * calls meanwhile are counted and said once. vheap_owned is the walk's
 * per-block call: two varints appended to the batch, a record only when
 * the batch is full or the owner changes.
 *
 * Under sampling the analyzer knows only the sampled blocks, so an entry
 * for any other is noise (a |mass of a 47 MB loom names 2.5 M blocks, about
 * 10 MB of entries, for the few hundred a sample holds). A block whose
 * slot in the sampled set's count array is zero was sampled in no heap
 * (one byte read, never a false "no"): its entry is left out and its walk
 * bytes are added to the batch's one entry for address 0 (bytes the walk
 * counted that are no block), so each owner's walk total stays exact. */
#include <string.h>

#include "preload/internal.h"
#include "preload/vheap.h"

#define OWN_LABEL_MAX 255u
#define OWN_BATCH 4096u            /* entry bytes an OWNED record carries    */

static struct {
    struct vh_tls *walker;         /* atomic: the snapshot's thread, or NULL */
    uint32_t snapshot, heap;       /* its number (1, 2, ...) and heap        */
    uint32_t nodes;                /* OWNER records written (node ids)       */
    uint32_t depth;                /* pushes not yet popped                  */
    uint32_t stack[VHEAP_OWN_DEPTH]; /* node ids of the kept levels          */
    uint64_t entries, depth_lost;
    /* the batch: entries under `batch_node` since the last OWNED record */
    uint32_t batch_node, batch_count;
    uint64_t batch_prev;           /* previous entry's address               */
    uint64_t batch_unsampled;      /* walk bytes of the entries left out     */
    size_t batch_used;
    uint8_t batch[OWN_BATCH + 4 * VH_ULEB_MAX]; /* + the address-0 entry      */
} own;

static uint64_t own_strays;        /* calls outside a snapshot or its thread */

static void own_stray(const char *fn)
{
    static int said;
    vh_count(&own_strays);
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        vh_log("%s: no ownership snapshot open on this thread (vheap_own_begin); "
               "such calls are ignored", fn);
}

/* The gate of the malloc hooks (api.c's): 1 with the guard BUSY. */
static int own_enter(struct vh_tls *t, uint8_t *g)
{
    if (vh_unlikely(!vh_fast_ok(t)) && !vh_enter_slow(t))
        return 0;
    *g = vh_busy(t);
    return 1;
}

/* The node entries go to now: the innermost kept level, 0 at the top. */
static uint32_t own_node(void)
{
    uint32_t d = own.depth < VHEAP_OWN_DEPTH ? own.depth : VHEAP_OWN_DEPTH;
    return d ? own.stack[d - 1] : 0;
}

static void own_commit(struct vh_tls *t, const void *r)
{
    vh_rec_commit(t, (size_t)((const struct vh_rec_hdr *)r)->a * 8);
}

/* One (address, walk bytes) entry appended to the batch. */
static void own_put(uint64_t a, uint64_t bytes)
{
    uint8_t *q = own.batch + own.batch_used;
    q = vh_uleb_put(q, vh_zigzag(a - own.batch_prev));
    q = vh_uleb_put(q, bytes);
    own.batch_used = (size_t)(q - own.batch);
    own.batch_prev = a;
    own.batch_count++;
    own.entries++;                 /* written: OWN_END says how many */
}

/* The batch as one OWNED record, if it holds anything: the entries left
 * out under sampling as one for address 0 at its end. */
static void own_flush(struct vh_tls *t)
{
    struct vh_rec_owned *r;
    if (own.batch_unsampled) {
        own_put(0, own.batch_unsampled);
        own.batch_unsampled = 0;
    }
    if (!own.batch_count)
        return;
    r = vh_rec_text(t, VH_REC_OWNED, own.batch_node, sizeof *r, own.batch, own.batch_used, vh_now());
    if (r) {
        r->snapshot = own.snapshot;
        r->count = own.batch_count;
        own_commit(t, r);
    }
    own.batch_count = 0;
    own.batch_used = 0;
    own.batch_prev = 0;
}

static size_t own_label(const char *s, uint8_t *flags)
{
    size_t n = 0;
    if (s)
        while (n <= OWN_LABEL_MAX && s[n])
            n++;
    if (n > OWN_LABEL_MAX) {
        *flags |= VH_OWN_CUT;
        n = OWN_LABEL_MAX;
    }
    return n;
}

static void own_end_locked(struct vh_tls *t)
{
    struct vh_rec_own_end *r;
    uint64_t now;
    own_flush(t);
    now = vh_now();
    if ((r = vh_rec_begin(t, sizeof *r, now))) {
        *r = (struct vh_rec_own_end){
            .h = { .type = VH_REC_OWN_END, .a = sizeof *r / 8, .b = own.heap },
            .time = now, .snapshot = own.snapshot, .nodes = own.nodes,
            .entries = own.entries, .depth_lost = own.depth_lost };
        vh_rec_commit(t, sizeof *r);
    } else {
        vh_dropped();
    }
    __atomic_store_n(&own.walker, NULL, __ATOMIC_RELEASE);
}

void vh_owner_begin(int heap, const char *label)
{
    struct vh_tls *t = &vh_tls, *none = NULL;
    struct vh_rec_own *r;
    uint8_t g, flags = 0;
    if (!own_enter(t, &g))
        return;
    if (__atomic_load_n(&own.walker, __ATOMIC_ACQUIRE) == t)
        own_end_locked(t);         /* a snapshot still open ends first */
    if (!__atomic_compare_exchange_n(&own.walker, &none, t, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED)) {
        own_stray("vheap_own_begin (another thread's snapshot is open)");
        vh_unbusy(t, g);
        return;
    }
    own.snapshot++;
    own.heap = heap > 0 ? (uint32_t)heap : 0;
    own.nodes = own.depth = 0;
    own.entries = own.depth_lost = 0;
    own.batch_node = own.batch_count = 0;
    own.batch_used = 0;
    own.batch_prev = own.batch_unsampled = 0;
    size_t len = own_label(label, &flags);
    if ((r = vh_rec_text(t, VH_REC_OWN_BEGIN, own.heap, sizeof *r, label, len, vh_now()))) {
        r->h.flags = flags;
        r->snapshot = own.snapshot;
        own_commit(t, r);
    }
    vh_unbusy(t, g);
}

void vh_owner_push(const char *label)
{
    struct vh_tls *t = &vh_tls;
    struct vh_rec_owner *r;
    uint8_t g, flags = 0;
    if (!own_enter(t, &g))
        return;
    if (__atomic_load_n(&own.walker, __ATOMIC_ACQUIRE) != t) {
        own_stray("vheap_own_push");
    } else if (own.depth >= VHEAP_OWN_DEPTH) {
        own.depth++;               /* kept as the deepest kept level */
        own.depth_lost++;
    } else {
        size_t len = own_label(label, &flags);
        uint32_t parent = own_node(), id = ++own.nodes;
        own_flush(t);
        if ((r = vh_rec_text(t, VH_REC_OWNER, id, sizeof *r, label, len, vh_now()))) {
            r->h.flags = flags;
            r->snapshot = own.snapshot;
            r->parent = parent;
            own_commit(t, r);
        }
        own.stack[own.depth++] = id;
    }
    vh_unbusy(t, g);
}

void vh_owner_pop(void)
{
    struct vh_tls *t = &vh_tls;
    uint8_t g;
    if (!own_enter(t, &g))
        return;
    if (__atomic_load_n(&own.walker, __ATOMIC_ACQUIRE) != t)
        own_stray("vheap_own_pop");
    else if (own.depth)
        own.depth--;
    vh_unbusy(t, g);
}

void vh_owned(const void *p, size_t bytes)
{
    struct vh_tls *t = &vh_tls;
    uint64_t a = (uintptr_t)p;
    uint8_t g;
    if (!own_enter(t, &g))
        return;
    if (vh_unlikely(__atomic_load_n(&own.walker, __ATOMIC_RELAXED) != t)) {
        own_stray("vheap_owned");
        vh_unbusy(t, g);
        return;
    }
    uint32_t node = own_node();
    if (vh_unlikely(node != own.batch_node || own.batch_used >= OWN_BATCH)) {
        own_flush(t);
        own.batch_node = node;
    }
    if (vh_sample_rate && a && !vh_sampled_maybe(a))
        own.batch_unsampled += bytes;   /* sampled in no heap (above) */
    else
        own_put(a, bytes);
    vh_unbusy(t, g);
}

void vh_owner_end(void)
{
    struct vh_tls *t = &vh_tls;
    uint8_t g;
    if (!own_enter(t, &g))
        return;
    if (__atomic_load_n(&own.walker, __ATOMIC_ACQUIRE) != t)
        own_stray("vheap_own_end");
    else
        own_end_locked(t);
    vh_unbusy(t, g);
}
