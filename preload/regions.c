/* regions.c — what each custom heap's regions (vheap_region) are as the
 * capture last recorded them, so that a re-declaration that changes nothing
 * writes nothing. Vere's patch declares the home road's regions at every
 * event and road push or pop, changed or not: written each time, they were
 * most of a sampled capture.
 *
 * Rules: the caller holds api_lock at guard BUSY (api.c); no malloc (one
 * lazily mapped table); a state is remembered only after its record was
 * written, so a region is never left out of the capture because of a record
 * that was dropped. A heap whose regions do not all fit in the table is
 * marked untracked: every call of its is written, as before. */
#include <errno.h>
#include <sys/mman.h>

#include "preload/internal.h"

#define HEAPS 65536u               /* heap ids are u16                        */
#define ENTRIES 65536u             /* regions remembered at once, all heaps   */

struct region {
    uint32_t next;                 /* the heap's next region, or 0; free list */
    uint32_t id;
    uint64_t base, size;           /* size > 0: regions that ended are absent */
    uint8_t kind;
};

struct region_table {
    uint32_t head[HEAPS];          /* first region of each heap, or 0         */
    uint8_t untracked[HEAPS];      /* 1: a region of it could not be kept     */
    uint32_t free_head, next_unused;
    struct region e[ENTRIES];      /* e[0] unused: index 0 is "none"          */
};

static struct region_table *tab;
static int tab_failed;

static int tab_map(void)
{
    if (tab)
        return 0;
    /* NORESERVE: only the pages used count (one or two for a loom). */
    if (vh_lazy_map((void **)&tab, &tab_failed, sizeof *tab))
        return -1;
    tab->next_unused = 1;
    return 0;
}

/* The entry of region `id` of `heap`, or 0. */
static uint32_t find(uint16_t heap, uint32_t id, uint32_t **link)
{
    uint32_t *l = &tab->head[heap];
    for (uint32_t i = *l; i; l = &tab->e[i].next, i = *l)
        if (tab->e[i].id == id) {
            if (link)
                *link = l;
            return i;
        }
    return 0;
}

int vh_region_unchanged(uint16_t heap, uint32_t id, uint8_t kind, uint64_t base, uint64_t size)
{
    if (tab_map() || tab->untracked[heap])
        return 0;
    uint32_t i = find(heap, id, NULL);
    if (!size)                     /* an end: unchanged if there was none     */
        return !i;
    return i && tab->e[i].kind == kind && tab->e[i].base == base && tab->e[i].size == size;
}

void vh_region_recorded(uint16_t heap, uint32_t id, uint8_t kind, uint64_t base, uint64_t size)
{
    uint32_t *link, i;
    if (tab_map() || tab->untracked[heap])
        return;
    i = find(heap, id, &link);
    if (!size) {
        if (i) {                   /* unlink, onto the free list              */
            *link = tab->e[i].next;
            tab->e[i].next = tab->free_head;
            tab->free_head = i;
        }
        return;
    }
    if (!i) {
        if (tab->free_head) {
            i = tab->free_head;
            tab->free_head = tab->e[i].next;
        } else if (tab->next_unused < ENTRIES) {
            i = tab->next_unused++;
        } else {
            /* Forgetting the heap's others keeps "unchanged" true: an
             * untracked heap is never compared again until it is gone. */
            vh_region_heap_gone(heap);
            tab->untracked[heap] = 1;
            return;
        }
        tab->e[i].id = id;
        tab->e[i].next = tab->head[heap];
        tab->head[heap] = i;
    }
    tab->e[i].kind = kind;
    tab->e[i].base = base;
    tab->e[i].size = size;
}

void vh_region_heap_gone(uint16_t heap)
{
    if (!tab)
        return;
    uint32_t i = tab->head[heap];
    while (i) {
        uint32_t n = tab->e[i].next;
        tab->e[i].next = tab->free_head;
        tab->free_head = i;
        i = n;
    }
    tab->head[heap] = 0;
    tab->untracked[heap] = 0;
}

void vh_region_each(uint16_t heap, void (*fn)(uint16_t heap, uint32_t id, uint8_t kind,
                                              uint64_t base, uint64_t size, void *arg),
                    void *arg)
{
    if (!tab)
        return;
    for (uint32_t i = tab->head[heap]; i; i = tab->e[i].next)
        fn(heap, tab->e[i].id, tab->e[i].kind, tab->e[i].base, tab->e[i].size, arg);
}
