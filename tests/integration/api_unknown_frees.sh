# api_unknown_frees — a program that uses vheap.h (phases: marks and tags
# through the API, looked up with dlsym) has every free it makes known:
# "frees of unknown addresses" is 0. Before, the shim found the real
# allocator with failed dlsym lookups whose error strings glibc allocated
# before recording began and freed later, inside the program's own dl*
# calls: 2 unknown frees in every such program (issue 27, item 14).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/phases" "$PROGS/loomsim"

for prog in phases loomsim; do
    VHEAP_OUT="$prog.vhcap" VHEAP_QUIET=1 timeout 120 env LD_PRELOAD="$VHEAP_LIB" \
        "$PROGS/$prog" >"$prog.out" 2>"$prog.err" || die "$prog failed: $(cat "$prog.err")"
    cap=$(ls "$prog".vhcap* | grep -v sqlite | head -n 1)
    "$ANALYZE" summary --format json "$cap" >"$prog.json" 2>"$prog.sum.err" ||
        die "summary of $prog: $(cat "$prog.sum.err")"
    unknown=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(h.get("unknown_frees", 0) for h in d["heaps"]))' "$prog.json") ||
        die "no heaps in $prog's summary"
    expect_eq "$prog: frees of unknown addresses" "$unknown" 0
done
echo "phases, loomsim: no unknown frees"
