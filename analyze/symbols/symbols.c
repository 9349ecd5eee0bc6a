/* symbols.c — resolves a loaded capture's frames with elfutils libdw: one
 * Dwfl session, each module at a base of our choosing (frames carry
 * module_offset, so the run's own layout does not matter), each distinct
 * address resolved once, every row written in one savepoint. */
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/util/cmp.h"
#include "analyze/util/diag.h"
#include "analyze/symbols/demangle.h"
#include "analyze/symbols/symbols.h"

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

/* One distinct (path, build-id): one Dwfl_Module, shared by every load of
 * that file (a library dlopen'ed twice is one file). */
struct cu_range {                  /* a CU's address range (no aranges)     */
    Dwarf_Addr lo, hi;             /* DWARF addresses                       */
    Dwarf_Die cu;
};

struct sym_file {
    const char *path, *build_id;   /* owned by the first module row         */
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

struct sym_module {                /* one row of `modules`                  */
    int64_t id;
    char *path, *build_id;
    struct sym_file *file;
};

struct work {                      /* one row of `frames` to resolve         */
    struct sym_file *file;
    uint64_t offset;
    int64_t frame_id;
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

struct resolver {
    sqlite3 *db;
    char *err;
    size_t errlen;
    Dwfl *dwfl;
    Dwfl_Callbacks cb;
    char *debuginfo_path;          /* NULL: libdw's default                 */
    const struct symbols_opts *opts;     /* NULL: none                     */
    struct sym_module *mods;
    size_t nmods;
    struct sym_file *files;
    size_t nfiles;
    struct work *work;
    size_t nwork;
    struct level *lv;
    size_t nlv, caplv;
    struct path_cache paths;
    struct cu_cache cus;
    Dwarf_Die *chain;              /* scopes at one address, outermost first */
    size_t nchain, capchain;
    sqlite3_stmt *upd, *ins;
    size_t frames, resolved, with_line, missing, rebuilt;
};

static int sql_fail(struct resolver *r, const char *what)
{
    snprintf(r->err, r->errlen, "symbols: %s: %s", what, sqlite3_errmsg(r->db));
    return -EIO;
}

static int oom(struct resolver *r)
{
    snprintf(r->err, r->errlen, "symbols: out of memory");
    return -ENOMEM;
}

static char *dup_col(sqlite3_stmt *st, int col)
{
    const unsigned char *s = sqlite3_column_text(st, col);
    return s ? strdup((const char *)s) : NULL;
}

/* ---- modules and frames -------------------------------------------------- */

static int load_modules(struct resolver *r)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = 0;
    if (sqlite3_prepare_v2(r->db, "SELECT id, path, build_id FROM modules ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return sql_fail(r, "reading modules");
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (r->nmods == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            void *p = realloc(r->mods, ncap * sizeof *r->mods);
            if (!p) {
                rc = oom(r);
                goto out;
            }
            r->mods = p;
            cap = ncap;
        }
        struct sym_module *m = &r->mods[r->nmods++];
        m->id = sqlite3_column_int64(st, 0);
        m->path = dup_col(st, 1);
        m->build_id = dup_col(st, 2);
        m->file = NULL;
    }
    if (s != SQLITE_DONE)
        rc = sql_fail(r, "reading modules");
out:
    sqlite3_finalize(st);
    return rc;
}

static int cmp_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

static int by_file(const void *a, const void *b)
{
    const struct sym_module *x = *(struct sym_module *const *)a;
    const struct sym_module *y = *(struct sym_module *const *)b;
    int c = cmp_str(x->path, y->path);
    return c ? c : cmp_str(x->build_id, y->build_id);
}

/* Groups module rows by (path, build-id) into files. */
static int group_files(struct resolver *r)
{
    if (!r->nmods)
        return 0;
    struct sym_module **order = malloc(r->nmods * sizeof *order);
    r->files = calloc(r->nmods, sizeof *r->files);
    if (!order || !r->files) {
        free(order);
        return oom(r);
    }
    for (size_t i = 0; i < r->nmods; i++)
        order[i] = &r->mods[i];
    qsort(order, r->nmods, sizeof *order, by_file);
    for (size_t i = 0; i < r->nmods; i++) {
        if (!i || by_file(&order[i - 1], &order[i])) {
            struct sym_file *f = &r->files[r->nfiles++];
            f->path = order[i]->path;
            f->build_id = order[i]->build_id;
        }
        order[i]->file = &r->files[r->nfiles - 1];
    }
    free(order);
    return 0;
}

static struct sym_module *find_module(struct resolver *r, int64_t id)
{
    size_t lo = VH_PARTITION_POINT(i, r->nmods, r->mods[i].id < id);
    return lo < r->nmods && r->mods[lo].id == id ? &r->mods[lo] : NULL;
}

static int load_frames(struct resolver *r)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc = 0, s;
    /* module_offset is what the loader stores; address - bias is the same
     * thing for a loader that left it out. */
    if (sqlite3_prepare_v2(r->db,
                           "SELECT f.id, f.module_id, coalesce(f.module_offset, f.address - m.bias)"
                           " FROM frames f LEFT JOIN modules m ON m.id = f.module_id",
                           -1, &st, NULL) != SQLITE_OK)
        return sql_fail(r, "reading frames");
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        r->frames++;
        struct sym_module *m = find_module(r, sqlite3_column_int64(st, 1));
        if (!m || sqlite3_column_type(st, 2) == SQLITE_NULL)
            continue;
        if (r->nwork == cap) {
            size_t ncap = cap ? cap * 2 : 1024;
            void *p = realloc(r->work, ncap * sizeof *r->work);
            if (!p) {
                rc = oom(r);
                goto out;
            }
            r->work = p;
            cap = ncap;
        }
        struct work *w = &r->work[r->nwork++];
        w->frame_id = sqlite3_column_int64(st, 0);
        w->offset = (uint64_t)sqlite3_column_int64(st, 2);
        w->file = m->file;
        m->file->frames++;
    }
    if (s != SQLITE_DONE)
        rc = sql_fail(r, "reading frames");
out:
    sqlite3_finalize(st);
    return rc;
}

static int by_address(const void *a, const void *b)
{
    const struct work *x = a, *y = b;
    return vh_cmp2((uintptr_t)x->file, (uintptr_t)y->file, x->offset, y->offset);
}

/* ---- the Dwfl session ---------------------------------------------------- */

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
 * nor feed it forever. NULL with the reason in *why. */
static Dwfl_Module *report_regular(struct resolver *r, const char *name, const char *path,
                                   Dwarf_Addr base, const char **why)
{
    struct stat sb;
    Dwfl_Module *mod;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

    if (fd < 0) {
        *why = strerror(errno);
        return NULL;
    }
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        *why = "not a regular file";
        close(fd);
        return NULL;
    }
    mod = dwfl_report_elf(r->dwfl, name, path, fd, base, true);
    if (!mod) {                    /* on success libdw owns fd */
        *why = dwfl_errmsg(-1);
        close(fd);
    }
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
                const char *why;
                Dwfl_Module *mod = report_regular(r, f->path, path, base, &why);
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
    const char *name = strrchr(f->path, '/');
    name = name ? name + 1 : f->path;
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
    const char *why = "no file name";
    int rebuilt = 0;
    size_t n = f->path && f->path[0] ? candidates(r, f, paths, 16) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *w = NULL;
        Dwfl_Module *mod = report_regular(r, f->path, paths[i], *base, &w);
        if (!mod) {
            if (i == n - 1)        /* the recorded path's reason is the one told */
                why = w;
            continue;
        }
        enum file_state st = check_reported(r, f, mod, base);
        if (st == F_OK) {
            f->state = F_OK;
            return;
        }
        rebuilt |= st == F_REBUILT;
    }
    if (!rebuilt)
        f->why = strdup(why ? why : "cannot open");
    Dwfl_Module *mod = rebuilt ? NULL : report_by_build_id(r, f, *base);
    f->state = mod ? check_reported(r, f, mod, base) : rebuilt ? F_REBUILT : F_MISSING;
}

static int open_session(struct resolver *r)
{
    /* VHEAP_DEBUGINFO_PATH and the search directories come before libdw's
     * default directories, not instead of them */
    const char *env = getenv("VHEAP_DEBUGINFO_PATH");
    const struct symbols_opts *o = r->opts;
    if ((env && *env) || (o && o->nsearch_dirs)) {
        size_t len = sizeof DEFAULT_DEBUGINFO_PATH + (env ? strlen(env) + 1 : 0);
        for (size_t i = 0; o && i < o->nsearch_dirs; i++)
            len += strlen(o->search_dirs[i]) + 1;
        if (!(r->debuginfo_path = malloc(len)))
            return oom(r);
        char *p = r->debuginfo_path;
        if (env && *env)
            p += sprintf(p, "%s:", env);
        for (size_t i = 0; o && i < o->nsearch_dirs; i++)
            p += sprintf(p, "%s:", o->search_dirs[i]);
        strcpy(p, DEFAULT_DEBUGINFO_PATH);
    }
    r->cb.find_elf = dwfl_build_id_find_elf;
    r->cb.find_debuginfo = dwfl_standard_find_debuginfo;
    r->cb.section_address = dwfl_offline_section_address;
    r->cb.debuginfo_path = &r->debuginfo_path;
    r->dwfl = dwfl_begin(&r->cb);
    if (!r->dwfl) {
        snprintf(r->err, r->errlen, "symbols: libdw: %s", dwfl_errmsg(-1));
        return -ENOMEM;
    }
    dwfl_report_begin(r->dwfl);
    Dwarf_Addr base = BASE_START;
    for (size_t i = 0; i < r->nfiles; i++) {
        struct sym_file *f = &r->files[i];
        if (!f->frames)
            continue;              /* never opened: nothing asks about it  */
        report_file(r, f, &base);
        if (f->state == F_MISSING)
            r->missing++;
        else if (f->state == F_REBUILT)
            r->rebuilt++;
    }
    if (dwfl_report_end(r->dwfl, NULL, NULL) != 0) {
        snprintf(r->err, r->errlen, "symbols: libdw: %s", dwfl_errmsg(-1));
        return -EIO;
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

/* ---- writing ---------------------------------------------------------------- */

static int write_frame(struct resolver *r, int64_t frame_id)
{
    const struct level *top = &r->lv[0];
    sqlite3_bind_text(r->upd, 1, top->function, -1, SQLITE_STATIC);
    sqlite3_bind_text(r->upd, 2, top->file, -1, SQLITE_STATIC);
    if (top->line > 0)
        sqlite3_bind_int(r->upd, 3, top->line);
    else
        sqlite3_bind_null(r->upd, 3);
    sqlite3_bind_int64(r->upd, 4, (sqlite3_int64)(r->nlv - 1));
    sqlite3_bind_int64(r->upd, 5, frame_id);
    int s = sqlite3_step(r->upd);
    sqlite3_reset(r->upd);
    if (s != SQLITE_DONE)
        return sql_fail(r, "updating frames");
    for (size_t d = 1; d < r->nlv; d++) {
        const struct level *l = &r->lv[d];
        sqlite3_bind_int64(r->ins, 1, frame_id);
        sqlite3_bind_int64(r->ins, 2, (sqlite3_int64)d);
        sqlite3_bind_text(r->ins, 3, l->function, -1, SQLITE_STATIC);
        sqlite3_bind_text(r->ins, 4, l->file, -1, SQLITE_STATIC);
        if (l->line > 0)
            sqlite3_bind_int(r->ins, 5, l->line);
        else
            sqlite3_bind_null(r->ins, 5);
        s = sqlite3_step(r->ins);
        sqlite3_reset(r->ins);
        if (s != SQLITE_DONE)
            return sql_fail(r, "writing frame_inlines");
    }
    if (top->function)
        r->resolved++;
    if (top->file && top->line > 0)
        r->with_line++;
    return 0;
}

static int resolve_all(struct resolver *r)
{
    if (sqlite3_exec(r->db,
                     "DELETE FROM frame_inlines;"
                     "UPDATE frames SET function = NULL, file = NULL, line = NULL,"
                     " inline_depth = 0 WHERE function IS NOT NULL OR file IS NOT NULL"
                     " OR line IS NOT NULL OR inline_depth != 0;",
                     NULL, NULL, NULL) != SQLITE_OK)
        return sql_fail(r, "clearing frames");
    if (sqlite3_prepare_v2(r->db,
                           "UPDATE frames SET function = ?1, file = ?2, line = ?3,"
                           " inline_depth = ?4 WHERE id = ?5",
                           -1, &r->upd, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(r->db,
                           "INSERT INTO frame_inlines (frame_id, depth, function, file, line)"
                           " VALUES (?1, ?2, ?3, ?4, ?5)",
                           -1, &r->ins, NULL) != SQLITE_OK)
        return sql_fail(r, "preparing updates");

    for (size_t i = 0, j; i < r->nwork; i = j) {
        const struct work *w = &r->work[i];
        for (j = i + 1; j < r->nwork && r->work[j].file == w->file &&
                        r->work[j].offset == w->offset;
             j++)
            ;
        if (w->file->state != F_OK)
            continue;
        /* A return address: the call is the byte before it. */
        Dwarf_Addr pc = w->file->bias + w->offset - (w->offset ? 1 : 0);
        int rc = resolve_pc(r, w->file, pc);
        for (size_t k = i; rc == 0 && k < j && r->nlv; k++)
            rc = write_frame(r, r->work[k].frame_id);
        clear_levels(r);
        if (rc == -ENOMEM)
            return oom(r);
        if (rc)
            return rc;
    }
    return 0;
}

/* The counts, for `summary` and for people reading meta; optional: a DB
 * without a meta table (a unit test's) is fine. */
static int write_stats(struct resolver *r)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    const struct { const char *key; size_t value; } kv[] = {
        {"symbols_frames", r->frames},
        {"symbols_resolved", r->resolved},
        {"symbols_with_line", r->with_line},
        {"symbols_modules_missing", r->missing},
        {"symbols_modules_rebuilt", r->rebuilt},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof kv / sizeof kv[0] && !rc; i++) {
        sqlite3_bind_text(st, 1, kv[i].key, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)kv[i].value);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sql_fail(r, "writing meta");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

static void warn_untrusted(struct resolver *r)
{
    size_t shown = 0, more = 0;
    for (size_t i = 0; i < r->nfiles; i++) {
        const struct sym_file *f = &r->files[i];
        if (f->state != F_MISSING && f->state != F_REBUILT)
            continue;
        /* The vDSO and other pseudo-modules have no file to find. */
        if (!f->path || f->path[0] != '/')
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
}

int symbols__resolve_db(sqlite3 *db, char *err, size_t errlen)
{
    return symbols__resolve_db_opts(db, NULL, err, errlen);
}

int symbols__resolve_db_opts(sqlite3 *db, const struct symbols_opts *o, char *err,
                             size_t errlen)
{
    struct resolver r = {.db = db, .err = err, .errlen = errlen, .opts = o};
    int rc, in_savepoint = 0;
    if (errlen)
        err[0] = '\0';

    if ((rc = load_modules(&r)) || (rc = group_files(&r)) || (rc = load_frames(&r)))
        goto out;
    if (r.nwork)
        qsort(r.work, r.nwork, sizeof *r.work, by_address);
    if ((rc = open_session(&r)))
        goto out;

    if (sqlite3_exec(db, "SAVEPOINT vh_symbols", NULL, NULL, NULL) != SQLITE_OK) {
        rc = sql_fail(&r, "starting the update");
        goto out;
    }
    in_savepoint = 1;
    if ((rc = resolve_all(&r)) || (rc = write_stats(&r)))
        goto out;
    sqlite3_finalize(r.upd);
    sqlite3_finalize(r.ins);
    r.upd = r.ins = NULL;
    if (sqlite3_exec(db, "RELEASE vh_symbols", NULL, NULL, NULL) != SQLITE_OK) {
        rc = sql_fail(&r, "committing");
        goto out;
    }
    in_savepoint = 0;
    warn_untrusted(&r);
out:
    sqlite3_finalize(r.upd);
    sqlite3_finalize(r.ins);
    if (in_savepoint) {
        sqlite3_exec(db, "ROLLBACK TO vh_symbols; RELEASE vh_symbols", NULL, NULL, NULL);
    }
    clear_levels(&r);
    free(r.lv);
    for (size_t i = 0; i < r.paths.cap; i++)
        free(r.paths.vals[i]);
    free(r.paths.keys);
    free(r.paths.vals);
    for (size_t i = 0; i < r.cus.cap; i++)
        free(r.cus.slots[i].r);
    free(r.cus.slots);
    free(r.chain);
    if (r.dwfl)
        dwfl_end(r.dwfl);
    for (size_t i = 0; i < r.nfiles; i++) {
        free(r.files[i].why);
        for (size_t k = 0; k < r.files[i].nsyms; k++)
            free(r.files[i].syms[k].shown);
        free(r.files[i].syms);
        free(r.files[i].cus);
    }
    free(r.files);
    for (size_t i = 0; i < r.nmods; i++) {
        free(r.mods[i].path);
        free(r.mods[i].build_id);
    }
    free(r.mods);
    free(r.work);
    free(r.debuginfo_path);
    return rc;
}
