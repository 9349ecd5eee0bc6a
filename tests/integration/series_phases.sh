# series_phases — the time series of a program with known phases
# (tests/programs/phases.c: grow to X bytes over ~300 ms, hold ~300 ms, free
# over ~300 ms). Checks growth, the plateau at X and the drop at the times the
# program itself measured (CLOCK_REALTIME against the capture's start), the
# split by stack to the byte, marks in their interval, single-event
# resolution, a --from/--to window that starts mid-run, the series table and
# the event stream agreeing, the SVG charts, and the usage errors; and on
# loomsim (moves, reallocs, nested and destroyed heaps) that replaying the
# events gives every top stack the highest live bytes the loader found.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/phases"
need_cmd python3

profile cap.vhcap "$PROGS/phases" >out.txt || die "phases exited $?"
"$ANALYZE" load cap.vhcap db.sqlite >/dev/null 2>load.err || die "load failed: $(cat load.err)"

python3 - <<'PY' || die "series checks failed (see above)"
import csv, io, json, os, re, sqlite3, subprocess, sys
import xml.dom.minidom

A = os.environ["ANALYZE"]
MS = 1000000
errors = []

def fail(msg):
    errors.append(msg)
    print("FAIL: " + msg, file=sys.stderr)

def run(*args, rc=0):
    p = subprocess.run([A, *args], capture_output=True)
    if p.returncode != rc:
        fail("%s: exit %d, want %d: %s" % (" ".join(args), p.returncode, rc,
                                           p.stderr.decode(errors="replace").strip()))
    return p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")

def series(*args):
    out, _ = run("series", "db.sqlite", "--format", "json", *args)
    try:
        return json.loads(out)
    except ValueError as e:
        fail("series %s: not JSON: %s" % (" ".join(args), e))
        sys.exit(1)

# What the program knows: when each phase began, and the bytes it held.
phase, expect = {}, {}
for line in open("out.txt"):
    w = line.split()
    if w and w[0] == "phase":
        phase[w[1]] = int(w[2].split("=")[1])
    elif w and w[0] == "expect":
        expect = {k: int(v) for k, v in (x.split("=") for x in w[1:])}
start = sqlite3.connect("db.sqlite").execute(
    "SELECT start_realtime_ns FROM processes").fetchone()[0]
t = {k: v - start for k, v in phase.items()}       # ns since the capture began
# A one-thread capture's times have the kernel tick's resolution (meta
# coarse_clock_ns, 0 when exact): each time below may be off by that much.
row = sqlite3.connect("db.sqlite").execute(
    "SELECT value FROM meta WHERE key = 'coarse_clock_ns'").fetchone()
SLACK = int(row[0]) if row else 0
X, TABLE, INDEX = expect["plateau_bytes"], expect["load_table"], expect["build_index"]
print("phases at (ms):", {k: round(v / MS, 1) for k, v in t.items()}, "X =", X)

# ---- 10 ms intervals, split by the top 3 stacks ---------------------------
IV = 10 * MS
d = series("--interval", "10ms", "--top", "3")
rows, tops = d["series"], d["stacks"]
names = [s["name"] for s in tops]
if names[:2] != ["load_table", "build_index"]:
    fail("top stacks by peak: %s, want load_table, build_index first" % names)
if tops and (tops[0]["peak"], tops[1]["peak"]) != (TABLE, INDEX):
    fail("peak bytes of the top stacks: %s" % [s["peak"] for s in tops[:2]])
for i, r in enumerate(rows):
    if r["time_ns"] != i * IV:
        fail("row %d starts at %d" % (i, r["time_ns"]))
        break
    held = sum(r["stack_%d" % k] for k in (1, 2, 3))
    if r["other_bytes"] != r["live_bytes"] - held:
        fail("row %d: other %d != live %d - top stacks %d" % (i, r["other_bytes"],
                                                               r["live_bytes"], held))
        break
    if r["max_live_bytes"] < r["live_bytes"]:
        fail("row %d: max live below live" % i)
own = [r["stack_1"] + r["stack_2"] for r in rows]   # the program's own memory

def row_at(ns):
    return next(i for i, r in enumerate(rows) if r["time_ns"] <= ns < r["end_ns"])

# growth: never down, about half way at mid-phase, complete within one
# interval of the plateau's start
for i in range(row_at(t["grow"]), row_at(t["plateau"])):
    if own[i + 1] < own[i]:
        fail("memory goes down during the growth at row %d" % (i + 1))
mid = own[row_at(t["grow"] + (t["plateau"] - t["grow"]) // 2)]
if not 0.2 * X <= mid <= 0.8 * X:
    fail("mid-growth: %d bytes, want about half of %d" % (mid, X))
full = next(i for i, b in enumerate(own) if b >= X)
if not t["plateau"] - 2 * IV - SLACK <= rows[full]["time_ns"] <= t["plateau"] + IV + SLACK:
    fail("plateau reached in the interval at %d ms, the program says %.1f ms" %
         (rows[full]["time_ns"] // MS, t["plateau"] / MS))
# plateau: exactly X in the two stacks, nearly all of the heap, RSS above
plateau = [i for i, r in enumerate(rows)
           if r["time_ns"] >= t["plateau"] + SLACK and r["end_ns"] <= t["free"] - SLACK]
if len(plateau) < 20:
    fail("only %d intervals inside the plateau" % len(plateau))
for i in plateau:
    r = rows[i]
    if (r["stack_1"], r["stack_2"]) != (TABLE, INDEX):
        fail("plateau row %d: stacks hold %d + %d, want %d + %d" %
             (i, r["stack_1"], r["stack_2"], TABLE, INDEX))
        break
    if not X <= r["live_bytes"] <= X + 65536:
        fail("plateau row %d: live %d, want %d" % (i, r["live_bytes"], X))
        break
# RSS: sampled as events pass (every 10 ms at most), so it may lag a busy
# start of the plateau, but not all of it
rss = [rows[i]["rss_bytes"] or 0 for i in plateau]
if not rss or rss[-1] < X:
    fail("plateau: RSS %s, not above the %d bytes touched" % (rss[-3:], X))
# the scratch calls, every 2.5 ms (a busy machine may delay some)
calls = sum(rows[i]["temporary"] for i in plateau)
if calls < 2 * len(plateau) or calls != sum(rows[i]["allocations"] for i in plateau):
    fail("plateau: %d temporary allocations in %d intervals" % (calls, len(plateau)))
# drop: starts within one interval of the free phase, half way at its middle,
# all gone at the end
drop = next(i for i in range(full, len(own)) if own[i] < X)
if not t["free"] - IV - SLACK <= rows[drop]["time_ns"] <= t["free"] + IV + SLACK:
    fail("the drop starts in the interval at %d ms, the program says %.1f ms" %
         (rows[drop]["time_ns"] // MS, t["free"] / MS))
mid = own[row_at(t["free"] + (t["done"] - t["free"]) // 2)]
if not 0.2 * X <= mid <= 0.8 * X:
    fail("mid-free: %d bytes, want about half of %d" % (mid, X))
if own[-1] != 0:
    fail("the end: %d bytes still held by the program's stacks" % own[-1])

# marks: each in the interval that holds its time, near the program's clock
marks = {m["label"]: m["time_ns"] for m in d["marks"]}
for name in ("grow", "plateau", "free", "done"):
    if name not in marks:
        fail("mark %s missing: %s" % (name, list(marks)))
        continue
    if abs(marks[name] - t[name]) > 5 * MS + SLACK:
        fail("mark %s at %d ns, the program says %d" % (name, marks[name], t[name]))
    r = rows[row_at(marks[name])]
    if name not in (r["marks"] or []):
        fail("mark %s not in its interval's row: %s" % (name, r["marks"]))
if not any(k.startswith('odd <label> & "quotes"') for k in marks):
    fail("the label that needs escaping came out as %s" % list(marks))

# ---- the series table (coarse) and the event stream agree -------------------
coarse = series("--interval", "10ms", "--top", "0")["series"]
keys = ("time_ns", "end_ns", "live_bytes", "max_live_bytes", "allocations", "frees",
        "temporary", "bytes_allocated", "bytes_freed", "rss_bytes", "marks")
if len(coarse) != len(rows):
    fail("%d rows from the series table, %d from the events" % (len(coarse), len(rows)))
for a, b in zip(coarse, rows):
    diff = [k for k in keys if a[k] != b[k]]
    if diff:
        fail("series table and event stream differ at %d ns in %s: %s vs %s" %
             (a["time_ns"], diff, [a[k] for k in diff], [b[k] for k in diff]))
        break

# ---- a window that starts mid-plateau: the state at --from comes along ------
w0 = (t["plateau"] + 20 * MS) // MS
win = series("--from", "%dms" % w0, "--to", "%dms" % (w0 + 100), "--interval", "5ms")
wr = win["series"]
if len(wr) != 20 or wr[0]["time_ns"] != w0 * MS:
    fail("window: %d rows from %s ns, want 20 from %d" % (len(wr), wr and wr[0]["time_ns"],
                                                           w0 * MS))
for r in wr:
    if r["stack_1"] + r["stack_2"] != X:
        fail("window row at %d: stacks hold %d, want %d" %
             (r["time_ns"], r["stack_1"] + r["stack_2"], X))
        break

# ---- every event: live moves by each event's size ---------------------------
ev = series("--interval", "event", "--from", "%dms" % w0, "--to", "%dms" % (w0 + 50))["series"]
if len(ev) < 10:
    fail("only %d events in 50 ms of the plateau" % len(ev))
allocs = sum(1 for e in ev if e["event"] == "alloc")
frees = sum(1 for e in ev if e["event"] == "free")
if abs(allocs - frees) > 1 or allocs + frees != len(ev):
    fail("plateau events: %d allocs, %d frees of %d" % (allocs, frees, len(ev)))
for a, b in zip(ev, ev[1:]):
    step = b["size"] if b["event"] == "alloc" else -b["size"]
    if b["live_bytes"] - a["live_bytes"] != step or b["time_ns"] < a["time_ns"]:
        fail("event at %d: live %d -> %d for a %s of %d" % (b["time_ns"], a["live_bytes"],
             b["live_bytes"], b["event"], b["size"]))
        break
    if b["stack_1"] + b["stack_2"] != X:
        fail("event at %d: the plateau's stacks changed" % b["time_ns"])
        break
lim = series("--interval", "event", "--limit", "7")["series"]
if len(lim) != 7:
    fail("--interval event --limit 7 gave %d rows" % len(lim))

# ---- the default interval gives a few hundred points ------------------------
n = len(series()["series"])
if not 100 <= n <= 1000:
    fail("the default interval gives %d rows" % n)

# ---- CSV and table ------------------------------------------------------------
out, _ = run("series", "db.sqlite", "--interval", "10ms", "--top", "3", "--format", "csv")
crows = list(csv.DictReader(io.StringIO(out)))
if len(crows) != len(rows) or int(crows[5]["live_bytes"]) != rows[5]["live_bytes"]:
    fail("CSV: %d rows, want %d" % (len(crows), len(rows)))
if not any('odd <label> & "quotes"' in r["marks"] for r in crows):
    fail("CSV lost the escaped mark label")
out, _ = run("series", "db.sqlite", "--interval", "10ms")
if "intervals of 10 ms" not in out or "load_table" not in out:
    fail("table output lacks its title or the stack names:\n" + out[:400])

# ---- the charts ---------------------------------------------------------------
_, err = run("series", "db.sqlite", "--interval", "5ms", "--svg", "mem.svg")
run("chart", "db.sqlite", "-o", "c2.svg", "--interval", "event")
for f in ("mem.svg", "mem-allocs.svg", "c2.svg", "c2-allocs.svg"):
    if not os.path.exists(f):
        fail("%s was not written (%s)" % (f, err.strip()))
        continue
    try:
        doc = xml.dom.minidom.parse(f)
    except Exception as e:
        fail("%s is not well-formed XML: %s" % (f, e))
        continue
    svg = doc.documentElement
    if svg.tagName != "svg" or svg.getAttribute("width") != "1200":
        fail("%s: root <%s width=%s>" % (f, svg.tagName, svg.getAttribute("width")))
    text = [n.firstChild.data for n in doc.getElementsByTagName("text") if n.firstChild]
    # a one-thread run's axis also says its times were interpolated
    # between the coarse clock's ticks (short_run.sh checks that)
    text = [re.sub(r" \(interpolated between clock ticks [0-9.]+ ms apart\)$", "", x)
            for x in text]
    want = ["time since the program started", "plateau", "grow"]
    if "allocs" in f:
        want += ["allocations", "frees", "temporary allocations"]
    else:
        want += ["load_table", "build_index", "RSS", "consumed memory (live bytes requested)"]
        if not any(x.endswith(" MB") for x in text):
            fail("%s: no tick label in MB: %s" % (f, text[:20]))
    if not any(re.fullmatch(r"[0-9.]+(ms|s)", x) for x in text):
        fail("%s: no time tick in s or ms: %s" % (f, text[:20]))
    for w in want:
        if w not in text:
            fail("%s: no text '%s'" % (f, w))
    if not doc.getElementsByTagName("path"):
        fail("%s: nothing drawn" % f)

# ---- per event, a stack's highest live bytes are the loader's --------------
# loomsim moves, reallocs, destroys heaps and nests them: replaying its
# events must give each top stack the same maximum as stack_stats, and each
# heap the same peak.
loom = os.path.join(os.environ["PROGS"], "loomsim")
env = dict(os.environ, VHEAP_OUT="loom.vhcap", VHEAP_QUIET="1", LD_PRELOAD=os.environ["VHEAP_LIB"])
if subprocess.run([loom], env=env, capture_output=True).returncode != 0:
    fail("loomsim failed")
else:
    run("load", "loom.vhcap", "loom.sqlite")
    con = sqlite3.connect("loom.sqlite")
    for hid, name, peak in con.execute("SELECT id, name, peak_bytes FROM heaps"
                                       " WHERE allocations > 0 ORDER BY id LIMIT 4"):
        out, _ = run("series", "loom.sqlite", "--interval", "event", "--heap", str(hid),
                     "--top", "8", "--by", "max-live", "--format", "json")
        d = json.loads(out)
        if max(r["live_bytes"] for r in d["series"]) != peak:
            fail("heap %s: highest live per event != its peak %d" % (name, peak))
        for k, st in enumerate(d["stacks"], 1):
            # stack_stats keeps one row per (stack, tag): a stack allocated
            # under several tags (loomsim's threads tag their work) peaks per
            # tag at different moments, so the stack's own highest live bytes
            # lie between the largest per-tag maximum and their sum, and
            # equal it exactly when there is one tag.
            lo, hi, ntags = con.execute(
                "SELECT max(max_live_bytes), sum(max_live_bytes), count(*) FROM stack_stats"
                " WHERE heap_id = ? AND stack_id = ?", (hid, st["stack_id"])).fetchone()
            got = max(r["stack_%d" % k] for r in d["series"])
            if (ntags == 1 and got != lo) or not (lo <= got <= hi):
                fail("heap %s, stack %s: highest live %d per event, stack_stats says %d..%d"
                     " over %d tag(s)" % (name, st["name"], got, lo, hi, ntags))
            # and what it holds at the end is what it leaked (or 0 in a
            # destroyed heap)
            want = con.execute("SELECT coalesce(sum(size), 0) FROM leaks WHERE heap_id = ?"
                               " AND stack_id = ?", (hid, st["stack_id"])).fetchone()[0]
            got = d["series"][-1]["stack_%d" % k]
            if got != want:
                fail("heap %s, stack %s: %d live at the end, %d leaked" %
                     (name, st["name"], got, want))

# ---- usage and data errors ----------------------------------------------------
for args, rc in ((["--interval", "0"], 2), (["--interval", "5 parsecs"], 2),
                 (["--top", "101"], 2), (["--by", "nonsense"], 2),
                 (["--from", "2s", "--to", "1s"], 2), (["--from", "100s"], 1),
                 (["--heap", "nosuch"], 1)):
    run("series", "db.sqlite", *args, rc=rc)
run("chart", "db.sqlite", rc=2)
run("series", "no-such.sqlite", rc=1)

sys.exit(1 if errors else 0)
PY
echo "series_phases: plateau, growth, drop, split, marks, events and charts as the program did"
