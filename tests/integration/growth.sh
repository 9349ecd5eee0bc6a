# growth.sh — a made-up daemon (tests/synth/daemon.c: a 131 MB cache held
# from the first minute, churn, a slow 4 KiB-every-10-s leak, temporaries)
# recorded in full, sampled, and in two windows:
#  - `leaks --growth` ranks the leaking stack (3) first, steady, in full and
#    sampled, although the cache and churn hold far more;
#  - the full capture's per-stack numbers are the program's own (daemon
#    prints them); the sampled estimates of every stack's allocations and
#    bytes are within 10 % of them;
#  - summary says sampled / the rate / the windows (JSON fields), the
#    windows table holds the WINDOW records' windows, frees of blocks
#    allocated while paused are counted as unknown frees, and queries say
#    on stderr that their numbers are estimates / cover the windows.
. "$TOP/tests/lib.sh"

need_cmd python3
[ -x "$ANALYZE" ] || { echo "no analyzer at $ANALYZE" >&2; exit 77; }
cc -O1 -I"$TOP" -o daemon "$TOP/tests/synth/daemon.c" -lm || die "cannot build tests/synth/daemon.c"

./daemon full.vhcap --hours 2 >truth.txt || die "daemon failed"
./daemon sampled.vhcap --hours 2 --rate 65536 >/dev/null || die "daemon --rate failed"
./daemon windows.vhcap --hours 2 --windows >/dev/null || die "daemon --windows failed"
for c in full sampled windows; do
    "$ANALYZE" load -q --no-symbols $c.vhcap $c.sqlite || die "load $c failed"
done

# growth: the leak first, in both modes
for c in full sampled; do
    "$ANALYZE" leaks --growth $c.sqlite --format json --limit 0 >$c.growth.json 2>$c.growth.err ||
        die "leaks --growth $c failed: $(cat $c.growth.err)"
    python3 - $c <<'PY' || die "$c: leaks --growth ranks wrong: $(cat $c.growth.json)"
import json, sys
g = json.load(open(sys.argv[1] + ".growth.json"))["growth"]
top = g[0]
assert top["stack_id"] == 3 and top["steady"] is True, top
assert all(not r["steady"] for r in g[1:]), g
# the slope: 4 KiB every 10 s is 1.47 MB an hour (sampled: within 15 %)
assert abs(top["bytes_per_hour"] - 1474560) < 0.15 * 1474560, top
assert top["r2"] > 0.9, top
PY
done
grep -q "numbers are estimates" sampled.growth.err || die "no estimates note: $(cat sampled.growth.err)"
[ -s full.growth.err ] && die "a full capture's query printed: $(cat full.growth.err)"

# the full capture's numbers are the program's; the sampled ones within 10 %
python3 - <<'PY' || die "per-stack numbers wrong"
import sqlite3
truth = {}
for line in open("truth.txt"):
    w = line.split()
    truth[int(w[1])] = dict(allocations=int(w[3]), bytes=int(w[5]), live=int(w[7]))
def stats(db):
    c = sqlite3.connect(db)
    return {s: (a, b, l) for s, a, b, l in c.execute(
        "SELECT stack_id, allocations, bytes_allocated, leaked_bytes FROM stack_stats")}
full, samp = stats("full.sqlite"), stats("sampled.sqlite")
bad = 0
for s, t in truth.items():
    if full[s] != (t["allocations"], t["bytes"], t["live"]):
        print(f"stack {s}: full {full[s]}, program {t}"); bad += 1
    for i, what in ((0, "allocations"), (1, "bytes")):
        err = abs(samp[s][i] - t[what]) / t[what]
        print(f"stack {s} {what}: sampled {samp[s][i]} full {t[what]} ({100*err:.1f} %)")
        if err > 0.10:
            bad += 1
raise SystemExit(1 if bad else 0)
PY

# summary: the sampled fields only when sampled, the windows when partial
"$ANALYZE" summary full.sqlite --format json >full.summary.json 2>/dev/null
"$ANALYZE" summary sampled.sqlite --format json >sampled.summary.json 2>/dev/null
"$ANALYZE" summary windows.sqlite --format json >windows.summary.json 2>windows.err
"$ANALYZE" summary sampled.sqlite 2>/dev/null | grep -q "sampled every (on average): 65.54K (numbers are estimates)" ||
    die "summary table: no sampling line"
python3 - <<'PY' || die "summary JSON wrong"
import json
f = json.load(open("full.summary.json"))["process"]
s = json.load(open("sampled.summary.json"))["process"]
w = json.load(open("windows.summary.json"))
assert "sampled" not in f and "windows" not in f, f
assert s["sampled"] is True and s["sample_rate"] == 65536 and s["windows"] == "the whole run", s
p = w["process"]
assert p["sampled"] is False and p["recorded_ns"] == 2400 * 10**9, p
assert p["windows"] == "2 windows, 2400.000s of 7200.000s: 1200.000s-2400.000s, 4800.000s-6000.000s", p
assert w["heaps"][0]["unknown_frees"] > 0, w["heaps"][0]
PY
grep -q "recording was on over 2 windows" windows.err || die "no windows note: $(cat windows.err)"
expect_eq "windows rows" "$(sqlite3 windows.sqlite 'SELECT group_concat(start_time || "-" || end_time, " ") FROM windows')" \
    "1200000000000-2400000000000 4800000000000-6000000000000"
expect_eq "full run's window" "$(sqlite3 full.sqlite 'SELECT group_concat(start_time || "-" || end_time) FROM windows')" \
    "0-7200000000000"
expect_eq "dump: window lines" "$("$ANALYZE" dump windows.vhcap | awk '$3 == "window"' | tr -s ' ' | cut -d' ' -f1,4 | tr '\n' ' ')" \
    "1200000000000 recording=1 2400000000000 recording=0 4800000000000 recording=1 6000000000000 recording=0 "
# live over time (series, from the event stream): the sampled estimate
# follows the full one within 10 % at every 10-minute point after the cache
for c in full sampled; do
    "$ANALYZE" series $c.sqlite --interval 600s --top 0 --format csv >$c.series.csv 2>/dev/null ||
        die "series $c failed"
done
python3 - <<'PY' || die "sampled series off"
import csv
def live(f):
    return {r["time_ns"]: int(r["live_bytes"]) for r in csv.DictReader(open(f))}
full, samp = live("full.series.csv"), live("sampled.series.csv")
assert full.keys() == samp.keys() and len(full) > 10, (full.keys(), samp.keys())
for t in full:
    if int(t) >= 600 * 10**9:
        assert abs(samp[t] - full[t]) < 0.10 * full[t], (t, samp[t], full[t])
PY
"$ANALYZE" peak windows.sqlite >/dev/null 2>peak.err || die "peak failed"
grep -q "cover those windows only" peak.err || die "peak: no windows note"
# the HTML report says so too (when chromium is here to run its script)
if CHROMIUM=$(command -v chromium || command -v chromium-browser); then
    for c in full sampled windows; do
        "$ANALYZE" report $c.sqlite -o $c.html 2>/dev/null || die "report $c failed"
        timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
            --user-data-dir="$PWD/chrome" --virtual-time-budget=5000 --dump-dom \
            "file://$PWD/$c.html" >$c.dom 2>/dev/null || die "chromium failed on $c.html"
    done
    grep -q 'data-note="sampled">Sampled every 65.54K allocated, on average' sampled.dom ||
        die "report: no sampling note"
    grep -q 'data-note="windows">Recorded in 2 windows, 2400.000s of 7200.000s' windows.dom ||
        die "report: no windows note"
    grep -q 'data-note=' full.dom && die "report: a full capture has a note"
fi
echo "growth: ok"
