/* api.c — the shim side of the custom-allocator API (preload/vheap.h) and of
 * heaptrack's annotation API: heap ids and their nesting, interned tags and
 * the per-thread tag stack, marks and moves, written as capture records.
 *
 * Rules: never malloc (tables live in one lazily mmap'd region), never touch
 * the memory the program reports (pointers are numbers here), never block in
 * a way a signal handler could deadlock on. Every entry goes through the same
 * gate as the malloc hooks (vh_fast_ok / vh_enter_slow) and runs its
 * bookkeeping at guard BUSY, so a signal handler that calls the API while this
 * thread holds api_lock is passed through and counted as nested, never spins
 * on the lock. The tag stack itself is updated outside the gate so that
 * pushes and pops stay balanced whatever is recorded. Lock order: api_lock,
 * then the capture's chunk lock (taken inside vh_rec_begin). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "preload/internal.h"
#include "preload/lock.h"
#include "preload/upcall.h"
#include "preload/vheap.h"

#define HEAP_MAX 65535u            /* heap ids are u16 in the records         */
#define HEAP_NAME 64u              /* kept for re-emission after fork         */
#define TAG_MAX 65535u             /* tag ids are u16 in the records          */
#define TAG_SLOTS (1u << 17)       /* open addressing, load <= 1/2            */
#define LABEL_MAX 255u             /* longer names and labels are truncated   */
#define TAG_OUTER ((uint32_t)VHEAP_TAG_OUTER) /* tag levels kept: the outer  */
#define TAG_INNER ((uint32_t)VHEAP_TAG_INNER) /* and a ring of the innermost */
#define TAG_DEEP (1u << 20)        /* levels past TAG_OUTER a thread's mapped
                                      stack keeps (2 MiB reserved, touched
                                      only as deep as it goes)            */

struct heap_slot {
    uint32_t live;                 /* atomic: read without the lock          */
    uint32_t sampled;              /* atomic: its blocks in the sampled set  */
    uint16_t parent, first_child, next_sibling;
    uint16_t written;              /* atomic: its HEAP_CREATE is in the
                                      capture (not while paused; sampled:
                                      not before its first record)       */
    uint32_t flags;                /* enum vh_heap_flags: a built-in heap */
    uint64_t base, size;
    char name[HEAP_NAME];
};

struct tag_slot {
    uint64_t hash;
    uint32_t off;                  /* label's offset in `labels`             */
    uint32_t id;                   /* atomic, published last; 0 = empty      */
};

/* ---- tables: one mmap'd region, created on first need ------------------- */
static vh_lock_t api_lock;
static int tables_state;           /* atomic: 0 none, 1 mapped, -1 failed   */
static struct heap_slot *heaps;    /* [HEAP_MAX + 1], index = id             */
static struct tag_slot *tag_slots; /* [TAG_SLOTS]                            */
static uint32_t *tag_off;          /* [TAG_MAX + 1]: id -> label offset      */
static char *labels;               /* TAG_MAX * (LABEL_MAX + 1) bytes        */
static uint32_t labels_used, ntags;
static uint32_t next_heap = 1, heap_cursor = 1;
static int ht_heap;                /* atomic: heaptrack-api heap, 0 = none  */

/* Counted, and said once each on stderr: the capture has no field for them. */
static uint64_t tag_levels_lost, tags_lost, heaps_lost, bad_heap_calls;

static void say_once(int *said, const char *what)
{
    if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
        vh_log("%s", what);
}

static int tables_map(void)
{
    int st = __atomic_load_n(&tables_state, __ATOMIC_ACQUIRE);
    if (vh_likely(st))
        return st > 0 ? 0 : -1;
    size_t heap_bytes = (HEAP_MAX + 1) * sizeof(struct heap_slot);
    size_t slot_bytes = TAG_SLOTS * sizeof(struct tag_slot);
    size_t off_bytes = (TAG_MAX + 1) * sizeof(uint32_t);
    size_t label_bytes = (size_t)TAG_MAX * (LABEL_MAX + 1);
    size_t total = heap_bytes + slot_bytes + off_bytes + label_bytes;
    int e = errno;
    /* NORESERVE: only the pages actually used count (a few KiB usually). */
    char *p = vh_sys_mmap(NULL, total, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    errno = e;
    if (p == MAP_FAILED) {
        static int said;
        say_once(&said, "cannot map the custom-heap tables; heaps and tags are not recorded");
        __atomic_store_n(&tables_state, -1, __ATOMIC_RELEASE);
        return -1;
    }
    heaps = (struct heap_slot *)p;
    tag_slots = (struct tag_slot *)(p + heap_bytes);
    tag_off = (uint32_t *)(p + heap_bytes + slot_bytes);
    labels = p + heap_bytes + slot_bytes + off_bytes;
    __atomic_store_n(&tables_state, 1, __ATOMIC_RELEASE);
    return 0;
}

/* ---- records --------------------------------------------------------------- */
static size_t text_len(const char *s)
{
    size_t n = 0;
    if (s)
        while (n < LABEL_MAX && s[n])
            n++;
    return n;
}

static int put_heap_create(struct vh_tls *t, uint32_t id, const struct heap_slot *h,
                           const char *name, size_t len, uint64_t time)
{
    struct vh_rec_heap *r = vh_rec_text(t, VH_REC_HEAP_CREATE, id, sizeof *r, name, len, time);
    if (!r)
        return -1;
    r->parent = h->parent;
    r->heap_flags = h->flags;
    r->base = h->base;
    r->size = h->size;
    vh_rec_commit(t, (size_t)r->h.a * 8);
    return 0;
}

static void put_move(struct vh_tls *t, uint16_t heap, uint64_t from, uint64_t to,
                     uint64_t time)
{
    struct vh_rec_move *r = vh_rec_begin(t, sizeof *r, time);
    if (!r) {
        vh_dropped();
        return;
    }
    r->h = (struct vh_rec_hdr){ .type = VH_REC_MOVE, .a = heap };
    r->time = time;
    r->from = from;
    r->to = to;
    vh_rec_commit(t, sizeof *r);
}

/* ---- the gate --------------------------------------------------------------- */
/* 1: record (guard is BUSY, *g holds the old guard); 0: pass, already
 * counted where it must be (nested, dropped, not recording). */
VH_ALWAYS_INLINE int api_enter(struct vh_tls *t, uint8_t *g)
{
    if (vh_unlikely(!vh_fast_ok(t)) && !vh_enter_slow(t))
        return 0;
    *g = vh_busy(t);
    return 1;
}

/* Paused (VHEAP_START=paused, ctl stop), outside the shim: heaps are still
 * made and destroyed in the table, unrecorded, and announced when recording
 * starts (api_resume): a program that makes its arena once, at start,
 * has it once switched on. 1 with the guard BUSY. */
static int api_enter_paused(struct vh_tls *t, uint8_t *g)
{
    if (__atomic_load_n(&vh_mode, __ATOMIC_ACQUIRE) != VH_MODE_PAUSED ||
        t->guard == VH_G_BUSY || t->own || t->in_fork)
        return 0;
    *g = vh_busy(t);
    return 1;
}

VH_ALWAYS_INLINE void api_leave(struct vh_tls *t, uint8_t g, uint64_t now)
{
    if (vh_unlikely(now >= __atomic_load_n(&vh_next_rss, __ATOMIC_RELAXED)))
        vh_rss_tick(t, now);
    vh_unbusy(t, g);
}

static int heap_live(int heap)
{
    if (heap <= 0 || (unsigned)heap > HEAP_MAX ||
        __atomic_load_n(&tables_state, __ATOMIC_ACQUIRE) <= 0)
        return 0;
    return __atomic_load_n(&heaps[heap].live, __ATOMIC_RELAXED) != 0;
}

static void bad_heap(const char *fn, int heap)
{
    static int said;
    vh_count(&bad_heap_calls);
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        vh_log("%s: heap %d does not exist (destroyed, or not made by "
               "vheap_heap_create); such calls are ignored", fn, heap);
}

/* ---- heaps ------------------------------------------------------------------- */
/* Under sampling a heap's HEAP_CREATE is written only when a record first
 * needs it (its first sampled block), its enclosing heaps' first: Vere
 * pushes and pops a road or more per event, and a road none of whose
 * blocks is sampled changes nothing a sample can show; its create and
 * destroy were most of what was left of a sampled ship's capture. Such a
 * heap's record carries the time it was written and a name of at most 63
 * bytes (what the slot keeps). Without sampling it is written at once.
 * Under api_lock. */
static void heap_write(struct vh_tls *t, uint32_t id, uint64_t now)
{
    struct heap_slot *h = &heaps[id];
    if (__atomic_load_n(&h->written, __ATOMIC_RELAXED))
        return;
    if (h->parent)
        heap_write(t, h->parent, now);
    if (!put_heap_create(t, id, h, h->name, strlen(h->name), now))
        __atomic_store_n(&h->written, 1, __ATOMIC_RELEASE);
}

/* Inside the gate: `heap` is written before a record names it. */
VH_ALWAYS_INLINE void heap_needed(struct vh_tls *t, int heap)
{
    if (vh_likely(__atomic_load_n(&heaps[heap].written, __ATOMIC_ACQUIRE)))
        return;
    vh_lock(&api_lock);
    heap_write(t, (uint32_t)heap, vh_now());
    vh_unlock(&api_lock);
}

/* A free id, or 0. Ids count up first; after 65535 heaps, the ids of
 * destroyed heaps are reused (a later HEAP_CREATE with the same id begins a
 * new heap). Under api_lock. */
static uint32_t heap_id_new(void)
{
    if (next_heap <= HEAP_MAX)
        return next_heap++;
    for (uint32_t n = 0; n < HEAP_MAX; n++) {
        uint32_t id = heap_cursor;
        heap_cursor = heap_cursor == HEAP_MAX ? 1 : heap_cursor + 1;
        if (!heaps[id].live)
            return id;
    }
    return 0;
}

static int heap_create_locked(struct vh_tls *t, const char *name, int parent, void *base,
                              size_t size, int record)
{
    uint32_t id = heap_id_new();
    if (!id) {
        static int said;
        vh_count(&heaps_lost);
        say_once(&said, "more than 65535 custom heaps alive at once; further heaps are "
                        "not recorded");
        return 0;
    }
    struct heap_slot *h = &heaps[id];
    size_t len = text_len(name);
    h->parent = heap_live(parent) ? (uint16_t)parent : 0;
    if (parent && !h->parent)
        bad_heap("vheap_heap_create (parent)", parent);
    h->first_child = 0;
    __atomic_store_n(&h->sampled, 0, __ATOMIC_RELAXED);
    h->next_sibling = h->parent ? heaps[h->parent].first_child : 0;
    if (h->parent)
        heaps[h->parent].first_child = (uint16_t)id;
    h->base = (uintptr_t)base;
    h->size = size;
    h->flags = 0;
    vh_region_heap_gone((uint16_t)id);     /* none yet, whatever an old id had */
    size_t keep = len < HEAP_NAME - 1 ? len : HEAP_NAME - 1;
    memcpy(h->name, name ? name : "", keep);
    h->name[keep] = '\0';
    __atomic_store_n(&h->written, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&h->live, 1, __ATOMIC_RELEASE);
    /* Paused: api_resume writes it; sampled: its first record (above). */
    if (record && !vh_sample_rate && !put_heap_create(t, id, h, name ? name : "", len, vh_now()))
        __atomic_store_n(&h->written, 1, __ATOMIC_RELEASE);
    return (int)id;
}

/* Sweeps of the sampled set for the custom heaps (sample.c): the keys of
 * destroyed heaps go, those in a freed range go, those in a moved range
 * move. Without them, keys left behind would fill the set (Vere pops a
 * road per event). Under api_lock. */
static uint64_t sweep_dead(uint64_t key, void *arg)
{
    (void)arg;
    uint32_t h = (uint32_t)(key >> 48);
    return h && !__atomic_load_n(&heaps[h].live, __ATOMIC_RELAXED) ? 0 : key;
}

struct sweep_range {
    uint16_t heap;
    uint64_t from, to, len;
    int move;
};

static uint64_t sweep_range(uint64_t key, void *arg)
{
    const struct sweep_range *r = arg;
    uint64_t a = key & ((1ull << 48) - 1);
    if ((uint16_t)(key >> 48) != r->heap || a - r->from >= r->len)
        return key;
    if (!r->move) {
        __atomic_fetch_sub(&heaps[r->heap].sampled, 1, __ATOMIC_RELAXED);
        return 0;
    }
    return vh_sample_key(r->heap, a - r->from + r->to);
}

/* The sampled blocks the heap tree `id` holds (before its release). */
static uint64_t tree_sampled(uint32_t id)
{
    uint64_t n = __atomic_load_n(&heaps[id].sampled, __ATOMIC_RELAXED);
    for (uint32_t c = heaps[id].first_child; c; c = heaps[c].next_sibling)
        n += tree_sampled(c);
    return n;
}

static int api_heap_create(const char *name, int parent, void *base, size_t size)
{
    struct vh_tls *t = &vh_tls;
    uint8_t g;
    int id = 0;
    int record = api_enter(t, &g);
    if (!record && !api_enter_paused(t, &g))
        return 0;
    if (tables_map() == 0) {
        vh_lock(&api_lock);
        id = heap_create_locked(t, name, parent, base, size, record);
        vh_unlock(&api_lock);
        if (id > 0 && !parent && base && size)
            vh_mapped_claim(t, (uintptr_t)base, (uintptr_t)base + size, record);
    }
    api_leave(t, g, 0);
    return id;
}

/* Frees `id` and every heap nested in it: depth first, detaching each child
 * as it is entered, so no recursion and no extra memory. `recorded`: the
 * capture has their end (else api_resume writes it). Under api_lock. */
static void heap_release_tree(uint32_t id, int recorded)
{
    uint32_t p = heaps[id].parent;
    if (p) {
        uint16_t *link = &heaps[p].first_child;
        while (*link && *link != id)
            link = &heaps[*link].next_sibling;
        if (*link)
            *link = heaps[id].next_sibling;
    }
    uint32_t n = id;
    for (;;) {
        uint32_t c = heaps[n].first_child;
        if (c) {
            heaps[n].first_child = heaps[c].next_sibling;
            n = c;
            continue;
        }
        __atomic_store_n(&heaps[n].live, 0, __ATOMIC_RELEASE);
        vh_region_heap_gone((uint16_t)n);
        if (recorded)
            __atomic_store_n(&heaps[n].written, 0, __ATOMIC_RELAXED);
        if (n == id)
            break;
        n = heaps[n].parent;
    }
}

static void api_heap_destroy(int heap)
{
    struct vh_tls *t = &vh_tls;
    uint8_t g;
    int record;
    if (heap == 0 || (!(record = api_enter(t, &g)) && !api_enter_paused(t, &g)))
        return;
    uint64_t now = 0;
    if (tables_map() == 0) {
        vh_lock(&api_lock);
        if (heap_live(heap)) {
            if (!heaps[heap].parent && heaps[heap].base && heaps[heap].size)
                vh_mapped_unclaim(heaps[heap].base, heaps[heap].base + heaps[heap].size);
            /* One record: the reader frees the nested heaps' blocks too.
             * None for a heap never written (nor were those nested in it).
             * Paused, a written heap stays so: api_resume says it was
             * destroyed. */
            now = vh_now();
            if (record && __atomic_load_n(&heaps[heap].written, __ATOMIC_RELAXED))
                vh_record_time(t, VH_REC_HEAP_DESTROY, (uint16_t)heap, 0, now);
            int sweep = vh_sample_rate && tree_sampled((uint32_t)heap);
            heap_release_tree((uint32_t)heap, record);
            if (sweep)
                vh_sampled_sweep(sweep_dead, NULL);
        } else {
            bad_heap("vheap_heap_destroy", heap);
        }
        vh_unlock(&api_lock);
    }
    api_leave(t, g, now);
}

/* ---- blocks -------------------------------------------------------------------- */
/* Records an allocation in `heap` with the caller's stack (the unwinder drops
 * every leading frame inside libvheap: the first frame is the caller's). */
/* Under sampling: whether this allocation or resize is recorded, the set
 * kept (sample.c). */
static int sampled_block(struct vh_tls *t, int heap, unsigned type, const void *p, size_t size)
{
    uint64_t key = vh_sample_key((uint16_t)heap, (uintptr_t)p);
    if (type == VH_REC_RESIZE) {
        if (!vh_sampled_take(key))
            return 0;
        if (vh_sampled_add(key))
            return 1;
        __atomic_fetch_sub(&heaps[heap].sampled, 1, __ATOMIC_RELAXED);
        return 0;
    }
    if (!vh_sampled(t, size))
        return 0;
    if (p && !vh_sample_keep(key))
        return 0;
    if (p)
        __atomic_fetch_add(&heaps[heap].sampled, 1, __ATOMIC_RELAXED);
    return 1;
}

/* A sampled block of `heap` leaves the set: 1 if it was there. */
static int sampled_take(int heap, const void *p)
{
    if (!vh_sampled_take(vh_sample_key((uint16_t)heap, (uintptr_t)p)))
        return 0;
    __atomic_fetch_sub(&heaps[heap].sampled, 1, __ATOMIC_RELAXED);
    return 1;
}



static void block_alloc(int heap, unsigned func, unsigned type, unsigned flags,
                        const void *p, size_t size, size_t usable)
{
    struct vh_tls *t = &vh_tls;
    uint8_t g;
    if (heap == 0 || !api_enter(t, &g))
        return;
    uint64_t now = 0;
    if (heap_live(heap)) {
        /* Sampling, as the malloc hooks do: an in-place resize is recorded
         * when its block was sampled, an allocation when its size is. */
        if (vh_unlikely(vh_sample_rate) && !sampled_block(t, heap, type, p, size)) {
            api_leave(t, g, now);
            return;
        }
        heap_needed(t, heap);
        uint32_t stack = vh_stack_here(t);
        now = vh_now();
        if (!p)
            flags |= VH_RF_FAILED;
        vh_record_alloc(t, type, (uint16_t)heap, func, flags, (uintptr_t)p, size,
                        p ? (usable > size ? usable : size) : 0, stack, t->tag, now);
    } else {
        bad_heap(func == VH_FN_HEAPTRACK_API ? "heaptrack_malloc" : "vheap_alloc", heap);
    }
    api_leave(t, g, now);
}

static void block_free(int heap, unsigned func, unsigned flags, const void *p)
{
    struct vh_tls *t = &vh_tls;
    uint8_t g;
    if (heap == 0 || !p || !api_enter(t, &g))
        return;
    uint64_t now = 0;
    if (heap_live(heap)) {
        if (vh_unlikely(vh_sample_rate) && !sampled_take(heap, p)) {
            api_leave(t, g, now);
            return;
        }
        now = vh_now();
        vh_record_free(t, (uint16_t)heap, func, flags, (uintptr_t)p, now);
    } else {
        bad_heap(func == VH_FN_HEAPTRACK_API ? "heaptrack_free" : "vheap_free", heap);
    }
    api_leave(t, g, now);
}

/* Same shapes as realloc's records: in place = RESIZE; moved = FREE and
 * ALLOC, both flagged realloc; old NULL = alloc; new NULL and size 0 = free;
 * new NULL otherwise = a failed request, the old block untouched. */
static void block_realloc(int heap, unsigned func, const void *old, const void *p,
                          size_t size, size_t usable)
{
    if (!old)
        block_alloc(heap, func, VH_REC_ALLOC, 0, p, size, usable);
    else if (!p && size == 0)
        block_free(heap, func, 0, old);
    else if (!p)
        block_alloc(heap, func, VH_REC_ALLOC, 0, NULL, size, 0);
    else if (p == old)
        block_alloc(heap, func, VH_REC_RESIZE, 0, p, size, usable);
    else {
        block_free(heap, func, VH_RF_REALLOC, old);
        block_alloc(heap, func, VH_REC_ALLOC, VH_RF_REALLOC, p, size, usable);
    }
}

static void api_alloc(int heap, const void *p, size_t size, size_t usable)
{
    block_alloc(heap, VH_FN_CUSTOM, VH_REC_ALLOC, 0, p, size, usable);
}

static void api_free(int heap, const void *p)
{
    block_free(heap, VH_FN_CUSTOM, 0, p);
}

static void api_realloc(int heap, const void *old, const void *p, size_t size, size_t usable)
{
    block_realloc(heap, VH_FN_CUSTOM, old, p, size, usable);
}

static void api_move(int heap, const void *from, const void *to)
{
    struct vh_tls *t = &vh_tls;
    uint8_t g;
    if (heap == 0 || from == to || !api_enter(t, &g))
        return;
    uint64_t now = 0;
    if (heap_live(heap)) {
        if (vh_unlikely(vh_sample_rate)) {   /* a sampled block moves in the set */
            if (!sampled_take(heap, from)) {
                api_leave(t, g, now);
                return;
            }
            if (vh_sample_keep(vh_sample_key((uint16_t)heap, (uintptr_t)to)))
                __atomic_fetch_add(&heaps[heap].sampled, 1, __ATOMIC_RELAXED);
        }
        now = vh_now();
        put_move(t, (uint16_t)heap, (uintptr_t)from, (uintptr_t)to, now);
    } else {
        bad_heap("vheap_move", heap);
    }
    api_leave(t, g, now);
}

/* ---- marks and tags ------------------------------------------------------------- */
/* A mark lands while paused too, as a `ctl mark` does: marks are how a
 * user finds the phases, also the ones left unrecorded, and cost one
 * record. */
static void api_mark(const char *label)
{
    struct vh_tls *t = &vh_tls;
    uint8_t g;
    int on = api_enter(t, &g);
    if (!on && !api_enter_paused(t, &g))
        return;
    uint64_t now = vh_now();
    vh_record_label(t, VH_REC_MARK, 0, label ? label : "", text_len(label), now);
    api_leave(t, g, on ? now : 0); /* paused: no RSS tick */
}

static uint64_t label_hash(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h | 1;                  /* never 0 */
}

/* The id of a label already interned, or 0. Lock-free: a slot's id is
 * published after its hash and text. */
static uint32_t tag_find(const char *s, size_t len, uint64_t h, uint32_t *free_slot)
{
    for (uint32_t i = (uint32_t)h & (TAG_SLOTS - 1);; i = (i + 1) & (TAG_SLOTS - 1)) {
        uint32_t id = __atomic_load_n(&tag_slots[i].id, __ATOMIC_ACQUIRE);
        if (!id) {
            if (free_slot)
                *free_slot = i;
            return 0;
        }
        if (tag_slots[i].hash == h) {
            const char *l = labels + tag_slots[i].off;
            if (!memcmp(l, s, len) && l[len] == '\0')
                return id;
        }
    }
}

/* Interns a label: one TAG record the first time. 0 when the table is full.
 * Called inside the gate (guard BUSY). */
static uint32_t tag_intern(struct vh_tls *t, const char *s)
{
    size_t len = text_len(s);
    uint64_t h = label_hash(s ? s : "", len);
    uint32_t slot = 0, id;
    if (!s)
        s = "";
    if ((id = tag_find(s, len, h, NULL)))
        return id;
    vh_lock(&api_lock);
    id = tag_find(s, len, h, &slot);
    if (!id) {
        if (ntags == TAG_MAX) {
            static int said;
            vh_count(&tags_lost);
            say_once(&said, "more than 65535 distinct tags; further tags are not recorded");
        } else {
            id = ++ntags;
            uint32_t off = labels_used;
            memcpy(labels + off, s, len);
            labels[off + len] = '\0';
            labels_used += (uint32_t)len + 1;
            tag_off[id] = off;
            vh_record_label(t, VH_REC_TAG, id, s, len, vh_now());
            tag_slots[slot].hash = h;
            tag_slots[slot].off = off;
            __atomic_store_n(&tag_slots[slot].id, id, __ATOMIC_RELEASE);
        }
    }
    vh_unlock(&api_lock);
    return id;
}

/* The per-thread stack (vheap.h: VHEAP_TAG_OUTER). Levels below TAG_OUTER
 * live in `outer`; deeper ones in `deep`, mapped the first time the thread
 * goes past TAG_OUTER (a boot of Vere nests jets past 256 levels, and each
 * level popped back to must still name its jet), every level kept up to
 * TAG_OUTER + TAG_DEEP; a level beyond that, popped back to, carries level
 * TAG_OUTER's tag. Only when that mapping fails: level d >= TAG_OUTER in
 * ring[d % TAG_INNER], and is
 * known while d >= known_lo: a push that overwrites the ring slot of a
 * level still below it raises known_lo past that level; a pop to a level
 * below known_lo finds it lost (known_lo = the depth: only levels pushed
 * from here on are known). A lost level's allocations carry level
 * TAG_OUTER's tag, the outer attribution. The order of the stores makes a
 * push or pop that a signal handler interrupts (and whose handler pushes
 * and pops in balance) come out right. */
struct tag_stack {
    uint32_t depth, known_lo;      /* known_lo: 0 means TAG_OUTER            */
    uint16_t outer[TAG_OUTER];
    uint16_t ring[TAG_INNER];
    uint16_t *deep;                /* levels TAG_OUTER on; NULL: the ring    */
    int deep_failed;               /* its mmap failed: the ring for good     */
};
static __thread struct tag_stack tag_stack __attribute__((tls_model("initial-exec")));

/* Maps the thread's deep levels: one system call, once a thread (a signal
 * handler that interrupts it and maps its own leaves one mapping unused). */
static uint16_t *tag_deep(struct tag_stack *st)
{
    if (!st->deep && !st->deep_failed) {
        void *p = vh_sys_mmap(NULL, TAG_DEEP * sizeof(uint16_t), PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            st->deep_failed = 1;
        else
            st->deep = p;
    }
    return st->deep;
}

/* The exiting thread's tag stack: its deep levels unmapped. */
static void api_thread_end(void)
{
    struct tag_stack *st = &tag_stack;
    uint16_t *deep = st->deep;

    st->depth = 0;
    st->deep = NULL;
    if (deep)
        vh_sys_munmap(deep, TAG_DEEP * sizeof(uint16_t));
}

/* The tag of level d (1-based depth d: the level d - 1 holds it) or of the
 * outer attribution when that level lost its tag. */
static uint16_t tag_at(const struct tag_stack *st, uint32_t d)
{
    uint32_t lo = st->known_lo ? st->known_lo : TAG_OUTER;
    if (!d)
        return 0;
    if (d - 1 < TAG_OUTER)
        return st->outer[d - 1];
    if (st->deep)
        return d - 1 - TAG_OUTER < TAG_DEEP ? st->deep[d - 1 - TAG_OUTER]
                                            : st->outer[TAG_OUTER - 1];
    if (d - 1 >= lo)
        return st->ring[(d - 1) % TAG_INNER];
    return st->outer[TAG_OUTER - 1];
}

static void api_tag_push(const char *label)
{
    struct vh_tls *t = &vh_tls;
    struct tag_stack *st = &tag_stack;
    uint32_t id = 0;
    uint8_t g;
    if (api_enter(t, &g)) {
        if (tables_map() == 0)
            id = tag_intern(t, label);
        vh_unbusy(t, g);
    } else if (__atomic_load_n(&tables_state, __ATOMIC_ACQUIRE) > 0) {
        /* nested or not recording: an interned label still gets its id */
        size_t len = text_len(label);
        id = tag_find(label ? label : "", len, label_hash(label ? label : "", len), NULL);
    }
    uint32_t d = st->depth;
    if (d < TAG_OUTER) {
        st->outer[d] = (uint16_t)id;
    } else if (tag_deep(st)) {
        if (d - TAG_OUTER < TAG_DEEP)
            st->deep[d - TAG_OUTER] = (uint16_t)id;
    } else {
        uint32_t lo = st->known_lo ? st->known_lo : TAG_OUTER;
        if (d >= lo + TAG_INNER)   /* the ring slot of level d - TAG_INNER */
            st->known_lo = d - TAG_INNER + 1;
        st->ring[d % TAG_INNER] = (uint16_t)id;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    st->depth = d + 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t->tag = (uint16_t)id;
}

static void api_tag_pop(void)
{
    struct tag_stack *st = &tag_stack;
    uint32_t d = st->depth;
    if (!d)
        return;                    /* pop on an empty stack: nothing */
    st->depth = --d;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (d <= TAG_OUTER) {
        st->known_lo = 0;          /* back among the outer levels: the ring anew */
    } else if (st->deep ? d - 1 - TAG_OUTER >= TAG_DEEP
                        : d - 1 < (st->known_lo ? st->known_lo : TAG_OUTER)) {
        static int said;
        st->known_lo = d;          /* level d - 1 lost its tag; d is next */
        vh_count(&tag_levels_lost);
        say_once(&said, "tag stack deeper than the levels kept (VHEAP_TAG_OUTER + "
                        "VHEAP_TAG_INNER = 256 without memory for more, else 32 + 1048576): "
                        "a level whose tag was not kept carries the 32nd level's tag");
    }
    vh_tls.tag = tag_at(st, d);
}

/* ---- the exported table ----------------------------------------------------------- */
/* appended members, defined at the end of this file */
static void api_range(int heap, unsigned op, const void *from, const void *to, size_t len);
static void api_region(int heap, unsigned id, unsigned kind, const void *base, size_t size);
static void api_tag_push2(const char *first, const char *second);
static int api_tag_depth(void);
static void api_tag_unwind(int depth);
static unsigned api_starts(void);

/* vheap_start / vheap_stop / vheap_recording: want 1, 0, or -1 to ask. */
static int api_record(int want)
{
    if (want < 0)
        return __atomic_load_n(&vh_mode, __ATOMIC_ACQUIRE) == VH_MODE_ON;
    return vh_recording_set(&vh_tls, want != 0);
}

VH_EXPORT const struct vheap_api vheap_api_v1 = {
    .size = sizeof(struct vheap_api),
    .version = 1,
    .heap_create = api_heap_create,
    .heap_destroy = api_heap_destroy,
    .block_alloc = api_alloc,
    .block_free = api_free,
    .block_realloc = api_realloc,
    .block_move = api_move,
    .mark = api_mark,
    .tag_push = api_tag_push,
    .tag_pop = api_tag_pop,
    .range = api_range,
    .region = api_region,
    .tag_push2 = api_tag_push2,
    .tag_depth = api_tag_depth,
    .tag_unwind = api_tag_unwind,
    .starts = api_starts,
    .record = api_record,
    .own_begin = vh_owner_begin,
    .own_push = vh_owner_push,
    .own_pop = vh_owner_pop,
    .owned = vh_owned,
    .own_end = vh_owner_end,
};

/* ---- heaptrack's API (heaptrack_api.h): its blocks get a heap of their own ---- */
static int ht_heap_id(void)
{
    int id = __atomic_load_n(&ht_heap, __ATOMIC_ACQUIRE);
    if (vh_likely(id))
        return id;
    struct vh_tls *t = &vh_tls;
    uint8_t g;
    if (!api_enter(t, &g))
        return 0;
    if (tables_map() == 0) {
        vh_lock(&api_lock);
        id = __atomic_load_n(&ht_heap, __ATOMIC_ACQUIRE);
        if (!id) {
            id = heap_create_locked(t, "heaptrack-api", 0, NULL, 0, 1);
            __atomic_store_n(&ht_heap, id, __ATOMIC_RELEASE);
        }
        vh_unlock(&api_lock);
    }
    vh_unbusy(t, g);
    return id;
}

VH_EXPORT void heaptrack_malloc(void *ptr, size_t size)
{
    if (ptr)
        block_alloc(ht_heap_id(), VH_FN_HEAPTRACK_API, VH_REC_ALLOC, 0, ptr, size, size);
}

VH_EXPORT void heaptrack_free(void *ptr)
{
    if (ptr)
        block_free(ht_heap_id(), VH_FN_HEAPTRACK_API, 0, ptr);
}

VH_EXPORT void heaptrack_realloc(void *ptr_in, size_t size, void *ptr_out)
{
    if (ptr_in || ptr_out)
        block_realloc(ht_heap_id(), VH_FN_HEAPTRACK_API, ptr_in, ptr_out, size, size);
}

/* ---- fork --------------------------------------------------------------------------- */
/* Around fork the tables stay whole; the child re-describes live heaps
 * and tags in its new capture (api_fork_child). */
static void api_fork_prepare(void)
{
    vh_lock(&api_lock);
}

static void api_fork_parent(void)
{
    vh_unlock(&api_lock);
}

static void put_region(struct vh_tls *t, uint16_t heap, uint32_t id, uint8_t kind,
                       uint64_t base, uint64_t size, uint64_t now);

struct reemit {
    struct vh_tls *t;
    uint64_t now;
};

static void reemit_region(uint16_t heap, uint32_t id, uint8_t kind, uint64_t base,
                          uint64_t size, void *arg)
{
    struct reemit *r = arg;
    put_region(r->t, heap, id, kind, base, size, r->now);
}

/* HEAP_CREATE for the live heaps, parents first (a parent's id is not
 * always below its children's once ids are reused: in tree order from the
 * roots). `child`: a fork child's capture, which starts empty — every heap
 * its parent had written, with its regions, again; else (recording
 * starts) every heap not yet written, unless sampled, where a heap is
 * written at its first record. Under api_lock or alone (fork child). */
static void announce_live(struct vh_tls *t, uint64_t now, int child)
{
    uint32_t top = next_heap <= HEAP_MAX ? next_heap : HEAP_MAX + 1;
    for (uint32_t id = 1; id < top; id++) {
        if (!heaps[id].live || heaps[id].parent)
            continue;
        uint32_t n = id;
        for (;;) {
            struct heap_slot *h = &heaps[n];
            if (child && h->written) {  /* (a child written: its parent too) */
                put_heap_create(t, n, h, h->name, strlen(h->name), now);
                vh_region_each((uint16_t)n, reemit_region, &(struct reemit){ t, now });
            } else if (!child && !h->written && !vh_sample_rate &&
                       !put_heap_create(t, n, h, h->name, strlen(h->name), now)) {
                __atomic_store_n(&h->written, 1, __ATOMIC_RELEASE);
            }
            if (heaps[n].first_child) {
                n = heaps[n].first_child;
                continue;
            }
            while (n != id && !heaps[n].next_sibling)
                n = heaps[n].parent;
            if (n == id)
                break;
            n = heaps[n].next_sibling;
        }
    }
}

/* The child's capture starts empty: describe every live heap and every tag
 * again (same ids), so its records need nothing from the parent's file. */
static void api_fork_child(struct vh_tls *t)
{
    api_lock = 0;
    if (__atomic_load_n(&tables_state, __ATOMIC_ACQUIRE) <= 0 || !vh_cap.hdr)
        return;
    uint8_t g = vh_busy(t);
    uint64_t now = vh_now();
    announce_live(t, now, 1);
    for (uint32_t id = 1; id <= ntags; id++) {
        const char *l = labels + tag_off[id];
        vh_record_label(t, VH_REC_TAG, id, l, strlen(l), now);
    }
    vh_unbusy(t, g);
}

/* Recording starts again (ctl start, or the first start of VHEAP_START=
 * paused): the heaps destroyed while paused end (one record for a tree,
 * as api_heap_destroy), those made meanwhile begin. Their blocks are the
 * program's to report again (vheap.h: starts). At guard BUSY. */
static void api_resume(struct vh_tls *t)
{
    if (__atomic_load_n(&tables_state, __ATOMIC_ACQUIRE) <= 0)
        return;
    uint64_t now = vh_now();
    uint32_t top = next_heap <= HEAP_MAX ? next_heap : HEAP_MAX + 1;
    vh_lock(&api_lock);
    for (uint32_t id = 1; id < top; id++) {
        if (heaps[id].live || !heaps[id].written)
            continue;
        uint32_t p = heaps[id].parent;
        /* a parent that ends too ends this one with it */
        if (!p || heaps[p].live || !heaps[p].written)
            vh_record_time(t, VH_REC_HEAP_DESTROY, (uint16_t)id, 0, now);
    }
    for (uint32_t id = 1; id < top; id++)
        if (!heaps[id].live)
            __atomic_store_n(&heaps[id].written, 0, __ATOMIC_RELAXED);
    announce_live(t, now, 0);
    vh_unlock(&api_lock);
}

/* ---- ranges and regions (appended to the table) ------------------------------------ */
/* Inside the gate: begins the fixed-size record `type` about `heap` (h.a =
 * its words, h.b = the heap, h.flags = `flags`) and sets *now; NULL when the
 * heap does not exist or the record cannot be written (counted either way),
 * or when the heap was never written (sampled: none of its blocks is in the
 * capture, so the record would change nothing). */
static void *heap_rec_begin(struct vh_tls *t, int heap, const char *fn, uint8_t type,
                            uint8_t flags, size_t size, uint64_t *now)
{
    struct vh_rec_hdr *h;
    if (!heap_live(heap)) {
        bad_heap(fn, heap);
        return NULL;
    }
    if (!__atomic_load_n(&heaps[heap].written, __ATOMIC_ACQUIRE))
        return NULL;
    *now = vh_now();
    if (!(h = vh_rec_begin(t, size, *now))) {
        vh_dropped();
        return NULL;
    }
    *h = (struct vh_rec_hdr){ .type = type, .flags = flags, .a = (uint16_t)(size / 8),
                              .b = (uint32_t)heap };
    return h;
}

/* A whole range of blocks moved or freed at once: one record; the reader
 * applies it to the blocks it knows in the range. */
static void api_range(int heap, unsigned op, const void *from, const void *to, size_t len)
{
    struct vh_tls *t = &vh_tls;
    struct vh_rec_range *r;
    uint64_t now = 0;
    uint8_t g;
    if (heap == 0 || len == 0 || op > VH_RANGE_FREE || (op == VH_RANGE_MOVE && from == to) ||
        !api_enter(t, &g))
        return;
    r = heap_rec_begin(t, heap, op == VH_RANGE_MOVE ? "vheap_move_range" : "vheap_free_range",
                       VH_REC_RANGE, (uint8_t)op, sizeof *r, &now);
    if (vh_sample_rate && heap_live(heap) &&
        __atomic_load_n(&heaps[heap].sampled, __ATOMIC_RELAXED)) {
        struct sweep_range sr = { .heap = (uint16_t)heap, .from = (uintptr_t)from,
                                  .to = (uintptr_t)to, .len = len,
                                  .move = op == VH_RANGE_MOVE };
        vh_lock(&api_lock);
        vh_sampled_sweep(sweep_range, &sr);
        vh_unlock(&api_lock);
    }
    if (r) {
        r->time = now;
        r->from = (uintptr_t)from;
        r->to = op == VH_RANGE_MOVE ? (uintptr_t)to : 0;
        r->len = len;
        vh_rec_commit(t, sizeof *r);
    }
    api_leave(t, g, now);
}

static void put_region(struct vh_tls *t, uint16_t heap, uint32_t id, uint8_t kind,
                       uint64_t base, uint64_t size, uint64_t now)
{
    struct vh_rec_region *r = vh_rec_begin(t, sizeof *r, now);
    if (!r) {
        vh_dropped();
        return;
    }
    r->h = (struct vh_rec_hdr){ .type = VH_REC_REGION, .flags = kind,
                                .a = (uint16_t)(sizeof *r / 8), .b = heap };
    r->time = now;
    r->base = base;
    r->size = size;
    r->id = id;
    r->pad = 0;
    vh_rec_commit(t, sizeof *r);
    vh_region_recorded(heap, id, kind, base, size);
}

/* A declaration identical to the region as last recorded writes nothing
 * (regions.c): Vere declares its regions at every event. Under sampling no
 * region is written: regions serve fragmentation only, which a Poisson
 * sample of blocks cannot describe (the analyzer refuses it), and a road
 * pushed and popped per event re-declares its parent's gap twice. */
static void api_region(int heap, unsigned id, unsigned kind, const void *base, size_t size)
{
    struct vh_tls *t = &vh_tls;
    uint64_t now = 0;
    uint8_t g;
    /* an unknown kind, or size 0, ends the region */
    int ends = size == 0 || kind == VH_REGION_NONE || kind > VH_REGION_KIND_MAX;
    uint8_t k = ends ? VH_REGION_NONE : (uint8_t)kind;
    uint64_t b = ends ? 0 : (uintptr_t)base, s = ends ? 0 : size;
    if (heap == 0 || vh_sample_rate || !api_enter(t, &g))
        return;
    if (!heap_live(heap)) {
        bad_heap("vheap_region", heap);
    } else if (tables_map() == 0) {
        vh_lock(&api_lock);
        if (!vh_region_unchanged((uint16_t)heap, id, k, b, s)) {
            now = vh_now();
            put_region(t, (uint16_t)heap, id, k, b, s, now);
        }
        vh_unlock(&api_lock);
    }
    api_leave(t, g, now);
}

/* ---- composed tags and the tag depth (appended to the table) ----------------------- */
/* "first/second", cut at LABEL_MAX like any label; composed on the stack
 * (never malloc), then interned as one label. */
static void api_tag_push2(const char *first, const char *second)
{
    char buf[LABEL_MAX + 1];
    size_t n = text_len(first), m;
    memcpy(buf, first ? first : "", n);
    if (second && second[0] && n < LABEL_MAX) {
        buf[n++] = '/';
        m = text_len(second);
        if (m > LABEL_MAX - n)
            m = LABEL_MAX - n;
        memcpy(buf + n, second, m);
        n += m;
    }
    buf[n] = '\0';
    api_tag_push(buf);
}

static int api_tag_depth(void)
{
    uint32_t d = tag_stack.depth;
    return d > INT32_MAX ? INT32_MAX : (int)d;
}

static void api_tag_unwind(int depth)
{
    uint32_t want = depth > 0 ? (uint32_t)depth : 0;
    while (tag_stack.depth > want)
        api_tag_pop();
}

static unsigned api_starts(void)
{
    return __atomic_load_n(&vh_record_starts, __ATOMIC_ACQUIRE);
}

/* ---- built-in heaps (appended to the table) ------------------------------------------ */
/* The heap the shim itself records into (`flags`: enum vh_heap_flags; the
 * mmap heap of hooks_mmap.c), made at its first need and never destroyed;
 * 0 when the tables cannot be mapped or no id is left. Inside the gate
 * (guard BUSY): the heap is written before the caller's first record. A
 * fork child keeps the id (its tables are the parent's copy) and
 * re-announces the heap like any other. */
int vh_api_builtin_heap(struct vh_tls *t, int *slot, const char *name, uint32_t flags)
{
    int id = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (vh_unlikely(!id)) {
        if (tables_map())
            return 0;
        vh_lock(&api_lock);
        if (!(id = *slot) && (id = heap_create_locked(t, name, 0, NULL, 0, 0)) > 0) {
            heaps[id].flags = flags;
            __atomic_store_n(slot, id, __ATOMIC_RELEASE);
        }
        vh_unlock(&api_lock);
        if (id <= 0)
            return 0;
    }
    heap_needed(t, id);
    return id;
}

/* lifecycle.c's moments that concern the heaps and the tags (upcall.h). */
VH_UPCALL(api_upcall) = {
    .fork_prepare = api_fork_prepare,
    .fork_parent = api_fork_parent,
    .fork_child = api_fork_child,
    .resume = api_resume,
    .thread_end = api_thread_end,
};
