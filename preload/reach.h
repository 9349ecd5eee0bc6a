/* reach.h — reachability at exit: reach.c (the parent's side: the snapshot
 * child, the records) and reach_scan.c (the child's scan). */
#ifndef VHEAP_PRELOAD_REACH_H
#define VHEAP_PRELOAD_REACH_H

#include <stddef.h>
#include <stdint.h>

struct vh_tls;

struct vh_reach_block {
    uint64_t addr, size;
    uint64_t match;                /* a pointer in [addr, addr + match) hits */
    uint8_t state;                 /* the scan's; enum vh_reach_class after */
};

/* What the parent knew at the clone: where each thread's live stack
 * starts, and the shim's own state in each thread, which is no root (its
 * cursor holds the address of the thread's last block; its walk state,
 * the registers of the last walk). */
struct vh_reach_ctx {
    uintptr_t own_sp;              /* the exiting thread: registers saved above */
    const uintptr_t *sps;          /* other threads blocked in the kernel    */
    size_t nsps;
    struct vh_tls *const *threads; /* the registry below, VH_REACH_THREADS  */
    uint64_t time;                 /* capture time of the clone: later records
                                      (other threads go on) are not in the copy */
};

#define VH_REACH_THREADS 4096

/* The registry of threads' shim state: a thread's first event adds it,
 * its exit takes it out; a fork child keeps only itself. Lock-free (a
 * slot is claimed by compare-and-swap). A thread past the registry's size
 * is not in it: its state is read as a root. */
void vh_reach_thread_add(struct vh_tls *t);
void vh_reach_thread_remove(struct vh_tls *t);
void vh_reach_fork_child(struct vh_tls *t);

struct vh_reach_stats {
    uint64_t blocks, root_bytes, heap_bytes, unreadable_bytes, nonresident_bytes;
};

/* In the snapshot child only: classifies every live system-heap block the
 * capture knows. 0 with the blocks sorted by address, or -1 (no memory). */
int vh_reach_scan(const struct vh_reach_ctx *cx, struct vh_reach_stats *st,
                  struct vh_reach_block **blocks, size_t *n);

/* At exit (lifecycle.c's finish, guard BUSY, before END): the scan in a
 * snapshot child, its classes as REACH records, its totals as REACH_END.
 * Nothing if VHEAP_REACH_TIMEOUT is 0 or the capture is sampled. */
void vh_reach_at_exit(struct vh_tls *t);
/* The same scan now, asked for by `vheap-analyze ctl reach` (at the tick,
 * guard BUSY): its records say so (VH_REACH_F_BEGIN, _REQUEST). */
void vh_reach_now(struct vh_tls *t);

#endif
