/* shadow.h — what the query commands see in place of the stored heaps,
 * stack_stats and leaks tables: temp tables of the same names, which
 * SQLite finds first, made only when they differ from the stored ones:
 *  - libstdc++'s emergency exception pool, allocated while the dynamic
 *    loader runs libstdc++'s initializers and never freed (heaptrack frees
 *    it at exit through __gnu_cxx::__freeres), and the state glibc keeps
 *    for the process's life that heaptrack's built-in suppressions name
 *    (nss modules, gconv, atexit's blocks, tzset, dlopen), are not leaked:
 *    temp vh_suppressed(heap_id, stack_id, bytes, blocks) lists what was
 *    taken out, for the summary to say;
 *  - --temporary heaptrack: temporary allocations as heaptrack 1.4 counts
 *    them (a free right after an allocation of the same size and stack, in
 *    one heap's event order, whichever thread or block), replayed from the
 *    event stream. */
#ifndef VHEAP_SHADOW_H
#define VHEAP_SHADOW_H

#include <sqlite3.h>

#include "analyze/util/diag.h"

enum vh_temporary { VH_TEMP_VHEAP, VH_TEMP_HEAPTRACK };

/* 0, or -errno with the error printed as cmd's. */
int vh_shadow_apply(const char *cmd, sqlite3 *db, enum vh_temporary temporary);

#endif
