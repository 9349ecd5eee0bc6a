# stress_churn — 3000 threads created and exiting constantly (24 alive at a
# time, a third detached), each freeing one block from a thread-specific
# data destructor after the shim's own exit hook ran. Same output and exit
# code as bare; the capture holds every allocation and free exactly, from
# as many distinct threads, in chunks that exiting threads hand on (a reused
# chunk must never make time go backwards: the checker fails on that).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/stress_churn"

run() { # NAME THREADS
    vs_bare 300 "$1" "$PROGS/stress_churn" "$2" 24
    vh_dump "$1.vhcap" "$1.dump"
    vh_check "$1.out" "$1.dump"
    expect_line "$1.out"
    expect_eq "$1: dropped events" "$(st loss_dropped)" 0
    expect_eq "$1: nested events" "$(st loss_nested)" 0
    has_flag "$(st header_flags)" ended || die "$1: capture not ended: flags $(st header_flags)"
    [ "$(st tids)" -gt $(($2 * 9 / 10)) ] || die "$1: only $(st tids) threads allocated"
    exits=$(awk '$3 == "thread_exit" { n++ } END { print n + 0 }' "$1.dump")
    [ "$exits" -ge "$2" ] || die "$1: $exits thread_exit records for $2 threads"
    echo "$1: $2 threads, $(st allocs) allocs, $(st frees) frees, $exits thread exits," \
         "$(st header_chunks) chunks"
}
run default 3000
VHEAP_CHUNK_SIZE=64KiB run small_chunks 1500
