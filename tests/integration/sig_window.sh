# sig_window — a signal handler that reports blocks (custom-heap API, so no
# malloc in the handler) while the shim is inside its own calls into libc:
# a timer storm starts with each new thread, before its first allocation,
# where the shim asks pthread_getattr_np (which allocates) for the stack.
# Each handler event is recorded or counted as nested, never lost:
# recorded + nested == handled, with both unwinders.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/sig_window"

for unwind in libunwind fp; do
    rm -f cap.vhcap
    VHEAP_UNWIND=$unwind VHEAP_OUT=cap.vhcap VHEAP_QUIET=1 \
        timeout 120 env LD_PRELOAD="$VHEAP_LIB" "$PROGS/sig_window" 150 20 >out.txt ||
        die "sig_window ($unwind) exited $? (124: hung)"
    vh_dump cap.vhcap dump.txt
    vh_check out.txt dump.txt
    handled=$(sed -n 's/^handled //p' out.txt)
    heap=$(sed -n 's/^heap //p' out.txt)
    [ "$handled" -ge 150 ] || die "only $handled signals handled: nothing tested"
    recorded=$(awk -v h="$heap" '$3 == "alloc" && $4 == "heap=" h { n++ } END { print n + 0 }' dump.txt)
    nested=$(st loss_nested)
    expect_eq "handler events ($unwind): $recorded recorded + $nested nested" \
        "$((recorded + nested))" "$handled"
    echo "sig_window ($unwind): $handled handler events, $recorded recorded, $nested nested"
done
