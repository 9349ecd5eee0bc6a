# stress_sigsegv — a program with its own SIGSEGV handler (as Vere has):
# write-protected arena pages fault on first write, the handler (on an
# alternate signal stack) unprotects them and sometimes allocates, while the
# program and a second thread allocate. The shim must neither fault itself
# (the handler would see a foreign address and the program would die) nor
# get in the way of the handler: same output and exit code as bare, and
# every allocation and free of the main thread, the handler's included, is
# in the capture in the program's order (a handler allocation is the
# program's by the USER frames of its stack: the unwinder must walk the
# signal stack). Both unwinders, or the one VHEAP_UNWIND names.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/stress_sigsegv"

run() { # UNWIND
    VHEAP_UNWIND=$1 vs_bare 120 "sv_$1" "$PROGS/stress_sigsegv" "${STRESS_SIGSEGV_ROUNDS:-30}"
    vh_dump "sv_$1.vhcap" "sv_$1.dump"
    vh_check "sv_$1.out" "sv_$1.dump"
    expect_line "sv_$1.out"
    expect_eq "$1: dropped" "$(st loss_dropped)" 0
    expect_eq "$1: nested" "$(st loss_nested)" 0
    faults=$(sed -n 's/^result .* faults=\([0-9]*\).*/\1/p' "sv_$1.out")
    [ "${faults:-0}" -gt 1000 ] || die "$1: only ${faults:-0} faults handled"
    echo "stress_sigsegv ($1): $faults faults handled by the program," \
         "$(st allocs) allocations recorded in order"
}
for u in ${VHEAP_UNWIND:-libunwind fp}; do
    run "$u"
done
