# 07_sigkill — SIGKILL at a random point: every allocation and free the
# program saw return before the kill (its progress file) is in the capture,
# per thread in the same order, and the capture reads without damage.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/sigkill_prog"

VHEAP_OUT=cap.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/sigkill_prog" progress.txt >out.txt &
pid=$!
# Wait for the threads to run (however late a loaded machine starts them:
# the harness bounds the test), then kill 100..899 ms later.
lines() { if [ -f progress.txt ]; then wc -l <progress.txt; else echo 0; fi; }
while [ "$(lines)" -lt 200 ]; do
    kill -0 $pid 2>/dev/null || die "sigkill_prog ended before 200 events: $(cat out.txt)"
    sleep 0.1
done
ms=$(( $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 800 + 100 ))
sleep "$(printf '0.%03d' "$ms")"
kill -KILL $pid
wait $pid
rc=$?
expect_eq "exit status (killed)" "$rc" 137

vh_dump cap.vhcap dump.txt
vh_check out.txt dump.txt
has_flag "$(st header_flags)" ended && die "a killed program's capture says ended"
[ "$(st allocs)" -gt 0 ] || die "no allocations in the capture"

# Per thread, the program's progress lines are the first events of that
# thread's own allocations and frees in the capture; the capture may hold
# one more (recorded, but killed before the line was written).
awk "$VH_AWK_LIB"'
    FILENAME == ARGV[1] { if ($1 == "user") { lo = hex(substr($2, 4)); hi = hex(substr($3, 4)) }; next }
    FILENAME == ARGV[2] {
        np[$2]++; P[$2, np[$2]] = ($1 == "a") ? "a " $3 " " $4 : "f " $3; next }
    { kv() }
    $3 == "stack" { split(F["frames"], fr, ","); for (i in fr) if (hex(fr[i]) >= lo && hex(fr[i]) <= hi) O[F["id"]] = 1; next }
    $3 == "alloc" && (F["stack"] in O) { nc[$2]++; C[$2, nc[$2]] = "a " F["addr"] " " F["size"]; OURS[F["addr"]] = 1; next }
    $3 == "free" && (F["addr"] in OURS) { delete OURS[F["addr"]]; nc[$2]++; C[$2, nc[$2]] = "f " F["addr"] }
    END {
        for (t in np) {
            threads++; total += np[t]
            if (nc[t] < np[t] || nc[t] > np[t] + 1) {
                print "thread " t ": program saw " np[t] " events return, capture has " nc[t] + 0; bad = 1 }
            for (i = 1; i <= np[t] && !bad; i++)
                if (P[t, i] != C[t, i]) { print "thread " t " event " i ": program \"" P[t, i] "\", capture \"" C[t, i] "\""; bad = 1 }
        }
        if (threads != 4) { print threads + 0 " threads in the progress file"; bad = 1 }
        if (!bad) print total " events before the kill all present"
        exit bad
    }' out.txt progress.txt dump.txt >result.txt || die "$(cat result.txt)"
cat result.txt
