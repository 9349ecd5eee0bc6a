# sig_window — signal handlers that report blocks (custom-heap API, so no
# malloc in the handler) while the shim is inside a window where it passes
# allocator calls through as its own or the allocator's:
# - sig_window: a timer storm starts with each new thread, before its first
#   allocation, where the shim asks pthread_getattr_np (which allocates)
#   for the stack;
# - cxx_sig_window: the thread loops over new[]/delete[], so signals land
#   inside the real C++ operator, whose own malloc/free the shim passes
#   through; each new[] and delete[] must still be recorded exactly once.
# Each handler event is recorded or counted as nested, never lost:
# recorded + nested == handled, with both unwinders.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/sig_window" "$PROGS/cxx_sig_window"

# window PROGRAM ARGS...: runs it under both unwinders and checks the
# handler's events; leaves the last dump in dump.txt and output in out.txt.
window() {
    prog=$1
    shift
    for unwind in libunwind fp; do
        rm -f cap.vhcap
        VHEAP_UNWIND=$unwind VHEAP_OUT=cap.vhcap VHEAP_QUIET=1 \
            timeout 120 env LD_PRELOAD="$VHEAP_LIB" "$PROGS/$prog" "$@" >out.txt ||
            die "$prog ($unwind) exited $? (124: hung)"
        vh_dump cap.vhcap dump.txt
        vh_check out.txt dump.txt
        handled=$(sed -n 's/^handled //p' out.txt)
        heap=$(sed -n 's/^heap //p' out.txt)
        [ "$handled" -ge 100 ] || die "$prog: only $handled signals handled: nothing tested"
        recorded=$(awk -v h="$heap" '$3 == "alloc" && $4 == "heap=" h { n++ } END { print n + 0 }' dump.txt)
        nested=$(st loss_nested)
        expect_eq "$prog handler events ($unwind): $recorded recorded + $nested nested" \
            "$((recorded + nested))" "$handled"
        echo "$prog ($unwind): $handled handler events, $recorded recorded, $nested nested"
        [ "$prog" = cxx_sig_window ] || continue
        news=$(sed -n 's/^news //p' out.txt)
        arr=$(awk '$3 == "alloc" && / func=operator_new_array / { n++ } END { print n + 0 }' dump.txt)
        del=$(awk '$3 == "free" && / func=operator_delete_array( |$)/ { n++ } END { print n + 0 }' dump.txt)
        expect_eq "new[] recorded ($unwind)" "$arr" "$news"
        expect_eq "delete[] recorded ($unwind)" "$del" "$news"
    done
}
window sig_window 150 20
window cxx_sig_window 300000 20
