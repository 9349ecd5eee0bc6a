# kill_random — nothing recorded is lost when a program dies at a random
# point: SIGKILL, SIGSEGV, abort(), _exit() and exit() (atexit handlers run
# while other threads keep allocating) from a fifth thread while four
# threads allocate, each reporting every call that returned through a pipe.
# For each thread, the calls it reported are the first of its calls in the
# capture, in order, with their addresses and sizes (so count and bytes
# agree); at most one more call is in the capture (recorded, then killed
# before the report). The capture reads without damage and is marked ended
# only after exit(). Several seeds per way of dying; the seed picks when.
# KILL_SEEDS="1 2 3 ..." and KILL_MODES="kill segv ..." to run more.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/stress_kill"
ulimit -c 0 2>/dev/null

run() { # HOW SEED WANT_RC
    n=$1.$2
    rm -f "$n.vhcap"
    { VHEAP_OUT="$n.vhcap" VHEAP_QUIET=1 timeout 120 env LD_PRELOAD="$VHEAP_LIB" \
          "$PROGS/stress_kill" "$1" "$2" 2>"$n.err"
      echo $? >"$n.rc"; } | cat >"$n.out"
    expect_eq "$n: exit status" "$(cat "$n.rc")" "$3"
    vh_dump "$n.vhcap" "$n.dump"
    head -n 1 "$n.out" >"$n.user"
    vh_check "$n.user" "$n.dump"
    if [ "$1" = exit ]; then
        has_flag "$(st header_flags)" ended || die "$n: capture not ended after exit()"
    else
        has_flag "$(st header_flags)" ended && die "$n: capture says ended after $1"
    fi
    expect_eq "$n: dropped" "$(st loss_dropped)" 0
    awk "$VH_AWK_LIB"'
        FILENAME == ARGV[1] {
            if ($1 == "user") { lo = hex(substr($2, 4)); hi = hex(substr($3, 4)); next }
            t = $2; n = ++NP[t]; T[t] = 1
            if ($1 == "a" || $1 == "c") { P[t, n] = $1 " " $3 " " $4; PB[t] += $4 }
            else if ($1 == "r") { P[t, n] = "r " $3 " " $4 " " $5; PB[t] += $5 }
            else if ($1 == "f") P[t, n] = "f " $3
            else { print "bad progress line " FNR ": " $0; bad = 1 }
            next
        }
        function call(t, c, b) { m = ++NC[t]; C[t, m] = c; CB[t, m] = b; T[t] = 1 }
        { kv() }
        $3 == "stack" { split(F["frames"], fr, ",")
                        for (i in fr) if (hex(fr[i]) >= lo && hex(fr[i]) <= hi) O[F["id"]] = 1; next }
        $3 == "alloc" && (F["stack"] in O) {
            OWN[F["addr"]] = 1
            if ("realloc" in W) { call($2, "r " PEND[$2] " " F["addr"] " " F["size"], F["size"]); PEND[$2] = "" }
            else call($2, (F["func"] == "calloc" ? "c " : "a ") F["addr"] " " F["size"], F["size"])
            next }
        $3 == "resize" && (F["stack"] in O) { call($2, "r " F["addr"] " " F["addr"] " " F["size"], F["size"]); next }
        $3 == "free" && (F["addr"] in OWN) {
            delete OWN[F["addr"]]
            if ("realloc" in W) PEND[$2] = F["addr"]; else call($2, "f " F["addr"], 0)
            next }
        END {
            for (t in T) {
                threads++; np += NP[t]; nc += NC[t]; pb += PB[t]
                for (i = 1; i <= NC[t]; i++) cb += CB[t, i]
                extra = NC[t] + (PEND[t] != "") - NP[t]
                if (extra < 0 || extra > 1) {
                    print "thread " t ": reported " NP[t] + 0 " calls, capture has " NC[t] + 0 \
                          (PEND[t] != "" ? " and a realloc cut in half" : ""); bad = 1 }
                for (i = 1; i <= NP[t] && i <= NC[t]; i++) {
                    if (P[t, i] != C[t, i]) {
                        print "thread " t " call " i ": reported \"" P[t, i] "\", capture \"" C[t, i] "\""
                        bad = 1; break }
                    mb[t] += CB[t, i]
                }
                if (!bad && mb[t] != PB[t]) { print "thread " t ": bytes " PB[t] " reported, " mb[t] " in the capture"; bad = 1 }
            }
            if (threads < 1) { print "no thread made a call"; bad = 1 }
            printf "%d calls reported, %d in the capture (%.0f / %.0f bytes), %d threads\n", np, nc, pb, cb, threads
            exit bad
        }' "$n.out" "$n.dump" >"$n.result" || die "$n: $(head -n 5 "$n.result")"
    echo "$n: $(cat "$n.result")"
    rm -f "$n.vhcap" "$n.dump"
}

for how in ${KILL_MODES:-kill segv abort _exit exit}; do
    case $how in
        kill) rc=137 ;; segv) rc=139 ;; abort) rc=134 ;; _exit) rc=7 ;; exit) rc=0 ;;
        *) die "unknown mode $how" ;;
    esac
    for seed in ${KILL_SEEDS:-1 2 3}; do
        run "$how" "$seed" "$rc"
    done
done
