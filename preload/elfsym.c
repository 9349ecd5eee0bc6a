/* elfsym.c — symbol lookup by reading loaded objects' dynamic symbol tables.
 *
 * The shim finds the real allocator (and the C++ operators, and the vDSO's
 * clock) from inside a hook, where the program may hold any glibc lock.
 * dlsym is unfit there: a failed lookup leaves an error that only dlerror()
 * clears, and dlerror() translates it through dcgettext, which takes
 * _nl_state_lock; bindtextdomain's first malloc holds that lock for
 * writing, so the read lock fails and the unlock that follows releases the
 * caller's write lock (libgpg-error's constructor hung curl, gpg, ps and
 * Vere that way). Even a successful dlsym discards an error the program
 * has pending. Reading the tables ourselves allocates nothing, sets no
 * error, and takes only dl_iterate_phdr's lock, which is recursive. */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>

#include "preload/internal.h"

struct dyn_tables {
    uintptr_t bias;
    const ElfW(Sym) *sym;
    const char *str;
    const uint32_t *hash;          /* DT_HASH (SysV)                        */
    const uint32_t *gnu_hash;      /* DT_GNU_HASH                           */
    const ElfW(Half) *versym;      /* DT_VERSYM, or NULL                    */
};

/* ld.so relocates the d_ptr entries of the objects it loaded (and of the
 * vDSO); a raw image's are link-time addresses. */
static const void *dyn_ptr(uintptr_t bias, ElfW(Addr) p)
{
    return (const void *)(p < bias ? bias + p : p);
}

static int tables_of(uintptr_t bias, const ElfW(Phdr) *ph, int phnum, struct dyn_tables *d)
{
    const ElfW(Dyn) *dyn = NULL;
    memset(d, 0, sizeof *d);
    d->bias = bias;
    for (int i = 0; i < phnum; i++)
        if (ph[i].p_type == PT_DYNAMIC)
            dyn = (const void *)(bias + ph[i].p_vaddr);
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB: d->sym = dyn_ptr(bias, dyn->d_un.d_ptr); break;
        case DT_STRTAB: d->str = dyn_ptr(bias, dyn->d_un.d_ptr); break;
        case DT_HASH: d->hash = dyn_ptr(bias, dyn->d_un.d_ptr); break;
        case DT_GNU_HASH: d->gnu_hash = dyn_ptr(bias, dyn->d_un.d_ptr); break;
        case DT_VERSYM: d->versym = dyn_ptr(bias, dyn->d_un.d_ptr); break;
        default: break;
        }
    }
    return d->sym && d->str && (d->hash || d->gnu_hash) ? 0 : -1;
}

/* A definition dlsym would return for the name: defined, global or weak,
 * and the default version (a compat version, name@VER, is hidden). */
static int is_default_def(const struct dyn_tables *d, uint32_t i, const char *name)
{
    const ElfW(Sym) *s = &d->sym[i];
    int bind = ELF64_ST_BIND(s->st_info), type = ELF64_ST_TYPE(s->st_info);
    if (s->st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK))
        return 0;
    if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT && type != STT_NOTYPE)
        return 0;
    if (d->versym && ((d->versym[i] & 0x8000) || d->versym[i] == 0))
        return 0;
    return strcmp(d->str + s->st_name, name) == 0;
}

static uint32_t gnu_hash_of(const char *name)
{
    uint32_t h = 5381;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = h * 33 + *p;
    return h;
}

static uint32_t sysv_hash_of(const char *name)
{
    uint32_t h = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h = (h << 4) + *p;
        uint32_t g = h & 0xf0000000u;
        h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

static const ElfW(Sym) *find_gnu(const struct dyn_tables *d, const char *name)
{
    const uint32_t *h = d->gnu_hash;
    uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2], shift = h[3];
    if (!nbuckets || !bloom_size)
        return NULL;
    const ElfW(Addr) *bloom = (const void *)&h[4];
    const uint32_t *buckets = (const void *)&bloom[bloom_size];
    const uint32_t *chain = &buckets[nbuckets];
    uint32_t hash = gnu_hash_of(name);
    const unsigned bits = sizeof(ElfW(Addr)) * 8;
    ElfW(Addr) word = bloom[(hash / bits) % bloom_size];
    ElfW(Addr) mask = ((ElfW(Addr))1 << (hash % bits)) | ((ElfW(Addr))1 << ((hash >> shift) % bits));
    if ((word & mask) != mask)
        return NULL;
    uint32_t i = buckets[hash % nbuckets];
    if (i < symoffset)
        return NULL;
    for (;; i++) {
        uint32_t h2 = chain[i - symoffset];
        if ((h2 | 1) == (hash | 1) && is_default_def(d, i, name))
            return &d->sym[i];
        if (h2 & 1)
            return NULL;
    }
}

static const ElfW(Sym) *find_sysv(const struct dyn_tables *d, const char *name)
{
    const uint32_t *h = d->hash;
    uint32_t nbucket = h[0], nchain = h[1];
    if (!nbucket)
        return NULL;
    const uint32_t *bucket = &h[2], *chain = &bucket[nbucket];
    for (uint32_t i = bucket[sysv_hash_of(name) % nbucket], n = 0; i && i < nchain && n < nchain;
         i = chain[i], n++)
        if (is_default_def(d, i, name))
            return &d->sym[i];
    return NULL;
}

/* The definition of name in one object, or NULL; *ifunc set when it is an
 * indirect function (the address found is then its resolver's). */
static void *lookup_in(uintptr_t bias, const ElfW(Phdr) *ph, int phnum, const char *name,
                       int *ifunc)
{
    struct dyn_tables d;
    if (tables_of(bias, ph, phnum, &d) < 0)
        return NULL;
    const ElfW(Sym) *s = d.gnu_hash ? find_gnu(&d, name) : find_sysv(&d, name);
    if (!s)
        return NULL;
    *ifunc = ELF64_ST_TYPE(s->st_info) == STT_GNU_IFUNC;
    return (void *)(bias + s->st_value);
}

static int holds(const struct dl_phdr_info *info, uintptr_t a)
{
    for (int k = 0; k < info->dlpi_phnum; k++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
        if (ph->p_type == PT_LOAD && a - (info->dlpi_addr + ph->p_vaddr) < ph->p_memsz)
            return 1;
    }
    return 0;
}

struct next_query {
    const char *name;
    uintptr_t self;                /* an address inside libvheap.so         */
    int past_self, ifunc;
    void *found;
};

static int next_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct next_query *q = arg;
    (void)size;
    if (!q->past_self) {
        q->past_self = holds(info, q->self);
        return 0;
    }
    q->found = lookup_in(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, q->name, &q->ifunc);
    return q->found != NULL;
}

/* The first definition after the shim in the loader's order (what
 * dlsym(RTLD_NEXT) finds for a preloaded library, except that objects
 * dlopen'ed RTLD_LOCAL are searched too, which is what the C++ operators of
 * such a library's libstdc++ need). NULL if none. An indirect function is
 * left to dlsym, which then succeeds: no error is left behind. */
void *vh_sym_next(const char *name)
{
    struct next_query q = { .name = name, .self = (uintptr_t)&vh_sym_next };
    dl_iterate_phdr(next_cb, &q);
    if (q.found && q.ifunc)
        return dlsym(RTLD_NEXT, name);
    return q.found;
}

/* vh_sym_next(name), looked up at the first call and kept in *slot (a
 * NULL answer is asked again next time). */
void *vh_sym_next_once(void **slot, const char *name)
{
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!f) {
        f = vh_sym_next(name);
        __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    }
    return f;
}

static int self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct next_query *q = arg;
    (void)size;
    if (!holds(info, q->self))
        return 0;
    q->found = lookup_in(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, q->name, &q->ifunc);
    return 1;
}

/* The shim's own exported definition of `name` (a hook's address, for a
 * file below the hooks that may not name them), or NULL. */
void *vh_sym_self(const char *name)
{
    struct next_query q = { .name = name, .self = (uintptr_t)&vh_sym_next };
    dl_iterate_phdr(self_cb, &q);
    return q.found;
}

struct same_query {
    const char *name;
    const void *addr;
    int same;
};

static int same_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct same_query *q = arg;
    int ifunc = 0;
    (void)size;
    if (!lookup_in(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, q->name, &ifunc))
        return 0;
    q->same = holds(info, (uintptr_t)q->addr);
    return 1;
}

/* Whether `addr` lies in the first loaded object that defines `name`
 * (whose malloc a resolved function is, without dladdr). */
int vh_sym_same_object(const char *name, const void *addr)
{
    struct same_query q = { .name = name, .addr = addr };
    dl_iterate_phdr(same_cb, &q);
    return q.same;
}

/* A function of the vDSO (not in dlsym's scope at all), or NULL. */
void *vh_sym_vdso(const char *name)
{
    const ElfW(Ehdr) *eh = (const void *)getauxval(AT_SYSINFO_EHDR);
    if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64)
        return NULL;
    const ElfW(Phdr) *ph = (const void *)((uintptr_t)eh + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0) {
            int ifunc = 0;
            uintptr_t bias = (uintptr_t)eh - ph[i].p_vaddr;
            void *f = lookup_in(bias, ph, eh->e_phnum, name, &ifunc);
            return ifunc ? NULL : f;
        }
    }
    return NULL;
}
