# diskfull_stacks — the capture's disk fills (a 1 MiB tmpfs: the run's
# capture takes 1.5 MB, its 16K stacks written as diffs, so the fill comes
# before round 16384, the last new stack) while four
# threads race to insert the same new call stacks: an id whose STACK record
# did not make it into the capture must never be used by an event that did
# (the checker's rule "stack used before its stack record", over several
# runs: the moment of the fill differs each time), and every call is still
# either recorded or counted as dropped, exactly (an event recorded with
# stack 0, its stack record not fitting, counts as recorded: the format 3
# records are small enough that one can fit where its stack did not: one
# of six runs in a make check). Needs root for the mount.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/stack_fill"

small_disk 1m

total_stack0=0
for run in 1 2 3 4 5 6; do
    rm -f "$mnt"/*
    VS_WARN=1 VHEAP_CHUNK_SIZE=64KiB VS_CAPTURE="$mnt/s$run.vhcap" \
        vs_bare 120 "s$run" "$PROGS/stack_fill" 4 16000
    grep -q 'recording stopped' "s$run.vheap" || die "run $run: the disk never filled: $(cat "s$run.vheap")"
    vh_dump "$mnt/s$run.vhcap" "s$run.dump"
    main_range "s$run.dump" >/dev/null
    vh_check "s$run.out" "s$run.dump"
    calls=$(sed -n 's/^expect calls=\([0-9]*\) .*/\1/p' "s$run.out")
    # an event whose stack did not fit is recorded with stack 0 (whose
    # frames say nothing of whose it is: the checker counts it apart)
    recorded=$(( $(st allocs) + $(st frees) + $(st stack0) + $(st stack0_frees) ))
    expect_eq "run $run: recorded + dropped" "$((recorded + $(st loss_dropped)))" "$calls"
    [ "$(st stacks)" -gt 100 ] || die "run $run: only $(st stacks) stacks recorded"
    total_stack0=$((total_stack0 + $(st stack0)))
    echo "run $run: $calls calls, $recorded recorded, $(st loss_dropped) dropped, $(st stacks) stacks, $(st stack0) events with stack 0"
done
echo "events recorded with stack 0 over all runs: $total_stack0"
