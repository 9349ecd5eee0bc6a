# owners — ownership snapshots (vheap.h: vheap_own_*) from a synthetic
# arena whose walk's per-owner totals are known by construction
# (tests/programs/owners.c prints its books): `owners` per path equals them
# (the walk's counted bytes, the requested bytes, the blocks; first owner
# wins for blocks two owners reach), the snapshot's totals too, --growth
# is the difference of the two snapshots' books. Bad input: a label that is
# not UTF-8, one cut at 255 bytes, a block the heap never held, calls with
# no snapshot open: counted, one warning, the good owners intact. A
# snapshot the program dies in loads as far as it got, marked incomplete.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/owners"

json_get() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1"; }

run_mode() {
    VHEAP_OUT="$1.vhcap" LD_PRELOAD="$VHEAP_LIB" "$PROGS/owners" "$1" >"$1.books" 2>"$1.err"
}

# check SNAPSHOT BOOKS JSON: every path's walk/bytes/blocks and the total
check() {
    python3 - "$@" <<'EOF' || die "owners disagrees with the program's books (above)"
import json, re, sys
snap, books, js = sys.argv[1], sys.argv[2], sys.argv[3]
d = json.load(open(js))
got = {o["owner"]: o for o in d["owners"]}
bad = 0
for line in open(books):
    f = line.split()
    if f[:2] != ["own", "snapshot=" + snap]:
        continue
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    m = re.search(r" path=(.*?) blocks=", line)
    if f[2] != "total" and not m:
        continue                   # a bound, not a number (checked below)
    if f[2] == "total":
        s = d["snapshot"]
        have = (s["walk_bytes"], s["bytes"], s["blocks"])
        path = "(total)"
    else:
        path = m.group(1)
        o = got.get(path)
        have = (o["self_walk_bytes"], o["self_bytes"], o["self_blocks"]) if o else None
    want = (int(kv["walk"]), int(kv["bytes"]), int(kv["blocks"]))
    if have != want and not (have is None and want == (0, 0, 0)):
        print(f"snapshot {snap} {path}: vheap {have}, program {want}", file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
EOF
}

# ---- two snapshots, growth between them ------------------------------------
run_mode ok || die "owners ok exited $?: $(tail -n 3 ok.err)"
for n in 1 2; do
    "$ANALYZE" owners ok.vhcap --snapshot $n --limit 0 --format json >ok.$n.json 2>ok.q.err ||
        die "owners --snapshot $n: $(cat ok.q.err)"
    check $n ok.books ok.$n.json
done
grep -q warning ok.q.err && die "a clean capture warned: $(cat ok.q.err)"
expect_eq "snapshot 1 complete" "$(json_get ok.1.json 'd["snapshot"]["complete"]')" True
# first owner wins: behn's walk reached five of ames' blocks again
expect_eq "blocks named again" "$(json_get ok.1.json 'd["snapshot"]["repeated_blocks"]')" 5
"$ANALYZE" owners ok.vhcap --growth --limit 0 --format json >growth.json ||
    die "owners --growth failed"
walk() { sed -n "s|^own snapshot=$1 path=$2 .* walk=\([0-9]*\)$|\1|p" ok.books; }
for p in arvo/vane/ames arvo/vane/behn arvo/hoon; do
    want=$(( $(walk 2 $p) - $(walk 1 $p) ))
    got=$(json_get growth.json "[g['change'] for g in d['growth'] if g['owner'] == '$p'][0]")
    expect_eq "growth of $p" "$got" "$want"
done
"$ANALYZE" owners ok.vhcap --by stack --owner arvo/vane/ames --format json >stacks.json ||
    die "owners --by stack failed"
expect_eq "ames' blocks by stack" \
    "$(json_get stacks.json 'sum(s["blocks"] for s in d["stacks"])')" \
    "$(sed -n 's|^own snapshot=2 path=arvo/vane/ames blocks=\([0-9]*\) .*|\1|p' ok.books)"

# frag --by owner: pages each owner's blocks touch, as the program counted
for n in 1 2; do
    "$ANALYZE" frag ok.vhcap --by owner --snapshot $n --limit 0 --format json >frag.$n.json ||
        die "frag --by owner --snapshot $n failed"
    sed -n "s|^own frag snapshot=$n pages=\([0-9]*\) path=\(.*\)$|\2 \1|p" ok.books | sort >want.$n
    json_get frag.$n.json '"\n".join("%s %d" % (o["owner"], o["pages"]) for o in d["owners"])' |
        sort >got.$n
    cmp -s want.$n got.$n || die "pages by owner, snapshot $n: $(diff want.$n got.$n)"
done

# the report's ownership view: the last snapshot's owners, as the books say
if CHROMIUM=$(command -v chromium || command -v chromium-browser); then
    "$ANALYZE" report ok.vhcap -o ok.html 2>report.err || die "report: $(cat report.err)"
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --user-data-dir="$PWD/chrome" \
        --virtual-time-budget=5000 --dump-dom "file://$PWD/ok.html" >ok.dom 2>chrome.err ||
        die "chromium failed: $(tail -n 3 chrome.err)"
    expect_eq "report: script error" "$(python3 "$TOP/tests/report/dom.py" ok.dom error)" none
    for p in arvo/vane/ames arvo/vane/behn arvo/hoon 'jets/cold jet state' road/metadata; do
        expect_eq "report: $p" "$(python3 "$TOP/tests/report/dom.py" ok.dom "owner:$p")" "$(walk 2 "$p")"
    done
fi

# ---- bad input: counted, said once, the rest intact ------------------------
run_mode bad || die "owners bad exited $?: $(tail -n 3 bad.err)"
expect_eq "shim warnings about calls with no snapshot" \
    "$(grep -c 'no ownership snapshot open' bad.err)" 1
"$ANALYZE" owners bad.vhcap --limit 0 --format json >bad.json 2>bad.q.err ||
    die "owners on bad input failed: $(cat bad.q.err)"
expect_eq "load warnings" "$(grep -c warning bad.q.err)" 1
grep -q '1 block named that the walked heap did not hold, 1 label cut at 255 bytes, 1 label not UTF-8' \
    bad.q.err || die "the warning does not name each bad input: $(cat bad.q.err)"
python3 - bad.json bad.vhcap.sqlite <<'EOF' || die "bad labels not stored as valid, cut UTF-8"
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
labels = [r[0] for r in sqlite3.connect(sys.argv[2]).execute("SELECT label FROM owners")]
assert "\ufffd\ufffd not utf-8" in labels, labels
assert "x" * 255 in labels, [len(l) for l in labels]
assert d["snapshot"]["unknown_blocks"] == 1
EOF
sed -i 's/^own snapshot=1 total .*//' bad.books  # the unknown block's bytes are the walk's
check 1 bad.books bad.json

# ---- a snapshot the program dies in ---------------------------------------
run_mode die
expect_eq "owners die: killed" "$?" 137
"$ANALYZE" owners die.vhcap --limit 0 --format json >die.json 2>die.q.err ||
    die "owners on a cut snapshot failed: $(cat die.q.err)"
grep -q '1 snapshot cut short' die.q.err || die "no warning for the cut snapshot: $(cat die.q.err)"
expect_eq "cut snapshot complete" "$(json_get die.json 'd["snapshot"]["complete"]')" False
check 1 die.books die.json
b=$(json_get die.json 'sum(o["blocks"] for o in d["owners"] if o["owner"] == "a/b")')
[ "$b" -le 150 ] || die "a/b has $b blocks, the program named 150"
# ---- sampled: entries only for blocks the sample may hold ------------------
# 75,000 blocks named; in full every one is an entry, sampled at 8 KiB only
# those whose slot in the shim's sampled set is taken (a few thousand) plus
# one address-0 entry a batch with the rest's walk bytes: each owner's walk
# total stays the program's exactly, its live bytes an estimate (about 500
# samples an owner: 30 % is over five standard deviations)
VHEAP_OUT=many.vhcap LD_PRELOAD="$VHEAP_LIB" "$PROGS/owners" many >many.books 2>many.err ||
    die "owners many exited $?: $(tail -n 3 many.err)"
VHEAP_SAMPLE=8KiB VHEAP_OUT=many-s.vhcap LD_PRELOAD="$VHEAP_LIB" "$PROGS/owners" many \
    >many-s.books 2>many-s.err || die "owners many (sampled) exited $?: $(tail -n 3 many-s.err)"
for m in many many-s; do
    "$ANALYZE" owners $m.vhcap --limit 0 --format json >$m.json 2>$m.q.err ||
        die "owners $m: $(cat $m.q.err)"
    grep -q warning $m.q.err && die "owners $m warned: $(cat $m.q.err)"
done
check 1 many.books many.json
python3 - many-s.books many.vhcap.sqlite many-s.vhcap.sqlite many-s.json <<'EOF' ||
import json, re, sqlite3, sys
books = {}
for line in open(sys.argv[1]):
    m = re.match(r"own snapshot=1 path=(\S+) blocks=(\d+) bytes=(\d+) walk=(\d+)$", line)
    if m:
        books[m.group(1)] = tuple(int(x) for x in m.groups()[1:])
rows = lambda db: sqlite3.connect(db).execute(
    "SELECT count(*) FROM owned_blocks WHERE address != 0").fetchone()[0]
full, sampled = rows(sys.argv[2]), rows(sys.argv[3])
d = json.load(open(sys.argv[4]))
got = {o["owner"]: o for o in d["owners"]}
bad = []
if full < 75000 or sampled > full // 5:
    bad.append("entries with an address: full %d, sampled %d (want under a fifth)" % (full, sampled))
if not d["snapshot"]["complete"]:
    bad.append("the sampled snapshot is not complete")
for path, (blocks, size, walk) in books.items():
    o = got.get(path, {})
    if o.get("self_walk_bytes") != walk:
        bad.append("%s: walk bytes %s, the program's %d" % (path, o.get("self_walk_bytes"), walk))
    if size and abs(o.get("self_bytes", 0) - size) > 0.3 * size:
        bad.append("%s: estimated bytes %s, the program's %d" % (path, o.get("self_bytes"), size))
print("sampled snapshot: %d entries with an address (full: %d); %s"
      % (sampled, full, "; ".join(bad) or "walk bytes exact, bytes within 30 %"))
sys.exit(1 if bad else 0)
EOF
    die "the sampled snapshot (above)"
echo "owners: books equal, growth, by stack, bad input counted, cut snapshot loaded, sampled entries cut"
