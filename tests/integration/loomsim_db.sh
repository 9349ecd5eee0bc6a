# loomsim_db — the loom stand-in through the whole analysis: loaded into a
# database and asked with the query commands (heaps, summary, leaks, top
# --by-tag, --heap NAME and NAME/*), every answer checked against loomsim's
# own books (per heap: live, peak, allocations, leaks, parents; per tag:
# allocations) or, where loomsim keeps no book, against the raw capture
# (dump). tests/integration/loomsim.sh checks the capture itself; this one
# checks what the loader and the queries make of it.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/loomsim"
need_cmd python3

timeout 120 "$PROGS/loomsim" >plain.txt || die "loomsim without vheap exited $?"
VHEAP_OUT='loom.%p.vhcap' VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/loomsim" \
    >out.txt 2>err.txt || die "loomsim under vheap exited $?: $(tail -n 3 err.txt)"
grep -q ' vheap=on ' out.txt || die "loomsim did not find vheap under the shim"

# Its SIGSEGV dirty-page handler works the same with the shim in the process.
faults() { sed -n "s/^loomsim summary .* role=$2 .* dirty_faults=\([0-9]*\) .*/\1/p" "$1"; }
for role in main worker; do
    f=$(faults out.txt $role)
    [ -n "$f" ] && [ "$f" -gt 0 ] || die "$role: no dirty-page faults under vheap ('$f')"
    expect_eq "$role dirty-page faults, profiled vs bare" "$f" "$(faults plain.txt $role)"
done

main=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' out.txt)
worker=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=worker .*/\1/p' out.txt)
[ -n "$main" ] && [ -n "$worker" ] || die "no main/worker summary in loomsim's output"

# q PID OUT ARGS...: runs a query on PID's capture, JSON into OUT.
q() {
    _pid=$1 _out=$2; shift 2
    "$ANALYZE" "$@" "loom.$_pid.vhcap" --format json >"$_out" 2>"$_out.err" ||
        die "$* on loom.$_pid.vhcap exited $?: $(cat "$_out.err")"
}

check() {    # check PID ROLE
    pid=$1 role=$2
    "$ANALYZE" load -q "loom.$pid.vhcap" || die "load of loom.$pid.vhcap failed"
    vh_dump "loom.$pid.vhcap" "$pid.dump"
    q "$pid" "$pid.heaps.json" heaps --limit 0
    q "$pid" "$pid.summary.json" summary
    q "$pid" "$pid.loomsum.json" summary --heap 'loom/*'
    q "$pid" "$pid.leaks.json" leaks --heap 'loom/*' --limit 0
    q "$pid" "$pid.tags.json" top --by-tag --heap 'loom/*' --limit 0
    q "$pid" "$pid.mtags.json" top --by-tag --heap malloc --limit 0
    q "$pid" "$pid.sub.json" heaps --heap 'road.1/*' --limit 0
    # what only the capture knows: the stack and time of each live loom
    # block (following moves), and resizes per (heap class, tag)
    awk "$VH_AWK_LIB"'
/^#/ || $1 == "header" || $1 == "argv" || $1 == "loss" { next }
{ kv() }
$3 == "heap_create" { NAME[F["id"]] = F["name"] }
$3 == "tag" { LAB[F["id"]] = F["label"] }
$3 == "alloc" && !("failed" in W) { K = F["heap"] SUBSEP F["addr"]; S[K] = F["stack"]; T[K] = $1 }
$3 == "move" {
    a = F["heap"] SUBSEP F["from"]; b = F["heap"] SUBSEP F["to"]
    S[b] = S[a]; T[b] = T[a]; delete S[a]; delete T[a]
}
$3 == "move_range" {
    h = F["heap"]; lo = hex(F["from"]); d = hex(F["to"]) - lo; n = 0; split("", RG)
    for (k in S) { split(k, p, SUBSEP); if (p[1] == h && hex(p[2]) >= lo && hex(p[2]) < lo + F["len"]) RG[++n] = p[2] }
    for (i = 1; i <= n; i++) { a = h SUBSEP RG[i]; SV[i] = S[a]; TV[i] = T[a]; delete S[a]; delete T[a] }
    for (i = 1; i <= n; i++) { b = h SUBSEP hexs(hex(RG[i]) + d); S[b] = SV[i]; T[b] = TV[i] }
}
$3 == "resize" {
    c = F["heap"] == 0 ? "malloc" : (NAME[F["heap"]] == "heaptrack-api" ? "ht" : "loom")
    R[c, F["tag"]]++
}
END {
    for (k in S) { split(k, p, SUBSEP); print "block", p[1], p[2], S[k], T[k] }
    for (k in R) { split(k, p, SUBSEP); print "resizes", p[1], (p[2] == 0 ? "(none)" : LAB[p[2]]), R[k] }
}' "$pid.dump" >"$pid.facts" || die "reading the dump of $pid failed"

    python3 - "$pid" "$role" out.txt <<'PY' || die "$role (pid $1): the database disagrees with loomsim (see above)"
import json, sys
pid, role, books = sys.argv[1], sys.argv[2], sys.argv[3]
errors = []
def err(m):
    errors.append(m)
    if len(errors) <= 20:
        print("error: " + m, file=sys.stderr)

def fields(line):
    return dict(w.split("=", 1) for w in line.split()[1:] if "=" in w)

heaps, leak, tags, ht, overflow = {}, [], {}, None, 0
for line in open(books):
    if not line.startswith("loomsim ") or " pid=%s " % pid not in line + " ":
        continue
    w = line.split()
    f = fields(line)
    if w[1].startswith("heap="):
        heaps[int(f["id"])] = dict(f, name=w[1][5:])
    elif w[1] == "leak":
        leak.append(f)
    elif w[1] == "tag":
        tags[f["label"]] = int(f["allocs"])
    elif w[1] == "heaptrack":
        ht = f
    elif w[1] == "summary":
        overflow = int(f["overflow_allocs"])
threads = {}
if role == "main":
    for line in open(books):
        if line.startswith("loomsim thread "):
            f = fields(line)
            threads[f["label"]] = int(f["mallocs"])

blocks, resizes = {}, {}
for line in open(pid + ".facts"):
    w = line.split()
    if w[0] == "block":
        blocks[(int(w[1]), w[2])] = (int(w[3]), int(w[4]))
    else:
        resizes[(w[1], " ".join(w[2:-1]))] = int(w[-1])

load = lambda name: json.load(open("%s.%s.json" % (pid, name)))
H = {h["heap_id"]: h for h in load("heaps")["heaps"]}
S = {h["heap_id"]: h for h in load("summary")["heaps"]}
if sorted(H) != sorted(S):
    err("heaps lists %s, summary %s" % (sorted(H), sorted(S)))

# per heap: what loomsim knows, in `heaps` and in `summary`
dropped = 0
for hid, b in sorted(heaps.items()):
    for src, rows in (("heaps", H), ("summary", S)):
        h = rows.get(hid)
        if not h:
            err("%s: no heap %d (%s)" % (src, hid, b["name"]))
            continue
        gone = b["destroyed"] == "1"
        want = {
            "heap": b["name"],
            "live_bytes": 0 if gone else int(b["live_bytes"]),
            "live_blocks": 0 if gone else int(b["live_blocks"]),
            "peak_bytes": int(b["peak_bytes"]),
            "leaked_bytes": 0 if gone else int(b["live_bytes"]),
            "leaked_blocks": 0 if gone else int(b["live_blocks"]),
            # a realloc counts once: moving ones are in allocs, in-place in resizes
            "allocations": int(b["allocs"]) + int(b["resizes"]),
        }
        for k, v in want.items():
            if h[k] != v:
                err("%s: heap %d (%s): %s %r, loomsim says %r" % (src, hid, b["name"], k, h[k], v))
        if (h["destroyed_ns"] is not None) != gone:
            err("%s: heap %d: destroyed_ns %r but loomsim destroyed=%d" % (src, hid, h["destroyed_ns"], gone))
    h = H.get(hid)
    if h:
        parent = int(b["parent"]) or None
        if h["parent_id"] != parent:
            err("heaps: heap %d: parent_id %r, loomsim says %r" % (hid, h["parent_id"], parent))
        if gone and int(b["dropped_blocks"]) > 0:
            dropped += 1
if len(heaps) < 10:
    err("loomsim reported only %d heaps" % len(heaps))

# nesting: depth and nested agree with the parents
def ancestors(x):
    p = H[x]["parent_id"]
    while p is not None:
        yield p
        p = H[p]["parent_id"]
for hid, h in H.items():
    d, p = 0, h["parent_id"]
    while p is not None:
        d, p = d + 1, H[p]["parent_id"]
    if h["depth"] != d:
        err("heaps: heap %d: depth %d, its parents say %d" % (hid, h["depth"], d))

for hid, h in H.items():
    n = sum(1 for x in H if hid in ancestors(x))
    if h["nested"] != n:
        err("heaps: heap %d: nested %d, counted %d" % (hid, h["nested"], n))

# --heap 'road.1/*' is road.1 and everything below it
r1 = [hid for hid, b in heaps.items() if b["name"] == "road.1"]
want = sorted(x for x in H if any(x == r or r in ancestors(x) for r in r1))
got = sorted(h["heap_id"] for h in load("sub")["heaps"])
if got != want or len(want) < 2:
    err("heaps --heap 'road.1/*' lists %s, the tree says %s" % (got, want))

# --heap 'loom/*': the loom and its roads, nothing else
L = {h["heap_id"]: h for h in load("loomsum")["heaps"]}
want = sorted(x for x in H if H[x]["heap"] == "loom" or any(H[a]["heap"] == "loom" for a in ancestors(x)))
if sorted(L) != want:
    err("summary --heap 'loom/*' has heaps %s, want %s" % (sorted(L), want))

# destroyed roads leave no leaks; the one leak is loomsim's, in the loom
# (moved by pack), with the stack and time of its first allocation
lk = load("leaks")
rows = lk["leaks"]
if role == "main":
    if dropped < 10:
        err("only %d destroyed roads held blocks when destroyed: nothing tested" % dropped)
    if len(leak) != 1 or leak[0].get("moved") != "1":
        err("loomsim should report one moved leak, says %r" % leak)
    want_bytes = sum(int(x["size"]) for x in leak)
    if lk["totals"]["bytes"] != want_bytes or lk["totals"]["blocks"] != len(leak):
        err("leaks --heap 'loom/*': %r, loomsim leaked %d bytes in %d blocks"
            % (lk["totals"], want_bytes, len(leak)))
    for x in leak:
        hid = int(x["id"])
        r = [r for r in rows if r["heap_id"] == hid]
        if len(r) != 1 or r[0]["bytes"] != int(x["size"]):
            err("leaks: want one %s-byte leak in heap %d, got %r" % (x["size"], hid, r))
            continue
        stack, t = blocks.get((hid, x["addr"]), (None, None))
        if stack is None:
            err("the capture does not hold the leak at %s live" % x["addr"])
        elif r[0]["stack_id"] != stack or r[0]["first_time_ns"] != t:
            err("the moved leak is listed with stack %d at %d ns; it was allocated with "
                "stack %d at %d ns" % (r[0]["stack_id"], r[0]["first_time_ns"], stack, t))
        names = [f["function"] for f in r[0]["stack"]]
        names += [i["function"] for f in r[0]["stack"] for i in f.get("inlined", [])]
        unwind = "libunwind" in open(pid + ".dump").read(4096)
        if unwind and "make_leak" not in names:
            err("the leak's stack lacks make_leak (the allocating function): %s" % names)
live = sum(int(b["live_bytes"]) for b in heaps.values() if b["destroyed"] == "0")
if lk["totals"]["bytes"] != live:
    err("leaks --heap 'loom/*': %d bytes; loomsim holds %d in heaps that still exist"
        % (lk["totals"]["bytes"], live))
for r in rows:
    if H[r["heap_id"]]["destroyed_ns"] is not None:
        err("leaks lists a block of destroyed heap %d" % r["heap_id"])
for hid, h in H.items():
    if h["destroyed_ns"] is not None and (h["leaked_bytes"] or h["leaked_blocks"]):
        err("destroyed heap %d leaks %d bytes" % (hid, h["leaked_bytes"]))

# tags: loomsim counts allocations (moving reallocs included) per innermost
# tag; the database counts a realloc once, so in-place resizes add up
T = {(t["tag"] or "(none)"): t for t in load("tags")["tags"]}
for label, n in tags.items():
    want = n + resizes.get(("loom", label), 0)
    got = T.get(label, {}).get("allocations", 0)
    if got != want:
        err("top --by-tag --heap 'loom/*': %s has %d calls; loomsim made %d (+%d resizes)"
            % (label, got, n, want - n))
# 300 tags deep, then popped back to 50: each level keeps its own tag
# (deep.49, not the 32nd level's deep.31 as when the shim kept 256 levels)
extra = set(T) - set(tags)
if extra:
    err("top --by-tag lists tags loomsim never used in its heaps: %s" % sorted(extra))
if role == "main" and (overflow != 0 or tags.get("deep.299") != 1 or tags.get("deep.49") != 1
                       or "deep.31" in tags):
    err("loomsim's deep tags: %d allocations deeper than it keeps, deep.299 %r, deep.49 %r, "
        "deep.31 %r" % (overflow, tags.get("deep.299"), tags.get("deep.49"), tags.get("deep.31")))
if sum(t["leaked_bytes"] for t in T.values()) != sum(h["leaked_bytes"] for h in L.values()):
    err("leaked bytes by tag do not add up to the loom's")
M = {(t["tag"] or "(none)"): t for t in load("mtags")["tags"]}
for label, n in threads.items():
    want = n + resizes.get(("malloc", label), 0)
    if M.get(label, {}).get("allocations", 0) != want:
        err("top --by-tag --heap malloc: %s has %r calls, the thread made %d"
            % (label, M.get(label, {}).get("allocations"), want))
if role == "main" and len(tags) < 8:
    err("loomsim used only %d tags" % len(tags))

# heaptrack_* calls: a heap of their own
if ht:
    h = [h for h in H.values() if h["heap"] == "heaptrack-api"]
    if len(h) != 1 or h[0]["live_blocks"] != int(ht["live_blocks"]) or h[0]["live_bytes"] != int(ht["live_bytes"]):
        err("heaptrack-api heap %r; loomsim holds %s blocks, %s bytes" % (h, ht["live_blocks"], ht["live_bytes"]))
print("%s: %d heaps checked (%d dropped blocks at destroy), %d leak(s), %d tags%s"
      % (role, len(heaps), dropped, len(rows), len(tags), "" if not errors else ", %d errors" % len(errors)))
sys.exit(1 if errors else 0)
PY
}

check "$main" main
check "$worker" worker

# Marks reach the database (series shows them at their times).
db="loom.$main.vhcap.sqlite"
marks=$(sed -n "s/^loomsim summary pid=$main .* marks=\([0-9]*\) .*/\1/p" out.txt)
packs=$(sed -n "s/^loomsim summary pid=$main .* packs=\([0-9]*\) .*/\1/p" out.txt)
melds=$(sed -n "s/^loomsim summary pid=$main .* melds=\([0-9]*\) .*/\1/p" out.txt)
want=$((marks + 2 * packs + 2 * melds))
[ "$want" -gt 0 ] || die "loomsim made no marks"
if command -v sqlite3 >/dev/null 2>&1; then
    expect_eq "marks in the database" "$(sqlite3 "$db" 'SELECT count(*) FROM marks')" "$want"
    expect_eq "pack marks" "$(sqlite3 "$db" "SELECT count(*) FROM marks WHERE label LIKE 'pack %'")" \
        "$((2 * packs))"
fi

# --heap by id is that heap; a name nobody used is an error, not an empty answer.
loom_id=$(sed -n "s/^loomsim heap=loom pid=$main .* id=\([0-9]*\) .*/\1/p" out.txt)
"$ANALYZE" summary "$db" --heap "$loom_id" --format json >byid.json || die "summary --heap $loom_id failed"
python3 -c 'import json,sys; h=json.load(open("byid.json"))["heaps"]; sys.exit(not (len(h) == 1 and h[0]["heap"] == "loom"))' ||
    die "summary --heap $loom_id is not the loom: $(cat byid.json)"
# summary lists every heap, or the first N by id with --limit (docs/vere.md
# narrows a serf's thousands of roads so; the old summary ignored it)
nall=$("$ANALYZE" summary "$db" --heap 'loom/*' --format json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["heaps"]))')
[ "$nall" -gt 3 ] || die "summary --heap 'loom/*' lists $nall heaps"
"$ANALYZE" summary "$db" --heap 'loom/*' --limit 3 --format json >lim.json || die "summary --limit 3 failed"
python3 -c 'import json,sys; h=json.load(open("lim.json"))["heaps"]; sys.exit(not (len(h) == 3 and h[0]["heap"] == "loom"))' ||
    die "summary --heap 'loom/*' --limit 3 is not the loom and two roads: $(cat lim.json)"
for cmd in heaps summary leaks top peak; do
    "$ANALYZE" $cmd "$db" --heap nosuch >/dev/null 2>bad.err
    rc=$?
    expect_eq "$cmd --heap nosuch: exit status" "$rc" 1
    grep -q "no heap named 'nosuch'" bad.err || die "$cmd --heap nosuch says: $(cat bad.err)"
done
"$ANALYZE" top "$db" --by-tag --by max-live >/dev/null 2>bad.err
expect_eq "top --by-tag --by max-live: exit status" "$?" 2

# The table forms say the same, for people: the tree and the tags.
"$ANALYZE" heaps "$db" --limit 4 >heaps.txt || die "heaps (table) failed"
grep -q '^  road\.1 ' heaps.txt || die "heaps does not indent road.1 under the loom: $(cat heaps.txt)"
grep -q 'shows all' heaps.txt || die "heaps does not say it cut the list: $(cat heaps.txt)"
"$ANALYZE" top "$db" --by-tag --heap loom >tags.txt || die "top --by-tag (table) failed"
grep -q '^jet:leaky ' tags.txt || grep -q 'jet:' tags.txt || die "no jet tags in: $(cat tags.txt)"
exit 0
