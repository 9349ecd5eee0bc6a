# fate_exit — a SIGTERM handler calls exit() while the program allocates
# (one thread, then three): exit runs the shim's own exit path from inside
# the handler. Hundreds of runs, each bounded by a timeout: none may hang
# (before, 2-5 % did: the handler's exit waited for the chunk lock that the
# thread it interrupted held), each exits 0, and each capture reads whole
# with its END record.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/fate"

runs=${FATE_EXIT_RUNS:-150}
hangs=0 bad=0 n=0
for threads in 1 3; do
    i=0
    while [ $i -lt "$runs" ]; do
        i=$((i + 1)); n=$((n + 1))
        rm -f cap.vhcap ready
        # Small chunks: a claim (the chunk lock) every few thousand events.
        VHEAP_CHUNK_SIZE=64KiB VHEAP_OUT=cap.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" \
            "$PROGS/fate" exitsig $threads >ready &
        pid=$!
        while [ ! -s ready ]; do sleep 0.001; done
        # A delay of 0-9 ms, so the signal lands all over the allocation path.
        sleep "0.00$((i % 10))"
        kill -TERM $pid
        # Wait up to 60 s for it to exit: a deadlock never ends, while a
        # loaded machine (load 9 on 2 cores) can take seconds to run an exit.
        w=0
        while kill -0 $pid 2>/dev/null && [ $w -lt 6000 ]; do sleep 0.01; w=$((w + 1)); done
        if kill -0 $pid 2>/dev/null; then
            hangs=$((hangs + 1))
            kill -KILL $pid
            wait $pid 2>/dev/null
            continue
        fi
        wait $pid
        rc=$?
        if [ $rc -ne 0 ]; then
            bad=$((bad + 1)); echo "run $n: exit $rc" >&2; continue
        fi
        "$ANALYZE" dump cap.vhcap >dump.txt 2>dump.err || {
            bad=$((bad + 1)); echo "run $n: dump failed: $(cat dump.err)" >&2; continue; }
        grep -q '^header .*flags=ended' dump.txt || {
            bad=$((bad + 1)); echo "run $n: no END: $(grep '^header' dump.txt)" >&2; }
    done
done
echo "exit in a handler: $n runs, $hangs hung, $bad failed"
[ $hangs -eq 0 ] || die "$hangs of $n runs hung"
[ $bad -eq 0 ] || die "$bad of $n runs failed"
