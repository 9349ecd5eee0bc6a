# reach_ondemand — `vheap-analyze ctl reach PID` scans a running program:
# reach_ondemand holds a reachable block (4001), a lost one (4002) and a
# lost one (4003) pointing to another (4004, indirectly lost), is scanned,
# then frees the lost ones and exits. A block (4005) whose only pointer is
# on a page mprotected away is lost; the scan steps over a 64 GiB PROT_NONE
# reservation and a guard page (not roots: never read). Scan 1's snapshot has the five with those classes
# (`leaks --scan 1`); at exit 4001 is live, reachable, and 4005 lost.
# Then bad requests: a scan that does not exist, a bad --scan, a scan of a
# sampled program (refused). Last, the program exits from another thread
# while its scan's snapshot child is stopped: the exit is not held up nor
# changed (status 5), and the unfinished scan is not in the database.
. "$TOP/tests/lib.sh"
need_cmd sqlite3
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/reach_ondemand"

pid=
child=
cleanup() {
    [ -n "$child" ] && kill -KILL "$child" 2>/dev/null
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
}
trap cleanup EXIT

# start [ARGS]: the program in the background, once it said "ready"
start() {
    rm -f go exit-now out.txt
    env VHEAP_OUT="$PWD/$cap" VHEAP_QUIET=1 ${extra:-} LD_PRELOAD="$VHEAP_LIB" \
        "$PROGS/reach_ondemand" "$@" >out.txt &
    pid=$!
    i=0
    until grep -q '^ready' out.txt 2>/dev/null; do
        i=$((i + 1))
        [ $i -lt 3000 ] || die "the program never said ready"
        kill -0 $pid 2>/dev/null || die "the program ended early"
        sleep 0.02
    done
}

# scans_done CAPTURE: REACH_END records of scans on request in it so far
scans_done() { "$ANALYZE" dump "$1" 2>/dev/null | awk '$3 == "reach_end"' | grep -c .; }

classes() {
    sqlite3 "$1" "SELECT group_concat(size || ':' || coalesce(class, 'none'), ' ') FROM
                  (SELECT size, class FROM $2 AND size BETWEEN 4001 AND 4005 ORDER BY size)"
}

cap=run.vhcap
start
"$ANALYZE" ctl reach $pid >ctl.out || die "ctl reach failed: $(cat ctl.out)"
i=0
until [ "$(scans_done $cap)" -ge 1 ]; do
    i=$((i + 1))
    [ $i -lt 3000 ] || die "the scan asked for never ended"
    sleep 0.02
done
touch go
wait $pid
rc=$?
pid=
expect_eq "exit status" "$rc" 0
"$ANALYZE" load -q $cap run.db || die "load failed"
expect_eq "scans" "$(sqlite3 run.db 'SELECT group_concat(scan || ":" || status, " ") FROM
                                    (SELECT scan, status FROM reach ORDER BY scan)')" "0:done 1:done"
expect_eq "scan 1's classes" "$(classes run.db 'reach_blocks WHERE scan = 1')" \
    "4001:0 4002:3 4003:3 4004:2 4005:3"
expect_eq "classes at exit" "$(classes run.db 'leaks WHERE 1')" "4001:0 4005:3"
"$ANALYZE" leaks run.db --scan 1 --class lost --format csv >lost.csv || die "leaks --scan 1 failed"
expect_eq "leaks --scan 1 --class lost: bytes" \
    "$(awk -F, 'NR > 1 && $9 == "lost" { s += $4 } END { print s + 0 }' lost.csv)" 12010

"$ANALYZE" leaks run.db --scan 2 >/dev/null 2>err.txt
expect_eq "leaks --scan 2 (none): exit" "$?" 1
grep -q 'no such scan' err.txt || die "leaks --scan 2 says: $(cat err.txt)"
"$ANALYZE" leaks run.db --scan 0 >/dev/null 2>&1
expect_eq "leaks --scan 0: exit" "$?" 2
"$ANALYZE" leaks run.db --scan 1 --growth >/dev/null 2>&1
expect_eq "leaks --scan with --growth: exit" "$?" 2

cap=sampled.vhcap extra=VHEAP_SAMPLE=64KiB
start
"$ANALYZE" ctl reach $pid >/dev/null 2>err.txt
expect_eq "ctl reach on a sampled program: exit" "$?" 1
grep -q 'sampled' err.txt || die "ctl reach on a sampled program says: $(cat err.txt)"
touch go
wait $pid
pid=

# exit while the scan's snapshot is stopped
cap=exit.vhcap extra=
start exit
"$ANALYZE" ctl reach $pid >/dev/null || die "ctl reach failed"
i=0
until child=$(cat /proc/$pid/task/*/children 2>/dev/null | tr -s ' \n' ' ' | sed 's/ *$//') &&
    [ -n "$child" ]; do
    i=$((i + 1))
    [ $i -lt 3000 ] || die "no snapshot child appeared"
    sleep 0.01
done
kill -STOP $child 2>/dev/null
touch exit-now
timeout 60 sh -c "while kill -0 $pid 2>/dev/null; do sleep 0.05; done" ||
    die "the program's exit waited for a stopped scan"
wait $pid
rc=$?
pid=
expect_eq "exit status while scanned" "$rc" 5
"$ANALYZE" load -q $cap exit.db || die "load failed"
expect_eq "an unfinished scan is not a scan" "$(sqlite3 exit.db 'SELECT count(*) FROM reach_blocks')" 0
echo "reach_ondemand: scanned while running, classes as made; bad requests refused"
