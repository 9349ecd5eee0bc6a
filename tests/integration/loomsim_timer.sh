# loomsim_timer — the loom stand-in with `--timer`: every 8th event runs a
# computation on inner roads until a 2 ms SIGVTALRM interval timer
# siglongjmps to the event loop, wherever it is (inside the allocator,
# inside vheap's calls), and the loop leaves every road through love().
# The home road's heap ("loom") must come out exactly as loomsim's books
# say (the timer only runs on inner roads), every road heap destroyed, the
# one leak found. Nothing is nested: the timer's handler runs outside the
# shim's bookkeeping (preload/signals.c), whatever it interrupted. Run five
# times (before that design, about half the runs lost everything after a
# jump that landed in the shim).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/loomsim"
need_cmd python3

for run in 1 2 3 4 5; do
rm -f loom.*.vhcap db.sqlite
VHEAP_OUT='loom.%p.vhcap' VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/loomsim" --timer \
    >out.txt 2>err.txt || die "loomsim --timer under vheap exited $?: $(tail -n 3 err.txt)"
main=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' out.txt)
[ -n "$main" ] || die "no summary line for loomsim's main process"
timer=$(sed -n 's/^loomsim summary pid=.* role=main .* pops_timer=\([0-9]*\) .*/\1/p' out.txt)
[ "${timer:-0}" -ge 3 ] || die "the timer unwound ${timer:-0} events, expected one per 8"
"$ANALYZE" load "loom.$main.vhcap" db.sqlite >/dev/null 2>load.err || die "load failed: $(cat load.err)"
vh_dump "loom.$main.vhcap" main.dump
nested=$(sed -n 's/^loss .*nested=\([0-9]*\).*/\1/p' main.dump)

MAIN=$main NESTED=${nested:-0} python3 - <<'PY' || die "the loom disagrees with loomsim (see above)"
import os, sqlite3, sys
pid, nested = os.environ["MAIN"], int(os.environ["NESTED"])
errors = []
def fail(m):
    errors.append(m)
    print("FAIL: " + m, file=sys.stderr)

books = {}
for line in open("out.txt"):
    w = line.split()
    if w[:1] == ["loomsim"] and w[1].startswith("heap=") and "pid=%s" % pid in w:
        f = dict(x.split("=", 1) for x in w[2:])
        books[w[1][5:]] = {k: int(v) for k, v in f.items() if k not in ("role",)}
db = sqlite3.connect("db.sqlite")
loom = db.execute("SELECT allocations, frees, live_blocks, live_bytes, leaked_blocks"
                  " FROM heaps WHERE name = 'loom'").fetchall()
open_roads = db.execute("SELECT count(*) FROM heaps WHERE name LIKE 'road.%'"
                        " AND destroy_time IS NULL").fetchone()[0]
roads = db.execute("SELECT count(*) FROM heaps WHERE name LIKE 'road.%'").fetchone()[0]
if nested:
    fail("%d calls passed through as nested: a siglongjmp reached into the shim" % nested)
b = books.get("loom")
if len(loom) != 1 or not b:
    fail("one loom heap expected: %s, books %s" % (loom, b))
    sys.exit(1)
allocs, frees, live_blocks, live_bytes, leaked = loom[0]
# a realloc counts once in the database: moving ones are in allocs, in place in resizes
for name, got, want in (("allocations", allocs, b["allocs"] + b["resizes"]),
                        ("live blocks", live_blocks, b["live_blocks"]),
                        ("live bytes", live_bytes, b["live_bytes"]), ("leaked blocks", leaked, 1)):
    if got != want:
        fail("loom: %s %d in the database, %d by loomsim" % (name, got, want))
if open_roads:
    fail("%d of %d road heaps never destroyed" % (open_roads, roads))
if roads != sum(1 for k in books if k.startswith("road.")):
    fail("%d road heaps in the database, loomsim made %d" %
         (roads, sum(1 for k in books if k.startswith("road."))))
sys.exit(1 if errors else 0)
PY
echo "run $run: pops by timer $timer, nested ${nested:-0}"
done
exit 0
