# export_pprof — `vheap-analyze export --format pprof` read back by the real
# `go tool pprof` (Debian's golang-go). For demo_app (inlined frames),
# inline_syms and loomsim (several heaps, tags, threads), for each of the
# four sample types (alloc_objects, alloc_space, inuse_objects,
# inuse_space):
#   - pprof's total (-top) is summary's (allocations, bytes allocated,
#     leaked blocks, leaked bytes over the heaps);
#   - every stack pprof lists (-traces), with its heap label, has the value
#     `vheap-analyze top` gives that stack: same frames, inlined ones
#     included, in the same order;
#   - the mappings (-raw) carry the modules' build-ids from the DB.
# Also: the file is gzip whatever its name, and .zst is refused.
. "$TOP/tests/lib.sh"
command -v go >/dev/null 2>&1 ||
    { echo "go is not installed (apt-get install golang-go)" >&2; exit 77; }
need_cmd python3
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/demo_app" "$PROGS/inline_syms" "$PROGS/loomsim"
export GOCACHE="$PWD/gocache" HOME="$PWD" GOFLAGS=-mod=mod
go tool pprof -h >/dev/null 2>&1 || { echo "go tool pprof does not run" >&2; exit 77; }

cat >cmp.py <<'EOF'
import json, os, re, sqlite3, sys
from vhcheck import checker
name, db = sys.argv[1], sys.argv[2]
check, errors = checker(f"{name}: ")

def frames(row):
    out = []
    for f in row["stack"]:
        if f["function"]:
            out.append(f["function"])
        elif f["module"] and f["offset"] is not None:
            out.append(f"{os.path.basename(f['module'])}+0x{f['offset']:x}")
        else:
            out.append(f"0x{f['address']:x}")
        out += [i["function"] or "??" for i in f["inlined"]]
    if row["stack_truncated"]:
        out.append("[truncated]")
    if not row["stack"]:
        out.append("[no stack]")
    return tuple(out)

def traces(path):
    """go tool pprof -traces: {(heap, frames): value}"""
    out, cur = {}, None
    def flush():
        if cur and cur["frames"]:
            k = (cur["labels"].get("heap"), tuple(cur["frames"]))
            out[k] = out.get(k, 0) + cur["value"]
    for l in open(path):
        l = l.rstrip("\n")
        if l.startswith("-----------+"):
            flush()
            cur = {"labels": {}, "frames": [], "value": None}
            continue
        if cur is None:
            continue
        if cur["value"] is None:
            mo = re.match(r"^\s*(\w+):\s+(.*)$", l)
            if mo:
                cur["labels"][mo.group(1)] = mo.group(2).strip()
                continue
            mo = re.match(r"^\s*(\d+)B?\s+(.*)$", l)
            if mo:
                cur["value"] = int(mo.group(1))
                cur["frames"].append(re.sub(r" \(inline\)$", "", mo.group(2).strip()))
                continue
        elif l.strip():
            cur["frames"].append(re.sub(r" \(inline\)$", "", l.strip()))
    flush()
    return out

summ = json.load(open(f"{name}.summary.json"))
heaps = summ["heaps"]
KEYS = {"alloc_objects": "allocations", "alloc_space": "bytes_allocated",
        "inuse_objects": "leaked_blocks", "inuse_space": "leaked_bytes"}
HEAPKEY = {"allocations": "allocations", "bytes_allocated": "bytes_allocated",
           "leaked_blocks": "leaked_blocks", "leaked_bytes": "leaked_bytes"}
top = json.load(open(f"{name}.top.json"))["top"]
for st, key in KEYS.items():
    text = open(f"{name}.{st}.top").read()
    mo = re.search(r"Total samples = (\d+)B?", text)
    want = sum(h[HEAPKEY[key]] for h in heaps)
    check(f"{st}: pprof's total = summary's {key}", int(mo.group(1)) if mo else None, want)
    vh = {}
    for row in top:
        if row[key]:
            k = (row["heap"], frames(row))
            vh[k] = vh.get(k, 0) + row[key]
    pp = {k: v for k, v in traces(f"{name}.{st}.traces").items() if v}
    check(f"{st}: {len(pp)} stacks of pprof = {len(vh)} of vheap top", pp, vh)
    if vh:
        best = max(vh.values())
        first = re.search(r"^\s*\d+B?\s+\S+%\s+\S+%\s+\d+B?\s+\S+%\s+(.*)$", text, re.M)
        leafs = {k[1][0] for k, v in vh.items() if v == best}
        check(f"{st}: pprof -top's first function is a top stack's leaf",
              first.group(1).replace(" (inline)", "") in leafs if first else None, True)

# mappings: every module a stack goes through has its build-id in pprof's
# mapping (pprof lists the mappings its locations use)
raw = open(f"{name}.raw").read()
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
for path, bid in con.execute("SELECT DISTINCT m.path, m.build_id FROM modules m"
                             " JOIN frames f ON f.module_id = m.id"
                             " JOIN stack_frames sf ON sf.frame_id = f.id"
                             " WHERE m.build_id IS NOT NULL"):
    check(f"mapping of {os.path.basename(path)} has build-id {bid[:12]}..",
          bool(re.search(r"^\d+: \S+ " + re.escape(path) + " " + bid + r"\b", raw, re.M)), True)
if errors:
    sys.exit(1)
print(f"{name}: go tool pprof reads what vheap-analyze top says")
EOF

# pprof_check NAME DB: export, read back four ways, compare
pprof_check() {
    n=$1 db=$2
    "$ANALYZE" summary "$db" --format json >"$n.summary.json" || die "summary of $db failed"
    "$ANALYZE" top "$db" --by allocations --limit 0 --format json >"$n.top.json" ||
        die "top of $db failed"
    "$ANALYZE" export --format pprof "$db" -o "$n.pb.gz" 2>"$n.err" ||
        die "export of $db failed: $(cat "$n.err")"
    cat "$n.err"
    for st in alloc_objects alloc_space inuse_objects inuse_space; do
        unit=
        case $st in *_space) unit=-unit=byte ;; esac   # sizes in bytes, not kB
        go tool pprof -top -nodecount=1000 -sample_index=$st $unit "$n.pb.gz" >"$n.$st.top" 2>&1 ||
            die "go tool pprof -top failed on $n.pb.gz: $(tail -3 "$n.$st.top")"
        go tool pprof -traces -sample_index=$st $unit "$n.pb.gz" >"$n.$st.traces" 2>&1 ||
            die "go tool pprof -traces failed on $n.pb.gz"
    done
    go tool pprof -raw "$n.pb.gz" >"$n.raw" 2>&1 || die "go tool pprof -raw failed"
    python3 cmp.py "$n" "$db" || die "$n: go tool pprof disagrees with vheap (above)"
}

echo "== demo_app"
"$ANALYZE" record --out "$PWD/demo.vhcap" -- "$PROGS/demo_app" >demo.out 2>&1 ||
    die "demo_app failed under vheap: $(tail -3 demo.out)"
pprof_check demo demo.vhcap.sqlite
grep -q "cache_line (inline)" demo.alloc_objects.traces ||
    die "pprof shows no inlined frame of demo_app's cache_line"

echo "== inline_syms"
profile "$PWD/inl.vhcap" "$PROGS/inline_syms" >inl.out || die "inline_syms failed under vheap"
"$ANALYZE" load -q inl.vhcap inl.sqlite || die "load of inl.vhcap failed"
pprof_check inl inl.sqlite

echo "== loomsim"
VHEAP_OUT="$PWD/loom.%p.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/loomsim" \
    >loom.out 2>loom.err || die "loomsim failed under vheap: $(tail -3 loom.err)"
main=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' loom.out)
"$ANALYZE" load -q "loom.$main.vhcap" loom.sqlite || die "load of loomsim's capture failed"
pprof_check loom loom.sqlite
grep -q "heap:  loom" loom.alloc_objects.traces || die "no heap label 'loom' in pprof's traces"
grep -q "tag:" loom.alloc_objects.traces || die "no tag label in pprof's traces of loomsim"

# gzip whatever the name; zstd refused
"$ANALYZE" export -f pprof demo.vhcap.sqlite -o demo.pb 2>/dev/null || die "export to demo.pb failed"
magic=$(od -An -tx1 -N2 demo.pb | tr -d ' ')
expect_eq "gzip magic of demo.pb" "$magic" "1f8b"
go tool pprof -top demo.pb >/dev/null 2>&1 || die "go tool pprof cannot read demo.pb"
"$ANALYZE" export -f pprof demo.vhcap.sqlite -o demo.pb.zst 2>err.txt
expect_eq "export -f pprof to .zst" "$?" 1
grep -q "gzip" err.txt || die "no reason given for refusing .zst: $(cat err.txt)"
[ ! -e demo.pb.zst ] || die "a refused export left demo.pb.zst behind"
echo "go tool pprof reads vheap's pprof exports as vheap-analyze top reads the runs"
