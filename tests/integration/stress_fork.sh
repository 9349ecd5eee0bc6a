# stress_fork — fork in a loop (from two threads) while four threads keep
# allocating: no hang, same output and exit code as bare, and every child has
# its own complete capture: named for its pid, ppid = the parent, flag
# forked, ended exactly when the child left through exit(), and holding
# exactly the child's own allocations and frees (not the parent's, not the
# busy threads' that do not exist in the child).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/stress_fork"

forks=${STRESS_FORKS:-60}
vs_bare 300 sf "$PROGS/stress_fork" "$forks"
expect_eq "result" "$(cat sf.out.cmp)" "result forks=$forks children_ok=$forks"

vh_dump sf.vhcap sf.dump
vh_check sf.out sf.dump
parent=$(st header_pid)
has_flag "$(st header_flags)" ended || die "parent capture not ended"

n=0
grep '^expect pid=' sf.out >children.txt
expect_eq "children that reported" "$(wc -l <children.txt)" "$forks"
while read -r _ pid how rest; do
    pid=${pid#pid=} how=${how#exit=}
    cap=sf.vhcap.$pid
    user=${rest##*user=}
    printf 'user lo=%s hi=%s\nexpect %s\n' "${user%%:*}" "${user#*:}" "${rest% user=*}" >"child.$pid.out"
    vh_dump "$cap" "child.$pid.dump"
    vh_check "child.$pid.out" "child.$pid.dump"
    expect_line "child.$pid.out"
    expect_eq "child $pid: header pid" "$(st header_pid)" "$pid"
    expect_eq "child $pid: header ppid" "$(st header_ppid)" "$parent"
    expect_eq "child $pid: dropped" "$(st loss_dropped)" 0
    has_flag "$(st header_flags)" forked || die "child $pid: flags $(st header_flags) lack forked"
    if [ "$how" = 0 ]; then
        has_flag "$(st header_flags)" ended || die "child $pid left by exit(): capture not ended"
    else
        has_flag "$(st header_flags)" ended && die "child $pid left by _exit(): capture says ended"
    fi
    rm -f "child.$pid.dump" "$cap"
    n=$((n + 1))
done <children.txt || exit 1
expect_eq "children checked" "$n" "$forks"
left=$(ls sf.vhcap.* 2>/dev/null | wc -l)
expect_eq "captures of no child" "$left" 0
echo "stress_fork: $forks children, each with its own complete capture"
