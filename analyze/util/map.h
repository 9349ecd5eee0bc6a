/* map.h — (k1, k2) -> (v1, v2): the hash map the exports, the report and
 * the query layer count and index with. Open addressing with linear
 * probing and backward-shift deletion, so that endless insert/remove (a
 * map of live blocks) never degrades it. */
#ifndef VHEAP_MAP_H
#define VHEAP_MAP_H

#include <stddef.h>
#include <stdint.h>

struct vh_map_ent {
    uint64_t k1, k2, v1, v2;
};
struct vh_map;

struct vh_map *vh_map__new(void);                  /* NULL on ENOMEM */
void vh_map__free(struct vh_map *m);
struct vh_map_ent *vh_map__find(const struct vh_map *m, uint64_t k1, uint64_t k2);
/* The entry of (k1, k2), existing (*existed = 1) or new with v1 = v2 = 0.
 * NULL on ENOMEM. Invalidates earlier entry pointers. */
struct vh_map_ent *vh_map__insert(struct vh_map *m, uint64_t k1, uint64_t k2, int *existed);
/* Removes an entry returned by find/insert. Invalidates other pointers. */
void vh_map__remove(struct vh_map *m, struct vh_map_ent *e);
size_t vh_map__count(const struct vh_map *m);

#endif
