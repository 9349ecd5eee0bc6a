/* query/frame_rule.c — the one rule for "is this frame allocator or runtime
 * code?" and the frames that name a stack (frame_rule.h), for every command
 * that names stacks in a legend or a list (series, frag). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analyze/query/frame_rule.h"

static int is_ident(int ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_';
}

void vh_fn_short(const char *s, char *out, size_t len)
{
    size_t o = 0;
    int angle = 0, brace = 0;
#define PUT(ch) do { if (o + 1 < len) out[o++] = (ch); } while (0)
    for (const char *p = s; *p; p++) {
        if (!angle && !strncmp(p, "(anonymous namespace)", 21)) {
            for (int i = 0; i < 21; i++)
                PUT(p[i]);
            p += 20;
            continue;
        }
        if (!angle && !brace && !strncmp(p, "operator", 8) && !is_ident(p[8]) &&
            (p == s || !is_ident(p[-1]))) {
            const char *q = p + 8;
            for (int i = 0; i < 8; i++)
                PUT(p[i]);
            if (q[0] == '(' && q[1] == ')') {
                PUT('(');
                PUT(')');
                q += 2;
            } else {
                while (*q && *q != '(')
                    PUT(*q++);
            }
            p = q - 1;
            continue;
        }
        if (brace || *p == '{') {          /* {lambda(int)#1}: keep whole */
            if (!angle)
                PUT(*p);
            brace += (*p == '{') - (*p == '}');
            continue;
        }
        if (*p == '<') {
            angle++;
            continue;
        }
        if (*p == '>') {
            angle -= angle > 0;
            continue;
        }
        if (angle)
            continue;
        if (*p == '(')
            break;
        if (*p == ' ') {                   /* what came before was a type */
            o = 0;
            continue;
        }
        if (*p == '.' && p != s)           /* .constprop.0, .cold, .isra.0 */
            break;
        PUT(*p);
    }
#undef PUT
    out[o] = 0;
    /* Long qualified names lose their outer namespaces first. */
    char *cut = out;
    while (strlen(cut) > VH_FN_SHORT_MAX) {
        char *sep = strstr(cut, "::");
        if (!sep || !sep[2])
            break;
        cut = sep + 2;
    }
    if (cut != out)
        memmove(out, cut, strlen(cut) + 1);
}

/* Modules that belong to the runtime or to an allocator. */
static int runtime_module(const char *path)
{
    static const char *const prefixes[] = {
        "libc.so", "libc-", "libstdc++", "libvheap", "ld-linux", "ld-2.", "libjemalloc",
        "libtcmalloc", "libgcc_s", "libpthread", "libdl.so", "libmimalloc",
    };
    const char *b = vh_base_name(path);
    if (!b)
        return 0;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(b, prefixes[i], strlen(prefixes[i])))
            return 1;
    return 0;
}

/* Functions that are allocation machinery rather than what the program
 * allocates for. `name` is fn_short()'s output. */
static int machinery(const char *name, const char *file)
{
    static const char *const prefixes[] = {
        "std::", "__gnu_cxx::", "operator new", "operator delete", "__cxa_", "__libc_", "_Zn",
    };
    if (!strcmp(name, "_start"))           /* startup code, below main */
        return 1;
    if (file && !strncmp(file, "/usr/include/", 13))
        return 1;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
            return 1;
    /* wrappers: xmalloc, g_malloc0, u3a_walloc, my_calloc ... */
    const char *last = name, *sep;
    while ((sep = strstr(last, "::")))
        last = sep + 2;
    size_t n = strlen(last);
    while (n && last[n - 1] >= '0' && last[n - 1] <= '9')
        n--;
    if (n >= 5) {
        char tail[6];
        for (int i = 0; i < 5; i++)
            tail[i] = (char)(last[n - 5 + i] | 0x20);
        tail[5] = 0;
        if (!strcmp(tail, "alloc"))
            return 1;
    }
    return !strcmp(last, "free") || !strcmp(last, "strdup") || !strcmp(last, "strndup");
}

size_t vh_lframes(const struct out_stack *st, struct vh_lframe *lf, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < st->n && n < max; i++) {
        const struct out_frame *f = &st->frames[i];
        lf[n++] = (struct vh_lframe){ f->function, f->file, f->module, f->line, f->address,
                                   f->offset, f->has_offset };
        for (size_t j = 0; j < f->ninlined && n < max; j++)
            lf[n++] = (struct vh_lframe){ f->inlined[j].function, f->inlined[j].file, f->module,
                                       f->inlined[j].line, f->address, f->offset,
                                       f->has_offset };
    }
    return n;
}

int vh_frame_machinery(const struct vh_lframe *f)
{
    char buf[512];
    if (runtime_module(f->module))
        return 1;
    if (!f->function)
        return 0;
    vh_fn_short(f->function, buf, sizeof buf);
    return machinery(buf, f->file);
}

enum vh_naming vh_frame_naming(const struct vh_lframe *f)
{
    return vh_frame_machinery(f) ? VH_NAMING_NEVER
         : f->function ? VH_NAMING_FUNCTION : VH_NAMING_ADDRESS;
}

size_t vh_naming_frames(const struct vh_lframe *lf, size_t n, size_t *pick, size_t want)
{
    enum vh_naming best = VH_NAMING_NEVER;
    size_t npick = 0;
    for (size_t i = 0; i < n; i++) {
        enum vh_naming r = vh_frame_naming(&lf[i]);
        best = r > best ? r : best;
    }
    for (size_t i = 0; i < n && npick < want && best != VH_NAMING_NEVER; i++)
        if (vh_frame_naming(&lf[i]) == best)
            pick[npick++] = i;
    if (!npick && n && want)           /* all machinery: the innermost frame */
        pick[npick++] = 0;
    return npick;
}

void vh_frame_name(const struct vh_lframe *f, char *buf, size_t len)
{
    if (!f->function && f->module && f->has_offset)
        snprintf(buf, len, "%s+0x%" PRIx64, vh_base_name(f->module), (uint64_t)f->offset);
    else if (!f->function)
        snprintf(buf, len, "0x%" PRIx64, (uint64_t)f->address);
    else {
        vh_fn_short(f->function, buf, len);
        if (!buf[0])
            snprintf(buf, len, "%s", f->function);
    }
}
