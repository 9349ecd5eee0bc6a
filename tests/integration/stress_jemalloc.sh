# stress_jemalloc — a program linked with libjemalloc, 8 threads using
# mallocx (aligned, zeroed), rallocx, xallocx, sdallocx and dallocx next to
# malloc/calloc/realloc/free, handing blocks across threads. Same output and
# exit code as bare (the program checks zeroing, alignment and contents
# itself); the capture holds exactly its allocations, frees (sized ones
# included) and in-place resizes, with jemalloc's usable sizes.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/stress_jemalloc"

vs_bare 300 sj "$PROGS/stress_jemalloc" 8 "${STRESS_JEMALLOC_ROUNDS:-20000}"
vh_dump sj.vhcap sj.dump
vh_check sj.out sj.dump
expect_line sj.out
expect_eq "dropped" "$(st loss_dropped)" 0
has_flag "$(st header_flags)" ended || die "capture not ended"
for f in mallocx rallocx xallocx sdallocx dallocx; do
    n=$(awk -v f="$f" '$3 != "stack" && $5 == "func=" f { n++ } END { print n + 0 }' sj.dump)
    [ "$n" -gt 0 ] || die "no $f records"
done
[ "$(st xthread_free)" -gt 0 ] || die "no block freed on another thread"
echo "stress_jemalloc: $(st allocs) allocs, $(st frees) frees ($(st xthread_free) across threads), $(st resizes) in place"
