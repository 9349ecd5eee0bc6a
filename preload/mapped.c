/* mapped.c — the mappings of the built-in heap "mmap" as the capture last
 * recorded them: address order, with the stack that made each. The kernel
 * splits a mapping when part of it is unmapped, moved or mapped over; so
 * does this table, and it writes what became of each recorded mapping (a
 * FREE, then an ALLOC for each piece left, with the mapping's own stack),
 * so that the analyzer sees whole blocks only.
 *
 * Rules: callers are inside the gate at guard BUSY (hooks_mmap.c); the
 * table's lock is taken at BUSY only, so a signal handler's mmap on this
 * thread passes through (nested) and never waits on it; no malloc (one
 * lazily mapped table). A mapping that does not fit is not recorded, and
 * counted (`mmap_untracked`, in the log at exit). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "common/partition.h"
#include "preload/internal.h"
#include "preload/lock.h"

#define ENTRIES (1u << 16)         /* mappings recorded at once               */

struct mapping {
    uint64_t lo, hi;               /* [lo, hi), page-aligned                  */
    uint32_t stack;
    uint16_t tag;
    uint8_t func;                  /* enum vh_func that made it              */
    uint8_t pad;
};

static struct mapping *tab;        /* [ENTRIES], sorted by lo, disjoint       */
static uint32_t n;
static int tab_failed;
static vh_lock_t lock;
static uint64_t untracked;
static uint16_t tab_heap;          /* the mmap heap the entries belong to     */

static int tab_map(void)
{
    return vh_lazy_map((void **)&tab, &tab_failed, ENTRIES * sizeof *tab);
}

/* The first entry that ends after `a`. */
static uint32_t first_after(uint64_t a)
{
    return (uint32_t)VH_PARTITION_POINT(i, n, tab[i].hi <= a);
}

static void put_piece(struct vh_tls *t, uint16_t heap, const struct mapping *m, uint64_t now)
{
    vh_record_alloc(t, VH_REC_ALLOC, heap, m->func, VH_RF_REALLOC, m->lo, m->hi - m->lo,
                    m->hi - m->lo, m->stack, m->tag, now);
}

/* Entries [i, j) leave the table; `add` pieces take their place. */
static void replace_entries(uint32_t i, uint32_t j, const struct mapping *add, uint32_t nadd)
{
    memmove(&tab[i + nadd], &tab[j], (n - j) * sizeof *tab);
    if (nadd)
        memcpy(&tab[i], add, nadd * sizeof *tab);
    n = n - (j - i) + nadd;
}

/* [lo, hi) is no longer what it was: each recorded mapping it touches is
 * freed, and what is left of it outside the range is allocated again. */
static void cut_locked(struct vh_tls *t, uint16_t heap, unsigned func, uint64_t lo, uint64_t hi,
                       uint64_t now)
{
    uint32_t i = first_after(lo), j = i;
    while (j < n && tab[j].lo < hi)
        j++;
    if (i == j)
        return;
    struct mapping keep[2];
    uint32_t nkeep = 0;
    for (uint32_t k = i; k < j; k++) {
        const struct mapping *m = &tab[k];
        int split = m->lo < lo || m->hi > hi;
        vh_record_free(t, heap, func, split ? VH_RF_REALLOC : 0, m->lo, now);
        if (m->lo < lo) {
            keep[nkeep] = *m;
            keep[nkeep++].hi = lo;
        }
        if (m->hi > hi) {
            keep[nkeep] = *m;
            keep[nkeep++].lo = hi;
        }
    }
    for (uint32_t k = 0; k < nkeep; k++)
        put_piece(t, heap, &keep[k], now);
    replace_entries(i, j, keep, nkeep);
}

void vh_mapped_cut(struct vh_tls *t, uint16_t heap, unsigned func, uint64_t lo, uint64_t hi)
{
    if (lo >= hi || __atomic_load_n(&n, __ATOMIC_RELAXED) == 0)
        return;
    vh_lock(&lock);
    if (tab)
        cut_locked(t, heap, func, lo, hi, vh_now());
    vh_unlock(&lock);
}

/* Ranges that top-level custom heaps declared as their bounds: the
 * program hands that memory to its own allocator, whose heap explains it
 * (Vere's loom: a 2 GiB mapping the loom heap covers). A mapping there is
 * left to that heap, not counted again as a block of the mmap heap. Read
 * without the lock (a mapping call racing a heap's creation may be
 * recorded once more, then ended by the claim's cut). */
#define CLAIMS 16
static struct { uint64_t lo, hi; } claims[CLAIMS];
static uint64_t claims_lost;

static int claimed(uint64_t lo, uint64_t hi)
{
    for (unsigned i = 0; i < CLAIMS; i++)
        if (__atomic_load_n(&claims[i].hi, __ATOMIC_ACQUIRE) && claims[i].lo <= lo &&
            hi <= claims[i].hi)
            return 1;
    return 0;
}

/* A top-level heap declared [lo, hi) (api.c, at guard BUSY): mappings
 * recorded there end now (`record`: the capture is recording), later ones
 * there are not recorded. */
void vh_mapped_claim(struct vh_tls *t, uint64_t lo, uint64_t hi, int record)
{
    if (lo >= hi)
        return;
    vh_lock(&lock);
    unsigned i = 0;
    while (i < CLAIMS && claims[i].hi)
        i++;
    if (i < CLAIMS) {
        claims[i].lo = lo;
        __atomic_store_n(&claims[i].hi, hi, __ATOMIC_RELEASE);
    } else {
        claims_lost++;
    }
    if (record && tab && n)
        cut_locked(t, tab_heap, VH_FN_CUSTOM, lo, hi, vh_now());
    vh_unlock(&lock);
}

/* The heap that declared [lo, hi) is gone: mappings there count again. */
void vh_mapped_unclaim(uint64_t lo, uint64_t hi)
{
    vh_lock(&lock);
    for (unsigned i = 0; i < CLAIMS; i++)
        if (claims[i].hi == hi && claims[i].lo == lo) {
            __atomic_store_n(&claims[i].hi, 0, __ATOMIC_RELEASE);
            break;
        }
    vh_unlock(&lock);
}

/* [lo, hi) is mapped now (by `func`, from `stack`): whatever the table
 * still held there was unmapped behind its back (a raw system call, a
 * pause) and ends first. Inside a declared heap: that heap's. */
void vh_mapped_add(struct vh_tls *t, uint16_t heap, unsigned func, uint64_t lo, uint64_t hi,
                   uint32_t stack)
{
    if (lo >= hi || claimed(lo, hi))
        return;
    vh_lock(&lock);
    uint64_t now = vh_now();
    if (tab_map() == 0) {
        cut_locked(t, heap, func, lo, hi, now);
        tab_heap = heap;
        if (n < ENTRIES) {
            struct mapping m = { .lo = lo, .hi = hi, .stack = stack, .tag = t->tag,
                                 .func = (uint8_t)func };
            uint32_t i = first_after(lo);
            replace_entries(i, i, &m, 1);
            vh_record_alloc(t, VH_REC_ALLOC, heap, func, 0, lo, hi - lo, hi - lo, stack,
                            t->tag, now);
        } else {
            untracked++;
        }
    }
    vh_unlock(&lock);
}

/* The mapping that holds `a` ends (a block the allocator mapped alone is
 * freed, VHEAP_MMAP=all): 1 if there was one. */
int vh_mapped_free_at(struct vh_tls *t, uint16_t heap, unsigned func, uint64_t a)
{
    int found = 0;
    if (__atomic_load_n(&n, __ATOMIC_RELAXED) == 0)
        return 0;
    vh_lock(&lock);
    uint32_t i = tab ? first_after(a) : n;
    if (i < n && tab[i].lo <= a) {
        vh_record_free(t, heap, func, 0, tab[i].lo, vh_now());
        replace_entries(i, i + 1, NULL, 0);
        found = 1;
    }
    vh_unlock(&lock);
    return found;
}

/* The child's capture starts empty and its stack ids anew: the parent's
 * mappings are not its records (their munmap in the child writes nothing). */
void vh_mapped_fork_child(void)
{
    lock = 0;
    n = 0;
}

uint64_t vh_mapped_untracked(void)
{
    return untracked;
}

int vh_mmap_blocks;

/* VHEAP_MMAP=all: whether the real malloc is glibc's, whose big blocks are
 * told from their chunk header (hooks_mmap.c). It is, when it lies in the
 * object that defines gnu_get_libc_version. */
void vh_mmap_init(void)
{
    if (vh_opt.mmap != VH_MMAP_ALL || vh_opt.sample || !vh_real.malloc)
        return;
    vh_mmap_blocks = vh_sym_same_object("gnu_get_libc_version", (void *)vh_real.malloc);
}
