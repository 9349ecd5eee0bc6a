# capture_forms — the shim writes capture format 4's forms where they fit,
# through its ring index (preload/internal.h), and every record still
# decodes to what the program did. tests/programs/reuse_forms logs each
# call (the dump is checked against it record by record) and counts the
# mallocs that got back the block freed just before and the frees of a
# block 8 to 63 allocations back. bench/capstat counts the records by
# form: an ALLOC_FREED for each such malloc (the index slot of a block just
# freed is its own), and FREE_FAR for at least half of those frees (the
# index may lose a block whose slot another took: bytes, not records).
# A format 3 shim writes neither.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/reuse_forms"

profile_checked reuse_forms
expect_line out.txt
reuse=$(sed -n 's/^forms reuse=\([0-9]*\) far=.*/\1/p' out.txt)
far=$(sed -n 's/^forms reuse=[0-9]* far=\([0-9]*\)$/\1/p' out.txt)
[ -n "$reuse" ] && [ -n "$far" ] || die "reuse_forms printed no counts: $(tail -n 2 out.txt)"
[ "$reuse" -gt 0 ] || die "no malloc got the block freed before it back (not glibc's tcache?)"
${CC:-cc} -O2 -I"$TOP" -D_GNU_SOURCE -std=gnu11 -o capstat "$TOP/bench/capstat.c" ||
    die "bench/capstat.c does not build"
./capstat --types cap.vhcap >types.txt || die "capstat cannot read cap.vhcap"
n() { awk -v t="type=$1" '$1 == t { print $2 }' types.txt | grep . || echo 0; }
freed=$(($(n 0x13) + $(n 0x14)))
farrec=$(n 0x16)
echo "capture forms: $reuse mallocs of the block just freed, $freed ALLOC_FREED records;" \
     "$far far frees, $farrec FREE_FAR records"
[ "$freed" -ge "$reuse" ] || die "ALLOC_FREED records: got $freed, want at least $reuse"
[ "$((farrec * 2))" -ge "$far" ] || die "FREE_FAR records: got $farrec, want at least $far / 2"
