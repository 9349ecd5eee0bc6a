# stress_cxx — C++ constructors and destructors that allocate: static
# objects before and after main, a function-local static, thread_local
# objects destroyed at thread exit and in exit(), an atexit handler. Same
# output and exit code as bare; the capture holds every one of those calls,
# call by call in the program's order (before main and after it included),
# and the END record comes after the last destructor.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/stress_cxx"

vs_bare 60 sx "$PROGS/stress_cxx"
grep -q '^result static destructors done' sx.out || die "no output from the last destructor"
vh_dump sx.vhcap sx.dump
vh_check sx.out sx.dump
expect_line sx.out
has_flag "$(st header_flags)" ended || die "capture not ended"
# The program's last free (in the last destructor) precedes END.
awk "$VH_AWK_LIB$VH_AWK_USER"'
    $3 == "alloc" && (F["stack"] in O) { OWN[F["addr"]] = 1; next }
    $3 == "free" && (F["addr"] in OWN) { last = $1; delete OWN[F["addr"]]; next }
    $3 == "end" { end = $1 }
    END { print last + 0, end + 0 }' sx.out sx.dump >sx.times
read -r last end <sx.times
[ "$end" -gt 0 ] || die "no END record"
[ "$end" -ge "$last" ] || die "the program freed at $last, after END at $end"
echo "stress_cxx: $(st evs) constructor/destructor calls recorded in order"
