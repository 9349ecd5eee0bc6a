/* modules.c — which ELF objects are mapped where, as MODULE records.
 *
 * Each record carries the load bias, the mapped range, the GNU build-id
 * (read from the PT_NOTE in memory) and the path, so stacks can be
 * symbolized later, elsewhere. The list is kept in our own mmap'd copy so a
 * fork child can re-emit it without asking ld.so. Changes are noticed by
 * ld.so's add/remove counters, checked before every new stack is written
 * (the first place a new library's addresses can appear), on RSS ticks, and
 * right after dlclose (interposed: an unload must bump the stack-hash
 * generation before any stack is looked up again). dlopen is deliberately
 * not interposed: glibc resolves RUNPATH and $ORIGIN from dlopen's caller,
 * which would become libvheap.so. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "preload/internal.h"

#define MOD_MAX 8192u
#define POOL_BYTES (1u << 20)

struct mod {
    uint64_t bias, lo, hi;
    uint8_t build_id[32];
    uint32_t build_id_len;
    uint32_t path_off, path_len;
    uint32_t flags;                /* VH_RF_MAIN_EXE */
};

struct modlist {
    struct mod *mods;
    char *pool;
    uint32_t n, pool_used;
    unsigned long long adds, subs; /* ld.so's counters when taken */
};

static struct modlist lists[2];
static int cur;                    /* lists[cur] is what the capture knows */
static int mod_lock;
static int mods_ready;
static unsigned long long seen_adds, seen_subs;   /* atomic */
static char main_exe[VH_EXE_MAX];
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
    const char *path = info->dlpi_name;
    if (!path || !path[0]) {
        if (l->n == 0) {
            path = main_exe;       /* the program itself comes first */
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
    read_build_id(info, m);
    l->n++;
    return 0;
}

static void gather(struct modlist *l)
{
    l->n = 0;
    l->pool_used = 0;
    dl_iterate_phdr(gather_cb, l);
}

static int same(const struct modlist *a, const struct mod *x, const struct modlist *b,
                const struct mod *y)
{
    return x->bias == y->bias && x->lo == y->lo && x->hi == y->hi &&
           x->path_len == y->path_len &&
           memcmp(a->pool + x->path_off, b->pool + y->path_off, x->path_len) == 0;
}

static int contains(const struct modlist *l, const struct modlist *from, const struct mod *m)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (same(l, &l->mods[i], from, m))
            return 1;
    return 0;
}

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
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
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
    ssize_t n = readlink("/proc/self/exe", main_exe, sizeof main_exe - 1);
    main_exe[n > 0 ? n : 0] = '\0';
    vdso_base = getauxval(AT_SYSINFO_EHDR);
    gather(&lists[0]);
    cur = 0;
    seen_adds = lists[0].adds;
    seen_subs = lists[0].subs;
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

/* Re-reads ld.so's list and records the difference. Module lock held. */
static void diff(struct vh_tls *t)
{
    struct modlist *old = &lists[cur], *now = &lists[!cur];
    gather(now);
    __atomic_store_n(&seen_adds, now->adds, __ATOMIC_RELAXED);
    __atomic_store_n(&seen_subs, now->subs, __ATOMIC_RELAXED);
    /* Unloads first: a new object may sit where an old one was. */
    for (uint32_t i = 0; i < old->n; i++) {
        if (contains(now, old, &old->mods[i]))
            continue;
        __atomic_fetch_add(&vh_module_gen, 1, __ATOMIC_RELEASE);
        vh_record_value(t, VH_REC_MODULE_UNLOAD, old->mods[i].bias, vh_now());
    }
    for (uint32_t i = 0; i < now->n; i++)
        if (!contains(old, now, &now->mods[i]))
            emit(t, now, &now->mods[i]);
    cur = !cur;
}

struct counters {
    unsigned long long adds, subs;
};

static int count_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct counters *c = arg;
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
    return 1;                      /* the first object is enough */
}

static void poll_modules(struct vh_tls *t, int wait)
{
    if (!mods_ready)
        return;
    struct counters c = { 0, 0 };
    dl_iterate_phdr(count_cb, &c);
    if (c.adds == __atomic_load_n(&seen_adds, __ATOMIC_RELAXED) &&
        c.subs == __atomic_load_n(&seen_subs, __ATOMIC_RELAXED))
        return;
    if (wait) {
        vh_lock(&mod_lock);
    } else if (!t->in_fork && __atomic_exchange_n(&mod_lock, 1, __ATOMIC_ACQUIRE)) {
        return;                    /* another thread is recording the change */
    }
    diff(t);
    vh_unlock(&mod_lock);
}

/* Called before a new stack is written: wait for a thread that is recording
 * a module change, or this stack could name a library whose MODULE record
 * comes later (another thread's older snapshot). Inside fork the lock is the
 * prepare handler's; poll_modules then goes ahead without it. */
void vh_modules_poll(struct vh_tls *t)
{
    poll_modules(t, !t->in_fork);
}

void vh_modules_fork_prepare(void)
{
    vh_lock(&mod_lock);
}

void vh_modules_fork_parent(void)
{
    vh_unlock(&mod_lock);
}

void vh_modules_fork_child(void)
{
    mod_lock = 0;
}

VH_EXPORT int dlclose(void *handle)
{
    struct vh_tls *t = &vh_tls;
    if (!vh_real.dlclose)
        vh_resolve_real();
    if (!vh_real.dlclose)
        return -1;
    int rc = vh_real.dlclose(handle);
    if (__atomic_load_n(&vh_mode, __ATOMIC_ACQUIRE) == VH_MODE_ON && !t->own &&
        t->guard != VH_G_BUSY) {
        int e = errno;
        uint8_t g = t->guard;
        t->guard = VH_G_BUSY;
        poll_modules(t, 1);
        t->guard = g;
        errno = e;
    }
    return rc;
}
