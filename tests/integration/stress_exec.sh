# stress_exec — a chain of 7 program images started by exec in the same
# process, by fork+exec and by posix_spawn (vfork-like: no fork handlers),
# by turns. Same output and exit code as bare; every image has its own
# complete capture (found by its argv), holding exactly its own allocations;
# an exec in the same pid gets the next name (exec_generation > 0) and the
# image it replaced is not marked ended; pid and ppid link the chain; a fork
# child that only execs leaves no capture (one capture per process).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/stress_exec"

depth=${STRESS_DEPTH:-6}
vs_bare 120 se "$PROGS/stress_exec" "$depth"
images=0 forkonly=0
for cap in se.vhcap*; do
    vh_dump "$cap" "$cap.dump"
    d=$(awk '$1 == "argv" && $2 == 1 { print $3; exit }' "$cap.dump")
    flags=$(sed -n '/^header /{s/.* flags=//;p;q}' "$cap.dump")
    if has_flag "$flags" forked; then
        # A fork child between fork and exec: the program did nothing there.
        grep "^d$d user " se.out | sed "s/^d$d //" >"$cap.out"
        vh_check "$cap.out" "$cap.dump"
        expect_eq "$cap (fork child of d$d): program allocations" "$(st allocs)" 0
        forkonly=$((forkonly + 1))
        continue
    fi
    [ ! -e "img.$d" ] || die "two captures for image d$d: $(cat "img.$d") and $cap"
    echo "$cap" >"img.$d"
    grep "^d$d " se.out | sed "s/^d$d //" >"$cap.out"
    vh_check "$cap.out" "$cap.dump"
    expect_line "$cap.out"
    expect_eq "$cap: dropped" "$(st loss_dropped)" 0
    echo "$(st header_pid) $(st header_ppid) $(st header_exec_generation) $flags" >"img.$d.hdr"
    images=$((images + 1))
done
expect_eq "images with a capture" "$images" "$((depth + 1))"
# fork+exec at depths 1, 4, ...: the fork children only exec, and leave
# no capture behind.
expect_eq "fork-child captures" "$forkonly" 0
d=$depth
while [ "$d" -gt 0 ]; do
    read -r pid ppid gen flags <"img.$d.hdr"
    read -r npid nppid ngen nflags <"img.$((d - 1)).hdr"
    if [ $((d % 3)) = 0 ]; then
        expect_eq "d$((d - 1)) exec'd in the pid of d$d" "$npid" "$pid"
        [ "$ngen" -gt 0 ] || die "d$((d - 1)): exec_generation $ngen after an exec in the same pid"
        has_flag "$flags" ended && die "d$d exec'd away, but its capture says ended"
    else
        expect_eq "d$((d - 1)): ppid" "$nppid" "$pid"
        has_flag "$flags" ended || die "d$d: capture not ended (flags $flags)"
    fi
    d=$((d - 1))
done
echo "stress_exec: $images images, $forkonly fork children, each its own complete capture"
