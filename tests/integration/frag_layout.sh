# frag_layout — `vheap-analyze frag` against a heap whose layout the program
# knows (tests/programs/frag_layout.c: 64 B blocks with every other freed,
# 1000 B blocks with 15 of 16 freed, large blocks with the middle ones
# freed, in a glibc arena of their own). At the program's mark, the region
# holding its blocks must have exactly the slack, holes, largest hole, fits,
# pages, sparse pages and pinned bytes the program computed from its own
# addresses, for 4 KiB and 2 MiB pages, and each allocating function's
# stack exactly its blocks and pinned bytes. Then: --series replayed from the
# events equals the snapshot at every row, --map draws the heap, the CSV is
# the stacks, and bad options are usage errors.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/frag_layout"
need_cmd python3

profile cap.vhcap "$PROGS/frag_layout" >out.txt || die "frag_layout exited $?"
if grep -q '^skip ' out.txt; then
    sed -n 's/^skip //p' out.txt >&2
    exit 77
fi
grep -q '^frag P=4096 ' out.txt || die "frag_layout printed no expectations: $(head -n 3 out.txt)"
"$ANALYZE" load cap.vhcap db.sqlite >/dev/null 2>load.err || die "load failed: $(cat load.err)"

python3 - <<'PY' || die "frag checks failed (see above)"
import json, os, sqlite3, subprocess, sys
import xml.dom.minidom

A = os.environ["ANALYZE"]
errors = []

def fail(msg):
    errors.append(msg)
    print("FAIL: " + msg, file=sys.stderr)

def run(*args, rc=0):
    p = subprocess.run([A, "frag", *args], capture_output=True)
    if p.returncode != rc:
        fail("frag %s: exit %d, want %d: %s" % (" ".join(args), p.returncode, rc,
                                                p.stderr.decode(errors="replace").strip()))
    return p.stdout.decode(errors="replace")

def frag_json(*args):
    out = run("db.sqlite", "--format", "json", "--limit", "0", *args)
    try:
        return json.loads(out)
    except ValueError as e:
        fail("frag %s: not JSON: %s" % (" ".join(args), e))
        sys.exit(1)

def fields(line):
    return {k: v for k, v in (w.split("=", 1) for w in line.split()[1:] if "=" in w)}

num = lambda v: int(v, 16) if v.startswith("0x") else int(v)
expect, stacks = {}, {}
for line in open("out.txt"):
    if line.startswith("frag "):
        f = {k: num(v) for k, v in fields(line).items()}
        expect[f["P"]] = f
    elif line.startswith("stack "):
        f = fields(line)
        stacks[f["fn"]] = {k: int(v) for k, v in f.items() if k != "fn"}

# ---- the region of the program's blocks, to the byte ------------------------
KEYS = {"hi": "hi", "blocks": "blocks", "requested": "requested", "usable": "usable",
        "free": "free", "holes": "holes", "largest": "largest_hole",
        "largest_at": "largest_hole_at", "small_gaps": "small_gaps", "unusable": "unusable",
        "fit_64": "fit_64", "fit_4k": "fit_4k", "fit_1m": "fit_1m", "pages": "pages",
        "page_used": "page_bytes_used", "sparse_pages": "sparse_pages", "pinned": "pinned"}
for P, e in sorted(expect.items()):
    d = frag_json("--at", "mark:layout done", "--heap", "malloc", "--page-size", str(P))
    if d["frag"]["page_size"] != P:
        fail("page size %s, asked for %d" % (d["frag"]["page_size"], P))
    regs = [r for r in d["regions"] if r["lo"] == e["lo"]]
    if len(regs) != 1:
        fail("P=%d: no region starts at 0x%x (regions: %s)" %
             (P, e["lo"], [(hex(r["lo"]), hex(r["hi"])) for r in d["regions"]]))
        continue
    r = regs[0]
    for k, rk in KEYS.items():
        if r[rk] != e[k]:
            fail("P=%d: region %s = %s, the program computed %s" % (P, rk, r[rk], e[k]))
    if r["kind"] != "blocks":
        fail("the system heap's region has kind %s" % r["kind"])
    # the totals hold this region and the rest
    t = d["frag"]
    if t["free"] != sum(x["free"] for x in d["regions"]):
        fail("total free %d is not the regions' sum" % t["free"])
    if t["largest_hole"] < e["largest"]:
        fail("largest hole %d below the region's %d" % (t["largest_hole"], e["largest"]))
    if sum(h["bytes"] for h in d["hole_sizes"]) != t["free"]:
        fail("hole sizes add up to %d, free is %d" % (sum(h["bytes"] for h in d["hole_sizes"]),
                                                      t["free"]))
    big = [h for h in d["hole_sizes"] if h["min"] <= e["largest"] <= h["max"]]
    if not big or big[0]["holes"] < 1:
        fail("P=%d: no hole-size row holds the largest hole" % P)
    if P == 4096:
        # stacks: exact blocks, bytes and pinned bytes per allocating function
        for fn, want in stacks.items():
            rows = [s for s in d["stacks"] if s["stack"] and s["stack"][0]["function"] == fn]
            if len(rows) != 1:
                fail("stack of %s: %d rows" % (fn, len(rows)))
                continue
            for k, v in want.items():
                if rows[0][k] != v:
                    fail("stack of %s: %s = %s, the program computed %s" % (fn, k, rows[0][k], v))
            if rows[0]["slack"] != want["usable"] - want["requested"]:
                fail("stack of %s: slack %s" % (fn, rows[0]["slack"]))
        if sum(s["pinned"] for s in d["stacks"]) != t["pinned"]:
            fail("pinned bytes of the stacks add up to %d, total %d" %
                 (sum(s["pinned"] for s in d["stacks"]), t["pinned"]))
        classes = {c["min"]: c for c in d["size_classes"]}
        if 33 not in classes or classes[33]["blocks"] != stacks["alloc_small"]["blocks"]:
            fail("size class (32, 64] does not hold the %d small blocks: %s" %
                 (stacks["alloc_small"]["blocks"], classes.get(33)))

# after the mark the program freed the 16 medium blocks and two large ones
e = expect[4096]
end = frag_json("--heap", "malloc")
r = [x for x in end["regions"] if x["lo"] <= e["lo"] < x["hi"]]
if not r or r[0]["blocks"] != e["blocks"] - 18:
    fail("at the end the region holds %s blocks, want %d" %
         (r[0]["blocks"] if r else None, e["blocks"] - 18))
if end["frag"]["at"] != "end":
    fail("the default moment is %r, not end" % end["frag"]["at"])

# ---- --series: the replay equals the snapshot at every row ---------------------
db = sqlite3.connect("db.sqlite")
t_mark = db.execute("SELECT time FROM marks WHERE label = 'layout done'").fetchone()[0]
t_end = db.execute("SELECT max(runtime_ns) FROM processes").fetchone()[0]
db.close()
start = max(t_mark // 3, 1)
step = max((t_end - start) // 6, 1)
ser = frag_json("--series", "--from", "%dns" % start, "--to", "%dns" % t_end,
                "--interval", "%dns" % step)["series"]
if len(ser) < 6 or ser[0]["time_ns"] != start or ser[-1]["time_ns"] != t_end:
    fail("series rows: %d, from %s to %s" % (len(ser), ser[0]["time_ns"] if ser else None,
                                            ser[-1]["time_ns"] if ser else None))
SKEYS = ["blocks", "requested", "usable", "footprint", "free", "largest_hole", "unusable",
         "pages", "page_bytes_used", "sparse_pages", "pinned", "holes", "regions"]
for row in ser:
    snap = frag_json("--at", "%dns" % row["time_ns"])["frag"]
    snap["blocks"] = snap["live_blocks"]
    for k in SKEYS:
        if row[k] != snap[k]:
            fail("series at %d ns: %s = %s, the snapshot there says %s" %
                 (row["time_ns"], k, row[k], snap[k]))
full = frag_json("--series")["series"]
if not full or full[-1]["time_ns"] != t_end or full[-1]["blocks"] != end["frag"]["live_blocks"]:
    fail("the default series does not end at the end state")
if any(r["free"] < 0 or r["requested"] > r["usable"] for r in full):
    fail("a series row with negative free or requested above usable")

# ---- pictures and formats -----------------------------------------------------
run("db.sqlite", "--at", "mark:layout done", "--map", "map.svg")
run("db.sqlite", "--at", "mark:layout done", "--map", "age.svg", "--color", "age")
run("db.sqlite", "--series", "--svg", "series.svg")
for f in ("map.svg", "age.svg", "series.svg"):
    try:
        doc = xml.dom.minidom.parse(f)
    except Exception as ex:
        fail("%s is not well-formed: %s" % (f, ex))
        continue
    shapes = sum(len(doc.getElementsByTagName(t)) for t in ("rect", "path", "polyline"))
    if shapes < 10:
        fail("%s draws almost nothing" % f)
text = open("map.svg").read()
for fn in stacks:
    if fn not in text:
        fail("the map's legend does not name %s" % fn)
if "the largest hole" not in text:
    fail("the map does not show the largest hole")
if "newest" not in open("age.svg").read():
    fail("--color age has no age legend")

csv = run("db.sqlite", "--at", "mark:layout done", "--format", "csv").splitlines()
if not csv or "slack" not in csv[0] or "pinned" not in csv[0] or len(csv) < 4:
    fail("CSV is not the stacks table: %s" % csv[:2])
table = run("db.sqlite", "--at", "mark:layout done")
for words in ("internal slack", "largest hole", "external fragmentation", "alloc_medium"):
    if words not in table:
        fail("the table does not say %r" % words)

# usage errors exit 2, data errors 1
for args in (["--at", "soon"], ["--page-size", "3000"], ["--sparse", "101"],
             ["--series", "--at", "end"], ["--svg", "x.svg"], ["--map", "m.svg", "--color", "x"],
             ["--series", "--interval", "0"], ["--min-hole", "0"], ["--bogus"]):
    run("db.sqlite", *args, rc=2)
run("db.sqlite", "--at", "mark:no such mark", rc=1)
run("db.sqlite", "--heap", "no-such-heap", rc=1)
run("no-such-file.sqlite", rc=1)
sys.exit(1 if errors else 0)
PY
