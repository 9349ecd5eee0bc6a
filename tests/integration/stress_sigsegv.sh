# stress_sigsegv — a program with its own SIGSEGV handler (as Vere has):
# write-protected arena pages fault on first write, the handler (on an
# alternate signal stack) unprotects them and sometimes allocates, while the
# program and a second thread allocate. The shim must neither fault itself
# (the handler would see a foreign address and the program would die) nor
# get in the way of the handler: same output and exit code as bare, and
# every allocation and free of the main thread, the handler's included, is
# in the capture in the program's order.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/stress_sigsegv"

vs_bare 120 sv "$PROGS/stress_sigsegv" "${STRESS_SIGSEGV_ROUNDS:-30}"
vh_dump sv.vhcap sv.dump
vh_check sv.out sv.dump
expect_line sv.out
expect_eq "dropped" "$(st loss_dropped)" 0
expect_eq "nested" "$(st loss_nested)" 0
faults=$(sed -n 's/^result .* faults=\([0-9]*\).*/\1/p' sv.out)
[ "${faults:-0}" -gt 1000 ] || die "only ${faults:-0} faults handled"
echo "stress_sigsegv: $faults faults handled by the program, $(st allocs) allocations recorded in order"
