# export_flamegraph — `vheap-analyze export --format flamegraph`: folded
# stacks, parsed and summed. For every --cost, the values add up to the
# database's totals (heaps table) and, per innermost function, to the
# stack_stats rows of the stacks with that function; with several heaps each
# stack is rooted at "[heap NAME]" and each root adds up to its heaps. Every
# line is "frame;frame;... VALUE" with a positive integer value and no empty
# frame. Inlined functions are frames of their own in call order (the
# program's "site"/"inline"/"caller" lines), and a DB without symbols gives
# module+0xOFFSET frames whose offsets are the DB's.
. "$TOP/tests/lib.sh"
need_cmd python3
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/ht_peak" "$PROGS/inline_syms" "$PROGS/loomsim"

cat >sums.py <<'EOF'
import re, sqlite3, sys
from vhcheck import checker

# sums.py DB PREFIX [HEAPSQL]: PREFIX.COST are the folded files; HEAPSQL
# chooses the heaps (default: all)
db, prefix = sys.argv[1], sys.argv[2]
where = sys.argv[3] if len(sys.argv) > 3 else "1"
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
heaps = {i: n for i, n in con.execute(f"SELECT id, name FROM heaps WHERE {where}")}
COL = {"allocations": ("allocations", "allocations"), "bytes": ("bytes_allocated", "bytes_allocated"),
       "leaked": ("leaked_bytes", "leaked_bytes"), "peak": ("peak_bytes", "peak_bytes"),
       "temporary": ("temporary", "temporary")}
check, errors = checker()

ids = ",".join(str(i) for i in heaps)
active = {h for (h,) in con.execute(
    f"SELECT DISTINCT heap_id FROM stack_stats WHERE heap_id IN ({ids})")}
for cost, (hcol, scol) in COL.items():
    lines = [l.rstrip("\n") for l in open(f"{prefix}.{cost}")]
    rows = []
    for l in lines:
        mo = re.fullmatch(r"(.+) ([0-9]+)", l)
        if not mo:
            errors.append(f"{cost}: malformed line {l!r}")
            continue
        frames = mo.group(1).split(";")
        if any(not f for f in frames):
            errors.append(f"{cost}: empty frame in {l!r}")
        if int(mo.group(2)) <= 0:
            errors.append(f"{cost}: value 0 in {l!r}")
        rows.append((frames, int(mo.group(2))))
    check(f"{cost}: lines are distinct", len({";".join(f) for f, _ in rows}), len(rows))
    total = sum(v for _, v in rows)
    check(f"{cost}: sum of the folded values = heaps.{hcol}",
          total, con.execute(f"SELECT coalesce(sum({hcol}), 0) FROM heaps WHERE id IN ({ids})").fetchone()[0])
    # per heap root, when several heaps hold something under this cost
    used = [h for (h,) in con.execute(f"SELECT heap_id FROM stack_stats WHERE heap_id IN ({ids})"
                                      f" GROUP BY heap_id HAVING sum({scol}) > 0")]
    if len(used) > 1:
        by_root = {}
        for f, v in rows:
            by_root[f[0]] = by_root.get(f[0], 0) + v
        want = {}
        for h in used:
            r = f"[heap {heaps[h]}]"
            want[r] = want.get(r, 0) + con.execute(
                f"SELECT sum({scol}) FROM stack_stats WHERE heap_id = ?", (h,)).fetchone()[0]
        check(f"{cost}: per heap root", by_root, want)
    # per innermost function (the last frame)
    leaf = {}
    for f, v in rows:
        leaf[f[-1]] = leaf.get(f[-1], 0) + v
    want = {}
    for fn, off, mod, v in con.execute(
            f"SELECT f.function, f.module_offset, m.path, sum(st.{scol}) FROM stack_stats st"
            f" JOIN stack_frames sf ON sf.stack_id = st.stack_id AND sf.idx = 0"
            f" JOIN frames f ON f.id = sf.frame_id LEFT JOIN modules m ON m.id = f.module_id"
            f" WHERE st.heap_id IN ({ids}) GROUP BY 1, 2, 3"):
        name = fn if fn else f"{mod.rsplit('/', 1)[-1]}+0x{off:x}"
        if v:
            want[name] = want.get(name, 0) + v
    stackless = con.execute(f"SELECT coalesce(sum({scol}), 0) FROM stack_stats st WHERE heap_id IN ({ids})"
                            f" AND NOT EXISTS (SELECT 1 FROM stack_frames sf WHERE sf.stack_id = st.stack_id)").fetchone()[0]
    if stackless:
        want["[no stack]"] = stackless
    check(f"{cost}: per innermost function", leaf, want)
if errors:
    print("\n".join("FAIL: " + e for e in errors), file=sys.stderr)
    sys.exit(1)
EOF

# fold CAPTURE|DB PREFIX [export options]: every cost into PREFIX.COST
fold() {
    _in=$1 _pre=$2; shift 2
    for c in allocations bytes leaked peak temporary; do
        "$ANALYZE" export --format flamegraph --cost $c "$_in" -o "$_pre.$c" "$@" 2>"$_pre.err" ||
            die "export --cost $c of $_in failed: $(cat "$_pre.err")"
    done
}

echo "== ht_peak"
profile "$PWD/peak.vhcap" "$PROGS/ht_peak" >peak.out || die "ht_peak failed under vheap"
fold peak.vhcap peak
python3 sums.py peak.vhcap.sqlite peak || die "ht_peak: the folded stacks do not add up"
# the program's stacks, whole: 1005000 bytes at the peak through second_hill
grep -q '^_start;.*;main;second_hill;hold 1005000$' peak.peak ||
    die "no 'main;second_hill;hold 1005000' line: $(cat peak.peak)"
# to stdout, the default cost is allocations
"$ANALYZE" export -f flamegraph peak.vhcap.sqlite -o - 2>/dev/null | cmp -s - peak.allocations ||
    die "-o - or the default cost differ from --cost allocations -o FILE"

echo "== inline_syms"
profile "$PWD/inl.vhcap" "$PROGS/inline_syms" >inl.out || die "inline_syms failed under vheap"
fold inl.vhcap inl
python3 sums.py inl.vhcap.sqlite inl || die "inline_syms: the folded stacks do not add up"
# main;outer_alloc;middle_alloc;inner_alloc: the caller first, as called
chain=$(awk '$1 == "caller" && $2 == 1111 { c = $3 } $1 == "inline" && $2 == 1111 { i[$3] = $4 }
             $1 == "site" && $2 == 1111 { s = $3 }
             END { out = c; for (d = 9; d >= 1; d--) if (d in i) out = out ";" i[d]; print out ";" s }' inl.out)
expect_eq "inline chain in call order" "$chain" "main;outer_alloc;middle_alloc;inner_alloc"
grep -q ";$chain 1111\$" inl.leaked || die "no '...;$chain 1111' line in the leaked stacks: $(cat inl.leaked)"

echo "== without symbols"
"$ANALYZE" load -q --no-symbols inl.vhcap raw.sqlite || die "load --no-symbols failed"
fold raw.sqlite raw
python3 sums.py raw.sqlite raw || die "unsymbolized: the folded stacks do not add up"
awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";")
       for (i = 1; i <= n; i++) if (f[i] !~ /^[^;]+\+0x[0-9a-f]+$/ && f[i] !~ /^0x[0-9a-f]+$/ && f[i] !~ /^\[/) {
           print "not module+0xOFFSET: " f[i]; bad = 1 } }
     END { exit bad }' raw.allocations || die "unsymbolized frames are not module+0xOFFSET"

echo "== loomsim (several heaps)"
VHEAP_OUT="$PWD/loom.%p.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/loomsim" \
    >loom.out 2>loom.err || die "loomsim failed under vheap: $(tail -3 loom.err)"
main=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' loom.out)
[ -n "$main" ] || die "no main summary in loomsim's output"
"$ANALYZE" load -q "loom.$main.vhcap" || die "load of loomsim's capture failed"
fold "loom.$main.vhcap" loom
python3 sums.py "loom.$main.vhcap.sqlite" loom || die "loomsim: the folded stacks do not add up"
grep -q '^\[heap malloc\];' loom.allocations && grep -q '^\[heap loom\];' loom.allocations ||
    die "no [heap malloc] and [heap loom] roots"
fold "loom.$main.vhcap" loomonly --heap loom
python3 sums.py "loom.$main.vhcap.sqlite" loomonly "name = 'loom'" ||
    die "loomsim --heap loom: the folded stacks do not add up"
grep -q '^\[heap' loomonly.allocations && die "a single heap got a [heap] root"
echo "folded stacks add up for every cost"
