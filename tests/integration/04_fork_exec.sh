# 04_fork_exec — fork then exec: the exec'd image starts its own capture
# (its own exe, argv, pid = the child's, ppid = the parent) holding exactly
# its allocations; the parent's capture holds exactly the parent's. One
# capture per process: the fork child that execs (or exits) having recorded
# nothing leaves none behind, so with only %p the exec'd image has the plain
# name. A fork child that allocated before the exec keeps its capture and
# the exec'd image, colliding with it, gets ".1" (exec_generation 1), never
# overwriting it; one whose exec'd image writes no capture (LD_PRELOAD gone)
# keeps its capture too: it names what was exec'd.
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

captures() { ls ./*.vhcap* | sort | tr '\n' ' '; }
names() { printf './%s\n' "$@" | sort | tr '\n' ' '; }

profile 'cap.%e.%p.vhcap' "$PROGS/fork_exec" "$target" >out.txt || die "fork_exec exited $?"
split_out
expect_eq "captures" "$(captures)" \
    "$(names "cap.exec_target.$cpid.vhcap" "cap.fork_exec.$ppid.vhcap")"
check_target "cap.exec_target.$cpid.vhcap" 0
check_parent "cap.fork_exec.$ppid.vhcap"

rm -f ./*.vhcap*
profile 'cap.%p.vhcap' "$PROGS/fork_exec" "$target" >out.txt || die "fork_exec exited $?"
split_out
expect_eq "captures (only %p)" "$(captures)" "$(names "cap.$cpid.vhcap" "cap.$ppid.vhcap")"
check_target "cap.$cpid.vhcap" 0
check_parent "cap.$ppid.vhcap"

# without %p: the fork child's empty NAME.<pid> is gone too; the exec'd
# image, not a fork child, takes the next free name
rm -f ./*.vhcap*
profile 'cap.vhcap' "$PROGS/fork_exec" "$target" >out.txt || die "fork_exec exited $?"
split_out
expect_eq "captures (no %p)" "$(captures)" "$(names cap.vhcap cap.vhcap.1)"

rm -f ./*.vhcap*
profile 'cap.%p.vhcap' "$PROGS/fork_exec" "$target" alloc >out.txt || die "fork_exec alloc exited $?"
split_out
expect_eq "captures (the child allocated)" "$(captures)" \
    "$(names "cap.$cpid.vhcap" "cap.$cpid.vhcap.1" "cap.$ppid.vhcap")"
check_target "cap.$cpid.vhcap.1" 1
check_parent "cap.$ppid.vhcap"
expect_eq "the fork child's 4321-byte block" \
    "$(dump_count "cap.$cpid.vhcap" alloc '$0 ~ / size=4321 /')" 1

rm -f ./*.vhcap*
profile 'cap.%p.vhcap' "$PROGS/fork_exec" "$target" noshim >out.txt || die "fork_exec noshim exited $?"
split_out
expect_eq "captures (exec'd without the shim)" "$(captures)" "$(names "cap.$cpid.vhcap" "cap.$ppid.vhcap")"
check_forkchild "cap.$cpid.vhcap"
python3 -c '
import sys
with open(sys.argv[1], "rb") as f:
    f.seek(3336)        # exec_path (docs/capture-format.md)
    p = f.read(512).split(b"\0")[0]
sys.exit(0 if p.endswith(b"/exec_target") else "exec_path: %r" % p)' "cap.$cpid.vhcap" ||
    die "the fork child's capture does not name what it exec'd"

# execvp: glibc calls execve past the shim, the exec is not seen: the
# exec'd image still finds the fork child's empty capture by its header
rm -f ./*.vhcap*
profile 'cap.%p.vhcap' "$PROGS/fork_exec" "$target" execvp >out.txt || die "fork_exec execvp exited $?"
split_out
expect_eq "captures (execvp)" "$(captures)" "$(names "cap.$cpid.vhcap" "cap.$ppid.vhcap")"
check_target "cap.$cpid.vhcap" 0

rm -f ./*.vhcap*
profile 'cap.%p.vhcap' "$PROGS/fork_exec" "$target" exit >out.txt || die "fork_exec exit exited $?"
sed -n 's/^parent //p' out.txt >parent.out
ppid=$(sed -n 's/^pid=\([0-9]*\) child=.*/\1/p' parent.out)
expect_eq "captures (the child exited)" "$(captures)" "$(names "cap.$ppid.vhcap")"
check_parent "cap.$ppid.vhcap"
echo "fork+exec: exec'd image $cpid has its own capture; a fork child that recorded nothing leaves none"
