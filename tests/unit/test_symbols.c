/* test_symbols.c — the symbolizer against this test binary's own code.
 * Probe functions below record return addresses whose source lines they
 * know; the tests put them in a fresh DB as a loader would (module with
 * bias from dl_iterate_phdr, frames with module_offset), resolve, and
 * compare function, file, line and the inline chain. Also: untrusted
 * modules, libc through its separate debug file, and the demangler. */
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

#include "analyze/store/db.h"
#include "analyze/symbols/demangle.h"
#include "analyze/symbols/symbols.h"

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
    };
    return cmocka_run_group_tests_name("symbols", tests, NULL, NULL);
}
