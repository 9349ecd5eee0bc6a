/* upcall.h — what lifecycle.c drives in the files above it without naming
 * them. The shim's files form one order, each using only what lies below
 * it (tests/arch/shim_order.py); lifecycle's moments — fork, a thread's
 * exit, recording on again — also concern state kept higher up (api.c's
 * custom heaps and tags). Such a file puts one row in the linker section
 * vh_upcalls with VH_UPCALL, and lifecycle.c calls each row's members at
 * their moment: no registration to race with, nothing on an allocation's
 * path (none of these moments is one). */
#ifndef VH_UPCALL_H
#define VH_UPCALL_H

#include "preload/internal.h"

struct vh_upcall {
    void (*fork_prepare)(void);           /* before the shim's own locks     */
    void (*fork_parent)(void);            /* after the shim's own unlocks    */
    void (*fork_child)(struct vh_tls *t); /* the child's capture exists      */
    void (*resume)(struct vh_tls *t);     /* recording on again; guard BUSY */
    void (*thread_end)(void);             /* the thread's exit destructor    */
};

/* One row; a member may be NULL. */
#define VH_UPCALL(name)                                                              \
    static const struct vh_upcall name                                               \
        __attribute__((used, section("vh_upcalls"), aligned(sizeof(void *))))

/* Defined by the linker around the section (empty: equal). */
extern const struct vh_upcall __start_vh_upcalls[] __attribute__((visibility("hidden")));
extern const struct vh_upcall __stop_vh_upcalls[] __attribute__((visibility("hidden")));

#define VH_UPCALL_EACH(u) for (const struct vh_upcall *u = __start_vh_upcalls; u < __stop_vh_upcalls; u++)

#endif
