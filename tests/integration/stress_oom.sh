# stress_oom — allocations that fail. calloc and reallocarray overflow,
# impossible malloc/realloc sizes, posix_memalign with invalid alignments
# (EINVAL, *out and errno untouched) and impossible sizes: the program sees
# exactly what it sees bare, and the capture holds each call in order, the
# failures as failed allocations. Then the same program under `ulimit -v`
# exhausts its address space: malloc returns NULL (passed through, recorded
# as failed), calloc, realloc, posix_memalign and aligned_alloc fail too
# while it is full, and everything works again after the frees; the capture
# matches call by call and lost nothing.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/stress_oom"

check() { # NAME
    vh_dump "$1.vhcap" "$1.dump"
    vh_check "$1.out" "$1.dump"
    expect_line "$1.out"
    expect_eq "$1: dropped" "$(st loss_dropped)" 0
    expect_eq "$1: stack table full" "$(st loss_stack_table_full)" 0
    has_flag "$(st header_flags)" ended || die "$1: capture not ended"
    if grep -q 'WRONG' "$1.out"; then die "$1: $(grep WRONG "$1.out" | head -n 3)"; fi
}

vs_bare 60 edges "$PROGS/stress_oom"
check edges
echo "edges: $(st failed) failed calls recorded as failed, in order"

# 1 GiB of address space: the shim's capture reservation still fits (it
# asks for less when it must), the program's blocks fill the rest.
(ulimit -v 1048576 && vs_bare 120 exhaust "$PROGS/stress_oom" exhaust) || exit 1
check exhaust
[ "$(st failed)" -ge 10 ] || die "exhaust: only $(st failed) failed allocations recorded"
echo "exhaust: $(st allocs) allocations ($(st bytes) bytes) until the address space ran out," \
     "$(st failed) failed ones recorded"
