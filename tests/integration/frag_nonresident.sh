# frag_nonresident.sh — a custom arena whose pages are not resident (Vere's
# demand-paged loom): 512 MiB reported live in an untouched MAP_NORESERVE
# mapping, so the process's RSS is far below the heap's live bytes. frag must
# not print a negative "RSS - live usable" (the old frag printed -500M); it
# leaves the value out with the reason.
. "$TOP/tests/lib.sh"

need_cmd python3
cat >arena.c <<'C'
#include <sys/mman.h>
#include "preload/vheap.h"
int main(void)
{
    size_t len = (size_t)1 << 30;
    char *a = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (a == MAP_FAILED)
        return 1;
    int h = vheap_heap_create("arena", 0, a, len);
    vheap_alloc(h, a, (size_t)512 << 20, (size_t)512 << 20); /* never touched */
    return 0;
}
C
cc -O1 -I"$TOP" -o arena arena.c -ldl || die "cannot build the arena program"
VHEAP_RSS_INTERVAL=1ms profile arena.vhcap ./arena || die "arena failed"
"$ANALYZE" frag arena.vhcap --heap arena --format json >frag.json 2>frag.err || die "frag: $(cat frag.err)"
python3 - <<'PY' || die "frag: $(cat frag.json)"
import json, sys
f = json.load(open("frag.json"))["frag"]
if f["usable"] != 512 << 20:
    sys.exit("live usable %r, the program reported 512 MiB" % f["usable"])
if f.get("rss") is None or f["rss"] >= f["usable"]:
    sys.exit("want an RSS sample below the live bytes, got %r" % f.get("rss"))
if f.get("rss_over_usable") is not None:
    sys.exit("RSS - live usable is %r for an arena whose pages are not resident" % f["rss_over_usable"])
PY
"$ANALYZE" frag arena.vhcap --heap arena >frag.txt || die "frag (table) failed"
grep -q "RSS - live usable: -" frag.txt && die "negative RSS line: $(grep RSS frag.txt)"
grep -q "not all of the heap's pages are resident" frag.txt || die "no reason for the missing line: $(cat frag.txt)"
echo "frag_nonresident: ok"
