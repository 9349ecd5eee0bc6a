/* demo_app.c — the small "realistic" program `make demo` profiles: counts
 * word frequencies in some text (the files named on the command line, or a
 * built-in sample) with a growing hash table, keeps a cache of recent lines
 * that leaks what it evicts (the deliberate bug the demo finds), and uses
 * short-lived scratch buffers. Prints the top words and, at the end, exactly
 * what it leaked, so the profile can be checked against it. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const sample[] = {
    "It was the best of times, it was the worst of times, it was the age of",
    "wisdom, it was the age of foolishness, it was the epoch of belief, it was",
    "the epoch of incredulity, it was the season of Light, it was the season of",
    "Darkness, it was the spring of hope, it was the winter of despair, we had",
    "everything before us, we had nothing before us, we were all going direct to",
    "Heaven, we were all going direct the other way - in short, the period was so",
    "far like the present period, that some of its noisiest authorities insisted",
    "on its being received, for good or for evil, in the superlative degree of",
    "comparison only. There were a king with a large jaw and a queen with a plain",
    "face, on the throne of England; there were a king with a large jaw and a",
    "queen with a fair face, on the throne of France. In both countries it was",
    "clearer than crystal to the lords of the State preserves of loaves and",
    "fishes, that things in general were settled for ever.",
};

/* ---- word table: chained hash, doubled when the load passes 1 ---------- */
struct word { struct word *next; char *text; unsigned long count; };
static struct { struct word **slots; size_t nslots, nwords; } table;

static size_t hash(const char *s)
{
    size_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static void table_grow(void)
{
    size_t n = table.nslots ? table.nslots * 2 : 16;
    struct word **slots = calloc(n, sizeof *slots);
    if (!slots)
        abort();
    for (size_t i = 0; i < table.nslots; i++)
        for (struct word *w = table.slots[i], *next; w; w = next) {
            next = w->next;
            w->next = slots[hash(w->text) % n];
            slots[hash(w->text) % n] = w;
        }
    free(table.slots);
    table.slots = slots;
    table.nslots = n;
}

static void count_word(const char *text)
{
    if (table.nwords >= table.nslots)
        table_grow();
    struct word **slot = &table.slots[hash(text) % table.nslots];
    for (struct word *w = *slot; w; w = w->next)
        if (strcmp(w->text, text) == 0) {
            w->count++;
            return;
        }
    struct word *w = malloc(sizeof *w);
    if (!w || !(w->text = strdup(text)))
        abort();
    w->count = 1;
    w->next = *slot;
    *slot = w;
    table.nwords++;
}

/* ---- recent-lines cache: the leak --------------------------------------- */
#define CACHE_SLOTS 8
static char *cache[CACHE_SLOTS];
static unsigned cache_next;
static unsigned long leaked_blocks, leaked_bytes;

static void cache_line(const char *line)
{
    char **slot = &cache[cache_next++ % CACHE_SLOTS];
    if (*slot) {
        /* BUG (on purpose): the evicted line is dropped, not freed. */
        leaked_blocks++;
        leaked_bytes += strlen(*slot) + 1;
    }
    *slot = strdup(line);
}

static void process_line(const char *line)
{
    cache_line(line);
    size_t n = strlen(line);
    char *scratch = malloc(n + 1);         /* lowercased copy, split in place */
    if (!scratch)
        abort();
    for (size_t i = 0; i <= n; i++)
        scratch[i] = (char)tolower((unsigned char)line[i]);
    char *save = NULL;
    for (char *tok = strtok_r(scratch, " \t\n,.;:-!?\"'()", &save); tok;
         tok = strtok_r(NULL, " \t\n,.;:-!?\"'()", &save))
        count_word(tok);
    free(scratch);
}

static int by_count(const void *a, const void *b)
{
    const struct word *x = *(struct word *const *)a, *y = *(struct word *const *)b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return strcmp(x->text, y->text);
}

static int process_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "demo_app: %s: cannot open\n", path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0)
        process_line(line);
    free(line);
    fclose(f);
    return 0;
}

int main(int argc, char **argv)
{
    /* Our own stdout buffer: the profile then shows only the program's heap. */
    static char outbuf[8192];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);

    if (argc > 1) {
        for (int i = 1; i < argc; i++)
            if (process_file(argv[i]) != 0)
                return 1;
    } else {
        for (int round = 0; round < 20; round++)
            for (size_t i = 0; i < sizeof sample / sizeof *sample; i++)
                process_line(sample[i]);
    }

    struct word **all = malloc(table.nwords * sizeof *all);
    if (!all)
        abort();
    size_t k = 0;
    for (size_t i = 0; i < table.nslots; i++)
        for (struct word *w = table.slots[i]; w; w = w->next)
            all[k++] = w;
    qsort(all, k, sizeof *all, by_count);
    printf("demo_app: %zu distinct words; the most frequent:\n", k);
    for (size_t i = 0; i < k && i < 8; i++)
        printf("  %-10s %lu\n", all[i]->text, all[i]->count);

    for (size_t i = 0; i < k; i++) {
        free(all[i]->text);
        free(all[i]);
    }
    free(all);
    free(table.slots);
    for (unsigned i = 0; i < CACHE_SLOTS; i++)
        free(cache[i]);
    printf("demo_app: leaked %lu blocks (%lu bytes) from the line cache\n", leaked_blocks,
           leaked_bytes);
    return 0;
}
