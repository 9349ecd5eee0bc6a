/* demangle.c — C++ and Rust symbol names made readable (see demangle.h):
 * C++ through libstdc++'s __cxa_demangle (dlopen), Rust legacy and v0
 * decoded here. Names come from files on disk: lengths are checked, depth
 * and output bounded, and malformed input gives NULL, never a crash. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/symbols/demangle.h"

/* Past these, a name is garbage or an attack on the demangler: give up. */
#define MAX_OUT 16384u
#define MAX_DEPTH 256u
#define MAX_STEPS 100000u

/* ---- output buffer ------------------------------------------------------ */

struct out {
    char *p;
    size_t len, cap;
    int quiet;                     /* > 0: parse only (skipped impl paths)  */
    int failed;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->quiet || o->failed || !n)
        return;
    if (o->len + n + 1 > MAX_OUT) {
        o->failed = 1;
        return;
    }
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 128;
        while (cap < o->len + n + 1)
            cap *= 2;
        char *p = realloc(o->p, cap);
        if (!p) {
            o->failed = 1;
            return;
        }
        o->p = p;
        o->cap = cap;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = '\0';
}

static void puts_(struct out *o, const char *s) { put(o, s, strlen(s)); }
static void putch(struct out *o, char c) { put(o, &c, 1); }

static void put_u64(struct out *o, uint64_t v)
{
    char b[24];
    put(o, b, (size_t)snprintf(b, sizeof b, "%llu", (unsigned long long)v));
}

static void put_utf8(struct out *o, uint32_t c)
{
    char b[4];
    if (c < 0x80) {
        b[0] = (char)c;
        put(o, b, 1);
    } else if (c < 0x800) {
        b[0] = (char)(0xc0 | c >> 6);
        b[1] = (char)(0x80 | (c & 0x3f));
        put(o, b, 2);
    } else if (c < 0x10000) {
        b[0] = (char)(0xe0 | c >> 12);
        b[1] = (char)(0x80 | (c >> 6 & 0x3f));
        b[2] = (char)(0x80 | (c & 0x3f));
        put(o, b, 3);
    } else {
        b[0] = (char)(0xf0 | c >> 18);
        b[1] = (char)(0x80 | (c >> 12 & 0x3f));
        b[2] = (char)(0x80 | (c >> 6 & 0x3f));
        b[3] = (char)(0x80 | (c & 0x3f));
        put(o, b, 4);
    }
}

/* A string we own on success; NULL (and nothing leaked) on failure. */
static char *finish(struct out *o, int ok)
{
    if (ok && !o->failed && o->p)
        return o->p;
    free(o->p);
    return NULL;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* ---- C++ ---------------------------------------------------------------- */

typedef char *cxa_demangle_fn(const char *, char *, size_t *, int *);

/* dlopen rather than -lstdc++: a C binary need not pull in the C++ runtime,
 * and without libstdc++ names simply stay mangled. Looked up once, by
 * whichever thread demangles first (the load's resolver thread, or the
 * caller's in `symbolize`): pthread_once, so that no thread sees the lookup
 * half done and keeps a name mangled. */
static cxa_demangle_fn *cxa_fn;
static pthread_once_t cxa_once = PTHREAD_ONCE_INIT;

static void cxa_lookup(void)
{
    void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    if (h)
        *(void **)&cxa_fn = dlsym(h, "__cxa_demangle");
}

static cxa_demangle_fn *cxa_demangle(void)
{
    pthread_once(&cxa_once, cxa_lookup);
    return cxa_fn;
}

/* ---- Rust legacy: _ZN <len><ident>... 17h<16 hex> E [.suffix] ------------ */

static int is_rust_hash(const char *p, size_t n)
{
    if (n != 17 || p[0] != 'h')
        return 0;
    for (size_t i = 1; i < n; i++)
        if (hexval(p[i]) < 0)
            return 0;
    return 1;
}

/* Rust's escapes of characters a C++ identifier cannot hold. */
static void legacy_ident(struct out *o, const char *p, size_t n)
{
    static const struct { const char *esc, *text; } escapes[] = {
        {"SP", "@"}, {"BP", "*"}, {"RF", "&"}, {"LT", "<"}, {"GT", ">"},
        {"LP", "("}, {"RP", ")"}, {"C", ","},
    };
    if (n >= 2 && p[0] == '_' && p[1] == '$') {
        p++;
        n--;
    }
    while (n) {
        if (*p == '$') {
            const char *end = n > 1 ? memchr(p + 1, '$', n - 1) : NULL;
            if (!end) {
                put(o, p, n);
                return;
            }
            const char *e = p + 1;
            size_t el = (size_t)(end - e);
            size_t k;
            for (k = 0; k < sizeof escapes / sizeof escapes[0]; k++)
                if (strlen(escapes[k].esc) == el && !memcmp(escapes[k].esc, e, el)) {
                    puts_(o, escapes[k].text);
                    break;
                }
            if (k == sizeof escapes / sizeof escapes[0]) {
                uint32_t c = 0;
                int ok = el >= 2 && el <= 7 && e[0] == 'u';
                for (size_t i = 1; ok && i < el; i++) {
                    int d = hexval(e[i]);
                    ok = d >= 0;
                    c = c * 16 + (uint32_t)(d < 0 ? 0 : d);
                }
                if (!ok || c > 0x10ffff || (c >= 0xd800 && c < 0xe000) || c < 0x20) {
                    /* Not an escape rustc makes: the rest as it is, as
                     * rustc-demangle shows it. */
                    put(o, p, n);
                    return;
                }
                put_utf8(o, c);
            }
            n -= el + 2;
            p = end + 1;
        } else if (*p == '.') {
            if (n >= 2 && p[1] == '.') {
                puts_(o, "::");
                p += 2;
                n -= 2;
            } else {
                putch(o, '.');
                p++;
                n--;
            }
        } else {
            putch(o, *p++);
            n--;
        }
    }
}

static char *rust_legacy(const char *name)
{
    const char *p = name + 3, *last = NULL;
    size_t lastn = 0, ncomp = 0, left = strlen(p);

    /* Pass 1: the shape, and whether it ends in a Rust hash. */
    while (left && *p != 'E') {
        if (*p < '1' || *p > '9')
            return NULL;
        size_t n = 0;
        while (left && *p >= '0' && *p <= '9') {
            n = n * 10 + (size_t)(*p++ - '0');
            left--;
            if (n > left)
                return NULL;
        }
        last = p;
        lastn = n;
        p += n;
        left -= n;
        ncomp++;
    }
    if (!left || (p[1] && p[1] != '.') || ncomp < 2 || !is_rust_hash(last, lastn))
        return NULL;

    /* Pass 2: print every component but the hash. */
    struct out o = {0};
    p = name + 3;
    for (size_t i = 0; i + 1 < ncomp; i++) {
        size_t n = 0;
        while (*p >= '0' && *p <= '9')
            n = n * 10 + (size_t)(*p++ - '0');
        if (i)
            puts_(&o, "::");
        legacy_ident(&o, p, n);
        p += n;
    }
    return finish(&o, 1);
}

/* ---- Rust v0: _R <path> [<instantiating-crate>] --------------------------
 * The grammar of rustc's symbol-mangling-version=v0; printed the way
 * rustc-demangle prints with "{:#}" (no hashes, no crate disambiguators). */

struct v0 {
    const char *s;                 /* the symbol after "_R"                 */
    size_t n, pos;
    struct out *o;
    unsigned depth, steps;
    uint64_t bound;                /* lifetimes bound by enclosing binders  */
    int err;
};

struct ident {
    const char *p;
    size_t n;
    int punycode;
};

static int peek(struct v0 *v) { return v->pos < v->n ? v->s[v->pos] : 0; }

static int eat(struct v0 *v, char c)
{
    if (v->pos < v->n && v->s[v->pos] == c) {
        v->pos++;
        return 1;
    }
    return 0;
}

static int next(struct v0 *v)
{
    if (v->pos < v->n)
        return v->s[v->pos++];
    v->err = 1;
    return 0;
}

static int enter(struct v0 *v)
{
    if (v->err || v->o->failed || v->depth >= MAX_DEPTH || ++v->steps > MAX_STEPS) {
        v->err = 1;
        return 0;
    }
    v->depth++;
    return 1;
}

static void leave(struct v0 *v) { v->depth--; }

/* <base-62-number> = {0-9a-zA-Z} "_": "_" is 0, "0_" is 1, ... */
static uint64_t base62(struct v0 *v)
{
    if (eat(v, '_'))
        return 0;
    uint64_t x = 0;
    for (;;) {
        int c = next(v), d;
        if (c == '_')
            break;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'z')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'Z')
            d = c - 'A' + 36;
        else {
            v->err = 1;
            return 0;
        }
        if (x > (UINT64_MAX - (uint64_t)d) / 62) {
            v->err = 1;
            return 0;
        }
        x = x * 62 + (uint64_t)d;
    }
    if (x == UINT64_MAX) {
        v->err = 1;
        return 0;
    }
    return x + 1;
}

/* An optional tagged number: 0 when absent, else the number + 1. */
static uint64_t opt_base62(struct v0 *v, char tag)
{
    if (!eat(v, tag))
        return 0;
    uint64_t x = base62(v);
    return x == UINT64_MAX ? (v->err = 1, 0) : x + 1;
}

static struct ident ident(struct v0 *v)
{
    struct ident id = {0};
    id.punycode = eat(v, 'u');
    int c = peek(v);
    if (c < '0' || c > '9') {
        v->err = 1;
        return id;
    }
    size_t len = 0;
    if (!eat(v, '0'))
        while ((c = peek(v)) >= '0' && c <= '9') {
            len = len * 10 + (size_t)(c - '0');
            v->pos++;
            if (len > v->n) {
                v->err = 1;
                return id;
            }
        }
    eat(v, '_');
    if (len > v->n - v->pos) {
        v->err = 1;
        return id;
    }
    id.p = v->s + v->pos;
    id.n = len;
    v->pos += len;
    return id;
}

static void put_ident(struct v0 *v, struct ident id)
{
    if (id.punycode) {
        /* Non-ASCII identifiers are rare; shown encoded, as rustc-demangle
         * does when it cannot decode them. */
        puts_(v->o, "punycode{");
        put(v->o, id.p, id.n);
        putch(v->o, '}');
    } else {
        put(v->o, id.p, id.n);
    }
}

/* Jumps to an earlier position; returns where to come back to. */
static size_t backref(struct v0 *v)
{
    size_t start = v->pos - 1;     /* the 'B' */
    uint64_t i = base62(v);
    size_t back = v->pos;
    if (v->err || i >= start) {
        v->err = 1;
        return back;
    }
    v->pos = (size_t)i;
    return back;
}

static void path(struct v0 *v, int in_value);
static void type(struct v0 *v);
static void konst(struct v0 *v);

static void lifetime(struct v0 *v, uint64_t lt)
{
    if (lt == 0) {
        puts_(v->o, "'_");
        return;
    }
    if (lt > v->bound) {
        v->err = 1;
        return;
    }
    uint64_t depth = v->bound - lt;
    if (depth < 26) {
        char b[2] = {'\'', (char)('a' + depth)};
        put(v->o, b, 2);
    } else {
        puts_(v->o, "'_");
        put_u64(v->o, depth);
    }
}

/* [G <base-62>]: "for<'a, 'b> " and the lifetimes it binds. */
static uint64_t binder_open(struct v0 *v)
{
    uint64_t k = opt_base62(v, 'G');
    if (v->err || k > 1000) {
        v->err = 1;
        return 0;
    }
    if (k) {
        puts_(v->o, "for<");
        for (uint64_t i = 0; i < k; i++) {
            if (i)
                puts_(v->o, ", ");
            v->bound++;
            lifetime(v, 1);
        }
        puts_(v->o, "> ");
    }
    return k;
}

static void generic_args(struct v0 *v)
{
    for (int i = 0; !v->err && !eat(v, 'E'); i++) {
        if (i)
            puts_(v->o, ", ");
        if (eat(v, 'L'))
            lifetime(v, base62(v));
        else if (eat(v, 'K'))
            konst(v);
        else
            type(v);
        if (v->pos >= v->n)
            v->err = 1;
    }
}

static void path(struct v0 *v, int in_value)
{
    if (!enter(v))
        return;
    int tag = next(v);
    switch (tag) {
    case 'C': {
        opt_base62(v, 's');
        put_ident(v, ident(v));
        break;
    }
    case 'N': {
        int ns = next(v);
        if (!((ns >= 'a' && ns <= 'z') || (ns >= 'A' && ns <= 'Z'))) {
            v->err = 1;
            break;
        }
        path(v, in_value);
        uint64_t dis = opt_base62(v, 's');
        struct ident id = ident(v);
        if (v->err)
            break;
        if (ns >= 'A' && ns <= 'Z') {
            puts_(v->o, "::{");
            if (ns == 'C')
                puts_(v->o, "closure");
            else if (ns == 'S')
                puts_(v->o, "shim");
            else
                putch(v->o, (char)ns);
            if (id.n) {
                putch(v->o, ':');
                put_ident(v, id);
            }
            putch(v->o, '#');
            put_u64(v->o, dis);
            putch(v->o, '}');
        } else if (id.n) {
            puts_(v->o, "::");
            put_ident(v, id);
        }
        break;
    }
    case 'M':
    case 'X':
    case 'Y':
        if (tag != 'Y') {          /* the impl's own path is not shown */
            opt_base62(v, 's');
            v->o->quiet++;
            path(v, 0);
            v->o->quiet--;
        }
        putch(v->o, '<');
        type(v);
        if (tag != 'M') {
            puts_(v->o, " as ");
            path(v, 0);
        }
        putch(v->o, '>');
        break;
    case 'I':
        path(v, in_value);
        if (in_value)
            puts_(v->o, "::");
        putch(v->o, '<');
        generic_args(v);
        putch(v->o, '>');
        break;
    case 'B': {
        size_t back = backref(v);
        if (!v->err && !v->o->quiet)
            path(v, in_value);
        v->pos = back;
        break;
    }
    default:
        v->err = 1;
    }
    leave(v);
}

static const char *basic_type(int c)
{
    switch (c) {
    case 'a': return "i8";
    case 'b': return "bool";
    case 'c': return "char";
    case 'd': return "f64";
    case 'e': return "str";
    case 'f': return "f32";
    case 'h': return "u8";
    case 'i': return "isize";
    case 'j': return "usize";
    case 'k': return "f16";
    case 'l': return "i32";
    case 'm': return "u32";
    case 'n': return "i128";
    case 'o': return "u128";
    case 'p': return "_";
    case 'q': return "f128";
    case 's': return "i16";
    case 't': return "u16";
    case 'u': return "()";
    case 'v': return "...";
    case 'x': return "i64";
    case 'y': return "u64";
    case 'z': return "!";
    }
    return NULL;
}

/* A dyn trait's path whose generic list stays open for associated types:
 * returns 1 if "<" was printed and not closed. */
static int path_open_generics(struct v0 *v)
{
    if (eat(v, 'B')) {
        size_t back = backref(v);
        int open = 0;
        if (!v->err && !v->o->quiet && enter(v)) {
            open = path_open_generics(v);
            leave(v);
        }
        v->pos = back;
        return open;
    }
    if (eat(v, 'I')) {
        path(v, 0);
        putch(v->o, '<');
        generic_args(v);
        return 1;
    }
    path(v, 0);
    return 0;
}

static void dyn_bounds(struct v0 *v)
{
    uint64_t k = binder_open(v);
    for (int i = 0; !v->err && !eat(v, 'E'); i++) {
        if (i)
            puts_(v->o, " + ");
        int open = path_open_generics(v);
        while (!v->err && eat(v, 'p')) {
            puts_(v->o, open ? ", " : "<");
            open = 1;
            put_ident(v, ident(v));
            puts_(v->o, " = ");
            type(v);
        }
        if (open)
            putch(v->o, '>');
        if (v->pos >= v->n)
            v->err = 1;
    }
    v->bound -= k;
}

static void fn_sig(struct v0 *v)
{
    uint64_t k = binder_open(v);
    if (eat(v, 'U'))
        puts_(v->o, "unsafe ");
    if (eat(v, 'K')) {
        puts_(v->o, "extern \"");
        if (eat(v, 'C')) {
            putch(v->o, 'C');
        } else {
            struct ident abi = ident(v);
            for (size_t i = 0; !v->err && i < abi.n; i++)
                putch(v->o, abi.p[i] == '_' ? '-' : abi.p[i]);
        }
        puts_(v->o, "\" ");
    }
    puts_(v->o, "fn(");
    for (int i = 0; !v->err && !eat(v, 'E'); i++) {
        if (i)
            puts_(v->o, ", ");
        type(v);
        if (v->pos >= v->n)
            v->err = 1;
    }
    putch(v->o, ')');
    if (!eat(v, 'u')) {
        puts_(v->o, " -> ");
        type(v);
    }
    v->bound -= k;
}

static void type(struct v0 *v)
{
    if (!enter(v))
        return;
    int c = next(v);
    const char *basic = basic_type(c);
    if (basic) {
        puts_(v->o, basic);
        leave(v);
        return;
    }
    switch (c) {
    case 'R':
    case 'Q':
        putch(v->o, '&');
        if (eat(v, 'L')) {
            uint64_t lt = base62(v);
            if (lt) {
                lifetime(v, lt);
                putch(v->o, ' ');
            }
        }
        if (c == 'Q')
            puts_(v->o, "mut ");
        type(v);
        break;
    case 'P':
        puts_(v->o, "*const ");
        type(v);
        break;
    case 'O':
        puts_(v->o, "*mut ");
        type(v);
        break;
    case 'A':
        putch(v->o, '[');
        type(v);
        puts_(v->o, "; ");
        konst(v);
        putch(v->o, ']');
        break;
    case 'S':
        putch(v->o, '[');
        type(v);
        putch(v->o, ']');
        break;
    case 'T': {
        int i;
        putch(v->o, '(');
        for (i = 0; !v->err && !eat(v, 'E'); i++) {
            if (i)
                puts_(v->o, ", ");
            type(v);
            if (v->pos >= v->n)
                v->err = 1;
        }
        if (i == 1)
            putch(v->o, ',');
        putch(v->o, ')');
        break;
    }
    case 'F':
        fn_sig(v);
        break;
    case 'D': {
        puts_(v->o, "dyn ");
        dyn_bounds(v);
        if (!eat(v, 'L')) {
            v->err = 1;
            break;
        }
        uint64_t lt = base62(v);
        if (lt) {
            puts_(v->o, " + ");
            lifetime(v, lt);
        }
        break;
    }
    case 'B': {
        size_t back = backref(v);
        if (!v->err && !v->o->quiet)
            type(v);
        v->pos = back;
        break;
    }
    default:
        v->pos--;
        path(v, 0);
    }
    leave(v);
}

static void konst(struct v0 *v)
{
    if (!enter(v))
        return;
    int c = next(v);
    switch (c) {
    case 'p':
        putch(v->o, '_');
        break;
    case 'B': {
        size_t back = backref(v);
        if (!v->err && !v->o->quiet)
            konst(v);
        v->pos = back;
        break;
    }
    case 'a': case 'h': case 'i': case 'j': case 'l': case 'm': case 'n':
    case 'o': case 's': case 't': case 'x': case 'y': case 'b': case 'c': {
        int neg = (c != 'b' && c != 'c') && eat(v, 'n');
        size_t start = v->pos;
        uint64_t x = 0;
        int big = 0, d;
        while ((d = hexval((char)peek(v))) >= 0) {
            if (x >> 60)
                big = 1;
            x = x << 4 | (uint64_t)d;
            v->pos++;
        }
        if (!eat(v, '_')) {
            v->err = 1;
            break;
        }
        if (c == 'b') {
            if (big || x > 1)
                v->err = 1;
            else
                puts_(v->o, x ? "true" : "false");
        } else if (c == 'c') {
            if (big || x > 0x10ffff || (x >= 0xd800 && x < 0xe000)) {
                v->err = 1;
            } else if (x >= 0x20 && x < 0x7f && x != '\'' && x != '\\') {
                char b[3] = {'\'', (char)x, '\''};
                put(v->o, b, 3);
            } else {
                char b[16];
                put(v->o, b, (size_t)snprintf(b, sizeof b, "'\\u{%llx}'", (unsigned long long)x));
            }
        } else {
            if (neg)
                putch(v->o, '-');
            if (big) {             /* 128-bit: keep the digits, in hex */
                puts_(v->o, "0x");
                put(v->o, v->s + start, v->pos - 1 - start);
            } else {
                put_u64(v->o, x);
            }
        }
        break;
    }
    default:
        /* Structural constants (str, refs, arrays, ADTs) are new and rare. */
        v->err = 1;
    }
    leave(v);
}

static char *rust_v0(const char *name)
{
    struct out o = {0};
    struct v0 v = {.s = name + 2, .o = &o};
    v.n = strcspn(v.s, ".");       /* ".llvm.123" and the like */
    if (!v.n || v.s[0] < 'A' || v.s[0] > 'Z')
        return NULL;
    path(&v, 1);
    /* What may follow is the instantiating crate, which is not shown. */
    return finish(&o, !v.err);
}

/* ---- entry -------------------------------------------------------------- */

char *vh_demangle(const char *name)
{
    if (!name || name[0] != '_')
        return NULL;
    if (name[1] == 'R')
        return rust_v0(name);
    if (name[1] != 'Z')
        return NULL;
    if (name[2] == 'N') {
        char *r = rust_legacy(name);
        if (r)
            return r;
    }
    cxa_demangle_fn *fn = cxa_demangle();
    if (!fn)
        return NULL;
    int status = 0;
    char *r = fn(name, NULL, NULL, &status);
    if (status != 0) {
        free(r);
        return NULL;
    }
    return r;
}
