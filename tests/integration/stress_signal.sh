# stress_signal — SIGUSR1 sent to three threads as fast as possible while
# they loop over malloc/free; the handler itself mallocs, callocs, reallocs
# and frees. Some signals must land while a thread is inside malloc (the
# program counts them). No crash, no hang, same output as bare; the workers'
# allocations are all recorded, and each handler run is either recorded
# whole (5 events) or passed through and counted as nested (it interrupted
# the shim's bookkeeping): recorded + nested == what the handlers did. Both
# unwinders (a handler's stack has a signal frame: the CFI walker hands it
# to libunwind).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/stress_signal"

run() { # UNWIND
    VHEAP_UNWIND=$1 vs_bare 120 "sig_$1" "$PROGS/stress_signal" "${STRESS_SIGNALS:-200}" "${STRESS_PERIOD_US:-250}"
    vh_dump "sig_$1.vhcap" "sig_$1.dump"
    vh_check "sig_$1.out" "sig_$1.dump"
    line=$(grep '^expect ' "sig_$1.out")
    val() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
    handled=$(val handled) inside=$(val handled_inside) calls=$(val handler_calls)
    [ "$handled" -ge 100 ] || die "$1: only $handled signals handled"
    [ "$inside" -gt 0 ] || die "$1: no signal landed inside malloc/free ($handled handled)"
    awk "$VH_AWK_LIB"'
        FILENAME == ARGV[1] { if ($1 == "user") { lo = hex(substr($2, 4)); hi = hex(substr($3, 4)) }; next }
        { kv() }
        $3 == "stack" { split(F["frames"], fr, ",")
                        for (i in fr) if (hex(fr[i]) >= lo && hex(fr[i]) <= hi) O[F["id"]] = 1; next }
        ($3 == "alloc" || $3 == "resize") && (F["stack"] in O) {
            k = F["func"] " " F["size"]; N[k]++
            if (F["size"] == 200 || F["size"] == 600) H[F["addr"]] = 1
            next }
        $3 == "free" && (F["addr"] in H) { hfree++; delete H[F["addr"]] }
        END { print N["malloc 32"] + N["malloc 199"] + N["malloc 599"], N["malloc 200"] + 0,
                    N["calloc 208"] + 0, N["realloc 600"] + 0, hfree + 0 }' \
        "sig_$1.out" "sig_$1.dump" >"sig_$1.counts"
    read -r work hmalloc hcalloc hrealloc hfree <"sig_$1.counts"
    nested=$(st loss_nested)
    expect_eq "$1: worker allocations" "$work" "$(val worker_allocs)"
    expect_eq "$1: handler callocs recorded" "$hcalloc" "$hmalloc"
    expect_eq "$1: handler reallocs recorded" "$hrealloc" "$hmalloc"
    expect_eq "$1: handler frees recorded" "$hfree" "$((2 * hmalloc))"
    expect_eq "$1: handler calls: 5 x $hmalloc recorded + $nested nested" \
        "$((5 * hmalloc + nested))" "$calls"
    expect_eq "$1: dropped" "$(st loss_dropped)" 0
    echo "$1: $handled signals ($inside inside malloc/free), $hmalloc handler runs recorded," \
         "$((nested / 5)) passed through as nested"
    rm -f "sig_$1.dump" "sig_$1.vhcap"
}
run libunwind
run fp
