# small_stacks — threads with 16, 32 and 64 KiB stacks start under the shim
# (its per-thread state is mapped, not static TLS taken from their stacks)
# and their allocations are recorded call by call, in order.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/small_stacks"

profile_checked small_stacks
expect_line out.txt
expect_eq "dropped events" "$(st loss_dropped)" 0
echo "small stacks: $(st allocs) allocs, $(st frees) frees of the program's own"
