/* gen.c — turns a golden capture spec (tests/golden/NAME.spec) into a capture
 * file, through tests/unit/capture_builder.h. Built and run by
 * tests/integration/golden.sh:  gen SPEC OUT.vhcap
 *
 * Spec lines (one record each, `#` comments; numbers decimal or 0x hex):
 *   header pid= ppid= exe= argv=a,b end_time= last_time= flags=ended,forked
 *          dropped= nested= stack_table_full= max_depth= unwind=fp chunk_size=
 *   chunk                      claims the next chunk (0, 1, ...)
 *   thread C t= tid=           thread_exit C t= tid=       end C t=
 *   alloc|resize C t= addr= size= usable= stack= heap= tag= func= flags=
 *   free C t= addr= heap= func= flags=        move C t= heap= from= to=
 *   stack C t= id= frames=a,b,... flags=truncated
 *   module C t= bias= lo= hi= build_id=HEX flags=main path=REST OF LINE
 *   module_unload C t= bias=   rss C t= bytes=
 *   heap_create C t= id= parent= base= size= name=REST OF LINE
 *   heap_destroy C t= heap=    mark C t= label=REST    tag C t= id= label=REST
 *   raw C bytes=N              N zero bytes: an unknown record (damage)
 *   expect ...                 ignored here (golden.sh checks them)
 * C is a chunk index. flags= takes words: failed, realloc, truncated, main,
 * slack_clamped. func= takes vh_func_name() names. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/capture_builder.h"

#define MAX_KEYS 16

struct kv {
    char *k, *v;
};

static const char *spec_path;
static int lineno;

static void die(const char *msg, const char *what)
{
    fprintf(stderr, "gen: %s:%d: %s%s%s\n", spec_path, lineno, msg, what ? ": " : "",
            what ? what : "");
    exit(1);
}

static uint64_t num(const char *s)
{
    char *end;
    uint64_t v = strtoull(s, &end, 0);
    if (!*s || *end)
        die("not a number", s);
    return v;
}

static const char *get(const struct kv *kv, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(kv[i].k, key))
            return kv[i].v;
    return NULL;
}

static uint64_t getn(const struct kv *kv, int n, const char *key, uint64_t dflt)
{
    const char *v = get(kv, n, key);
    return v ? num(v) : dflt;
}

static uint8_t flags_of(const char *s)
{
    static const struct { const char *w; uint8_t f; } words[] = {
        { "failed", VH_RF_FAILED }, { "slack_clamped", VH_RF_SLACK_CLAMPED },
        { "realloc", VH_RF_REALLOC }, { "truncated", VH_RF_TRUNCATED },
        { "main", VH_RF_MAIN_EXE },
    };
    uint8_t f = 0;
    char buf[256], *save = NULL;

    if (!s)
        return 0;
    snprintf(buf, sizeof buf, "%s", s);
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < sizeof words / sizeof words[0]; i++)
            if (!strcmp(w, words[i].w))
                break;
        if (i == sizeof words / sizeof words[0])
            die("unknown flag", w);
        f |= words[i].f;
    }
    return f;
}

static uint16_t func_of(const char *s, uint16_t dflt)
{
    if (!s)
        return dflt;
    for (unsigned f = 0; f < VH_FN_COUNT; f++)
        if (!strcmp(s, vh_func_name(f)))
            return (uint16_t)f;
    die("unknown func", s);
    return 0;
}

/* Splits "k=v k=v ... last=rest of line" (the text keys take the rest). */
static int split(char *p, struct kv *kv)
{
    int n = 0;
    while (*p) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        char *eq = strchr(p, '=');
        if (!eq || n == MAX_KEYS)
            die("expected key=value", p);
        *eq = 0;
        kv[n].k = p;
        kv[n].v = eq + 1;
        if (!strcmp(p, "path") || !strcmp(p, "name") || !strcmp(p, "label")) {
            n++;
            break;                      /* the value is the rest of the line */
        }
        p = eq + 1;
        while (*p && !isspace((unsigned char)*p))
            p++;
        if (*p)
            *p++ = 0;
        n++;
    }
    return n;
}

int main(int argc, char **argv)
{
    struct capb b;
    char line[4096];
    int inited = 0;
    FILE *f;

    if (argc != 3) {
        fprintf(stderr, "usage: gen SPEC OUT.vhcap\n");
        return 2;
    }
    spec_path = argv[1];
    f = fopen(spec_path, "r");
    if (!f) {
        perror(spec_path);
        return 1;
    }
    while (fgets(line, sizeof line, f)) {
        struct kv kv[MAX_KEYS];
        char *p = line, *word;
        uint32_t c = 0;
        int n;

        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (strchr(line, '#') && !strstr(line, "label=") && !strstr(line, "name="))
            *strchr(line, '#') = 0;
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            continue;
        word = p;
        p += strcspn(p, " \t");
        if (*p)
            *p++ = 0;
        if (!strcmp(word, "expect"))
            continue;
        if (!inited && strcmp(word, "header")) {
            capb__init(&b, 0);
            inited = 1;
        }
        if (strcmp(word, "header") && strcmp(word, "chunk")) {
            while (isspace((unsigned char)*p))
                p++;
            char *sp = p + strcspn(p, " \t");
            if (*sp)
                *sp++ = 0;
            c = (uint32_t)num(p);
            if (c >= b.nchunks)
                die("no such chunk (claim it with `chunk` first)", p);
            p = sp;
        }
        n = split(p, kv);
        uint64_t t = getn(kv, n, "t", 0);

        if (!strcmp(word, "header")) {
            capb__init(&b, (uint32_t)getn(kv, n, "chunk_size", 0));
            inited = 1;
            struct vh_capture_header *h = capb__header(&b);
            h->pid = (uint32_t)getn(kv, n, "pid", h->pid);
            h->ppid = (uint32_t)getn(kv, n, "ppid", h->ppid);
            h->end_time = getn(kv, n, "end_time", 0);
            h->last_time = getn(kv, n, "last_time", 0);
            h->dropped_events = getn(kv, n, "dropped", 0);
            h->nested_events = getn(kv, n, "nested", 0);
            h->stack_table_full = getn(kv, n, "stack_table_full", 0);
            h->max_depth = (uint32_t)getn(kv, n, "max_depth", h->max_depth);
            h->exec_generation = (uint32_t)getn(kv, n, "exec_generation", 0);
            if (get(kv, n, "unwind") && !strcmp(get(kv, n, "unwind"), "fp"))
                h->unwind = VH_UNWIND_FP;
            if (get(kv, n, "exe"))
                snprintf(h->exe, sizeof h->exe, "%s", get(kv, n, "exe"));
            if (get(kv, n, "argv")) {
                const char *args[64];
                char buf[1024], *save = NULL;
                int na = 0;
                snprintf(buf, sizeof buf, "%s", get(kv, n, "argv"));
                for (char *a = strtok_r(buf, ",", &save); a && na < 64;
                     a = strtok_r(NULL, ",", &save))
                    args[na++] = a;
                capb__set_argv(&b, na, args);
            }
            const char *fl = get(kv, n, "flags");
            if (fl && strstr(fl, "ended"))
                h->flags |= VH_HDR_ENDED;
            if (fl && strstr(fl, "forked"))
                h->flags |= VH_HDR_FORKED;
            if (fl && strstr(fl, "disabled"))
                h->flags |= VH_HDR_DISABLED;
        } else if (!strcmp(word, "chunk")) {
            capb__chunk(&b);
        } else if (!strcmp(word, "thread")) {
            capb__thread(&b, c, t, (uint32_t)getn(kv, n, "tid", 0));
        } else if (!strcmp(word, "thread_exit")) {
            capb__thread_exit(&b, c, t, (uint32_t)getn(kv, n, "tid", 0));
        } else if (!strcmp(word, "end")) {
            capb__end(&b, c, t);
        } else if (!strcmp(word, "alloc") || !strcmp(word, "resize")) {
            int resize = word[0] == 'r';
            struct capb_alloc a = {
                .addr = getn(kv, n, "addr", 0),
                .size = getn(kv, n, "size", 0),
                .stack = (uint32_t)getn(kv, n, "stack", 0),
                .heap = (uint16_t)getn(kv, n, "heap", 0),
                .tag = (uint16_t)getn(kv, n, "tag", 0),
                .flags = flags_of(get(kv, n, "flags")),
            };
            a.usable = getn(kv, n, "usable", a.size);
            a.func = func_of(get(kv, n, "func"), resize ? VH_FN_REALLOC : VH_FN_MALLOC);
            capb__alloc_ex(&b, c, resize ? VH_REC_RESIZE : VH_REC_ALLOC, t, &a);
        } else if (!strcmp(word, "free")) {
            capb__free_ex(&b, c, t, (uint16_t)getn(kv, n, "heap", 0),
                          func_of(get(kv, n, "func"), VH_FN_FREE), getn(kv, n, "addr", 0),
                          flags_of(get(kv, n, "flags")));
        } else if (!strcmp(word, "move")) {
            capb__move(&b, c, t, (uint16_t)getn(kv, n, "heap", 0), getn(kv, n, "from", 0),
                       getn(kv, n, "to", 0));
        } else if (!strcmp(word, "stack")) {
            uint64_t frames[VH_MAX_DEPTH];
            uint32_t depth = 0;
            char buf[4096], *save = NULL;
            snprintf(buf, sizeof buf, "%s", get(kv, n, "frames") ? get(kv, n, "frames") : "");
            for (char *a = strtok_r(buf, ",", &save); a && depth < VH_MAX_DEPTH;
                 a = strtok_r(NULL, ",", &save))
                frames[depth++] = num(a);
            capb__stack(&b, c, t, (uint32_t)getn(kv, n, "id", 0), frames, depth,
                        flags_of(get(kv, n, "flags")));
        } else if (!strcmp(word, "module")) {
            uint8_t id[32];
            uint32_t idlen = 0;
            const char *hex = get(kv, n, "build_id");
            for (; hex && hex[0] && hex[1] && idlen < sizeof id; hex += 2) {
                char byte[3] = { hex[0], hex[1], 0 };
                id[idlen++] = (uint8_t)strtoul(byte, NULL, 16);
            }
            capb__module(&b, c, t, getn(kv, n, "bias", 0), getn(kv, n, "lo", 0),
                         getn(kv, n, "hi", 0), id, idlen,
                         get(kv, n, "path") ? get(kv, n, "path") : "",
                         flags_of(get(kv, n, "flags")));
        } else if (!strcmp(word, "module_unload")) {
            capb__module_unload(&b, c, t, getn(kv, n, "bias", 0));
        } else if (!strcmp(word, "rss")) {
            capb__rss(&b, c, t, getn(kv, n, "bytes", 0));
        } else if (!strcmp(word, "heap_create")) {
            capb__heap_create(&b, c, t, (uint32_t)getn(kv, n, "id", 0),
                              (uint32_t)getn(kv, n, "parent", 0), getn(kv, n, "base", 0),
                              getn(kv, n, "size", 0),
                              get(kv, n, "name") ? get(kv, n, "name") : "");
        } else if (!strcmp(word, "heap_destroy")) {
            capb__heap_destroy(&b, c, t, (uint16_t)getn(kv, n, "heap", 0));
        } else if (!strcmp(word, "mark")) {
            capb__mark(&b, c, t, get(kv, n, "label") ? get(kv, n, "label") : "");
        } else if (!strcmp(word, "tag")) {
            capb__tag(&b, c, t, (uint32_t)getn(kv, n, "id", 0),
                      get(kv, n, "label") ? get(kv, n, "label") : "");
        } else if (!strcmp(word, "raw")) {
            capb__raw(&b, c, NULL, (size_t)getn(kv, n, "bytes", 16));
        } else {
            die("unknown line", word);
        }
    }
    fclose(f);
    if (!inited)
        die("empty spec", NULL);
    if (capb__write(&b, argv[2])) {
        perror(argv[2]);
        return 1;
    }
    capb__destroy(&b);
    return 0;
}
