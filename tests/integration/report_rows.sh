# report_rows — the report's data from the rows the loader counted
# (report_timeline, report_stacks: load/rtl.c) against the same report
# replaying every event (the DB without meta's report_points): on demo_app
# (one heap) and loomsim's main process (44 heaps: moves, reallocs, nested
# and destroyed heaps), recorded in full and sampled, every section of the page's data is the same,
# except that the "other heaps" series' high may be above the replay's
# (never below it, never above every heap's high) in a point where several
# of those heaps and a heap of its own had events (docs/design.md). Then
# the layouts the loader did not count (--snapshots, --from/--to)
# replay, and a damaged report_stacks row is an error, not a crash.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/demo_app" "$PROGS/loomsim"
need_cmd python3
need_cmd sqlite3

VHEAP_CLOCK=precise profile "$PWD/demo.vhcap" "$PROGS/demo_app" >demo.out ||
    die "demo_app failed under vheap"
VHEAP_CLOCK=precise VHEAP_OUT="$PWD/loom.%p.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" \
    "$PROGS/loomsim" >loom.out 2>loom.err || die "loomsim failed under vheap: $(tail -3 loom.err)"
main=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' loom.out)
[ -n "$main" ] || die "loomsim printed no main summary"
VHEAP_SAMPLE=4KiB VHEAP_CLOCK=precise VHEAP_OUT="$PWD/sampled.%p.vhcap" VHEAP_QUIET=1 \
    LD_PRELOAD="$VHEAP_LIB" "$PROGS/loomsim" >sampled.out 2>sampled.err ||
    die "loomsim failed under vheap (sampled): $(tail -3 sampled.err)"
smain=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' sampled.out)

# both NAME CAPTURE [OPTIONS...]: NAME.rows.html from the loader's rows,
# NAME.replay.html from the replay
both() {
    _n=$1 _c=$2; shift 2
    rm -f "$_n.sqlite" "$_n.replay.sqlite"
    "$ANALYZE" load -q "$_c" "$_n.sqlite" || die "$_n: load failed"
    expect_eq "$_n: the loader's layout" \
        "$(sqlite3 "$_n.sqlite" "SELECT value FROM meta WHERE key = 'report_snapshots'")" 24
    cp "$_n.sqlite" "$_n.replay.sqlite"
    sqlite3 "$_n.replay.sqlite" "DELETE FROM meta WHERE key = 'report_points'"
    "$ANALYZE" report "$_n.sqlite" -o "$_n.rows.html" "$@" 2>/dev/null || die "$_n: report failed"
    "$ANALYZE" report "$_n.replay.sqlite" -o "$_n.replay.html" "$@" 2>/dev/null ||
        die "$_n: report (replay) failed"
}
both demo demo.vhcap
both loom "loom.$main.vhcap"
expect_eq "loomsim: heaps beyond the 24 with a series" \
    "$(sqlite3 loom.sqlite "SELECT count(*) > 24 FROM heaps")" 1
both sampled "sampled.$smain.vhcap"
both loom_opts "loom.$main.vhcap" --snapshots 5
both loom_range "loom.$main.vhcap" --from 0.01s --to 0.05s

python3 - <<'PY' || die "the report's data from the loader's rows differs (above)"
import json, re, sys
def data(path):
    s = open(path).read()
    d = json.loads(re.search(r'<script id="vheap-data" type="application/json">(.*?)</script>',
                             s, re.S).group(1))
    d["run"]["db"] = None
    return d
bad = 0
for name in ("demo", "loom", "sampled", "loom_opts", "loom_range"):
    a, b = data(name + ".rows.html"), data(name + ".replay.html")
    sa, sb = a["timeline"]["series"], b["timeline"]["series"]
    for x, y, every in zip(sa, sb, [sb[-1]] * len(sb)):
        if x["heap"] == "other":
            for i, (m, r, hi) in enumerate(zip(x["max"], y["max"], every["max"])):
                if not r <= m <= hi:
                    print(f"{name}: other heaps' high at point {i}: {m}, replay {r}, every heap {hi}")
                    bad += 1
            x["max"] = y["max"]
    for k in b:
        if a.get(k) != b[k]:
            print(f"{name}: '{k}' differs")
            bad += 1
    print(f"{name}: {len(json.dumps(b))} bytes of data compared")
sys.exit(1 if bad else 0)
PY

# a damaged row: an error that names it, no crash
sqlite3 loom.sqlite "UPDATE report_stacks SET cells = x'80' WHERE rowid IN
                     (SELECT rowid FROM report_stacks LIMIT 1)" 2>/dev/null ||
    sqlite3 loom.sqlite "UPDATE report_stacks SET cells = x'80' WHERE (heap_id, stack_id, tag_id) =
                         (SELECT heap_id, stack_id, tag_id FROM report_stacks LIMIT 1)"
"$ANALYZE" report loom.sqlite -o damaged.html 2>damaged.err
rc=$?
expect_eq "report on a damaged report_stacks row: exit status" "$rc" 1
grep -q "report_stacks" damaged.err || die "the error does not name report_stacks: $(cat damaged.err)"
echo "report_rows: ok"
