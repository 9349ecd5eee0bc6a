# 12_demo — the demo program (`make demo`): what it says it leaked is what
# the capture holds live at exit among the blocks allocated from its own
# code (a stack with a frame in the main executable other than _start, the
# outermost), block for block and byte for byte.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/demo_app"

profile cap.vhcap "$PROGS/demo_app" >out.txt || die "demo_app exited $?"
vh_dump cap.vhcap dump.txt
main_range dump.txt >range.txt
[ -s range.txt ] || die "no main executable module record"
vh_check range.txt dump.txt "-v skiplast=1"
leaked=$(sed -n 's/^demo_app: leaked \([0-9]*\) blocks (\([0-9]*\) bytes).*/\1 \2/p' out.txt)
[ -n "$leaked" ] || die "demo_app did not say what it leaked"
set -- $leaked
[ "$1" -gt 0 ] || die "demo_app leaked nothing: the demo has nothing to show"
expect_eq "live blocks at exit" "$(st live_blocks)" "$1"
expect_eq "live bytes at exit" "$(st live_bytes)" "$2"
expect_eq "main module path" "$(awk '$3 == "module" && $NF == "main" { sub(/.* path=/, ""); sub(/ main$/, ""); print; exit }' dump.txt)" \
    "$(readlink -f "$PROGS/demo_app")"
echo "demo: $1 blocks, $2 bytes leaked, as the program says; $(st allocs) allocations from its code"
