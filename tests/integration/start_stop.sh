# start_stop — recording switched from inside the program: vheap_stop,
# vheap_start, vheap_mark (vheap.h; one while paused lands too) and
# VHEAP_SIGNAL=SIGUSR2, with and
# without the program's own SIGUSR2 handler. The capture must hold exactly
# the blocks the program allocated inside its windows (7 x 2002 B by the
# API, 5 x 4004 B by the signal) and none of the outside ones; the
# program's handler still runs for each signal, and is said to share it;
# one installed with SA_RESETHAND runs once and the signal does not kill.
# Also: the program runs unchanged without the shim, and a VHEAP_SIGNAL
# that cannot be taken is refused with a warning.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/start_stop"

# sizes recorded: "SIZE:COUNT ..." sorted, of the program's phase sizes only
phase_counts() {
    vh_dump "$1" "$1.txt"
    awk '$3 == "alloc" { for (i = 4; i <= NF; i++) if ($i ~ /^size=/) {
             s = substr($i, 6); if (s % 1001 == 0 && s <= 5005) n[s]++ } }
         END { for (s in n) print s ":" n[s] }' "$1.txt" | sort -n | tr '\n' ' '
}

check_run() {  # NAME ARG
    VHEAP_SIGNAL=SIGUSR2 VHEAP_OUT="$1.vhcap" LD_PRELOAD="$VHEAP_LIB" \
        "$PROGS/start_stop" "$2" >"$1.out" 2>"$1.err" || die "$1: exit $? ($(cat "$1.err"))"
    expect_eq "$1: the capture's phase blocks" "$(phase_counts "$1.vhcap")" "2002:7 4004:5 "
    expect_eq "$1: vheap_recording after each switch" "$(cut -d' ' -f2-6 "$1.out")" "0 1 0 1 0"
    expect_eq "$1: WINDOW records (stop, start, stop, signal, signal)" "$(awk '$3 == "window"' "$1.vhcap.txt" | wc -l)" 5
    awk '$3 == "window" { on = ($4 == "recording=1") }
         $3 == "mark" { print (on ? "in" : "out") }' "$1.vhcap.txt" | tr '\n' ' ' >"$1.mark"
    expect_eq "$1: the marks (one while paused)" "$(cat "$1.mark")" "out in "
}

check_run plain none
expect_eq "no handler: handled" "$(sed -n 's/.*handled=//p' plain.out)" 0
check_run own handler
expect_eq "the program's handler ran for each signal" "$(sed -n 's/.*handled=//p' own.out)" 2
grep -q "handles signal 12 itself" own.err || die "no word that the program uses the signal: $(cat own.err)"
# SA_RESETHAND: the program's handler runs once, the signal stays the toggle
check_run oneshot oneshot
expect_eq "a one-shot handler ran once" "$(sed -n 's/.*handled=//p' oneshot.out)" 1

# the loaded DB has the start's, the API's and the signal's windows: the
# one from the start to the first vheap_stop holds no event, yet recording
# was on then (the program did not start paused: no VHEAP_START=paused)
"$ANALYZE" load own.vhcap own.db >/dev/null 2>load.err || die "load: $(cat load.err)"
expect_eq "windows in the DB (start, API, signal)" "$(sqlite3 own.db 'SELECT count(*) FROM windows')" 3
expect_eq "the first window starts at 0" "$(sqlite3 own.db 'SELECT min(start_time) FROM windows')" 0

# without the shim: the calls do nothing, the program's handler gets both
"$PROGS/start_stop" handler >bare.out || die "without the shim: exit $?"
expect_eq "without the shim" "$(cat bare.out)" "recording 0 0 0 0 0 handled=2"

# a signal that cannot be the switch: warned, default kept (no toggling)
VHEAP_SIGNAL=SIGSEGV VHEAP_OUT=bad.vhcap LD_PRELOAD="$VHEAP_LIB" \
    "$PROGS/start_stop" handler >bad.out 2>bad.err || die "VHEAP_SIGNAL=SIGSEGV: exit $?"
grep -q "ignoring VHEAP_SIGNAL=SIGSEGV" bad.err || die "no warning for SIGSEGV: $(cat bad.err)"
expect_eq "VHEAP_SIGNAL=SIGSEGV: only the API's window" "$(phase_counts bad.vhcap)" "2002:7 "
echo "start_stop: API and signal windows hold exactly the inside blocks; handler kept"
