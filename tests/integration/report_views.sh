# report_views — the report's time window, bottom-up flame graph,
# callers/callees table and allocation-size histogram, rendered by headless
# Chromium and checked against what tests/programs/report_views.c knows it
# allocated, when, where and of what size (its phases A, B, C are 300 ms
# apart, each opened by a mark); and the window past the run's end refused
# (the command: exit 1, one line; the page: a message, no window).
# Screenshots of the new views are kept in the build directory.
. "$TOP/tests/lib.sh"
need_cmd python3
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
    { echo "chromium is not installed (scripts/install-deps.sh installs it)" >&2; exit 77; }
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/report_views"

# the program's numbers (report_views.c)
NA=200 SA=24 NB=100 SB=1000 NBS=50 SBS=100 NC=30 SC=5000

render() {                         # PAGE FRAGMENT OUT
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
        --user-data-dir="$PWD/chrome" --virtual-time-budget=5000 --dump-dom \
        "file://$PWD/$1$2" >"$3" 2>chrome.err || die "chromium failed on $1$2: $(tail -3 chrome.err)"
    [ -s "$3" ] || die "chromium wrote no DOM for $1$2: $(tail -3 chrome.err)"
    expect_eq "$1$2: JS error" "$(q "$3" error)" "none"
    expect_eq "$1$2: script finished" "$(q "$3" ready)" "1"
}
shot() {                           # PAGE FRAGMENT PNG
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
        --user-data-dir="$PWD/chrome" --virtual-time-budget=5000 --window-size=1400,2400 \
        --screenshot="$PWD/$3" "file://$PWD/$1$2" >/dev/null 2>chrome.err || die "screenshot failed: $(tail -3 chrome.err)"
    cp "$3" "$PROGS/../../report-$3" 2>/dev/null || true
}
q() { python3 "$TOP/tests/report/dom.py" "$@"; }

profile "$PWD/rv.vhcap" "$PROGS/report_views" >rv.out || die "report_views failed under vheap"
grep -q "^report_views: a $NA x $SA, b $NB x $SB" rv.out || die "report_views said: $(cat rv.out)"
db=rv.sqlite
"$ANALYZE" load -q rv.vhcap $db || die "load failed"
"$ANALYZE" report $db -o rv.html 2>report.err || die "report failed: $(cat report.err)"

echo "== time window: phase B alone"
# The marks place the phases; a window from midway A..B to midway B..C
# holds phase B whatever the width of the page's spans between snapshots.
set -- $(sqlite3 $db "SELECT time FROM marks ORDER BY time")
[ $# -eq 3 ] || die "want 3 marks, got: $*"
from=$(python3 -c "print(($1 + $2) / 2e9)") to=$(python3 -c "print(($2 + $3) / 2e9)")
render rv.html "#cost=allocated&from=$from&to=$to" win.dom
expect_eq "bytes allocated in the window" "$(q win.dom id:fg-total)" $((NB * SB + NBS * SBS))
expect_eq "alloc_b's frame in the window" "$(q win.dom node:alloc_b)" $((NB * SB + NBS * SBS))
expect_eq "alloc_a's frame in the window" "$(q win.dom node:alloc_a)" 0
case $(q win.dom toprow:1) in *"|$((NB * SB))|alloc_b <- main"*) ;;
    *) die "the window's top row is not alloc_b's $((NB * SB)) bytes: $(q win.dom toprow:1)" ;; esac
render rv.html "#cost=calls&from=$from&to=$to" wincalls.dom
expect_eq "calls in the window" "$(q wincalls.dom id:fg-total)" $((NB + NBS))
# live in it: A's blocks (live when it opens) and what B allocated
render rv.html "#cost=allocated&rmode=live&from=$from&to=$to" winlive.dom
expect_eq "bytes live in the window" "$(q winlive.dom id:fg-total)" $((NA * SA + NB * SB + NBS * SBS))
shot rv.html "#cost=allocated&from=$from&to=$to" window.png

# the same window dragged across the timeline by a probe after the page's
# script (the timeline's geometry: report.js's drawTimeline), and a press
# left of the plot (before the run) that selects nothing
python3 - "$from" "$to" <<'PY'
import sys
page = open("rv.html", encoding="utf-8").read()
probe = """<script>
(function () {
  var D = JSON.parse(document.getElementById('vheap-data').textContent), TL = D.timeline;
  var svg = document.querySelector('#tl svg'), r = svg.getBoundingClientRect();
  var X = function (t) { return r.left + (70 + 1120 * t / (TL.points * TL.width)) * r.width / 1200; };
  var y = r.top + r.height / 2, root = document.documentElement;
  function drag(x0, x1) {
    svg.dispatchEvent(new MouseEvent('mousedown', { bubbles: true, clientX: x0, clientY: y }));
    svg.dispatchEvent(new MouseEvent('mousemove', { bubbles: true, clientX: x1, clientY: y }));
    svg.dispatchEvent(new MouseEvent('mouseup', { bubbles: true, clientX: x1, clientY: y }));
  }
  document.querySelector('button.cost[data-cost=allocated]').click();
  drag(r.left + 2, X(%s));
  root.setAttribute('data-outside', document.getElementById('range-info') ? 'selected' : 'none');
  drag(X(%s), X(%s));
  root.setAttribute('data-dragged', document.getElementById('fg-total').getAttribute('data-value'));
})();
</script>
""" % (float(sys.argv[2]) * 1e9, float(sys.argv[1]) * 1e9, float(sys.argv[2]) * 1e9)
i = page.rindex("</body>")
open("drag.html", "w", encoding="utf-8").write(page[:i] + probe + page[i:])
PY
render drag.html "" drag.dom
expect_eq "a press before the run's start selects nothing" "$(q drag.dom attr:data-outside)" none
expect_eq "bytes allocated in the dragged window" "$(q drag.dom attr:data-dragged)" $((NB * SB + NBS * SBS))

# the same window from the command line: the page opens on it
"$ANALYZE" report $db -o cli.html --from "${from}s" --to "${to}s" 2>report.err ||
    die "report --from --to failed: $(cat report.err)"
render cli.html "#cost=allocated" cli.dom
expect_eq "--from/--to: bytes allocated in the window" "$(q cli.dom id:fg-total)" $((NB * SB + NBS * SBS))
[ "$(q cli.dom range)" != none ] || die "--from/--to: the page shows no window"
"$ANALYZE" report --help | grep -q -- '--from T, --to T' || die "report --help does not list --from/--to"

echo "== bottom-up"
render rv.html "#cost=allocated&view=bottom" bu.dom
expect_eq "bottom-up: alloc_b innermost" "$(q bu.dom frame:1:alloc_b)" $((NB * SB))
expect_eq "bottom-up: b_small innermost" "$(q bu.dom frame:1:b_small)" $((NBS * SBS))
expect_eq "bottom-up: alloc_b as b_small's caller" "$(q bu.dom frame:2:alloc_b)" $((NBS * SBS))
expect_eq "bottom-up: alloc_c innermost" "$(q bu.dom frame:1:alloc_c)" $((NC * SC))
shot rv.html "#cost=allocated&view=bottom" bottomup.png

echo "== callers and callees"
render rv.html "#cost=allocated&fn=alloc_b" cc.dom
expect_eq "alloc_b: total" "$(q cc.dom cc:function:alloc_b)" $((NB * SB + NBS * SBS))
expect_eq "alloc_b: self" "$(q cc.dom cc:self:alloc_b)" $((NB * SB))
expect_eq "alloc_b: callee b_small" "$(q cc.dom cc:callee:b_small)" $((NBS * SBS))
expect_eq "alloc_b: caller main" "$(q cc.dom cc:caller:main)" $((NB * SB + NBS * SBS))
render rv.html "#cost=calls&fn=b_small" cc2.dom
expect_eq "b_small: calls" "$(q cc2.dom cc:function:b_small)" $NBS
expect_eq "b_small: caller alloc_b" "$(q cc2.dom cc:caller:alloc_b)" $NBS

echo "== allocation sizes"
# class c holds the sizes in (2^(c+2), 2^(c+3)]: 24 -> 2, 100 -> 4, 1000 -> 7, 5000 -> 10
render rv.html "#cost=allocated&zoom=alloc_b" hb.dom
expect_eq "alloc_b's sizes: classes" "$(q hb.dom histclasses)" "4,7"
expect_eq "alloc_b's sizes: 1000 B" "$(q hb.dom hist:7)" "$NB|$((NB * SB))"
expect_eq "alloc_b's sizes: 100 B (b_small, under it)" "$(q hb.dom hist:4)" "$NBS|$((NBS * SBS))"
render rv.html "#cost=allocated&zoom=alloc_a" ha.dom
expect_eq "alloc_a's sizes" "$(q ha.dom histclasses) $(q ha.dom hist:2)" "2 $NA|$((NA * SA))"
render rv.html "" all.dom
expect_eq "the run's 5000 B class" "$(q all.dom hist:10)" "$NC|$((NC * SC))"
shot rv.html "#zoom=alloc_b&fn=alloc_b" sizes.png

echo "== bad input"
end=$(sqlite3 $db "SELECT runtime_ns / 1e9 FROM processes WHERE id = 1")
"$ANALYZE" report $db -o past.html --from "$(python3 -c "print($end + 5)")s" >bad.out 2>bad.err
rc=$?
expect_eq "--from past the end: exit" $rc 1
expect_eq "--from past the end: stderr lines" "$(wc -l <bad.err)" 1
grep -q "past the end of the run" bad.err || die "--from past the end says: $(cat bad.err)"
[ ! -e past.html ] || die "a refused report left past.html behind"
"$ANALYZE" report $db -o x.html --from 2s --to 1s >bad.out 2>bad.err
expect_eq "--to before --from: exit" $? 2
render rv.html "#from=$(python3 -c "print($end + 5)")&to=$(python3 -c "print($end + 9)")" past.dom
expect_eq "a window past the run: message" "$(q past.dom present:range-error)" 1
expect_eq "a window past the run: no window" "$(q past.dom range)" none
echo "report_views: window, bottom-up, callers/callees and sizes agree with the program"
