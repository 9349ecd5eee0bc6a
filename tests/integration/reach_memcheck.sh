# reach_memcheck — the reachability scan at exit against valgrind's
# memcheck, on the shapes of memcheck's own leak tests (leak_shapes: cases,
# cycle, tree). Each shape runs under `valgrind --leak-check=full
# --show-leak-kinds=all --xml=yes` and under the shim; for the blocks that
# shape_node() allocated, the count and bytes of each class must be
# memcheck's, class by class (definitely, indirectly, possibly lost, still
# reachable). Also: the scan says it is done, read no unreadable byte, and
# VHEAP_REACH_TIMEOUT=0 turns it off (no class, no `reach` row); the
# report colours the classes.
. "$TOP/tests/lib.sh"
need_cmd valgrind python3 sqlite3
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/leak_shapes"

cat >check.py <<'EOF'
import re, sqlite3, sys
import xml.etree.ElementTree as ET
from vhcheck import checker

# check.py SHAPE VALGRIND_XML DB
shape, xml, db = sys.argv[1:4]
check, errors = checker(shape + ": ")
kinds = {"Leak_StillReachable": 0, "Leak_PossiblyLost": 1,
         "Leak_IndirectlyLost": 2, "Leak_DefinitelyLost": 3}
names = ["reachable", "possible", "indirect", "lost"]
want = {c: [0, 0] for c in range(4)}
for e in ET.parse(xml).getroot().iter("error"):
    kind = e.findtext("kind")
    if kind not in kinds:
        continue
    fns = [f.findtext("fn") for f in e.iter("frame")]
    if "shape_node" not in fns:
        continue
    w = want[kinds[kind]]
    w[0] += int(e.find("xwhat/leakedblocks").text)
    # A lost block's leakedbytes include what it holds indirectly; the
    # text says "N (D direct, I indirect) bytes".
    d = re.search(r"\(([\d,]+) direct", e.findtext("xwhat/text"))
    w[1] += int(d.group(1).replace(",", "")) if d else int(e.find("xwhat/leakedbytes").text)
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
got = {c: [0, 0] for c in range(4)}
for c, n, b in con.execute("""
        SELECT class, count(*), sum(size) FROM leaks l
        WHERE EXISTS (SELECT 1 FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id
                      WHERE sf.stack_id = l.stack_id AND f.function = 'shape_node')
        GROUP BY class"""):
    if c is None:
        errors.append(f"{shape}: {n} blocks not classified")
        continue
    got[c] = [n, b]
check("memcheck saw blocks", sum(v[0] for v in want.values()) > 0, True)
for c in range(4):
    check(f"{names[c]} [blocks, bytes]", got[c], want[c])
status, unreadable = con.execute("SELECT status, unreadable_bytes FROM reach").fetchone()
check("scan status", status, "done")
check("unreadable bytes", unreadable, 0)
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
EOF

for shape in cases cycle tree; do
    valgrind --leak-check=full --show-leak-kinds=all --xml=yes --xml-file="vg.$shape.xml" \
        "$PROGS/leak_shapes" "$shape" >/dev/null 2>&1 || die "valgrind on $shape failed"
    VHEAP_OUT="vh.$shape.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" \
        "$PROGS/leak_shapes" "$shape" || die "$shape under the shim exited $?"
    "$ANALYZE" load "vh.$shape.vhcap" "vh.$shape.sqlite" 2>load.err || die "load: $(cat load.err)"
    PYTHONPATH="$TOP/tests" python3 check.py "$shape" "vg.$shape.xml" "vh.$shape.sqlite" ||
        die "$shape: not memcheck's classes"
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
echo "reach_memcheck: memcheck's classes on cases, cycle and tree"
