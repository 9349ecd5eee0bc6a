# report — `vheap-analyze report`: the demo's page rendered by headless
# Chromium (Debian's chromium) and its DOM, after the script ran, checked
# against what the program knows it did and the database: the flame graph's
# totals per cost, a search, the live set at the end from the timeline's last
# snapshot, the timeline's peak, the top table, the heaps and fragmentation
# tables; heap and tag filters on loomsim's heaps; no JS error, and a page
# whose data is broken must show the error marker (so this check can fail).
# A screenshot is kept in the build directory (report-demo.png).
. "$TOP/tests/lib.sh"
need_cmd python3
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
    { echo "chromium is not installed (scripts/install-deps.sh installs it)" >&2; exit 77; }
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/demo_app" "$PROGS/loomsim"

# render PAGE FRAGMENT OUT: the DOM after the page's script ran
render() {
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$PWD/chrome" --virtual-time-budget=5000 --dump-dom \
        "file://$PWD/$1$2" >"$3" 2>chrome.err || die "chromium failed on $1$2: $(tail -3 chrome.err)"
    [ -s "$3" ] || die "chromium wrote no DOM for $1$2: $(tail -3 chrome.err)"
}
q() { python3 "$TOP/tests/report/dom.py" "$@"; }
sql() { sqlite3 "$db" "$1"; }
# has FUNCTION: SQL true for a stack_stats row (s) whose stack has the
# function in a frame, inlined or not
has() {
    echo "EXISTS (SELECT 1 FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id
          WHERE sf.stack_id = s.stack_id AND (f.function = '$1' OR EXISTS (SELECT 1
          FROM frame_inlines i WHERE i.frame_id = f.id AND i.function = '$1')))"
}
ok_page() {
    expect_eq "$1: JS error" "$(q "$1" error)" "none"
    expect_eq "$1: script finished" "$(q "$1" ready)" "1"
}

echo "== demo_app"
profile "$PWD/demo.vhcap" "$PROGS/demo_app" >demo.out || die "demo_app failed under vheap"
set -- $(sed -n 's/^demo_app: leaked \([0-9]*\) blocks (\([0-9]*\) bytes).*/\1 \2/p' demo.out)
leak_blocks=$1 leak_bytes=$2
db=demo.sqlite
"$ANALYZE" load -q demo.vhcap $db || die "load failed"
"$ANALYZE" report $db -o demo.html 2>report.err || die "report failed: $(cat report.err)"
grep -q 'https\?://' demo.html && grep -o '<[^>]*https\?://[^>]*>' demo.html | grep -v 'xmlns\|w3.org' |
    grep -q . && die "the page refers to the network: $(grep -o '<[^>]*https\?://[^>]*>' demo.html | head -3)"

# The time it states is the command's: given a capture, loading it included
# (it counted only the page: 1.95 s said for 4.5 s). Both clocks are the
# analyzer's own, so the stated time can never be below the load's.
cp demo.vhcap fresh.vhcap
"$ANALYZE" report fresh.vhcap -o fresh.html 2>fresh.err || die "report of a capture failed: $(cat fresh.err)"
python3 - <<'PY' || die "report's stated time leaves out the load (above)"
import re, sqlite3
said = float(re.search(r"written in ([0-9.]+) s;", open("fresh.err").read()).group(1))
load = float(sqlite3.connect("fresh.vhcap.sqlite").execute(
    "SELECT value FROM meta WHERE key = 'load_seconds'").fetchone()[0])
print(f"report said {said:.2f} s, its load took {load:.3f} s")
assert said + 0.005 >= load, (said, load)
PY

render demo.html "" peak.dom
ok_page peak.dom
expect_eq "peak: flame graph total = heap's peak" "$(q peak.dom id:fg-total)" "$(sql 'SELECT peak_bytes FROM heaps WHERE id = 0')"
expect_eq "timeline's highest live = heap's peak" "$(q peak.dom id:tl-peak)" "$(sql 'SELECT peak_bytes FROM heaps WHERE id = 0')"
expect_eq "peak: cache_line's frame" "$(q peak.dom node:cache_line)" \
    "$(sql "SELECT sum(peak_bytes) FROM stack_stats s WHERE $(has cache_line)")"
# the top table sorts by bytes at the peak: the first row is cache_line's
row=$(q peak.dom toprow:1)
case $row in *"|cache_line (demo_app.c:"*) ;; *) die "top row is not cache_line's: $row" ;; esac
expect_eq "top row's bytes at peak" "$(echo "$row" | cut -d'|' -f6)" "$(sql 'SELECT max(peak_bytes) FROM stack_stats')"
expect_eq "heaps table: malloc's calls|peak|leaked" "$(q peak.dom heaprow:0 | cut -d'|' -f5,7,9)" \
    "$(sql 'SELECT allocations || "|" || peak_bytes || "|" || leaked_bytes FROM heaps WHERE id = 0')"
expect_eq "fragmentation: live blocks at the end" "$(q peak.dom frag:blocks | cut -d, -f1)" "$leak_blocks"

# The hover box: a frame's stack on mouseover, the clicked frame's after a
# zoom, and nothing of an old view after a click on another cost (it kept
# the stack hovered before). A probe script after the page's own does it.
python3 - <<'PY'
page = open("demo.html", encoding="utf-8").read()
probe = """<script>
(function () {
  var root = document.documentElement, box = document.getElementById('fg-detail');
  /* the mouse over a frame: its place on the canvas, as #fg lists it */
  function mouse(type, name) {
    var f = JSON.parse(document.getElementById('fg').getAttribute('data-frames'))
              .filter(function (f) { return f[1] === name && !f[3]; })[0];
    var r = document.getElementById('fg-canvas').getBoundingClientRect();
    document.getElementById('fg-canvas').dispatchEvent(new MouseEvent(type, { bubbles: true,
      clientX: r.left + f[4] + Math.min(3, f[6] / 2), clientY: r.top + f[5] * 18 + 8 }));
  }
  mouse('mousemove', 'cache_line');
  root.setAttribute('data-hover', box.textContent.split('\\n')[0]);
  document.querySelector('button.cost[data-cost=leaked]').click();
  root.setAttribute('data-after-cost', box.textContent);
  mouse('click', 'main');
  root.setAttribute('data-after-zoom', box.textContent.split('\\n')[0]);
})();
</script>
</body>"""
i = page.rindex("</body>")
open("probe.html", "w", encoding="utf-8").write(page[:i] + probe + page[i + len("</body>"):])
PY
render probe.html "" probe.dom
ok_page probe.dom
case $(q probe.dom attr:data-hover) in
"cache_line  in demo_app  (demo_app.c:"*) ;; *) die "hover over cache_line: $(q probe.dom attr:data-hover)" ;; esac
expect_eq "the box after a click on another cost" "$(q probe.dom attr:data-after-cost)" \
    "Hover over a frame to see its stack; click to zoom."
case $(q probe.dom attr:data-after-zoom) in
"main  in demo_app"*) ;; *) die "the box after a click on main: $(q probe.dom attr:data-after-zoom)" ;; esac

render demo.html "#cost=leaked" leaked.dom
ok_page leaked.dom
expect_eq "leaked: total = what demo_app says it leaked" "$(q leaked.dom id:fg-total)" "$leak_bytes"
expect_eq "leaked: cache_line's frame" "$(q leaked.dom node:cache_line)" "$leak_bytes"

render demo.html "#cost=calls&search=count_word" calls.dom
ok_page calls.dom
expect_eq "calls: total" "$(q calls.dom id:fg-total)" "$(sql 'SELECT allocations FROM heaps WHERE id = 0')"
expect_eq "calls: search count_word" "$(q calls.dom id:fg-matched)" \
    "$(sql "SELECT sum(allocations) FROM stack_stats s WHERE $(has count_word)")"
render demo.html "#cost=temporary&zoom=process_line" temp.dom
expect_eq "temporary: process_line zoomed" "$(q temp.dom node:process_line)" "$(sql 'SELECT temporary FROM heaps')"

# the last snapshot is the end: live bytes then are the leaked bytes
render demo.html "#t=end" end.dom
ok_page end.dom
expect_eq "live at the end (last snapshot)" "$(q end.dom id:fg-total)" "$leak_bytes"

# a snapshot in the middle of the run: the live bytes then, as `series`
# (per event, on an axis of events) or `frag --at` (on a time axis: the
# snapshot at T holds every event before T) count them
snap_check() {                     # PAGE DOM LABEL
    render "$1" "#snap=10" "$2"
    ok_page "$2"
    _x=$(q "$2" snap) _got=$(q "$2" id:fg-total)
    if [ "$(q "$2" axis)" = events ]; then
        _want=$("$ANALYZE" series $db --interval event --top 0 --limit 0 --format csv |
                awk -F, -v n="$_x" 'NR == n + 1 { print $5 }')
    else
        _want=$("$ANALYZE" frag $db --at "$((_x - 1))ns" --format json |
                python3 -c 'import json, sys; print(json.load(sys.stdin)["frag"]["requested"])')
    fi
    expect_eq "$3: live at the 11th snapshot ($(q "$2" axis) $_x)" "$_got" "$_want"
}
snap_check demo.html mid.dom demo

# the screenshot a person looks at
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
    --user-data-dir="$PWD/chrome" --virtual-time-budget=5000 --window-size=1400,1800 \
    --screenshot="$PWD/demo.png" "file://$PWD/demo.html" >/dev/null 2>chrome.err ||
    die "screenshot failed: $(tail -3 chrome.err)"
[ "$(wc -c <demo.png)" -gt 20000 ] || die "the screenshot is (nearly) empty"
cp demo.png "$PROGS/../../report-demo.png" 2>/dev/null || true

# a page whose data is broken shows the error marker
sed 's/{"run":/{"run":,/' demo.html >broken.html
cmp -s demo.html broken.html && die "could not break the page's data"
render broken.html "" broken.dom
[ "$(q broken.dom error)" != none ] || die "a broken page shows no JS error marker"

echo "== loomsim: heaps and tags"
VHEAP_OUT="$PWD/loom.%p.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/loomsim" \
    >loom.out 2>loom.err || die "loomsim failed under vheap: $(tail -3 loom.err)"
main=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' loom.out)
db=loom.sqlite
"$ANALYZE" load -q "loom.$main.vhcap" $db || die "load of loomsim's capture failed"
"$ANALYZE" report $db -o loom.html 2>report.err || die "report failed: $(cat report.err)"
render loom.html "#cost=allocated&heap=loom" loom.dom
ok_page loom.dom
expect_eq "heap loom: bytes allocated" "$(q loom.dom id:fg-total)" "$(sql "SELECT bytes_allocated FROM heaps WHERE name = 'loom'")"
# A custom heap's rows are named by who called its hook, as frame_rule.h
# names stacks: loomsim's hook is vheap_alloc, inlined into note_alloc, which
# its allocators lm_walloc and lm_celloc wrap (they read "vheap_alloc" before).
q loom.dom topfns >loomfns.txt
[ -s loomfns.txt ] || die "heap loom: the top table is empty"
grep -qxE 'vheap_[a-z]*|note_alloc|lm_walloc' loomfns.txt &&
    die "heap loom: rows named by the hook: $(sort loomfns.txt | uniq -c | sort -rn | head -5 | tr '\n' ' ')"
grep -qx lm_celloc loomfns.txt || die "heap loom: no row named lm_celloc: $(sort -u loomfns.txt | head | tr '\n' ' ')"
tag=$(sql "SELECT label FROM tags ORDER BY id LIMIT 1")
[ -n "$tag" ] || die "loomsim has no tags"
render loom.html "#cost=calls&tag=$tag" tag.dom
ok_page tag.dom
expect_eq "tag $tag: calls" "$(q tag.dom id:fg-total)" \
    "$(sql "SELECT sum(allocations) FROM stack_stats s JOIN tags t ON t.id = s.tag_id WHERE t.label = '$tag'")"
snap_check loom.html loommid.dom loomsim
render loom.html "#cost=leaked" loomleak.dom
expect_eq "every heap: leaked" "$(q loomleak.dom id:fg-total)" "$(sql 'SELECT sum(leaked_bytes) FROM heaps')"
echo "== a stripped library's rows: Debian's sqlite3"
# libsqlite3's static functions have no names, its malloc wrapper inside
# sqlite3Malloc among them: every row read "libsqlite3.so.0+0xa7504" before.
# A named function outside the allocator names a row before an address.
if command -v sqlite3 >/dev/null; then
    VHEAP_OUT="$PWD/sq.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" sqlite3 :memory: \
        "CREATE TABLE t(a, b); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c
         WHERE i < 20000) INSERT INTO t SELECT i, printf('row %d', i) FROM c;
         CREATE INDEX tb ON t(b); SELECT count(*) FROM t WHERE b LIKE 'row 1%';" >sq.out ||
        die "sqlite3 failed under vheap"
    "$ANALYZE" load -q sq.vhcap sq.sqlite && "$ANALYZE" report sq.sqlite -o sq.html 2>report.err ||
        die "sqlite3's report failed: $(cat report.err)"
    render sq.html "#cost=allocated" sq.dom
    ok_page sq.dom
    q sq.dom topfns >sqfns.txt
    rows=$(wc -l <sqfns.txt) addr=$(grep -c '+0x[0-9a-f]*$' sqfns.txt)
    [ "$rows" -gt 0 ] && [ $((2 * addr)) -lt "$rows" ] && grep -q '^sqlite3' sqfns.txt ||
        die "sqlite3: $addr of $rows rows named by an address: $(sort sqfns.txt | uniq -c | sort -rn | head -3 | tr '\n' ' ')"
fi

echo "== bad input"
# refused WANT_RC NAME ARGS...: that exit and one line on stderr
refused() {
    _want=$1; shift
    "$ANALYZE" "$@" >bad.out 2>bad.err
    _rc=$?
    [ $_rc -eq "$_want" ] || die "$*: exit $_rc, want $_want: $(cat bad.err)"
    expect_eq "stderr lines of: $*" "$(wc -l <bad.err)" 1
}
refused 2 report loom.sqlite
refused 2 report loom.sqlite -o x.html --snapshots 500
refused 2 report loom.sqlite -o x.html --prune abc
refused 2 report loom.sqlite -o x.html --heap malloc
refused 1 report nothere.sqlite -o x.html
printf 'not a database at all' >junk.sqlite
refused 1 report junk.sqlite -o x.html
refused 1 report loom.sqlite --diff junk.sqlite -o x.html
refused 1 report loom.sqlite -o "$PWD/no/such/dir/x.html"
[ ! -e x.html ] || die "a failed report left x.html behind"
echo "report: totals, search, snapshot, filters and tables agree with the database"
