# deep_recurse — a recursion's stacks, cut at VHEAP_DEPTH, are the frames a
# walk from nothing finds. deep_recurse (bench/recurse.c with frame
# pointers) allocates at every level of descents 200 to 599 deep, the same
# frames repeating; the default walker knows most of those walks from
# other depths (preload/cfi.c's relative walks), VHEAP_UNWIND=fp walks each
# stack anew by frame pointers.
# Run twice without address randomization, every allocation's stack cut at
# VHEAP_DEPTH must be the same frames in both captures, in the same order
# (an uncut one the fp walk's frames and maybe more: glibc has no frame
# pointers), and as many allocations as the program counted.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/deep_recurse"
need_cmd setarch
norand() { setarch "$(uname -m)" -R "$@"; }
for unwind in libunwind fp; do
    VHEAP_UNWIND=$unwind VHEAP_OUT=rec.$unwind.vhcap VHEAP_QUIET=1 \
        norand env LD_PRELOAD="$VHEAP_LIB" "$PROGS/deep_recurse" deep 16000 >out.$unwind.txt 2>err.txt ||
        die "deep_recurse ($unwind) exited $?: $(tail -n 3 err.txt)"
    vh_dump rec.$unwind.vhcap d.$unwind.txt
    # one line an allocation: its size and its stack's frames
    awk "$VH_AWK_LIB"'{ kv() }
        $3 == "stack" { S[F["id"]] = F["frames"] (("truncated" in W) ? " cut" : ""); next }
        $3 == "alloc" && F["heap"] == 0 { print F["size"], S[F["stack"]] }' d.$unwind.txt >s.$unwind.txt
done
want=$(sed -n 's/^recurse: deep allocs=\([0-9]*\) .*/\1/p' out.libunwind.txt)
[ -n "$want" ] || die "deep_recurse printed no count"
got=$(grep -c ' cut$' s.libunwind.txt)
[ "$got" -gt $((want / 2)) ] || die "only $got of $want stacks cut at VHEAP_DEPTH: not deep enough"
n=$(wc -l <s.fp.txt)
[ "$n" -ge "$want" ] || die "fp capture holds $n allocations, the program made $want"
expect_eq "allocations in both captures" "$(wc -l <s.libunwind.txt)" "$n"
# The fp walk's frames must begin the default walk's; where the fp walk was
# cut at VHEAP_DEPTH too, they are the same frames. (glibc has no frame
# pointers: an fp walk ends in __libc_start_call_main, where the default
# one goes on to _start.)
paste -d'|' s.fp.txt s.libunwind.txt | awk -F'|' '
    { same = $1 ~ / cut$/ ? $1 == $2 : substr($2, 1, length($1)) == $1 }
    !same { bad++; if (bad <= 3) print "line " NR ": fp " $1 " / default " $2 }
    $1 ~ / cut$/ { cut++ }
    END { if (cut < NR / 2) { print "only " cut " of " NR " fp stacks cut"; bad++ }
          exit bad > 0 }' >diff.txt ||
    die "stacks differ between the default walker and a frame-pointer walk from nothing: $(cut -c 1-300 diff.txt)"
