# fate_limits — resource limits are the program's, not the shim's.
# RLIMIT_FSIZE: the capture never grows past it (before, SIGXFSZ killed the
# program mid-run, exit 153): recording stops with one warning, the program
# runs to its end, the capture reads, and the loss is counted.
# RLIMIT_AS: the program can allocate (nearly) as much as without the shim
# (before: 912 MiB of 1936 under ulimit -v 2000000, 16 of 288 under 300000):
# the capture's reservation is a quarter of the limit and is given back when
# the program runs out.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/fate"

# dash's ulimit -f counts 512-byte blocks: 6000 is 3 MB.
sh -c 'ulimit -f 6000; VHEAP_OUT=cap.vhcap LD_PRELOAD="$2" exec "$1" fsize 2000000' \
    sh "$PROGS/fate" "$VHEAP_LIB" >out.txt 2>err.txt
rc=$?
expect_eq "exit status under ulimit -f" "$rc" 0
grep -q 'file size limit (ulimit -f) was reached' err.txt || die "no warning: $(cat err.txt)"
size=$(stat -c %s cap.vhcap)
[ "$size" -le 3072000 ] || die "capture is $size bytes, past the limit"
"$ANALYZE" dump cap.vhcap >dump.txt || die "the capture does not read"
dropped=$(sed -n 's/^loss dropped=\([0-9]*\).*/\1/p' dump.txt)
[ "$dropped" -gt 0 ] || die "nothing counted as dropped"
grep -q '^header .*flags=.*exited' dump.txt || die "exit not noted: $(grep '^header' dump.txt)"
"$ANALYZE" summary cap.vhcap >sum.txt 2>sumerr.txt || die "summary: $(cat sumerr.txt)"
grep -q "events were not recorded: recording stopped early" sumerr.txt ||
    die "summary does not warn: $(cat sumerr.txt)"
if grep -q "did not exit cleanly" sumerr.txt; then die "summary: $(cat sumerr.txt)"; fi
echo "ulimit -f: exit 0, capture $size bytes, $dropped events dropped and counted"

for v in 2000000 300000; do
    bare=$(sh -c 'ulimit -v "$2"; exec "$1" vlimit' sh "$PROGS/fate" $v | sed -n 's/^mib=//p')
    shim=$(sh -c 'ulimit -v "$3"; VHEAP_OUT=capv.vhcap VHEAP_QUIET=1 LD_PRELOAD="$2" exec "$1" vlimit' \
        sh "$PROGS/fate" "$VHEAP_LIB" $v | sed -n 's/^mib=//p')
    rm -f capv.vhcap*
    # What the shim keeps mapped (capture chunks, its caches) is at most 12 MiB.
    [ "$shim" -ge $((bare - 12)) ] ||
        die "ulimit -v $v: $shim MiB with the shim, $bare without"
    echo "ulimit -v $v: $shim MiB with the shim, $bare without"
done
