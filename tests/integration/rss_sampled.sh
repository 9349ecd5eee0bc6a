# rss_sampled — under sampling, the periodic RSS sample writes a record only
# when RSS moved by the sample rate or more since the last one.
# tests/programs/rss_steady keeps its RSS still for 300 ms of sampled
# allocations (the tick, every 10 ms, came about 30 times: one record each
# before), then touches 8 MiB and goes on for 100 ms. With VHEAP_SAMPLE=64KiB
# the capture holds at most 8 RSS records (start, end, the jump, the
# runtime's own start-up), and the jump the program measured is among them
# before the end's record: a tick recorded it.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/rss_steady"

VHEAP_SAMPLE=64KiB VHEAP_RSS_INTERVAL=10 VHEAP_OUT=rss.vhcap VHEAP_QUIET=1 \
    LD_PRELOAD="$VHEAP_LIB" "$PROGS/rss_steady" >out.txt || die "rss_steady exited $?"
before=$(sed -n 's/.*rss_before=\([0-9]*\).*/\1/p' out.txt)
after=$(sed -n 's/.*rss_after=\([0-9]*\).*/\1/p' out.txt)
[ -n "$before" ] && [ -n "$after" ] || die "rss_steady printed no RSS: $(cat out.txt)"
[ $((after - before)) -ge $((7 << 20)) ] || die "the program's RSS grew by $((after - before)) B only"
vh_dump rss.vhcap rss.dump
grep ' rss ' rss.dump | sed 's/.*bytes=//' >rss.txt
n=$(wc -l <rss.txt)
[ "$n" -le 8 ] || die "$n RSS records for an RSS that moved once (at most 8 expected): $(tr '\n' ' ' <rss.txt)"
# every record but the last (the end's) that shows the jump was a tick's
ticks=$(head -n $((n - 1)) rss.txt | awk -v lo=$((after - (1 << 20))) '$1 >= lo' | wc -l)
[ "$ticks" -ge 1 ] || die "no tick recorded the 8 MiB jump ($before -> $after B): $(tr '\n' ' ' <rss.txt)"
echo "rss_sampled: $n RSS records, $ticks of them after the jump before the end ($(cat out.txt))"
