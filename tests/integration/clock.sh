# clock — record times (VHEAP_CLOCK). While one thread records, times come
# from the kernel's coarse clock, one of their own per record; the second
# thread's first event switches to the exact clock for good, and the
# capture header says where (precise_from). tests/programs/clock_switch:
# the first thread allocates N blocks alone, then a second thread frees
# each and allocates again (getting the same addresses back) while the first
# churns. Checked: nothing of the second thread before precise_from, every
# time of the first thread's lone part its own, and the merged order of the
# hand-over exact (each free of a live block, no reuse of a live address,
# nothing for the loader to settle). VHEAP_CLOCK=precise keeps the exact
# clock throughout; a bad value warns and keeps auto; a program that never
# starts a thread stays coarse to its end.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/clock_switch" "$PROGS/basic"

# header_kv DUMP KEY: a key=value of the dump's header line ("" if absent).
header_kv() { sed -n "/^header /{s/.* $2=\\([^ ]*\\).*/\\1/p;q}" "$1" | grep -v '^header '; }

profile cs.vhcap "$PROGS/clock_switch" >out.txt || die "clock_switch exited $?"
first=$(sed -n 's/.*first tid=\([0-9]*\).*/\1/p' out.txt)
second=$(sed -n 's/.*second tid=\([0-9]*\).*/\1/p' out.txt)
[ -n "$first" ] && [ -n "$second" ] || die "no tids in: $(cat out.txt)"
vh_dump cs.vhcap dump.txt
res=$(header_kv dump.txt coarse_clock_ns)
from=$(header_kv dump.txt precise_from)
[ -n "$res" ] && [ "$res" -gt 0 ] || die "auto clock: no coarse_clock_ns in $(sed -n 2p dump.txt)"
case $from in '' | never) die "two threads recorded, yet precise_from=$from" ;; esac

awk -v first="$first" -v second="$second" -v from="$from" '
$3 == "alloc" || $3 == "free" || $3 == "resize" {
    addr = ""
    for (i = 4; i <= NF; i++) if ($i ~ /^addr=/) addr = substr($i, 6)
    if ($2 == second && $1 < from) { print "second thread at " $1 " < " from; bad++ }
    if ($2 == first && $1 < from) { lone++; if ($1 in seen) dup++; seen[$1] = 1 }
    if ($3 == "alloc" && $2 == second && (addr in live)) { print "reuse of live " addr; bad++ }
    if ($3 == "free" && $2 == second && !(addr in live)) { print "free of " addr " not live"; bad++ }
    if ($3 == "alloc") live[addr] = 1
    if ($3 == "free") delete live[addr]
    if ($2 == second) nsecond++
}
END {
    if (lone < 2000) { print "only " lone " records of the first thread alone"; bad++ }
    if (dup) { print dup " records share a time with an earlier one"; bad++ }
    if (nsecond != 4000) { print nsecond " records of the second thread, want 4000"; bad++ }
    exit bad > 0
}' dump.txt || die "auto clock: the merged order is wrong (see above)"

"$ANALYZE" load cs.vhcap cs.db >/dev/null 2>&1 || die "load failed"
for k in reordered implicit_frees; do
    expect_eq "meta $k" "$(sqlite3 cs.db "SELECT value FROM meta WHERE key = '$k'")" 0
done
expect_eq "meta coarse_clock_ns" "$(sqlite3 cs.db "SELECT value FROM meta WHERE key = 'coarse_clock_ns'")" "$res"
expect_eq "meta precise_from" "$(sqlite3 cs.db "SELECT value FROM meta WHERE key = 'precise_from'")" "$from"

# --- VHEAP_CLOCK=precise: exact throughout, so the lone part's times differ
VHEAP_CLOCK=precise profile p.vhcap "$PROGS/clock_switch" >out.txt || die "exit $?"
vh_dump p.vhcap pdump.txt
expect_eq "precise: coarse_clock_ns" "$(header_kv pdump.txt coarse_clock_ns)" ""
expect_eq "precise: meta coarse_clock_ns" \
    "$("$ANALYZE" load p.vhcap p.db >/dev/null 2>&1 && sqlite3 p.db "SELECT value FROM meta WHERE key = 'coarse_clock_ns'")" 0

# --- a bad value: one warning, auto kept -------------------------------------
VHEAP_OUT=b.vhcap VHEAP_QUIET=1 VHEAP_CLOCK=fast LD_PRELOAD="$VHEAP_LIB" "$PROGS/basic" \
    >/dev/null 2>err.txt || die "basic exited $?"
grep -q 'ignoring VHEAP_CLOCK=fast (want auto or precise)' err.txt ||
    die "VHEAP_CLOCK=fast: stderr was: $(cat err.txt)"
vh_dump b.vhcap bdump.txt
# --- one thread only: coarse to the end --------------------------------------
expect_eq "one thread: precise_from" "$(header_kv bdump.txt precise_from)" never
echo "clock: coarse ${res} ns until ${from} ns, then exact"
