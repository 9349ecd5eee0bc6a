/* livemap.c — open-addressing table of live blocks (see livemap.h; the
 * lookups are inline there). Grown at 70% occupancy, so probes stay short
 * and a block costs 57-80 bytes. */
#include <stdlib.h>
#include <string.h>

#include "analyze/load/livemap.h"
#include "analyze/util/grow.h"

#define MIN_BITS 4
#define LOAD_NUM 7                     /* grow when count > 7/10 of slots */
#define LOAD_DEN 10

static inline size_t home(const struct livemap *m, uint64_t addr)
{
    return livemap__home(m, addr);
}

static int setup(struct livemap *m, unsigned bits)
{
    size_t n = (size_t)1 << bits;
    m->slots = vh_calloc_table(n, sizeof *m->slots);
    if (!m->slots)
        return -1;
    m->mask = n - 1;
    m->shift = 64 - bits;
    m->limit = n / LOAD_DEN * LOAD_NUM;
    if (!m->limit)
        m->limit = n - 1;
    return 0;
}

struct livemap *livemap__new(void)
{
    struct livemap *m = calloc(1, sizeof *m);
    if (m && setup(m, MIN_BITS)) {
        free(m);
        return NULL;
    }
    return m;
}

void livemap__free(struct livemap *m)
{
    if (!m)
        return;
    free(m->slots);
    free(m);
}

static int grow(struct livemap *m)
{
    struct livemap n = { 0 };
    unsigned bits = 64 - m->shift + 1;

    if (setup(&n, bits))
        return -1;
    for (size_t i = 0; i <= m->mask; i++) {
        const struct vh_live_block *b = &m->slots[i];
        if (!b->addr)
            continue;
        size_t j = home(&n, b->addr);
        while (n.slots[j].addr)
            j = (j + 1) & n.mask;
        n.slots[j] = *b;
    }
    n.count = m->count;
    free(m->slots);
    *m = n;
    return 0;
}

struct vh_live_block *livemap__insert(struct livemap *m, uint64_t addr, int *existed)
{
    size_t i;

    if (m->count >= m->limit && grow(m))
        return NULL;
    i = home(m, addr);
    for (;;) {
        struct vh_live_block *b = &m->slots[i];
        if (b->addr == addr) {
            *existed = 1;
            return b;
        }
        if (!b->addr) {
            memset(b, 0, sizeof *b);
            b->addr = addr;
            m->count++;
            *existed = 0;
            return b;
        }
        i = (i + 1) & m->mask;
    }
}

/* Backward-shift deletion: pull later members of the probe run into the
 * hole unless that would move them before their home slot. */
void livemap__remove(struct livemap *m, struct vh_live_block *b)
{
    size_t i = (size_t)(b - m->slots), j = i;

    for (;;) {
        j = (j + 1) & m->mask;
        if (!m->slots[j].addr)
            break;
        size_t k = home(m, m->slots[j].addr);
        /* the entry at j may move to i iff its home k is not in (i, j] */
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].addr = 0;
    m->count--;
}

size_t livemap__count(const struct livemap *m)
{
    return m->count;
}

struct vh_live_block *livemap__next(struct livemap *m, size_t *pos)
{
    while (*pos <= m->mask) {
        struct vh_live_block *b = &m->slots[(*pos)++];
        if (b->addr)
            return b;
    }
    return NULL;
}
