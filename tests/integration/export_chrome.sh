# export_chrome — `vheap-analyze export --format chrome-trace`: Trace Event
# JSON, validated with python3's json and checked against the database and
# the programs. Per heap track: every sample is the live bytes right after
# an event at that very time (vheap's own per-event series), the highest
# sample is heaps.peak_bytes at heaps.peak_time, the last one what was live
# at the end. RSS samples are the rss table; marks are instant events with
# the labels of the marks table (a label with quotes, '<', '&' and a byte
# that is not UTF-8 survives as JSON). phases.c's known plateau shows at its
# marks, and with --clock wall the marks fall where the program's own
# CLOCK_REALTIME says its phases began (to within 100 ms: the clocks are
# the same, only the two readings differ). --merge joins a trace that
# urbit -j left unfinished.
. "$TOP/tests/lib.sh"
need_cmd python3
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/phases" "$PROGS/loomsim" "$PROGS/ht_peak"

cat >check.py <<'EOF'
import csv, json, sqlite3, sys
from vhcheck import checker

# check.py TRACE DB CLOCK TRACKS... ; TRACKS: name=events.csv (per-event series)
trace, db, clock = sys.argv[1:4]
tracks = dict(a.split("=", 1) for a in sys.argv[4:])
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
con.text_factory = lambda b: b.decode("utf-8", "replace")
check, errors = checker()

d = json.load(open(trace, encoding="utf-8"))   # strict: must be valid UTF-8 JSON
ev = d["traceEvents"]
pid, start, runtime = con.execute("SELECT pid, start_realtime_ns, runtime_ns FROM processes").fetchone()
base = start if clock == "wall" else 0
def ns(e):
    """the event's time, ns since the process started"""
    return round(e["ts"] * 1000) - base if clock == "start" else e["ts"] * 1000 - base
check("every event has a known phase", sorted({e["ph"] for e in ev} - {"M", "C", "i"}), [])
check("every event is the process's", {e["pid"] for e in ev}, {pid})
for e in ev:
    if e["ph"] != "M" and not isinstance(e["ts"], (int, float)):
        errors.append(f"ts not a number: {e}")

def us_of(t):
    """what the exporter writes for time t: whole us (wall) or ns/1000 (start)"""
    return (start + t) // 1000 if clock == "wall" else t / 1000

# ---- heap tracks ------------------------------------------------------------
names = {n for (n,) in con.execute("SELECT DISTINCT name FROM heaps WHERE allocations > 0")}
check("one track per heap name that allocated",
      {e["name"] for e in ev if e["ph"] == "C" and e["name"] != "RSS"}, {f"heap {n}" for n in names})
for name, path in tracks.items():
    samples = [(e["ts"], e["args"]["live_bytes"]) for e in ev
               if e["ph"] == "C" and e["name"] == f"heap {name}"]
    check(f"{name}: samples in time order", samples == sorted(samples, key=lambda s: s[0]), True)
    check(f"{name}: the first sample is 0 at the start", samples[0], (us_of(0), 0))
    rows = list(csv.DictReader(open(path, errors="replace")))
    after = {(us_of(int(r["time_ns"])), int(r["live_bytes"])) for r in rows}
    stray = [s for s in samples[1:] if s not in after]
    check(f"{name}: samples that are not (time, live bytes) right after an event", stray[:5], [])
    check(f"{name}: the last sample is the last event's", samples[-1],
          (us_of(int(rows[-1]["time_ns"])), int(rows[-1]["live_bytes"])))
    hs = con.execute("SELECT peak_bytes, peak_time, live_bytes FROM heaps WHERE name = ?",
                     (name,)).fetchall()
    if len(hs) == 1:
        peak, peak_time, live = hs[0]
        top = max(v for _, v in samples)
        check(f"{name}: the highest sample is the peak", top, peak)
        check(f"{name}: first reached at the peak time",
              next(t for t, v in samples if v == top), us_of(peak_time))
        check(f"{name}: the last sample is what was live at the end", samples[-1][1], live)

# ---- RSS and marks -------------------------------------------------------------
rss = [(e["ts"], e["args"]["bytes"]) for e in ev if e["ph"] == "C" and e["name"] == "RSS"]
check("RSS samples = the rss table", rss,
      [(us_of(t), b) for t, b in con.execute("SELECT time, bytes FROM rss ORDER BY time")])
marks = [(e["ts"], e["name"], e["tid"]) for e in ev if e["ph"] == "i"]
check("marks = the marks table", marks,
      [(us_of(t), l, tid) for t, tid, l in con.execute("SELECT time, tid, label FROM marks ORDER BY time")])
check("instant events are process-wide", {e["s"] for e in ev if e["ph"] == "i"} <= {"p"}, True)
meta = [e for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
check("a process_name", len(meta), 1)
check("otherData says the clock", d["otherData"]["clock"].split(":")[0], clock)
if errors:
    print("\n".join("FAIL: " + e for e in errors), file=sys.stderr)
    sys.exit(1)
EOF

# series per event of one heap: time_ns and live_bytes right after each event
per_event() {
    "$ANALYZE" series "$1" --heap "$2" --interval event --top 0 --limit 0 --format csv >"$3" \
        2>/dev/null || die "series --interval event of $1 failed"
}

echo "== phases"
profile "$PWD/ph.vhcap" "$PROGS/phases" >ph.out || die "phases failed under vheap"
per_event ph.vhcap malloc ph.malloc.csv
for clock in start wall; do
    "$ANALYZE" export --format chrome-trace --clock $clock ph.vhcap -o ph.$clock.json 2>err.txt ||
        die "export --clock $clock failed: $(cat err.txt)"
    cat err.txt
    python3 check.py ph.$clock.json ph.vhcap.sqlite $clock malloc=ph.malloc.csv ||
        die "phases --clock $clock: the trace disagrees with the database"
done
# the program's account: its plateau is live when the free phase begins,
# nearly nothing when it is done; its marks are where its own clock says
python3 - ph.out ph.wall.json ph.start.json <<'EOF' || die "phases: the trace does not show the program's phases"
import json, sys
ph, exp = {}, {}
for l in open(sys.argv[1]):
    w = l.split()
    if w[0] == "phase":
        ph[w[1]] = int(w[2].split("=")[1])
    elif w[0] == "expect":
        exp = {k: int(v) for k, v in (x.split("=") for x in w[1:])}
ev = json.load(open(sys.argv[2]))["traceEvents"]
marks = {e["name"]: e["ts"] for e in ev if e["ph"] == "i"}
bad = 0
for name, real in ph.items():
    off = abs(marks[name] - real / 1000)
    print(f"  mark {name}: {marks[name]} us, the program's clock {real // 1000} us ({off / 1000:.3f} ms apart)")
    bad |= off > 100000
# live bytes where the marks are, in ns (wall-clock times are whole us)
ev = json.load(open(sys.argv[3]))["traceEvents"]
marks = {e["name"]: e["ts"] for e in ev if e["ph"] == "i"}
live = [(e["ts"], e["args"]["live_bytes"]) for e in ev if e.get("name") == "heap malloc"]
def at(ts):
    return [v for t, v in live if t <= ts][-1]
p = exp["plateau_bytes"]
v = at(marks["free"])
print(f"  live when 'free' begins: {v} (plateau {p}; stdio buffers and a scratch block may add)")
bad |= not (p <= v <= p + 8192)
# A quantum keeps its highest value and its value after its last event,
# stamped at that event: when the last frees, the mark and the exit's stdio
# buffer share one, the state at the mark shows in the sample just after it.
after = [v for t, v in live if marks["done"] < t <= marks["done"] + 20]
v = min([at(marks["done"])] + after[:1])
print(f"  live when 'done': {v}")
bad |= v >= 8192
sys.exit(bad)
EOF

echo "== loomsim"
VHEAP_OUT="$PWD/loom.%p.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/loomsim" \
    >loom.out 2>loom.err || die "loomsim failed under vheap: $(tail -3 loom.err)"
main=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' loom.out)
[ -n "$main" ] || die "no main summary in loomsim's output"
cap="loom.$main.vhcap"
"$ANALYZE" load -q "$cap" || die "load of $cap failed"
per_event "$cap" malloc loom.malloc.csv
per_event "$cap" loom loom.loom.csv
"$ANALYZE" export -f chrome-trace --clock start "$cap" -o loom.json 2>/dev/null ||
    die "export of $cap failed"
python3 check.py loom.json "$cap.sqlite" start malloc=loom.malloc.csv loom=loom.loom.csv ||
    die "loomsim: the trace disagrees with the database"
"$ANALYZE" export -f chrome-trace --heap loom "$cap" -o loomonly.json 2>/dev/null ||
    die "export --heap loom failed"
python3 -c 'import json, sys; n = {e["name"] for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "C"}; sys.exit(n != {"heap loom", "RSS"})' loomonly.json ||
    die "--heap loom exported other tracks"

# --merge: a trace as urbit -j leaves it (an array never closed, the last
# line cut short) joins the export, every whole event of it kept as it was
python3 - ph.vhcap.sqlite vere.json <<'EOF' || die "could not write a urbit-style trace"
import sqlite3, sys
pid, start = sqlite3.connect(sys.argv[1]).execute("SELECT pid, start_realtime_ns FROM processes").fetchone()
with open(sys.argv[2], "w") as f:
    f.write('[ {"name": "process_name", "ph": "M", "pid": %d, "args": {"name": "urbit"}},\n' % pid)
    for i in range(50):
        f.write('{"cat": "nock", "name": "/~zod/%d", "ph":"X", "pid": %d, "tid": 2, "ts": %d, "dur": 40}, \n'
                % (i, pid, start // 1000 + i * 10000))
    f.write('{"cat": "nock", "name": "/cut sh')
EOF
"$ANALYZE" export -f chrome-trace ph.vhcap --merge vere.json -o both.json 2>err.txt ||
    die "export --merge failed: $(cat err.txt)"
python3 - both.json ph.wall.json <<'EOF' || die "--merge did not join the two traces"
import json, sys
both = json.load(open(sys.argv[1]))["traceEvents"]
ours = json.load(open(sys.argv[2]))["traceEvents"]
nock = [e for e in both if e.get("cat") == "nock"]
print(f"  {len(both)} events: {len(ours)} of vheap, {len(nock)} nock")
sys.exit(not (len(nock) == 50 and len(both) == len(ours) + 51 and both[:len(ours)] == ours))
EOF
"$ANALYZE" export -f chrome-trace ph.vhcap --merge ph.wall.json -o x.json 2>/dev/null
expect_eq "--merge of an object, not an array" "$?" 1
"$ANALYZE" export -f chrome-trace ph.vhcap --merge vere.json --clock start -o x.json 2>/dev/null
expect_eq "--merge with --clock start" "$?" 2

# stdout, and bad uses
"$ANALYZE" export -f chrome-trace ht_nothing.sqlite -o - 2>/dev/null && die "a missing DB exported"
"$ANALYZE" export -f chrome-trace --clock moon ph.vhcap -o x.json 2>/dev/null
expect_eq "--clock moon" "$?" 2
"$ANALYZE" export -f flamegraph --clock wall ph.vhcap -o x.json 2>/dev/null
expect_eq "--clock with flamegraph" "$?" 2
"$ANALYZE" export -f chrome-trace ph.vhcap -o - 2>/dev/null | python3 -c 'import json, sys; json.load(sys.stdin)' ||
    die "-o - is not JSON"
echo "the Chrome traces hold the database's numbers"
