/* frag_map.h — `frag --map`: a picture of one heap's address space as SVG.
 * The regions are drawn as bands of cells, address increasing left to right
 * and top to bottom, every cell the same number of bytes; a cell takes the
 * colour of the key holding most of its bytes and is paler the emptier it
 * is; free cells stay grey, those of a region's largest hole pale red.
 * Holes above 1/32 of everything drawn are not drawn but shown as one
 * labelled break, so that a big mostly empty arena still shows its blocks. */
#ifndef VHEAP_FRAG_MAP_H
#define VHEAP_FRAG_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/query/frag.h"
#include "analyze/query/frag_run.h"

struct frag_map_key {
    const char *label;            /* legend text                             */
    const char *note;             /* second legend line (may be NULL)        */
    const char *tooltip;          /* hover text, e.g. the stack (or NULL)    */
    const char *color;            /* "#rrggbb"                               */
};

#define FRAG_MAP_MAX_KEYS 16

struct frag_map {
    const char *title, *subtitle;
    const struct frag_region *regions;   /* one heap's, by address           */
    size_t nregions;
    const struct vh_block *blocks;       /* that heap's, by address          */
    size_t nblocks;
    const uint8_t *key;                  /* per block: index into keys       */
    const struct frag_map_key *keys;
    size_t nkeys;                        /* at most FRAG_MAP_MAX_KEYS        */
};

/* Writes the SVG document to `path` (replacing it). 0, -EINVAL or -errno. */
int frag_map__write(const struct frag_map *m, const char *path);

/* The map of moment `m` of `run` (frag_heap_map.c): its first heap with a
 * region, coloured by allocating stack or, with by_age, by age; written to
 * `path`, said on stderr. 0 or -errno, printed as run->cmd's. */
int frag_map__moment(const struct frag_run *run, const struct frag_moment *m, int by_age,
                     const char *path);

#endif
