# temporary_rule — `--temporary heaptrack` counts temporary allocations as
# heaptrack 1.4 does (a free right after an allocation of the same size and
# stack, any block), vheap's default by block. tests/programs/temp_rule
# says what each rule gives (rotate(): a block freed right after the next
# one of its kind is allocated; scratch(): blocks freed right after their
# own allocation). Checked: summary and top under both definitions against
# the program's counts, a bad value exits 2, and — when heaptrack is
# installed — heaptrack's own count through each function equals vheap's
# under --temporary heaptrack. Also: libstdc++'s emergency exception pool
# (cxx_new) is reported as a suppressed leak, not a leak, in summary and
# leaks, and the DB's tables still hold it.
. "$TOP/tests/lib.sh"
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/temp_rule" "$PROGS/cxx_new"
need_cmd python3

profile "$PWD/t.vhcap" "$PROGS/temp_rule" >t.out || die "temp_rule failed under vheap"
want_vh=$(sed -n 's/^temp vheap=\([0-9]*\) .*/\1/p' t.out)
want_ht=$(sed -n 's/^temp .* heaptrack=\([0-9]*\)$/\1/p' t.out)
temp_of() { python3 -c "import json,sys; print(json.load(sys.stdin)['heaps'][0]['temporary'])"; }
expect_eq "summary temporary (vheap's)" "$("$ANALYZE" summary t.vhcap --format json | temp_of)" "$want_vh"
expect_eq "summary --temporary vheap" \
    "$("$ANALYZE" summary t.vhcap --temporary vheap --format json | temp_of)" "$want_vh"
expect_eq "summary --temporary heaptrack" \
    "$("$ANALYZE" summary t.vhcap --temporary heaptrack --format json | temp_of)" "$want_ht"
"$ANALYZE" summary t.vhcap --temporary heaptrack | grep -q "^temporary memory allocations: $want_ht " ||
    die "the table does not show heaptrack's count"

# per function: top --by temporary, leaf function -> count
per_fn() {
    "$ANALYZE" top t.vhcap --by temporary --limit 0 --format json "$@" | python3 -c "
import json, sys
out = {}
for r in json.load(sys.stdin)['top']:
    f = r['stack'][0]['function'] if r['stack'] else None
    out[f] = out.get(f, 0) + r['temporary']
print(' '.join(f'{k}={v}' for k, v in sorted(out.items())))"
}
expect_eq "top --by temporary (vheap's)" "$(per_fn)" "scratch=200"
expect_eq "top --by temporary --temporary heaptrack" "$(per_fn --temporary heaptrack)" \
    "get=499 scratch=200"

"$ANALYZE" summary t.vhcap --temporary nobody >/dev/null 2>err.txt
expect_eq "--temporary nobody" "$?" 2
grep -q "not vheap or heaptrack" err.txt || die "no reason for --temporary nobody: $(cat err.txt)"
"$ANALYZE" leaks t.vhcap --temporary heaptrack >/dev/null 2>&1
expect_eq "leaks --temporary (not taken)" "$?" 2

if command -v heaptrack >/dev/null 2>&1 && command -v heaptrack_print >/dev/null 2>&1; then
    heaptrack -o "$PWD/t.ht" "$PROGS/temp_rule" >t.ht.log 2>&1 || die "temp_rule failed under heaptrack"
    heaptrack_print --disable-builtin-suppressions -f t.ht.zst -F t.fold \
        --flamegraph-cost-type temporary >/dev/null 2>&1 || die "heaptrack_print -F failed"
    got=$(python3 -c "
out = {}
for l in open('t.fold'):
    stack, c = l.rstrip('\n').rsplit(' ', 1)
    frames = [f for f in stack.split(';') if f]
    leaf = frames[-1].split(' (')[0] if frames else ''
    if leaf in ('get', 'scratch'):
        out[leaf] = out.get(leaf, 0) + int(c)
print(' '.join(f'{k}={v}' for k, v in sorted(out.items())))")
    expect_eq "heaptrack's own temporary allocations per function" "$got" "get=499 scratch=200"
else
    echo "heaptrack is not installed: its own run is not compared"
fi

# libstdc++'s emergency pool: suppressed, not leaked
profile "$PWD/c.vhcap" "$PROGS/cxx_new" >c.out || die "cxx_new failed under vheap"
"$ANALYZE" summary c.vhcap --format json >c.json || die "summary of cxx_new failed"
python3 - <<'PY' || die "libstdc++'s pool is not reported as a suppressed leak"
import json, sqlite3
h = json.load(open("c.json"))["heaps"][0]
db = sqlite3.connect("c.vhcap.sqlite")
stored, = db.execute("SELECT leaked_bytes FROM heaps WHERE id = 0").fetchone()
pool = [r for r in db.execute(
    "SELECT s.leaked_bytes FROM stack_stats s JOIN stack_frames sf ON sf.stack_id = s.stack_id"
    " AND sf.idx = 0 JOIN frames f ON f.id = sf.frame_id JOIN modules m ON m.id = f.module_id"
    " WHERE s.heap_id = 0 AND s.leaked_blocks > 0 AND m.path LIKE '%/libstdc++.so%'")]
print("stored leaked", stored, "summary leaked", h["leaked_bytes"], "suppressed",
      h["suppressed_bytes"], "pool stacks", pool)
assert len(pool) == 1 and pool[0][0] >= 1024, pool
assert h["suppressed_bytes"] == pool[0][0] and h["suppressed_blocks"] == 1
assert h["leaked_bytes"] == stored - pool[0][0]
PY
"$ANALYZE" summary c.vhcap | grep -q "^suppressed leaks: .*libstdc++'s and glibc's own, kept for the process's life" ||
    die "the summary table does not say what was suppressed"
"$ANALYZE" leaks c.vhcap --limit 0 --format json | grep -q "libstdc++" &&
    die "leaks still lists libstdc++'s pool"
echo "heaptrack's temporary rule on request; libstdc++'s pool is not a leak"
