/* modules.c — which ELF objects are mapped where, as MODULE records.
 *
 * Each record carries the load bias, the mapped range, the GNU build-id
 * (read from the PT_NOTE in memory) and the path, so stacks can be
 * symbolized later, elsewhere. The list is kept in our own mmap'd copy so a
 * fork child can re-emit it without asking ld.so. Changes are noticed by
 * ld.so's add/remove counters, checked before every new stack is written
 * (the first place a new library's addresses can show up), on RSS ticks,
 * and right after dlclose (interposed in hooks.c: an unload must bump the
 * stack-hash generation before any stack is looked up again). dlopen is deliberately
 * not interposed: glibc resolves RUNPATH and $ORIGIN from dlopen's caller,
 * which would become libvheap.so. A library loaded with RTLD_DEEPBIND
 * gets its malloc-family GOT slots bound to the hooks (below).
 *
 * Ordering, so that no stack id or cached unwind rule outlives the module
 * it was made for: a diff bumps vh_module_gen and writes its records before
 * it publishes the counters it saw (a thread that finds the counters
 * unchanged may rely on all of that); and while a dlclose runs,
 * vh_modules_closing is non-zero, which makes every stack lookup settle the
 * module list first — another thread may load a library at the address
 * just freed before the dlclosing thread gets to its diff. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "preload/internal.h"
#include "preload/lock.h"
#include "preload/sys.h"

#define MOD_MAX 8192u
#define POOL_BYTES (1u << 20)

struct mod {
    uint64_t bias, lo, hi;
    uint8_t build_id[32];
    uint32_t build_id_len;
    uint32_t path_off, path_len;
    uint32_t flags;                /* VH_RF_MAIN_EXE */
    uint64_t name_hash;            /* of ld.so's name, when it was resolved */
};

struct modlist {
    struct mod *mods;
    char *pool;
    uint32_t n, pool_used;
    unsigned long long adds, subs; /* ld.so's counters when taken */
};

static struct modlist lists[2];
static int cur;                    /* lists[cur] is what the capture knows */
static vh_lock_t mod_lock;
static int mods_ready;
/* ld.so's adds + subs as of the last completed diff (atomic). Both only
 * grow, so an equal sum means neither moved. */
static unsigned long long seen_sum;
uint32_t vh_modules_closing;
static uintptr_t vdso_base;

/* ---- reading ld.so's list ------------------------------------------------------ */
static void read_build_id(const struct dl_phdr_info *info, struct mod *m)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        size_t align = ph->p_align == 8 ? 8 : 4;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
        const char *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            size_t name_sz = (nh->n_namesz + align - 1) & ~(align - 1);
            size_t desc_sz = (nh->n_descsz + align - 1) & ~(align - 1);
            const char *name = p + sizeof *nh;
            const char *desc = name + name_sz;
            if (desc + desc_sz > end || desc < name)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(name, "GNU", 4) == 0) {
                size_t n = nh->n_descsz < 32 ? nh->n_descsz : 32;
                memcpy(m->build_id, desc, n);
                m->build_id_len = (uint32_t)n;
                return;
            }
            p = desc + desc_sz;
        }
    }
}

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598037103934665ull;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* A name ld.so kept relative, as the file mapped at the object: the path
 * found when the object was first seen (the list before, same address,
 * name and build-id; usually at the same index), else /proc/self/maps,
 * read once per object, not at every look (a thousand libraries opened by
 * relative paths made each look read the maps file a thousand times). */
static const char *resolve_relative(const struct modlist *l, struct mod *m, const char *name)
{
    static char resolved[4096];
    const struct modlist *prev = l == &lists[cur] ? NULL : &lists[cur];
    m->name_hash = name_hash(name);
    for (uint32_t k = 0; prev && k <= prev->n; k++) {
        uint32_t i = k == 0 ? l->n : k - 1;        /* the same index first */
        if (i >= prev->n)
            continue;
        const struct mod *o = &prev->mods[i];
        if (o->name_hash == m->name_hash && o->bias == m->bias && o->lo == m->lo &&
            o->hi == m->hi && o->build_id_len == m->build_id_len &&
            !memcmp(o->build_id, m->build_id, m->build_id_len)) {
            memcpy(resolved, prev->pool + o->path_off, o->path_len);
            resolved[o->path_len] = '\0';
            return resolved;
        }
    }
    return vh_mapped_file(m->lo, resolved, sizeof resolved) ? resolved : name;
}

static int gather_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct modlist *l = arg;
    if (l->n == 0) {
        l->adds = info->dlpi_adds;
        l->subs = info->dlpi_subs;
    }
    if (l->n >= MOD_MAX)
        return 0;
    struct mod *m = &l->mods[l->n];
    memset(m, 0, sizeof *m);
    m->bias = info->dlpi_addr;
    m->lo = UINT64_MAX;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t s = info->dlpi_addr + ph->p_vaddr;
        if (s < m->lo)
            m->lo = s;
        if (s + ph->p_memsz > m->hi)
            m->hi = s + ph->p_memsz;
    }
    if (m->lo == UINT64_MAX)
        return 0;                  /* nothing mapped */
    read_build_id(info, m);
    const char *path = info->dlpi_name;
    if (path && path[0] && path[0] != '/' && strchr(path, '/'))
        path = resolve_relative(l, m, path);   /* dlopen("./libfoo.so") */
    if (!path || !path[0]) {
        if (l->n == 0) {
            path = vh_main_exe(); /* the program itself comes first */
            m->flags = VH_RF_MAIN_EXE;
        } else if (vdso_base && m->lo <= vdso_base && vdso_base < m->hi) {
            path = "[vdso]";
        } else {
            path = "";
        }
    }
    size_t len = strlen(path);
    if (len > 4095)
        len = 4095;
    if (l->pool_used + len + 1 > POOL_BYTES)
        return 0;
    memcpy(l->pool + l->pool_used, path, len);
    l->pool[l->pool_used + len] = '\0';
    m->path_off = l->pool_used;
    m->path_len = (uint32_t)len;
    l->pool_used += (uint32_t)len + 1;
    l->n++;
    return 0;
}

static void gather(struct modlist *l)
{
    l->n = 0;
    l->pool_used = 0;
    dl_iterate_phdr(gather_cb, l);
}

/* Identity: an object at the same address is the same object only if path
 * and build-id agree too (a library dlclosed and another, or a rebuilt copy
 * of it, loaded in its place before we looked). A file replaced in place
 * with neither a build-id nor a size change is not told apart: its stacks
 * symbolize against the file on disk either way. */
static int same(const struct modlist *a, const struct mod *x, const struct modlist *b,
                const struct mod *y)
{
    return x->bias == y->bias && x->lo == y->lo && x->hi == y->hi &&
           x->path_len == y->path_len && x->build_id_len == y->build_id_len &&
           memcmp(x->build_id, y->build_id, x->build_id_len) == 0 &&
           memcmp(a->pool + x->path_off, b->pool + y->path_off, x->path_len) == 0;
}

static int contains(const struct modlist *l, const struct modlist *from, const struct mod *m)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (same(l, &l->mods[i], from, m))
            return 1;
    return 0;
}

/* ---- RTLD_DEEPBIND --------------------------------------------------------------
 * A library loaded with RTLD_DEEPBIND looks its symbols up in its own scope
 * first: its malloc and free bind to libc's, past the shim, so a block the
 * program allocated and the library freed stayed "leaked" (heaptrack
 * rewrites such a library's relocations at its dlopen). dlopen is not
 * interposed (above), so the shim does it when it next looks at the module
 * list: a GOT slot of a library loaded after start (JUMP_SLOT or GLOB_DAT
 * relocation of a malloc-family symbol) that holds the very function
 * the shim's hook calls gets the hook instead. What the program runs is
 * unchanged, only now seen; a slot holding anything else (another
 * allocator the library brought, the hook already) is left alone, and one
 * not bound yet (lazy, or the library is still being relocated) is looked
 * at again at each later look (module changes, RSS ticks, new stacks). */
#if defined(__x86_64__)
#define DB_SLOTS 4096u
struct db_slot {
    uint64_t *addr;
    uint64_t lo, hi;               /* its module's range                    */
    uint64_t base;                 /* its load bias                         */
    uint32_t fn;                   /* index into db_names                   */
    uint32_t relro;                /* read-only after relocation: mprotect  */
};
static struct db_slot *db_slots;   /* [0, db_open): not bound yet           */
static uint32_t db_open;           /* atomic read outside the module lock   */
/* atomic: open slots still unrelocated (their library is being loaded):
 * bound within moments, so looked at again at every look */
static uint32_t db_pending;

static const char *const db_names[] = { "malloc", "free", "calloc", "realloc",
                                        "posix_memalign", "aligned_alloc", "memalign",
                                        "valloc", "pvalloc", "malloc_usable_size" };
#define DB_N (sizeof db_names / sizeof db_names[0])

/* The hooks a slot gets: the shim's own exported definitions, found by name
 * (hooks.c lies above this file in the shim's order); NULL where the shim
 * has none (malloc_usable_size), whose slots are left alone. Set at init. */
static void *db_hooks[DB_N];

static void db_fns(void *real[DB_N], void *hook[DB_N])
{
    void *r[DB_N] = { (void *)vh_real.malloc, (void *)vh_real.free, (void *)vh_real.calloc,
                      (void *)vh_real.realloc, (void *)vh_real.posix_memalign,
                      (void *)vh_real.aligned_alloc, (void *)vh_real.memalign,
                      (void *)vh_real.valloc, (void *)vh_real.pvalloc, (void *)vh_real.usable };
    memcpy(real, r, sizeof r);
    memcpy(hook, db_hooks, sizeof db_hooks);
}

/* Binds what can be bound now; keeps the rest open. Module lock held. */
static void db_patch(void)
{
    void *real[DB_N], *hook[DB_N];
    db_fns(real, hook);
    long page = sysconf(_SC_PAGESIZE);
    uint32_t n = db_open, pending = 0;
    for (uint32_t i = 0; i < n;) {
        struct db_slot *d = &db_slots[i];
        void *v = __atomic_load_n((void **)d->addr, __ATOMIC_RELAXED);
        uint64_t a = (uint64_t)v;
        if (a >= d->lo && a < d->hi) {
            i++;                   /* lazy: its PLT stub until the first call */
            continue;
        }
        if (a < d->hi - d->base) {
            /* not relocated yet: a link-time value (0, or an address in
             * the image before its bias), never an absolute one, which
             * lies in a mapping. (Not `a < lo`: a library mapped above
             * libc holds libc's address there once relocated, and that
             * slot stayed open for good, its library unseen.) */
            i++;
            pending++;
            continue;
        }
        char *pg = (char *)((uintptr_t)d->addr & ~(uintptr_t)(page - 1));
        if (v == real[d->fn] && real[d->fn] && hook[d->fn] &&
            (!d->relro || mprotect(pg, (size_t)page, PROT_READ | PROT_WRITE) == 0)) {
            __atomic_store_n((void **)d->addr, hook[d->fn], __ATOMIC_RELAXED);
            if (d->relro)
                mprotect(pg, (size_t)page, PROT_READ);
        }
        db_slots[i] = db_slots[--n];        /* bound (to us or another): done */
    }
    __atomic_store_n(&db_pending, pending, __ATOMIC_RELAXED);
    __atomic_store_n(&db_open, n, __ATOMIC_RELEASE);
}

static uint64_t dyn_ptr(uint64_t v, uint64_t base)
{
    return v < base ? v + base : v;  /* glibc relocates d_ptr in place; raw before */
}

/* The malloc-family slots of a module just loaded, kept open for db_patch. */
static void db_collect(const struct dl_phdr_info *info)
{
    const ElfW(Dyn) *dyn = NULL;
    uint64_t base = info->dlpi_addr, relro_lo = 0, relro_hi = 0, lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            lo = base + ph->p_vaddr < lo ? base + ph->p_vaddr : lo;
            hi = base + ph->p_vaddr + ph->p_memsz > hi ? base + ph->p_vaddr + ph->p_memsz : hi;
        } else if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(base + ph->p_vaddr);
        else if (ph->p_type == PT_GNU_RELRO)
            relro_lo = base + ph->p_vaddr, relro_hi = relro_lo + ph->p_memsz;
    }
    {   /* what ld.so made read-only: whole pages, the last partial one left
         * writable (a slot there must not be made read-only after) */
        uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
        relro_lo &= ~(pg - 1);
        relro_hi &= ~(pg - 1);
    }
    if (!dyn || !db_slots)
        return;
    uint64_t rel[2] = { 0, 0 }, relsz[2] = { 0, 0 }, symtab = 0, strtab = 0, strsz = 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_RELA: rel[0] = dyn_ptr(dyn->d_un.d_ptr, base); break;
        case DT_RELASZ: relsz[0] = dyn->d_un.d_val; break;
        case DT_JMPREL: rel[1] = dyn_ptr(dyn->d_un.d_ptr, base); break;
        case DT_PLTRELSZ: relsz[1] = dyn->d_un.d_val; break;
        case DT_SYMTAB: symtab = dyn_ptr(dyn->d_un.d_ptr, base); break;
        case DT_STRTAB: strtab = dyn_ptr(dyn->d_un.d_ptr, base); break;
        case DT_STRSZ: strsz = dyn->d_un.d_val; break;
        }
    }
    if (!symtab || !strtab)
        return;
    for (int k = 0; k < 2; k++) {
        const ElfW(Rela) *r = (const ElfW(Rela) *)rel[k];
        for (size_t i = 0; r && i < relsz[k] / sizeof *r && db_open < DB_SLOTS; i++) {
            uint32_t type = ELF64_R_TYPE(r[i].r_info), sym = ELF64_R_SYM(r[i].r_info);
            if (!sym || (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT))
                continue;
            uint32_t off = ((const ElfW(Sym) *)symtab)[sym].st_name;
            if (off >= strsz)
                continue;
            const char *name = (const char *)strtab + off;
            for (uint32_t f = 0; f < DB_N; f++) {
                if (strcmp(name, db_names[f]))
                    continue;
                uint64_t a = base + r[i].r_offset;
                db_slots[db_open++] = (struct db_slot){ (uint64_t *)a, lo, hi, base, f,
                                                        a >= relro_lo && a < relro_hi };
                __atomic_fetch_add(&db_pending, 1, __ATOMIC_RELAXED);
                break;
            }
        }
    }
}
/* Whether a look with the list unchanged should bind open slots: right
 * after a diff and while some are unrelocated, else at most every 10 ms
 * (slots of libraries loaded lazily stay open until their first call,
 * which may never come: looking at them at every new stack would cost
 * every new stack). */
static uint64_t db_next;           /* atomic: vh_now() of the next look    */

static int db_due(int after_diff)
{
    if (!__atomic_load_n(&db_open, __ATOMIC_ACQUIRE))
        return 0;
    uint64_t now = vh_now(), next = __atomic_load_n(&db_next, __ATOMIC_RELAXED);
    if (!after_diff && !__atomic_load_n(&db_pending, __ATOMIC_RELAXED) && now < next)
        return 0;
    __atomic_store_n(&db_next, now + 10000000u, __ATOMIC_RELAXED);
    return 1;
}

/* A module unloaded: its slots are gone with it. Module lock held. */
static void db_forget(uint64_t lo, uint64_t hi)
{
    uint32_t n = db_open;
    for (uint32_t i = 0; i < n;) {
        uint64_t a = (uint64_t)db_slots[i].addr;
        if (a >= lo && a < hi)
            db_slots[i] = db_slots[--n];
        else
            i++;
    }
    __atomic_store_n(&db_open, n, __ATOMIC_RELEASE);
}
#else
static uint32_t db_open;
static int db_due(int after_diff) { (void)after_diff; return 0; }
static void db_patch(void) {}
static void db_collect(const struct dl_phdr_info *info) { (void)info; }
static void db_forget(uint64_t lo, uint64_t hi) { (void)lo, (void)hi; }
#endif

/* ---- records ------------------------------------------------------------------- */
static void emit(struct vh_tls *t, const struct modlist *l, const struct mod *m)
{
    size_t size = (sizeof(struct vh_rec_module) + m->path_len + 1 + 7) & ~(size_t)7;
    uint64_t now = vh_now();
    struct vh_rec_module *r = vh_rec_begin(t, size, now);
    if (!r)
        return;
    memset(r, 0, size);
    r->h = (struct vh_rec_hdr){ .type = VH_REC_MODULE, .flags = (uint8_t)m->flags,
                                .a = (uint16_t)(size / 8), .b = m->build_id_len };
    r->time = now;
    r->bias = m->bias;
    r->lo = m->lo;
    r->hi = m->hi;
    memcpy(r->build_id, m->build_id, sizeof r->build_id);
    memcpy(r->path, l->pool + m->path_off, m->path_len);
    vh_rec_commit(t, size);
}

static void *map_anon(size_t size)
{
    void *p = vh_sys_mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* How many objects the process started with: they come first in the
 * loader's list and are never unloaded (hooks_cxx.c pins only the later
 * ones). Counted at init, before the program's code runs. */
static unsigned startup_objects;

static int count_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info;
    (void)size;
    ++*(unsigned *)arg;
    return 0;
}

unsigned vh_modules_startup(void)
{
    return __atomic_load_n(&startup_objects, __ATOMIC_ACQUIRE);
}

int vh_modules_init(void)
{
    if (mods_ready)
        return 0;
    for (int i = 0; i < 2; i++) {
        lists[i].mods = map_anon(MOD_MAX * sizeof(struct mod));
        lists[i].pool = map_anon(POOL_BYTES);
        if (!lists[i].mods || !lists[i].pool)
            return -ENOMEM;
    }
#if defined(__x86_64__)
    db_slots = map_anon(DB_SLOTS * sizeof *db_slots);
    for (unsigned i = 0; i < DB_N; i++)
        db_hooks[i] = vh_sym_self(db_names[i]);
#endif
    vh_main_exe();
    vdso_base = getauxval(AT_SYSINFO_EHDR);
    gather(&lists[0]);
    cur = 0;
    seen_sum = lists[0].adds + lists[0].subs;
    unsigned n = 0;
    dl_iterate_phdr(count_one, &n);
    __atomic_store_n(&startup_objects, n, __ATOMIC_RELEASE);
    mods_ready = 1;
    return 0;
}

void vh_modules_emit_all(struct vh_tls *t)
{
    if (!mods_ready)
        return;
    const struct modlist *l = &lists[cur];
    for (uint32_t i = 0; i < l->n; i++)
        emit(t, l, &l->mods[i]);
}

/* Records the difference between what the capture knows and `now` (just
 * gathered into lists[!cur]). Module lock held. The counters it saw are
 * published last (release): a thread that then finds them current knows the
 * generation bump and the records are done. */
static void diff(struct vh_tls *t, struct modlist *now)
{
    struct modlist *old = &lists[cur];
    /* Unloads first: a new object may sit where an old one was. */
    for (uint32_t i = 0; i < old->n; i++) {
        if (contains(now, old, &old->mods[i]))
            continue;
        __atomic_fetch_add(&vh_module_gen, 1, __ATOMIC_RELEASE);
        db_forget(old->mods[i].lo, old->mods[i].hi);
        vh_record_value(t, VH_REC_MODULE_UNLOAD, old->mods[i].bias, vh_now());
    }
    for (uint32_t i = 0; i < now->n; i++)
        if (!contains(old, now, &now->mods[i]))
            emit(t, now, &now->mods[i]);
    cur = !cur;
    __atomic_store_n(&seen_sum, now->adds + now->subs, __ATOMIC_RELEASE);
}

/* One look at ld.so's list. Lock order: ld.so holds its list's write lock
 * while it calls back, and also while it frees inside dlclose, where our
 * hooks may poll (a free's RSS tick, a stack lookup). So the module lock is
 * only ever taken inside the callback, under ld.so's lock, never the other
 * way round: a thread holding ours and waiting for ld.so's would deadlock
 * with one in dlclose waiting for ours. (The fork prepare handler takes ours
 * alone; glibc's fork takes no loader lock after it.) */
struct look {
    int started, locked;
    int after_diff;                /* the look right after a diff            */
    struct modlist *now;           /* gathered into, when it changed        */
};

static int look_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct look *k = arg;
    if (!k->started) {
        k->started = 1;
        unsigned long long sum = info->dlpi_adds + info->dlpi_subs;
        if (sum == __atomic_load_n(&seen_sum, __ATOMIC_ACQUIRE) && !db_due(k->after_diff))
            return 1;              /* nothing new: the usual case */
        /* Waits for a diff in progress (whose thread no longer needs
         * ld.so's lock); inside fork the prepare handler holds the lock for
         * this thread and vh_lock lets it through. */
        vh_lock(&mod_lock);
        k->locked = 1;
        if (sum == __atomic_load_n(&seen_sum, __ATOMIC_ACQUIRE)) {
            /* No object came or went since the last diff, which dropped
             * the slots of those that went: every open slot is mapped. */
            db_patch();
            return 1;
        }
        k->now = &lists[!cur];
        k->now->n = 0;
        k->now->pool_used = 0;
    }
    uint32_t n = k->now->n;
    gather_cb(info, size, k->now);
    if (k->now->n > n && !contains(&lists[cur], k->now, &k->now->mods[n]))
        db_collect(info);          /* new since the last diff: under ld.so's lock */
    return 0;
}

/* Diffs if ld.so's counters moved since the last completed diff. */
static void poll_modules(struct vh_tls *t)
{
    if (!mods_ready)
        return;
    /* A look that finds the list unchanged binds the open slots
     * (db_patch): after a diff that left some, a second look binds the new
     * libraries' slots at once. */
    for (int pass = 0; pass < 2; pass++) {
        struct look k = { 0, 0, pass, NULL };
        dl_iterate_phdr(look_cb, &k);
        if (k.now)
            diff(t, k.now);
        if (k.locked)
            vh_unlock(&mod_lock);
        if (!k.now || !__atomic_load_n(&db_open, __ATOMIC_ACQUIRE))
            break;
    }
}

/* Called before a new stack is written, on RSS ticks, and by every stack
 * lookup while a dlclose runs: a stack must not name a library whose MODULE
 * record comes later, nor be hashed with a generation an unload has not
 * bumped yet. */
void vh_modules_poll(struct vh_tls *t)
{
    poll_modules(t);
}

void vh_modules_fork_prepare(void)
{
    vh_lock(&mod_lock);
}

void vh_modules_fork_parent(void)
{
    vh_unlock(&mod_lock);
}

/* The child has only the forking thread: no dlclose is running in it. */
void vh_modules_fork_child(void)
{
    mod_lock = 0;
    __atomic_store_n(&vh_modules_closing, 0, __ATOMIC_RELAXED);
}

/* Never below zero: a fork child reset the count under a dlclose of its
 * own thread (a destructor that forks). */
void vh_modules_closing_done(void)
{
    uint32_t n = __atomic_load_n(&vh_modules_closing, __ATOMIC_RELAXED);
    while (n && !__atomic_compare_exchange_n(&vh_modules_closing, &n, n - 1, 1,
                                             __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
}
