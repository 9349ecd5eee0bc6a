#!/bin/sh
# demo.sh — what `make demo` shows a newcomer: profile a bundled program,
# then ask the analyzer the first questions (summary, leaks, top stacks), write
# the HTML report and compare two runs (diff);
# then a custom allocator (loomsim, a stand-in for Vere's loom): its heaps,
# its leak and its memory by tag.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
A="$top/build/vheap-analyze"
out=${VHEAP_DEMO_DIR:-"$top/build/demo"}
rm -rf "$out"; mkdir -p "$out"
cap="$out/demo_app.vhcap"
db="$out/demo_app.sqlite"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "Profiling tests/programs/demo_app under vheap"
echo "\$ vheap-analyze record --out $cap -- build/tests/programs/demo_app"
"$A" record --out "$cap" --no-load -- "$top/build/tests/programs/demo_app"

say "What was recorded (first records of the raw capture)"
"$A" dump --no-header "$cap" | head -n 8
echo "..."

say "Loading the capture into SQLite, once"
"$A" load "$cap" "$db"

say "Summary"
"$A" summary "$db"

say "Leaks, largest first"
"$A" leaks --limit 3 "$db"

say "Call stacks that allocate most often"
"$A" top --by allocations --limit 3 "$db"

say "Memory over time, and files for the tools you already use"
"$A" chart "$db" -o "$out/memory.svg"
"$A" export --format heaptrack "$db" -o "$out/demo_app.heaptrack.zst" 2>/dev/null
"$A" export --format flamegraph --cost allocations "$db" -o "$out/demo_app.folded"
"$A" export --format pprof "$db" -o "$out/demo_app.pb.gz" 2>/dev/null
"$A" report "$db" -o "$out/report.html" 2>/dev/null
echo "  report:     $out/report.html: one page (flame graph, memory over time,"
echo "              tables), open it in a browser: xdg-open $out/report.html"
echo "  chart:      $out/memory.svg (and memory-allocs.svg): open in a browser"
echo "  heaptrack:  heaptrack_gui $out/demo_app.heaptrack.zst  (or heaptrack_print -f ...)"
echo "  flamegraph: flamegraph.pl $out/demo_app.folded > flame.svg  (or speedscope, inferno)"
echo "  pprof:      go tool pprof -top -sample_index=alloc_space $out/demo_app.pb.gz  (or -http=:)"

say "What changed: the demo on README.md against the demo on its own sample"
"$A" record --out "$out/demo_readme.vhcap" --no-load -- \
    "$top/build/tests/programs/demo_app" "$top/README.md" >/dev/null 2>&1
"$A" load -q "$out/demo_readme.vhcap" "$out/demo_readme.sqlite"
"$A" diff "$db" "$out/demo_readme.sqlite" --limit 3 --depth 3
"$A" report "$out/demo_readme.sqlite" --diff "$db" -o "$out/diff.html" 2>/dev/null
echo "  differential flame graph: $out/diff.html"

# A custom allocator: loomsim imitates Vere's loom (an arena with nested
# roads, compaction, a deliberate leak) and reports it through vheap.h.
loom="$top/build/tests/programs/loomsim"
if [ -x "$loom" ]; then
    say "A custom allocator: loomsim, a stand-in for Vere's loom (vheap.h)"
    echo "\$ VHEAP_OUT=$out/loom.%p.vhcap LD_PRELOAD=build/libvheap.so build/tests/programs/loomsim"
    VHEAP_OUT="$out/loom.%p.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$top/build/libvheap.so" "$loom" \
        >"$out/loomsim.txt" 2>"$out/loomsim.err"
    pid=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' "$out/loomsim.txt")
    grep "^loomsim leak pid=$pid " "$out/loomsim.txt" | sed 's/^/  (loomsim says) /'
    ldb="$out/loom.sqlite"
    "$A" load -q "$out/loom.$pid.vhcap" "$ldb"

    say "Its heaps: the loom, the roads pushed inside it (destroyed), malloc"
    "$A" heaps --limit 6 "$ldb"

    say "What the loom leaked, with the stack that allocated it (before pack moved it)"
    "$A" leaks --heap loom --limit 1 --depth 5 "$ldb"

    say "Memory by tag (vheap_tag_push), the loom and all its roads"
    "$A" top --by-tag --heap 'loom/*' --by bytes --limit 5 "$ldb"
fi

cat <<MSG

Files are in $out. Open the HTML report in a browser:
  xdg-open $out/report.html
Ask more with \`$A --help\`, or query the database
directly: sqlite3 $db 'SELECT * FROM summary'
MSG
