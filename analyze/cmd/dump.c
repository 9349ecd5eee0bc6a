/* cmd/dump.c — `vheap-analyze dump`: every record of a capture in time order,
 * one line each, in the stable text form of docs/capture-format.md. Tests
 * and people parse it with awk, so the form changes only with the format
 * version. Formatting is hand-rolled into stdio's buffer: dumps are large. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "analyze/capture/reader.h"
#include "analyze/cmd/cli.h"

static const char usage[] =
    "usage: vheap-analyze dump [--no-header] [--format text|json] CAPTURE\n"
    "\n"
    "Prints every record of CAPTURE in time order, one per line:\n"
    "  <time-ns> <tid> <kind> key=value...\n"
    "preceded by the header, argv and loss lines and followed by a\n"
    "'# records=...' summary. The form is stable (docs/capture-format.md).\n"
    "A damaged capture prints every valid record, then names the first\n"
    "damage and its file offset on stderr and exits 1.\n"
    "\n"
    "options:\n"
    "  --no-header   only the record lines (no '#', header, argv, loss lines)\n"
    "  --format F    text (default) or json: {\"header\": {...}, \"argv\": [...],\n"
    "                \"loss\": {...}, \"records\": [{\"time\": T, \"tid\": N, \"kind\":\n"
    "                \"alloc\", \"heap\": 0, \"addr\": \"0x...\", ...}], \"totals\": {...}}\n"
    "                (hexadecimal values as strings; --no-header: records only)\n"
    "  -h, --help    this text\n"
    "\n"
    "examples:\n"
    "  vheap-analyze dump vheap.myprog.1234.vhcap | less\n"
    "  vheap-analyze dump --no-header app.vhcap | awk '$3 == \"alloc\"' | wc -l\n"
    "  vheap-analyze dump app.vhcap | grep -c ' free '\n"
    "  vheap-analyze dump --format json app.vhcap | python3 -m json.tool | less\n";

/* Lines are formatted into this buffer and handed to stdio in large
 * writes: per-field stdio calls cost more than the whole merge. */
static struct {
    char buf[1 << 18];
    size_t n;
} ob;

static const char hexdig[] = "0123456789abcdef";

static void ob_flush(void)
{
    fwrite_unlocked(ob.buf, 1, ob.n, stdout);
    ob.n = 0;
}

/* Room for k more bytes (k is small: a number, an escape, a word). */
static inline char *ob_room(size_t k)
{
    if (ob.n + k > sizeof ob.buf)
        ob_flush();
    return ob.buf + ob.n;
}

static inline void put_c(char ch)
{
    *ob_room(1) = ch;
    ob.n++;
}

static inline void put_mem(const char *s, size_t len)
{
    if (len > sizeof ob.buf / 2) {
        ob_flush();
        fwrite_unlocked(s, 1, len, stdout);
        return;
    }
    memcpy(ob_room(len), s, len);
    ob.n += len;
}

static void put_s(const char *s)
{
    put_mem(s, strlen(s));
}

static void put_u(uint64_t v)
{
    char b[24], *p = b + sizeof b;
    do
        *--p = (char)('0' + v % 10);
    while (v /= 10);
    put_mem(p, (size_t)(b + sizeof b - p));
}

static void put_x(uint64_t v)
{
    char b[24], *p = b + sizeof b;
    do
        *--p = hexdig[v & 15];
    while (v >>= 4);
    *--p = 'x';
    *--p = '0';
    put_mem(p, (size_t)(b + sizeof b - p));
}

/* A string literal: its length is known at compile time. */
#define put_lit(lit) put_mem(lit, sizeof(lit) - 1)

/* ---- fields: one call per field, in either form ---------------------------
 * text: "<time> <tid> <kind> key=value ... flag..." per line; JSON (--format
 * json): one object per record, {"time": T, "tid": N, "kind": "alloc",
 * "key": value, ..., "flags": [...]}; hexadecimal values stay strings
 * ("0x7f..."), text is escaped for JSON instead of \xNN. */
static int json;

/* Up to len bytes of s, stopping at a NUL. In text, control characters and
 * the backslash are escaped as \xNN so that the text stays on one line and
 * the escaping can be undone; in JSON, as JSON escapes them. */
static void put_text(const char *s, size_t len)
{
    for (size_t i = 0; i < len && s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        char *p = ob_room(6);
        if (json && (ch < 0x20 || ch == 0x7f || ch == '"' || ch == '\\')) {
            if (ch == '"' || ch == '\\') {
                p[0] = '\\';
                p[1] = (char)ch;
                ob.n += 2;
                continue;
            }
            memcpy(p, "\\u00", 4);
            p[4] = hexdig[ch >> 4];
            p[5] = hexdig[ch & 15];
            ob.n += 6;
        } else if (!json && (ch < 0x20 || ch == 0x7f || ch == '\\')) {
            p[0] = '\\';
            p[1] = 'x';
            p[2] = hexdig[ch >> 4];
            p[3] = hexdig[ch & 15];
            ob.n += 4;
        } else {
            p[0] = (char)ch;
            ob.n++;
        }
    }
}

/* " key=" or ,"key": */
static void key(const char *k)
{
    if (json) {
        put_lit(",\"");
        put_s(k);
        put_lit("\":");
    } else {
        put_c(' ');
        put_s(k);
        put_c('=');
    }
}

static void kv_u(const char *k, uint64_t v)
{
    key(k);
    put_u(v);
}

static void kv_x(const char *k, uint64_t v)
{
    key(k);
    if (json)
        put_c('"');
    put_x(v);
    if (json)
        put_c('"');
}

/* A word value (no escaping needed). */
static void kv_w(const char *k, const char *w)
{
    key(k);
    if (json)
        put_c('"');
    put_s(w);
    if (json)
        put_c('"');
}

static void kv_t(const char *k, const char *s, size_t len)
{
    key(k);
    if (json)
        put_c('"');
    put_text(s, len);
    if (json)
        put_c('"');
}

/* The record kind, after time and tid. */
static void kind(const char *k)
{
    if (json) {
        put_lit(",\"kind\":\"");
        put_s(k);
        put_c('"');
    } else {
        put_c(' ');
        put_s(k);
    }
}

/* Flag words: " realloc failed" / ,"flags":["realloc","failed"] */
static void put_words(const char *const *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (json) {
            put_s(i ? ",\"" : ",\"flags\":[\"");
            put_s(w[i]);
            put_c('"');
        } else {
            put_c(' ');
            put_s(w[i]);
        }
    }
    if (json && n)
        put_c(']');
}

static void put_flags(uint8_t f)
{
    const char *w[5];
    size_t n = 0;
    if (f & VH_RF_REALLOC)
        w[n++] = "realloc";
    if (f & VH_RF_FAILED)
        w[n++] = "failed";
    if (f & VH_RF_TRUNCATED)
        w[n++] = "truncated";
    if (f & VH_RF_MAIN_EXE)
        w[n++] = "main";
    if (f & VH_RF_SLACK_CLAMPED)
        w[n++] = "slack_clamped";
    put_words(w, n);
}

static void put_func(uint64_t f)
{
    kv_w("func", vh_func_name(f < VH_FN_COUNT ? (unsigned)f : VH_FN_COUNT));
}

/* A line (text) or an object (JSON; `sep` before it: "" or ",\n"). */
static void begin(const char *sep)
{
    if (json) {
        put_s(sep);
        put_c('{');
    }
}

static void end(void)
{
    put_s(json ? "}" : "\n");
}

static void header_lines(const struct capture *c)
{
    const struct vh_capture_header *h = capture__header(c);
    static const struct { uint32_t bit; const char *name; } flags[] = {
        { VH_HDR_ENDED, "ended" },
        { VH_HDR_DISABLED, "disabled" },
        { VH_HDR_EXITED, "exited" },
        { VH_HDR_FORKED, "forked" },
        { VH_HDR_ARGV_TRUNC, "argv_truncated" },
    };
    uint32_t hf = __atomic_load_n(&h->flags, __ATOMIC_ACQUIRE);
    const char *argv, *w[sizeof flags / sizeof flags[0]];   /* every flag may be set */
    size_t len, i, n, nw = 0;

    if (json) {
        put_lit("{\"header\":{\"version\":");
        put_u(h->version);
    } else {
        put_lit("# vheap capture version ");
        put_u(h->version);
        put_lit("\nheader");
    }
    kv_u("pid", h->pid);
    kv_u("ppid", h->ppid);
    kv_t("exe", h->exe, sizeof h->exe);
    kv_u("page_size", h->page_size);
    kv_u("chunk_size", h->chunk_size);
    kv_u("chunks", capture__chunks(c));
    kv_u("start_realtime_ns", h->start_realtime_ns);
    kv_u("max_depth", h->max_depth);
    kv_w("unwind", h->unwind == VH_UNWIND_LIBUNWIND ? "libunwind"
                   : h->unwind == VH_UNWIND_FP      ? "fp"
                                                    : "unknown");
    kv_u("exec_generation", h->exec_generation);
    if (h->coarse_res_ns) {
        /* Times before precise_from have the coarse clock's resolution.
         * Before flags, which a line's end is kept for. */
        uint64_t from = __atomic_load_n(&h->precise_from, __ATOMIC_ACQUIRE);
        kv_u("coarse_clock_ns", h->coarse_res_ns);
        if (from != UINT64_MAX)
            kv_u("precise_from", from);
        else if (json)
            key("precise_from"), put_lit("null");
        else
            kv_w("precise_from", "never");
    }
    uint64_t exact_end = __atomic_load_n(&h->exact_end, __ATOMIC_ACQUIRE);
    if (exact_end)
        kv_u("exact_end", exact_end);
    if (h->sample_rate)                /* only when set: older dumps read the same */
        kv_u("sample_rate", h->sample_rate);
    for (i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (hf & flags[i].bit)
            w[nw++] = flags[i].name;
    if (json) {
        put_words(w, nw);
        if (!nw)
            put_lit(",\"flags\":[]");
        put_lit("},\n\"argv\":[");
    } else {
        put_lit(" flags=");
        for (i = 0; i < nw; i++) {
            if (i)
                put_c(',');
            put_s(w[i]);
        }
        put_c('\n');
    }

    argv = capture__argv(c, &len);
    for (i = 0, n = 0; i < len; n++) {
        size_t k = strnlen(argv + i, len - i);
        if (json) {
            put_s(n ? ",\"" : "\"");
            put_text(argv + i, k);
            put_c('"');
        } else {
            put_lit("argv ");
            put_u(n);
            put_c(' ');
            put_text(argv + i, k);
            put_c('\n');
        }
        i += k + 1;
    }
    if (json)
        put_lit("],\n\"loss\":{\"dropped\":");
    else
        put_lit("loss dropped=");
    put_u(__atomic_load_n(&h->dropped_events, __ATOMIC_RELAXED));
    kv_u("nested", __atomic_load_n(&h->nested_events, __ATOMIC_RELAXED));
    kv_u("stack_table_full", __atomic_load_n(&h->stack_table_full, __ATOMIC_RELAXED));
    /* Not losses: how often the shim held a signal back, and cleared a
     * guard a handler had left stale (preload/signals.c). */
    kv_u("deferred_signals", __atomic_load_n(&h->deferred_signals, __ATOMIC_RELAXED));
    kv_u("guard_resets", __atomic_load_n(&h->guard_resets, __ATOMIC_RELAXED));
    put_s(json ? "},\n" : "\n");
}

struct totals {
    uint64_t records, allocs, frees, resizes, stacks, bytes;
};

static void alloc_body(const struct vh_rec_alloc *r)
{
    int failed = r->h.flags & VH_RF_FAILED;
    kv_u("heap", r->h.a);
    put_func(r->func);
    kv_x("addr", r->addr);
    kv_u("size", r->size);
    kv_u("usable", failed ? 0 : r->size + r->slack);
    kv_u("stack", r->h.b);
    kv_u("tag", r->tag);
}

static void record_line(const struct vh_event *ev, struct totals *t)
{
    const struct vh_rec_hdr *h = ev->rec;
    const char *text;
    size_t len;

    begin(t->records ? ",\n" : "");
    if (json)
        put_lit("\"time\":");
    put_u(ev->time);
    if (json)
        put_lit(",\"tid\":");
    else
        put_c(' ');
    put_u(ev->tid);
    t->records++;
    switch (h->type) {
    case VH_REC_ALLOC: {
        const struct vh_rec_alloc *r = (const void *)h;
        kind("alloc");
        alloc_body(r);
        t->allocs++;
        if (!(h->flags & VH_RF_FAILED))
            t->bytes += r->size;
        break;
    }
    case VH_REC_RESIZE:
        kind("resize");
        alloc_body((const void *)h);
        t->resizes++;
        break;
    case VH_REC_FREE: {
        const struct vh_rec_free *r = (const void *)h;
        kind("free");
        kv_u("heap", h->a);
        put_func(r->func);
        kv_x("addr", r->addr);
        t->frees++;
        break;
    }
    case VH_REC_STACK: {
        const struct vh_rec_stack *r = (const void *)h;
        size_t depth = (ev->size - sizeof *r) / 8;
        kind("stack");
        kv_u("id", h->b);
        kv_u("depth", depth);
        key("frames");
        if (json)
            put_c('[');
        for (size_t i = 0; i < depth; i++) {
            if (i)
                put_c(',');
            if (json)
                put_c('"');
            put_x(r->frames[i]);
            if (json)
                put_c('"');
        }
        if (json)
            put_c(']');
        t->stacks++;
        break;
    }
    case VH_REC_MODULE: {
        const struct vh_rec_module *r = (const void *)h;
        uint32_t n = h->b < sizeof r->build_id ? h->b : (uint32_t)sizeof r->build_id;
        char id[2 * sizeof r->build_id + 1];
        for (uint32_t i = 0; i < n; i++) {
            id[2 * i] = hexdig[r->build_id[i] >> 4];
            id[2 * i + 1] = hexdig[r->build_id[i] & 15];
        }
        id[2 * n] = 0;
        kind("module");
        kv_x("bias", r->bias);
        kv_x("lo", r->lo);
        kv_x("hi", r->hi);
        kv_w("build_id", id);
        text = vh_event_text(ev, &len);
        kv_t("path", text, len);
        break;
    }
    case VH_REC_MODULE_UNLOAD:
        kind("module_unload");
        kv_x("bias", ((const struct vh_rec_value *)(const void *)h)->value);
        break;
    case VH_REC_RSS:
        kind("rss");
        kv_u("bytes", ((const struct vh_rec_value *)(const void *)h)->value);
        break;
    case VH_REC_THREAD:
        kind("thread");
        kv_u("chunk", ev->chunk);
        break;
    case VH_REC_THREAD_EXIT:
        kind("thread_exit");
        break;
    case VH_REC_END:
        kind("end");
        break;
    case VH_REC_WINDOW:
        kind("window");
        kv_u("recording", h->a);
        break;
    case VH_REC_HEAP_CREATE: {
        const struct vh_rec_heap *r = (const void *)h;
        kind("heap_create");
        kv_u("id", h->b);
        kv_u("parent", r->parent);
        kv_x("base", r->base);
        kv_u("size", r->size);
        text = vh_event_text(ev, &len);
        kv_t("name", text, len);
        if (r->heap_flags)         /* a built-in heap (the mmap heap) */
            kv_u("flags", r->heap_flags);
        break;
    }
    case VH_REC_HEAP_DESTROY:
        kind("heap_destroy");
        kv_u("heap", h->a);
        break;
    case VH_REC_MOVE: {
        const struct vh_rec_move *r = (const void *)h;
        kind("move");
        kv_u("heap", h->a);
        kv_x("from", r->from);
        kv_x("to", r->to);
        break;
    }
    case VH_REC_RANGE: {
        const struct vh_rec_range *r = (const void *)h;
        if (ev->size < sizeof *r)
            goto unknown;
        kind(h->flags == VH_RANGE_FREE ? "free_range" : "move_range");
        kv_u("heap", h->b);
        kv_x("from", r->from);
        if (h->flags != VH_RANGE_FREE)
            kv_x("to", r->to);
        kv_u("len", r->len);
        end();                         /* flags hold the operation */
        return;
    }
    case VH_REC_REGION: {
        const struct vh_rec_region *r = (const void *)h;
        if (ev->size < sizeof *r)
            goto unknown;
        kind("region");
        kv_u("heap", h->b);
        kv_u("id", r->id);
        kv_w("kind", h->flags == VH_REGION_META     ? "meta"
                     : h->flags == VH_REGION_UNUSED ? "unused"
                                                    : "none");
        kv_x("base", r->base);
        kv_u("size", r->size);
        end();                         /* flags hold the kind: no flag words */
        return;
    }
    case VH_REC_REACH: {
        const struct vh_rec_reach *r = (const void *)h;
        static const char *const cls[] = { "reachable", "possible", "indirect", "lost" };
        if (ev->size < sizeof *r || ev->size - sizeof *r < (size_t)h->b * 8)
            goto unknown;
        uint64_t n[VH_REACH_CLASSES] = { 0 };
        for (uint32_t i = 0; i < h->b; i++)    /* the blocks are in `leaks` */
            n[r->entry[i] & VH_REACH_CLASS_MASK]++;
        kind("reach");
        kv_u("blocks", h->b);
        for (unsigned c = 0; c < VH_REACH_CLASSES; c++)
            kv_u(cls[c], n[c]);
        end();
        return;
    }
    case VH_REC_REACH_END: {
        const struct vh_rec_reach_end *r = (const void *)h;
        if (ev->size < sizeof *r)
            goto unknown;
        kind("reach_end");
        kv_w("status", r->status == VH_REACH_DONE      ? "done"
                       : r->status == VH_REACH_TIMEOUT ? "timeout"
                                                       : "failed");
        kv_u("blocks", r->blocks);
        kv_u("root_bytes", r->root_bytes);
        kv_u("heap_bytes", r->heap_bytes);
        kv_u("unreadable_bytes", r->unreadable_bytes);
        kv_u("nonresident_bytes", r->nonresident_bytes);
        kv_u("scan_ns", r->scan_ns);
        kv_u("cpu_ns", r->cpu_ns);
        kv_u("threads", r->threads);
        kv_u("threads_unseen", r->threads_unseen);
        kv_u("misaligned", r->misaligned);
        end();
        return;
    }
    case VH_REC_MARK:
        kind("mark");
        text = vh_event_text(ev, &len);
        kv_t("label", text, len);
        break;
    case VH_REC_TAG:
        kind("tag");
        kv_u("id", h->b);
        text = vh_event_text(ev, &len);
        kv_t("label", text, len);
        break;
    default:
    unknown: {
        /* Only variable-size types get here: the reader stops a chunk at an
         * unknown fixed-size one. */
        char ty[5] = { '0', 'x', hexdig[h->type >> 4], hexdig[h->type & 15], 0 };
        kind("unknown");
        kv_w("type", ty);
        kv_u("size", ev->size);
        end();
        return;
    }
    }
    put_flags(h->flags);
    end();
}

static const struct vh_command dump_command;   /* VH_COMMAND below */

static int run_dump(int argc, char **argv)
{
    const char *path = NULL, *first;
    struct capture *c = NULL;
    struct vh_event ev;
    struct totals t = { 0 };
    char err[256];
    int header = 1, rc = VH_EXIT_OK;
    unsigned bad;

    static const struct option lo[] = {
        { "no-header", no_argument, NULL, 'n' }, { "format", required_argument, NULL, 'f' }, { 0 },
    };
    const char *opt, *f;
    optind = 0;
    while ((rc = vh_getopt(&dump_command, argc, argv, ":", lo, &opt)) != -1) {
        if (rc == '?')
            return VH_EXIT_USAGE;
        if (rc == 'n') {
            header = 0;
            continue;
        }
        f = rc == 'f' ? optarg : "";   /* ':': a bare --format at the end */
        if (strcmp(f, "text") && strcmp(f, "json")) {
            vh_errorf("dump", "--format: '%s' is not text or json", f);
            return VH_EXIT_USAGE;
        }
        json = !strcmp(f, "json");
    }
    rc = VH_EXIT_OK;
    if (optind + 1 < argc) {
        vh_errorf("dump", "one capture at a time (see vheap-analyze dump --help)");
        return VH_EXIT_USAGE;
    }
    path = optind < argc ? argv[optind] : NULL;
    if (!path) {
        vh_errorf("dump", "no capture given (see vheap-analyze dump --help)");
        return VH_EXIT_USAGE;
    }
    if (capture__open(path, &c, err, sizeof err)) {
        vh_errorf("dump", "%s: %s", path, err);
        return VH_EXIT_DATA;
    }
    if (header)
        header_lines(c);
    else if (json)
        put_c('{');
    if (json)
        put_lit("\"records\":[\n");
    while (capture__next(c, &ev))
        record_line(&ev, &t);
    if (json)
        put_s(header ? "\n],\n\"totals\":{\"records\":" : "\n]}\n");
    else if (header)
        put_lit("# records=");
    if (header) {
        put_u(t.records);
        kv_u("allocs", t.allocs);
        kv_u("frees", t.frees);
        kv_u("resizes", t.resizes);
        kv_u("stacks", t.stacks);
        kv_u("bytes_allocated", t.bytes);
        put_s(json ? "}}\n" : "\n");
    }
    ob_flush();
    if (fflush(stdout) || ferror(stdout)) {
        vh_errorf("dump", "writing output: %s", strerror(errno));
        rc = VH_EXIT_DATA;
        goto out;
    }
    bad = capture__damage(c, &first);
    if (bad) {
        vh_errorf("dump", "%s: %s (%u damaged regions)", path, first, bad);
        rc = VH_EXIT_DATA;
    }
out:
    capture__close(c);
    return rc;
}

VH_COMMAND(dump_command, {
    .name = "dump",
    .summary = "print every record of a capture in time order (stable text)",
    .usage = usage,
    .run = run_dump,
    .order = 90,
});
