# sample — VHEAP_SAMPLE: Poisson sampling by bytes. growd runs the same
# rounds in full and sampled (a sample every 32 KiB on average); the
# sampled capture's estimates (each recorded allocation of s bytes weighs
# 1/(1 - exp(-s/R)), tests/sample/estimate.py) of the top 5 stacks by
# bytes allocated are within 10 % of the full capture's, which equal what
# the program counted; no free of an unrecorded block is recorded; the
# sampled capture is a small fraction of the full one; the same for C++'s
# operator new (cxx_sampled). A bad VHEAP_SAMPLE
# or VHEAP_START warns once and records in full, from the start.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/growd" "$PROGS/cxx_sampled"
command -v python3 >/dev/null 2>&1 || die "python3 is needed (scripts/install-deps.sh)"

# compare TRUTH FULL SAMPLED: the full capture's numbers equal the program's
# own; the sampled estimates of its top 5 stacks by bytes (of those the
# program counts: not the runtime's startup) are within 10 %.
compare() {
python3 - "$@" <<'PY'
import sys
def read(p):
    d = {}
    for line in open(p):
        w = line.split()
        if w[:1] == ["stack"]:
            f = dict(x.split("=") for x in w[2:])
            d[w[1]] = (int(f["bytes"]), int(f["calls"]))
    return d
truth, full, samp = (read(p) for p in sys.argv[1:4])
bad = 0
for name, (b, c) in truth.items():
    if full.get(name) != (b, c):
        print("full capture: %s %s, program %s" % (name, full.get(name), (b, c)), file=sys.stderr)
        bad += 1
top = sorted((n for n in full if n in truth), key=lambda n: -full[n][0])[:5]
for name in top:
    fb, fc = full[name]
    sb, sc = samp.get(name, (0, 0))
    eb, ec = abs(sb - fb) / fb, abs(sc - fc) / fc
    print("%-12s bytes %11d est %11d (%+.1f%%)  calls %7d est %7d (%+.1f%%)" %
          (name, fb, sb, 100.0 * (sb - fb) / fb, fc, sc, 100.0 * (sc - fc) / fc))
    if eb > 0.10 or ec > 0.10:
        bad += 1
sys.exit(1 if bad else 0)
PY
}

VHEAP_OUT=full.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/growd" 2000 >truth.txt ||
    die "growd (full) exited $?"
VHEAP_SAMPLE=32KiB VHEAP_OUT=sampled.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" \
    "$PROGS/growd" 2000 >out.txt || die "growd (sampled) exited $?"
grep "^stack" truth.txt >t1.txt; grep "^stack" out.txt >t2.txt
cmp -s t1.txt t2.txt || die "growd did different work in the two runs"
vh_dump full.vhcap full.dump
vh_dump sampled.vhcap sampled.dump
python3 "$TOP/tests/sample/estimate.py" full.dump "$PROGS/growd" 0 >full.est
python3 "$TOP/tests/sample/estimate.py" sampled.dump "$PROGS/growd" 32768 >sampled.est
grep -q '^frees_unknown=0$' sampled.est || die "sampled: $(grep frees_unknown sampled.est)"
compare truth.txt full.est sampled.est || die "estimates off (above)"
full=$(stat -c %s full.vhcap) sampled=$(stat -c %s sampled.vhcap)
[ $((sampled * 10)) -lt "$full" ] || die "sampled capture $sampled bytes, full $full"
echo "sample: capture $sampled bytes sampled, $full in full"

# C++: operator new and new[] (whose own malloc passes through) are
# sampled and estimated as malloc is.
VHEAP_OUT=cxx_full.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/cxx_sampled" >cxx_truth.txt ||
    die "cxx_sampled (full) exited $?"
VHEAP_SAMPLE=32KiB VHEAP_OUT=cxx_sampled.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" \
    "$PROGS/cxx_sampled" >/dev/null || die "cxx_sampled (sampled) exited $?"
vh_dump cxx_full.vhcap cxx_full.dump
vh_dump cxx_sampled.vhcap cxx_sampled.dump
python3 "$TOP/tests/sample/estimate.py" cxx_full.dump "$PROGS/cxx_sampled" 0 >cxx_full.est
python3 "$TOP/tests/sample/estimate.py" cxx_sampled.dump "$PROGS/cxx_sampled" 32768 >cxx_sampled.est
grep -q '^frees_unknown=0$' cxx_sampled.est || die "C++ sampled: $(grep frees_unknown cxx_sampled.est)"
compare cxx_truth.txt cxx_full.est cxx_sampled.est || die "C++ estimates off (above)"

VHEAP_SAMPLE=lots VHEAP_OUT=bad.vhcap LD_PRELOAD="$VHEAP_LIB" "$PROGS/growd" 20 >/dev/null 2>bad.err
expect_eq "warnings for VHEAP_SAMPLE=lots" "$(grep -c 'ignoring VHEAP_SAMPLE=lots' bad.err)" 1
n=$("$ANALYZE" dump bad.vhcap | awk '$3 == "alloc" { n++ } END { print n + 0 }')
[ "$n" -ge 5000 ] || die "a bad VHEAP_SAMPLE: only $n allocations recorded (want all)"

VHEAP_START=maybe VHEAP_OUT=bad2.vhcap LD_PRELOAD="$VHEAP_LIB" "$PROGS/growd" 20 >/dev/null 2>bad2.err
expect_eq "warnings for VHEAP_START=maybe" "$(grep -c 'ignoring VHEAP_START=maybe' bad2.err)" 1
n=$("$ANALYZE" dump bad2.vhcap | awk '$3 == "alloc" { n++ } END { print n + 0 }')
[ "$n" -ge 5000 ] || die "a bad VHEAP_START: only $n allocations recorded (want all: on)"
