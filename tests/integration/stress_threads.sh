# stress_threads — 64 threads allocate, resize and free for a sustained run,
# handing blocks to each other so frees cross threads. Under the shim the
# program's own checks pass, its output and exit code are the bare run's,
# and the capture holds exactly what it did: counts, bytes, live blocks, no
# address allocated twice while live, time order, nothing dropped.
# By hand: STRESS_THREADS=N, STRESS_ROUNDS=N, or STRESS_SECONDS=N (each run
# goes on N seconds; the check then reads about a million calls a second).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/stress_threads"

threads=${STRESS_THREADS:-64}
run() { # NAME ROUNDS
    vs_bare 300 "$1" "$PROGS/stress_threads" "$threads" "$2"
    vh_dump "$1.vhcap" "$1.dump"
    vh_check "$1.out" "$1.dump"
    expect_line "$1.out"
    expect_eq "$1: dropped events" "$(st loss_dropped)" 0
    expect_eq "$1: nested events" "$(st loss_nested)" 0
    expect_eq "$1: stack table full" "$(st loss_stack_table_full)" 0
    has_flag "$(st header_flags)" ended || die "$1: capture not ended: flags $(st header_flags)"
    [ "$(st tids)" -ge "$threads" ] || die "$1: allocations from $(st tids) threads, want >= $threads"
    [ "$(st xthread_free)" -gt 0 ] || die "$1: no block freed by another thread than its allocator"
    echo "$1: $(st allocs) allocs, $(st frees) frees ($(st xthread_free) across threads)," \
         "$(st resizes) in place, $(st tids) threads, $(st header_chunks) chunks"
    rm -f "$1.dump" "$1.vhcap"
}
run default "${STRESS_ROUNDS:-8000}"
# Small chunks: threads claim new chunks all the time, racing each other;
# and the frame-pointer walker.
VHEAP_CHUNK_SIZE=64KiB VHEAP_UNWIND=fp run small_chunks "${STRESS_ROUNDS:-3000}"
