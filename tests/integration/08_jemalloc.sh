# 08_jemalloc — a program linked with libjemalloc (its malloc replaces
# glibc's) using malloc/calloc/realloc and jemalloc's mallocx, rallocx,
# xallocx, sdallocx, dallocx: runs without crashing, and the capture matches
# call by call, with jemalloc's usable sizes.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/jemalloc_user"

profile_checked jemalloc_user
# live_bytes depends on the size recorded for xallocx (see the program).
sed 's/ live_bytes=[0-9]*//' out.txt >expect.txt
expect_line expect.txt
expect_eq "first frame in caller" "$(st first)" "$(( $(st allocs) + $(st failed) ))"
has_flag "$(st header_flags)" ended || die "capture not ended"
echo "jemalloc: $(st evs) events match"
