# frag_loomsim — fragmentation of a custom heap with bounds, against the
# books of tests/programs/loomsim.c. loomsim leaves its loom full of holes
# and then compacts it (blocks move); at the marks "pack begin" and "pack
# end" it prints the home road's blocks, usable bytes, free bytes, holes,
# largest hole, live span, what compaction would reclaim and 4 KiB pages
# touched. `frag --heap loom` must say the same at both marks, and the
# fragmentation must drop by as much as loomsim's own numbers say. The
# directory and the gap above the heap are declared regions (vheap_region):
# neither counts as a hole. Also:
# roads (heaps nested in the loom) never count twice in the footprint, the
# series replayed through moves, nested and destroyed heaps equals the
# snapshot, and the loom's map draws.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/loomsim"
need_cmd python3

VHEAP_OUT='loom.%p.vhcap' VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/loomsim" \
    >out.txt 2>err.txt || die "loomsim under vheap exited $?: $(tail -n 3 err.txt)"
grep -q ' vheap=on ' out.txt || die "loomsim did not find vheap under the shim"
main=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' out.txt)
[ -n "$main" ] || die "no summary line for loomsim's main process"
[ -f "loom.$main.vhcap" ] || die "no capture of the main process (files: $(ls | tr '\n' ' '))"
"$ANALYZE" load "loom.$main.vhcap" db.sqlite >/dev/null 2>load.err ||
    die "load failed: $(cat load.err)"

MAIN=$main python3 - <<'PY' || die "frag disagrees with loomsim (see above)"
import json, os, sqlite3, subprocess, sys
import xml.dom.minidom

A = os.environ["ANALYZE"]
pid = os.environ["MAIN"]
errors = []

def fail(msg):
    errors.append(msg)
    print("FAIL: " + msg, file=sys.stderr)

def frag(*args):
    p = subprocess.run([A, "frag", "db.sqlite", "--format", "json", "--limit", "0", *args],
                       capture_output=True)
    if p.returncode:
        fail("frag %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.decode().strip()))
        sys.exit(1)
    return json.loads(p.stdout)

books = {}
for line in open("out.txt"):
    w = line.split()
    if len(w) > 2 and w[:2] == ["loomsim", "frag"] and "pid=%s" % pid in w:
        f = dict(x.split("=", 1) for x in w[2:])
        books[f["phase"]] = {k: int(v) for k, v in f.items() if k != "phase"}
if sorted(books) != ["after", "before"]:
    fail("loomsim printed frag books for %s" % sorted(books))
    sys.exit(1)

KEYS = {"blocks": "blocks", "usable": "usable", "free": "free", "holes": "holes",
        "largest": "largest_hole", "span": "span", "reclaim": "reclaim", "pages": "pages"}
got = {}
for phase, mark in (("before", "pack begin"), ("after", "pack end")):
    d = frag("--heap", "loom", "--at", "mark:" + mark)
    want = books[phase]
    # the loom's declared regions are parts of it, not heaps to name
    if d["frag"]["heaps"] != ["loom"]:
        fail("%s: frag names the heaps %s, not just the loom" % (mark, d["frag"]["heaps"]))
    regs = [r for r in d["regions"] if r["kind"] == "heap bounds"]
    if len(regs) != 1 or regs[0]["lo"] != 0x200000000:
        fail("%s: the loom's region is missing: %s" % (mark, d["regions"]))
        continue
    r = got[phase] = regs[0]
    for k, rk in KEYS.items():
        if r[rk] != want[k]:
            fail("%s: %s = %s, loomsim's books say %s" % (mark, rk, r[rk], want[k]))
    if d["frag"]["reclaim"] != want["reclaim"]:
        fail("%s: total reclaim %s, loomsim says %s" % (mark, d["frag"]["reclaim"],
                                                        want["reclaim"]))
# the compaction pass: same blocks, fewer holes, less to reclaim, fewer pages
b, a = books["before"], books["after"]
if not (a["blocks"] == b["blocks"] and a["holes"] < b["holes"] and a["reclaim"] < b["reclaim"]):
    fail("loomsim's own books show no drop: before %s, after %s" % (b, a))
if "before" in got and "after" in got:
    gb, ga = got["before"], got["after"]
    if b["reclaim"] - a["reclaim"] != gb["reclaim"] - ga["reclaim"]:
        fail("reclaim dropped by %d, loomsim says %d" %
             (gb["reclaim"] - ga["reclaim"], b["reclaim"] - a["reclaim"]))
    # (the gap above the heap is a declared region, not a hole: what pack
    # leaves is a few small holes, so 1 - largest/free need not drop)
    if ga["free"] >= gb["free"] or ga["holes"] >= gb["holes"]:
        fail("pack left as much free space: %s bytes in %s holes -> %s in %s" %
             (gb["free"], gb["holes"], ga["free"], ga["holes"]))

# roads are carved from the loom: the footprint of loom/* is the loom's size
# whenever the loom exists, never more
db = sqlite3.connect("db.sqlite")
loom_size, created = db.execute("SELECT size, create_time FROM heaps WHERE name = 'loom'").fetchone()
roads = db.execute("SELECT count(*) FROM heaps WHERE parent_id IS NOT NULL").fetchone()[0]
t_begin = db.execute("SELECT time FROM marks WHERE label = 'pack begin'").fetchone()[0]
t_end_pack = db.execute("SELECT time FROM marks WHERE label = 'pack end'").fetchone()[0]
db.close()
if roads < 2:
    fail("loomsim made %d nested heaps: the test needs roads" % roads)
ser = frag("--series", "--heap", "loom/*", "--interval", "1ms")["series"]
for row in ser:
    want = loom_size if row["time_ns"] >= created else 0
    if row["footprint"] != want:
        fail("loom/* at %d ns: footprint %d, the loom is %d" % (row["time_ns"], row["footprint"],
                                                                 want))
        break
# the replay (moves, resizes, destroyed roads) equals the snapshot
SKEYS = ["blocks", "requested", "usable", "footprint", "free", "largest_hole", "holes",
         "regions", "pages", "page_bytes_used", "sparse_pages", "pinned", "reclaim", "unusable"]
ser = frag("--series", "--heap", "loom/*", "--from", "%dns" % (t_begin - 1),
           "--to", "%dns" % t_end_pack, "--interval", "%dns" % max(1, (t_end_pack - t_begin) // 4))
pick = [ser["series"][0], ser["series"][len(ser["series"]) // 2], ser["series"][-1]]
for row in pick + [frag("--series", "--heap", "loom/*")["series"][-1]]:
    snap = frag("--heap", "loom/*", "--at", "%dns" % row["time_ns"])["frag"]
    snap["blocks"] = snap["live_blocks"]
    for k in SKEYS:
        if row[k] != (snap[k] or 0):
            fail("series at %d ns: %s = %s, the snapshot says %s" % (row["time_ns"], k, row[k],
                                                                     snap[k]))

p = subprocess.run([A, "frag", "db.sqlite", "--heap", "loom", "--at", "mark:pack begin",
                    "--map", "loom.svg"], capture_output=True)
if p.returncode:
    fail("--map: exit %d: %s" % (p.returncode, p.stderr.decode()))
else:
    doc = xml.dom.minidom.parse("loom.svg")
    text = open("loom.svg").read()
    if "0x200000000" not in text or "not drawn" not in text:
        fail("the loom's map lacks its range or the break for its big hole")
sys.exit(1 if errors else 0)
PY
