# sample_outputs — every number a sampled capture gives out is an estimate,
# labelled so, or refused (issue 25). halfleak knows its totals (calls,
# bytes, peak, leaked blocks and bytes). Recorded in full, summary says
# exactly those; sampled (16 KiB), each output — summary, leaks and top
# JSON, series JSON, and the heaptrack (read by heaptrack_print), massif,
# chrome-trace, flamegraph and pprof (read by go tool pprof) exports — is
# within 5 standard deviations of what the program did, the deviation
# computed from the sampled capture itself (each recorded block of s bytes
# stands for 1/p, p = 1 - exp(-s/R): the variance of the estimate of a sum
# of y over blocks is the sum of (1 - p)/p^2 y^2 over the recorded ones, as
# tests/sample/estimate.py), plus the rounding each weight and each human
# unit allows. Call counts of heaptrack's file are the sample's own (said on
# stderr). Labels: JSON "sampling", "(estimate)" in chrome's counters,
# "estimates" in chart titles and in every export's stderr. frag refuses
# with a one-line reason (exit 1), the report shows the reason instead of
# its fragmentation table.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/halfleak"
command -v python3 >/dev/null 2>&1 || die "python3 is needed (scripts/install-deps.sh)"
need_cmd heaptrack_print ms_print go
RATE=16384

VHEAP_OUT=full.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/halfleak" >truth.txt ||
    die "halfleak (full) exited $?"
VHEAP_SAMPLE=$RATE VHEAP_OUT=s.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/halfleak" \
    >out.txt || die "halfleak (sampled) exited $?"
cmp -s truth.txt out.txt || die "halfleak did different work in the two runs"

a() { "$ANALYZE" "$@" 2>>err.txt || die "vheap-analyze $* exited $?: $(tail -n 3 err.txt)"; }
a summary --format json full.vhcap >full.summary.json
a summary --format json s.vhcap >summary.json
a leaks --format json --limit 0 s.vhcap >leaks.json
a top --format json --limit 0 s.vhcap >top.json
a series --format json s.vhcap >series.json
a chart s.vhcap -o chart.svg
vh_dump s.vhcap s.dump
for f in heaptrack massif chrome-trace pprof; do
    "$ANALYZE" export --format $f -o "s.$f" s.vhcap 2>"$f.err" ||
        die "export --format $f exited $?: $(tail -n 3 "$f.err")"
done
for c in leaked allocations; do
    "$ANALYZE" export --format flamegraph --cost $c -o "s.$c.folded" s.vhcap \
        2>"flamegraph.$c.err" || die "export --format flamegraph exited $?"
done
heaptrack_print -f s.heaptrack >ht.txt 2>&1 || die "heaptrack_print failed: $(tail -n 3 ht.txt)"
for st in inuse_space alloc_space inuse_objects alloc_objects; do
    unit=
    case $st in *_space) unit=-unit=byte ;; esac   # sizes in bytes, not kB
    go tool pprof -top -nodecount=1 -sample_index=$st $unit s.pprof >"pp.$st" 2>&1 ||
        die "go tool pprof failed: $(tail -n 3 "pp.$st")"
done

python3 - "$RATE" <<'PY' || die "sampled outputs off or unlabelled (above)"
import json, math, re, sys
from vhcheck import checker
check, errors = checker()
rate = float(sys.argv[1])
truth = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", open("truth.txt").read())}

# the full capture is the program's, exactly
h = json.load(open("full.summary.json"))["heaps"][0]
for k, t in (("allocations", "calls"), ("bytes_allocated", "bytes"), ("peak_bytes", "peak"),
             ("leaked_blocks", "leaked_blocks"), ("leaked_bytes", "leaked_bytes")):
    check(f"full summary {k} = the program's", h[k], truth[t])

# standard deviations from the sample itself
var = dict.fromkeys(("calls", "bytes", "leaked_blocks", "leaked_bytes"), 0.0)
live, n = {}, 0
for line in open("s.dump"):
    w = line.split()
    if len(w) < 3:
        continue
    f = dict(x.split("=", 1) for x in w[3:] if "=" in x)
    if w[2] == "alloc" and f.get("heap") == "0" and f["addr"] != "0x0":
        s = int(f["size"])
        p = -math.expm1(-s / rate)
        var["calls"] += (1 - p) / p / p
        var["bytes"] += (1 - p) / p / p * s * s
        live[f["addr"]] = s
        n += 1
    elif w[2] == "free" and f.get("heap") == "0":
        live.pop(f["addr"], None)
for s in live.values():
    p = -math.expm1(-s / rate)
    var["leaked_blocks"] += (1 - p) / p / p
    var["leaked_bytes"] += (1 - p) / p / p * s * s
sd = {k: math.sqrt(v) for k, v in var.items()}
sd["peak"] = sd["bytes"]           # every block is live at the peak
print("samples: %d recorded allocations; sd: %s" % (n, {k: round(v) for k, v in sd.items()}))

def near(what, got, key, unit=0):
    """got within 5 sd of the program's number, plus 1 a recorded block
    (weights are rounded) and the resolution of a human unit"""
    want = truth[key]
    ok = got is not None and abs(got - want) <= 5 * sd[key] + n + unit
    print("%-40s %12s  program %12d  sd %10.0f%s" % (what, got, want, sd[key], "" if ok else "  OFF"))
    check(f"{what} within 5 sd of the program's {key}", ok, True)

d = json.load(open("summary.json"))
check("summary JSON says sampled", d.get("sampling", {}).get("estimates"), True)
h = d["heaps"][0]
for k, t in (("allocations", "calls"), ("bytes_allocated", "bytes"), ("peak_bytes", "peak"),
             ("leaked_blocks", "leaked_blocks"), ("leaked_bytes", "leaked_bytes")):
    near("summary " + k, h[k], t)
d = json.load(open("leaks.json"))
check("leaks JSON says sampled", d.get("sampling", {}).get("sample_rate"), int(rate))
near("leaks: bytes", sum(e["bytes"] for e in d["leaks"]), "leaked_bytes")
near("leaks: blocks", sum(e["blocks"] for e in d["leaks"]), "leaked_blocks")
d = json.load(open("top.json"))
check("top JSON says sampled", d.get("sampling", {}).get("estimates"), True)
near("top: allocations", sum(e["allocations"] for e in d["top"]), "calls")
near("top: bytes allocated", sum(e["bytes_allocated"] for e in d["top"]), "bytes")
d = json.load(open("series.json"))
check("series JSON says sampled", d.get("sampling", {}).get("estimates"), True)
near("series: live at the end", d["series"][-1]["live_bytes"], "leaked_bytes")
near("series: highest live", max(r["max_live_bytes"] for r in d["series"]), "peak")
check("chart title says estimates", "estimates from a sample" in open("chart.svg").read(), True)

# heaptrack_print: sizes like 5.46M (two decimals, 1000-based)
def human(s):
    m = re.match(r"([\d.]+)([KMG]?)", s)
    return round(float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)])
ht = open("ht.txt").read()
m = re.search(r"total memory leaked: (\S+)", ht)
near("heaptrack_print: leaked", human(m.group(1)) if m else None, "leaked_bytes", 5e3)
m = re.search(r"peak heap memory consumption: (\S+)", ht)
near("heaptrack_print: peak", human(m.group(1)) if m else None, "peak", 5e3)

heap = [int(x) for x in re.findall(r"^mem_heap_B=(\d+)", open("s.massif").read(), re.M)]
near("massif: last snapshot", heap[-1] if heap else None, "leaked_bytes")
near("massif: peak", max(heap) if heap else None, "peak")

tr = json.load(open("s.chrome-trace"))
ev = tr["traceEvents"] if isinstance(tr, dict) else tr
c = [e for e in ev if e.get("ph") == "C" and e["name"].startswith("heap malloc")]
check("chrome-trace counters named estimates", {e["name"] for e in c}, {"heap malloc (estimate)"})
c.sort(key=lambda e: e["ts"])
near("chrome-trace: live at the end", c[-1]["args"]["live_bytes"] if c else None, "leaked_bytes")
near("chrome-trace: highest", max(e["args"]["live_bytes"] for e in c) if c else None, "peak")

def folded(p):
    return sum(int(l.rsplit(" ", 1)[1]) for l in open(p) if l.strip())
near("flamegraph: leaked", folded("s.leaked.folded"), "leaked_bytes")
near("flamegraph: allocations", folded("s.allocations.folded"), "calls")

for st, key in (("inuse_space", "leaked_bytes"), ("alloc_space", "bytes"),
                ("inuse_objects", "leaked_blocks"), ("alloc_objects", "calls")):
    m = re.search(r"of (\d+)B? total", open("pp." + st).read())
    near("pprof: " + st, int(m.group(1)) if m else None, key)
check("pprof's comment says estimate", "every value is an estimate" in open("pp.inuse_space").read(),
      True)

for f in ("heaptrack", "massif", "chrome-trace", "pprof", "flamegraph.leaked"):
    check(f"export {f} says estimate on stderr", "estimate" in open(f + ".err").read(), True)
sys.exit("\n".join(errors) if errors else 0)
PY

# frag: a one-line reason, exit 1; the report shows it instead of its table
"$ANALYZE" frag s.vhcap >frag.out 2>frag.err
expect_eq "frag on a sampled capture: exit" "$?" 1
[ ! -s frag.out ] || die "frag printed numbers: $(head -n 3 frag.out)"
expect_eq "frag's reason" "$(grep -c 'frag: a sampled capture .*fragmentation cannot be estimated' frag.err)" 1
"$ANALYZE" frag --series s.vhcap >/dev/null 2>&1 && die "frag --series ran on a sampled capture"
a report -o report.html s.vhcap
grep -q '"frag_refused":"a sampled capture' report.html || die "the report has no refusal of fragmentation"
grep -q '"frag":\[\]' report.html || die "the report computed fragmentation of a sample"
"$ANALYZE" frag full.vhcap >/dev/null 2>frag.err || die "frag on the full capture: $(cat frag.err)"
exit 0
