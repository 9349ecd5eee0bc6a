/* reach.h — the reachability scan's records (REACH, REACH_END) as the
 * loader collects them: each classified block's class by address, and the
 * scan's totals for the `reach` table. */
#ifndef VHEAP_LOAD_REACH_H
#define VHEAP_LOAD_REACH_H

#include <sqlite3.h>
#include <stdint.h>

#include "common/capture_format.h"

/* A live system-heap block when a scan on request took its snapshot. */
struct reach_row {
    uint64_t addr, size, usable, time;
    uint32_t stack, tid, tag, scan;
    int cls;                       /* enum vh_reach_class, -1 none          */
};

/* A scan on request (`ctl reach`): its totals and when it looked. */
struct reach_scan {
    struct vh_rec_reach_end end;
    uint64_t time;
};

struct reach {
    uint64_t *entry;               /* address | class, sorted once ended   */
    size_t n, cap;
    int ended;                     /* a REACH_END was read                 */
    struct vh_rec_reach_end end;
    /* scans on request: their snapshots' blocks, in scan order */
    struct reach_row *rows;
    size_t nrows, caprows, snap_start;
    struct reach_scan *scans;
    size_t nscans, capscans;
    int pending;                   /* a BEGIN was read, its END not yet     */
    uint64_t begin_time;
};

/* A REACH record of `size` bytes: its entries kept. 0 or -ENOMEM; a record
 * shorter than its count says is skipped (-EINVAL). */
int reach__add(struct reach *r, const struct vh_rec_reach *rec, size_t size);
/* A REACH_END: the totals kept, the entries sorted for reach__class; one
 * of a scan on request classifies its snapshot's blocks and is kept as a
 * scan of its own (numbered from 1), its entries dropped. 0 or -ENOMEM. */
int reach__end(struct reach *r, const struct vh_rec_reach_end *rec);
/* The class (enum vh_reach_class) of the system-heap block at addr, or -1:
 * no complete scan, or the block was not in it. */
int reach__class(const struct reach *r, uint64_t addr);
/* A REACH with VH_REACH_F_BEGIN at `time`: a scan on request snapshots
 * the live set now; the caller adds each live system-heap block with
 * reach__keep. */
void reach__begin(struct reach *r, uint64_t time);
/* 0 or -ENOMEM. */
int reach__keep(struct reach *r, const struct reach_row *row);
/* The `reach` rows (the scan at exit, scan 0; those on request) and the
 * `reach_blocks` of the scans on request. 0 or an SQLite error code. */
int reach__write(const struct reach *r, sqlite3 *db);
void reach__free(struct reach *r);

#endif
