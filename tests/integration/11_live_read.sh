# 11_live_read — the capture is readable while the program runs: the program
# blocks on a fifo after a first batch; the dump then shows exactly that
# batch, without damage and without the ended flag; after it is let go, the
# final capture shows both batches.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/live_read"

mkfifo ready go
VHEAP_OUT=cap.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/live_read" ready go >out.txt &
pid=$!
trap 'kill -KILL $pid 2>/dev/null' EXIT    # never leave it blocked on the fifo
word=$(timeout 60 sh -c 'read -r w <ready && echo "$w"') || die "no word from the program"
expect_eq "program says" "$word" ready

vh_dump cap.vhcap live.txt
vh_check out.txt live.txt
expect_line out.txt
has_flag "$(st header_flags)" ended && die "a running program's capture says ended"
expect_eq "end records while running" "$(st ended)" 0
first_allocs=$(st allocs)

echo go >go
wait $pid || die "live_read exited $?"
vh_dump cap.vhcap final.txt
vh_check out.txt final.txt
expect_line out.txt
has_flag "$(st header_flags)" ended || die "capture not ended after exit"
[ "$(st allocs)" -gt "$first_allocs" ] || die "second batch missing"
echo "live read: $first_allocs allocations seen while running, $(st allocs) at the end"
