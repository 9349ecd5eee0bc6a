/* cmd_export.c — `vheap-analyze export`: the recording in another tool's
 * format (heaptrack, flame-graph folded stacks, massif, Chrome trace
 * events, pprof). This file owns the command line, the chosen heaps, the process
 * facts every format needs, and the helpers of export.h: the output file
 * with its compression, and the hash tables. The formats are export_*.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "analyze/db.h"
#include "analyze/export.h"
#include "analyze/query_opts.h"

static const char usage[] =
    "usage: vheap-analyze export --format FORMAT [OPTIONS] DB|CAPTURE -o FILE\n"
    "\n"
    "Writes the recording in another tool's format, so that it can be read with\n"
    "the tools people already use. FORMAT is one of:\n"
    "  heaptrack     heaptrack's data file, for heaptrack_print and heaptrack_gui:\n"
    "                every allocation and free in order, stacks with inlined\n"
    "                frames, RSS. Compressed by FILE's suffix: .gz (gzip), .zst\n"
    "                (zstd), else plain text. heaptrack_print reads regular files\n"
    "                only, not pipes\n"
    "  flamegraph    folded stacks, one 'outer;...;inner VALUE' line per stack, for\n"
    "                flamegraph.pl, inferno and speedscope\n"
    "  massif        a massif.out file for valgrind's ms_print and\n"
    "                massif-visualizer: memory over time in about 100 snapshots,\n"
    "                the peak and every 10th in detail (the stack tree)\n"
    "  chrome-trace  Trace Event JSON for Perfetto and chrome://tracing: live bytes\n"
    "                of each heap and RSS as counter tracks, marks as instant\n"
    "                events\n"
    "A CAPTURE is loaded into CAPTURE.sqlite first (reused while up to date).\n"
    "\n"
    "options:\n"
    "  --format F, -f F  the format (required)\n"
    "  -o FILE           where to write ('-' = stdout, uncompressed). FILE is\n"
    "                    written under a temporary name and renamed when complete\n"
    "                    (mode 0600, like the capture)\n"
    "  --heap NAME       which heaps: a name, an id, or NAME/* with the heaps\n"
    "                    nested in it. heaptrack and massif files hold one heap:\n"
    "                    default 'malloc' (the system allocator); several heaps\n"
    "                    chosen are merged into one. flamegraph, chrome-trace and\n"
    "                    pprof default to every heap (a flame graph of several heaps\n"
    "                    gets one root frame per heap, '[heap NAME]')\n"
    "  --cost C          flamegraph: what a stack's value is: allocations\n"
    "                    (calls, default), bytes (allocated), leaked (bytes),\n"
    "                    peak (bytes live at the heap's peak), temporary (calls)\n"
    "  --depth N         flamegraph, massif: at most the N innermost frames of\n"
    "                    each stack (default: all recorded)\n"
    "  --clock C         chrome-trace: 'wall' (default) gives ts in microseconds\n"
    "                    since the Unix epoch, like `urbit -j` traces, so the two\n"
    "                    line up; 'start' in microseconds since the process started\n"
    "  --merge TRACE     chrome-trace: also copy the events of TRACE, a JSON array\n"
    "                    trace such as urbit -j writes (.urbit/put/trace/N.json,\n"
    "                    finished or not), so that one file shows both\n"
    "  -h, --help        this text\n"
    "\n"
    "What a format cannot hold is said on stderr (heaptrack: block addresses,\n"
    "threads, usable sizes, failed calls, times finer than 1 ms, other heaps).\n"
    "\n"
    "examples:\n"
    "  vheap-analyze export --format heaptrack run.sqlite -o run.heaptrack.zst\n"
    "  heaptrack_print run.heaptrack.zst       # or: heaptrack_gui run.heaptrack.zst\n"
    "  vheap-analyze export -f flamegraph --cost leaked run.sqlite -o - | flamegraph.pl >leaks.svg\n"
    "  vheap-analyze export -f massif run.sqlite -o massif.out.1234 && ms_print massif.out.1234\n"
    "  vheap-analyze export -f chrome-trace vheap.urbit.99.vhcap --heap 'loom/*' -o mem.json\n"
    "  vheap-analyze export -f pprof run.sqlite -o run.pb.gz\n"
    "  go tool pprof -top -sample_index=alloc_space run.pb.gz\n"
    "  vheap-analyze export -f chrome-trace vheap.urbit.99.vhcap --merge pier/.urbit/put/trace/0.json -o both.json\n";

static int run(int argc, char **argv);

VH_COMMAND(cmd_export, {
    .name = "export",
    .summary = "write heaptrack, flame-graph, massif, Chrome trace or pprof files",
    .usage = usage,
    .run = run,
    .order = 80,
});

/* ---- helpers for the formats ------------------------------------------------ */

void vh_export_note(const struct vh_export *x, const char *fmt, ...)
{
    FILE *f = x->notes_f ? x->notes_f : stderr;
    va_list ap;
    fprintf(f, "vheap-analyze: %s: ", x->cmd->name);
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
}

int vh_export_prepare(const struct vh_export *x, const char *sql, sqlite3_stmt **st)
{
    return vh_prepare(x->cmd, x->db, sql, st) ? -EIO : 0;
}

const char *vh_export_basename(const char *path)
{
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

/* ---- the output file ---------------------------------------------------------- */

#define XOUT_BUF (256u * 1024u)

struct vh_xout {
    FILE *f;
    enum vh_xout_codec codec;
    int err;                       /* first error (-errno), 0 if none         */
    int is_stdout, direct;         /* direct: written in place (not regular)  */
    char *path, *tmp;
    unsigned char *buf, *zbuf;
    size_t len;
    uint64_t bytes;
    z_stream z;
    int z_on;
    ZSTD_CCtx *zc;
};

/* The temporary file being written, removed if a signal ends the process. */
static char *volatile tmp_for_signal;

static void on_signal(int sig)
{
    char *p = tmp_for_signal;
    if (p)
        unlink(p);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void guard_tmp(char *path)
{
    static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
    tmp_for_signal = path;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa = { .sa_handler = path ? on_signal : SIG_DFL };
        sigaction(sigs[i], &sa, NULL);
    }
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && !strcmp(s + n - m, suffix);
}

int vh_xout__open(const char *path, struct vh_xout **out, char *err, size_t errlen)
{
    struct vh_xout *o = calloc(1, sizeof *o);
    struct stat sb;
    int fd = -1, rc = -ENOMEM;

    *out = NULL;
    if (!o || !(o->buf = malloc(XOUT_BUF)))
        goto nomem;
    if (!strcmp(path, "-")) {
        o->f = stdout;
        o->is_stdout = 1;
        *out = o;
        return 0;
    }
    if (!(o->path = strdup(path)))
        goto nomem;
    o->codec = ends_with(path, ".gz") ? VH_XOUT_GZIP : ends_with(path, ".zst") ? VH_XOUT_ZSTD
                                                                              : VH_XOUT_PLAIN;
    if (!stat(path, &sb) && S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s is a directory", path);
        rc = -EISDIR;
        goto fail;
    }
    if (!stat(path, &sb) && !S_ISREG(sb.st_mode)) {
        /* /dev/null, /dev/stdout, a FIFO: write into it, never replace it */
        o->direct = 1;
        fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    } else {
        size_t n = strlen(path) + sizeof ".tmp-XXXXXX";
        if (!(o->tmp = malloc(n)))
            goto nomem;
        snprintf(o->tmp, n, "%s.tmp-XXXXXX", path);
        fd = mkostemp(o->tmp, O_CLOEXEC);
    }
    if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
        rc = -errno;
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        if (o->tmp && fd >= 0)
            unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
        goto fail;
    }
    if (o->tmp)
        guard_tmp(o->tmp);
    if (o->codec != VH_XOUT_PLAIN && !(o->zbuf = malloc(XOUT_BUF)))
        goto nomem_open;
    if (o->codec == VH_XOUT_GZIP) {
        /* windowBits 15 + 16: a gzip header and trailer, as gzip(1) writes.
         * Level 1: three times faster than the default for 40% more bytes
         * (a 150 MB export: 8 s against 25 s); .zst is smaller and faster. */
        if (deflateInit2(&o->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
            goto nomem_open;
        o->z_on = 1;
    } else if (o->codec == VH_XOUT_ZSTD) {
        if (!(o->zc = ZSTD_createCCtx()))
            goto nomem_open;
        ZSTD_CCtx_setParameter(o->zc, ZSTD_c_compressionLevel, 3);
        ZSTD_CCtx_setParameter(o->zc, ZSTD_c_checksumFlag, 1);
    }
    *out = o;
    return 0;
nomem_open:
    vh_xout__discard(o);
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
nomem:
    snprintf(err, errlen, "out of memory");
fail:
    if (o) {
        free(o->buf);
        free(o->path);
        free(o);
    }
    return rc;
}

enum vh_xout_codec vh_xout__codec(const struct vh_xout *o)
{
    return o->codec;
}

uint64_t vh_xout__bytes(const struct vh_xout *o)
{
    return o->bytes;
}

static void put_raw(struct vh_xout *o, const void *p, size_t n)
{
    if (!o->err && n && fwrite(p, 1, n, o->f) != n)
        o->err = -(errno ? errno : EIO);
}

/* Compresses (or writes) the buffer; `end` finishes the stream. */
static void flush_buf(struct vh_xout *o, int end)
{
    if (o->err)
        return;
    if (o->codec == VH_XOUT_PLAIN) {
        put_raw(o, o->buf, o->len);
    } else if (o->codec == VH_XOUT_GZIP) {
        int zr;
        o->z.next_in = o->buf;
        o->z.avail_in = (uInt)o->len;
        do {
            o->z.next_out = o->zbuf;
            o->z.avail_out = XOUT_BUF;
            zr = deflate(&o->z, end ? Z_FINISH : Z_NO_FLUSH);
            if (zr == Z_STREAM_ERROR) {
                o->err = -EIO;
                return;
            }
            put_raw(o, o->zbuf, XOUT_BUF - o->z.avail_out);
        } while (!o->err && (o->z.avail_in || (end && zr != Z_STREAM_END)));
    } else {
        ZSTD_inBuffer in = { o->buf, o->len, 0 };
        size_t left;
        do {
            ZSTD_outBuffer zo = { o->zbuf, XOUT_BUF, 0 };
            left = ZSTD_compressStream2(o->zc, &zo, &in, end ? ZSTD_e_end : ZSTD_e_continue);
            if (ZSTD_isError(left)) {
                o->err = -EIO;
                return;
            }
            put_raw(o, o->zbuf, zo.pos);
        } while (!o->err && (in.pos < in.size || (end && left)));
    }
    o->len = 0;
}

void vh_xout__write(struct vh_xout *o, const void *p, size_t n)
{
    const char *s = p;
    o->bytes += n;
    while (n) {
        size_t k = XOUT_BUF - o->len < n ? XOUT_BUF - o->len : n;
        memcpy(o->buf + o->len, s, k);
        o->len += k;
        s += k;
        n -= k;
        if (o->len == XOUT_BUF)
            flush_buf(o, 0);
    }
}

void vh_xout__puts(struct vh_xout *o, const char *s)
{
    vh_xout__write(o, s, strlen(s));
}

static void xout_sink(void *o, const char *s, size_t n) { vh_xout__write(o, s, n); }

void vh_xout__printf(struct vh_xout *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = out__vprint(xout_sink, o, fmt, ap);
    va_end(ap);
    if (n < 0 && !o->err)
        o->err = n;
}

static void xout_free(struct vh_xout *o)
{
    if (o->z_on)
        deflateEnd(&o->z);
    ZSTD_freeCCtx(o->zc);
    free(o->buf);
    free(o->zbuf);
    free(o->path);
    free(o->tmp);
    free(o);
}

/* A JSON string: quotes, backslashes and control characters escaped,
 * bytes that are not UTF-8 replaced by U+FFFD (JSON must be UTF-8), and '<'
 * written as \u003c so that the JSON can sit inside an HTML <script>. */
void vh_xout__json_str(struct vh_xout *o, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    vh_xout__write(o, "\"", 1);
    while (*p) {
        unsigned char c = *p;
        size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
                                : (c & 0xf8) == 0xf0 ? 4 : 0;
        int ok = n > 0;
        for (size_t i = 1; ok && i < n; i++)
            ok = (p[i] & 0xc0) == 0x80;
        if (ok && n == 2 && c < 0xc2)
            ok = 0;                /* overlong */
        if (ok && n == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0)))
            ok = 0;                /* overlong, or a surrogate */
        if (ok && n == 4 && ((c == 0xf0 && p[1] < 0x90) || c > 0xf4 || (c == 0xf4 && p[1] >= 0x90)))
            ok = 0;
        if (!ok) {
            vh_xout__puts(o, "\\ufffd");
            p++;
        } else if (c == '"' || c == '\\') {
            vh_xout__write(o, "\\", 1);
            vh_xout__write(o, p++, 1);
        } else if (c < 0x20 || c == '<') {
            vh_xout__printf(o, "\\u%04x", c);
            p++;
        } else {
            vh_xout__write(o, p, n);
            p += n;
        }
    }
    vh_xout__write(o, "\"", 1);
}

int vh_xout__commit(struct vh_xout *o, char *err, size_t errlen)
{
    int rc;
    flush_buf(o, 1);
    if (o->is_stdout) {
        if (fflush(stdout) && !o->err)
            o->err = -(errno ? errno : EIO);
        rc = o->err;
        if (rc)
            snprintf(err, errlen, "writing to stdout: %s", strerror(-rc));
        xout_free(o);
        return rc;
    }
    if (fflush(o->f) && !o->err)
        o->err = -(errno ? errno : EIO);
    if (fclose(o->f) && !o->err)
        o->err = -(errno ? errno : EIO);
    o->f = NULL;
    rc = o->err;
    if (rc) {
        snprintf(err, errlen, "writing %s: %s", o->path, strerror(-rc));
    } else if (o->tmp && rename(o->tmp, o->path)) {
        rc = -errno;
        snprintf(err, errlen, "cannot rename %s to %s: %s", o->tmp, o->path, strerror(errno));
    } else if (o->tmp) {
        guard_tmp(NULL);
        free(o->tmp);
        o->tmp = NULL;
    }
    if (rc && o->tmp) {
        guard_tmp(NULL);
        unlink(o->tmp);
    }
    xout_free(o);
    return rc;
}

void vh_xout__discard(struct vh_xout *o)
{
    if (!o)
        return;
    if (o->f && !o->is_stdout)
        fclose(o->f);
    if (o->tmp) {
        guard_tmp(NULL);
        unlink(o->tmp);
    }
    xout_free(o);
}

/* ---- (k1, k2) -> (v1, v2) ------------------------------------------------------ */

struct vh_map {
    struct vh_map_ent *e;
    uint8_t *used;
    size_t cap, n;                 /* cap: a power of two                    */
};

static inline size_t map_slot(const struct vh_map *m, uint64_t k1, uint64_t k2)
{
    uint64_t h = k1 * 0x9e3779b97f4a7c15ull ^ (k2 + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return (size_t)h & (m->cap - 1);
}

struct vh_map *vh_map__new(void)
{
    struct vh_map *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->cap = 64;
    m->e = malloc(m->cap * sizeof *m->e);
    m->used = calloc(m->cap, 1);
    if (!m->e || !m->used) {
        vh_map__free(m);
        return NULL;
    }
    return m;
}

void vh_map__free(struct vh_map *m)
{
    if (!m)
        return;
    free(m->e);
    free(m->used);
    free(m);
}

size_t vh_map__count(const struct vh_map *m)
{
    return m->n;
}

struct vh_map_ent *vh_map__find(const struct vh_map *m, uint64_t k1, uint64_t k2)
{
    for (size_t i = map_slot(m, k1, k2);; i = (i + 1) & (m->cap - 1)) {
        if (!m->used[i])
            return NULL;
        if (m->e[i].k1 == k1 && m->e[i].k2 == k2)
            return &m->e[i];
    }
}

static int map_grow(struct vh_map *m)
{
    struct vh_map old = *m;
    if (m->cap > SIZE_MAX / 2 / sizeof *m->e)
        return -ENOMEM;
    m->cap *= 2;
    m->e = malloc(m->cap * sizeof *m->e);
    m->used = calloc(m->cap, 1);
    if (!m->e || !m->used) {
        free(m->e);
        free(m->used);
        *m = old;
        return -ENOMEM;
    }
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.used[i])
            continue;
        size_t j = map_slot(m, old.e[i].k1, old.e[i].k2);
        while (m->used[j])
            j = (j + 1) & (m->cap - 1);
        m->e[j] = old.e[i];
        m->used[j] = 1;
    }
    free(old.e);
    free(old.used);
    return 0;
}

struct vh_map_ent *vh_map__insert(struct vh_map *m, uint64_t k1, uint64_t k2, int *existed)
{
    struct vh_map_ent *e = vh_map__find(m, k1, k2);
    *existed = e != NULL;
    if (e)
        return e;
    if ((m->n + 1) * 10 > m->cap * 7 && map_grow(m))
        return NULL;
    size_t i = map_slot(m, k1, k2);
    while (m->used[i])
        i = (i + 1) & (m->cap - 1);
    m->used[i] = 1;
    m->n++;
    m->e[i] = (struct vh_map_ent){ .k1 = k1, .k2 = k2 };
    return &m->e[i];
}

void vh_map__remove(struct vh_map *m, struct vh_map_ent *e)
{
    size_t mask = m->cap - 1, i = (size_t)(e - m->e), j = i;
    m->used[i] = 0;
    m->n--;
    /* Backward shift: pull later entries of the run into the hole when
     * their home slot does not lie cyclically in (hole, their slot]. */
    for (;;) {
        j = (j + 1) & mask;
        if (!m->used[j])
            return;
        size_t k = map_slot(m, m->e[j].k1, m->e[j].k2);
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays)
            continue;
        m->e[i] = m->e[j];
        m->used[i] = 1;
        m->used[j] = 0;
        i = j;
    }
}

/* ---- interned strings ------------------------------------------------------------- */

struct vh_strtab {
    char *chars;                   /* every string, NUL-terminated            */
    size_t clen, ccap;
    uint64_t *off;                 /* off[id]: offset of string id; [0] unused */
    uint32_t *len;
    uint32_t n, idcap;
    uint32_t *slots;               /* hash table of ids, 0 = empty           */
    size_t scap;
};

static uint64_t str_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ^ (h >> 32);
}

struct vh_strtab *vh_strtab__new(void)
{
    struct vh_strtab *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->scap = 256;
    t->slots = calloc(t->scap, sizeof *t->slots);
    if (!t->slots) {
        free(t);
        return NULL;
    }
    return t;
}

void vh_strtab__free(struct vh_strtab *t)
{
    if (!t)
        return;
    free(t->chars);
    free(t->off);
    free(t->len);
    free(t->slots);
    free(t);
}

uint32_t vh_strtab__count(const struct vh_strtab *t)
{
    return t->n;
}

const char *vh_strtab__get(const struct vh_strtab *t, uint32_t id)
{
    return id && id <= t->n ? t->chars + t->off[id] : "";
}

size_t vh_strtab__len(const struct vh_strtab *t, uint32_t id)
{
    return id && id <= t->n ? t->len[id] : 0;
}

static int strtab_rehash(struct vh_strtab *t)
{
    size_t cap = t->scap * 2;
    uint32_t *s = calloc(cap, sizeof *s);
    if (!s)
        return -ENOMEM;
    for (uint32_t id = 1; id <= t->n; id++) {
        size_t i = (size_t)str_hash(t->chars + t->off[id], t->len[id]) & (cap - 1);
        while (s[i])
            i = (i + 1) & (cap - 1);
        s[i] = id;
    }
    free(t->slots);
    t->slots = s;
    t->scap = cap;
    return 0;
}

uint32_t vh_strtab__intern(struct vh_strtab *t, const char *s, size_t n, int *added)
{
    size_t i = (size_t)str_hash(s, n) & (t->scap - 1);
    *added = 0;
    if (n > UINT32_MAX)
        return 0;
    for (; t->slots[i]; i = (i + 1) & (t->scap - 1)) {
        uint32_t id = t->slots[i];
        if (t->len[id] == n && !memcmp(t->chars + t->off[id], s, n))
            return id;
    }
    if (t->n + 2 > t->idcap) {
        uint32_t cap = t->idcap ? t->idcap * 2 : 256;
        uint64_t *off = realloc(t->off, cap * sizeof *off);
        if (!off)
            return 0;
        t->off = off;
        uint32_t *len = realloc(t->len, cap * sizeof *len);
        if (!len)
            return 0;
        t->len = len;
        t->idcap = cap;
    }
    if (t->clen + n + 1 > t->ccap) {
        size_t cap = t->ccap ? t->ccap : 4096;
        while (cap < t->clen + n + 1)
            cap *= 2;
        char *c = realloc(t->chars, cap);
        if (!c)
            return 0;
        t->chars = c;
        t->ccap = cap;
    }
    uint32_t id = ++t->n;
    t->off[id] = t->clen;
    t->len[id] = (uint32_t)n;
    memcpy(t->chars + t->clen, s, n);
    t->chars[t->clen + n] = 0;
    t->clen += n + 1;
    t->slots[i] = id;
    *added = 1;
    if ((size_t)t->n * 10 > t->scap * 7 && strtab_rehash(t)) {
        t->n--;                    /* undo: the table stays consistent */
        t->clen -= n + 1;
        t->slots[i] = 0;
        *added = 0;
        return 0;
    }
    return id;
}

/* ---- options ------------------------------------------------------------------- */

enum fmt { F_NONE, F_HEAPTRACK, F_FLAMEGRAPH, F_MASSIF, F_CHROME, F_PPROF };

static const struct {
    const char *name;
    enum fmt fmt;
} formats[] = {
    { "heaptrack", F_HEAPTRACK },
    { "flamegraph", F_FLAMEGRAPH },
    { "massif", F_MASSIF },
    { "chrome-trace", F_CHROME },
    { "pprof", F_PPROF },
};

static const char *const costs[] = {
    [VH_COST_ALLOCATIONS] = "allocations", [VH_COST_BYTES] = "bytes",
    [VH_COST_LEAKED] = "leaked",           [VH_COST_PEAK] = "peak",
    [VH_COST_TEMPORARY] = "temporary",
};

struct eopts {
    struct vh_qopts q;
    enum fmt fmt;
    const char *out;
    struct vh_export x;
};

/* Takes export's own options out of argv and hands the rest (--heap,
 * --depth, the operand) to the shared parser. */
static int parse_opts(int argc, char **argv, struct eopts *o)
{
    const char *format = NULL, *cost = NULL, *clock = NULL, *merge = NULL;
    const struct vh_command *cmd = &cmd_export;
    const struct vh_opt own[] = {
        VH_OPT_VALUE("--format", &format), VH_OPT_VALUE("-f", &format),
        VH_OPT_VALUE("-o", &o->out),       VH_OPT_VALUE("--output", &o->out),
        VH_OPT_VALUE("--cost", &cost),     VH_OPT_VALUE("--clock", &clock),
        VH_OPT_VALUE("--merge", &merge),
        /* one file, not a list, and not a table */
        VH_OPT_REFUSE_VALUE("--limit"),    VH_OPT_REFUSE_FLAG("--bytes"),
    };
    int rc = vh_qopts_parse_own(cmd, 0, own, sizeof own / sizeof own[0], argc, argv, &o->q);
    if (rc)
        return rc;
    if (!format) {
        vh_errorf(cmd->name, "--format is needed: heaptrack, flamegraph, massif, chrome-trace "
                             "or pprof");
        return -EINVAL;
    }
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (!strcmp(format, formats[i].name))
            o->fmt = formats[i].fmt;
    if (o->fmt == F_NONE) {
        vh_errorf(cmd->name, "--format: '%s' is not heaptrack, flamegraph, massif, "
                             "chrome-trace or pprof", format);
        return -EINVAL;
    }
    if (!o->out || !*o->out) {
        vh_errorf(cmd->name, "-o FILE is needed ('-' writes to stdout)");
        return -EINVAL;
    }
    if (cost) {
        size_t i;
        for (i = 0; i < sizeof costs / sizeof costs[0]; i++)
            if (!strcmp(cost, costs[i]))
                break;
        if (i == sizeof costs / sizeof costs[0]) {
            vh_errorf(cmd->name, "--cost: '%s' is not allocations, bytes, leaked, peak or "
                                 "temporary", cost);
            return -EINVAL;
        }
        if (o->fmt != F_FLAMEGRAPH) {
            vh_errorf(cmd->name, "--cost applies to --format flamegraph only");
            return -EINVAL;
        }
        o->x.cost = (enum vh_cost)i;
        o->x.cost_given = 1;
    }
    if (clock) {
        if (o->fmt != F_CHROME) {
            vh_errorf(cmd->name, "--clock applies to --format chrome-trace only");
            return -EINVAL;
        }
        if (!strcmp(clock, "wall"))
            o->x.clock = VH_CLOCK_WALL;
        else if (!strcmp(clock, "start"))
            o->x.clock = VH_CLOCK_START;
        else {
            vh_errorf(cmd->name, "--clock: '%s' is not wall or start", clock);
            return -EINVAL;
        }
        o->x.clock_given = 1;
    }
    if (merge) {
        if (o->fmt != F_CHROME) {
            vh_errorf(cmd->name, "--merge applies to --format chrome-trace only");
            return -EINVAL;
        }
        if (clock && o->x.clock != VH_CLOCK_WALL) {
            vh_errorf(cmd->name, "--merge needs --clock wall: urbit -j traces count "
                                 "microseconds since the Unix epoch");
            return -EINVAL;
        }
        o->x.merge = merge;
    }
    if (o->q.depth && o->fmt != F_FLAMEGRAPH && o->fmt != F_MASSIF) {
        vh_errorf(cmd->name, "--depth applies to --format flamegraph and massif only");
        return -EINVAL;
    }
    return 0;
}

/* ---- what every format needs ------------------------------------------------------ */

static char *col_strdup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? strdup((const char *)t) : NULL;
}

static int read_process(struct vh_export *x)
{
    sqlite3_stmt *st = NULL;
    int rc = vh_export_prepare(x,
                               "SELECT pid, exe, start_realtime_ns, runtime_ns, page_size,"
                               "       phys_pages FROM processes ORDER BY id LIMIT 1",
                               &st);
    if (rc)
        return rc;
    if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
        vh_errorf(x->cmd->name, rc == SQLITE_DONE ? "the DB describes no process"
                                                  : "reading processes: %s",
                  sqlite3_errmsg(x->db));
        sqlite3_finalize(st);
        return -EIO;
    }
    x->pid = sqlite3_column_int64(st, 0);
    x->exe = col_strdup(st, 1);
    x->start_realtime_ns = sqlite3_column_int64(st, 2);
    int64_t rt = sqlite3_column_int64(st, 3);
    x->runtime_ns = rt > 0 ? (uint64_t)rt : 0;
    x->page_size = sqlite3_column_int64(st, 4);
    x->phys_pages = sqlite3_column_int64(st, 5);
    sqlite3_finalize(st);

    /* argv is a JSON array; a DB edited by hand may hold anything */
    if (sqlite3_prepare_v2(x->db,
                           "SELECT group_concat(v, ' ') FROM"
                           " (SELECT j.value AS v FROM processes p, json_each(p.argv) j"
                           "  WHERE p.id = (SELECT min(id) FROM processes)"
                           "    AND json_valid(p.argv) AND json_type(p.argv) = 'array'"
                           "  ORDER BY j.key)",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        x->argv_text = col_strdup(st, 0);
    sqlite3_finalize(st);
    return 0;
}

/* Loads the chosen heaps (temp.vh_heap_sel after --heap, else all). */
static int read_heaps(struct vh_export *x, const char *heap, int defaulted)
{
    sqlite3_stmt *st = NULL;
    char *name = NULL;
    int rc = vh_export_prepare(x,
                               heap ? "SELECT s.id, h.name FROM temp.vh_heap_sel s"
                                      " JOIN heaps h ON h.id = s.id ORDER BY s.id"
                                    : "SELECT id, name FROM heaps ORDER BY id",
                               &st);
    if (rc)
        return rc;
    uint32_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id < 0 || id > UINT32_MAX - 1)
            continue;
        if ((uint32_t)id >= cap) {
            uint32_t ncap = cap ? cap : 64;
            while (ncap <= (uint32_t)id)
                ncap *= 2;
            uint8_t *on = realloc(x->heap_on, ncap);
            if (!on) {
                rc = -ENOMEM;
                goto out;
            }
            memset(on + cap, 0, ncap - cap);
            x->heap_on = on;
            cap = ncap;
        }
        x->heap_on[id] = 1;
        if ((uint32_t)id > x->heap_max)
            x->heap_max = (uint32_t)id;
        if (!x->nheaps++)
            name = col_strdup(st, 1);
    }
    if (rc != SQLITE_DONE) {
        vh_errorf(x->cmd->name, "reading heaps: %s", sqlite3_errmsg(x->db));
        rc = -EIO;
        goto out;
    }
    rc = 0;
    if (!x->heap_on) {              /* no heaps at all: an empty recording */
        if (!(x->heap_on = calloc(1, 1))) {
            rc = -ENOMEM;
            goto out;
        }
    }
    size_t n = 64 + (heap ? strlen(heap) : 0) + (name ? strlen(name) : 0);
    if (!(x->heap_desc = malloc(n))) {
        rc = -ENOMEM;
        goto out;
    }
    if (x->nheaps == 1 && name)
        snprintf(x->heap_desc, n, "%s", name);
    else if (heap && !defaulted)
        snprintf(x->heap_desc, n, "%s (%u heaps)", heap, x->nheaps);
    else
        snprintf(x->heap_desc, n, "every heap (%u)", x->nheaps);
out:
    free(name);
    sqlite3_finalize(st);
    return rc;
}

/* -o must not name the DB (or the capture) being read. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int run(int argc, char **argv)
{
    struct eopts o;
    struct vh_export *x = &o.x;
    char err[512], dbpath[4200];
    int rc, defaulted = 0;

    memset(&o, 0, sizeof o);
    x->cmd = &cmd_export;
    if (parse_opts(argc, argv, &o))
        return VH_EXIT_USAGE;
    x->out_path = o.out;
    x->heap = o.q.heap;
    x->depth = o.q.depth;
    snprintf(dbpath, sizeof dbpath, "%s%s", o.q.input, VH_DB_SUFFIX);
    if (strcmp(o.out, "-") && (same_file(o.out, o.q.input) || same_file(o.out, dbpath))) {
        vh_errorf(x->cmd->name, "-o %s is the file being read", o.out);
        return VH_EXIT_USAGE;
    }
    /* heaptrack and massif describe one heap: the system allocator unless
     * --heap says otherwise. */
    if (!o.q.heap && (o.fmt == F_HEAPTRACK || o.fmt == F_MASSIF)) {
        o.q.heap = "0";
        defaulted = 1;
    }
    if (vh_query_open(x->cmd, &o.q, &x->db))
        return VH_EXIT_DATA;
    rc = read_process(x);
    if (!rc)
        rc = read_heaps(x, o.q.heap, defaulted);
    if (rc)
        goto out;
    if (!x->clock_given && !x->start_realtime_ns)
        x->clock = VH_CLOCK_START;
    if (x->merge && !x->start_realtime_ns) {
        vh_errorf(x->cmd->name, "--merge: the recording has no wall-clock start time to line "
                                "up with another trace");
        rc = -EINVAL;
        goto out;
    }
    x->notes_f = open_memstream(&x->notes, &x->notes_len);    /* else: stderr */
    if ((rc = vh_xout__open(o.out, &x->out, err, sizeof err))) {
        vh_errorf(x->cmd->name, "%s", err);
        goto out;
    }
    switch (o.fmt) {
    case F_HEAPTRACK: rc = vh_export_heaptrack(x); break;
    case F_FLAMEGRAPH: rc = vh_export_flamegraph(x); break;
    case F_MASSIF: rc = vh_export_massif(x); break;
    case F_CHROME: rc = vh_export_chrome(x); break;
    case F_PPROF: rc = vh_export_pprof(x); break;
    case F_NONE: rc = -EINVAL; break;
    }
    if (rc) {
        vh_xout__discard(x->out);
        goto out;
    }
    if ((rc = vh_xout__commit(x->out, err, sizeof err)))
        vh_errorf(x->cmd->name, "%s", err);
    else if (x->notes_f && !fflush(x->notes_f) && x->notes)
        fputs(x->notes, stderr);
out:
    if (x->notes_f)
        fclose(x->notes_f);
    free(x->notes);
    free(x->heap_on);
    free(x->heap_desc);
    free(x->exe);
    free(x->argv_text);
    sqlite3_close(x->db);
    return rc ? VH_EXIT_DATA : VH_EXIT_OK;
}
