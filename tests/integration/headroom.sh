# headroom.sh — an arena with roads nested four deep and events marked as
# they commit (tests/programs/headroom.c, Vere's loom in small): the least
# headroom (the most in use in the arena and its roads at once), when, in
# which road and event; and per event what it allocated, grew the home road
# by and held at most. Every number is the program's own, by construction.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/headroom"
need_cmd python3

VHEAP_OUT=hr.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/headroom" 4 >out.txt ||
    die "headroom under vheap exited $?"
"$ANALYZE" summary hr.vhcap --heap loom --format json >summary.json 2>err.txt ||
    die "summary: $(cat err.txt)"
"$ANALYZE" summary hr.vhcap --heap loom >summary.txt 2>&1 || die "summary (table) failed"
grep -q '^least headroom: .* 4 deep), event .event 104 %eyre /e/http-server/4 %request.' \
    summary.txt || die "summary's headroom line: $(grep headroom summary.txt)"
"$ANALYZE" series hr.vhcap --by-event >series.txt 2>err.txt && grep -q "least headroom" series.txt ||
    die "series --by-event (table): $(cat err.txt)"
"$ANALYZE" series hr.vhcap --by-event --format json >series.json 2>err.txt ||
    die "series --by-event: $(cat err.txt)"
"$ANALYZE" top hr.vhcap --by-event --by growth --format json >top.json 2>err.txt ||
    die "top --by-event: $(cat err.txt)"
"$ANALYZE" top hr.vhcap --by-event --by nonsense >/dev/null 2>err.txt
[ $? = 2 ] && grep -q "not one of" err.txt || die "top --by-event --by nonsense: $(cat err.txt)"

"$ANALYZE" report hr.vhcap -o hr.html 2>err.txt || die "report: $(cat err.txt)"

python3 - <<'PY' || die "the numbers disagree with what headroom did (above)"
import json, sqlite3, sys
exp = {}
for line in open("out.txt"):
    for kv in line.split()[1:]:
        k, v = kv.split("=")
        exp[k] = int(v)
bad = []
def same(what, got, want):
    if got != want:
        bad.append("%s: %r, the program did %r" % (what, got, want))
h = json.load(open("summary.json"))["heaps"][0]
same("least headroom", h["least_headroom"], exp["headroom"])
same("most in use", h["in_use_peak"], exp["peak"])
same("its depth", h["in_use_peak_depth"], exp["peak_depth"])
same("its event", h["in_use_peak_event"].split()[:2], ["event", str(exp["peak_event"])])
db = sqlite3.connect("hr.vhcap.sqlite")
road = db.execute("SELECT name FROM heaps WHERE id = ?", (h["in_use_peak_heap_id"],)).fetchone()
same("its heap", road, ("road",))
ev = json.load(open("series.json"))["events"]
same("events", len(ev), exp["events"])
same("labels once each", len({e["event"] for e in ev}), exp["events"])
for i, e in enumerate(ev, 1):
    same("event %d calls" % i, e["allocations"], exp["event%d_allocations" % i])
    same("event %d bytes" % i, e["bytes_allocated"], exp["event%d_bytes" % i])
    same("event %d home growth" % i, e["home_growth"], exp["event%d_growth" % i])
same("most in use over the events", max(e["in_use_peak"] for e in ev), exp["peak"])
same("least headroom over the events", min(e["least_headroom"] for e in ev), exp["headroom"])
top = json.load(open("top.json"))["events"]
same("top --by growth first", top[0]["home_growth"], max(exp["event%d_growth" % i]
                                                         for i in range(1, exp["events"] + 1)))
import re
page = open("hr.html").read()
m = re.search(r'"headroom":(\[\[.*?\]\])', page)
row = json.loads(m.group(1))[0] if m else None
same("the report's headroom row", row and (row[1] - row[2], row[5].split()[:2]),
     (exp["headroom"], ["event", str(exp["peak_event"])]))
for b in bad:
    print("FAIL: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
