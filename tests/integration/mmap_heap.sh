# mmap_heap — what a program maps itself is the built-in heap "mmap": the
# mappings mmap_arena still holds at exit (an arena whose middle it unmapped
# and part of which it mapped over, one mapping moved and one grown in
# place by mremap, the break grown by sbrk, a 64 GiB PROT_NONE reservation
# with a GiB mapped over it; one unmapped whole) are its leaked blocks,
# exactly, each with the stack of the function that made the mapping it is
# part of, as the program prints them; failing calls keep their errno; a
# fork child's capture has its own mapping only (its munmap of one of the
# parent's records nothing). `mmap_arena big`
# mallocs a block above glibc's mmap threshold: no mmap heap by default,
# its mapping (holding the block) with VHEAP_MMAP=all, and the freed
# block's mapping ends; on jemalloc, its extents only with VHEAP_MMAP=all.
# VHEAP_MMAP=off records none. The report of the
# arena shows the heap (headless Chromium, as report.sh) with the
# database's numbers, and `heaps`/`series` list it beside malloc
# (`series --by heap`: a column a heap, the mmap one the program's mappings
# at the end); frag says the mappings apart and sets RSS against the rest.
. "$TOP/tests/lib.sh"
need_cmd sqlite3 python3
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/mmap_arena"

profile arena.vhcap "$PROGS/mmap_arena" >arena.out || die "mmap_arena exited $?"
"$ANALYZE" load -q arena.vhcap arena.db || die "load failed"
"$ANALYZE" leaks arena.db --heap mmap --limit 0 --format json >leaks.json || die "leaks failed"
sqlite3 arena.db "SELECT l.address, l.size, l.stack_id FROM leaks l JOIN heaps h ON h.id = l.heap_id
                  WHERE h.name = 'mmap' ORDER BY l.address" >live.txt
python3 - <<'PY' || die "the mmap heap's live blocks are not the program's mappings (above)"
import json
makers = {"make_arena", "map_over", "grow", "grow_break", "reserve", "commit"}
first = {}
for g in json.load(open("leaks.json"))["leaks"]:
    names = [f["function"] for f in g["stack"] if f["function"] in makers]
    first[g["stack_id"]] = names[0] if names else "?"
want = sorted((int(a), int(s), fn) for _, a, s, fn in
              (l.split() for l in open("arena.out") if l.startswith("live ")))
got = sorted((int(a), int(s), first.get(int(k), "?")) for a, s, k in
             (l.strip().split("|") for l in open("live.txt")))
for w, g in zip(want, got):
    print("want", w, "got", g, "" if w == g else "  <--")
assert len(want) == len(got) == 10 and want == got, (len(want), len(got))
PY
grep -q '^errno ok' arena.out || die "errno not passed through: $(grep errno arena.out)"
set -- $(sed -n 's/^child //p' arena.out)
"$ANALYZE" load -q "arena.vhcap.$1" child.db || die "load of the child's capture failed"
expect_eq "the child's mmap heap: leaked blocks, unknown frees" \
    "$(sqlite3 child.db "SELECT group_concat(l.address || ':' || l.size), h.unknown_frees
                         FROM heaps h JOIN leaks l ON l.heap_id = h.id WHERE h.name = 'mmap'")" \
    "$2:4096|0"

# a mapping a top-level custom heap declares as its bounds is that heap's
# (Vere's loom): it leaves the mmap heap, mappings there are not recorded
# while the heap lives, and are again once it is destroyed
profile declared.vhcap "$PROGS/mmap_arena" declared >declared.out ||
    die "mmap_arena declared exited $?"
"$ANALYZE" load -q declared.vhcap declared.db || die "load of declared.vhcap failed"
expect_eq "the mmap heap's blocks with a heap declared over the arena" \
    "$(sqlite3 declared.db "SELECT group_concat(address || ':' || size, ' ') FROM
        (SELECT l.address, l.size FROM leaks l JOIN heaps h ON h.id = l.heap_id
         WHERE h.name = 'mmap' ORDER BY l.address)")" \
    "$(awk '/^live / { print $2 ":" $3 }' declared.out | sort -n | tr '\n' ' ' | sed 's/ $//')"

mmap_row() { sqlite3 "$1" "SELECT count(*) || '|' || coalesce(sum(l.size), 0) FROM heaps h
                          LEFT JOIN leaks l ON l.heap_id = h.id WHERE h.name = 'mmap'"; }
total=$(awk '/^live / { s += $3 } END { printf "%.0f\n", s }' arena.out)
expect_eq "heaps: the mmap heap's leaked bytes" \
    "$(sqlite3 arena.db "SELECT leaked_bytes FROM heaps WHERE name = 'mmap'")" "$total"
"$ANALYZE" heaps arena.db >heaps.txt || die "heaps failed"
grep -q '^mmap ' heaps.txt || die "heaps does not list the mmap heap: $(cat heaps.txt)"
"$ANALYZE" series arena.db --heap mmap --format csv >series.csv || die "series --heap mmap failed"
[ "$(wc -l <series.csv)" -gt 1 ] || die "series of the mmap heap is empty"
# series --by heap: a column a heap, the mmap heap beside malloc; at the
# end the mmap column holds the program's mappings, malloc's its live bytes
"$ANALYZE" series arena.db --by heap --interval 1ms --format json >byheap.json ||
    die "series --by heap failed"
python3 - "$total" "$(sqlite3 arena.db "SELECT id || ':' || name || ':' ||
        (SELECT coalesce(sum(size), 0) FROM leaks WHERE heap_id = h.id) FROM heaps h")" <<'PY' ||
import json, sys
total, heaps = int(sys.argv[1]), dict((int(i), (n, int(b))) for i, n, b in
                                     (h.split(":") for h in sys.argv[2].split()))
j = json.load(open("byheap.json"))
cols = [(h["heap_id"], h["name"]) for h in j["heaps"]]
assert sorted(n for _, n in cols) == ["malloc", "mmap"], cols
last = j["series"][-1]
for k, (hid, name) in enumerate(cols):
    want = total if name == "mmap" else heaps[hid][1]
    print(name, "at the end:", last[f"heap_{k + 1}"], "want", want)
    assert last[f"heap_{k + 1}"] == want
assert last["live_bytes"] == sum(last[f"heap_{k + 1}"] for k in range(len(cols))) + last["other_bytes"]
PY
    die "series --by heap: the columns are not the heaps' live bytes"

# frag: the mappings are said apart (the program's, exactly), and RSS is
# set against the rest of the live usable bytes (malloc's, as frag --heap
# malloc counts them): mappings are resident only where touched
"$ANALYZE" frag arena.db --format json >frag.json || die "frag failed"
"$ANALYZE" frag arena.db --heap malloc --format json >frag.malloc.json || die "frag --heap malloc failed"
python3 - "$total" <<'PY' || die "frag does not account for the mappings (above)"
import json, sys
f = json.load(open("frag.json"))["frag"]
m = json.load(open("frag.malloc.json"))["frag"]
print("mapped", f.get("mapped"), "want", int(sys.argv[1]))
assert f.get("mapped") == int(sys.argv[1])
print("usable less mapped", f["usable"] - f["mapped"], "malloc's", m["usable"])
assert f["usable"] - f["mapped"] == m["usable"]
print("rss_over_usable", f["rss_over_usable"], "want", f["rss"] - m["usable"])
assert f["rss_over_usable"] == f["rss"] - m["usable"]
PY

# big blocks: glibc maps them itself, with no PLT call: not the program's
for mode in default program all off; do
    rm -f big.vhcap big.db
    if [ $mode = default ]; then
        profile big.vhcap "$PROGS/mmap_arena" big >big.out
    else
        VHEAP_MMAP=$mode profile big.vhcap "$PROGS/mmap_arena" big >big.out
    fi
    [ $? -eq 0 ] || die "mmap_arena big ($mode) failed"
    "$ANALYZE" load -q big.vhcap big.db || die "load ($mode) failed"
    heaps=$(sqlite3 big.db "SELECT count(*) FROM heaps WHERE name = 'mmap'")
    if [ $mode != all ]; then
        expect_eq "VHEAP_MMAP=$mode: an mmap heap" "$heaps" 0
        continue
    fi
    block=$(sed -n 's/^big //p' big.out)
    expect_eq "VHEAP_MMAP=all: the kept block's mapping holds it, the freed one's ended" \
        "$(sqlite3 big.db "SELECT count(*), sum($block BETWEEN l.address AND l.address + l.size - 1),
                                  sum(l.size >= 1048576), h.allocations
                           FROM leaks l JOIN heaps h ON h.id = l.heap_id WHERE h.name = 'mmap'")" "1|1|1|2"
done
# jemalloc maps its extents through the PLT, from inside the real malloc:
# the allocator's, not the program's (libjemalloc-dev: install-deps.sh)
je=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -n 1)
[ -n "$je" ] || die "libjemalloc.so.2 is not installed (scripts/install-deps.sh)"
for mode in program all; do
    VHEAP_MMAP=$mode VHEAP_OUT=je.$mode.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB $je" \
        "$PROGS/mmap_arena" big >/dev/null || die "mmap_arena big on jemalloc ($mode) failed"
    "$ANALYZE" load -q je.$mode.vhcap je.$mode.db || die "load (jemalloc, $mode) failed"
done
expect_eq "jemalloc, VHEAP_MMAP=program: an mmap heap" \
    "$(sqlite3 je.program.db "SELECT count(*) FROM heaps WHERE name = 'mmap'")" 0
expect_eq "jemalloc, VHEAP_MMAP=all: its extents are mappings" \
    "$(sqlite3 je.all.db "SELECT allocations > 0 FROM heaps WHERE name = 'mmap'")" 1
VHEAP_MMAP=off profile off.vhcap "$PROGS/mmap_arena" >/dev/null || die "VHEAP_MMAP=off: exit $?"
"$ANALYZE" load -q off.vhcap off.db || die "load (off) failed"
expect_eq "VHEAP_MMAP=off: the arena's heap" "$(mmap_row off.db)" "0|0"

# the report: the heaps table's mmap row is the database's
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
    { echo "chromium is not installed (scripts/install-deps.sh installs it)" >&2; exit 77; }
"$ANALYZE" report arena.db -o arena.html 2>report.err || die "report failed: $(cat report.err)"
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$PWD/chrome" --virtual-time-budget=5000 --dump-dom \
    "file://$PWD/arena.html" >arena.dom 2>chrome.err || die "chromium failed: $(tail -3 chrome.err)"
q() { python3 "$TOP/tests/report/dom.py" "$@"; }
expect_eq "report: JS error" "$(q arena.dom error)" "none"
id=$(sqlite3 arena.db "SELECT id FROM heaps WHERE name = 'mmap'")
row=$(q arena.dom heaprow:$id)
case $row in mmap\|*) ;; *) die "the report's heaps table has no mmap row: $row" ;; esac
expect_eq "report: mmap row's calls|peak|leaked" "$(echo "$row" | cut -d'|' -f5,7,9)" \
    "$(sqlite3 arena.db "SELECT allocations || '|' || peak_bytes || '|' || leaked_bytes
                         FROM heaps WHERE id = $id")"
expect_eq "report: mmap row's leaked bytes = the program's mappings" \
    "$(echo "$row" | cut -d'|' -f9)" "$total"
echo "mmap_heap: the program's mappings as blocks, exactly; allocator's only when asked"
