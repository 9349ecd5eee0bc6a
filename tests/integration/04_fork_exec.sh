# 04_fork_exec — fork then exec: the exec'd image starts its own capture
# (its own exe, argv, pid = the child's, ppid = the parent) holding exactly
# its allocations; the parent's capture holds exactly the parent's. With %e
# the names differ; with only %p the exec'd image collides with the fork
# child's file and gets ".1" (exec_generation 1), never overwriting it.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/fork_exec" "$PROGS/exec_target"
target=$PROGS/exec_target

split_out() {
    sed -n 's/^parent //p' out.txt >parent.out
    sed -n 's/^target //p' out.txt >target.out
    ppid=$(sed -n 's/^pid=\([0-9]*\) child=.*/\1/p' parent.out)
    cpid=$(sed -n 's/^pid=[0-9]* child=\([0-9]*\)$/\1/p' parent.out)
    [ -n "$ppid" ] && [ -n "$cpid" ] || die "no pids in the program output"
    expect_eq "exec'd pid" "$(sed -n 's/^pid=\([0-9]*\) .*/\1/p' target.out)" "$cpid"
}

check_target() { # CAPTURE EXEC_GENERATION
    vh_dump "$1" target.dump
    vh_check target.out target.dump
    expect_line target.out
    expect_eq "exec'd header pid" "$(st header_pid)" "$cpid"
    expect_eq "exec'd header ppid" "$(st header_ppid)" "$ppid"
    expect_eq "exec'd exe" "$(st header_exe)" "$(readlink -f "$target")"
    expect_eq "exec_generation" "$(st header_exec_generation)" "$2"
    expect_eq "argv" "$(sed -n 's/^argv [0-9]* //p' target.dump | tr '\n' '|')" \
        "$target|7|4000|with space|"
    has_flag "$(st header_flags)" ended || die "exec'd capture not ended"
}

check_parent() { # CAPTURE
    vh_dump "$1" parent.dump
    vh_check parent.out parent.dump
    expect_line parent.out
    expect_eq "parent header pid" "$(st header_pid)" "$ppid"
    expect_eq "parent exe" "$(st header_exe)" "$(readlink -f "$PROGS/fork_exec")"
}

check_forkchild() { # CAPTURE: the child between fork and exec
    vh_dump "$1" fchild.dump
    # The parent's USER range and no events: the fork child ran no USER code,
    # so any allocation of it there fails the check.
    grep '^user ' parent.out >prange.out
    vh_check prange.out fchild.dump "-v seqcheck=1"
    expect_eq "fork child's own allocations" "$(st allocs)" 0
    expect_eq "fork child header pid" "$(st header_pid)" "$cpid"
    expect_eq "fork child header ppid" "$(st header_ppid)" "$ppid"
    has_flag "$(st header_flags)" forked || die "fork child capture lacks forked"
}

profile 'cap.%e.%p.vhcap' "$PROGS/fork_exec" "$target" >out.txt || die "fork_exec exited $?"
split_out
expect_eq "captures" "$(ls ./*.vhcap* | sort | tr '\n' ' ')" \
    "$(printf '%s\n' "./cap.exec_target.$cpid.vhcap" "./cap.fork_exec.$cpid.vhcap" \
        "./cap.fork_exec.$ppid.vhcap" | sort | tr '\n' ' ')"
check_target "cap.exec_target.$cpid.vhcap" 0
check_parent "cap.fork_exec.$ppid.vhcap"
check_forkchild "cap.fork_exec.$cpid.vhcap"

rm -f ./*.vhcap*
profile 'cap.%p.vhcap' "$PROGS/fork_exec" "$target" >out.txt || die "fork_exec exited $?"
split_out
expect_eq "captures (only %p)" "$(ls ./*.vhcap* | sort | tr '\n' ' ')" \
    "$(printf '%s\n' "./cap.$cpid.vhcap" "./cap.$cpid.vhcap.1" "./cap.$ppid.vhcap" | sort | tr '\n' ' ')"
check_target "cap.$cpid.vhcap.1" 1
check_parent "cap.$ppid.vhcap"
check_forkchild "cap.$cpid.vhcap"
echo "fork+exec: exec'd image $cpid has its own capture (.1 when the name was taken)"
