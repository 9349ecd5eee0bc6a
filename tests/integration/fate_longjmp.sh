# fate_longjmp — Vere's timer: a 1 ms interval timer whose handler
# siglongjmps out to a sigsetjmp in the main loop, 2000 times, while the
# loop allocates in its own arena (vheap.h) — most of its time inside the
# shim. Every allocation that returned to the program is recorded (a jump
# may also land after an allocation was recorded but before it returned:
# at most one per jump), every free too, and nothing is nested or dropped:
# the handler ran after the shim's bookkeeping (preload/signals.c), never
# inside it. The timer runs 3 ticks past the 2000th jump, which the
# handler lets return (a late tick that jumped back into the ended loop
# made 2001 jumps once on a loaded machine). Before that design, the first jump that landed in the shim
# left its guard busy and every later event was dropped as nested.
# Then the same with the handler installed by a raw rt_sigaction system
# call, which the shim cannot hold back: jumps do leave the shim mid-way;
# the shim finds its guard (and any lock) stale at the next event, drops
# the half-written chunk and goes on. The program finishes, the capture
# reads without damage, resets are counted, and every allocation that
# returned is recorded but those counted as nested.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/fate"

run_one() { # UNWIND [raw]
    rm -f cap.vhcap
    mode=longjmp${2:+-raw}
    VHEAP_UNWIND=$1 VHEAP_OUT=cap.vhcap VHEAP_QUIET=1 \
        timeout 120 env LD_PRELOAD="$VHEAP_LIB" "$PROGS/fate" $mode 2000 >out.txt \
        || die "fate $mode ($1) exited $? (124: hung)"
    eval "$(tr ' ' '\n' <out.txt | grep -E '^(returned|freed|jumps)=')"
    [ "$jumps" -eq 2000 ] || die "$jumps jumps, not 2000"
    vh_dump cap.vhcap dump.txt
    awk '$1 == "loss" { print; next }
         $3 == "alloc" && / heap=1 / { a++ }
         $3 == "free" && / heap=1 / { f++ }
         $3 == "alloc" && / size=6500 / { after++ }
         END { print "counts", a + 0, f + 0, after + 0 }' dump.txt >counts.txt
    read -r _ alloc_rec free_rec after <<EOF2
$(grep '^counts' counts.txt)
EOF2
    loss=$(grep '^loss' counts.txt)
    nested=$(echo "$loss" | sed -n 's/.* nested=\([0-9]*\).*/\1/p')
    resets=$(echo "$loss" | sed -n 's/.* guard_resets=\([0-9]*\).*/\1/p')
    case $loss in *"dropped=0 "*) ;; *) die "events dropped ($1): $loss" ;; esac
    if [ -n "$2" ]; then
        [ "$resets" -gt 0 ] || die "raw ($1): no jump left the shim: nothing tested ($loss)"
    else
        expect_eq "nested ($1)" "$nested" 0
    fi
    [ $((alloc_rec + nested)) -ge "$returned" ] ||
        die "$mode $1: $alloc_rec arena allocations recorded + $nested nested, $returned returned to the program"
    [ "$alloc_rec" -le $((returned + jumps)) ] ||
        die "$1: $alloc_rec recorded, more than $returned returned + $jumps jumps"
    [ "$free_rec" -ge "$freed" ] || die "$1: $free_rec frees recorded, $freed done"
    expect_eq "allocations after the last jump ($1)" "$after" 100
    echo "$mode ($1): $jumps jumps, $returned allocations returned, $alloc_rec recorded; $loss"
}
run_one libunwind
run_one fp
run_one libunwind raw

# A handler read back with a raw rt_sigaction (the shim's trampoline) and
# given back through sigaction still runs the program's handler, once.
# (Bounded as every run here, 120 s: 20 s could run out on a loaded machine.)
VHEAP_OUT=r.vhcap VHEAP_QUIET=1 timeout 120 env LD_PRELOAD="$VHEAP_LIB" "$PROGS/fate" restore \
    >restore.txt 2>&1 || die "restore: exit $?: $(cat restore.txt)"
"$PROGS/fate" restore >/dev/null || die "restore fails without the shim"
