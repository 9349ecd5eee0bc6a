/* test_symbols.c — the symbolizer against this test binary's own code.
 * Probe functions below record return addresses whose source lines they
 * know; the tests put them in a fresh DB as a loader would (module with
 * bias from dl_iterate_phdr, frames with module_offset), resolve, and
 * compare function, file, line and the inline chain. Also: untrusted
 * modules, libc through its separate debug file, the demangler, and the
 * resolver fed as the loader feeds it (its own thread, frames before their
 * modules, a capture loaded with symbols) against symbolize's way. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fcntl.h>

#include "analyze/store/db.h"
#include "analyze/symbols/demangle.h"
#include "analyze/symbols/symbols.h"
#include "tests/unit/capture_builder.h"
#include "tests/unit/load_fixture.h"

/* ---- probes: return addresses with known lines ---------------------------- */

static int line_plain, line_inl_inner, line_inl_mid, line_inl_outer;

__attribute__((noinline, noclone)) static void *ret_addr(void)
{
    void *ra = __builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
    return ra;
}

__attribute__((noinline, noclone)) void *probe_plain(void)
{
    void *ra = ret_addr(); line_plain = __LINE__;
    __asm__ volatile("" ::: "memory");
    return ra;
}

static inline __attribute__((always_inline)) void *inl_inner(void)
{
    void *ra = ret_addr(); line_inl_inner = __LINE__;
    return ra;
}

static inline __attribute__((always_inline)) void *inl_mid(void)
{
    void *ra = inl_inner(); line_inl_mid = __LINE__;
    return ra;
}

__attribute__((noinline, noclone)) void *probe_inlined(void)
{
    void *ra = inl_mid(); line_inl_outer = __LINE__;
    __asm__ volatile("" ::: "memory");
    return ra;
}

/* ---- the module holding an address, as the recorder sees it ---------------- */

struct modinfo {
    uintptr_t addr;
    int found;
    uint64_t bias, lo, hi;
    char path[PATH_MAX];
    char build_id[129];
};

static void note_build_id(struct dl_phdr_info *info, const ElfW(Phdr) *ph, char *hex)
{
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
    const unsigned char *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
        const unsigned char *name = p + sizeof *n;
        const unsigned char *desc = name + ((n->n_namesz + 3) & ~3u);
        if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
            for (unsigned i = 0; i < n->n_descsz && i < 64; i++)
                sprintf(hex + 2 * i, "%02x", desc[i]);
            return;
        }
        p = desc + ((n->n_descsz + 3) & ~3u);
    }
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct modinfo *m = arg;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
        lo = s < lo ? s : lo;
        hi = e > hi ? e : hi;
    }
    if (m->addr < lo || m->addr >= hi)
        return 0;
    m->found = 1;
    m->bias = info->dlpi_addr;
    m->lo = lo;
    m->hi = hi;
    if (info->dlpi_name && info->dlpi_name[0]) {
        snprintf(m->path, sizeof m->path, "%s", info->dlpi_name);
    } else {
        ssize_t n = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
        m->path[n > 0 ? n : 0] = '\0';
    }
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_NOTE && !m->build_id[0])
            note_build_id(info, &info->dlpi_phdr[i], m->build_id);
    return 1;
}

static struct modinfo module_of(const void *addr)
{
    struct modinfo m = {.addr = (uintptr_t)addr};
    dl_iterate_phdr(phdr_cb, &m);
    assert_true(m.found);
    return m;
}

/* ---- DB helpers ---------------------------------------------------------- */

static sqlite3 *new_db(void)
{
    sqlite3 *db = NULL;
    char err[256] = "";
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(vh_schema_apply(db, VH_SCHEMA_TABLES, err, sizeof err), 0);
    assert_int_equal(vh_schema_apply(db, VH_SCHEMA_INDEXES, err, sizeof err), 0);
    return db;
}

static void exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    return st;
}

/* Steps an INSERT to completion: the new row's id. */
static int64_t insert(sqlite3 *db, sqlite3_stmt *st)
{
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    return sqlite3_last_insert_rowid(db);
}

/* path/build_id NULL: SQL NULL. Returns the module id. */
static int64_t add_module(sqlite3 *db, const char *path, const char *build_id,
                          const struct modinfo *m)
{
    sqlite3_stmt *st = prepare(db, "INSERT INTO modules (path, build_id, bias, lo, hi)"
                                   " VALUES (?, ?, ?, ?, ?)");
    sqlite3_bind_text(st, 1, path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, build_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)m->bias);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)m->lo);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)m->hi);
    return insert(db, st);
}

/* The module as the recorder lists it: its path, its build-id if any. */
static int64_t add_module_as_is(sqlite3 *db, const struct modinfo *m)
{
    return add_module(db, m->path, m->build_id[0] ? m->build_id : NULL, m);
}

static int64_t add_frame(sqlite3 *db, const void *addr, int64_t module_id, uint64_t bias)
{
    sqlite3_stmt *st = prepare(db, "INSERT INTO frames (address, module_id, module_offset)"
                                   " VALUES (?, ?, ?)");
    sqlite3_bind_int64(st, 1, (sqlite3_int64)(uintptr_t)addr);
    sqlite3_bind_int64(st, 2, module_id);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)((uintptr_t)addr - bias));
    return insert(db, st);
}

struct row {
    int present;
    char function[512], file[PATH_MAX];
    int line, depth;
    int64_t module_id;
};

static void copy_col(char *dst, size_t len, sqlite3_stmt *st, int col)
{
    const unsigned char *s = sqlite3_column_text(st, col);
    snprintf(dst, len, "%s", s ? (const char *)s : "(null)");
}

/* The first row of `st` (function, file, line and, if selected, inline
 * depth and module id); finalizes st. */
static struct row read_row(sqlite3_stmt *st)
{
    struct row r = {0};
    if (sqlite3_step(st) == SQLITE_ROW) {
        r.present = 1;
        copy_col(r.function, sizeof r.function, st, 0);
        copy_col(r.file, sizeof r.file, st, 1);
        r.line = sqlite3_column_int(st, 2);
        if (sqlite3_column_count(st) > 3) {
            r.depth = sqlite3_column_int(st, 3);
            r.module_id = sqlite3_column_int64(st, 4);
        }
    }
    sqlite3_finalize(st);
    return r;
}

static struct row frame_row(sqlite3 *db, int64_t id)
{
    sqlite3_stmt *st = prepare(db, "SELECT function, file, line, inline_depth, module_id"
                                   " FROM frames WHERE id = ?");
    sqlite3_bind_int64(st, 1, id);
    return read_row(st);
}

static struct row inline_row(sqlite3 *db, int64_t id, int depth)
{
    sqlite3_stmt *st = prepare(db, "SELECT function, file, line FROM frame_inlines"
                                   " WHERE frame_id = ? AND depth = ?");
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int(st, 2, depth);
    return read_row(st);
}

static long long meta_int(sqlite3 *db, const char *key)
{
    sqlite3_stmt *st = prepare(db, "SELECT value FROM meta WHERE key = ?");
    long long v = -1;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void resolve(sqlite3 *db)
{
    char err[256] = "";
    int rc = symbols__resolve_db(db, err, sizeof err);
    if (rc)
        fail_msg("symbols__resolve_db: %d %s", rc, err);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

#define THIS_FILE "tests/unit/test_symbols.c"

/* A row that names `function` at `line` of this file. */
static void expect_here(struct row r, const char *function, int line)
{
    assert_true(r.present);
    assert_string_equal(r.function, function);
    assert_true(ends_with(r.file, THIS_FILE));
    assert_int_equal(r.line, line);
}

struct place {
    const char *function;
    int line;
};

/* Puts return address `ra` in a fresh DB as the recorder would list it,
 * resolves, and expects its frame to name want[0] and its inline chain the
 * rest, outward, and nothing more. Returns the DB. */
static sqlite3 *expect_resolved(void *ra, const struct place *want, int n)
{
    struct modinfo m = module_of(ra);
    sqlite3 *db = new_db();
    int64_t f = add_frame(db, ra, add_module_as_is(db, &m), m.bias);
    resolve(db);

    struct row r = frame_row(db, f);
    expect_here(r, want[0].function, want[0].line);
    assert_int_equal(r.depth, n - 1);
    for (int d = 1; d < n; d++)
        expect_here(inline_row(db, f, d), want[d].function, want[d].line);
    assert_false(inline_row(db, f, n).present);
    return db;
}

/* ---- tests ----------------------------------------------------------------- */

static void test_plain_function(void **state)
{
    void *ra = probe_plain();      /* sets line_plain */
    const struct place want[] = { { "probe_plain", line_plain } };
    sqlite3 *db = expect_resolved(ra, want, 1);
    assert_int_equal(meta_int(db, "symbols_resolved"), 1);
    assert_int_equal(meta_int(db, "symbols_with_line"), 1);
    sqlite3_close(db);
}

static void test_inline_chain(void **state)
{
    void *ra = probe_inlined();    /* sets the line_inl_* */
    const struct place want[] = {
        { "inl_inner", line_inl_inner },
        { "inl_mid", line_inl_mid },
        { "probe_inlined", line_inl_outer },
    };
    sqlite3_close(expect_resolved(ra, want, 3));
}

/* The same file loaded twice (dlclose, dlopen) at different addresses, and
 * the same address twice: every row gets the answer. */
static void test_shared_file_and_duplicates(void **state)
{
    void *ra = probe_plain();
    struct modinfo m = module_of(ra);
    struct modinfo moved = m;
    moved.bias += 0x10000000;
    moved.lo += 0x10000000;
    moved.hi += 0x10000000;
    sqlite3 *db = new_db();
    int64_t m1 = add_module_as_is(db, &m);
    int64_t m2 = add_module_as_is(db, &moved);
    int64_t f1 = add_frame(db, ra, m1, m.bias);
    int64_t f2 = add_frame(db, (char *)ra + 0x10000000, m2, moved.bias);
    int64_t f3 = add_frame(db, ra, m1, m.bias);
    resolve(db);
    int64_t ids[] = {f1, f2, f3};
    for (int i = 0; i < 3; i++) {
        struct row r = frame_row(db, ids[i]);
        assert_string_equal(r.function, "probe_plain");
        assert_int_equal(r.line, line_plain);
    }
    sqlite3_close(db);
}

static void test_missing_file(void **state)
{
    void *ra = probe_plain();
    struct modinfo m = module_of(ra);
    sqlite3 *db = new_db();
    int64_t mod = add_module(db, "/nonexistent/vheap-test/libgone.so", NULL, &m);
    int64_t f = add_frame(db, ra, mod, m.bias);
    resolve(db);

    struct row r = frame_row(db, f);
    assert_true(r.present);
    assert_string_equal(r.function, "(null)");
    assert_string_equal(r.file, "(null)");
    assert_int_equal(r.module_id, mod);  /* module + offset stay */
    assert_int_equal(meta_int(db, "symbols_modules_missing"), 1);
    assert_int_equal(meta_int(db, "symbols_resolved"), 0);
    sqlite3_close(db);
}

static void test_rebuilt_file(void **state)
{
    void *ra = probe_plain();
    struct modinfo m = module_of(ra);
    if (!m.build_id[0])
        skip();                    /* built without a build-id note */
    char other[129];
    snprintf(other, sizeof other, "%s", m.build_id);
    other[0] = other[0] == '0' ? '1' : '0';
    sqlite3 *db = new_db();
    int64_t bad = add_module(db, m.path, other, &m);
    int64_t f = add_frame(db, ra, bad, m.bias);
    /* A good module after the untrusted one still resolves (the untrusted
     * one stays in the session and must not be overlapped). */
    struct modinfo c = module_of((void *)getpid);
    int64_t libc = add_module_as_is(db, &c);
    int64_t g = add_frame(db, (char *)(void *)getpid + 1, libc, c.bias);
    resolve(db);

    struct row r = frame_row(db, f);
    assert_string_equal(r.function, "(null)");
    assert_int_equal(r.module_id, bad);
    assert_int_equal(meta_int(db, "symbols_modules_rebuilt"), 1);
    if (!strstr(frame_row(db, g).function, "getpid"))
        fail_msg("libc frame after the untrusted module: %s", frame_row(db, g).function);
    sqlite3_close(db);
}

/* The file is gone from its recorded path, but a debug directory holds it
 * under its build-id (VHEAP_DEBUGINFO_PATH): resolved from there. */
static void test_moved_file_by_build_id(void **state)
{
    void *ra = probe_plain();
    struct modinfo m = module_of(ra);
    if (!m.build_id[0])
        skip();
    char dir[] = "/tmp/vheap-symtest.XXXXXX", sub[256], link_[512];
    assert_non_null(mkdtemp(dir));
    snprintf(sub, sizeof sub, "%s/.build-id", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(sub, sizeof sub, "%s/.build-id/%.2s", dir, m.build_id);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(link_, sizeof link_, "%s/%s", sub, m.build_id + 2);
    assert_int_equal(symlink(m.path, link_), 0);

    sqlite3 *db = new_db();
    int64_t mod = add_module(db, "/nonexistent/vheap-test/moved-binary", m.build_id, &m);
    int64_t f = add_frame(db, ra, mod, m.bias);
    setenv("VHEAP_DEBUGINFO_PATH", dir, 1);
    resolve(db);
    unsetenv("VHEAP_DEBUGINFO_PATH");
    unlink(link_);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/.build-id", dir);
    rmdir(sub);
    rmdir(dir);

    struct row r = frame_row(db, f);
    assert_string_equal(r.function, "probe_plain");
    assert_int_equal(r.line, line_plain);
    assert_int_equal(meta_int(db, "symbols_modules_missing"), 0);
    sqlite3_close(db);
}

/* Resolving inside the caller's transaction, twice: same rows, no doubles. */
static void test_in_transaction_and_again(void **state)
{
    void *ra = probe_inlined();
    struct modinfo m = module_of(ra);
    sqlite3 *db = new_db();
    exec(db, "BEGIN");
    int64_t f = add_frame(db, ra, add_module_as_is(db, &m), m.bias);
    resolve(db);
    resolve(db);
    exec(db, "COMMIT");
    assert_int_equal(frame_row(db, f).depth, 2);
    sqlite3_stmt *st = prepare(db, "SELECT count(*) FROM frame_inlines");
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 2);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* A frame with no module is left alone; a DB error is an error. */
static void test_no_module_and_errors(void **state)
{
    sqlite3 *db = new_db();
    exec(db, "INSERT INTO frames (address) VALUES (4096)");
    resolve(db);
    assert_int_equal(meta_int(db, "symbols_frames"), 1);
    assert_int_equal(meta_int(db, "symbols_resolved"), 0);
    exec(db, "DROP TABLE frame_inlines");
    char err[256] = "";
    assert_int_not_equal(symbols__resolve_db(db, err, sizeof err), 0);
    assert_true(strlen(err) > 0);
    sqlite3_close(db);
}

/* libc through /usr/lib/debug/.build-id (Debian's libc6-dbg): strdup's
 * return address into malloc must name strdup.c. */
static void test_libc_debuginfo(void **state)
{
    /* libc's own strdup, not a sanitizer's interceptor of it. */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    void *fn = libc ? dlsym(libc, "strdup") : NULL;
    if (!fn)
        skip();
    struct modinfo m = module_of(fn);
    char dbg[PATH_MAX];
    struct stat sb;
    if (!m.build_id[0])
        skip();
    snprintf(dbg, sizeof dbg, "/usr/lib/debug/.build-id/%.2s/%s.debug", m.build_id,
             m.build_id + 2);
    if (stat(dbg, &sb) != 0) {
        print_message("skipped: %s missing (apt-get install libc6-dbg)\n", dbg);
        skip();
    }
    /* The symbol's entry + 1: the lookup is at the entry itself. */
    sqlite3 *db = new_db();
    int64_t mod = add_module(db, m.path, m.build_id, &m);
    int64_t f = add_frame(db, (char *)fn + 1, mod, m.bias);
    resolve(db);
    struct row r = frame_row(db, f);
    if (!strstr(r.function, "strdup"))
        fail_msg("function %s", r.function);
    if (!ends_with(r.file, "strdup.c") || r.line <= 0)
        fail_msg("file %s line %d", r.file, r.line);
    sqlite3_close(db);
    dlclose(libc);
}

/* ---- the resolver's thread against the DB's way ---------------------------- */

/* Every row symbolization writes (frames, frame_inlines, meta's symbols_*),
 * as text; free it. */
static char *dump(sqlite3 *db)
{
    static const char *const sql[] = {
        "SELECT * FROM frames ORDER BY id",
        "SELECT * FROM frame_inlines ORDER BY frame_id, depth",
        "SELECT key, value FROM meta WHERE key LIKE 'symbols%' ORDER BY key",
    };
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    for (size_t i = 0; i < sizeof sql / sizeof *sql; i++) {
        sqlite3_stmt *st = prepare(db, sql[i]);
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const unsigned char *t = sqlite3_column_text(st, c);
                fprintf(f, "%s%s", c ? "|" : "", t ? (const char *)t : "NULL");
            }
            fputc('\n', f);
        }
        sqlite3_finalize(st);
        fputs("--\n", f);
    }
    fclose(f);
    return buf;
}

/* stderr into a file (for the warnings), and back. The file is a new one
 * in $TMPDIR (or /tmp) each time, removed by stderr_back: two builds may
 * run this test at once (make check and make asan). */
struct grab {
    int saved;
    char path[512];
};

static void stderr_to(struct grab *g)
{
    const char *dir = getenv("TMPDIR");
    snprintf(g->path, sizeof g->path, "%s/vheap-symtest-stderr.XXXXXX",
             dir && *dir ? dir : "/tmp");
    fflush(stderr);
    int fd = mkstemp(g->path);
    g->saved = dup(2);
    assert_true(g->saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
}

static char *stderr_back(struct grab *g)
{
    fflush(stderr);
    dup2(g->saved, 2);
    close(g->saved);
    char *buf = calloc(1, 8192);
    FILE *f = fopen(g->path, "r");
    assert_non_null(buf);
    assert_non_null(f);
    size_t n = fread(buf, 1, 8191, f);
    buf[n] = '\0';
    fclose(f);
    unlink(g->path);
    return buf;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

struct fed {                       /* one DB row, as both ways get it */
    int64_t id, module;            /* module: 0 for a frame without one    */
    uint64_t offset;
};

/* The same modules and frames given to symbols__resolve_db (from a DB) and
 * to the resolver on its own thread with every frame before its module:
 * the same rows. */
static void test_thread_matches_db(void **state)
{
    void *plain = probe_plain(), *inl = probe_inlined();
    struct modinfo m = module_of(plain), c = module_of((void *)getpid);
    sqlite3 *a = new_db(), *b = new_db();
    int64_t mods[3];
    const char *paths[3] = { m.path, c.path, "/nonexistent/vheap-test/libgone.so" };
    const char *ids[3] = { m.build_id[0] ? m.build_id : NULL,
                           c.build_id[0] ? c.build_id : NULL, NULL };
    for (int i = 0; i < 3; i++) {
        mods[i] = add_module(a, paths[i], ids[i], i == 1 ? &c : &m);
        assert_int_equal(add_module(b, paths[i], ids[i], i == 1 ? &c : &m), mods[i]);
    }
    struct fed fr[] = {
        { 0, mods[0], (uintptr_t)plain - m.bias },
        { 0, mods[0], (uintptr_t)inl - m.bias },
        { 0, mods[1], (uintptr_t)(void *)getpid + 1 - c.bias },
        { 0, mods[2], 0x1234 },
        { 0, mods[0], (uintptr_t)plain - m.bias },     /* the same address again */
        { 0, 0, 0 },                                    /* no module */
        { 0, mods[2], 0x2345 },
    };
    size_t n = sizeof fr / sizeof *fr;
    for (size_t i = 0; i < n; i++) {
        const char *sql = fr[i].module
            ? "INSERT INTO frames (address, module_id, module_offset) VALUES (?, ?, ?)"
            : "INSERT INTO frames (address) VALUES (?)";
        sqlite3_stmt *st = prepare(a, sql);
        sqlite3_bind_int64(st, 1, (sqlite3_int64)(fr[i].offset + 0x1000));
        if (fr[i].module) {
            sqlite3_bind_int64(st, 2, fr[i].module);
            sqlite3_bind_int64(st, 3, (sqlite3_int64)fr[i].offset);
        }
        fr[i].id = insert(a, st);
    }
    /* b: the same frames rows, resolved the loader's way */
    for (size_t i = 0; i < n; i++) {
        sqlite3_stmt *st = prepare(b, "INSERT INTO frames (id, address, module_id, module_offset)"
                                      " VALUES (?, ?, ?, ?)");
        sqlite3_bind_int64(st, 1, fr[i].id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)(fr[i].offset + 0x1000));
        if (fr[i].module) {
            sqlite3_bind_int64(st, 3, fr[i].module);
            sqlite3_bind_int64(st, 4, (sqlite3_int64)fr[i].offset);
        }
        insert(b, st);
    }

    struct grab g;
    stderr_to(&g);
    resolve(a);
    char *warn_a = stderr_back(&g);

    char err[256];
    struct symbols *s = symbols__new(NULL);
    assert_non_null(s);
    assert_int_equal(symbols__start(s), 0);
    for (size_t i = n; i-- > 0;)       /* frames first, newest first */
        symbols__frame(s, fr[i].id, fr[i].module, fr[i].offset);
    for (int i = 0; i < 3; i++)
        symbols__module(s, mods[i], paths[i], ids[i]);
    assert_int_equal(symbols__finish(s, err, sizeof err), 0);
    stderr_to(&g);
    int rc = symbols__write_db(s, b, err, sizeof err);
    char *warn_b = stderr_back(&g);
    assert_int_equal(rc, 0);
    symbols__free(s);

    char *da = dump(a), *db_ = dump(b);
    assert_string_equal(da, db_);
    assert_string_equal(warn_a, warn_b);
    /* the missing file warned once, naming its two frames */
    assert_int_equal(count_lines(warn_b), 1);
    assert_non_null(strstr(warn_b, "libgone.so: No such file or directory; its 2 frames keep"));
    expect_here(frame_row(b, fr[0].id), "probe_plain", line_plain);
    expect_here(frame_row(b, fr[4].id), "probe_plain", line_plain);
    assert_int_equal(frame_row(b, fr[1].id).depth, 2);
    assert_string_equal(frame_row(b, fr[3].id).function, "(null)");
    assert_int_equal(meta_int(b, "symbols_frames"), (long long)n);
    assert_int_equal(meta_int(b, "symbols_modules_missing"), 1);
    free(da);
    free(db_);
    free(warn_a);
    free(warn_b);
    sqlite3_close(a);
    sqlite3_close(b);
}

/* Freed before finish (a load that failed), with and without a thread,
 * with rows still queued: no leak, no hang (make asan). A frame whose
 * module never comes stays unresolved. */
static void test_thread_stopped_and_orphans(void **state)
{
    void *plain = probe_plain();
    struct modinfo m = module_of(plain);
    for (int threaded = 0; threaded < 2; threaded++) {
        struct symbols *s = symbols__new(NULL);
        assert_non_null(s);
        if (threaded)
            assert_int_equal(symbols__start(s), 0);
        symbols__module(s, 1, m.path, m.build_id);
        for (int i = 0; i < 200; i++)
            symbols__frame(s, i + 1, 1, (uintptr_t)plain - m.bias + (uint64_t)i);
        symbols__free(s);
    }
    char err[256];
    struct symbols *s = symbols__new(NULL);
    assert_int_equal(symbols__start(s), 0);
    symbols__frame(s, 1, 7, (uintptr_t)plain - m.bias);   /* module 7 never comes */
    symbols__module(s, 1, m.path, m.build_id);
    symbols__frame(s, 2, 1, (uintptr_t)plain - m.bias);
    assert_int_equal(symbols__finish(s, err, sizeof err), 0);
    int64_t id;
    size_t nlv;
    const struct symbols_level *lv = symbols__result(s, 0, &id, &nlv);
    assert_non_null(lv);
    assert_int_equal(id, 2);
    assert_string_equal(lv[0].function, "probe_plain");
    assert_null(symbols__result(s, 1, &id, &nlv));
    struct symbols_counts c;
    symbols__counts(s, &c);
    assert_int_equal(c.frames, 2);
    symbols__free(s);
}

static uint32_t hex_bytes(const char *hex, uint8_t *out, size_t max)
{
    uint32_t n = 0;
    for (; hex[0] && hex[1] && n < max; hex += 2)
        out[n++] = (uint8_t)strtoul((char[3]){ hex[0], hex[1], 0 }, NULL, 16);
    return n;
}

/* A capture loaded with symbols (the loader's thread): this binary's
 * probes resolved, a missing library warned about once, and `symbolize`'s
 * way on the same DB writes the same rows and the same warning. */
static void test_load_matches_symbolize(void **state)
{
    void *plain = probe_plain(), *inl = probe_inlined();
    struct modinfo m = module_of(plain);
    uint8_t id[32];
    uint32_t idlen = hex_bytes(m.build_id, id, sizeof id);
    uint64_t gone = 0x7f0000000000ull;
    uint64_t frames1[] = { (uintptr_t)plain, 0x1234, gone + 0x100 };
    uint64_t frames2[] = { (uintptr_t)inl, gone + 0x200, gone + 0x100 };
    struct capb b;
    uint32_t ch = capb__start(&b, 1, 77);
    capb__module(&b, ch, 2, m.bias, m.lo, m.hi, id, idlen, m.path, VH_RF_MAIN_EXE);
    capb__module(&b, ch, 3, gone, gone, gone + 0x100000, NULL, 0,
                 "/nonexistent/vheap-test/libgone.so", 0);
    capb__stack(&b, ch, 4, 1, frames1, 3, 0);
    capb__stack(&b, ch, 5, 2, frames2, 3, 0);
    capb__alloc(&b, ch, 6, 0x1000, 100, 112, 1);
    capb__alloc(&b, ch, 7, 0x2000, 200, 208, 2);
    struct load_opts o = { .progress = 0 };
    struct load_stats st;
    struct grab g;
    stderr_to(&g);
    char lerr[512];
    int rc = fx_write_and_load(&b, &o, &st, lerr, sizeof lerr);
    char *warn_load = stderr_back(&g);
    if (rc)
        fail_msg("load: %s", lerr);
    assert_string_equal(st.symbols, "");

    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    char *loaded = dump(db);
    sqlite3_stmt *q1 = prepare(db, "SELECT id FROM frames WHERE address = ?");
    sqlite3_bind_int64(q1, 1, (sqlite3_int64)(uintptr_t)plain);
    assert_int_equal(sqlite3_step(q1), SQLITE_ROW);
    int64_t fplain = sqlite3_column_int64(q1, 0);
    sqlite3_finalize(q1);
    expect_here(frame_row(db, fplain), "probe_plain", line_plain);
    assert_int_equal(meta_int(db, "symbols_frames"), 5);
    assert_int_equal(meta_int(db, "symbols_modules_missing"), 1);
    assert_int_equal(count_lines(warn_load), 1);
    assert_non_null(strstr(warn_load, "libgone.so: No such file or directory; its 2 frames keep"));

    stderr_to(&g);
    resolve(db);
    char *warn_sym = stderr_back(&g);
    char *again = dump(db);
    assert_string_equal(loaded, again);
    assert_string_equal(warn_load, warn_sym);
    free(loaded);
    free(again);
    free(warn_load);
    free(warn_sym);
    done(db, &b);
}

/* A capture without one frame, loaded with symbols: nothing to resolve,
 * nothing warned, the counts zero. */
static void test_load_no_frames(void **state)
{
    struct modinfo m = module_of((void *)probe_plain);
    struct capb b;
    uint32_t ch = capb__start(&b, 1, 77);
    capb__module(&b, ch, 2, m.bias, m.lo, m.hi, NULL, 0, m.path, VH_RF_MAIN_EXE);
    capb__alloc(&b, ch, 3, 0x1000, 100, 112, 0);
    struct load_opts o = { .progress = 0 };
    struct load_stats st;
    struct grab g;
    stderr_to(&g);
    sqlite3 *db = fx_load_stats(&b, &o, &st);
    char *warn = stderr_back(&g);
    assert_string_equal(warn, "");
    assert_string_equal(st.symbols, "");
    assert_int_equal(meta_int(db, "symbols_frames"), 0);
    assert_int_equal(meta_int(db, "symbols_resolved"), 0);
    assert_int_equal(meta_int(db, "symbols_modules_missing"), 0);
    free(warn);
    done(db, &b);
}

static void expect_demangled(const char *mangled, const char *want)
{
    char *got = vh_demangle(mangled);
    if (!want) {
        if (got)
            fail_msg("%s: want nothing, got %s", mangled, got);
        return;
    }
    if (!got || strcmp(got, want))
        fail_msg("%s: want %s, got %s", mangled, want, got ? got : "(null)");
    free(got);
}

static void test_demangle(void **state)
{
    /* C++ through libstdc++ */
    expect_demangled("_ZN2ns6WidgetIiE4growEm", "ns::Widget<int>::grow(unsigned long)");
    expect_demangled("_ZN2ns6detail11make_bufferIdEEPT_m",
                     "double* ns::detail::make_buffer<double>(unsigned long)");
    /* Rust legacy: the hash goes, escapes are decoded */
    expect_demangled("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write");
    expect_demangled("_ZN66_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$core..ops..drop..Drop$GT$"
                     "4drop17h0123456789abcdefE",
                     "<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop");
    expect_demangled("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17ha86af84d9cc65291E"
                     ".llvm.1234",
                     "std::rt::lang_start::{{closure}}");
    /* Rust v0 (rustc -C symbol-mangling-version=v0) */
    expect_demangled("_RNvCs15kBYyAo9fc_7mycrate7example", "mycrate::example");
    expect_demangled("_RNvMsr_NtCs3ssYzQotkvD_3std4pathNtB5_7PathBuf3new",
                     "<std::path::PathBuf>::new");
    expect_demangled("_RINvNtCsgEmfK2I1SDS_4core6escape14escape_unicodeKja_E"
                     "CsgY6Mt91CT9J_14rustc_demangle",
                     "core::escape::escape_unicode::<10>");
    /* ...and from rustc 1.95 on a small program (crate `hello`) */
    expect_demangled("_RINvCs1AdN8cFC2m1_5hello3fooTReINtNtCslNYArtu3iFV_5alloc3vec3VecTlcEEEEB2_",
                     "hello::foo::<(&str, alloc::vec::Vec<(i32, char)>)>");
    expect_demangled("_RNCINvNtCsjrHSEGnQ3l9_3std2rt10lang_startuE0Cs1AdN8cFC2m1_5hello",
                     "std::rt::lang_start::<()>::{closure#0}");
    expect_demangled("_RNSNvYNCINvNtCsjrHSEGnQ3l9_3std2rt10lang_startuE0INtNtNtCsgEmfK2I1SDS_"
                     "4core3ops8function6FnOnceuE9call_once6vtableCs1AdN8cFC2m1_5hello",
                     "<std::rt::lang_start<()>::{closure#0} as core::ops::function::FnOnce<()>>"
                     "::call_once::{shim:vtable#0}");
    expect_demangled("_RNvXs1G_NtCsgEmfK2I1SDS_4core3fmtTReINtNtCslNYArtu3iFV_5alloc3vec3VecTlcEEE"
                     "NtB6_5Debug3fmtCs1AdN8cFC2m1_5hello",
                     "<(&str, alloc::vec::Vec<(i32, char)>) as core::fmt::Debug>::fmt");
    expect_demangled("_RINvNtNtCsjrHSEGnQ3l9_3std3sys9backtrace28___rust_begin_short_backtrace"
                     "FEuuECs1AdN8cFC2m1_5hello",
                     "std::sys::backtrace::__rust_begin_short_backtrace::<fn(), ()>");
    /* not mangled, or broken: NULL, never a crash */
    expect_demangled("malloc", NULL);
    expect_demangled("_Z", NULL);
    expect_demangled("_RNvC", NULL);
    expect_demangled("_RB_", NULL);
    expect_demangled("_RINvCs1234_5hello3fooRL0_eE", NULL);  /* unbound lifetime */
    /* a last component that is not a Rust hash: plain C++ */
    expect_demangled("_ZN4core3fmt5write16h0123456789abcdeE", "core::fmt::write::h0123456789abcde");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_function),
        cmocka_unit_test(test_inline_chain),
        cmocka_unit_test(test_shared_file_and_duplicates),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_rebuilt_file),
        cmocka_unit_test(test_moved_file_by_build_id),
        cmocka_unit_test(test_in_transaction_and_again),
        cmocka_unit_test(test_no_module_and_errors),
        cmocka_unit_test(test_libc_debuginfo),
        cmocka_unit_test(test_demangle),
        cmocka_unit_test(test_thread_matches_db),
        cmocka_unit_test(test_thread_stopped_and_orphans),
        cmocka_unit_test(test_load_matches_symbolize),
        cmocka_unit_test(test_load_no_frames),
    };
    return cmocka_run_group_tests_name("symbols", tests, NULL, NULL);
}
