/* lock.h — the shim's spinlocks for its slow paths, taken at guard BUSY
 * only (so a handler the trampoline holds back never waits on one). A lock
 * word holds its owner's thread state address: a thread that finds a lock
 * held by itself had its holder left by a longjmp from a handler the shim
 * could not hold back (nested calls never get this far: the guard turns
 * them away), and takes the lock over. In a header: they sit below every
 * file that locks (docs/hacking.md, the shim's order). */
#ifndef VHEAP_PRELOAD_LOCK_H
#define VHEAP_PRELOAD_LOCK_H

#include <sched.h>

#include "preload/internal.h"

static inline void vh_lock(vh_lock_t *l)
{
    /* The thread that ran the fork prepare handler holds every lock until
     * the parent/child handler: it must not wait for itself. */
    if (vh_tls.in_fork)
        return;
    uintptr_t me = (uintptr_t)&vh_tls;
    for (unsigned spins = 0;; spins++) {
        uintptr_t cur = 0;
        if (__atomic_compare_exchange_n(l, &cur, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return;
        if (cur == me) {           /* left held by a longjmp: see internal.h */
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (vh_cap.hdr)
                vh_count(&vh_cap.hdr->guard_resets);
            return;
        }
        if (spins < 100)
            __builtin_ia32_pause();
        else
            sched_yield();
    }
}

static inline void vh_unlock(vh_lock_t *l)
{
    if (vh_tls.in_fork)
        return;
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

#endif
