# stress_signal — SIGUSR1 sent to three threads as fast as possible while
# they loop over malloc/free; the handler itself mallocs, callocs, reallocs
# and frees. Some signals must land while a thread is inside malloc (the
# program counts them). No crash, no hang, same output as bare; the workers'
# allocations are all recorded, and each handler run is either recorded
# whole (5 events) or passed through and counted as nested (it interrupted
# the shim's bookkeeping): recorded + nested == what the handlers did. Both
# unwinders (a handler's stack has a signal frame, which both step through),
# with a signal every 250 us and every 25 us: at 25 us a handler slower
# than the period starves its thread (the unwinder once fell back to
# libunwind for every handler's stack and hung here, mostly while the
# thread was inside ld.so's lazy binding).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/stress_signal"

run() { # UNWIND SIGNALS PERIOD_US
    n="sig_$1_$3"
    VHEAP_UNWIND=$1 vs_bare 120 "$n" "$PROGS/stress_signal" "$2" "$3"
    vh_dump "$n.vhcap" "$n.dump"
    vh_check "$n.out" "$n.dump"
    line=$(grep '^expect ' "$n.out")
    val() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
    handled=$(val handled) inside=$(val handled_inside) calls=$(val handler_calls)
    [ "$handled" -ge $(($2 / 2)) ] || die "$n: only $handled signals handled"
    [ "$inside" -gt 0 ] || die "$n: no signal landed inside malloc/free ($handled handled)"
    awk "$VH_AWK_LIB$VH_AWK_USER"'
        ($3 == "alloc" || $3 == "resize") && (F["stack"] in O) {
            k = F["func"] " " F["size"]; N[k]++
            if (F["size"] == 200 || F["size"] == 600) H[F["addr"]] = 1
            next }
        $3 == "free" && (F["addr"] in H) { hfree++; delete H[F["addr"]] }
        END { print N["malloc 32"] + N["malloc 199"] + N["malloc 599"], N["malloc 200"] + 0,
                    N["calloc 208"] + 0, N["realloc 600"] + 0, hfree + 0 }' \
        "$n.out" "$n.dump" >"$n.counts"
    read -r work hmalloc hcalloc hrealloc hfree <"$n.counts"
    nested=$(st loss_nested)
    expect_eq "$n: worker allocations" "$work" "$(val worker_allocs)"
    expect_eq "$n: handler callocs recorded" "$hcalloc" "$hmalloc"
    expect_eq "$n: handler reallocs recorded" "$hrealloc" "$hmalloc"
    expect_eq "$n: handler frees recorded" "$hfree" "$((2 * hmalloc))"
    expect_eq "$n: handler calls: 5 x $hmalloc recorded + $nested nested" \
        "$((5 * hmalloc + nested))" "$calls"
    expect_eq "$n: dropped" "$(st loss_dropped)" 0
    echo "$n: $handled signals ($inside inside malloc/free), $hmalloc handler runs recorded," \
         "$((nested / 5)) passed through as nested"
    rm -f "$n.dump" "$n.vhcap"
}
run libunwind "${STRESS_SIGNALS:-200}" "${STRESS_PERIOD_US:-250}"
run fp "${STRESS_SIGNALS:-200}" "${STRESS_PERIOD_US:-250}"
run libunwind 1000 25
run fp 1000 25
