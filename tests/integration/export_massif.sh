# export_massif — `vheap-analyze export --format massif` read by valgrind's
# ms_print. Checked against the database: the snapshot ms_print marks as the
# peak holds heaps.peak_bytes at heaps.peak_time, no snapshot holds more,
# and its tree names the program's functions with the bytes each stack held
# at the peak (stack_stats.peak_bytes); the last snapshot is at the end of
# the run, holds the leaked bytes and names the leaking functions; times
# never go back; every tree node holds at least what its children hold. Also
# several heaps merged (loomsim's loom and roads) and --depth.
. "$TOP/tests/lib.sh"
command -v ms_print >/dev/null 2>&1 ||
    { echo "ms_print is not installed (apt-get install valgrind)" >&2; exit 77; }
need_cmd python3
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/ht_peak" "$PROGS/loomsim"

cat >check.py <<'EOF'
import re, sqlite3, sys
from vhcheck import checker

# check.py MASSIF MS_PRINT_OUTPUT DB HEAP_WHERE MERGED
massif, printed, db, where, merged = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "1"
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
check, errors = checker()

# ---- the file itself -----------------------------------------------------------
snaps, cur = [], None
lines = open(massif).read().split("\n")
check("header", [l.split(":")[0] for l in lines[:3]], ["desc", "cmd", "time_unit"])
for l in lines[3:]:
    if l.startswith("snapshot="):
        cur = {"n": int(l[9:]), "tree": []}
        snaps.append(cur)
    elif "=" in l and not l.startswith("#") and not re.match(r"\s*n\d+:", l):
        k, v = l.split("=", 1)
        cur[k] = v
    elif re.match(r"\s*n\d+:", l):
        mo = re.match(r"( *)n(\d+): (\d+) (.*)", l)
        cur["tree"].append((len(mo.group(1)), int(mo.group(2)), int(mo.group(3)), mo.group(4)))
check("snapshots numbered 0..n-1", [s["n"] for s in snaps], list(range(len(snaps))))
check("at most 101 snapshots", len(snaps) <= 101, True)
times = [float(s["time"]) for s in snaps]
check("times never go back", times == sorted(times), True)
peaks = [s for s in snaps if s["heap_tree"] == "peak"]
check("one peak snapshot", len(peaks), 1)
for s in snaps:
    t = s["tree"]
    if s["heap_tree"] == "empty":
        continue
    if t[0][2] != int(s["mem_heap_B"]):
        errors.append(f"snapshot {s['n']}: root {t[0][2]} != mem_heap_B {s['mem_heap_B']}")
    # children: the next lines one deeper, as many as the node says
    for i, (depth, nkids, b, _) in enumerate(t):
        kids, j = [], i + 1
        while j < len(t) and t[j][0] > depth:
            if t[j][0] == depth + 1:
                kids.append(t[j][2])
            j += 1
        if len(kids) != nkids or sum(kids) > b:
            errors.append(f"snapshot {s['n']}: node {t[i]} has children {kids}")

# ---- against the database --------------------------------------------------------
heaps = con.execute(f"SELECT id, peak_bytes, peak_time, leaked_bytes FROM heaps WHERE {where}").fetchall()
ids = ",".join(str(h[0]) for h in heaps)
runtime = con.execute("SELECT runtime_ns FROM processes").fetchone()[0]
p = peaks[0]
heap_max = max(int(s["mem_heap_B"]) for s in snaps)
check("no snapshot above the peak", heap_max, int(p["mem_heap_B"]))
if not merged:
    check("peak = heaps.peak_bytes", int(p["mem_heap_B"]), heaps[0][1])
    check("peak time = heaps.peak_time (us)", p["time"], f"{heaps[0][2] // 1000000}.{heaps[0][2] // 1000 % 1000:03d}")
    # first level: the innermost frames, with what their stacks held at the peak
    want = {}
    for fn, line, b in con.execute(
            "SELECT f.function, f.line, sum(st.peak_bytes) FROM stack_stats st"
            " JOIN stack_frames sf ON sf.stack_id = st.stack_id AND sf.idx = 0"
            " JOIN frames f ON f.id = sf.frame_id WHERE st.heap_id = ? GROUP BY f.address",
            (heaps[0][0],)):
        if b and b * 100 >= int(p["mem_heap_B"]):
            key = f"{fn}:{line}"
            want[key] = want.get(key, 0) + b
    got = {}
    for depth, _, b, det in p["tree"]:
        mo = re.match(r"0x[0-9a-f]+: (\S+) \(\S+:(\d+)\)", det)
        if depth == 1 and mo:
            got[f"{mo.group(1)}:{mo.group(2)}"] = got.get(f"{mo.group(1)}:{mo.group(2)}", 0) + b
    check("peak tree: innermost frames and their bytes", got, want)
else:
    check("merged peak within its heaps' peaks",
          max(h[1] for h in heaps) <= int(p["mem_heap_B"]) <= sum(h[1] for h in heaps), True)
last = snaps[-1]
check("last snapshot at the end (ms)", last["time"], f"{runtime // 1000000}.{runtime // 1000 % 1000:03d}")
check("last snapshot holds what leaked", int(last["mem_heap_B"]), sum(h[3] for h in heaps))
check("last snapshot is detailed", last["heap_tree"], "detailed")

# ---- what ms_print made of it -----------------------------------------------------
out = open(printed).read()
mo = re.search(r"Detailed snapshots: \[(.*)\]", out)
check("ms_print lists the peak", bool(mo and f"{p['n']} (peak)" in mo.group(1)), True)
rows = {int(m.group(1)): int(m.group(2).replace(",", ""))
        for m in re.finditer(r"^\s*(\d+)\s+[0-9.,]+\s+[0-9,]+\s+([0-9,]+)\s+[0-9,]+\s+[0-9,]+$", out, re.M)}
check("ms_print's useful-heap of the peak", rows.get(p["n"]), int(p["mem_heap_B"]))
check("ms_print shows every snapshot", len(rows), len(snaps))
if errors:
    print("\n".join("FAIL: " + e for e in errors), file=sys.stderr)
    sys.exit(1)
EOF

echo "== ht_peak"
profile "$PWD/peak.vhcap" "$PROGS/ht_peak" >peak.out || die "ht_peak failed under vheap"
"$ANALYZE" export --format massif peak.vhcap -o massif.out.peak 2>err.txt ||
    die "export failed: $(cat err.txt)"
cat err.txt
ms_print massif.out.peak >peak.txt 2>&1 || die "ms_print failed: $(tail -3 peak.txt)"
python3 check.py massif.out.peak peak.txt peak.vhcap.sqlite "id = 0" 0 ||
    die "ht_peak: the massif file disagrees with the database"
# the functions, as ms_print prints the peak's tree
awk '/\(peak\)/ { p = 1 } p' peak.txt >peaktree.txt
for fn in hold second_hill main; do
    grep -q "[0-9]: $fn (ht_peak.c:[0-9]*)" peaktree.txt || die "ms_print's peak tree does not name $fn"
done
grep -q '(1,000,000B) 0x[0-9a-f]*: second_hill (ht_peak.c:' peaktree.txt ||
    die "ms_print's peak tree does not give second_hill's 1,000,000 bytes"

echo "== --depth 1"
"$ANALYZE" export --format massif peak.vhcap --depth 1 -o massif.out.d1 2>/dev/null ||
    die "export --depth 1 failed"
ms_print massif.out.d1 >d1.txt 2>&1 || die "ms_print failed on --depth 1"
python3 check.py massif.out.d1 d1.txt peak.vhcap.sqlite "id = 0" 0 || die "--depth 1 disagrees"
grep -q 'second_hill' massif.out.d1 && die "--depth 1 kept a caller of the innermost frame"

echo "== loomsim"
VHEAP_OUT="$PWD/loom.%p.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/loomsim" \
    >loom.out 2>loom.err || die "loomsim failed under vheap: $(tail -3 loom.err)"
main=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' loom.out)
[ -n "$main" ] || die "no main summary in loomsim's output"
"$ANALYZE" export -f massif "loom.$main.vhcap" -o massif.out.malloc 2>/dev/null ||
    die "export of loomsim failed"
ms_print massif.out.malloc >malloc.txt 2>&1 || die "ms_print failed on loomsim's malloc"
python3 check.py massif.out.malloc malloc.txt "loom.$main.vhcap.sqlite" "id = 0" 0 ||
    die "loomsim malloc: the massif file disagrees with the database"
"$ANALYZE" export -f massif "loom.$main.vhcap" --heap 'loom/*' -o massif.out.loom 2>err.txt ||
    die "export of loom/* failed"
grep -q "merged into one" err.txt || die "no note on the merged heaps"
ms_print massif.out.loom >loom.txt 2>&1 || die "ms_print failed on loom/*"
python3 check.py massif.out.loom loom.txt "loom.$main.vhcap.sqlite" \
    "id IN (SELECT id FROM heaps WHERE name = 'loom' OR name LIKE 'road.%')" 1 ||
    die "loomsim loom/*: the massif file disagrees with the database"
echo "ms_print reads the massif exports; peak and end match the database"
