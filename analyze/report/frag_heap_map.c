/* report/frag_heap_map.c — `frag --map`: what the map of one heap at one
 * moment shows, for frag_map.c to draw: the first heap chosen, its regions
 * and blocks, and the key — the stacks holding most of it (named as
 * `series` names stacks, query/frame_rule.h, told apart by their callers)
 * or the blocks' ages — with the title. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/query/frame_rule.h"
#include "analyze/query/stacks.h"
#include "analyze/render/svg.h"
#include "analyze/report/frag_map.h"
#include "analyze/util/cmp.h"
#include "analyze/util/diag.h"
#include "analyze/util/grow.h"

#define MAP_STACKS 11

/* ---- naming stacks -------------------------------------------------------- */

#define NAME_FRAMES 4

/* A stack for a legend: its first frames that are not machinery, the first
 * as "function (file.c:42)", and every frame one a line for the tooltip. */
struct sname {
    char *f[NAME_FRAMES];
    size_t n;
    char *text;
};

static void sname_free(struct sname *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->f[i]);
    free(s->text);
    memset(s, 0, sizeof *s);
}

static int sname_read(struct vh_stacks *s, uint32_t id, struct sname *out)
{
    int err = 0;
    struct out_stack *st = vh_stacks__get(s, id, &err);
    size_t len = 0, cap = 256;
    char buf[600];

    memset(out, 0, sizeof *out);
    if (!st || !(out->text = malloc(cap))) {
        out_stack__free(st);
        return err ? err : -ENOMEM;
    }
    out->text[0] = 0;
    for (size_t i = 0; i < st->n; i++) {
        const struct out_frame *f = &st->frames[i];
        if (f->function)
            snprintf(buf, sizeof buf, "%s", f->function);
        else
            snprintf(buf, sizeof buf, "0x%" PRIx64 " in %s", (uint64_t)f->address,
                     f->module ? vh_base_name(f->module) : "?");
        size_t n = strlen(buf);
        if (vh_reserve(&out->text, &cap, len + n + 2, 1, 256))
            break;
        memcpy(out->text + len, buf, n);
        len += n;
        out->text[len++] = '\n';
        out->text[len] = 0;
    }
    /* named as series names it (query/frame_rule.h) */
    struct vh_lframe lf[256];
    size_t pick[NAME_FRAMES], nl = vh_lframes(st, lf, 256);
    size_t np = vh_naming_frames(lf, nl, pick, NAME_FRAMES);
    for (size_t k = 0; k < np; k++) {
        const struct vh_lframe *f = &lf[pick[k]];
        vh_frame_name(f, buf, sizeof buf);
        size_t n = strlen(buf);
        if (!k && f->function && f->file && f->line > 0)
            snprintf(buf + n, sizeof buf - n, " (%s:%" PRId64 ")", vh_base_name(f->file), f->line);
        if (!(out->f[out->n] = strdup(buf)))
            break;
        out->n++;
    }
    out_stack__free(st);
    if (!out->n && !(out->f[out->n++] = strdup(id ? "(stack without frames)"
                                                  : "(no stack recorded)")))
        out->n = 0;
    return out->n ? 0 : -ENOMEM;
}

/* "f (f.c:1) < caller < its caller": the first `depth` frames. */
static char *sname_compose(const struct sname *s, size_t depth)
{
    size_t len = 1;
    if (depth > s->n)
        depth = s->n;
    for (size_t i = 0; i < depth; i++)
        len += strlen(s->f[i]) + 3;
    char *out = malloc(len);
    if (!out)
        return NULL;
    out[0] = 0;
    for (size_t i = 0; i < depth; i++) {
        if (i)
            strcat(out, " < ");
        strcat(out, s->f[i]);
    }
    return out;
}

/* ---- --map ---------------------------------------------------------------- */

static const char *const age_colors[8] = { "#440154", "#46327e", "#365c8d", "#277f8e",
                                           "#1fa187", "#4ac16d", "#a0da39", "#fde725" };

struct mapkey {
    uint32_t stack;
    uint64_t bytes;
};

static int by_key_bytes(const void *x, const void *y)
{
    const struct mapkey *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return vh_cmp(a->stack, b->stack);
}

int frag_map__moment(const struct frag_run *c, const struct frag_moment *mo, int by_age,
                     const char *path)
{
    const struct liveset *ls = mo->ls;
    const struct frag_report *r = mo->r;
    uint64_t t = mo->t;
    const char *what = mo->what;
    struct frag_map m = { 0 };
    struct frag_map_key keys[FRAG_MAP_MAX_KEYS];
    char *names[FRAG_MAP_MAX_KEYS] = { 0 };
    struct sname sn[FRAG_MAP_MAX_KEYS] = { 0 };
    char notes[FRAG_MAP_MAX_KEYS][96], title[256], sub[320], a[32], b[32], d[32];
    struct frag_region *regs = NULL;
    struct mapkey *mk = NULL;
    struct vh_stacks *stk = NULL;
    uint8_t *key = NULL;
    uint32_t heap = 0;
    size_t first = 0, n = 0, nregs = 0, nk = 0, nmk = 0, others = 0;
    int found = 0, rc = -ENOMEM;

    /* the first heap chosen (lowest id) that has a region then */
    for (size_t i = 0; i < r->nregions; i++) {
        uint32_t id = r->regions[i].heap_id;
        if (found && id != heap)
            others = 1;
        if (!found || id < heap) {
            heap = id;
            found = 1;
        }
    }
    if (others)
        vh_errorf(c->cmd, "the map shows heap %s only (choose another with --heap)",
                  frag_run__heap_name(c, heap));
    while (first < ls->n && ls->blocks[first].heap_id != heap)
        first++;
    while (first + n < ls->n && ls->blocks[first + n].heap_id == heap)
        n++;
    if (!(regs = malloc((r->nregions ? r->nregions : 1) * sizeof *regs)) ||
        !(key = calloc(n ? n : 1, 1)))
        goto out;
    for (size_t i = 0; i < r->nregions; i++)
        if (found && r->regions[i].heap_id == heap)
            regs[nregs++] = r->regions[i];
    if (by_age) {
        uint64_t tmin = t;
        for (size_t i = 0; i < n; i++)
            if (ls->blocks[first + i].time < tmin)
                tmin = ls->blocks[first + i].time;
        uint64_t span = t - tmin + 1;
        for (size_t i = 0; i < n; i++)
            key[i] = (uint8_t)((unsigned __int128)(ls->blocks[first + i].time - tmin) * 8 / span);
        for (int k = 0; k < 8; k++) {
            char t0[32], t1[32];
            out__human_ns((int64_t)(tmin + span * (uint64_t)k / 8), t0, sizeof t0);
            out__human_ns((int64_t)(tmin + span * (uint64_t)(k + 1) / 8), t1, sizeof t1);
            snprintf(notes[k], sizeof notes[k], "allocated %s - %s", t0, t1);
            keys[k] = (struct frag_map_key){ k == 0 ? "oldest" : k == 7 ? "newest" : "",
                                             notes[k], NULL, age_colors[k] };
        }
        nk = 8;
    } else {
        /* the stacks holding the most usable bytes of this heap */
        if (!(mk = calloc(r->nstacks ? r->nstacks : 1, sizeof *mk)))
            goto out;
        for (size_t i = 0; i < r->nstacks; i++)
            if (r->stacks[i].heap_id == heap)
                mk[nmk++] = (struct mapkey){ r->stacks[i].stack_id, r->stacks[i].usable };
        qsort(mk, nmk, sizeof *mk, by_key_bytes);
        if ((rc = vh_stacks__open(c->cmd, c->db, 0, &stk)))
            goto out;
        nk = nmk < MAP_STACKS ? nmk : MAP_STACKS;
        size_t depth[MAP_STACKS];
        for (size_t k = 0; k < nk; k++) {
            if ((rc = sname_read(stk, mk[k].stack, &sn[k]))) {
                if (rc != -ENOMEM)
                    vh_errorf(c->cmd, "reading stack %u failed", mk[k].stack);
                goto out;
            }
            depth[k] = 1;
        }
        /* stacks with the same first frame are told apart by their callers */
        for (int round = 0; round < NAME_FRAMES; round++) {
            int changed = 0;
            for (size_t k = 0; k < nk; k++) {
                free(names[k]);
                if (!(names[k] = sname_compose(&sn[k], depth[k]))) {
                    rc = -ENOMEM;
                    goto out;
                }
            }
            for (size_t k = 0; k < nk; k++)
                for (size_t j = k + 1; j < nk; j++)
                    if (!strcmp(names[k], names[j])) {
                        if (depth[k] < sn[k].n)
                            depth[k]++, changed = 1;
                        if (depth[j] < sn[j].n)
                            depth[j]++, changed = 1;
                    }
            if (!changed)
                break;
        }
        for (size_t k = 0; k < nk; k++) {
            snprintf(notes[k], sizeof notes[k], "%s live",
                     out__human_bytes((int64_t)mk[k].bytes, a, sizeof a));
            keys[k] = (struct frag_map_key){ names[k], notes[k], sn[k].text, svg_palette(k) };
        }
        if (nmk > nk) {
            uint64_t rest = 0;
            for (size_t k = nk; k < nmk; k++)
                rest += mk[k].bytes;
            snprintf(notes[nk], sizeof notes[nk], "%zu stacks, %s live", nmk - nk,
                     out__human_bytes((int64_t)rest, a, sizeof a));
            keys[nk] = (struct frag_map_key){ "other stacks", notes[nk], NULL, "#8c8c8c" };
            nk++;
        }
        for (size_t i = 0; i < n; i++) {
            uint32_t s = ls->blocks[first + i].stack_id;
            size_t k = 0;
            while (k < nk && k < MAP_STACKS && k < nmk && mk[k].stack != s)
                k++;
            key[i] = (uint8_t)(k < nmk && k < MAP_STACKS && mk[k].stack == s ? k : nk - 1);
        }
    }
    uint64_t usable = 0, freeb = 0;
    for (size_t i = 0; i < nregs; i++) {
        usable += regs[i].usable;
        freeb += regs[i].free;
    }
    snprintf(title, sizeof title, "heap %s at %s (%s)", found ? frag_run__heap_name(c, heap) : "?", what,
             out__human_ns((int64_t)t, d, sizeof d));
    snprintf(sub, sizeof sub, "%s%s%zu blocks, %s usable, %s free in holes, %zu region%s; "
                              "coloured by %s",
             c->exe ? vh_base_name(c->exe) : "", c->exe ? ": " : "", n,
             out__human_bytes((int64_t)usable, a, sizeof a),
             out__human_bytes((int64_t)freeb, b, sizeof b), nregs, nregs == 1 ? "" : "s",
             by_age ? "age" : "allocating stack");
    m = (struct frag_map){ .title = title, .subtitle = sub, .regions = regs, .nregions = nregs,
                           .blocks = ls->blocks + first, .nblocks = n, .key = key, .keys = keys,
                           .nkeys = nk };
    if ((rc = frag_map__write(&m, path))) {
        vh_errorf(c->cmd, "writing %s: %s", path, strerror(-rc));
        goto out;
    }
    vh_errorf(c->cmd, "wrote %s", path);
    rc = 0;
out:
    if (rc == -ENOMEM)
        vh_errorf(c->cmd, "out of memory");
    for (size_t k = 0; k < FRAG_MAP_MAX_KEYS; k++) {
        free(names[k]);
        sname_free(&sn[k]);
    }
    vh_stacks__free(stk);
    free(mk);
    free(key);
    free(regs);
    return rc;
}
