/* test_util.c — the analyzer's bottom layers against what they promise:
 * sizes (common/size_parse.h, shared with the shim) and durations
 * (util/parse_time.h) as options take them, JSON strings (util/json.h),
 * the hash map and string table, files published by rename with signal
 * cleanup (util/tmpfile.h), the compressed output file (render/xout.h)
 * read back through zlib and zstd, and the renderer's table, JSON and CSV
 * (render/output.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <malloc.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "analyze/render/output.h"
#include "analyze/render/xout.h"
#include "analyze/util/fmt.h"
#include "analyze/util/json.h"
#include "analyze/util/map.h"
#include "analyze/util/parse_time.h"
#include "analyze/util/path.h"
#include "analyze/util/strtab.h"
#include "analyze/util/tmpfile.h"
#include "common/leb128.h"
#include "common/size_parse.h"

/* ---- sizes and durations ---------------------------------------------------- */

static void test_size_parse(void **state)
{
    static const struct { const char *s; uint64_t v; } good[] = {
        { "0", 0 }, { "4096", 4096 }, { "4K", 4000 }, { "4k", 4000 }, { "4KB", 4000 },
        { "4KiB", 4096 }, { "4kib", 4096 }, { "4Ki", 4096 }, { "512KiB", 524288 },
        { "1M", 1000000 }, { "1MiB", 1048576 }, { "2G", 2000000000 },
        { "2GiB", 2147483648ull }, { "3T", 3000000000000ull }, { "1TiB", 1ull << 40 },
        { "123B", 123 }, { "18446744073709551615", UINT64_MAX },
    };
    static const char *const bad[] = {
        "", "-1", "+1", " 1", "1 ", "4X", "4KiBx", "4iB", "K", "1.5K", "0x10",
        "18446744073709551616", "20000000T", "17179869184GiB",
    };
    uint64_t v;
    (void)state;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        v = 7;
        if (vh_parse_size(good[i].s, 1, UINT64_MAX, &v))
            fail_msg("'%s' refused", good[i].s);
        if (v != good[i].v)
            fail_msg("'%s' gave %llu, want %llu", good[i].s, (unsigned long long)v,
                     (unsigned long long)good[i].v);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 7;
        if (!vh_parse_size(bad[i], 1, UINT64_MAX, &v))
            fail_msg("'%s' taken as %llu", bad[i], (unsigned long long)v);
        assert_int_equal(v, 7);    /* untouched on error */
    }
    /* units off: digits only; a maximum */
    assert_int_equal(vh_parse_size("4K", 0, UINT64_MAX, &v), -1);
    assert_int_equal(vh_parse_size("64", 0, UINT64_MAX, &v), 0);
    assert_int_equal(v, 64);
    assert_int_equal(vh_parse_size("1001", 1, 1000, &v), -1);
    assert_int_equal(vh_parse_size("1K", 1, 1000, &v), 0);
    assert_int_equal(v, 1000);
}

/* Durations as series and chart print them: whole in their unit without
 * decimals, else one, or two below 10 for a chart's bins. */
static void test_fmt_duration(void **state)
{
    static const struct { uint64_t ns; int fine; const char *s; } d[] = {
        { 5000000, 0, "5 ms" }, { 1500000000, 0, "1.5 s" }, { 250000, 0, "250 \xc2\xb5s" },
        { 1250000, 0, "1.2 ms" }, { 1250000, 1, "1.25 ms" }, { 12500000, 1, "12.5 ms" },
        { 0, 1, "0 ns" }, { 999, 0, "999 ns" }, { 60000000000ull, 1, "60 s" },
    };
    char buf[32];
    (void)state;
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        vh_fmt_duration(d[i].ns, d[i].fine, buf, sizeof buf);
        assert_string_equal(buf, d[i].s);
    }
}

static void test_parse_time(void **state)
{
    static const struct { const char *s; uint64_t ns; } good[] = {
        { "100ms", 100000000 }, { "1.5s", 1500000000 }, { "250us", 250000 },
        { "250\xc2\xb5s", 250000 }, { "5000ns", 5000 }, { "2", 2000000000 }, { "0", 0 },
        { "0.0000000004", 0 }, { "0.0000000006", 1 },
    };
    static const char *const bad[] = { "", "-1", "+1", " 1", "1h", "1 s", "nan", "inf",
                                       "1e20", "s", "1sx" };
    uint64_t ns;
    (void)state;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        if (vh_parse_time(good[i].s, &ns))
            fail_msg("'%s' refused", good[i].s);
        if (ns != good[i].ns)
            fail_msg("'%s' gave %llu ns", good[i].s, (unsigned long long)ns);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (vh_parse_time(bad[i], &ns) != -EINVAL)
            fail_msg("'%s' taken", bad[i]);
}

/* ---- JSON strings ------------------------------------------------------------ */

struct sbuf {
    char s[512];
    size_t n;
};

static void sb_sink(void *arg, const char *s, size_t n)
{
    struct sbuf *b = arg;
    assert_true(b->n + n < sizeof b->s);
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static const char *json(const char *s, size_t n, unsigned flags)
{
    static struct sbuf b;
    b.n = 0;
    b.s[0] = 0;
    vh_json_str(sb_sink, &b, s, n, flags);
    return b.s;
}
#define J(lit, flags) json(lit, sizeof lit - 1, flags)

static void test_json_str(void **state)
{
    (void)state;
    assert_string_equal(J("", 0), "\"\"");
    assert_string_equal(J("plain text", 0), "\"plain text\"");
    assert_string_equal(J("a\"b\\c", 0), "\"a\\\"b\\\\c\"");
    assert_string_equal(J("l1\nl2\tx\ry", 0), "\"l1\\nl2\\tx\\ry\"");
    assert_string_equal(J("\x01\x1f\x7f", 0), "\"\\u0001\\u001f\\u007f\"");
    assert_string_equal(J("a\0b", 0), "\"a\\u0000b\"");
    /* '<' only for HTML */
    assert_string_equal(J("vector<int>", 0), "\"vector<int>\"");
    assert_string_equal(J("</script>", VH_JSON_HTML), "\"\\u003c/script>\"");
    /* UTF-8 kept when well formed: é, €, 😀 */
    assert_string_equal(J("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0),
                        "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
    /* and replaced byte by byte when not: Latin-1, overlong, surrogate,
     * above U+10FFFF, a lone continuation byte, cut by the string's end */
    assert_string_equal(J("caf\xe9", 0), "\"caf\\ufffd\"");
    assert_string_equal(J("\xc0\x80", 0), "\"\\ufffd\\ufffd\"");
    assert_string_equal(J("\xed\xa0\x80", 0), "\"\\ufffd\\ufffd\\ufffd\"");
    assert_string_equal(J("\xf4\x90\x80\x80", 0), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    assert_string_equal(J("\x80x", 0), "\"\\ufffdx\"");
    assert_string_equal(json("\xe2\x82\xac", 2, 0), "\"\\ufffd\\ufffd\"");
    assert_int_equal(vh_utf8_len((const unsigned char *)"\xe2\x82\xac"), 3);
    assert_int_equal(vh_utf8_len((const unsigned char *)"\xe2\x82"), 0);
}

/* ---- the hash map and the string table ------------------------------------------ */

static void test_map(void **state)
{
    enum { N = 200000 };
    struct vh_map *m = vh_map__new();
    uint8_t *in = calloc(N, 1);
    int existed;
    (void)state;
    assert_non_null(m);
    assert_non_null(in);
    /* keys that collide in their low bits, inserted and removed at random,
     * checked against a plain array after every phase */
    srand(7);
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < N; i++) {
            uint64_t k = (uint64_t)(rand() % N);
            if (rand() % 3) {
                struct vh_map_ent *e = vh_map__insert(m, k << 20, ~k, &existed);
                assert_non_null(e);
                assert_int_equal(existed, in[k]);
                e->v1 = k * 3, e->v2 = k + 1;
                in[k] = 1;
            } else {
                struct vh_map_ent *e = vh_map__find(m, k << 20, ~k);
                assert_int_equal(e != NULL, in[k]);
                if (e)
                    vh_map__remove(m, e);
                in[k] = 0;
            }
        }
        size_t count = 0;
        for (uint64_t k = 0; k < N; k++) {
            struct vh_map_ent *e = vh_map__find(m, k << 20, ~k);
            assert_int_equal(e != NULL, in[k]);
            if (e) {
                count++;
                assert_int_equal(e->v1, k * 3);
                assert_int_equal(e->v2, k + 1);
            }
            /* (k1, k2) is the key, not k1 alone */
            assert_null(vh_map__find(m, k << 20, k));
        }
        assert_int_equal(vh_map__count(m), count);
    }
    vh_map__free(m);
    free(in);
}

static void test_base_name(void **state)
{
    (void)state;
    assert_string_equal(vh_base_name("/usr/lib/libc.so.6"), "libc.so.6");
    assert_string_equal(vh_base_name("a.c"), "a.c");
    assert_string_equal(vh_base_name("/a.c"), "a.c");
    assert_string_equal(vh_base_name("dir/"), "dir/");   /* nothing follows: the whole */
    assert_string_equal(vh_base_name("/"), "/");
    assert_string_equal(vh_base_name(""), "");
    assert_null(vh_base_name(NULL));
}

/* common/leb128.h, the varints of the capture, the event store and
 * protobuf: round trips at every length, and the two ways to be bad. */
static void test_leb128(void **state)
{
    static const uint64_t vals[] = { 0, 1, 127, 128, 300, 16383, 16384, 1ull << 35,
                                     (1ull << 63) - 1, 1ull << 63, UINT64_MAX };
    uint8_t buf[VH_ULEB_MAX + 4];
    const uint8_t *p;
    uint64_t v = 0;

    (void)state;
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint8_t *end = vh_uleb_put(buf, vals[i]);
        size_t n = (size_t)(end - buf), want = 1;
        for (uint64_t x = vals[i]; x >= 0x80; x >>= 7)
            want++;
        assert_int_equal(n, want);
        p = buf;                                        /* bounded read */
        assert_int_equal(vh_uleb_get(&p, end, &v), 0);
        assert_true(p == end && v == vals[i]);
        memset(end, 0, 4);                              /* unbounded one */
        p = buf;
        assert_int_equal(vh_uleb_get_near(&p, &v), 0);
        assert_true(p == end && v == vals[i]);
        p = buf;                                        /* one byte short */
        if (n > 1)
            assert_int_equal(vh_uleb_get(&p, end - 1, &v), VH_DEC_CUT);
        assert_int_equal(vh_unzigzag(vh_zigzag(vals[i])), vals[i]);
    }
    memset(buf, 0xff, VH_ULEB_MAX);                     /* a 10th byte > 1 */
    buf[VH_ULEB_MAX - 1] = 2;
    p = buf;
    assert_int_equal(vh_uleb_get(&p, buf + VH_ULEB_MAX, &v), VH_DEC_VARINT);
    assert_int_equal(vh_zigzag((uint64_t)-1), 1);
    assert_int_equal(vh_zigzag(1), 2);
}

static void test_strtab(void **state)
{
    struct vh_strtab *t = vh_strtab__new();
    int added;
    char buf[32];
    (void)state;
    assert_non_null(t);
    assert_int_equal(vh_strtab__intern(t, "main", 4, &added), 1);
    assert_int_equal(added, 1);
    assert_int_equal(vh_strtab__intern(t, "malloc", 6, &added), 2);
    assert_int_equal(vh_strtab__intern(t, "mainly", 4, &added), 1);   /* "main" */
    assert_int_equal(added, 0);
    assert_string_equal(vh_strtab__get(t, 2), "malloc");
    assert_int_equal(vh_strtab__len(t, 2), 6);
    /* many, so that the table grows; ids stay in order of first appearance */
    for (int i = 0; i < 50000; i++) {
        int n = snprintf(buf, sizeof buf, "f%d", i);
        assert_int_equal(vh_strtab__intern(t, buf, (size_t)n, &added), (uint32_t)i + 3);
    }
    for (int i = 0; i < 50000; i += 997) {
        snprintf(buf, sizeof buf, "f%d", i);
        assert_string_equal(vh_strtab__get(t, (uint32_t)i + 3), buf);
        assert_int_equal(vh_strtab__intern(t, buf, strlen(buf), &added), (uint32_t)i + 3);
        assert_int_equal(added, 0);
    }
    assert_int_equal(vh_strtab__count(t), 50002);
    vh_strtab__free(t);
}

/* ---- files published by rename --------------------------------------------------- */

static char dir[64];

static int setup_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/vheap-test-util.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
    char cmd[128];
    (void)state;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* How many entries the test directory holds (temporary files left?). */
static int entries(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    assert_non_null(d);
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_tmpfile(void **state)
{
    char path[128], tmp[160];
    struct stat sb;
    (void)state;
    snprintf(path, sizeof path, "%s/out.db", dir);
    int fd = vh_tmpfile_create(path, tmp, sizeof tmp);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal(write(fd, "x", 1), 1);
    close(fd);
    assert_int_equal(access(path, F_OK), -1);      /* not there until published */
    assert_int_equal(vh_tmpfile_publish(tmp, path), 0);
    assert_int_equal(access(path, F_OK), 0);
    assert_int_equal(entries(), 1);
    /* discarded: nothing left */
    fd = vh_tmpfile_create(path, tmp, sizeof tmp);
    assert_true(fd >= 0);
    close(fd);
    vh_tmpfile_discard(tmp);
    assert_int_equal(entries(), 1);
    /* too long a name */
    assert_int_equal(vh_tmpfile_create(path, tmp, 8), -ENAMETOOLONG);

    /* A SIGTERM while a file is pending removes it, and the process dies of
     * that signal as it would have; handlers are back afterwards. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char t[160];
        snprintf(path, sizeof path, "%s/killed.db", dir);
        if (vh_tmpfile_create(path, t, sizeof t) < 0)
            _exit(3);
        raise(SIGTERM);
        _exit(4);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGTERM);
    assert_int_equal(entries(), 1);
    struct sigaction sa;
    assert_int_equal(sigaction(SIGTERM, NULL, &sa), 0);
    assert_true(sa.sa_handler == SIG_DFL);
}

/* The renderer's scratch file lives in $TMPDIR, as SQLite's do, has no name
 * there, and reads back what was written. */
static void test_tmpfile_scratch(void **state)
{
    (void)state;
    const char *was = getenv("TMPDIR");
    char *saved = was ? strdup(was) : NULL;
    setenv("TMPDIR", dir, 1);
    int before = entries();
    FILE *f = vh_tmpfile_scratch();
    assert_non_null(f);
    assert_int_equal(entries(), before);           /* no name in the dir */
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fileno(f));
    ssize_t n = readlink(link, target, sizeof target - 1);
    assert_true(n > 0);
    target[n] = 0;
    assert_memory_equal(target, dir, strlen(dir));  /* on $TMPDIR's disk */
    assert_int_equal(fputs("spooled rows", f) >= 0, 1);
    rewind(f);
    char back[32] = { 0 };
    assert_non_null(fgets(back, sizeof back, f));
    assert_string_equal(back, "spooled rows");
    fclose(f);
    setenv("TMPDIR", "/nonexistent/vheap-test", 1);
    assert_null(vh_tmpfile_scratch());
    if (saved)
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
    free(saved);
}

/* ---- the output file -------------------------------------------------------------- */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *p = malloc(1 << 22);
    assert_non_null(p);
    *len = fread(p, 1, 1 << 22, f);
    fclose(f);
    return p;
}

/* Writes the same text (compressible, 1.5 MB: several of xout's buffers)
 * through each codec and reads it back. */
static void test_xout(void **state)
{
    static const char *const names[] = { "plain.txt", "z.gz", "z.zst" };
    char path[128], err[256];
    struct vh_xout *o;
    (void)state;
    for (int c = 0; c < 3; c++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[c]);
        assert_int_equal(vh_xout__open(path, &o, err, sizeof err), 0);
        assert_int_equal(vh_xout__codec(o), (enum vh_xout_codec)c);
        for (int i = 0; i < 100000; i++)
            vh_xout__printf(o, "line %d of %s\n", i, names[c]);
        vh_xout__json_str(o, "<\n");
        assert_int_equal(access(path, F_OK), -1);
        assert_int_equal(vh_xout__commit(o, err, sizeof err), 0);

        size_t n;
        char *raw = slurp(path, &n), *text = raw;
        size_t tlen = n;
        if (c == 1) {
            gzFile g = gzopen(path, "rb");
            assert_non_null(g);
            text = malloc(1 << 22);
            tlen = (size_t)gzread(g, text, 1 << 22);
            gzclose(g);
        } else if (c == 2) {
            text = malloc(1 << 22);
            tlen = ZSTD_decompress(text, 1 << 22, raw, n);
            assert_false(ZSTD_isError(tlen));
        }
        char want[64];
        size_t off = 0;
        for (int i = 0; i < 100000; i++) {
            int k = snprintf(want, sizeof want, "line %d of %s\n", i, names[c]);
            assert_true(off + (size_t)k <= tlen);
            assert_memory_equal(text + off, want, (size_t)k);
            off += (size_t)k;
        }
        assert_int_equal(tlen - off, 10);
        assert_memory_equal(text + off, "\"\\u003c\\n\"", 10);
        if (c)
            assert_true(n < tlen / 4);   /* compressed indeed */
        if (text != raw)
            free(text);
        free(raw);
    }
    assert_int_equal(entries(), 4);      /* out.db and the three */

    /* discard leaves nothing; a directory is refused with a reason */
    snprintf(path, sizeof path, "%s/gone.txt", dir);
    assert_int_equal(vh_xout__open(path, &o, err, sizeof err), 0);
    vh_xout__puts(o, "partial");
    vh_xout__discard(o);
    assert_int_equal(entries(), 4);
    assert_int_equal(vh_xout__open(dir, &o, err, sizeof err), -EISDIR);
    assert_non_null(strstr(err, "is a directory"));
    /* a device is written in place, never replaced */
    assert_int_equal(vh_xout__open("/dev/null", &o, err, sizeof err), 0);
    vh_xout__puts(o, "x");
    assert_int_equal(vh_xout__commit(o, err, sizeof err), 0);
    struct stat sb;
    assert_int_equal(stat("/dev/null", &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));
}

/* ---- the renderer ---------------------------------------------------------------- */

static const struct out_col cols[] = {
    { "name", "name", OUT_TEXT, 0 },
    { "bytes", "bytes", OUT_BYTES, 0 },
    { "calls", "calls", OUT_INT, 0 },
    { "live", "live", OUT_BOOL, 0 },
};

/* The document of two rows in `fmt`, as text. */
static char *render(enum out_format fmt, unsigned flags)
{
    char *p = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&p, &n);
    assert_non_null(f);
    struct out *o = out__begin(fmt, flags, f);
    assert_non_null(o);
    assert_int_equal(out__section(o, "rows", OUT_LIST, NULL, cols, 4), 0);
    struct out_val a[] = { OV_S("a,\"b\""), OV_I(2200), OV_I(3), OV_I(1) };
    struct out_val b[] = { OV_S("caf\xe9"), OV_I(999), OV_I(12345), OV_I(0) };
    assert_int_equal(out__row(o, a, NULL), 0);
    assert_int_equal(out__row(o, b, NULL), 0);
    assert_int_equal(out__end(o), 0);
    fclose(f);
    return p;
}

static void test_output(void **state)
{
    char buf[32];
    (void)state;
    char *j = render(OUT_JSON, 0);
    assert_non_null(strstr(j, "{\"name\": \"a,\\\"b\\\"\", \"bytes\": 2200, \"calls\": 3, "
                              "\"live\": true}"));
    assert_non_null(strstr(j, "\"name\": \"caf\\ufffd\""));
    free(j);
    char *c = render(OUT_CSV, 0);
    assert_string_equal(c, "name,bytes,calls,live\r\n\"a,\"\"b\"\"\",2200,3,1\r\n"
                           "caf\xe9,999,12345,0\r\n");
    free(c);
    char *t = render(OUT_TABLE, 0);
    assert_non_null(strstr(t, "2.20K"));
    assert_non_null(strstr(t, "999B"));
    assert_non_null(strstr(t, "yes"));
    free(t);
    t = render(OUT_TABLE, OUT_RAW_BYTES);
    assert_non_null(strstr(t, "2200"));
    assert_null(strstr(t, "2.20K"));
    free(t);

    assert_string_equal(out__human_bytes(0, buf, sizeof buf), "0B");
    assert_string_equal(out__human_bytes(999, buf, sizeof buf), "999B");
    assert_string_equal(out__human_bytes(1000, buf, sizeof buf), "1.00K");
    assert_string_equal(out__human_bytes(3820000, buf, sizeof buf), "3.82M");
    assert_string_equal(out__human_ns(1234567890, buf, sizeof buf), "1.235s");
    enum out_format fmt;
    assert_int_equal(out__parse_format("csv", &fmt), 0);
    assert_int_equal(fmt, OUT_CSV);
    assert_int_equal(out__parse_format("xml", &fmt), -EINVAL);
}


/* Rows past the spool's 1 MiB in memory (so through its temp file): the
 * renderer's memory does not grow with them, and what needs every row is
 * still decided by every row: the JSON and CSV stack column by a stack in
 * the last row only, a table's same-in-every-row and zero columns shown for
 * a last row that differs. */
static const struct out_col many_cols[] = {
    { "heap", "heap", OUT_TEXT, OUT_F_HIDE_SAME },
    { "n", "n", OUT_INT, 0 },
    { "odd", "odd", OUT_INT, OUT_F_HIDE_ZERO },
};

enum { MANY = 30000, FRAMES = 20 };

static struct out_stack *many_stack(int64_t i)
{
    struct out_stack *st = calloc(1, sizeof *st);
    assert_non_null(st);
    st->frames = calloc(FRAMES, sizeof *st->frames);
    assert_non_null(st->frames);
    st->n = FRAMES;
    for (int k = 0; k < FRAMES; k++) {
        assert_true(asprintf(&st->frames[k].function, "function_number_%d_of_row_%lld", k,
                             (long long)i) > 0);
        st->frames[k].file = strdup("/some/rather/long/path/to/a/source/file.c");
        st->frames[k].line = k + 1;
    }
    return st;
}

/* Whether mallinfo2 sees this process's heap: not under ASan, whose
 * allocator replaces glibc's; the memory bounds are then not checked (the
 * plain build checks them), the documents still are. */
static int mallinfo_counts(void)
{
    struct mallinfo2 a = mallinfo2();
    char *p = malloc(4 << 20);
    assert_non_null(p);
    memset(p, 1, 4 << 20);
    struct mallinfo2 b = mallinfo2();
    free(p);
    return b.uordblks + b.hblkhd >= a.uordblks + a.hblkhd + (4 << 20);
}

static char *render_many(enum out_format fmt, long long *heap_growth)
{
    /* a file, not a memory stream: the document is not the renderer's */
    FILE *f = tmpfile();
    assert_non_null(f);
    struct out *o = out__begin(fmt, 0, f);
    assert_non_null(o);
    assert_int_equal(out__section(o, "rows", OUT_LIST, NULL, many_cols, 3), 0);
    size_t before = 0;
    for (int64_t i = 0; i < MANY; i++) {
        int last = i == MANY - 1;
        struct out_val v[] = { OV_S(last ? "other" : "malloc"), OV_I(i), OV_I(last) };
        /* the first rows have no stack: the column comes from later ones */
        assert_int_equal(out__row(o, v, i < 2 ? NULL : many_stack(i)), 0);
        /* chunks in use, the mmapped ones too: a spool kept in memory
         * soon passes the mmap threshold */
        struct mallinfo2 mi = mallinfo2();
        if (i == 100)
            before = mi.uordblks + mi.hblkhd;
        if (last)
            *heap_growth = (long long)(mi.uordblks + mi.hblkhd) - (long long)before;
    }
    assert_int_equal(out__end(o), 0);
    long n = ftell(f);
    assert_true(n > 0);
    char *p = malloc((size_t)n + 1);
    assert_non_null(p);
    rewind(f);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    p[n] = 0;
    fclose(f);
    return p;
}

static void test_output_many_rows(void **state)
{
    long long growth;
    int counts = mallinfo_counts();
    (void)state;
    char *j = render_many(OUT_JSON, &growth);
    assert_true(!counts || growth < (2ll << 20));   /* rows as values: 100+ MB */
    assert_non_null(strstr(j, "{\"heap\": \"malloc\", \"n\": 0, \"odd\": 0, \"stack\": null,"
                              " \"stack_truncated\": false},\n"));
    assert_non_null(strstr(j, "{\"heap\": \"other\", \"n\": 29999, \"odd\": 1, \"stack\":"
                              " [{\"function\": \"function_number_0_of_row_29999\""));
    assert_non_null(strstr(j, "\"line\": 20, \"module\": null, \"address\": 0, \"offset\": null,"
                              " \"inlined\": []}], \"stack_truncated\": false}\n  ]\n}\n"));
    free(j);
    char *c = render_many(OUT_CSV, &growth);
    assert_true(!counts || growth < (2ll << 20));
    assert_true(!strncmp(c, "heap,n,odd,stack\r\nmalloc,0,0,\r\nmalloc,1,0,\r\nmalloc,2,0,"
                            "function_number_0_of_row_2 (/some/rather/long/path/to/a/source/"
                            "file.c:1) <- function_number_1_of_row_2 (", 128));
    free(c);
    char *t = render_many(OUT_TABLE, &growth);
    assert_true(!counts || growth < (2ll << 20));
    assert_true(!strncmp(t, "heap        n  odd\nmalloc      0    0\nmalloc      1    0\n"
                            "malloc      2    0\n    function_number_0_of_row_2 (/some", 88));
    assert_non_null(strstr(t, "\nother   29999    1\n    function_number_0_of_row_29999 ("));
    assert_non_null(strstr(t, "function_number_19_of_row_29999 (/some/rather/long/path/to/a/"
                              "source/file.c:20)\n"));

    /* No scratch file to be had: the same document, from memory. */
    const char *was = getenv("TMPDIR");
    char *saved = was ? strdup(was) : NULL;
    setenv("TMPDIR", "/nonexistent/vheap-test", 1);
    char *m = render_many(OUT_TABLE, &growth);
    assert_true(!counts || growth > (8ll << 20));   /* it did stay in memory */
    assert_string_equal(m, t);
    free(m);
    if (saved)
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
    free(saved);
    free(t);

    /* A scratch file that cannot be written (a file size limit here; a full
     * disk alike) fails the document as a write error, not as memory. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = { 256 << 10, 256 << 10 };
        signal(SIGXFSZ, SIG_IGN);
        FILE *null = fopen("/dev/null", "w");
        struct out *o = out__begin(OUT_JSON, 0, null);
        if (!o || setrlimit(RLIMIT_FSIZE, &rl) ||
            out__section(o, "rows", OUT_LIST, NULL, many_cols, 3))
            _exit(3);
        for (int64_t i = 0; i < MANY; i++) {
            struct out_val v[] = { OV_S("malloc"), OV_I(i), OV_I(0) };
            if (out__row(o, v, many_stack(i)))
                _exit(4);              /* not a failure of the row's memory */
        }
        _exit(out__end(o) == -EIO ? 0 : 5);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_parse),
        cmocka_unit_test(test_parse_time),
        cmocka_unit_test(test_fmt_duration),
        cmocka_unit_test(test_json_str),
        cmocka_unit_test(test_map),
        cmocka_unit_test(test_base_name),
        cmocka_unit_test(test_leb128),
        cmocka_unit_test(test_strtab),
        cmocka_unit_test(test_tmpfile),
        cmocka_unit_test(test_tmpfile_scratch),
        cmocka_unit_test(test_xout),
        cmocka_unit_test(test_output),
        cmocka_unit_test(test_output_many_rows),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
