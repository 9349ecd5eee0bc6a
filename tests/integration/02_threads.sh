# 02_threads — 16 threads hand blocks to each other through a queue. Totals
# are exact, each thread's allocations carry its own tid, every free comes
# after its allocation in the merged order (the checker fails on an
# allocation of an address that is still live, and a free that came too
# early would leave the block live and break the live counts), and blocks
# freed by one thread and reused by another show up as free-then-alloc.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/threads_xfer"

profile_checked threads_xfer
expect_line out.txt

# Per thread: the dump's tid for the thread's allocations is the tid the
# thread saw with gettid(), and its count is exact. 16 distinct tids.
grep '^thread ' out.txt | while read -r _ _ tid allocs; do
    tid=${tid#tid=}
    expect_eq "allocations of tid $tid" "$(st "tid_allocs_$tid")" "${allocs#allocs=}"
done || exit 1
expect_eq "distinct tids in the program output" \
    "$(sed -n 's/^thread .* tid=\([0-9]*\) .*/\1/p' out.txt | sort -u | wc -l)" 16

# Some address was freed by one thread and then allocated by another.
[ "$(st xthread_reuse)" -gt 0 ] || die "no address reused across threads (unexpected for glibc's tcache)"
# Every thread that recorded wrote a THREAD record; none lost.
expect_eq "dropped events" "$(st loss_dropped)" 0
expect_eq "stack table full" "$(st loss_stack_table_full)" 0
echo "threads: $(st allocs) allocs, $(st xthread_free) frees across threads, $(st xthread_reuse) reuses across threads"
