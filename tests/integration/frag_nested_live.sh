# frag_nested_live.sh — a heap nested in another and alive at the end (Vere's
# inner road when a capture ends inside an event): `frag --heap outer` must
# count the inner heap's bounds as occupied, not as one hole the size of the
# road (the old frag: a 2.14G hole in a ship's loom).
. "$TOP/tests/lib.sh"

need_cmd python3
cat >nest.c <<'C'
#include "preload/vheap.h"
static char arena[1 << 20];
int main(void)
{
    int outer = vheap_heap_create("outer", 0, arena, sizeof arena);
    vheap_alloc(outer, arena, 4096, 4096);
    int inner = vheap_heap_create("inner", outer, arena + (512 << 10), 512 << 10);
    vheap_alloc(inner, arena + (512 << 10), 64, 64);
    return 0;                                /* inner still alive */
}
C
cc -O1 -I"$TOP" -o nest nest.c -ldl || die "cannot build the nesting program"
profile nest.vhcap ./nest || die "nest failed"
"$ANALYZE" frag nest.vhcap --heap outer --format json >frag.json 2>frag.err || die "frag: $(cat frag.err)"
python3 - <<'PY' || die "frag --heap outer: $(cat frag.json)"
import json, sys
f = json.load(open("frag.json"))["frag"]
want = (1 << 20) - 4096 - (512 << 10)        # the outer heap's own free space
if f["free"] != want or f["largest_hole"] != want:
    sys.exit("free %d, largest hole %d; the outer heap has %d free beside the live inner one"
             % (f["free"], f["largest_hole"], want))
PY
"$ANALYZE" frag nest.vhcap --heap 'outer/*' --format json >all.json || die "frag --heap 'outer/*' failed"
python3 -c '
import json, sys
f = json.load(open("all.json"))["frag"]
sys.exit(f["live_blocks"] != 2)' || die "frag --heap 'outer/*': $(cat all.json)"
echo "frag_nested_live: ok"
