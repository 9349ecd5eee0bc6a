# ondemand — recording switched off, on, off, on from outside while the
# program runs (VHEAP_START=paused, vheap-analyze ctl), with a mark: the
# capture holds allocations only inside the on windows, WINDOW records
# say when, the mark lands inside the first window, and the loaded DB
# reports the windows. ctl on a process without the shim says so, exit 1.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/growd"

VHEAP_START=paused VHEAP_OUT=cap.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" \
    "$PROGS/growd" 0 2 >out.txt &
pid=$!
trap 'kill -KILL $pid 2>/dev/null' EXIT
# No fixed delays: a loaded machine may run the program late. Each wait is
# for what the program did (bounded by the harness's timeout), and fails at
# once if the program died.
alive() { kill -0 $pid 2>/dev/null || die "growd exited: $(cat out.txt)"; }
until grep -q '^pid=' out.txt 2>/dev/null; do alive; sleep 0.01; done
# taken: the program acted on the last request (the header's word is back
# to none; a mark requested before it was recorded before it)
taken() {
    until "$ANALYZE" ctl status $pid >st.txt 2>&1 && grep -q 'request=none' st.txt; do
        alive; sleep 0.02
    done
}
# events N: more than N allocations and frees recorded so far
events() {
    until "$ANALYZE" dump cap.vhcap 2>/dev/null |
        awk -v n="$1" '$3 == "alloc" || $3 == "free" { e++ } END { exit !(e > n) }'; do
        alive; sleep 0.05
    done
}
sleep 0.3                                  # paused a while: nothing recorded
"$ANALYZE" ctl status $pid >st.txt || die "ctl status: $(cat st.txt)"
grep -q 'recording=0' st.txt || die "paused at start: $(cat st.txt)"
"$ANALYZE" ctl start $pid || die "ctl start"
taken
events 1000
"$ANALYZE" ctl mark phase2 $pid || die "ctl mark"
"$ANALYZE" ctl stop $pid || die "ctl stop"
taken
"$ANALYZE" ctl status cap.vhcap >st2.txt || die "ctl status by capture"
grep -q 'recording=0' st2.txt || die "after stop: $(cat st2.txt)"
sleep 0.3                                  # stopped a while: nothing recorded
"$ANALYZE" ctl start $pid || die "ctl start (again)"
taken
kill -KILL $pid
wait $pid 2>/dev/null
trap - EXIT
vh_dump cap.vhcap dump.txt
awk '$3 == "window" { w++; on = ($4 == "recording=1"); next }
     $3 == "mark" { if (!on) bad++; marks++; next }
     $3 == "alloc" || $3 == "free" { if (on) ev++; else bad++ }
     END { print w + 0, marks + 0, ev + 0, bad + 0 }' dump.txt >w.txt
read -r windows marks events bad <w.txt
expect_eq "WINDOW records (paused at start, on, off, on)" "$windows" 4
expect_eq "marks" "$marks" 1
expect_eq "events outside the on windows" "$bad" 0
[ "$events" -gt 1000 ] || die "only $events events inside the windows"
"$ANALYZE" load cap.vhcap db.sqlite >/dev/null 2>load.err || die "load: $(cat load.err)"
expect_eq "recording windows in the DB" "$(sqlite3 db.sqlite 'SELECT count(*) FROM windows')" 2
"$ANALYZE" ctl start $$ >bad.txt 2>&1 && die "ctl on a process without vheap succeeded"
[ $? -eq 1 ] || die "ctl on a process without vheap: exit $?"
echo "ondemand: $events events in 2 windows, mark inside, ctl refuses a plain process"
