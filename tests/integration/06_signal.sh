# 06_signal — a SIGALRM handler allocates while the main loop allocates and
# frees. The program survives; every main-loop allocation is recorded, and
# each handler allocation is either recorded or accounted for as nested in
# the header's loss line: recorded + nested == what the handler did. Run with
# both unwinders (the window in which a handler lands inside the shim's
# bookkeeping differs: libunwind's walk is most of it).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/signal_alloc"

run_one() { # UNWIND
    rm -f cap.vhcap
    # timeout itself must not run under the shim (it would take the capture name).
    VHEAP_UNWIND=$1 VHEAP_OUT=cap.vhcap VHEAP_QUIET=1 \
        timeout 120 env LD_PRELOAD="$VHEAP_LIB" "$PROGS/signal_alloc" >out.txt \
        || die "signal_alloc ($1) exited $? (124: hung)"
    vh_dump cap.vhcap dump.txt
    vh_check out.txt dump.txt
    line=$(grep '^expect ' out.txt)
    main=$(echo "$line" | tr ' ' '\n' | sed -n 's/^main_allocs=//p')
    handler=$(echo "$line" | tr ' ' '\n' | sed -n 's/^handler_allocs=//p')
    [ "$handler" -ge 10 ] || die "only $handler signals handled: nothing tested"

    # Per size: the main loop allocates 32 bytes, the handler 48.
    awk "$VH_AWK_LIB$VH_AWK_USER"'
        $3 == "alloc" && (F["stack"] in O) { N[F["size"]]++ }
        $3 == "alloc" && F["size"] == 48 && !(F["stack"] in O) { warm48++ }
        END { print N[32] + 0, N[48] + 0, warm48 + 0 }' out.txt dump.txt >sizes.txt
    read -r rec_main rec_handler warm <sizes.txt
    # main's warm-up (outside the user section) ran before the timer: else
    # a signal in the thread's first malloc deadlocks glibc itself.
    expect_eq "warm-up allocations of the handler's size ($1)" "$warm" 4
    nested=$(st loss_nested)
    expect_eq "main-loop allocations ($1)" "$rec_main" "$main"
    expect_eq "handler allocations: $rec_handler recorded + $nested nested ($1)" \
        "$((rec_handler + nested))" "$handler"
    # Every block was freed: the recorded ones are not live at the end.
    expect_eq "live blocks ($1)" "$(st live_blocks)" 0
    expect_eq "frees of recorded blocks ($1)" "$(st frees)" "$((rec_main + rec_handler))"
    echo "signal ($1): $handler handler allocations, $rec_handler recorded, $nested nested"
}

run_one fp
run_one libunwind
