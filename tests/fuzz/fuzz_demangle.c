/* fuzz_demangle.c — libFuzzer target: the Rust demanglers of
 * analyze/symbols/demangle.c (legacy _ZN...17h<hash>E and v0 _R...), which read
 * symbol names straight from ELF and DWARF files. The input, cut at its
 * first NUL, is a name. Checks: any result is non-empty, bounded text; a
 * name of the legacy Rust shape always demangles, and its hash does not
 * show (another hash gives the same text). */
#include "analyze/symbols/demangle.h"
#include "tests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* _ZN, then <decimal length><bytes> components up to 'E', the last one
 * "h" and 16 hex digits, then nothing or a ".suffix": Rust legacy. Returns
 * that last component (the hash), else NULL. */
static const char *legacy_shape(const char *s)
{
    const char *p = s + 3, *last = NULL;
    size_t lastn = 0, ncomp = 0;
    if (strncmp(s, "_ZN", 3))
        return 0;
    while (*p && *p != 'E') {
        if (*p < '1' || *p > '9')
            return 0;
        size_t n = 0;
        while (*p >= '0' && *p <= '9' && n < 100000)
            n = n * 10 + (size_t)(*p++ - '0');
        if (strnlen(p, n) < n)
            return 0;
        last = p;
        lastn = n;
        p += n;
        ncomp++;
    }
    if (*p != 'E' || (p[1] && p[1] != '.') || ncomp < 2 || lastn != 17 || last[0] != 'h')
        return 0;
    return strspn(last + 1, "0123456789abcdef") >= 16 ? last : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char name[4097];
    if (size > sizeof name - 1)
        size = sizeof name - 1;
    memcpy(name, data, size);
    name[size] = '\0';
    /* Other C++ names go to libstdc++, which is not ours to fuzz here. */
    if (strncmp(name, "_R", 2) && !legacy_shape(name))
        return 0;
    const char *hash = legacy_shape(name);
    char *out = vh_demangle(name);
    FZ_CHECK(!hash || out, "legacy Rust name not demangled: %s", name);
    if (out) {
        size_t n = strlen(out);
        FZ_CHECK(n > 0 && n < 16384, "output length %zu for %s", n, name);
        if (hash) {
            /* The hash is dropped: another hash, the same text. */
            char other[sizeof name];
            memcpy(other, name, size + 1);
            char *h = other + (hash - name) + 1;
            for (int i = 0; i < 16; i++)
                h[i] = h[i] == 'f' ? '0' : 'f';
            char *out2 = vh_demangle(other);
            FZ_CHECK(out2 && !strcmp(out, out2), "the hash shows: %s -> %s", name, out);
            free(out2);
        }
        free(out);
    }
    return 0;
}
