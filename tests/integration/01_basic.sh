# 01_basic — every malloc-family entry point, checked call by call: realloc
# in place (RESIZE) and moving (FREE+ALLOC), realloc(NULL,n), realloc(p,0),
# free(NULL) not recorded, failed calls, alignments up to 2 MiB, usable.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/basic"

profile_checked basic

# Totals as the program counted them (and the ev sequence, checked inside
# vh_check record by record, in order).
expect_line out.txt
[ "$(st evs)" -gt 20 ] || die "too few program events in the capture: $(st evs)"
# The first frame of every stack of the program's direct calls is the
# return address in the USER function: the shim's own frames are skipped.
expect_eq "first frame in caller" "$(st first)" "$(( $(st allocs) + $(st failed) ))"
expect_eq "header pid" "$(st header_pid)" "$(sed -n 's/^pid=//p' out.txt)"
has_flag "$(st header_flags)" ended || die "header flags lack ended: $(st header_flags)"
expect_eq "end records" "$(st ended)" 1
# free(NULL) is never recorded (the checker also fails on any free of 0).
[ "$(grep -c ' free .*addr=0x0\b' dump.txt)" -eq 0 ] || die "a free of NULL was recorded"
# The dump trailer agrees with the records it printed.
expect_eq "trailer records" "$(st trailer | sed -n 's/^records=\([0-9]*\).*/\1/p')" "$(st records)"
echo "basic: $(st allocs) allocs, $(st frees) frees, $(st resizes) resizes of the program's own"
