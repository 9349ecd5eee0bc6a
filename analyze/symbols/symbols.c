/* symbols.c — the resolver: modules and frames in, functions, files, lines
 * and inline chains out, with elfutils libdw and no DB (symbols_db.c writes
 * the rows). A Dwfl session a file, the file at a base of our choosing
 * (frames carry module_offset, so the run's own layout does not matter),
 * each distinct address resolved once, on a thread of its own while the
 * loader streams (symbols__start) or on the caller's. */
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyze/util/cmp.h"
#include "analyze/util/diag.h"
#include "analyze/util/grow.h"
#include "analyze/util/map.h"
#include "analyze/util/strtab.h"
#include "analyze/symbols/demangle.h"
#include "analyze/symbols/symbols.h"
#include "analyze/util/path.h"

/* access()'s F_OK (unistd.h, fcntl.h) is not used here: F_OK below is a
 * file state. */
#undef F_OK

/* Session bases for shared objects start far above where any ET_EXEC sits
 * (libdw places those at their link-time addresses, whatever base we ask). */
#define BASE_START (1ull << 44)
#define BASE_GAP (1ull << 24)
/* libdw's own, when given none: beside the file, its .debug, /usr/lib/debug */
#define DEFAULT_DEBUGINFO_PATH ":.debug:/usr/lib/debug"
#define MAX_WARNINGS 20

enum file_state { F_UNUSED, F_OK, F_MISSING, F_REBUILT };

struct elf_sym {                   /* a function symbol, session address    */
    Dwarf_Addr addr, size;
    const char *name;              /* owned by libdw                        */
    char *shown;                   /* demangled, made on first use          */
    int rank;                      /* lower wins at one address             */
};

struct cu_range {                  /* a CU's address range (no aranges)     */
    Dwarf_Addr lo, hi;             /* DWARF addresses                       */
    Dwarf_Die cu;
};

/* One distinct (path, build-id): one Dwfl session and module, shared by
 * every load of that file (a library dlopen'ed twice is one file), opened
 * when its first frame comes. A session of its own, so that where a file
 * sits in it does not depend on which files came before. */
struct sym_file {
    char *path, *build_id;         /* "" when none                          */
    Dwfl *dwfl;                    /* NULL until opened                      */
    Dwfl_Module *mod;
    struct cu_range *cus;          /* sorted; built on the first miss       */
    size_t ncus;
    int cus_loaded;
    struct elf_sym *syms;          /* sorted by addr; loaded on first use   */
    size_t nsyms;
    int syms_loaded;
    Dwarf_Addr bias;               /* session address of module_offset 0    */
    enum file_state state;
    char *why;                     /* F_MISSING: libdw's reason              */
    size_t frames;                 /* frames pointing into it               */
};

/* One function level at an address: [0] the innermost (maybe inlined), the
 * last the out-of-line function. file/line: where in that function. */
struct level {
    char *function;                /* malloc'd                              */
    const char *file;              /* libdw's or the path cache's            */
    int line;
};

/* Absolute source paths by libdw's string (stable for the session), so each
 * file name is composed once, not once per frame. */
struct path_cache {
    const char **keys;
    char **vals;
    size_t cap, n;
};

/* Out-of-line functions of one CU, sorted by address (see cu_index). */
struct fn_range {
    Dwarf_Addr lo, hi;             /* CU-relative (DWARF) addresses         */
    Dwarf_Off off;                 /* the subprogram DIE                    */
};

struct cu_fns {
    Dwarf *dbg;                    /* NULL: empty slot                      */
    Dwarf_Off cu_off;
    struct fn_range *r;
    size_t n, cap;
};

struct cu_cache {                  /* open addressing on (dbg, cu_off)      */
    struct cu_fns *slots;
    size_t cap, n;
};

/* ---- results: no libdw in them ---- */
struct res_level {
    char *function;                /* malloc'd                              */
    uint32_t file;                 /* in resolver.names; 0 none             */
    int line;
};
struct res_addr {                  /* one distinct (file, offset)           */
    size_t lv0;                    /* its levels in resolver.lv_out         */
    uint32_t nlv;                  /* 0: nothing found                      */
};
struct res_frame {                 /* a frame with a result                 */
    int64_t frame_id;
    size_t addr;                   /* in resolver.addrs                     */
};

/* A module or frame as given, waiting in the queue. */
struct sym_in {
    int64_t id, module;            /* module: 0 none                        */
    uint64_t offset;
    char *key;                     /* a module's "path\0build_id\0"; NULL:
                                      a frame                               */
    size_t keylen;                 /* of path\0build_id (no last NUL)       */
};

/* The resolving side: used by one thread only (the resolver's own, or the
 * caller's in finish). */
struct resolver {
    int rc;                        /* -errno of the first failure, 0        */
    int cancel;                    /* symbols__free: take no more (atomic)  */
    char err[512];
    Dwfl_Callbacks cb;
    char *debuginfo_path;          /* NULL: libdw's default                 */
    const struct symbols_opts *opts;     /* NULL: none                     */
    struct vh_strtab *keys;        /* "path\0build_id" -> file index + 1    */
    struct sym_file *files;
    size_t nfiles, capfiles;
    struct vh_map *mods;           /* module id -> file index + 1           */
    struct vh_map *addr_map;       /* (file index, offset) -> addrs index+1 */
    struct sym_in *waiting;        /* frames whose module has not come      */
    size_t nwaiting, capwaiting;
    struct level *lv;
    size_t nlv, caplv;
    struct path_cache paths;
    struct cu_cache cus;
    Dwarf_Die *chain;              /* scopes at one address, outermost first */
    size_t nchain, capchain;
    size_t frames;
    /* what finish hands over */
    struct vh_strtab *names;       /* source file names                     */
    struct res_level *lv_out;
    size_t nlv_out, caplv_out;
    struct res_addr *addrs;
    size_t naddrs, capaddrs;
    struct res_frame *out;
    size_t nout, capout;
    size_t missing, rebuilt;
};

struct symbols {
    struct resolver r;
    /* the queue, under mu: the producer appends, the thread takes it whole
     * (swapping arrays) when QUEUE_BATCH rows wait or every QUEUE_WAIT_MS */
    struct sym_in *in;
    size_t nin, capin;
    int push_oom;                  /* a row could not be queued             */
    pthread_mutex_t mu;
    pthread_cond_t cv;             /* rows in `in`, closing, or done         */
    pthread_t thread;
    int started, waiting, closing, done, finished;
    struct symbols_level *view;    /* symbols__result's levels              */
    size_t capview;
};

static int oom(struct resolver *r)
{
    if (!r->rc) {
        snprintf(r->err, sizeof r->err, "symbols: out of memory");
        r->rc = -ENOMEM;
    }
    return -ENOMEM;
}

/* ---- the Dwfl sessions --------------------------------------------------- */

/* Lowercase hex of the module's build-id, "" if it has none. */
static void build_id_hex(Dwfl_Module *mod, char *hex, size_t len)
{
    const unsigned char *bits = NULL;
    GElf_Addr vaddr;
    int n = dwfl_module_build_id(mod, &bits, &vaddr);
    size_t o = 0;
    hex[0] = '\0';
    for (int i = 0; i < n && o + 3 <= len; i++)
        o += (size_t)snprintf(hex + o, len - o, "%02x", bits[i]);
}

/* The recorded build-id may be cut at 32 bytes (the capture's field). */
static int build_id_matches(const char *recorded, const char *actual)
{
    size_t rl = strlen(recorded), al = strlen(actual);
    if (rl == 64 && al > rl)
        al = rl;
    return rl == al && !strncasecmp(recorded, actual, rl);
}

/* dwfl_report_elf on `path`, which must be a regular file: the paths come
 * from the capture, and a FIFO or a device there must neither block the load
 * nor feed it forever. NULL with the reason copied into why[whylen] (why may
 * be NULL): this runs on the resolver's thread, so strerror's buffer is not
 * ours to keep. */
static Dwfl_Module *report_regular(Dwfl *dwfl, const char *name, const char *path,
                                   Dwarf_Addr base, char *why, size_t whylen)
{
    struct stat sb;
    Dwfl_Module *mod;
    const char *msg = NULL;
    char buf[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

    if (fd < 0) {
        int e = errno;
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
        msg = strerror_r(e, buf, sizeof buf);      /* GNU: char *, maybe not buf */
#else
        if (strerror_r(e, buf, sizeof buf))        /* XSI: int */
            snprintf(buf, sizeof buf, "error %d", e);
        msg = buf;
#endif
        mod = NULL;
    } else if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        msg = "not a regular file";
        close(fd);
        mod = NULL;
    } else {
        mod = dwfl_report_elf(dwfl, name, path, fd, base, true);
        if (!mod) {                /* on success libdw owns fd */
            msg = dwfl_errmsg(-1);
            close(fd);
        }
    }
    if (!mod && why && whylen)
        snprintf(why, whylen, "%s", msg ? msg : "cannot open");
    return mod;
}

/* A file gone from its path may still be in a debug directory under its
 * build-id: Debian links .build-id/xx/rest to the binary, and a .debug file
 * keeps the program headers and symbols, enough to resolve. */
static Dwfl_Module *report_by_build_id(struct resolver *r, struct sym_file *f,
                                       Dwarf_Addr base)
{
    const char *id = f->build_id;
    if (!id || strlen(id) < 4)
        return NULL;
    const char *dirs = r->debuginfo_path ? r->debuginfo_path : DEFAULT_DEBUGINFO_PATH;
    char dir[4096], path[4096 + 160];
    while (*dirs) {
        size_t n = strcspn(dirs, ":");
        if (n && dirs[0] == '/' && n < sizeof dir) {
            memcpy(dir, dirs, n);
            dir[n] = '\0';
            static const char *const suffix[] = {"", ".debug"};
            for (int k = 0; k < 2; k++) {
                snprintf(path, sizeof path, "%s/.build-id/%.2s/%.128s%s", dir, id, id + 2,
                         suffix[k]);
                Dwfl_Module *mod = report_regular(f->dwfl, f->path, path, base, NULL, 0);
                if (mod)
                    return mod;
            }
        }
        dirs += n + (dirs[n] == ':');
    }
    return NULL;
}

/* The module just reported, if it is the file that ran: its recorded
 * build-id matches (or none was recorded: nothing to check against) and
 * its ELF is readable. The next file goes above it either way: it stays in
 * the session, and modules must not overlap. */
static enum file_state check_reported(struct resolver *r, struct sym_file *f,
                                      Dwfl_Module *mod, Dwarf_Addr *base)
{
    Dwarf_Addr start = 0, end = 0, bias = 0;
    dwfl_module_info(mod, NULL, &start, &end, NULL, NULL, NULL, NULL);
    if (end + BASE_GAP > *base)
        *base = (end + 2 * BASE_GAP - 1) & ~(BASE_GAP - 1);
    char hex[2 * 256 + 1];
    build_id_hex(mod, hex, sizeof hex);
    if (f->build_id && f->build_id[0] && !build_id_matches(f->build_id, hex))
        return F_REBUILT;
    if (!dwfl_module_getelf(mod, &bias)) {
        free(f->why);
        f->why = strdup(dwfl_errmsg(-1) ? dwfl_errmsg(-1) : "bad ELF file");
        return F_MISSING;
    }
    f->mod = mod;
    f->bias = bias;
    return F_OK;
}

/* The places a moved file may be now (symbols_opts), then its path. */
static size_t candidates(const struct resolver *r, const struct sym_file *f, char (*out)[4096],
                         size_t max)
{
    const struct symbols_opts *o = r->opts;
    size_t n = 0, plen = strlen(f->path);
    for (size_t i = 0; o && i < o->nexe_paths && n + 1 < max; i++) {
        const char *eq = strchr(o->exe_paths[i], '=');
        size_t ol = eq ? (size_t)(eq - o->exe_paths[i]) : 0;
        while (ol > 1 && o->exe_paths[i][ol - 1] == '/')
            ol--;                  /* "dir/" as "dir" */
        if (!eq || !ol || plen < ol || memcmp(f->path, o->exe_paths[i], ol) ||
            (f->path[ol] && f->path[ol] != '/'))
            continue;
        if (snprintf(out[n], sizeof out[n], "%s%s", eq + 1, f->path + ol) < (int)sizeof out[n])
            n++;
    }
    const char *name = vh_base_name(f->path);
    for (size_t i = 0; o && *name && i < o->nsearch_dirs && n + 1 < max; i++)
        if (snprintf(out[n], sizeof out[n], "%s/%s", o->search_dirs[i], name) <
            (int)sizeof out[n])
            n++;
    snprintf(out[n++], sizeof out[0], "%s", f->path);
    return n;
}

static void report_file(struct resolver *r, struct sym_file *f, Dwarf_Addr *base)
{
    char paths[16][4096];
    char why[256] = "no file name";
    int rebuilt = 0;
    size_t n = f->path && f->path[0] ? candidates(r, f, paths, 16) : 0;
    for (size_t i = 0; i < n; i++) {
        /* the recorded path (the last) is the one whose reason is told */
        Dwfl_Module *mod = report_regular(f->dwfl, f->path, paths[i], *base,
                                          i == n - 1 ? why : NULL, sizeof why);
        if (!mod)
            continue;
        enum file_state st = check_reported(r, f, mod, base);
        if (st == F_OK) {
            f->state = F_OK;
            return;
        }
        rebuilt |= st == F_REBUILT;
    }
    /* Gone or rebuilt alike: the file that ran may still be in a debug
     * directory under its build-id (a rebuild replaced the binary, not the
     * .debug file kept from the old one). */
    Dwfl_Module *mod = report_by_build_id(r, f, *base);
    enum file_state st = mod ? check_reported(r, f, mod, base) : F_MISSING;
    if (st != F_OK && rebuilt)
        st = F_REBUILT;
    else if (st != F_OK && !f->why)
        f->why = strdup(why);
    f->state = st;
}


/* VHEAP_DEBUGINFO_PATH and the search directories come before libdw's
 * default directories, not instead of them. A search directory is named
 * from the working directory, while libdw (and the build-id lookup, which
 * takes absolute entries only) would read a relative entry as relative to
 * each module's own directory: it goes in absolute. */
static int debuginfo_setup(struct resolver *r)
{
    const char *env = getenv("VHEAP_DEBUGINFO_PATH");
    const struct symbols_opts *o = r->opts;
    if ((env && *env) || (o && o->nsearch_dirs)) {
        size_t len = sizeof DEFAULT_DEBUGINFO_PATH + (env ? strlen(env) + 1 : 0);
        for (size_t i = 0; o && i < o->nsearch_dirs; i++)
            len += PATH_MAX + 1;
        if (!(r->debuginfo_path = malloc(len)))
            return -ENOMEM;
        char *p = r->debuginfo_path, abs[PATH_MAX];
        if (env && *env)
            p += sprintf(p, "%s:", env);
        for (size_t i = 0; o && i < o->nsearch_dirs; i++)
            p += sprintf(p, "%s:", realpath(o->search_dirs[i], abs) ? abs : o->search_dirs[i]);
        strcpy(p, DEFAULT_DEBUGINFO_PATH);
    }
    r->cb.find_elf = dwfl_build_id_find_elf;
    r->cb.find_debuginfo = dwfl_standard_find_debuginfo;
    r->cb.section_address = dwfl_offline_section_address;
    r->cb.debuginfo_path = &r->debuginfo_path;
    return 0;
}

/* The file's session, when its first frame comes: F_OK, or why not. */
static int open_file(struct resolver *r, struct sym_file *f)
{
    f->dwfl = dwfl_begin(&r->cb);
    if (!f->dwfl) {
        snprintf(r->err, sizeof r->err, "symbols: libdw: %s", dwfl_errmsg(-1));
        return r->rc = -ENOMEM;
    }
    dwfl_report_begin(f->dwfl);
    Dwarf_Addr base = BASE_START;
    report_file(r, f, &base);
    if (f->state == F_MISSING)
        r->missing++;
    else if (f->state == F_REBUILT)
        r->rebuilt++;
    if (dwfl_report_end(f->dwfl, NULL, NULL) != 0) {
        snprintf(r->err, sizeof r->err, "symbols: libdw: %s", dwfl_errmsg(-1));
        return r->rc = -EIO;
    }
    return 0;
}

/* ---- source paths ---------------------------------------------------------- */

/* Lexically drops "." and "dir/.." components (what addr2line shows; no
 * symlinks are followed: the build tree is usually not on this machine). */
static void normalize(char *p)
{
    int abs = p[0] == '/';
    char *w = p;                   /* end of the output so far              */
    size_t kept = 0;               /* output components ".." may remove     */
    const char *s = p;
    while (*s) {
        while (*s == '/')
            s++;
        if (!*s)
            break;
        size_t n = strcspn(s, "/");
        int dot = n == 1 && s[0] == '.';
        int dotdot = n == 2 && s[0] == '.' && s[1] == '.';
        if (dot || (dotdot && (kept || abs))) {
            if (dotdot && kept) {
                while (w > p && *--w != '/')
                    ;
                kept--;
            }
            s += n;
            continue;
        }
        if (w > p || abs)
            *w++ = '/';
        memmove(w, s, n);
        w += n;
        s += n;
        if (!dotdot)
            kept++;
    }
    if (w == p)
        *w++ = abs ? '/' : '.';
    *w = '\0';
}

/* libdw (0.188) joins a file name with its line-table directory but not a
 * relative directory with the compilation directory, so GCC's DWARF 5 gives
 * "tests/x.c" where addr2line shows "/work/tests/x.c". Joins what is
 * missing; NULL only when out of memory. */
static const char *full_path(struct resolver *r, Dwarf_Die *cu, const char *file)
{
    if (!file || file[0] == '/' || !cu)
        return file;
    struct path_cache *c = &r->paths;
    if (c->n * 2 >= c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        const char **keys = calloc(cap, sizeof *keys);
        char **vals = calloc(cap, sizeof *vals);
        if (!keys || !vals) {
            free(keys);
            free(vals);
            return NULL;
        }
        for (size_t i = 0; i < c->cap; i++) {
            if (!c->keys[i])
                continue;
            size_t h = ((uintptr_t)c->keys[i] >> 3) * 0x9e3779b97f4a7c15ull & (cap - 1);
            while (keys[h])
                h = (h + 1) & (cap - 1);
            keys[h] = c->keys[i];
            vals[h] = c->vals[i];
        }
        free(c->keys);
        free(c->vals);
        c->keys = keys;
        c->vals = vals;
        c->cap = cap;
    }
    size_t h = ((uintptr_t)file >> 3) * 0x9e3779b97f4a7c15ull & (c->cap - 1);
    while (c->keys[h]) {
        if (c->keys[h] == file)
            return c->vals[h];
        h = (h + 1) & (c->cap - 1);
    }

    Dwarf_Attribute a;
    const char *dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a));
    size_t dl = dir ? strlen(dir) : 0;
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    char *v;
    /* Names in the compilation directory itself already carry it. */
    if (dl && !(strncmp(file, dir, dl) == 0 && file[dl] == '/')) {
        size_t len = dl + strlen(file) + 2;
        if ((v = malloc(len)))
            snprintf(v, len, "%.*s/%s", (int)dl, dir, file);
    } else {
        v = strdup(file);
    }
    if (!v)
        return NULL;
    normalize(v);
    c->keys[h] = file;
    c->vals[h] = v;
    c->n++;
    return v;
}

/* ---- one address ---------------------------------------------------------- */

static void clear_levels(struct resolver *r)
{
    for (size_t i = 0; i < r->nlv; i++)
        free(r->lv[i].function);
    r->nlv = 0;
}

static int push_level(struct resolver *r, char *function, const char *file, int line)
{
    if (r->nlv == r->caplv) {
        size_t cap = r->caplv ? r->caplv * 2 : 16;
        void *p = realloc(r->lv, cap * sizeof *r->lv);
        if (!p) {
            free(function);
            return -ENOMEM;
        }
        r->lv = p;
        r->caplv = cap;
    }
    r->lv[r->nlv++] = (struct level){function, file, line};
    return 0;
}

static char *readable(const char *name)
{
    if (!name)
        return NULL;
    char *d = vh_demangle(name);
    return d ? d : strdup(name);
}

/* What a person calls the function of a subprogram or inlined-instance DIE:
 * the demangled linkage name (qualified, with parameter types), else the
 * plain name. dwarf_attr_integrate follows abstract_origin/specification,
 * where inlined instances and out-of-class definitions keep their names. */
static char *die_function(Dwarf_Die *die)
{
    Dwarf_Attribute a;
    const char *linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
    if (!linkage)
        linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
    char *d = linkage ? vh_demangle(linkage) : NULL;
    if (d)
        return d;
    const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
    if (!name)
        name = linkage;
    return name ? strdup(name) : NULL;
}

static int is_function(Dwarf_Die *die)
{
    int tag = dwarf_tag(die);
    return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
           tag == DW_TAG_entry_point;
}

/* ---- ELF symbols -------------------------------------------------------------
 * dwfl_module_addrinfo scans the whole symbol table on every call; a module
 * without DWARF (libstdc++ without its -dbg) has thousands of frames, so the
 * function symbols are sorted once and searched. */

static int sym_order(const void *a, const void *b)
{
    const struct elf_sym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank - y->rank;
    return strcmp(x->name, y->name);   /* deterministic among aliases */
}

/* At one address: a global name before a weak one before a local one, a
 * sized symbol before a label, fewer leading underscores (strdup, not
 * __strdup) — what a person would call it. */
static int sym_rank(const GElf_Sym *sym, const char *name)
{
    int bind = GELF_ST_BIND(sym->st_info);
    int rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 8 : 16;
    if (!sym->st_size)
        rank += 4;
    int u = 0;
    while (name[u] == '_' && u < 3)
        u++;
    return rank + u;
}

static int load_syms(struct sym_file *f)
{
    f->syms_loaded = 1;
    int n = dwfl_module_getsymtab(f->mod);
    if (n <= 0)
        return 0;
    f->syms = calloc((size_t)n, sizeof *f->syms);
    if (!f->syms)
        return -ENOMEM;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        const char *name = dwfl_module_getsym_info(f->mod, i, &sym, &addr, &shndx, NULL, NULL);
        int type = name ? GELF_ST_TYPE(sym.st_info) : -1;
        if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS ||
            (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
            continue;
        f->syms[f->nsyms++] = (struct elf_sym){addr, sym.st_size, name, NULL,
                                               sym_rank(&sym, name)};
    }
    qsort(f->syms, f->nsyms, sizeof *f->syms, sym_order);
    return 0;
}

/* The function symbol containing pc, else the nearest one before it (a
 * sizeless assembly label), demangled; NULL if none. */
static const char *symbol_at(struct sym_file *f, Dwarf_Addr pc)
{
    if (!f->syms_loaded && load_syms(f) < 0)
        return NULL;
    size_t lo = VH_PARTITION_POINT(i, f->nsyms, f->syms[i].addr <= pc);
    if (!lo)
        return NULL;
    /* lo - 1 is the last symbol at or below pc; the best-ranked symbol at
     * that address comes first among its aliases. */
    size_t i = lo - 1;
    Dwarf_Addr at = f->syms[i].addr;
    while (i > 0 && f->syms[i - 1].addr == at)
        i--;
    struct elf_sym *best = &f->syms[i];
    /* A sized symbol that ends before pc does not hold it: look for one
     * just before that does (nested or overlapping symbols), else nothing.
     * A label (no size) is taken to reach up to pc, as addr2line does. */
    if (best->size && pc >= best->addr + best->size) {
        for (size_t k = i, tries = 0; k-- > 0 && tries < 16; tries++) {
            const struct elf_sym *s = &f->syms[k];
            if (s->size && pc < s->addr + s->size) {
                best = &f->syms[k];
                break;
            }
        }
        if (best->size && pc >= best->addr + best->size)
            return NULL;
    }
    if (!best->shown)
        best->shown = readable(best->name);
    return best->shown;
}

/* ---- the function scopes at an address ------------------------------------
 * dwarf_getscopes walks the whole CU for every address (and dwarf_getscopes_die
 * walks it again): 13 s for 100K frames in libc, worse on big C++ CUs. Instead
 * each CU, the first time an address falls in it, gets a sorted table of its
 * out-of-line functions' ranges; an address then costs a binary search and
 * a descent through one function's own DIEs. */

/* Adds each address range of a subprogram DIE (hot and cold parts too). */
static int index_add(struct cu_fns *ix, Dwarf_Die *die)
{
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
        if (lo >= hi)
            continue;
        if (ix->n == ix->cap) {
            size_t cap = ix->cap ? ix->cap * 2 : 64;
            void *p = realloc(ix->r, cap * sizeof *ix->r);
            if (!p)
                return -ENOMEM;
            ix->r = p;
            ix->cap = cap;
        }
        ix->r[ix->n++] = (struct fn_range){lo, hi, dwarf_dieoffset(die)};
    }
    return 0;
}

/* Subprograms sit at the CU's top level (C, C++ definitions) or inside
 * namespaces and types (Rust, some C++); nested functions are reached by
 * the descent from their parent, so subprograms are not entered. */
static int index_walk(struct cu_fns *ix, Dwarf_Die *parent, unsigned depth)
{
    Dwarf_Die child;
    if (depth > 64 || dwarf_child(parent, &child) != 0)
        return 0;
    do {
        switch (dwarf_tag(&child)) {
        case DW_TAG_subprogram:
            if (index_add(ix, &child) < 0)
                return -ENOMEM;
            break;
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_interface_type:
            if (dwarf_haschildren(&child) && index_walk(ix, &child, depth + 1) < 0)
                return -ENOMEM;
            break;
        }
    } while (dwarf_siblingof(&child, &child) == 0);
    return 0;
}

static int by_lo(const void *a, const void *b)
{
    const struct fn_range *x = a, *y = b;
    return vh_cmp2(x->lo, y->lo, x->off, y->off);
}

static struct cu_fns *cu_index(struct resolver *r, Dwarf_Die *cu)
{
    struct cu_cache *c = &r->cus;
    Dwarf *dbg = dwarf_cu_getdwarf(cu->cu);
    Dwarf_Off off = dwarf_dieoffset(cu);
    if (c->n * 2 >= c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        struct cu_fns *slots = calloc(cap, sizeof *slots);
        if (!slots)
            return NULL;
        for (size_t i = 0; i < c->cap; i++) {
            if (!c->slots[i].dbg)
                continue;
            size_t h = (((uintptr_t)c->slots[i].dbg >> 4) ^ c->slots[i].cu_off) *
                           0x9e3779b97f4a7c15ull & (cap - 1);
            while (slots[h].dbg)
                h = (h + 1) & (cap - 1);
            slots[h] = c->slots[i];
        }
        free(c->slots);
        c->slots = slots;
        c->cap = cap;
    }
    size_t h = (((uintptr_t)dbg >> 4) ^ off) * 0x9e3779b97f4a7c15ull & (c->cap - 1);
    while (c->slots[h].dbg) {
        if (c->slots[h].dbg == dbg && c->slots[h].cu_off == off)
            return &c->slots[h];
        h = (h + 1) & (c->cap - 1);
    }
    struct cu_fns *ix = &c->slots[h];
    *ix = (struct cu_fns){.dbg = dbg, .cu_off = off};
    c->n++;
    if (index_walk(ix, cu, 0) < 0)
        return NULL;
    if (ix->n)
        qsort(ix->r, ix->n, sizeof *ix->r, by_lo);
    return ix;
}

static int push_scope(struct resolver *r, Dwarf_Die *die)
{
    if (r->nchain == r->capchain) {
        size_t cap = r->capchain ? r->capchain * 2 : 32;
        void *p = realloc(r->chain, cap * sizeof *r->chain);
        if (!p)
            return -ENOMEM;
        r->chain = p;
        r->capchain = cap;
    }
    r->chain[r->nchain++] = *die;
    return 0;
}

static int is_scope(int tag)
{
    return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
           tag == DW_TAG_subprogram || tag == DW_TAG_entry_point || tag == DW_TAG_try_block ||
           tag == DW_TAG_catch_block || tag == DW_TAG_with_stmt;
}

/* r->chain = the scopes containing dpc from the out-of-line function inward
 * (outermost first). 0 with an empty chain when the index has no function
 * there; -ENOMEM. */
static int fast_chain(struct resolver *r, Dwarf_Die *cu, Dwarf_Addr dpc)
{
    struct cu_fns *ix = cu_index(r, cu);
    if (!ix)
        return -ENOMEM;
    /* The last range starting at or before dpc, looking back a little in
     * case ranges overlap (nested or split functions). */
    size_t lo = VH_PARTITION_POINT(i, ix->n, ix->r[i].lo <= dpc);
    /* Among aliases at one address (the assembler makes a DIE per symbol)
     * the first DIE wins, as with dwarf_getscopes. */
    const struct fn_range *hit = NULL;
    for (size_t i = lo, k = 0; i > 0 && k < 16; i--, k++) {
        const struct fn_range *c = &ix->r[i - 1];
        if (hit && c->lo != hit->lo)
            break;
        if (c->lo <= dpc && dpc < c->hi)
            hit = c;
    }
    Dwarf_Die die;
    if (!hit || !dwarf_offdie(dwarf_cu_getdwarf(cu->cu), hit->off, &die))
        return 0;
    if (push_scope(r, &die) < 0)
        return -ENOMEM;
    /* Descend into the child scope that holds dpc, as dwarf_getscopes
     * would; DIEs without ranges hold no code and are passed over. */
    for (unsigned depth = 0; depth < 256; depth++) {
        Dwarf_Die child;
        int found = 0;
        if (dwarf_child(&r->chain[r->nchain - 1], &child) != 0)
            break;
        do {
            if (is_scope(dwarf_tag(&child)) && dwarf_haspc(&child, dpc) == 1) {
                found = 1;
                break;
            }
        } while (dwarf_siblingof(&child, &child) == 0);
        if (!found)
            break;
        if (push_scope(r, &child) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* The general way, for what the index does not cover (an entry point, a
 * function in an unusual place): dwarf_getscopes continues past an inlined
 * instance with its abstract origin's scopes, so the concrete nesting is
 * taken from the DIE parents of the innermost scope. */
static int slow_chain(struct resolver *r, Dwarf_Die *cu, Dwarf_Addr dpc)
{
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes(cu, dpc, &scopes);
    if (n <= 0)
        return 0;
    Dwarf_Die inner = scopes[0];
    free(scopes);
    scopes = NULL;
    n = dwarf_getscopes_die(&inner, &scopes);
    int rc = 0;
    for (int i = n - 1; i >= 0 && rc == 0; i--)   /* outermost first */
        rc = push_scope(r, &scopes[i]);
    free(scopes);
    return rc;
}

/* libdw 0.188 finds an address's CU through .debug_aranges only, which
 * clang does not emit: without it dwfl_module_addrdie and
 * dwfl_module_getsrc see nothing. The CUs' own ranges, read once per file,
 * stand in. */
static int cu_range_order(const void *a, const void *b)
{
    const struct cu_range *x = a, *y = b;
    return vh_cmp(x->lo, y->lo);
}

static int load_cu_ranges(struct sym_file *f)
{
    f->cus_loaded = 1;
    Dwarf_Addr bias;
    Dwarf *dbg = dwfl_module_getdwarf(f->mod, &bias);
    if (!dbg)
        return 0;
    size_t cap = 0;
    Dwarf_CU *cu = NULL, *next;
    Dwarf_Die cudie;
    uint8_t unit_type;
    Dwarf_Half version;
    while (dwarf_get_units(dbg, cu, &next, &version, &unit_type, &cudie, NULL) == 0) {
        cu = next;
        if (unit_type != DW_UT_compile && unit_type != DW_UT_skeleton)
            continue;
        Dwarf_Addr base, lo, hi;
        ptrdiff_t off = 0;
        while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
            if (lo >= hi)
                continue;
            if (f->ncus == cap) {
                size_t ncap = cap ? cap * 2 : 64;
                void *p = realloc(f->cus, ncap * sizeof *f->cus);
                if (!p)
                    return -ENOMEM;
                f->cus = p;
                cap = ncap;
            }
            f->cus[f->ncus++] = (struct cu_range){lo, hi, cudie};
        }
    }
    if (f->ncus)
        qsort(f->cus, f->ncus, sizeof *f->cus, cu_range_order);
    return 0;
}

/* The CU holding session address pc, from the CUs' ranges; NULL if none. */
static Dwarf_Die *cu_by_ranges(struct sym_file *f, Dwarf_Addr pc, Dwarf_Addr *dwbias)
{
    if (!f->cus_loaded && load_cu_ranges(f) < 0)
        return NULL;
    if (!f->ncus || !dwfl_module_getdwarf(f->mod, dwbias))
        return NULL;
    Dwarf_Addr dpc = pc - *dwbias;
    size_t lo = VH_PARTITION_POINT(i, f->ncus, f->cus[i].lo <= dpc);
    for (size_t i = lo, k = 0; i > 0 && k < 8; i--, k++)
        if (f->cus[i - 1].lo <= dpc && dpc < f->cus[i - 1].hi)
            return &f->cus[i - 1].cu;
    return NULL;
}

/* Fills r->lv for session address pc (already return address - 1). */
static int resolve_pc(struct resolver *r, struct sym_file *f, Dwarf_Addr pc)
{
    Dwfl_Module *mod = f->mod;
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *dl = dwfl_module_getsrc(mod, pc);
    if (dl)
        file = dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL);

    Dwarf_Addr dwbias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, &dwbias);
    if (!cu && (cu = cu_by_ranges(f, pc, &dwbias)) && !dl) {
        Dwarf_Line *l = dwarf_getsrc_die(cu, pc - dwbias);
        if (l) {
            file = dwarf_linesrc(l, NULL, NULL);
            if (dwarf_lineno(l, &line) != 0)
                line = 0;
        }
    }
    if (file && !(file = full_path(r, cu, file)))
        return -ENOMEM;
    r->nchain = 0;
    if (cu) {
        int rc = fast_chain(r, cu, pc - dwbias);
        if (rc == 0 && r->nchain == 0)
            rc = slow_chain(r, cu, pc - dwbias);
        if (rc < 0)
            return rc;
    }
    if (r->nchain) {
        Dwarf_Files *files = NULL;
        size_t nfiles = 0;
        int have_files = dwarf_getsrcfiles(cu, &files, &nfiles) == 0;
        for (size_t i = r->nchain; i-- > 0;) {           /* innermost first */
            Dwarf_Die *die = &r->chain[i];
            if (!is_function(die))
                continue;
            char *fn = die_function(die);
            if (!fn && dwarf_tag(die) == DW_TAG_inlined_subroutine)
                fn = strdup("??");
            if (push_level(r, fn, file, line) < 0)
                return -ENOMEM;
            if (dwarf_tag(die) != DW_TAG_inlined_subroutine)
                break;
            /* The caller's position is this instance's call site. */
            Dwarf_Attribute a;
            Dwarf_Word v;
            file = NULL;
            line = 0;
            if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &v) == 0 && have_files &&
                v < nfiles) {
                const char *src = dwarf_filesrc(files, v, NULL, NULL);
                if (src && !(file = full_path(r, cu, src)))
                    return -ENOMEM;
            }
            if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &v) == 0)
                line = (int)v;
        }
    }

    /* No DWARF function here (no debug info, assembly, stripped file): the
     * ELF symbol, with the line table's position if there is one. */
    if (r->nlv == 0 || !r->lv[r->nlv - 1].function) {
        const char *name = symbol_at(f, pc);
        char *fn = name ? strdup(name) : NULL;
        if (name && !fn)
            return -ENOMEM;
        if (r->nlv == 0) {
            if (push_level(r, fn, file, line) < 0)
                return -ENOMEM;
        } else {
            r->lv[r->nlv - 1].function = fn;
        }
    }
    return 0;
}


/* ---- taking rows --------------------------------------------------------------- */

static void take_frame(struct resolver *r, const struct sym_in *in);

/* A module row: its file, made when its (path, build-id) is new. */
static void take_module(struct resolver *r, const struct sym_in *in)
{
    int added = 0;
    uint32_t k = vh_strtab__intern(r->keys, in->key, in->keylen, &added);
    if (!k) {
        oom(r);
        return;
    }
    if (added) {                       /* ids count up from 1: k - 1 is next */
        if (vh_grow(&r->files, &r->capfiles, r->nfiles, sizeof *r->files, 16)) {
            oom(r);
            return;
        }
        struct sym_file *f = &r->files[r->nfiles];
        memset(f, 0, sizeof *f);
        size_t pl = strlen(in->key);
        f->path = strdup(in->key);
        f->build_id = strdup(in->key + pl + 1);
        if (!f->path || !f->build_id) {
            free(f->path);
            free(f->build_id);
            oom(r);
            return;
        }
        r->nfiles++;
    }
    int existed;
    struct vh_map_ent *e = vh_map__insert(r->mods, (uint64_t)in->id, 0, &existed);
    if (!e) {
        oom(r);
        return;
    }
    e->v1 = k;                         /* file index + 1 */
    /* frames that came before their module (not from the loader) */
    for (size_t i = 0; i < r->nwaiting && !r->rc;) {
        if (r->waiting[i].module == in->id) {
            struct sym_in w = r->waiting[i];
            r->waiting[i] = r->waiting[--r->nwaiting];
            take_frame(r, &w);
        } else {
            i++;
        }
    }
}

/* Resolves the address into the results; 0, or -ENOMEM. */
static int resolve_addr(struct resolver *r, struct sym_file *f, uint64_t offset,
                        struct res_addr *a)
{
    /* A return address: the call is the byte before it. */
    Dwarf_Addr pc = f->bias + offset - (offset ? 1 : 0);
    int rc = resolve_pc(r, f, pc);
    a->lv0 = r->nlv_out;
    a->nlv = 0;
    if (!rc && vh_reserve(&r->lv_out, &r->caplv_out, r->nlv_out + r->nlv, sizeof *r->lv_out,
                          256))
        rc = -ENOMEM;
    for (size_t i = 0; !rc && i < r->nlv; i++) {
        uint32_t id = 0;
        int added;
        if (r->lv[i].file && !(id = vh_strtab__intern(r->names, r->lv[i].file,
                                                      strlen(r->lv[i].file), &added)))
            rc = -ENOMEM;
        r->lv_out[r->nlv_out + i] = (struct res_level){ r->lv[i].function, id, r->lv[i].line };
        if (!rc)
            r->lv[i].function = NULL;  /* the result owns it now */
    }
    if (!rc) {
        r->nlv_out += r->nlv;
        a->nlv = (uint32_t)r->nlv;
    }
    clear_levels(r);
    return rc;
}

static void take_frame(struct resolver *r, const struct sym_in *in)
{
    if (!in->module)
        return;
    struct vh_map_ent *m = vh_map__find(r->mods, (uint64_t)in->module, 0);
    if (!m) {                          /* its module may come later */
        if (vh_grow(&r->waiting, &r->capwaiting, r->nwaiting, sizeof *r->waiting, 16)) {
            oom(r);
            return;
        }
        r->waiting[r->nwaiting++] = *in;
        return;
    }
    size_t fi = m->v1 - 1;
    struct sym_file *f = &r->files[fi];
    if (!f->dwfl && open_file(r, f))
        return;
    f->frames++;
    if (f->state != F_OK)
        return;
    int existed = 0;
    struct vh_map_ent *e = vh_map__insert(r->addr_map, fi, in->offset, &existed);
    if (!e) {
        oom(r);
        return;
    }
    if (!existed) {
        if (vh_grow(&r->addrs, &r->capaddrs, r->naddrs, sizeof *r->addrs, 256)) {
            oom(r);
            return;
        }
        e->v1 = ++r->naddrs;           /* before resolving: e moves no more */
        if (resolve_addr(r, f, in->offset, &r->addrs[r->naddrs - 1])) {
            oom(r);
            return;
        }
    }
    size_t ai = e->v1 - 1;
    if (!r->addrs[ai].nlv)
        return;
    if (vh_grow(&r->out, &r->capout, r->nout, sizeof *r->out, 1024)) {
        oom(r);
        return;
    }
    r->out[r->nout++] = (struct res_frame){ in->id, ai };
}

static void take(struct resolver *r, struct sym_in *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!r->rc && !__atomic_load_n(&r->cancel, __ATOMIC_RELAXED)) {
            if (in[i].key)
                take_module(r, &in[i]);
            else {
                r->frames++;
                take_frame(r, &in[i]);
            }
        }
        free(in[i].key);
    }
}

/* libdw's objects and the caches over them; the results stay. */
static void release_dw(struct resolver *r)
{
    clear_levels(r);
    free(r->lv);
    r->lv = NULL;
    r->caplv = 0;
    for (size_t i = 0; i < r->paths.cap; i++)
        free(r->paths.vals[i]);
    free(r->paths.keys);
    free(r->paths.vals);
    memset(&r->paths, 0, sizeof r->paths);
    for (size_t i = 0; i < r->cus.cap; i++)
        free(r->cus.slots[i].r);
    free(r->cus.slots);
    memset(&r->cus, 0, sizeof r->cus);
    free(r->chain);
    r->chain = NULL;
    r->nchain = r->capchain = 0;
    for (size_t i = 0; i < r->nfiles; i++) {
        struct sym_file *f = &r->files[i];
        for (size_t k = 0; k < f->nsyms; k++)
            free(f->syms[k].shown);
        free(f->syms);
        free(f->cus);
        f->syms = NULL;
        f->cus = NULL;
        f->nsyms = f->ncus = 0;
        if (f->dwfl)
            dwfl_end(f->dwfl);
        f->dwfl = NULL;
        f->mod = NULL;
    }
    vh_map__free(r->addr_map);
    r->addr_map = NULL;
}

/* ---- the queue and the thread ------------------------------------------------ */

/* The thread is woken when this many rows wait (one wake-up, not one a
 * row), and looks every QUEUE_WAIT_MS anyway: a few rows do not wait for
 * the end of the load, and the producer never makes a system call for one. */
#define QUEUE_BATCH 64
#define QUEUE_WAIT_MS 10

static void *resolve_thread(void *arg)
{
    struct symbols *s = arg;
    struct sym_in *batch = NULL;
    size_t cap = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->nin && !s->closing) {
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_nsec += QUEUE_WAIT_MS * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            s->waiting = 1;
            pthread_cond_timedwait(&s->cv, &s->mu, &until);
            s->waiting = 0;
        }
        struct sym_in *t = s->in;      /* take `in` whole, leave ours */
        size_t n = s->nin, tc = s->capin;
        s->in = batch;
        s->capin = cap;
        s->nin = 0;
        batch = t;
        cap = tc;
        int closing = s->closing;
        pthread_mutex_unlock(&s->mu);
        take(&s->r, batch, n);
        if (closing && !n)
            break;
    }
    free(batch);
    pthread_mutex_lock(&s->mu);
    s->done = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    release_dw(&s->r);                 /* while the caller writes rows */
    return NULL;
}

static void push(struct symbols *s, const struct sym_in *in)
{
    if (!s || s->finished) {           /* the key is ours either way */
        free(in->key);
        return;
    }
    if (!s->started) {                 /* no thread: resolved as they come */
        if (vh_grow(&s->in, &s->capin, s->nin, sizeof *s->in, QUEUE_BATCH)) {
            free(in->key);
            s->push_oom = 1;
            return;
        }
        s->in[s->nin++] = *in;
        if (s->nin >= QUEUE_BATCH) {
            take(&s->r, s->in, s->nin);
            s->nin = 0;
        }
        return;
    }
    pthread_mutex_lock(&s->mu);
    if (vh_grow(&s->in, &s->capin, s->nin, sizeof *s->in, 256)) {
        free(in->key);
        s->push_oom = 1;
    } else {
        s->in[s->nin++] = *in;
        if (s->waiting && s->nin == QUEUE_BATCH)
            pthread_cond_signal(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
}

struct symbols *symbols__new(const struct symbols_opts *o)
{
    struct symbols *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    s->r.opts = o;
    if (debuginfo_setup(&s->r) || !(s->r.keys = vh_strtab__new()) ||
        !(s->r.names = vh_strtab__new()) || !(s->r.mods = vh_map__new()) ||
        !(s->r.addr_map = vh_map__new())) {
        symbols__free(s);
        return NULL;
    }
    return s;
}

int symbols__start(struct symbols *s)
{
    if (s->started)
        return 0;
    int rc = pthread_create(&s->thread, NULL, resolve_thread, s);
    if (rc)
        return -rc;
    s->started = 1;
    return 0;
}

void symbols__module(struct symbols *s, int64_t id, const char *path, const char *build_id)
{
    size_t pl = path ? strlen(path) : 0, bl = build_id ? strlen(build_id) : 0;
    struct sym_in in = { .id = id, .keylen = pl + 1 + bl };
    if (!s)
        return;
    if (!(in.key = malloc(pl + bl + 2))) {
        s->push_oom = 1;
        return;
    }
    memcpy(in.key, path ? path : "", pl + 1);
    memcpy(in.key + pl + 1, build_id ? build_id : "", bl + 1);
    push(s, &in);
}

void symbols__frame(struct symbols *s, int64_t id, int64_t module_id, uint64_t module_offset)
{
    struct sym_in in = { .id = id, .module = module_id, .offset = module_offset };
    push(s, &in);
}

int symbols__finish(struct symbols *s, char *err, size_t errlen)
{
    if (errlen)
        err[0] = '\0';
    if (!s->finished) {
        if (s->started) {
            pthread_mutex_lock(&s->mu);
            s->closing = 1;
            pthread_cond_signal(&s->cv);
            while (!s->done)
                pthread_cond_wait(&s->cv, &s->mu);
            pthread_mutex_unlock(&s->mu);
        } else {
            take(&s->r, s->in, s->nin);
            s->nin = 0;
            release_dw(&s->r);
        }
        s->finished = 1;
        /* room for the longest chain: symbols__result cannot fail */
        size_t most = 1;
        for (size_t i = 0; i < s->r.naddrs; i++)
            most = s->r.addrs[i].nlv > most ? s->r.addrs[i].nlv : most;
        if (vh_reserve(&s->view, &s->capview, most, sizeof *s->view, 16))
            s->push_oom = 1;
    }
    if (s->push_oom)
        oom(&s->r);
    if (s->r.rc)
        snprintf(err, errlen, "%s", s->r.err);
    return s->r.rc;
}

void symbols__free(struct symbols *s)
{
    if (!s)
        return;
    if (s->started) {
        pthread_mutex_lock(&s->mu);
        s->closing = 1;
        __atomic_store_n(&s->r.cancel, 1, __ATOMIC_RELAXED);   /* take no more */
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
    } else {
        release_dw(&s->r);
    }
    for (size_t i = 0; i < s->nin; i++)
        free(s->in[i].key);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s->in);
    struct resolver *r = &s->r;
    for (size_t i = 0; i < r->nlv_out; i++)
        free(r->lv_out[i].function);
    free(r->lv_out);
    free(r->addrs);
    free(r->out);
    free(r->waiting);
    for (size_t i = 0; i < r->nfiles; i++) {
        free(r->files[i].path);
        free(r->files[i].build_id);
        free(r->files[i].why);
    }
    free(r->files);
    vh_strtab__free(r->keys);
    vh_strtab__free(r->names);
    vh_map__free(r->mods);
    free(r->debuginfo_path);
    free(s->view);
    free(s);
}

/* ---- what was found ------------------------------------------------------------ */

const struct symbols_level *symbols__result(struct symbols *s, size_t k, int64_t *frame_id,
                                            size_t *nlevels)
{
    const struct resolver *r = &s->r;
    if (!s->finished || r->rc || k >= r->nout)
        return NULL;
    const struct res_addr *a = &r->addrs[r->out[k].addr];
    for (size_t i = 0; i < a->nlv; i++) {
        const struct res_level *l = &r->lv_out[a->lv0 + i];
        s->view[i] = (struct symbols_level){ l->function,
                                             l->file ? vh_strtab__get(r->names, l->file) : NULL,
                                             l->line };
    }
    *frame_id = r->out[k].frame_id;
    *nlevels = a->nlv;
    return s->view;
}

void symbols__counts(const struct symbols *s, struct symbols_counts *c)
{
    c->frames = s->r.frames;
    c->missing = s->r.missing;
    c->rebuilt = s->r.rebuilt;
}

static int by_file(const void *a, const void *b)
{
    const struct sym_file *x = *(struct sym_file *const *)a;
    const struct sym_file *y = *(struct sym_file *const *)b;
    int c = strcmp(x->path, y->path);
    return c ? c : strcmp(x->build_id, y->build_id);
}

void symbols__warn(const struct symbols *s)
{
    const struct resolver *r = &s->r;
    const struct sym_file **order = malloc((r->nfiles ? r->nfiles : 1) * sizeof *order);
    size_t shown = 0, more = 0;
    if (!order)
        return;
    for (size_t i = 0; i < r->nfiles; i++)
        order[i] = &r->files[i];
    qsort(order, r->nfiles, sizeof *order, by_file);
    for (size_t i = 0; i < r->nfiles; i++) {
        const struct sym_file *f = order[i];
        if (f->state != F_MISSING && f->state != F_REBUILT)
            continue;
        /* The vDSO and other pseudo-modules have no file to find. */
        if (f->path[0] != '/')
            continue;
        if (shown == MAX_WARNINGS) {
            more++;
            continue;
        }
        shown++;
        vh_errorf("symbols", "%s: %s; its %zu frame%s keep%s module+offset",
                f->path,
                f->state == F_REBUILT ? "rebuilt since the run (build-id differs)"
                                      : (f->why ? f->why : "cannot open"),
                f->frames, f->frames == 1 ? "" : "s", f->frames == 1 ? "s" : "");
    }
    if (more)
        fprintf(stderr, "vheap-analyze: symbols: ... and %zu more modules not resolved\n", more);
    free(order);
}
