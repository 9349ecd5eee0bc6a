/* bootstrap.c — finding the real allocator under the shim.
 *
 * The hooks may be called before any constructor ran, even from ld.so, so
 * the real functions are resolved lazily, by reading the loaded objects'
 * symbol tables (elfsym.c): never dlsym, whose failed lookups leave an
 * error that only dlerror() clears, through gettext's lock — which the
 * interrupted caller may hold (bindtextdomain's first malloc does).
 *
 * What init, a fork child's first event and a thread's first event may call
 * (any hook can be one of them), and why each is safe whatever lock the
 * interrupted program holds:
 *   dl_iterate_phdr   its loader lock is recursive; allocates nothing
 *   raw system calls  (sys.h; readlink, getuid: plain wrappers) no lock
 *   libunwind         its state is mmap'd; it finds tables by dl_iterate_phdr
 *   pthread_sigmask   no lock; glibc leaves its internal signals alone
 *   pthread_key_create  lock-free; getauxval, sysconf(page size, memory)
 * Not allowed: dlsym/dlopen/dlerror (error state, gettext), stdio, getenv,
 * malloc, pthread_getattr_np (the thread's own lock: a JVM thread's first
 * malloc is inside it; threads.c), atexit and pthread_atfork (each
 * allocates under its own lock: registered from the constructor,
 * lifecycle.c), anything that formats or translates messages.
 * A static bump buffer still serves any allocation made while the real
 * malloc is unknown (an IFUNC'ed lookup's dlsym, a library's own): never
 * freed (free() ignores pointers into it, realloc copies out of it). The
 * lookups run as the shim's own calls with signals blocked (vh_own_begin):
 * a handler's malloc meanwhile would be indistinguishable from theirs. */
#include <stdint.h>
#include <string.h>

#include "preload/internal.h"

struct vh_real vh_real;

#define BOOT_SIZE (64u << 10)
char vh_boot_buf[BOOT_SIZE] __attribute__((aligned(64)));
const size_t vh_boot_size = BOOT_SIZE;
static size_t boot_used;           /* atomic bump offset */

/* Each block is preceded by its size (8 bytes), so realloc and
 * malloc_usable_size of a bootstrap block know how much it holds. */
void *vh_boot_alloc(size_t size, size_t align)
{
    if (align < 16)
        align = 16;
    if (align > 4096 || (align & (align - 1)))
        return NULL;
    for (;;) {
        size_t cur = __atomic_load_n(&boot_used, __ATOMIC_RELAXED);
        size_t start = (cur + 8 + align - 1) & ~(align - 1);
        if (start > BOOT_SIZE || size > BOOT_SIZE - start)
            return NULL;           /* dlsym asked for more than it should */
        size_t next = start + size;
        if (__atomic_compare_exchange_n(&boot_used, &cur, next, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            memcpy(vh_boot_buf + start - 8, &(uint64_t){ size }, 8);
            /* Under sampling, free() looks at the count array before
             * anything else: a block marked there for good (255 sticks)
             * goes on to free_recorded, which knows bootstrap blocks. */
            __atomic_store_n(&vh_sample_counts[vh_sample_slot((uintptr_t)(vh_boot_buf + start))],
                             255, __ATOMIC_RELAXED);
            return vh_boot_buf + start;   /* static storage: already zero */
        }
    }
}

size_t vh_boot_usable(const void *p)
{
    uint64_t n;
    memcpy(&n, (const char *)p - 8, 8);
    return (size_t)n;
}

#define RESOLVE(field, name)                                                    \
    do {                                                                        \
        if (!vh_real.field) {                                                   \
            void *f_ = vh_sym_next(name);                                       \
            __atomic_store_n((void **)&vh_real.field, f_, __ATOMIC_RELEASE);    \
        }                                                                       \
    } while (0)

void vh_resolve_real(void)
{
    struct vh_tls *t = &vh_tls;
    sigset_t saved;
    vh_own_begin(t, &saved);
    /* malloc first: once it is known, anything a lookup allocates goes to
     * the real allocator. */
    RESOLVE(malloc, "malloc");
    RESOLVE(calloc, "calloc");
    RESOLVE(realloc, "realloc");
    RESOLVE(free, "free");
    RESOLVE(posix_memalign, "posix_memalign");
    RESOLVE(aligned_alloc, "aligned_alloc");
    RESOLVE(memalign, "memalign");
    RESOLVE(valloc, "valloc");
    RESOLVE(pvalloc, "pvalloc");
    RESOLVE(usable, "malloc_usable_size");
    RESOLVE(dlclose, "dlclose");
    RESOLVE(sigaction, "sigaction");
    /* jemalloc's API: only from a jemalloc the program is linked with. All
     * or nothing, so a partial set never mixes two allocators. */
    void *mx = vh_sym_next("mallocx"), *rx = vh_sym_next("rallocx");
    void *xx = vh_sym_next("xallocx"), *sx = vh_sym_next("sallocx");
    void *sdx = vh_sym_next("sdallocx"), *dx = vh_sym_next("dallocx");
    if (mx && rx && xx && sx && sdx && dx) {
        vh_real.rallocx = (void *(*)(void *, size_t, int))rx;
        vh_real.xallocx = (size_t (*)(void *, size_t, size_t, int))xx;
        vh_real.sallocx = (size_t (*)(const void *, int))sx;
        vh_real.sdallocx = (void (*)(void *, size_t, int))sdx;
        vh_real.dallocx = (void (*)(void *, int))dx;
        __atomic_store_n((void **)&vh_real.mallocx, mx, __ATOMIC_RELEASE);
    }
    vh_own_end(t, &saved);
}
