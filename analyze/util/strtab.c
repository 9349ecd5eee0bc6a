/* strtab.c — interned strings (strtab.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/util/strtab.h"
#include "analyze/util/grow.h"

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
    if (vh_reserve(&t->chars, &t->ccap, t->clen + n + 1, 1, 4096))
        return 0;
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
