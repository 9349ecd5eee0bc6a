# libc_state — what glibc keeps for the process's life is not a leak of the
# program's: `summary`'s "total memory leaked" and "suppressed leaks" are
# heaptrack_print's, side by side, on heaptrack's libc_leaks test
# (gmtime_r + strftime: 52 B of tzset state, 0 leaked; before, vheap said
# 52 B leaked) and on a program that adds nss, stdio's buffer and a real
# leak of its own (which both still count).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/glibc_state"
need_cmd heaptrack heaptrack_print

# value FILE LABEL: the size after "LABEL: " (heaptrack's 1000-based format,
# which summary's table shares), "0B" when the line is absent (summary hides
# a zero suppressed line).
value() {
    v=$(sed -n "s/^$2: \([^ ]*\).*/\1/p" "$1" | head -n 1)
    echo "${v:-0B}"
}

for mode in time mixed; do
    profile "$PWD/$mode.vhcap" "$PROGS/glibc_state" "$mode" >/dev/null ||
        die "glibc_state $mode failed under vheap"
    "$ANALYZE" summary "$mode.vhcap" >"$mode.vh.txt" 2>"$mode.vh.err" ||
        die "summary $mode: $(cat "$mode.vh.err")"
    heaptrack -o "$PWD/$mode.ht" "$PROGS/glibc_state" "$mode" >"$mode.ht.log" 2>&1 ||
        die "glibc_state $mode failed under heaptrack: $(tail -3 "$mode.ht.log")"
    heaptrack_print "$mode.ht.zst" >"$mode.ht.txt" 2>&1 || die "heaptrack_print $mode failed"
    for label in "total memory leaked" "suppressed leaks"; do
        vh=$(value "$mode.vh.txt" "$label") ht=$(value "$mode.ht.txt" "$label")
        echo "$mode: $label: vheap $vh, heaptrack $ht"
        expect_eq "$mode: $label (vheap, heaptrack)" "$vh" "$ht"
    done
done
# what the programs know: time leaks nothing of its own; mixed its 1234 B
expect_eq "time: leaked" "$(value time.vh.txt "total memory leaked")" "0B"
need_cmd sqlite3
sqlite3 mixed.vhcap.sqlite "SELECT count(*) FROM leaks WHERE size = 1234" >n.txt ||
    die "mixed: reading its leaks failed"
[ "$(cat n.txt)" -ge 1 ] || die "mixed: its own 1234-byte block is not listed as leaked"
