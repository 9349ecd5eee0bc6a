# export_heaptrack — `vheap-analyze export --format heaptrack` read back by
# the real heaptrack_print. For several programs (tests/programs/ht_*.c,
# threads_xfer with 16 threads, loomsim with custom heaps), what
# heaptrack_print says of the export must be what vheap says of the run:
#   - its summary: calls to allocation functions, temporary allocations,
#     peak heap memory consumption, total memory leaked, peak RSS (each
#     exact where heaptrack_print exposes the exact number: its flame-graph
#     output has integer costs; its printed lines must round from them),
#     and the runtime within 1 ms (from its massif output, in ms);
#   - its top lists: per innermost function, the allocations, temporary
#     allocations, leaked and peak bytes equal vheap's `top` lists summed by
#     innermost function, and the first entry of each list names a function
#     vheap ranks first;
#   - the programs' own account ("ht fn=F key=value" lines): what the stacks
#     through F did; and memory over time as heaptrack_gui charts it (its
#     live bytes at each 'c' line and before each '+', which heaptrack_print
#     -M writes too) reaches what the program held ("held BYTES": ht_late_free
#     frees its first block, heaptrack's info 0, 300 ms after the peak).
# Also: every number in the file is lowercase hex, the gzip and zstd
# exports read back the same, the reader reports no unparsable line, what
# the format cannot hold is said on stderr, and bad uses exit 2 or 1.
. "$TOP/tests/lib.sh"

command -v heaptrack_print >/dev/null 2>&1 ||
    { echo "heaptrack_print is not installed (apt-get install heaptrack)" >&2; exit 77; }
need_cmd python3
progs="ht_leaky ht_temporary ht_peak ht_realloc ht_late_free threads_xfer"
for p in $progs loomsim inline_syms; do need "$PROGS/$p"; done
need "$ANALYZE" "$VHEAP_LIB"

cat >check.py <<'EOF'
import json, re, sys
from vhcheck import checker, ht_print_value, ht_size_bounds

# check.py NAME PREFIX EXPECT_NOTES PROGRAM_OUT
# PREFIX.summary.json  vheap summary --format json (the heaps exported)
# PREFIX.top.MEASURE.json  vheap top --by MEASURE --limit 0 --format json
# PREFIX.txt  heaptrack_print -a -p -T -l 1 ...; PREFIX.fold.COST its -F
# PREFIX.massif  its -M; PREFIX.err  the exporter's stderr
name, prefix, strict, prog_out = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
check, errors = checker(f"{name}: ")

summ = json.load(open(f"{prefix}.summary.json"))
heaps = summ["heaps"]
VH = {"allocations": sum(h["allocations"] for h in heaps),
      "temporary": sum(h["temporary"] for h in heaps),
      "leaked": sum(h["leaked_bytes"] for h in heaps),
      "peak": max(h["peak_bytes"] for h in heaps)}
runtime_ns = summ["process"]["runtime_ns"]
peak_rss = summ["process"]["peak_rss"] or 0
merged = len(heaps) > 1
notes = open(f"{prefix}.err").read()

# ---- heaptrack_print's numbers ------------------------------------------------
text = open(f"{prefix}.txt").read()
def line(label):
    return ht_print_value(text, label, name)
size_bounds = ht_size_bounds
def folded(cost):
    """-F output: 'f (file);g (file); COST' -> {innermost function: sum}"""
    out = {}
    for l in open(f"{prefix}.fold.{cost}"):
        l = l.rstrip("\n")
        if not l:
            continue
        stack, c = l.rsplit(" ", 1)
        frames = [f for f in stack.split(";") if f]
        leaf = frames[-1].split(" (")[0] if frames else "??"
        out[leaf] = out.get(leaf, 0) + int(c)
    return out
HT = {c: folded(c) for c in ("allocations", "temporary", "leaked", "peak")}

# ---- the summary ------------------------------------------------------------
print(f"{name}: heaptrack_print's summary of the export")
check("calls to allocation functions", int(line("calls to allocation functions")),
      VH["allocations"])
want_temp = VH["temporary"]
mo = re.search(r"heaptrack_print will count (\d+) temporary allocations where vheap counts (\d+)",
               notes)
if mo:
    # threads: heaptrack cannot know them; the exporter must say what it will count
    check("exporter's note names vheap's count", int(mo.group(2)), VH["temporary"])
    want_temp = int(mo.group(1))
    # one thread: only the free of info 0 (one block) may be taken as temporary
    if strict and not ("first allocation (info 0)" in notes and want_temp - VH["temporary"] == 1):
        errors.append(f"{name}: a single-threaded program needs no temporary note")
check("temporary memory allocations", int(line("temporary memory allocations")), want_temp)
check("calls, exact (-F allocations)", sum(HT["allocations"].values()), VH["allocations"])
check("temporary, exact (-F temporary)", sum(HT["temporary"].values()), want_temp)
check("leaked, exact (-F leaked)", sum(HT["leaked"].values()), VH["leaked"])
lo, hi = size_bounds(line("total memory leaked"))
check(f"leaked line {line('total memory leaked')} covers {VH['leaked']}",
      lo <= VH["leaked"] <= hi, True)
ht_peak = sum(HT["peak"].values())
lo, hi = size_bounds(line("peak heap memory consumption"))
check(f"peak line covers the -F peak {ht_peak}", lo <= ht_peak <= hi, True)
if merged:
    # the peak of the sum of several heaps: between the largest heap's own
    # peak and the sum of all their peaks
    check("merged peak within its heaps' peaks",
          VH["peak"] <= ht_peak <= sum(h["peak_bytes"] for h in heaps), True)
else:
    check("peak, exact (-F peak)", ht_peak, VH["peak"])
lo, hi = size_bounds(line("peak RSS (including heaptrack overhead)"))
check(f"peak RSS line covers {peak_rss}", lo <= peak_rss <= hi, True)
times = [float(m) for m in re.findall(r"^time=([0-9.]+)$", open(f"{prefix}.massif").read(), re.M)]
ht_ms = times[-1] * 1000
check(f"runtime {ht_ms:.0f} ms within 1 ms of {runtime_ns / 1e6:.3f} ms",
      abs(ht_ms - runtime_ns / 1e6) <= 1.0 + 1e-9, True)
held = re.search(r"^held (\d+)$", open(prog_out).read(), re.M)
if held:
    heap_b = [int(m) for m in re.findall(r"^mem_heap_B=(\d+)$", open(f"{prefix}.massif").read(), re.M)]
    check(f"memory over time (-M) reaches the {held.group(1)} bytes the program held",
          max(heap_b) >= int(held.group(1)), True)

# ---- the top lists ------------------------------------------------------------
print(f"{name}: top lists by innermost function")
# vheap's top lists summed by innermost function (VT; what heaptrack_print's
# lists name first), and by the out-of-line function of the innermost frame
# (VO): heaptrack_print -F writes a frame's inlined callers after it, so its
# last frame is the out-of-line one.
VT, VO = {}, {}
for m, key in (("allocations", "allocations"), ("temporary", "temporary"),
               ("leaked", "leaked_bytes"), ("peak", "peak_bytes")):
    by, bo = {}, {}
    for row in json.load(open(f"{prefix}.top.{m}.json"))["top"]:
        f0 = row["stack"][0] if row["stack"] else {"function": None, "inlined": []}
        leaf = f0["function"] or "??"
        outer = (f0["inlined"][-1]["function"] if f0["inlined"] else f0["function"]) or "??"
        by[leaf] = by.get(leaf, 0) + row[key]
        bo[outer] = bo.get(outer, 0) + row[key]
    VT[m], VO[m] = by, bo
for m in ("allocations", "temporary", "leaked", "peak"):
    if m == "temporary" and want_temp != VH["temporary"]:
        continue
    if m == "peak" and merged:
        continue
    ht = {f: v for f, v in HT[m].items() if v}
    vh = {f: v for f, v in VO[m].items() if v}
    check(f"{m} per function", ht, vh)
# heaptrack_print's lists: the first entry names a function vheap ranks first
heads = {"allocations": r"^\d+ calls to allocation functions with \S+ peak consumption from$",
         "peak": r"^\S+ peak memory consumed over \d+ calls from$",
         "leaked": r"^\S+ leaked over \d+ calls from$",
         "temporary": r"^\d+ temporary allocations of \d+ allocations in total \(.*\) from$"}
lines = text.split("\n")
for m, rx in heads.items():
    if (m == "peak" and merged) or not VT[m] or max(VT[m].values()) == 0 or not strict:
        continue
    first = next((lines[i + 1].strip() for i, l in enumerate(lines) if re.match(rx, l)), None)
    top = max(VT[m].values())
    check(f"heaptrack_print's first {m} entry is one of vheap's first", first,
          first if VT[m].get(first) == top else sorted(f for f, v in VT[m].items() if v == top))

# ---- the program's own account -------------------------------------------------
expect = {}
for l in open(prog_out):
    if l.startswith("ht "):
        kv = dict(w.split("=", 1) for w in l.split()[1:])
        fn = kv.pop("fn")
        expect[fn] = {k: int(v) for k, v in kv.items()}
for fn, kv in expect.items():
    for key, m in (("allocations", "allocations"), ("temporary", "temporary"),
                   ("leaked_bytes", "leaked"), ("peak_bytes", "peak")):
        if key in kv and HT[m].get(fn) is not None:
            # the leaf is the program's allocating function in these programs
            check(f"{fn} {m} per the program", HT[m][fn], kv[key])

if errors:
    print("\n".join("FAIL: " + e for e in errors), file=sys.stderr)
    sys.exit(1)
print(f"{name}: heaptrack_print agrees with vheap")
EOF

# lowercase hex and well-formed lines throughout a plain export
check_text() {
    awk '
    BEGIN { used = 0; ninfo = 0 }
    /\r/ { print "CR in line " NR; bad = 1 }
    $1 == "s" {
        if ($2 !~ /^[0-9a-f]+$/) { print "line " NR ": " $0; bad = 1; next }
        n = 0; for (i = 1; i <= length($2); i++) n = n * 16 + index("0123456789abcdef", substr($2, i, 1)) - 1
        if (length($0) != length($2) + 3 + n) { print "line " NR ": length " n " != string of " (length($0) - length($2) - 3); bad = 1 }
        next
    }
    $1 == "X" || $1 == "#" { next }
    $1 == "v" { if ($0 != "v 10400 3") { print "line " NR ": " $0; bad = 1 }; next }
    $1 ~ /^[itacR+I-]$/ {
        for (i = 2; i <= NF; i++) if ($i !~ /^[0-9a-f]+$/) { print "line " NR ": " $0; bad = 1 }
        # heaptrack_gui grows its per-info list when a "+" names the info
        # just past its end: infos must be first used in index order
        if ($1 == "a") ninfo++
        if ($1 == "+") {
            k = 0; for (i = 1; i <= length($2); i++) k = k * 16 + index("0123456789abcdef", substr($2, i, 1)) - 1
            if (k == used) used++
            else if (k > used) { print "line " NR ": info " k " first used before info " used; bad = 1 }
        }
        next
    }
    { print "unknown line " NR ": " $0; bad = 1 }
    END {
        if (used != ninfo) { print ninfo - used " infos never used by a +"; bad = 1 }
        exit bad
    }' "$1" || die "$1 is not a well-formed heaptrack file (above)"
}

# run NAME PROG HEAP: profile, export, read back, compare
export_check() {
    n=$1 cap=$2 heap=$3 strict=$4
    "$ANALYZE" summary "$cap" --format json ${heap:+--heap "$heap"} >"$n.summary.json" 2>/dev/null ||
        die "summary of $cap failed"
    for m in allocations temporary leaked peak; do
        "$ANALYZE" top "$cap" --by $m --limit 0 --format json ${heap:+--heap "$heap"} \
            >"$n.top.$m.json" 2>/dev/null || die "top --by $m of $cap failed"
    done
    "$ANALYZE" export --format heaptrack "$cap" ${heap:+--heap "$heap"} -o "$n.ht" 2>"$n.err" ||
        die "export of $cap failed: $(cat "$n.err")"
    cat "$n.err"
    grep -q "not in the heaptrack file: block addresses" "$n.err" ||
        die "the exporter did not say what the format cannot hold"
    check_text "$n.ht"
    heaptrack_print --disable-builtin-suppressions -f "$n.ht" -a -p -T -l 1 -n 1000 \
        >"$n.txt" 2>"$n.ht_err" || die "heaptrack_print failed on $n.ht: $(cat "$n.ht_err")"
    if grep -E "failed to parse|unexpected|out of bounds" "$n.ht_err" "$n.txt"; then
        die "heaptrack_print could not read every line of $n.ht"
    fi
    for c in allocations temporary leaked peak; do
        heaptrack_print --disable-builtin-suppressions -f "$n.ht" -F "$n.fold.$c" \
            --flamegraph-cost-type $c >/dev/null 2>&1 || die "heaptrack_print -F $c failed"
    done
    heaptrack_print --disable-builtin-suppressions -f "$n.ht" -M "$n.massif" >/dev/null 2>&1 ||
        die "heaptrack_print -M failed"
    python3 check.py "$n" "$n" "$strict" "$n.out" || die "$n: heaptrack_print disagrees (above)"

    # compressed by suffix: the same reading
    for z in gz zst; do
        "$ANALYZE" export -f heaptrack "$cap" ${heap:+--heap "$heap"} -o "$n.ht.$z" 2>/dev/null ||
            die "export to $n.ht.$z failed"
        heaptrack_print --disable-builtin-suppressions -f "$n.ht.$z" -a -p -T -l 1 -n 1000 \
            2>&1 | grep -v '^reading file' >"$n.$z.txt"
        grep -v '^reading file' "$n.txt" | cmp -s - "$n.$z.txt" ||
            die "heaptrack_print reads $n.ht.$z differently from $n.ht"
    done
    magic=$(od -An -tx1 -N4 "$n.ht.gz" | tr -d ' ')
    case $magic in 1f8b*) ;; *) die "$n.ht.gz is not gzip ($magic)" ;; esac
    magic=$(od -An -tx1 -N4 "$n.ht.zst" | tr -d ' ')
    expect_eq "zstd magic of $n.ht.zst" "$magic" "28b52ffd"
}

for p in $progs; do
    echo "== $p"
    profile "$PWD/$p.vhcap" "$PROGS/$p" >"$p.out" || die "$p failed under vheap"
    strict=1
    [ "$p" = threads_xfer ] && strict=0
    export_check "$p" "$p.vhcap" "" "$strict"
done

# Inline chains: heaptrack_print names the inlined functions of a frame and
# their lines as the program says they are (its "site", "inline", "caller"
# lines), e.g. inner_alloc at :32, middle_alloc at :38, outer_alloc at :44,
# called from main at :68.
echo "== inline_syms"
profile "$PWD/inl.vhcap" "$PROGS/inline_syms" >inl.out || die "inline_syms failed under vheap"
"$ANALYZE" export -f heaptrack inl.vhcap -o inl.ht 2>/dev/null || die "export of inl.vhcap failed"
check_text inl.ht
heaptrack_print --disable-builtin-suppressions -f inl.ht -l 1 -n 1000 >inl.txt 2>&1 ||
    die "heaptrack_print failed on inl.ht"
cat >inline.py <<'EOF'
import re, sys
want = {}
for l in open(sys.argv[1]):
    w = l.split()
    if w and w[0] in ("site", "inline", "caller"):
        want.setdefault(int(w[1]), []).append((w[-2], int(w[-1])))
lines = open(sys.argv[2]).read().split("\n")
# every leak entry: the frame and its inline chain, then "... from:" and
# the caller; (function, line) pairs in order
entries = []
for i, l in enumerate(lines):
    if not re.match(r"^\S+ leaked over \d+ calls from$", l):
        continue
    got, i = [], i + 1
    while i < len(lines) and lines[i].strip():
        l = lines[i]
        mo = re.match(r"\s*at .*:(\d+)$", l)
        if mo and got:
            got[-1] = (got[-1][0], int(mo.group(1)))
        elif not re.match(r"\s*(in |at )", l) and not l.endswith("from:"):
            got.append((l.strip(), 0))
        i += 1
    entries.append(got)
bad = 0
for size, frames in want.items():
    got = next((e[:len(frames)] for e in entries if e and e[0][0] == frames[0][0]), None)
    ok = got == frames
    print(f"  {'ok ' if ok else 'BAD'} {size}: {got} (want {frames})")
    bad |= not ok
sys.exit(bad)
EOF
python3 inline.py inl.out inl.txt || die "heaptrack_print names other frames than inline_syms did"

# loomsim: four threads on malloc, and the loom with its roads merged
echo "== loomsim"
VHEAP_OUT="$PWD/loom.%p.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/loomsim" \
    >loom.out 2>loom.err || die "loomsim failed under vheap: $(tail -3 loom.err)"
main=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' loom.out)
[ -n "$main" ] || die "no main summary in loomsim's output"
: >loom_malloc.out
: >loom_all.out
export_check loom_malloc "loom.$main.vhcap" malloc 0
export_check loom_all "loom.$main.vhcap" 'loom/*' 0
grep -q "heaps are merged into one" loom_all.err || die "no note on merged heaps"
grep -q "block moves" loom_all.err || die "no note on the loom's moved blocks"

# bad uses
"$ANALYZE" export --format heaptrack ht_peak.vhcap -o ht_peak.vhcap.sqlite 2>err.txt
expect_eq "export over its own DB" "$?" 2
"$ANALYZE" export --format heaptrack --cost peak ht_peak.vhcap -o x.ht 2>err.txt
expect_eq "--cost with heaptrack" "$?" 2
"$ANALYZE" export --format heaptrak ht_peak.vhcap -o x.ht 2>err.txt
expect_eq "unknown format" "$?" 2
"$ANALYZE" export --format heaptrack ht_peak.vhcap 2>err.txt
expect_eq "no -o" "$?" 2
"$ANALYZE" export --format heaptrack nosuch.sqlite -o x.ht 2>err.txt
expect_eq "missing DB" "$?" 1
"$ANALYZE" export --format heaptrack ht_peak.vhcap --heap nosuch -o x.ht 2>err.txt
expect_eq "unknown heap" "$?" 1
"$ANALYZE" export --format heaptrack ht_peak.vhcap -o nodir/x.ht 2>err.txt
expect_eq "unwritable -o" "$?" 1
[ ! -e x.ht ] || die "a failed export left x.ht behind"
ls | grep -q '\.tmp-' && die "a temporary file was left behind: $(ls | grep '\.tmp-')"
echo "heaptrack_print reads vheap's exports as vheap reads the runs: $progs loomsim"
