/* headroom.c — an arena with nested roads, laid out the way Vere's loom
 * is, and events marked as the Vere patch marks them (when they commit).
 * Every block's size is chosen here, so the arena's most in use (the
 * least headroom), when and in which road, and what each event allocated,
 * freed and left on the home road are known by construction: printed as
 * "expect KEY=VALUE" lines for tests/integration/headroom.sh.
 *
 *   headroom [ROUNDS]   (default 3) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload/vheap.h"

#define ARENA (1u << 20)
#define DEEP 4                          /* roads nested in one event */

static unsigned char arena[ARENA] __attribute__((aligned(16)));

/* Sizes that are not round: block k of road d in round r. */
static size_t block_size(int r, int d, int k)
{
    return 1024u * (unsigned)(7 + 3 * r + 5 * d) + 16u * (unsigned)k;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    int loom = vheap_heap_create("loom", 0, arena, ARENA);
    size_t home = 0, in_use = 0, peak = 0, off = 0;
    int peak_event = 0, peak_depth = 0;
    unsigned char *held[64];
    size_t held_n = 0;
    char label[96];

    if (rounds < 1 || rounds > 16)
        return 2;
    for (int r = 1; r <= rounds; r++) {
        size_t ev_bytes = 0, ev_allocs = 0, home_before = home;
        int road[DEEP + 1];

        road[0] = loom;
        /* the event's result stays on the home road */
        unsigned char *keep = arena + off;
        size_t ks = block_size(r, 0, 0);
        vheap_alloc(loom, keep, ks, ks);
        off += ks;
        home += ks, in_use += ks, ev_bytes += ks, ev_allocs++;
        held[held_n++] = keep;
        /* roads pushed into the gap, each nested in the one before */
        size_t top = ARENA;
        for (int d = 1; d <= DEEP && d <= r + 1; d++) {
            size_t s = block_size(r, d, 1);
            road[d] = vheap_heap_create("road", road[d - 1], arena + off, top - off);
            top -= s;                   /* inner roads grow the other way */
            vheap_alloc(road[d], arena + top, s, s);
            in_use += s, ev_bytes += s, ev_allocs++;
            if (in_use > peak)
                peak = in_use, peak_event = r, peak_depth = d;
        }
        /* popped innermost first: their blocks go at once */
        for (int d = DEEP < r + 1 ? DEEP : r + 1; d >= 1; d--)
            vheap_heap_destroy(road[d]);
        in_use = home;
        /* the previous event's result is freed during this one */
        if (r > 1) {
            size_t fs = block_size(r - 1, 0, 0);
            vheap_free(loom, held[held_n - 2]);
            home -= fs, in_use -= fs;
        }
        snprintf(label, sizeof label, "event %d %%eyre /e/http-server/%d %%request", 100 + r, r);
        vheap_mark(label);
        printf("expect event%d_allocations=%zu event%d_bytes=%zu event%d_growth=%lld\n", r,
               ev_allocs, r, ev_bytes, r, (long long)home - (long long)home_before);
        /* between events: marked work that is no event's */
        vheap_mark("pack begin");
        unsigned char *tmp = arena + off;
        vheap_alloc(loom, tmp, 4096, 4096);
        vheap_free(loom, tmp);
        vheap_mark("pack end");
    }
    printf("expect size=%u peak=%zu peak_event=%d peak_depth=%d headroom=%zu events=%d\n",
           ARENA, peak, 100 + peak_event, peak_depth, (size_t)ARENA - peak, rounds);
    return 0;
}
