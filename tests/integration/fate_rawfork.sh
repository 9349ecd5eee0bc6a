# fate_rawfork — a child made by the raw fork system call runs no atfork
# handler: it must still never write into its parent's capture (before, the
# parent's capture was damaged, or held 332,190 allocations for its
# 200,001). The mode word's page is wiped in every child, so the child's
# first event finds a new pid and opens its own capture.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/fate"

VHEAP_OUT=cap.vhcap VHEAP_QUIET=1 timeout 120 env LD_PRELOAD="$VHEAP_LIB" \
    "$PROGS/fate" rawfork 100000 >out.txt || die "rawfork exited $?"
child=$(sed -n 's/^child=\([0-9]*\).*/\1/p' out.txt)
count() { # CAPTURE SIZE
    "$ANALYZE" dump "$1" >d.txt 2>e.txt || die "$1 does not read: $(cat e.txt)"
    awk -v s="size=$2" '$3 == "alloc" { for (i = 4; i <= NF; i++) if ($i == s) n++ }
                       END { print n + 0 }' d.txt
}
expect_eq "parent's 5001-byte allocations" "$(count cap.vhcap 5001)" 200000
expect_eq "child's allocations in the parent's capture" "$(count cap.vhcap 5003)" 0
[ -f "cap.vhcap.$child" ] || die "no capture for the child $child: $(ls)"
expect_eq "child's 5003-byte allocations" "$(count "cap.vhcap.$child" 5003)" 100000
expect_eq "parent's allocations in the child's capture" "$(count "cap.vhcap.$child" 5001)" 0
"$ANALYZE" dump "cap.vhcap.$child" | grep -q '^header .*flags=ended' || die "child: no END"
echo "raw fork: parent 200000, child 100000, each in its own capture"
