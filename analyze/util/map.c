/* map.c — the (k1, k2) -> (v1, v2) hash map (map.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/util/map.h"

struct vh_map {
    struct vh_map_ent *e;
    uint8_t *used;
    size_t cap, n;                 /* cap: a power of two                    */
};

static inline size_t map_slot(const struct vh_map *m, uint64_t k1, uint64_t k2)
{
    uint64_t h = k1 * 0x9e3779b97f4a7c15ull ^ (k2 + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return (size_t)h & (m->cap - 1);
}

struct vh_map *vh_map__new(void)
{
    struct vh_map *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->cap = 64;
    m->e = malloc(m->cap * sizeof *m->e);
    m->used = calloc(m->cap, 1);
    if (!m->e || !m->used) {
        vh_map__free(m);
        return NULL;
    }
    return m;
}

void vh_map__free(struct vh_map *m)
{
    if (!m)
        return;
    free(m->e);
    free(m->used);
    free(m);
}

size_t vh_map__count(const struct vh_map *m)
{
    return m->n;
}

struct vh_map_ent *vh_map__find(const struct vh_map *m, uint64_t k1, uint64_t k2)
{
    for (size_t i = map_slot(m, k1, k2);; i = (i + 1) & (m->cap - 1)) {
        if (!m->used[i])
            return NULL;
        if (m->e[i].k1 == k1 && m->e[i].k2 == k2)
            return &m->e[i];
    }
}

static int map_grow(struct vh_map *m)
{
    struct vh_map old = *m;
    if (m->cap > SIZE_MAX / 2 / sizeof *m->e)
        return -ENOMEM;
    m->cap *= 2;
    m->e = malloc(m->cap * sizeof *m->e);
    m->used = calloc(m->cap, 1);
    if (!m->e || !m->used) {
        free(m->e);
        free(m->used);
        *m = old;
        return -ENOMEM;
    }
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.used[i])
            continue;
        size_t j = map_slot(m, old.e[i].k1, old.e[i].k2);
        while (m->used[j])
            j = (j + 1) & (m->cap - 1);
        m->e[j] = old.e[i];
        m->used[j] = 1;
    }
    free(old.e);
    free(old.used);
    return 0;
}

struct vh_map_ent *vh_map__insert(struct vh_map *m, uint64_t k1, uint64_t k2, int *existed)
{
    struct vh_map_ent *e = vh_map__find(m, k1, k2);
    *existed = e != NULL;
    if (e)
        return e;
    if ((m->n + 1) * 10 > m->cap * 7 && map_grow(m))
        return NULL;
    size_t i = map_slot(m, k1, k2);
    while (m->used[i])
        i = (i + 1) & (m->cap - 1);
    m->used[i] = 1;
    m->n++;
    m->e[i] = (struct vh_map_ent){ .k1 = k1, .k2 = k2 };
    return &m->e[i];
}

void vh_map__remove(struct vh_map *m, struct vh_map_ent *e)
{
    size_t mask = m->cap - 1, i = (size_t)(e - m->e), j = i;
    m->used[i] = 0;
    m->n--;
    /* Backward shift: pull later entries of the run into the hole when
     * their home slot does not lie cyclically in (hole, their slot]. */
    for (;;) {
        j = (j + 1) & mask;
        if (!m->used[j])
            return;
        size_t k = map_slot(m, m->e[j].k1, m->e[j].k2);
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays)
            continue;
        m->e[i] = m->e[j];
        m->used[i] = 1;
        m->used[j] = 0;
        i = j;
    }
}
