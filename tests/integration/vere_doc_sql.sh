# vere_doc_sql — every SQL example of docs/vere.md, run on a loomsim capture
# (loomsim has Vere's shapes: nested roads, jet tags, event marks, a meld and
# a pack, declared regions, and two of Vere's malloc leaks copied on
# purpose). Each query must run and answer; the answers are checked against
# what loomsim knows it did.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/loomsim"
need_cmd python3

VHEAP_OUT='loom.%p.vhcap' VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/loomsim" \
    >out.txt 2>err.txt || die "loomsim under vheap exited $?: $(tail -n 3 err.txt)"
main=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' out.txt)
[ -n "$main" ] || die "no summary line for loomsim's main process"
"$ANALYZE" load -q "loom.$main.vhcap" db.sqlite || die "load failed"

DOC="$TOP/docs/vere.md" python3 - <<'PY' || die "docs/vere.md's SQL disagrees with loomsim (see above)"
import os, re, sqlite3, sys

errors = []
def fail(m):
    errors.append(m)
    print("FAIL: " + m, file=sys.stderr)

summary = {}
events = 0
for line in open("out.txt"):
    w = line.split()
    if w[:2] == ["loomsim", "summary"] and "role=main" in w:
        summary = {k: v for k, v in (x.split("=", 1) for x in w[2:])}
        events = int(summary["marks"])
blocks = re.findall(r"```sql\n(.*?)```", open(os.environ["DOC"]).read(), re.S)
if len(blocks) != 7:
    fail("docs/vere.md has %d SQL examples; this test knows 7: update both" % len(blocks))
    sys.exit(1)
db = sqlite3.connect("db.sqlite")
res = []
for i, sql in enumerate(blocks):
    try:
        rows = db.execute(sql).fetchall()
    except sqlite3.Error as e:
        fail("example %d does not run: %s\n%s" % (i + 1, e, sql))
        rows = []
    if not rows:
        fail("example %d answers nothing:\n%s" % (i + 1, sql))
    res.append(rows)
if errors:
    sys.exit(1)
depths, tags, per_event, regions, span, meld, leaks = res

# roads by depth: loomsim nests three deep, and every road is counted
if [r[0] for r in depths] != [1, 2, 3] or sum(r[1] for r in depths) != int(summary["roads"]):
    fail("roads by depth %s; loomsim pushed %s roads, three deep" % (depths, summary["roads"]))
# jets: the tags loomsim pushes in inner roads are there
got = {r[0] for r in tags}
for t in ("jet:add", "jet:mul", "jet:grow", "meld"):
    if t not in got:
        fail("tag %s missing from the per-jet answer %s" % (t, sorted(got)))
# one row per event mark, the loom's size beside it, live bytes known
if len(per_event) != events or any(r[2] != 64 << 20 for r in per_event) or \
        sum(r[1] is None for r in per_event) > 1:
    fail("per event: %d rows for %d events: %s" % (len(per_event), events, per_event[:5]))
# regions: the directory (metadata) and the gap above the heap (unused)
if sorted(r[2] for r in regions) != ["meta", "unused"]:
    fail("regions at the end: %s" % regions)
# the live set's span: the one leak loomsim leaves in the loom
if span[0][0] != 1:
    fail("the home road's live set at the end: %s, loomsim leaves one block" % (span,))
# meld's system-malloc burst: the jam buffer
if max(r[3] for r in meld) < 300000:
    fail("no malloc burst between the meld marks: %s" % meld)
# the worked example: jets_boot's table once at boot and once per meld, the
# pack bitmap once per pack
def rows_for(fn):
    return [(r[0], r[1]) for r in leaks if r[3].startswith(fn + " ")]
boot = rows_for("jets_boot")
if sorted(boot, key=str) != sorted([(None, 1), ("meld begin", int(summary["melds"]))], key=str):
    fail("jets_boot's tables live at exit: %s (1 at boot, 1 per meld expected)" % boot)
pack = [r for r in leaks if r[0] == "pack begin" and " <- pack " not in r[3] and
        r[3].startswith("pack ")]
if sum(r[1] for r in pack) != int(summary["packs"]):
    fail("pack bitmaps live at exit: %s, loomsim packed %s times" % (pack, summary["packs"]))
sys.exit(1 if errors else 0)
PY
exit 0
