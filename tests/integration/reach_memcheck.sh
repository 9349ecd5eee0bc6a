# reach_memcheck — the reachability scan at exit against valgrind's
# memcheck, on the pointer graphs of memcheck's own leak tests, built anew
# by leak_shapes: leak-cases (cases), leak-cycle (cycle), leak-tree (tree),
# leak-0 (zero), leak-regroot (regroot), leak_cpp_interior's layouts whose
# interior pointer memcheck's default heuristics take for a start (cxx:
# new[], length64, stdstring, and two near misses), leakotron
# (leakotron). Each shape runs under `valgrind --leak-check=full
# --show-leak-kinds=all --xml=yes` and under the shim. Block for block:
# every block but leakotron's is
# made at a recursion depth of its own (leak_shapes' shape_at), so its
# stack names it in both tools; each must be in memcheck's class with
# memcheck's size, and neither tool may have a block the other lacks.
# leakotron's thousands of blocks share a stack: its classes' counts and
# bytes must be memcheck's, and all of it lost, as many blocks and bytes
# as the program says it still holds. Where a shape builds a test's graph
# exactly (leak-cases, leak-tree's A..G, leak-cycle's six rings), the class
# counts of those blocks must also be the ones that test's .stderr.exp
# expects. `custom`: an arena the program
# declares as a heap of its own (vheap.h, as Vere's loom) holds the only
# pointer to a malloc block: reachable, as memcheck (to which the arena is
# plain mapped memory) says; the arena heap's own blocks opt out of the
# scan (live, no class).
# Not compared, each for its reason (docs/design.md): leak-pool's
# mempools (a custom heap is not classified), leak-delta (deltas between
# checks on request, not classes), reach_thread_register (a pointer only
# in another thread's register) and leak_cpp_interior's multiple
# inheritance (memcheck tells a vtable pointer by its symbols) are
# differences stated there.
# For the shapes that print nothing (no libc buffer is live at exit),
# summary's line per class and `leaks --class C` give memcheck's totals.
# Also: the scan says it is done, read no unreadable byte, and
# VHEAP_REACH_TIMEOUT=0 turns it off (no class, no `reach` row); the
# report colours the classes.
. "$TOP/tests/lib.sh"
need_cmd valgrind python3 sqlite3
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/leak_shapes"

cat >check.py <<'PYEOF'
import json, re, sqlite3, sys
import xml.etree.ElementTree as ET
from vhcheck import checker

# check.py SHAPE VALGRIND_XML DB PROGRAM_OUTPUT
shape, xml, db, out = sys.argv[1:5]
check, errors = checker(shape + ": ")
kinds = {"Leak_StillReachable": 0, "Leak_PossiblyLost": 1,
         "Leak_IndirectlyLost": 2, "Leak_DefinitelyLost": 3}
names = ["reachable", "possible", "indirect", "lost"]

def depth(fns):
    """The block's serial: how many shape_at frames its stack holds."""
    return sum(1 for f in fns if f and f.split(".")[0] == "shape_at")

# memcheck: one loss record a stack and class; with one block a stack, a
# record is a block. A lost block's leakedbytes include what it holds
# indirectly; the text says "N (D direct, I indirect) bytes".
vg_blocks, vg_lot = {}, {c: [0, 0] for c in range(4)}
vg_all = {c: [0, 0] for c in range(4)}
for e in ET.parse(xml).getroot().iter("error"):
    kind = e.findtext("kind")
    if kind not in kinds:
        continue
    fns = [f.findtext("fn") for f in e.iter("frame")]
    n = int(e.find("xwhat/leakedblocks").text)
    d = re.search(r"\(([\d,]+) direct", e.findtext("xwhat/text"))
    size = int(d.group(1).replace(",", "")) if d else int(e.find("xwhat/leakedbytes").text)
    vg_all[kinds[kind]][0] += n
    vg_all[kinds[kind]][1] += size
    if depth(fns):
        check(f"memcheck: one block in the record of serial {depth(fns) - 1}", n, 1)
        vg_blocks[depth(fns) - 1] = (names[kinds[kind]], size)
    elif "lot_alloc" in fns:
        vg_lot[kinds[kind]][0] += n
        vg_lot[kinds[kind]][1] += size

con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
frames = {}
for sid, fn in con.execute("""SELECT sf.stack_id, f.function FROM stack_frames sf
                              JOIN frames f ON f.id = sf.frame_id"""):
    frames.setdefault(sid, []).append(fn)
vh_blocks, vh_lot = {}, {c: [0, 0] for c in range(4)}
for sid, c, size in con.execute("SELECT stack_id, class, size FROM leaks WHERE heap_id = 0"):
    fns = frames.get(sid, [])
    if c is None and (depth(fns) or "lot_alloc" in fns):
        errors.append(f"{shape}: a block of stack {sid} not classified")
        continue
    if depth(fns):
        k = depth(fns) - 1
        check(f"vheap: serial {k} is one block", k in vh_blocks, False)
        vh_blocks[k] = (names[c], size)
    elif "lot_alloc" in fns:
        vh_lot[c][0] += 1
        vh_lot[c][1] += size

if shape == "leakotron":
    check("memcheck saw blocks", sum(v[0] for v in vg_lot.values()) > 0, True)
    for c in range(4):
        check(f"{names[c]} [blocks, bytes]", vh_lot[c], vg_lot[c])
    held = [int(x) for x in open(out).read().split()[1:3]]
    check("lost + indirect = what the program holds",
          [vh_lot[2][0] + vh_lot[3][0], vh_lot[2][1] + vh_lot[3][1]], held)
else:
    # the counts memcheck's own tests expect (their .stderr.exp), for the
    # blocks that build their graphs exactly: serials [lo, hi]
    expected = {"cases": (0, 14, {"lost": 3, "indirect": 2, "possible": 6, "reachable": 4}),
                "tree": (0, 6, {"lost": 2, "indirect": 2, "reachable": 3}),
                "cycle": (0, 17, {"lost": 4, "indirect": 14})}
    if shape in expected:
        lo, hi, want = expected[shape]
        got = {}
        for k in range(lo, hi + 1):
            if k in vh_blocks:
                got[vh_blocks[k][0]] = got.get(vh_blocks[k][0], 0) + 1
        check(f"serials {lo}..{hi} by class, as memcheck's .stderr.exp", got, want)
    check("memcheck saw blocks", len(vg_blocks) > 0, True)
    for k in sorted(set(vg_blocks) | set(vh_blocks)):
        check(f"serial {k} [class, size]", vh_blocks.get(k), vg_blocks.get(k))
if shape in ("cases", "cycle", "tree", "zero", "regroot", "cxx"):
    # these print nothing, so libc holds no buffer: every block live at
    # exit is a shape's, and summary's line per class and leaks --class
    # must give memcheck's totals
    summ = {r["class"]: [r["blocks"], r["bytes"]]
            for r in json.load(open(f"summary.{shape}.json"))["reachability"]}
    for c in range(4):
        check(f"summary: {names[c]} [blocks, bytes]", summ.get(names[c]), vg_all[c])
        rows = json.load(open(f"leaks.{shape}.{names[c]}.json"))["leaks"]
        check(f"leaks --class {names[c]} [blocks, bytes]",
              [sum(r["blocks"] for r in rows), sum(r["bytes"] for r in rows)], vg_all[c])
if shape == "custom":
    # the declared heap's blocks opt out: live, not classified
    held = int(open(out).read().split()[1])
    check("the arena heap's blocks [live, classified]", list(con.execute(
        """SELECT count(*), count(class) FROM leaks l JOIN heaps h ON h.id = l.heap_id
           WHERE h.name = 'arena'""").fetchone()), [held, 0])
status, unreadable = con.execute("SELECT status, unreadable_bytes FROM reach").fetchone()
check("scan status", status, "done")
check("unreadable bytes", unreadable, 0)
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
PYEOF

for shape in cases cycle tree zero regroot cxx custom leakotron; do
    valgrind --leak-check=full --show-leak-kinds=all --num-callers=100 --xml=yes \
        --xml-file="vg.$shape.xml" "$PROGS/leak_shapes" "$shape" >/dev/null 2>&1 ||
        die "valgrind on $shape failed"
    VHEAP_OUT="vh.$shape.vhcap" VHEAP_QUIET=1 VHEAP_DEPTH=100 LD_PRELOAD="$VHEAP_LIB" \
        "$PROGS/leak_shapes" "$shape" >"$shape.out" || die "$shape under the shim exited $?"
    "$ANALYZE" load "vh.$shape.vhcap" "vh.$shape.sqlite" 2>load.err || die "load: $(cat load.err)"
    "$ANALYZE" summary "vh.$shape.sqlite" --format json >"summary.$shape.json" ||
        die "summary of $shape failed"
    for c in lost indirect possible reachable; do
        "$ANALYZE" leaks "vh.$shape.sqlite" --class $c --limit 0 --format json \
            >"leaks.$shape.$c.json" || die "leaks --class $c of $shape failed"
    done
    PYTHONPATH="$TOP/tests" python3 check.py "$shape" "vg.$shape.xml" "vh.$shape.sqlite" \
        "$shape.out" || die "$shape: not memcheck's classes"
done

# The report colours the classes: one span each, with the DB's totals.
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
    { echo "chromium is not installed (scripts/install-deps.sh installs it)" >&2; exit 77; }
"$ANALYZE" report vh.cases.sqlite -o cases.html 2>report.err || die "report: $(cat report.err)"
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --user-data-dir="$PWD/chrome" \
    --virtual-time-budget=5000 --dump-dom "file://$PWD/cases.html" >dom.html 2>chrome.err ||
    die "chromium failed: $(tail -3 chrome.err)"
for c in lost indirect possible reachable; do
    want=$(sqlite3 vh.cases.sqlite "SELECT count(*) FROM leaks l JOIN leak_classes k USING (class)
                                    WHERE k.name = '$c'")
    grep -q "data-class=\"$c\">[a-z ]* [0-9.]*[KMG]*B in $want block" dom.html ||
        die "the report has no $c span with $want blocks: $(grep -o '<p class=\"reach\".*</p>' dom.html)"
done

# Off: no scan, no classes.
VHEAP_REACH_TIMEOUT=0 VHEAP_OUT=off.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" \
    "$PROGS/leak_shapes" cases || die "cases with the scan off exited $?"
"$ANALYZE" load off.vhcap off.sqlite 2>load.err || die "load: $(cat load.err)"
expect_eq "rows of reach with the scan off" "$(sqlite3 off.sqlite 'SELECT count(*) FROM reach')" 0
expect_eq "classified leaks with the scan off" \
    "$(sqlite3 off.sqlite 'SELECT count(*) FROM leaks WHERE class IS NOT NULL')" 0
echo "reach_memcheck: memcheck's classes, block for block, on cases, cycle, tree, zero, regroot, cxx, custom; leakotron's totals"
