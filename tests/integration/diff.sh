# diff — `vheap-analyze diff A B` and `report B --diff A`: diff_prog run
# with N=10 and, built again with functions aligned differently (so every
# address differs), with N=25. The diff must match the stacks by names
# across the two builds and show exactly what the program changed: leaky
# +15 calls, +480 B allocated, at peak and leaked; churn +15 calls and
# temporary, +720 B; hill +15 calls, +61440 B allocated and at peak; nothing
# else (steady and the runtime's own allocations are the same). The
# differential page renders in headless Chromium with those changes. The
# same two builds named prog-1.2 and prog-1.3 diff the same (A's main
# program is B's), and --map-module's pairs win over that default; a
# library renamed between builds matches by --map-module.
. "$TOP/tests/lib.sh"
need_cmd python3
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/diff_prog"

mkdir -p b && cc -O1 -g -falign-functions=64 -o b/diff_prog "$TOP/tests/programs/diff_prog.c" ||
    die "cannot build the second diff_prog"
profile "$PWD/a.vhcap" "$PROGS/diff_prog" 10 >/dev/null || die "diff_prog 10 failed"
profile "$PWD/b.vhcap" b/diff_prog 25 >/dev/null || die "b/diff_prog 25 failed"
"$ANALYZE" load -q a.vhcap a.sqlite && "$ANALYZE" load -q b.vhcap b.sqlite || die "load failed"
off() { sqlite3 "$1" "SELECT module_offset FROM frames WHERE function = 'hill'"; }
[ -n "$(off a.sqlite)" ] && [ "$(off a.sqlite)" != "$(off b.sqlite)" ] ||
    die "the two builds put hill at the same offset ($(off a.sqlite)): nothing to prove"

"$ANALYZE" diff a.sqlite b.sqlite --format json --limit 0 >diff.json 2>diff.err ||
    die "diff failed: $(cat diff.err)"
cat >check.py <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
want = {  # innermost function: (calls, bytes, temporary, peak, leaked) changes
    "leaky": (15, 480, 0, 480, 480),
    "churn": (15, 720, 15, 0, 0),
    "hill": (15, 61440, 0, 61440, 0),
}
keys = ["allocations", "bytes_allocated", "temporary", "peak_bytes", "leaked_bytes"]
got = {}
for r in d["diff"]:
    name = r["stack"][0]["function"]
    got[name] = tuple(r[k + "_change"] for k in keys)
    assert r["status"] == "changed", r
    for k in keys:
        assert r[k + "_b"] - r[k + "_a"] == r[k + "_change"], r
print("changed stacks:", got)
assert got == {k: v for k, v in want.items()}, f"got {got}, want {want}"
t = {r["measure"]: r["change"] for r in d["totals"]}
assert t == {"allocations": 45, "bytes": 62640, "temporary": 15, "peak": 61920, "leaked": 480}, t
# ranked by the largest change relative to its measure's total: leaky's
# +480 of 800 B leaked and churn's +15 of 25 temporary (60% each) before
# hill's +61440 of 103200 B at peak (59.5%)
order = [r["stack"][0]["function"] for r in d["diff"]]
assert order[2] == "hill" and set(order[:2]) == {"leaky", "churn"}, order
PYEOF
python3 check.py diff.json || die "the diff is not what diff_prog changed"

# The same builds under other file names: A's main program is B's.
cp "$PROGS/diff_prog" prog-1.2 && cp b/diff_prog prog-1.3 || die "cannot copy diff_prog"
profile "$PWD/a12.vhcap" ./prog-1.2 10 >/dev/null || die "prog-1.2 10 failed"
profile "$PWD/b13.vhcap" ./prog-1.3 25 >/dev/null || die "prog-1.3 25 failed"
"$ANALYZE" load -q a12.vhcap a12.sqlite && "$ANALYZE" load -q b13.vhcap b13.sqlite || die "load failed"
"$ANALYZE" diff a12.sqlite b13.sqlite --format json --limit 0 >names.json 2>diff.err ||
    die "diff prog-1.2 prog-1.3 failed: $(cat diff.err)"
python3 check.py names.json || die "prog-1.2 against prog-1.3 is not what diff_prog changed"
# a pair given wins over the default: A's main read as another name matches nothing of it
"$ANALYZE" diff a12.sqlite b13.sqlite --map-module prog-1.2=elsewhere --format json --limit 0 \
    >mapped.json 2>diff.err || die "diff --map-module failed: $(cat diff.err)"
python3 - mapped.json <<'PYEOF' || die "--map-module prog-1.2=elsewhere still matched prog-1.2's stacks"
import json, sys
d = json.load(open(sys.argv[1]))
st = {(r["stack"][0]["function"], r["status"]) for r in d["diff"]}
assert {("steady", "new"), ("steady", "gone"), ("hill", "new"), ("hill", "gone")} <= st, st
assert not any(s == "changed" for _, s in st), st
PYEOF
# A library renamed between builds (libcore.so.1, libcore.so.2: diff_prog's
# code as a library under a small main of its own): --map-module matches
# it; without, none of its stacks match.
echo 'int dp_main(int, char **); int main(int c, char **v) { return dp_main(c, v); }' >stub.c
for v in 1:-falign-functions=1 2:-falign-functions=64; do
    cc -O1 -g -fPIC -shared ${v#*:} -Dmain=dp_main -Wl,-soname,libcore.so.${v%%:*} \
        -o libcore.so.${v%%:*} "$TOP/tests/programs/diff_prog.c" &&
    cc -O1 -g -o core-${v%%:*} stub.c -L. -l:libcore.so.${v%%:*} -Wl,-rpath,"$PWD" ||
        die "cannot build libcore.so.${v%%:*}"
done
profile "$PWD/c1.vhcap" ./core-1 10 >/dev/null && profile "$PWD/c2.vhcap" ./core-2 25 >/dev/null ||
    die "core-1 10 or core-2 25 failed"
"$ANALYZE" load -q c1.vhcap c1.sqlite && "$ANALYZE" load -q c2.vhcap c2.sqlite || die "load failed"
"$ANALYZE" diff c1.sqlite c2.sqlite --map-module libcore.so.1=libcore.so.2 --format json --limit 0 \
    >lib.json 2>diff.err || die "diff --map-module libcore.so.1=libcore.so.2 failed: $(cat diff.err)"
python3 check.py lib.json || die "libcore.so.1 mapped to libcore.so.2 is not what diff_prog changed"
"$ANALYZE" diff c1.sqlite c2.sqlite --format json --limit 0 >nolib.json 2>diff.err ||
    die "diff of core-1 and core-2 failed: $(cat diff.err)"
python3 check.py nolib.json >/dev/null 2>&1 && die "libcore.so.1 matched libcore.so.2 without --map-module"

# --by, the table and CSV
first=$("$ANALYZE" diff a.sqlite b.sqlite --by temporary --format csv | sed -n 2p)
case $first in *churn*) ;; *) die "--by temporary: first row is not churn's: $first" ;; esac
"$ANALYZE" diff a.sqlite b.sqlite --by leaked --limit 1 | grep -q 'leaky' || die "--by leaked: no leaky"
# the same run against itself: nothing changed
"$ANALYZE" diff a.sqlite a.sqlite --format json | python3 -c \
    'import json,sys; d=json.load(sys.stdin); assert d["diff"] == [], d["diff"]' ||
    die "a run differs from itself"
# bad input
"$ANALYZE" diff a.sqlite >/dev/null 2>err.txt; expect_eq "one run: exit" $? 2
"$ANALYZE" diff a.sqlite nothere.sqlite >/dev/null 2>err.txt; expect_eq "missing B: exit" $? 1
"$ANALYZE" diff a.sqlite b.sqlite --by nonsense >/dev/null 2>err.txt; expect_eq "bad --by: exit" $? 2
"$ANALYZE" diff a.sqlite b.sqlite --map-module prog >/dev/null 2>err.txt
expect_eq "--map-module without '=': exit" $? 2
grep -q "is not OLD=NEW" err.txt || die "--map-module prog: $(cat err.txt)"
"$ANALYZE" report b.sqlite --map-module a=b -o x.html >/dev/null 2>err.txt
expect_eq "report --map-module without --diff: exit" $? 2

# the differential report
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
    { echo "chromium is not installed: the differential page is not checked" >&2; exit 0; }
"$ANALYZE" report b.sqlite --diff a.sqlite -o diff.html 2>report.err || die "report --diff failed: $(cat report.err)"
for frag in "#cost=peak" "#cost=temporary"; do
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$PWD/chrome" --virtual-time-budget=5000 --dump-dom \
        "file://$PWD/diff.html$frag" >diff.dom 2>chrome.err || die "chromium failed: $(tail -3 chrome.err)"
    q() { python3 "$TOP/tests/report/dom.py" diff.dom "$@"; }
    expect_eq "$frag: JS error" "$(q error)" none
    expect_eq "$frag: script finished" "$(q ready)" 1
    case $frag in
    *peak)
        expect_eq "peak: this run's total" "$(q id:fg-total)" "$(sqlite3 b.sqlite 'SELECT peak_bytes FROM heaps')"
        expect_eq "peak: hill in this run" "$(q node:hill)" 102400
        # the table of changes: the biggest first
        expect_eq "peak: first change" "$(q toprow:1 | cut -d'|' -f1-3)" "40960|102400|61440" ;;
    *temporary)
        expect_eq "temporary: churn in this run" "$(q node:churn)" 25
        expect_eq "temporary: first change" "$(q toprow:1 | cut -d'|' -f1-3)" "10|25|15" ;;
    esac
done
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
    --user-data-dir="$PWD/chrome" --virtual-time-budget=5000 --window-size=1400,1000 \
    --screenshot="$PWD/diff.png" "file://$PWD/diff.html" >/dev/null 2>chrome.err ||
    die "screenshot failed: $(tail -3 chrome.err)"
cp diff.png "$PROGS/../../report-diff.png" 2>/dev/null || true
# the page of prog-1.3 against prog-1.2 matches the stacks the same way
"$ANALYZE" report b13.sqlite --diff a12.sqlite -o names.html 2>report.err ||
    die "report --diff of prog-1.2 failed: $(cat report.err)"
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$PWD/chrome" --virtual-time-budget=5000 --dump-dom \
    "file://$PWD/names.html#cost=peak" >diff.dom 2>chrome.err || die "chromium failed: $(tail -3 chrome.err)"
expect_eq "prog-1.3 against prog-1.2: first change at peak" "$(q toprow:1 | cut -d'|' -f1-3)" "40960|102400|61440"
echo "diff: exactly leaky, churn and hill changed, by what diff_prog did"
