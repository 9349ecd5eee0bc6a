# sample — VHEAP_SAMPLE: Poisson sampling by bytes. growd runs the same
# rounds in full and sampled (a sample every 32 KiB on average); the
# sampled capture's estimates (each recorded allocation of s bytes weighs
# 1/(1 - exp(-s/R)), tests/sample/estimate.py) of the top 5 stacks by
# bytes allocated are within 10 %, or 5 standard deviations of the estimate
# where that is more (a chance of about 1 in 3.5 million for a right
# estimator), of the full capture's, which equal what
# the program counted; no free of an unrecorded block is recorded; the
# sampled capture is a small fraction of the full one; the same for C++'s
# operator new (cxx_sampled). A bad VHEAP_SAMPLE
# or VHEAP_START warns once and records in full, from the start.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/growd" "$PROGS/cxx_sampled" "$PROGS/basic"
command -v python3 >/dev/null 2>&1 || die "python3 is needed (scripts/install-deps.sh)"

# compare TRUTH FULL SAMPLED: the full capture's numbers equal the program's
# own; the sampled estimates of its top 5 stacks by bytes (of those the
# program counts: not the runtime's startup) are within 10 % or 5 standard
# deviations. (A fixed 10 % failed about one run in four on cxx_sampled's
# new_obj, whose few large samples make its estimate vary by more.)
compare() {
python3 - "$@" <<'PY'
import sys
def read(p):
    d = {}
    for line in open(p):
        w = line.split()
        if w[:1] == ["stack"]:
            f = dict(x.split("=") for x in w[2:])
            d[w[1]] = (int(f["bytes"]), int(f["calls"]),
                       float(f.get("sd_bytes", 0)), float(f.get("sd_calls", 0)))
    return d
truth, full, samp = (read(p) for p in sys.argv[1:4])
bad = 0
for name, (b, c, _, _) in truth.items():
    if full.get(name, ())[:2] != (b, c):
        print("full capture: %s %s, program %s" % (name, full.get(name), (b, c)), file=sys.stderr)
        bad += 1
top = sorted((n for n in full if n in truth), key=lambda n: -full[n][0])[:5]
for name in top:
    fb, fc = full[name][:2]
    sb, sc, sdb, sdc = samp.get(name, (0, 0, 0.0, 0.0))
    ok_b = abs(sb - fb) <= max(0.10 * fb, 5 * sdb)
    ok_c = abs(sc - fc) <= max(0.10 * fc, 5 * sdc)
    print("%-12s bytes %11d est %11d (%+.1f%%, sd %.1f%%)  calls %7d est %7d (%+.1f%%, sd %.1f%%)%s" %
          (name, fb, sb, 100.0 * (sb - fb) / fb, 100.0 * sdb / fb,
           fc, sc, 100.0 * (sc - fc) / fc, 100.0 * sdc / fc, "" if ok_b and ok_c else "  OFF"))
    if not (ok_b and ok_c):
        bad += 1
sys.exit(1 if bad else 0)
PY
}

# estimates NAME PROGRAM: NAME.full.vhcap and NAME.sampled.vhcap (32 KiB)
# of PROGRAM, against what it counted (NAME.truth.txt): no free of an
# unrecorded block, and compare's bounds.
estimates() {
    for _m in full sampled; do
        vh_dump "$1.$_m.vhcap" "$1.$_m.dump"
        python3 "$TOP/tests/sample/estimate.py" "$1.$_m.dump" "$2" \
            "$([ $_m = full ] && echo 0 || echo 32768)" >"$1.$_m.est"
    done
    grep -q '^frees_unknown=0$' "$1.sampled.est" ||
        die "$1 sampled: $(grep frees_unknown "$1.sampled.est")"
    compare "$1.truth.txt" "$1.full.est" "$1.sampled.est" || die "$1: estimates off (above)"
}

VHEAP_OUT=growd.full.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/growd" 2000 \
    >growd.truth.txt || die "growd (full) exited $?"
VHEAP_SAMPLE=32KiB VHEAP_OUT=growd.sampled.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" \
    "$PROGS/growd" 2000 >out.txt || die "growd (sampled) exited $?"
grep "^stack" growd.truth.txt >t1.txt; grep "^stack" out.txt >t2.txt
cmp -s t1.txt t2.txt || die "growd did different work in the two runs"
estimates growd "$PROGS/growd"
full=$(stat -c %s growd.full.vhcap) sampled=$(stat -c %s growd.sampled.vhcap)
[ $((sampled * 10)) -lt "$full" ] || die "sampled capture $sampled bytes, full $full"
echo "sample: capture $sampled bytes sampled, $full in full"

# C++: operator new and new[] (whose own malloc passes through) are
# sampled and estimated as malloc is.
VHEAP_OUT=cxx.full.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/cxx_sampled" \
    >cxx.truth.txt || die "cxx_sampled (full) exited $?"
VHEAP_SAMPLE=32KiB VHEAP_OUT=cxx.sampled.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" \
    "$PROGS/cxx_sampled" >/dev/null || die "cxx_sampled (sampled) exited $?"
estimates cxx "$PROGS/cxx_sampled"

# Every entry point under sampling, failed huge requests included (each
# once counted down 2^63 bytes by 512 KiB draws: a hang).
timeout 60 env VHEAP_SAMPLE=512KiB VHEAP_OUT=basic.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" \
    "$PROGS/basic" >/dev/null || die "basic under sampling exited $? (124: hung)"

VHEAP_SAMPLE=lots VHEAP_OUT=bad.vhcap LD_PRELOAD="$VHEAP_LIB" "$PROGS/growd" 20 >/dev/null 2>bad.err
expect_eq "warnings for VHEAP_SAMPLE=lots" "$(grep -c 'ignoring VHEAP_SAMPLE=lots' bad.err)" 1
n=$("$ANALYZE" dump bad.vhcap | awk '$3 == "alloc" { n++ } END { print n + 0 }')
[ "$n" -ge 5000 ] || die "a bad VHEAP_SAMPLE: only $n allocations recorded (want all)"

VHEAP_START=maybe VHEAP_OUT=bad2.vhcap LD_PRELOAD="$VHEAP_LIB" "$PROGS/growd" 20 >/dev/null 2>bad2.err
expect_eq "warnings for VHEAP_START=maybe" "$(grep -c 'ignoring VHEAP_START=maybe' bad2.err)" 1
n=$("$ANALYZE" dump bad2.vhcap | awk '$3 == "alloc" { n++ } END { print n + 0 }')
[ "$n" -ge 5000 ] || die "a bad VHEAP_START: only $n allocations recorded (want all: on)"
