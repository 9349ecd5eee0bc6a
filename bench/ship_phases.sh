#!/bin/bash
# ship_phases.sh — the fake ~zod's boot to the end of its compile phase,
# plain and recorded in full, side by side: the cost of deep recursion on
# the real ship (issue 28). A whole boot recorded in full writes tens of GB,
# so each run is stopped once Vere prints the first "ride: compiled"; the
# phases come from the times its lines appeared (each line stamped as read):
# parse = "ride: parsing" to "ride: compiling" (hoon.hoon parsed), compile =
# "ride: compiling" to "ride: compiled" (the compiler compiled), and the wall
# time from the start to "ride: compiled". Runs alternate plain / vheap
# (SHIP_REPS pairs); the ratios are each pair's, and their medians.
#
#   B=build SHIP_REPS=1 bench/ship_phases.sh
#   PLAIN=/var/tmp/vere/build/plain/bin/urbit  VH=/var/tmp/vere/build/vheap/bin/urbit
#   SHIM=build/libvheap.so             the shim of the recorded run
#   VHEAP_VERE_SHARED=../shared/vere   (netns.sh, brass.pill)
#   SHIP_ENV="VHEAP_SAMPLE=512KiB"     more environment for the recorded run
#   SHIP_UNTIL=compiled                or parsed: stop at "ride: compiling"
#                                      (the parse phase only)
set -uo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "${B:-$TOP/build}" && pwd)
SHARED=$(cd "${VHEAP_VERE_SHARED:-$TOP/../shared/vere}" 2>/dev/null && pwd) ||
    { echo "ship_phases: no Vere folder (VHEAP_VERE_SHARED)" >&2; exit 77; }
PLAIN=${PLAIN:-/var/tmp/vere/build/plain/bin/urbit}
VH=${VH:-/var/tmp/vere/build/vheap/bin/urbit}
SHIM=${SHIM:-$B/libvheap.so}
for f in "$PLAIN" "$VH" "$SHIM" "$B/bench/capstat"; do
    [ -x "$f" ] || [ -f "$f" ] || { echo "ship_phases: $f missing (make bench builds capstat)" >&2; exit 77; }
done
reps=${SHIP_REPS:-1}
case ${SHIP_UNTIL:-compiled} in
compiled) until='ride: compiled' ;; parsed) until='ride: compiling' ;;
*) echo "ship_phases: SHIP_UNTIL is compiled or parsed" >&2; exit 2 ;;
esac
W=$(mktemp -d "${TMPDIR:-/var/tmp}/ship-phases.XXXXXX")
trap 'rm -rf "$W"' EXIT

# cpu_ms KING: user + system milliseconds of the king's children (the
# serf, which does the work), from /proc (clock ticks of 10 ms)
cpu_ms() {
    local c t=0
    for c in $(pgrep -P "$1"); do
        t=$(( t + $(awk '{ print $14 + $15 }' "/proc/$c/stat" 2>/dev/null || echo 0) ))
    done
    echo $(( t * 1000 / $(getconf CLK_TCK) ))
}

# stamp_lines FILE KING: each line of stdin as "wall-ms serf-cpu-ms line"
# into FILE; returns once a line says "ride: compiled". The machine is
# shared: the serf's CPU time is the steadier measure, wall is printed too.
stamp_lines() {
    local t0 line
    t0=$(date +%s%N)
    while IFS= read -r line; do
        printf '%s %s %s\n' "$(( ($(date +%s%N) - t0) / 1000000 ))" "$(cpu_ms "$2")" \
            "${line%$'\r'}" >>"$1"
        case $line in *"$until"*) return 0 ;; esac
    done
    return 1
}

# boot NAME CMD...: boots a new pier with CMD as the runtime until the
# compile phase ends; $W/NAME.t holds the stamped lines.
boot() {
    local name=$1 pid
    shift
    rm -rf "$W/pier"
    : >"$W/$name.t"
    coproc BOOT { exec "$SHARED/netns.sh" "$@" -F zod -c "$W/pier" -B "$SHARED/brass.pill" \
                       -t -x -L </dev/null 2>&1; }
    pid=$BOOT_PID
    stamp_lines "$W/$name.t" "$pid" <&"${BOOT[0]}" || echo "ship_phases: $name ended early" >&2
    # the king and its serf (netns.sh execs into the king)
    pkill -KILL -P "$pid" 2>/dev/null
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
}

# phases NAME COL: "parse compile total" in seconds, of the wall (COL 1)
# or the serf's CPU time (COL 2)
phases() {
    awk -v k="$2" '/ride: parsing/ && !p { p = $k } /ride: compiling/ && !c { c = $k }
         /ride: compiled/ && !d { d = $k }
         END { if (!d) { d = c; x = "-" }
               printf "%.1f %s %.1f\n", (c - p) / 1000, x == "-" ? x : sprintf("%.1f", (d - c) / 1000),
                      d / 1000 }' "$W/$1.t"
}

printf '%-4s %-6s %-5s %8s %9s %8s %12s %10s\n' rep run clock parse compile total records B/record
for r in $(seq 1 "$reps"); do
    boot plain "$PLAIN"
    for k in 1 2; do
        set -- $(phases plain $k)
        printf '%-4s %-6s %-5s %8s %9s %8s\n' "$r" plain "$([ $k = 1 ] && echo wall || echo cpu)" \
            "$1" "$2" "$3" | tee -a "$W/rows"
    done
    rm -f "$W"/*.vhcap*
    boot vheap env VHEAP_OUT="$W/boot.%p.vhcap" VHEAP_QUIET=1 ${SHIP_ENV:-} \
        LD_PRELOAD="$SHIM" "$VH"
    # the records of every process's capture and the bytes they take
    st=$(for c in "$W"/boot.*.vhcap "$W"/boot.*.vhcap.[0-9]*; do [ -f "$c" ] && "$B/bench/capstat" "$c"; done |
         awk '{ n += $1 + $2 + $3 + $4; b += $9 } END { printf "%d %.2f", n, n ? b / n : 0 }')
    for k in 1 2; do
        set -- $(phases vheap $k)
        printf '%-4s %-6s %-5s %8s %9s %8s %12s %10s\n' "$r" vheap \
            "$([ $k = 1 ] && echo wall || echo cpu)" "$1" "$2" "$3" $st | tee -a "$W/rows"
    done
    rm -f "$W"/*.vhcap*
done
for clk in wall cpu; do
    awk -v clk="$clk" -v upto="$until" '$3 != clk { next }
     $2 == "plain" { p[$1] = $4; c[$1] = $5; t[$1] = $6 }
     $2 == "vheap" && ($1 in p) && p[$1] > 0 && t[$1] > 0 {
         rp[++n] = $4 / p[$1]; rc[n] = c[$1] > 0 ? $5 / c[$1] : 0; rt[n] = $6 / t[$1] }
     # a run stopped at "ride: compiling" has no compile phase ("-")
     function cmp_ratio(n) { return c[1] == "-" ? "-" : sprintf("%.2fx", med(rc, n)) }
     function med(a, n,   i, j, x) { for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
         return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
     END { if (!n) exit 1
           printf "vheap / plain, %s (median of %d pairs): parse %.2fx (target <= 2.5), compile %s, start to \"%s\" %.2fx (the whole boot'"'"'s target: <= 2)\n",
                  clk, n, med(rp, n), cmp_ratio(n), upto, med(rt, n) }' "$W/rows"
done
