# vfork — a vfork child allocates in the parent's memory (before exec,
# _exit, or exit, which runs the parent's exit handlers, the shim's too):
# the parent's capture holds exactly the parent's own calls (the checker
# replays them in order: a child's call recorded as the parent's would be an
# extra event), dumps without damage, and has no END record before the
# parent's last event. preload/lifecycle.c interposes vfork for this.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/vfork_alloc"
[ -x /bin/true ] || { echo "skip: no /bin/true" >&2; exit 77; }

for mode in exec _exit exit; do
    rm -f cap.*
    VHEAP_OUT="cap.%p.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" \
        "$PROGS/vfork_alloc" "$mode" 5 >"$mode.out" 2>"$mode.err" ||
        die "$mode: vfork_alloc exited $?: $(head -n 3 "$mode.err")"
    pid=$(sed -n 's/^pid=//p' "$mode.out")
    vh_dump "cap.$pid.vhcap" "$mode.dump"
    vh_check "$mode.out" "$mode.dump"
    expect_line "$mode.out"
    expect_eq "$mode: nested events" "$(st loss_nested)" 0
    # END, if any, is the last record (exit in the child may leave the
    # parent without exit handlers: then there is none).
    awk '/^#/ || $1 == "header" || $1 == "loss" || $1 == "argv" { next }
         $3 == "end" { e = NR; next } { last = NR }
         END { if (e && e < last) { print "END at line " e ", records after it up to " last; exit 1 } }' \
        "$mode.dump" >"$mode.end" || die "$mode: $(cat "$mode.end")"
    if [ "$mode" = exec ]; then
        # The exec'd /bin/true has a capture of its own, one per round.
        n=$(ls cap.*.vhcap | grep -vc "^cap.$pid.vhcap\$")
        expect_eq "exec: captures of the exec'd children" "$n" 5
    fi
    echo "$mode: $(st allocs) allocations, $(st frees) frees, exactly the parent's; header flags $(st header_flags)"
done
