# paused_heaps.sh — docs/vere.md's days-long run: a program started with
# VHEAP_START=paused makes its arena once, at start, and reports blocks into
# it; `vheap-analyze ctl start PID` switches recording on. The arena must
# exist in the capture (the old shim's heap_create returned 0 while paused:
# no heap at all) and, re-reported when vheap_starts() changes, its blocks
# must be live at the end; a heap made and destroyed while paused, and one
# destroyed while paused after a first window, must not be live.
. "$TOP/tests/lib.sh"

need_cmd python3
cat >arena.c <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "preload/vheap.h"
static char arena[1 << 16];
int main(int argc, char **argv)
{
    char cmd[4096];
    int h = vheap_heap_create("arena", 0, arena, sizeof arena);
    int gone = vheap_heap_create("gone", 0, 0, 0);       /* made and destroyed paused */
    vheap_heap_destroy(gone);
    for (int i = 0; i < 64; i++)
        vheap_alloc(h, arena + 1024 * i, 1000, 1024);   /* unrecorded: paused */
    unsigned seen = vheap_starts();
    if (seen != 0 || h <= 0) {
        printf("starts %u heap %d while paused\n", seen, h);
        return 1;
    }
    /* the analyzer runs without the shim (an ASan build of it must) */
    snprintf(cmd, sizeof cmd, "env -u LD_PRELOAD %s ctl start %d >/dev/null", argv[1],
             (int)getpid());
    if (system(cmd) != 0)
        return 2;
    /* the shim acts at an allocator call while paused */
    for (int i = 0; i < 5000 && vheap_starts() == seen; i++) {
        void *volatile p = malloc(16);   /* volatile: not elided */
        free(p);
        usleep(1000);
    }
    if (vheap_starts() != 1) {
        printf("recording did not start\n");
        return 3;
    }
    for (int i = 0; i < 64; i++)                          /* the live blocks again */
        vheap_alloc(h, arena + 1024 * i, 1000, 1024);
    vheap_free(h, arena);
    printf("live 63 blocks %d bytes\n", 63 * 1000);
    (void)argc;
    return 0;
}
C
cc -O1 -I"$TOP" -o arena arena.c -ldl || die "cannot build the arena program"
VHEAP_START=paused profile arena.vhcap ./arena "$ANALYZE" >out.txt || die "arena: $(cat out.txt)"
"$ANALYZE" summary arena.vhcap --format json >sum.json 2>sum.err || die "summary: $(cat sum.err)"
python3 - <<'PY' || die "summary: $(cat sum.json)"
import json, sys
H = {h["heap"]: h for h in json.load(open("sum.json"))["heaps"]}
a = H.get("arena")
if not a:
    sys.exit("no heap 'arena' in the capture: made while paused, it was lost")
if (a["live_blocks"], a["live_bytes"]) != (63, 63000):
    sys.exit("arena: %d blocks, %d bytes live; the program has 63, 63000" % (a["live_blocks"], a["live_bytes"]))
if "gone" in H:
    sys.exit("'gone', made and destroyed while paused, is in the capture")
PY
echo "paused_heaps: ok"
