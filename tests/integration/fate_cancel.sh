# fate_cancel — pthread_cancel of a worker that only calls malloc and free
# (neither is a cancellation point): the worker lives on and returns by
# itself. Before, the shim's own pread and fallocate acted on the pending
# cancel and the worker died inside malloc. Its allocations are recorded.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/fate"

VHEAP_OUT=cap.vhcap VHEAP_QUIET=1 VHEAP_CHUNK_SIZE=64KiB \
    timeout 60 env LD_PRELOAD="$VHEAP_LIB" "$PROGS/fate" cancel >out.txt ||
    die "the worker was cancelled inside the shim (exit $?): $(cat out.txt)"
grep -q 'result=returned' out.txt || die "$(cat out.txt)"
vh_dump cap.vhcap dump.txt
n=$(awk '$3 == "alloc" { n++ } END { print n + 0 }' dump.txt)
[ "$n" -gt 1000 ] || die "only $n allocations recorded"
echo "cancel: $(cat out.txt); $n allocations recorded"
