# signal_stack — the stack recorded for an allocation made in a signal
# handler goes on past the signal frame: handler frames, the trampoline the
# handler returns to, the exact PC the signal interrupted (in victim()),
# then victim's caller outer(). The program prints the trampoline address
# and the interrupted PC it saw in its ucontext, and the ranges of its
# functions; every handler allocation (one per round, on the main thread
# and on a worker) must be recorded with exactly that sequence. Handler on
# the thread's stack and on a sigaltstack, with both unwinders (the
# program keeps frame pointers).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/signal_stack"

ROUNDS=25
check() { # UNWIND STACK
    name="st_$1_$2"
    VHEAP_UNWIND=$1 VHEAP_OUT="$name.vhcap" VHEAP_QUIET=1 \
        timeout 120 env LD_PRELOAD="$VHEAP_LIB" "$PROGS/signal_stack" "$2" "$ROUNDS" \
        >"$name.out" 2>"$name.err" || die "$name: exit $? ($(tail -n 2 "$name.err"))"
    [ ! -s "$name.err" ] || die "$name: stderr: $(head -n 3 "$name.err")"
    vh_dump "$name.vhcap" "$name.dump"
    awk "$VH_AWK_LIB"'
        FILENAME == ARGV[1] {
            if ($1 == "range") { LO[$2] = hex($3); HI[$2] = hex($4) }
            if ($1 == "hit") { kv0(); TR[S["size"]] = hex(S["tramp"]); PC[S["size"]] = hex(S["pc"]); nhit++ }
            next
        }
        function kv0(   i, p) { split("", S); for (i = 2; i <= NF; i++) { p = index($i, "="); S[substr($i, 1, p - 1)] = substr($i, p + 1) } }
        function in_(r, a) { return a >= LO[r] && a < HI[r] }
        { kv() }
        $3 == "stack" { FR[F["id"]] = F["frames"]; next }
        $3 == "alloc" && (F["size"] in TR) {
            s = F["size"]; seen[s]++
            n = split(FR[F["stack"]], f, ",")
            for (i = 1; i <= n && hex(f[i]) != TR[s]; i++) ;
            if (i > n) { bad++; if (bad <= 3) print "size " s ": no trampoline frame in " FR[F["stack"]]; next }
            if (i < 2 || !in_("handler", hex(f[i - 1]))) why = "frame before the trampoline not in the handler"
            else if (i + 1 > n || hex(f[i + 1]) != PC[s]) why = "frame after the trampoline is not the interrupted pc"
            else if (i + 2 > n || !in_("outer", hex(f[i + 2]))) why = "no outer() frame after the interrupted pc"
            else { good++; next }
            bad++; if (bad <= 3) print "size " s ": " why ": " FR[F["stack"]]
        }
        END {
            for (s in TR) if (!(s in seen)) { bad++; if (bad <= 6) print "size " s ": allocation not recorded" }
            print "hits=" nhit + 0, "good=" good + 0, "bad=" bad + 0
        }' "$name.out" "$name.dump" >"$name.check"
    grep -v '^hits=' "$name.check" | head -n 6 >&2
    expect_eq "$name: handler allocations with the full stack" "$(tail -n 1 "$name.check")" \
        "hits=$((2 * ROUNDS)) good=$((2 * ROUNDS)) bad=0"
    echo "$name: $((2 * ROUNDS)) handler allocations, each with handler, trampoline, interrupted pc, caller"
}
check libunwind thread
check libunwind alt
check fp thread
check fp alt
