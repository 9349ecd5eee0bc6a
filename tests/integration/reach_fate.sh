# reach_fate — the reachability scan at exit leaves the program's fate
# alone and reads what it can: reach_fate exits 3 with memory mprotected
# away, a guard page, a 64 GiB sparse mapping, a thread blocked in read()
# and one spinning; each block's class is what its pointer's place makes
# it (the program's comment), the exit status stays 3, no SIGCHLD reaches
# the program, the running thread is counted as seen without its stack
# pointer, and the sparse mapping's untouched pages are counted, not read.
# A pointer in the program's own page that the kernel merged with a block
# glibc mapped alone is read (it was not, when a mapping holding a block
# was all heap); one left in a freed block is not.
# Then `reach_fate fork`, whose thread forks and reaps children throughout
# the scan, several times: it must end, status 3, scan done.
. "$TOP/tests/lib.sh"
need_cmd sqlite3
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/reach_fate"

classes() {
    sqlite3 "$1" "SELECT group_concat(size || ':' || coalesce(class, 'none'), ' ') FROM
                  (SELECT size, class FROM leaks WHERE size BETWEEN 1001 AND 1007 ORDER BY size)"
}
want="1001:0 1002:3 1003:0 1004:0 1005:3 1006:0 1007:3"

VHEAP_OUT=cap.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/reach_fate"
rc=$?
expect_eq "exit status under the scan" "$rc" 3
[ -e sigchld ] && die "the program got a SIGCHLD from the scan's child"
"$ANALYZE" load cap.vhcap cap.sqlite 2>load.err || die "load: $(cat load.err)"
expect_eq "classes by where the pointer lives" "$(classes cap.sqlite)" "$want"
expect_eq "scan" "$(sqlite3 cap.sqlite 'SELECT status, threads, threads_unseen FROM reach')" \
    "done|2|1"
[ "$(sqlite3 cap.sqlite 'SELECT nonresident_bytes >= 60 * 1024 * 1024 * 1024 FROM reach')" = 1 ] ||
    die "the sparse mapping's untouched pages are not counted as skipped"

for i in 1 2 3; do
    rm -f fork.vhcap*
    timeout 120 env VHEAP_OUT=fork.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" \
        "$PROGS/reach_fate" fork
    rc=$?
    [ $rc -eq 124 ] && die "run $i: hung (a thread forking during the scan)"
    expect_eq "run $i: exit status with a forking thread" "$rc" 3
    "$ANALYZE" load fork.vhcap fork.sqlite 2>load.err || die "load: $(cat load.err)"
    expect_eq "run $i: scan" "$(sqlite3 fork.sqlite 'SELECT status FROM reach')" done
    expect_eq "run $i: classes" "$(classes fork.sqlite)" "$want"
done
echo "reach_fate: fate kept, classes as placed, skips counted"
