/* owners.h — the loader's side of ownership snapshots (OWN_BEGIN, OWNER,
 * OWNED, OWN_END; preload/owners.c writes them): each named block joined
 * with the live block it is (size, stack, age) into owned_blocks as the
 * records come, the owner tree into owners, and at the end each snapshot's
 * totals per owner (its own blocks and its subtree's) into owner_totals. */
#ifndef VHEAP_LOAD_OWNERS_H
#define VHEAP_LOAD_OWNERS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct heap;
struct loader;
struct rows;
struct vh_event;
struct vh_map;
struct vh_strtab;

struct own_snap {                  /* one snapshot, as far as it got       */
    uint32_t number;               /* the shim's (per process)             */
    struct heap *heap;             /* the heap walked, NULL: unknown       */
    char *label;
    uint64_t start, end;
    int ended;
    uint64_t blocks, bytes, walk_bytes, unknown_blocks, repeated_blocks;
    uint64_t entries, shim_entries, depth_lost;
};

struct own_owner {                 /* a node of the owner tree (DB row)    */
    uint32_t parent;               /* DB id, 0 at the top                  */
    uint32_t label;                /* strtab id                            */
    uint32_t depth;
};

struct ld_owners {
    struct own_snap *snaps;        /* snaps[i]: DB id i + 1                */
    size_t nsnaps, capsnaps;
    struct own_owner *owners;      /* owners[i]: DB id i + 1               */
    size_t nowners, capowners;
    struct vh_strtab *labels;
    struct vh_map *owner_map;      /* (parent, label) -> owner             */
    struct vh_map *totals;         /* (snapshot, owner) -> self (v1 blocks,
                                      v2 index into tot)                   */
    uint64_t (*tot)[3];            /* self blocks, bytes, walk bytes       */
    size_t ntot, captot;
    uint32_t *node_owner;          /* the open snapshot's node -> owner    */
    size_t nnodes, capnodes;
    struct vh_map *seen;           /* the open snapshot's blocks: first
                                      owner wins                           */
    int open;                      /* the last snapshot has no OWN_END yet */
    uint64_t bad_labels, cut_labels, bad_records;
    struct rows *blocks;           /* owned_blocks, many rows an INSERT    */
};

int owners__init(struct loader *L);
void owners__on_begin(struct loader *L, const struct vh_event *ev);
void owners__on_owner(struct loader *L, const struct vh_event *ev);
void owners__on_owned(struct loader *L, const struct vh_event *ev);
void owners__on_end(struct loader *L, const struct vh_event *ev);
/* The owners, owner_snapshots and owner_totals rows; one warning on
 * stderr if any input was bad or a snapshot was cut short. */
void owners__write(struct loader *L);
void owners__free(struct loader *L);

#endif
