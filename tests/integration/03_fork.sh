# 03_fork — fork without exec: the child continues into its own capture
# (named with its pid, header ppid = the parent, flag forked) and each
# capture holds exactly its own process's allocations. Run twice: with %p in
# VHEAP_OUT, and without (the child's file gets ".<pid>" appended).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/fork_child"

check_pair() { # PARENT_CAPTURE CHILD_CAPTURE
    sed -n 's/^parent //p' out.txt >parent.out
    sed -n 's/^child //p' out.txt >child.out
    vh_dump "$1" parent.dump
    vh_check parent.out parent.dump
    expect_line parent.out
    expect_eq "parent pid" "$(st header_pid)" "$ppid"
    has_flag "$(st header_flags)" forked && die "parent capture flagged forked"
    has_flag "$(st header_flags)" ended || die "parent capture not ended"

    vh_dump "$2" child.dump
    vh_check child.out child.dump
    expect_line child.out
    expect_eq "child pid" "$(st header_pid)" "$cpid"
    expect_eq "child header ppid" "$(st header_ppid)" "$ppid"
    has_flag "$(st header_flags)" forked || die "child capture lacks forked: $(st header_flags)"
    has_flag "$(st header_flags)" ended || die "child capture not ended"
    # The child re-emits the module list, so its stacks can be symbolized.
    [ "$(st modules)" -gt 0 ] || die "child capture has no module records"
    grep -q ' module .* main$' child.dump || die "child capture lacks the main executable module"
}

profile 'cap.%p.vhcap' "$PROGS/fork_child" >out.txt || die "fork_child exited $?"
ppid=$(sed -n 's/^parent pid=\([0-9]*\) .*/\1/p' out.txt)
cpid=$(sed -n 's/^parent pid=[0-9]* child=\([0-9]*\)$/\1/p' out.txt)
[ -n "$ppid" ] && [ -n "$cpid" ] || die "no pids in the program output"
expect_eq "captures" "$(ls cap.*.vhcap | wc -l)" 2
check_pair "cap.$ppid.vhcap" "cap.$cpid.vhcap"

rm -f ./*.vhcap*
profile fixed.vhcap "$PROGS/fork_child" >out.txt || die "fork_child exited $?"
ppid=$(sed -n 's/^parent pid=\([0-9]*\) .*/\1/p' out.txt)
cpid=$(sed -n 's/^parent pid=[0-9]* child=\([0-9]*\)$/\1/p' out.txt)
expect_eq "captures without %p" "$(ls fixed.vhcap* | sort | tr '\n' ' ')" "fixed.vhcap fixed.vhcap.$cpid "
check_pair fixed.vhcap "fixed.vhcap.$cpid"
echo "fork: parent $ppid and child $cpid each hold exactly their own allocations"
