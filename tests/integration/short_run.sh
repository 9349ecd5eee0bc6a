# short_run — a run shorter than the coarse clock's tick gets honest times.
# tests/programs/short_run makes 300 allocations over about 0.6 ms, which it
# measures itself (span_ns). With the default clock (coarse while one
# thread records) the capture header carries the exact end (exact_end);
# the loaded runtime is at least the program's span and at most the
# wall-clock time of the whole run; the allocation rate is at most
# 300 / span; the allocations spread over at least three 50 us intervals
# of the timeline instead of one; and the chart's time axis says the times were
# interpolated between clock ticks. With VHEAP_CLOCK=precise the same holds
# and the axis does not say so.
. "$TOP/tests/lib.sh"
need_cmd python3
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/short_run"

# check NAME: the capture NAME.vhcap of a run that took WALL ns
check() {
    n=$1 wall=$2 interpolated=$3
    span=$(sed -n 's/^span_ns=\([0-9]*\) .*/\1/p' "$n.out")
    [ -n "$span" ] || die "short_run printed no span: $(cat "$n.out")"
    "$ANALYZE" dump "$n.vhcap" | sed -n 2p >"$n.hdr" || die "dump of $n.vhcap failed"
    end=$(sed -n 's/.* exact_end=\([0-9]*\).*/\1/p' "$n.hdr")
    [ -n "$end" ] || die "$n: no exact_end in the capture header: $(cat "$n.hdr")"
    "$ANALYZE" summary "$n.vhcap" --format json >"$n.json" 2>/dev/null || die "summary failed"
    "$ANALYZE" summary "$n.vhcap" >"$n.txt" 2>/dev/null || die "summary failed"
    "$ANALYZE" series "$n.vhcap" --interval 50us --format json >"$n.series.json" ||
        die "series failed"
    "$ANALYZE" chart "$n.vhcap" -o "$n.svg" 2>/dev/null || die "chart failed"
    python3 - "$n" "$span" "$wall" "$end" <<'EOF' || die "$n: times are not honest (above)"
import json, re, sys
n, span, wall, end = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = json.load(open(f"{n}.json"))
rt = s["process"]["runtime_ns"]
h = s["heaps"][0]
bad = []
def check(what, ok):
    print(f"  {'ok ' if ok else 'BAD'} {what}")
    if not ok:
        bad.append(what)
check(f"runtime {rt} ns >= the program's own span {span} ns", rt >= span)
check(f"runtime {rt} ns <= the wall-clock time of the run {wall} ns", rt <= wall)
check(f"header's exact_end {end} ns within [span, wall]", span <= end <= wall)
rate = h["allocations_per_s"]
check(f"allocations per second {rate:.0f} <= {h['allocations']} / span "
      f"({h['allocations'] / (span / 1e9):.0f})", rate <= h["allocations"] / (span / 1e9) * 1.0001)
mo = re.search(r"^calls to allocation functions: \d+ \((\d+)/s\)", open(f"{n}.txt").read(), re.M)
check(f"the table's rate {mo.group(1) if mo else None}/s is as low",
      mo is not None and int(mo.group(1)) <= h["allocations"] / (span / 1e9) * 1.0001)
rows = json.load(open(f"{n}.series.json"))["series"]
busy = [r for r in rows if r["allocations"]]
# three phases of 100 allocations 0.3 ms apart: at least three 50 us
# intervals (the exact clock shows the three bursts; interpolated times
# spread each tick's records evenly)
check(f"allocations spread over {len(busy)} intervals of 50 us (want >= 3)", len(busy) >= 3)
sys.exit(1 if bad else 0)
EOF
    if [ "$interpolated" = 1 ]; then
        grep -q "interpolated between clock ticks" "$n.svg" ||
            die "$n: the chart does not say its times were interpolated"
        expect_eq "$n: meta times" "$(sqlite3 "$n.vhcap.sqlite" "SELECT value FROM meta WHERE key = 'times'")" interpolated
    else
        grep -q "interpolated" "$n.svg" && die "$n: an exact run's chart says interpolated"
        expect_eq "$n: meta times" "$(sqlite3 "$n.vhcap.sqlite" "SELECT value FROM meta WHERE key = 'times'")" exact
    fi
}

t0=$(date +%s%N)
profile "$PWD/coarse.vhcap" "$PROGS/short_run" >coarse.out || die "short_run failed under vheap"
t1=$(date +%s%N)
check coarse $((t1 - t0)) 1
grep -q "coarse_clock_ns=[1-9]" coarse.hdr || die "the default clock was not coarse: $(cat coarse.hdr)"

t0=$(date +%s%N)
VHEAP_CLOCK=precise profile "$PWD/precise.vhcap" "$PROGS/short_run" >precise.out ||
    die "short_run failed under vheap"
t1=$(date +%s%N)
check precise $((t1 - t0)) 0
echo "a $(sed -n 's/^span_ns=\([0-9]*\) .*/\1/p' coarse.out) ns run has honest times on either clock"
