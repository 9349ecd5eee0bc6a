# cxx_sig_window — signals whose handler reports blocks (custom-heap API)
# arriving while the real C++ operator new/delete runs, inside the window in
# which the shim passes the operator's own malloc/free through. Each handler
# event is recorded or counted as nested, never lost (recorded + nested ==
# handled), and each new[]/delete[] is recorded exactly once.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/cxx_sig_window"

for unwind in libunwind fp; do
    rm -f cap.vhcap
    VHEAP_UNWIND=$unwind VHEAP_OUT=cap.vhcap VHEAP_QUIET=1 \
        timeout 120 env LD_PRELOAD="$VHEAP_LIB" "$PROGS/cxx_sig_window" 300000 20 >out.txt ||
        die "cxx_sig_window ($unwind) exited $? (124: hung)"
    vh_dump cap.vhcap dump.txt
    vh_check out.txt dump.txt
    handled=$(sed -n 's/^handled //p' out.txt)
    heap=$(sed -n 's/^heap //p' out.txt)
    news=$(sed -n 's/^news //p' out.txt)
    [ "$handled" -ge 100 ] || die "only $handled signals handled: nothing tested"
    recorded=$(awk -v h="$heap" '$3 == "alloc" && $4 == "heap=" h { n++ } END { print n + 0 }' dump.txt)
    nested=$(st loss_nested)
    expect_eq "handler events ($unwind): $recorded recorded + $nested nested" \
        "$((recorded + $nested))" "$handled"
    arr=$(awk '$3 == "alloc" && / func=operator_new_array / { n++ } END { print n + 0 }' dump.txt)
    del=$(awk '$3 == "free" && / func=operator_delete_array( |$)/ { n++ } END { print n + 0 }' dump.txt)
    expect_eq "new[] recorded ($unwind)" "$arr" "$news"
    expect_eq "delete[] recorded ($unwind)" "$del" "$news"
    echo "cxx_sig_window ($unwind): $handled handler events, $recorded recorded, $nested nested"
done
