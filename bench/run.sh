#!/bin/sh
# run.sh — `make bench`: vheap's recording overhead side by side with
# heaptrack's on four workloads (bench/malloc_mt.c, a Python JSON workload,
# sqlite3 inserts and indexes, and a stack-heavy one: `python3 -m compileall`
# over a copy of part of Python's standard library, a few hundred thousand
# distinct stacks), then load+summary time, peak RSS and DB size against
# heaptrack_print's time and heaptrack's file on the same run.
# Every run is timed by bench/stamp (static, so LD_PRELOAD passes through it)
# from fork to exit of the program: heaptrack's wrapper script and the drain of
# its pipe after the program exited are not counted. Runs are interleaved
# (bare, heaptrack, vheap, rotating the order each repetition) and medians are
# reported; the verdict on vheap's overhead as a fraction of heaptrack's is
# the median of that fraction taken within each repetition (this machine's
# other guests slow all three runs of a repetition alike). Environment:
#   BENCH_REPS=7            repetitions of each (workload, mode)
#   BENCH_SAMPLE=512KiB     the rate of the sampled mode (VHEAP_SAMPLE); 0: no
#                           sampled column
#   BENCH_WORKLOADS="malloc_mt python_json sqlite compileall"   a subset, in this order
#   BENCH_HEAPTRACK=raw     raw: `heaptrack -r` (record only; heaptrack_interpret
#                           runs afterwards, outside the timed run); full: plain
#                           `heaptrack`, its interpreter running beside the program;
#                           none: no heaptrack columns (a BENCH_BASE comparison)
#   BENCH_ANALYZE_REPS=3    repetitions of the analysis table
#   BENCH_PERF=0            1: also `perf record` one vheap run per workload and
#                           one load of its capture, and print the hottest symbols
#   BENCH_MT_THREADS=4 BENCH_MT_ROUNDS=60000 BENCH_PY_ROUNDS=120  sizes
#   B=build                 the build directory (libvheap.so, vheap-analyze)
#   BENCH_BASE=DIR          another build directory (an older commit's): its
#                           shim runs as one more mode, and a table gives this
#                           build's full-mode CPU and wall against it, paired
#                           (a change's "no slower", measured side by side)
#   TMPDIR                  where the captures go (removed at the end)
# ulimit -v is in dash and bash, though POSIX does not name it:
# shellcheck disable=SC3045
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
b=${B:-build}
case $b in /*) ;; *) b=$top/$b ;; esac
bdir=$b/bench
lib=$b/libvheap.so
analyze=$b/vheap-analyze
reps=${BENCH_REPS:-7}
areps=${BENCH_ANALYZE_REPS:-3}
workloads=${BENCH_WORKLOADS:-malloc_mt python_json sqlite compileall}
htmode=${BENCH_HEAPTRACK:-raw}
mt_threads=${BENCH_MT_THREADS:-4}
mt_rounds=${BENCH_MT_ROUNDS:-60000}
py_rounds=${BENCH_PY_ROUNDS:-120}
cc=${CC:-cc}
interp=/usr/lib/heaptrack/libexec/heaptrack_interpret
# heaptrack_interpret 1.4.0 can grow without bound on some streams (its
# allocation-info hash set degenerates: KDE bug 477018, Tessil/robin-map#71);
# this caps it instead of letting it take the machine's memory.
interp_limit_kib=4194304

say() { printf '%s\n' "$*"; }
warn() { printf 'bench: %s\n' "$*" >&2; }

case $reps in ''|*[!0-9]*|0) warn "BENCH_REPS must be a positive integer"; exit 2 ;; esac
case $areps in ''|*[!0-9]*|0) warn "BENCH_ANALYZE_REPS must be a positive integer"; exit 2 ;; esac
case $htmode in raw|full|none) ;; *) warn "BENCH_HEAPTRACK must be raw, full or none"; exit 2 ;; esac

# ---- tools and workloads ---------------------------------------------------
mkdir -p "$bdir"
"$cc" -O2 -static -Wall -Wextra -Werror -o "$bdir/stamp" "$top/bench/stamp.c"
"$cc" -O2 -g -I"$top" -D_GNU_SOURCE -std=gnu11 -Wall -Wextra -Werror \
    -o "$bdir/capstat" "$top/bench/capstat.c"
# Built like an ordinary distribution program: -O2 -g, no frame pointers.
"$cc" -O2 -g -pthread -Wall -Wextra -Werror -o "$bdir/malloc_mt" "$top/bench/malloc_mt.c"
stamp=$bdir/stamp
capstat=$bdir/capstat

# The Debian interpreter, not a version-manager shim (a shell script that
# would be profiled too).
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3 2>/dev/null || true)
sqlite=$(command -v sqlite3 2>/dev/null || true)
# compileall's input: these packages and the top-level modules of the
# standard library (about 300 files, 7 MB), copied so that the run writes
# its .pyc files into a directory of its own
pystdlib=$([ -n "$py" ] && "$py" -c 'import os; print(os.path.dirname(os.__file__))' 2>/dev/null || true)
[ -f "$pystdlib/os.py" ] || pystdlib=""

have_heaptrack=0
if [ "$htmode" = none ]; then
    :
elif command -v heaptrack >/dev/null 2>&1; then
    have_heaptrack=1
else
    warn "heaptrack not installed: its columns are skipped (apt-get install heaptrack)"
fi
have_vheap=0
if [ -f "$lib" ]; then
    have_vheap=1
else
    warn "$lib not built: the vheap columns are skipped"
fi
ht_suffix=zst
command -v zstd >/dev/null 2>&1 || ht_suffix=gz

wl_ok() {
    case $1 in
    malloc_mt) return 0 ;;
    python_json) [ -n "$py" ] || { warn "python3 not found: python_json skipped"; return 1; } ;;
    sqlite) [ -n "$sqlite" ] || { warn "sqlite3 not found: sqlite skipped"; return 1; } ;;
    compileall) [ -n "$py" ] && [ -n "$pystdlib" ] ||
        { warn "python3 or its standard library not found: compileall skipped"; return 1; } ;;
    *) warn "unknown workload '$1' (malloc_mt python_json sqlite compileall)"; return 1 ;;
    esac
}
wls=""
for w in $workloads; do wl_ok "$w" && wls="$wls $w"; done
[ -n "$wls" ] || { warn "no workload to run"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vheap-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
cd "$tmp"
if [ -n "$pystdlib" ]; then
    mkdir pylib
    for d in email json asyncio concurrent xml http logging unittest importlib collections; do
        [ -d "$pystdlib/$d" ] && cp -r "$pystdlib/$d" pylib/
    done
    cp "$pystdlib"/*.py pylib/
    find pylib -name __pycache__ -prune -exec rm -rf {} +
fi

# sqlite_workload.sql .reads this from the working directory.
awk 'BEGIN {
    print "BEGIN;"
    for (i = 1; i <= 30000; i++)
        printf "INSERT INTO orders(customer, item, qty, price, note) " \
               "VALUES (%d, '\''item-%05d'\'', %d, %.2f, '\''small %d'\'');\n",
               1 + (i * 37) % 20000, (i * 13) % 5003, 1 + i % 9, (i % 5000) / 10.0, i
    print "COMMIT;"
}' > small_inserts.sql

# launch WL CMD...: runs CMD... followed by workload WL's command line, with
# the workload's environment and stdin; output goes to run.log.
launch() {
    _wl=$1; shift
    case $_wl in
    malloc_mt) "$@" "$bdir/malloc_mt" "$mt_threads" "$mt_rounds" </dev/null ;;
    python_json) PYTHONMALLOC=malloc "$@" "$py" -B "$top/bench/json_workload.py" "$py_rounds" \
                     </dev/null ;;
    sqlite) "$@" "$sqlite" :memory: <"$top/bench/sqlite_workload.sql" ;;
    compileall) PYTHONMALLOC=malloc "$@" "$py" -m compileall -q -f "$tmp/pylib" </dev/null ;;
    esac >run.log 2>&1
}

# median: of the numbers on stdin, one per line ("-" if none).
median() {
    sort -g | awk '{ v[NR] = $1 }
        END { if (NR == 0) print "-"
              else if (NR % 2) print v[(NR + 1) / 2]
              else printf "%.6f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# col WL MODE N: column N of the results of (WL, MODE), one per line.
# (N = cpu: user + system seconds.)
col() {
    awk -v w="$1" -v m="$2" -v n="$3" \
        '$1 == w && $2 == m && $8 == 0 { print (n == "cpu") ? $5 + $6 : $n }' results
}
bytes() {
    awk -v b="$1" 'BEGIN { if (b == "-" || b == "") { print "-"; exit }
        split("B KiB MiB GiB TiB", u, " "); i = 1
        while (b >= 1024 && i < 5) { b /= 1024; i++ }
        printf(i == 1 ? "%d%s\n" : "%.1f%s\n", b, u[i]) }'
}

# run_one WL MODE REP: one timed run; appends to results:
#   wl mode rep wall user sys maxrss_kib rc capture_bytes
run_one() {
    _wl=$1 _mode=$2 _rep=$3 _cap=0
    rm -f res
    case $_mode in
    bare) launch "$_wl" "$stamp" res || true ;;
    heaptrack)
        if [ "$htmode" = raw ]; then
            launch "$_wl" heaptrack -r -o "$tmp/ht.$_wl.$_rep" "$stamp" res || true
        else
            (ulimit -v $interp_limit_kib; launch "$_wl" heaptrack -o "$tmp/ht.$_wl.$_rep" "$stamp" res) || true
        fi
        for f in "$tmp/ht.$_wl.$_rep".*; do
            [ -f "$f" ] && _cap=$((_cap + $(stat -c %s "$f")))
        done ;;
    sampled)
        launch "$_wl" env LD_PRELOAD="$lib" VHEAP_OUT="$tmp/vs.$_wl.$_rep.%p.vhcap" VHEAP_QUIET=1 \
            VHEAP_SAMPLE="$sample" "$stamp" res || true
        # The bytes the capture holds (chunks are claimed 1 MiB at a time
        # and the file grows ahead: its size says little of a small capture).
        for f in "$tmp/vs.$_wl.$_rep".*.vhcap; do
            [ -f "$f" ] && _cap=$((_cap + $("$capstat" "$f" | awk '{ print $9 }')))
        done
        rm -f "$tmp/vs.$_wl.$_rep".* ;;
    base)
        launch "$_wl" env LD_PRELOAD="$base_lib" VHEAP_OUT="$tmp/vb.$_wl.$_rep.%p.vhcap" \
            VHEAP_QUIET=1 "$stamp" res || true
        rm -f "$tmp/vb.$_wl.$_rep".* ;;
    vheap)
        launch "$_wl" env LD_PRELOAD="$lib" VHEAP_OUT="$tmp/vh.$_wl.$_rep.%p.vhcap" VHEAP_QUIET=1 \
            "$stamp" res || true
        for f in "$tmp/vh.$_wl.$_rep".*.vhcap; do
            [ -f "$f" ] || continue
            _cap=$((_cap + $(stat -c %s "$f")))
            "$capstat" "$f" | sed "s/^/$_wl $_rep /" >>vhstat
        done ;;
    esac
    if [ ! -s res ]; then
        warn "$_wl under $_mode: no timing (see the log below)"; tail -n 5 run.log >&2
        echo "$_wl $_mode $_rep 0 0 0 0 255 0" >>results
        return
    fi
    read -r _wall _user _sys _rss _rc <res
    [ "$_rc" = 0 ] || { warn "$_wl under $_mode exited $_rc; log:"; tail -n 5 run.log >&2; }
    [ "$_mode" = bare ] && [ "$_rep" = 1 ] && cp run.log "out.$_wl"
    echo "$_wl $_mode $_rep $_wall $_user $_sys $_rss $_rc $_cap" >>results
    # Keep the last repetition's captures for the analysis table; drop the
    # others now, before their dirty pages are written back under later runs.
    if [ "$_rep" != "$reps" ]; then
        rm -f "$tmp/ht.$_wl.$_rep".* "$tmp/vh.$_wl.$_rep".*
    fi
}

modes=bare
[ $have_heaptrack = 1 ] && modes="$modes heaptrack"
[ $have_vheap = 1 ] && modes="$modes vheap"
sample=${BENCH_SAMPLE:-512KiB}
[ $have_vheap = 1 ] && [ "$sample" != 0 ] && modes="$modes sampled"
base_lib=
if [ -n "${BENCH_BASE:-}" ]; then
    base_lib=$(cd "$BENCH_BASE" && pwd)/libvheap.so
    [ -f "$base_lib" ] || { warn "BENCH_BASE: no libvheap.so in $BENCH_BASE"; exit 2; }
    [ $have_vheap = 1 ] && modes="$modes base"
fi
: >results
: >vhstat

say "vheap bench: $reps repetitions, workloads:$wls; heaptrack mode: $htmode"
say "  malloc_mt: $mt_threads threads x $mt_rounds rounds; python_json: $py_rounds rounds" \
    "(PYTHONMALLOC=malloc, $py); sqlite: bench/sqlite_workload.sql on :memory:;" \
    "compileall: $py -m compileall -f over $(find pylib -name '*.py' 2>/dev/null | wc -l) files" \
    "copied from $pystdlib (PYTHONMALLOC=malloc)"
say "  $(nproc) CPUs; captures in $tmp"
for w in $wls; do launch "$w" "$stamp" res || true; done     # warm caches, untimed
r=1
while [ $r -le "$reps" ]; do
    # rotate the mode order so no mode always runs first or after another
    set -- $modes
    i=1
    while [ $i -lt $(( (r - 1) % $# + 1 )) ]; do _m=$1; shift; set -- "$@" "$_m"; i=$((i + 1)); done
    order="$*"
    for w in $wls; do
        for m in $order; do run_one "$w" "$m" "$r"; done
    done
    printf '  repetition %d/%d done\n' "$r" "$reps"
    r=$((r + 1))
done

# ---- overhead tables ---------------------------------------------------------
# paired WL COLUMN: each repetition's (vheap - bare) / (heaptrack - bare), one
# a line; a repetition runs the three back to back, so a slower spell of the
# machine (other guests on its cores) weighs on all three alike.
paired() {
    awk -v w="$1" -v n="$2" '$1 == w && $8 == 0 {
            v[$3 "," $2] = (n == "cpu") ? $5 + $6 : $n; rep[$3] = 1 }
        END { for (r in rep) { b = v[r ",bare"]; h = v[r ",heaptrack"]; m = v[r ",vheap"]
                  if (b != "" && h != "" && m != "" && h > b) print (m - b) / (h - b) } }' results
}
# ratio_table COLUMN: medians per mode, ratios to bare, and vheap's overhead as
# a fraction of heaptrack's: of the medians, and the median of the
# repetitions' own fractions (the verdict).
ratio_table() {
    printf '%-12s %8s %9s %8s %8s %8s %10s %11s\n' workload bare heaptrack vheap "ht ratio" \
        "vh ratio" "vh/ht ovhd" "paired"
    for w in $wls; do
        mb=$(col "$w" bare "$1" | median)
        mh=$(col "$w" heaptrack "$1" | median)
        mv=$(col "$w" vheap "$1" | median)
        mp=$(paired "$w" "$1" | median)
        awk -v w="$w" -v b="$mb" -v h="$mh" -v v="$mv" -v p="$mp" 'BEGIN {
            hr = (b != "-" && h != "-" && b > 0) ? sprintf("%.2fx", h / b) : "-"
            vr = (b != "-" && v != "-" && b > 0) ? sprintf("%.2fx", v / b) : "-"
            f = (hr != "-" && vr != "-" && h > b) ? sprintf("%.2f", (v - b) / (h - b)) : "-"
            g = (p != "-") ? sprintf("%.2f %s", p, p <= 0.33 ? "ok" : "OVER") : "-"
            printf "%-12s %8s %9s %8s %8s %8s %10s %11s\n", w, b == "-" ? "-" : sprintf("%.3f", b),
                h == "-" ? "-" : sprintf("%.3f", h), v == "-" ? "-" : sprintf("%.3f", v), hr, vr, f, g }'
    done
}
say ""
say "Recording overhead: wall seconds of the program run, median of $reps"
ratio_table 4
say "(vh/ht ovhd = (vheap - bare) / (heaptrack - bare) of the medians; paired: the median"
say " over repetitions of that fraction within each (its three runs back to back), the"
say " verdict; target <= 0.33 on each workload)"
say ""
say "The same in CPU seconds (user + system of the program's process; less"
say "sensitive to other load on the machine; heaptrack's zstd/interpreter excluded):"
ratio_table cpu
[ "$htmode" = raw ] && say "(heaptrack -r: records in-process exactly as plain heaptrack does, but" \
    "symbolizes later; plain heaptrack would also run heaptrack_interpret on the same 2 CPUs)"

if [ -n "$base_lib" ] && [ $have_vheap = 1 ]; then
    say ""
    say "This build's shim against BENCH_BASE's ($base_lib), full mode: the median"
    say "over repetitions of vheap / base (the two runs of a repetition back to back),"
    say "and the smallest and largest of those ratios"
    printf '%-12s %22s %22s\n' workload "CPU (min..max)" "wall (min..max)"
    for w in $wls; do
        for n in cpu 4; do
            awk -v w="$w" -v n="$n" '$1 == w && $8 == 0 && ($2 == "vheap" || $2 == "base") {
                    v[$3 "," $2] = (n == "cpu") ? $5 + $6 : $n; rep[$3] = 1 }
                END { for (r in rep) if (v[r ",base"] > 0 && v[r ",vheap"] != "")
                          print v[r ",vheap"] / v[r ",base"] }' results | sort -g >ab.$n
        done
        printf '%-12s %22s %22s\n' "$w" \
            "$(printf '%s (%s..%s)' "$(median <ab.cpu)" "$(head -n 1 ab.cpu)" "$(tail -n 1 ab.cpu)")" \
            "$(printf '%s (%s..%s)' "$(median <ab.4)" "$(head -n 1 ab.4)" "$(tail -n 1 ab.4)")"
    done
fi

if [ $have_vheap = 1 ] && [ "$sample" != 0 ]; then
    say ""
    say "Sampled recording (VHEAP_SAMPLE=$sample): CPU seconds, overhead against bare as the"
    say "median over repetitions of (sampled - bare) / bare (target <= 0.02), and the bytes the"
    say "capture holds (its records; the file is claimed a chunk at a time):"
    printf '%-12s %8s %8s %9s %12s %14s\n' workload bare sampled overhead "capture" "capture/s"
    for w in $wls; do
        ov=$(awk -v w="$w" '$1 == w && $8 == 0 { v[$3 "," $2] = $5 + $6; rep[$3] = 1 }
            END { for (r in rep) { b = v[r ",bare"]; s = v[r ",sampled"]
                  if (b != "" && s != "" && b > 0) print (s - b) / b } }' results | median)
        awk -v w="$w" -v b="$(col "$w" bare cpu | median)" -v s="$(col "$w" sampled cpu | median)" \
            -v o="$ov" -v c="$(col "$w" sampled 9 | median)" -v t="$(col "$w" sampled 4 | median)" 'BEGIN {
            printf "%-12s %8s %8s %9s %12s %14s\n", w, b, s,
                o == "-" ? "-" : sprintf("%.3f %s", o, o <= 0.02 ? "ok" : "OVER"),
                c == "-" ? "-" : sprintf("%.1f MB", c / 1e6),
                (c == "-" || t == "-" || t <= 0) ? "-" : sprintf("%.2f MB/s", c / t / 1e6) }'
    done
    # The bound of issue 17: a program making 1M allocations a second for an
    # hour, from malloc_mt's own count of its calls and its sampled capture.
    calls=$(sed -n 's/^malloc_mt: .* allocs=\([0-9]*\) reallocs=\([0-9]*\).*/\1 \2/p' out.malloc_mt \
            2>/dev/null | awk '{ print $1 + $2 }' | head -n 1)
    cap=$(col malloc_mt sampled 9 | median)
    [ -n "$calls" ] && [ "$cap" != "-" ] && awk -v n="$calls" -v c="$cap" 'BEGIN {
        printf "  1M allocations/s of malloc_mt'"'"'s sizes for an hour, sampled: about %.0f MB" \
               " (%.2f bytes of capture a call: %d calls, %.1f MB; the capture grows with the bytes" \
               " allocated, about 1/rate samples a byte)\n", c / n * 3.6e9 / 1e6, c / n, n, c / 1e6 }'
fi

say ""
say "Every run, wall seconds (run order within a repetition rotates):"
for w in $wls; do
    for m in $modes; do
        printf '  %-12s %-9s %s\n' "$w" "$m" "$(awk -v w="$w" -v m="$m" \
            '$1 == w && $2 == m { printf "%s%s ", $4, ($8 == 0 ? "" : "(exit " $8 ")") }' results)"
    done
done

say ""
say "Peak RSS (median) and capture size of the program run:"
printf '%-12s %10s %10s %10s %12s %12s\n' workload "rss bare" "rss ht" "rss vh" "ht file" "vh file"
for w in $wls; do
    printf '%-12s %10s %10s %10s %12s %12s\n' "$w" \
        "$(bytes "$(col "$w" bare 7 | median | awk '{ print ($1 == "-") ? "-" : $1 * 1024 }')")" \
        "$(bytes "$(col "$w" heaptrack 7 | median | awk '{ print ($1 == "-") ? "-" : $1 * 1024 }')")" \
        "$(bytes "$(col "$w" vheap 7 | median | awk '{ print ($1 == "-") ? "-" : $1 * 1024 }')")" \
        "$(bytes "$(col "$w" heaptrack 9 | median)")" "$(bytes "$(col "$w" vheap 9 | median)")"
done

# ---- events recorded ---------------------------------------------------------
say ""
say "Events recorded (last repetition):"
printf '%-12s %-22s %-20s %s\n' workload "program says" "heaptrack + / -" "vheap alloc(+resize) / free"
for w in $wls; do
    own=$(sed -n 's/^malloc_mt: .* allocs=\([0-9]*\) reallocs=\([0-9]*\) frees=\([0-9]*\).*/\1(+\2) \/ \3/p' \
          "out.$w" 2>/dev/null | head -n 1)
    ht=-
    f=$(ls "$tmp/ht.$w.$reps".* 2>/dev/null | head -n 1 || true)
    if [ -n "$f" ]; then
        case $f in *.zst) dc="zstd -dc" ;; *.gz) dc="gzip -dc" ;; *) dc="cat" ;; esac
        # a raw file writes "+ size trace ptr"; an interpreted one "+ index"
        ht=$($dc "$f" | awk '$1 == "+" { a++ } $1 == "-" { d++ } END { printf "%d / %d", a, d }')
    fi
    vh=$(awk -v w="$w" -v r="$reps" '$1 == w && $2 == r {
            a += $3; f += $4; z += $5; s += $7; dr += $8; ne += $9; dm += $13; n++ }
        END { if (n) printf "%d(+%d) / %d; %d stacks, %d dropped, %d nested%s", a, z, f, s, dr, ne,
                            dm ? sprintf(", %d DAMAGED chunks", dm) : "" }' vhstat)
    printf '%-12s %-22s %-20s %s\n' "$w" "${own:--}" "${ht:--}" "${vh:--}"
done
say "(malloc_mt counts its own malloc+calloc (+realloc) / free calls; libc adds a few."
say " heaptrack writes every realloc as - and +; vheap a moving one as free + alloc and"
say " an in-place one as one resize. \"dropped\" is vheap's count of events it lost.)"
# Bytes of capture an event (every record, stacks and modules included,
# over the allocation, free, resize and move records), last repetition.
say "Capture bytes an event (target <= 6):"
for w in $wls; do
    awk -v w="$w" -v r="$reps" '$1 == w && $2 == r { n += $3 + $4 + $5 + $6; b += $11 }
        END { if (n) printf "  %-12s %6.2f B/event %s (%d events, %.1f MB)\n", w, b / n,
                            b / n <= 6 ? "ok" : "OVER", n, b / 1e6 }' vhstat
done

# ---- deep recursion (bench/recurse.c) --------------------------------------------
# The shape of Vere's nock interpreter (descents hundreds of frames deep,
# an allocation at every level, the same frames repeating) beside a flat
# loop making as many calls: the shim's cost an event, (vheap - bare) CPU
# seconds over the events, each pair of runs back to back. Target: deep
# within 1.5x of flat. BENCH_RECURSE_EVENTS=4000000 (0 skips this).
rec_n=${BENCH_RECURSE_EVENTS:-4000000}
case $rec_n in ''|*[!0-9]*) warn "BENCH_RECURSE_EVENTS must be a number"; rec_n=0 ;; esac
if [ "$rec_n" -gt 0 ] && [ $have_vheap = 1 ]; then
    "$cc" -O2 -g -Wall -Wextra -Werror -o "$bdir/recurse" "$top/bench/recurse.c"
    : >rresults
    r=1
    while [ $r -le "$reps" ]; do
        for shape in flat deep; do
            for m in bare vheap; do
                rm -f res "$tmp"/rec.*.vhcap
                if [ $m = bare ]; then
                    "$stamp" res "$bdir/recurse" $shape "$rec_n" >/dev/null 2>&1 || true
                else
                    env LD_PRELOAD="$lib" VHEAP_OUT="$tmp/rec.%p.vhcap" VHEAP_QUIET=1 \
                        "$stamp" res "$bdir/recurse" $shape "$rec_n" >/dev/null 2>&1 || true
                fi
                [ -s res ] || continue
                st=-
                for f in "$tmp"/rec.*.vhcap; do
                    [ -f "$f" ] && st=$("$capstat" "$f" | awk '{ print $1 + $2 + $3 + $4, $9 }')
                done
                echo "$shape $m $r $(awk '{ print $2 + $3, $5 }' res) $st" >>rresults
            done
        done
        r=$((r + 1))
    done
    rm -f "$tmp"/rec.*.vhcap
    say ""
    say "Deep recursion (bench/recurse.c, $rec_n events): the shim's CPU ns an event, median of $reps"
    printf '%-6s %9s %9s %12s %10s\n' shape bare vheap "ns/event" "B/event"
    for shape in flat deep; do
        awk -v s=$shape -v n="$rec_n" '$1 == s && $5 == 0 { v[$3 "," $2] = $4; rep[$3] = 1
                if ($2 == "vheap" && NF >= 7 && $6 > 0) print "B", $7 / $6 }
            END { for (r in rep) if (v[r ",bare"] != "" && v[r ",vheap"] != "")
                      print "ns", (v[r ",vheap"] - v[r ",bare"]) / n * 1e9, v[r ",bare"], v[r ",vheap"] }' \
            rresults >rrows.$shape
        printf '%-6s %9s %9s %12s %10s\n' $shape \
            "$(awk '$1 == "ns" { print $3 }' rrows.$shape | median)" \
            "$(awk '$1 == "ns" { print $4 }' rrows.$shape | median)" \
            "$(awk '$1 == "ns" { printf "%.1f\n", $2 }' rrows.$shape | median)" \
            "$(awk '$1 == "B" { printf "%.2f\n", $2 }' rrows.$shape | median)"
    done
    # the ratio within each repetition (its four runs back to back), then the median
    awk -v n="$rec_n" '$5 == 0 { v[$3 "," $1 "," $2] = $4; rep[$3] = 1 }
        END { for (r in rep) { f = v[r ",flat,vheap"] - v[r ",flat,bare"]
                               d = v[r ",deep,vheap"] - v[r ",deep,bare"]
                               if (f > 0 && v[r ",deep,vheap"] != "") print d / f } }' rresults |
        median | awk '{ if ($1 == "-") print "  deep / flat: -"
                        else printf "  deep / flat, paired: %.2fx %s (target <= 1.5)\n", $1,
                                    $1 <= 1.5 ? "ok" : "OVER" }'
fi

# ---- analysis table ------------------------------------------------------------
say ""
say "Analysis of the last repetition's captures (median of $areps):"
can_load=0
if [ $have_vheap = 1 ] && [ -x "$analyze" ] && "$analyze" load --help >/dev/null 2>&1 \
   && "$analyze" summary --help >/dev/null 2>&1; then
    can_load=1
else
    say "  vheap side skipped: $analyze has no 'load' and 'summary' commands yet"
fi
if [ $have_heaptrack = 1 ] && ! command -v heaptrack_print >/dev/null 2>&1; then
    say "  heaptrack side skipped: heaptrack_print not installed"
    have_heaptrack=0
fi
: >aresults
for w in $wls; do
    # Interpret the raw heaptrack file once (what plain heaptrack does during
    # the run); its time is shown, not part of the comparison.
    if [ $have_heaptrack = 1 ]; then
        f=$(ls "$tmp/ht.$w.$reps".* 2>/dev/null | head -n 1 || true)
        if [ -n "$f" ] && [ "$htmode" = raw ]; then
            case $f in *.zst) dc="zstd -dc"; cz="zstd -q -c" ;; *) dc="gzip -dc"; cz="gzip -c" ;; esac
            rm -f res
            # it prints its "heaptrack stats" at a normal exit only
            if (ulimit -v $interp_limit_kib
                "$stamp" res sh -c "$dc '$f' | '$interp' 2>interp.err | $cz > '$tmp/hti.$w.$ht_suffix'" \
                && grep -q 'heaptrack stats' interp.err) >/dev/null 2>&1; then
                echo "$w interpret 0 $(cut -d' ' -f1 res)" >>aresults
            else
                echo "$w interpret 0 failed" >>aresults
                rm -f "$tmp/hti.$w.$ht_suffix"
                warn "$w: heaptrack_interpret failed: $(head -c 200 interp.err 2>/dev/null | tr '\n' ' ')"
            fi
        elif [ -n "$f" ]; then
            cp "$f" "$tmp/hti.$w.$ht_suffix"
        fi
    fi
done
r=1
while [ $r -le "$areps" ]; do
    for w in $wls; do
        hf=$tmp/hti.$w.$ht_suffix
        if [ $have_heaptrack = 1 ] && [ -f "$hf" ]; then
            rm -f res
            "$stamp" res heaptrack_print "$hf" >print.out 2>&1 || true
            # wall, CPU (user + system), peak RSS in KiB
            [ -s res ] && echo "$w print $r $(awk '{ print $1, $2 + $3, $4 }' res)" >>aresults
        fi
        if [ $can_load = 1 ]; then
            set -- "$tmp/vh.$w.$reps".*.vhcap
            if [ -f "$1" ]; then
                # the main process's capture (the first by pid order is enough
                # for these single-process workloads)
                rm -f res "$tmp/vh.$w.db"
                "$stamp" res sh -c '"$1" load -q --no-progress "$2" "$3" && "$1" summary "$3"' sh \
                    "$analyze" "$1" "$tmp/vh.$w.db" >summary.out 2>&1 || true
                if [ -s res ] && [ "$(cut -d' ' -f5 res)" = 0 ]; then
                    echo "$w load $r $(awk '{ print $1, $2 + $3, $4 }' res)" \
                        "$(stat -c %s "$tmp/vh.$w.db")" >>aresults
                else
                    warn "$w: vheap-analyze load/summary failed:"; tail -n 3 summary.out >&2
                fi
            fi
        fi
    done
    r=$((r + 1))
done
printf '%-12s %12s %8s %9s %14s %7s %7s %10s %9s %9s %12s\n' workload "ht interpret" \
    "ht_print" "vh load+" "vh/print" "ht cpu" "vh cpu" "vh rss" "vh DB" "ht file" "DB/ht file"
printf '%-12s %12s %8s %9s %14s %7s %7s %10s %9s %9s %12s\n' "" "" "" "summary" "(<= 1.0)" \
    "" "" "(<= 1GiB)" "" "" "(<= 2.5)"
for w in $wls; do
    it=$(awk -v w="$w" '$1 == w && $2 == "interpret" { print $4 }' aresults)
    hp=$(awk -v w="$w" '$1 == w && $2 == "print" { print $4 }' aresults | median)
    vl=$(awk -v w="$w" '$1 == w && $2 == "load" { print $4 }' aresults | median)
    hc=$(awk -v w="$w" '$1 == w && $2 == "print" && NF >= 6 { print $5 }' aresults | median)
    vc=$(awk -v w="$w" '$1 == w && $2 == "load" && NF >= 6 { print $5 }' aresults | median)
    vr=$(awk -v w="$w" '$1 == w && $2 == "load" && NF >= 6 { print $6 * 1024 }' aresults | median)
    vd=$(awk -v w="$w" '$1 == w && $2 == "load" && NF >= 7 { print $7 }' aresults | median)
    hf=$tmp/hti.$w.$ht_suffix
    hs=$([ -f "$hf" ] && stat -c %s "$hf" || echo -)
    awk -v w="$w" -v i="${it:--}" -v p="$hp" -v l="$vl" -v hc="$hc" -v vc="$vc" \
        -v vr="$(bytes "$vr")" -v rb="$vr" -v vd="$(bytes "$vd")" -v db="$vd" \
        -v hs="$(bytes "$hs")" -v hb="$hs" 'BEGIN {
        r = (p != "-" && l != "-" && p > 0) ? sprintf("%.2f %s", l / p, l <= p ? "ok" : "OVER") : "-"
        d = (db != "-" && hb != "-" && hb > 0) ? sprintf("%.2f %s", db / hb, db <= 2.5 * hb ? "ok" : "OVER") : "-"
        m = (rb != "-" && rb > 1073741824) ? " OVER" : ""
        printf "%-12s %12s %8s %9s %14s %7s %7s %10s %9s %9s %12s\n", w, i, p, l, r,
            hc == "-" ? "-" : sprintf("%.2f", hc), vc == "-" ? "-" : sprintf("%.2f", vc), vr m,
            vd, hs, d }'
done
# What the DB holds (the last load of each workload): the event stream and
# the live-set checkpoints (analyze/events.c) against everything else.
if [ $can_load = 1 ] && command -v sqlite3 >/dev/null 2>&1; then
    printf '%-12s %10s %10s %9s %12s %10s %10s\n' "" events "ev bytes" "B/event" checkpoints \
        "cp bytes" "the rest"
    for w in $wls; do
        [ -f "$tmp/vh.$w.db" ] || continue
        sqlite3 "$tmp/vh.$w.db" "SELECT (SELECT value FROM meta WHERE key = 'events'),
                (SELECT value FROM meta WHERE key = 'event_bytes'),
                (SELECT value FROM meta WHERE key = 'checkpoints'),
                (SELECT value FROM meta WHERE key = 'checkpoint_bytes')" 2>/dev/null |
        awk -F'|' -v w="$w" -v db="$(stat -c %s "$tmp/vh.$w.db")" '
            function b(x) { return x >= 1048576 ? sprintf("%.1fMiB", x / 1048576) : sprintf("%.1fKiB", x / 1024) }
            NF == 4 { printf "%-12s %10d %10s %9.2f %12d %10s %10s\n", w, $1, b($2),
                          $1 ? $2 / $1 : 0, $3, b($4), b(db - $2 - $4) }'
    done
fi
# Queries over each DB (the last load): wall seconds and peak RSS of the
# commands that go through every stack (--limit 0) or replay the event
# stream (--temporary heaptrack); memory should stay one row's, not the
# result's (render/output.c spools rows).
if [ $can_load = 1 ]; then
    printf '%-12s %-40s %8s %10s\n' "" "query (output to /dev/null)" wall rss
    for w in $wls; do
        [ -f "$tmp/vh.$w.db" ] || continue
        for qc in "top --temporary heaptrack" "top --limit 0" "leaks --growth --limit 0" \
                  "peak --limit 0" "summary --format json"; do
            rm -f res
            # shellcheck disable=SC2086 # qc is words
            "$stamp" res "$analyze" $qc "$tmp/vh.$w.db" >/dev/null 2>&1 || true
            [ -s res ] || continue
            awk -v w="$w" -v q="$qc" -v rss="$(bytes "$(awk '{ print $4 * 1024 }' res)")" \
                '{ printf "%-12s %-40s %8.2f %10s%s\n", w, q, $1, rss, $5 == 0 ? "" : " (exit " $5 ")" }' res
        done
    done
fi
say "(targets, issue 28: vheap load+summary <= 1.0 x heaptrack_print on the same run,"
say " the DB <= 2.5 x heaptrack's (interpreted, compressed) file, load's peak RSS"
say " <= 1 GiB. Load also symbolizes, which heaptrack did earlier in"
say " heaptrack_interpret. cpu: user + system seconds of all threads; vheap's load"
say " reads, loads and compresses on three threads. rss: peak of load, the"
say " capture's mapped pages included)"

# ---- optional: where vheap's time goes --------------------------------------------
if [ "${BENCH_PERF:-0}" = 1 ] && [ $have_vheap = 1 ]; then
    if command -v perf >/dev/null 2>&1; then
        for w in $wls; do
            say ""
            say "perf: hottest symbols of one $w run under vheap"
            rm -f res perf.data
            launch "$w" perf record -q -o "$tmp/perf.data" env LD_PRELOAD="$lib" \
                VHEAP_OUT="$tmp/perf.%p.vhcap" VHEAP_QUIET=1 "$stamp" res || true
            say "  by object:"
            perf report -i "$tmp/perf.data" --sort dso --stdio 2>/dev/null \
                | grep -E '^ +[0-9]' | head -n 8
            say "  by symbol:"
            perf report -i "$tmp/perf.data" --sort dso,sym --stdio 2>/dev/null \
                | grep -E '^ +[0-9]' | head -n 15
            rm -f "$tmp"/perf.*
            # the load (what bounds load+summary): the last repetition's capture
            set -- "$tmp/vh.$w.$reps".*.vhcap
            [ -f "$1" ] && [ -x "$analyze" ] || continue
            say "perf: hottest symbols of vheap-analyze load on the $w capture (all threads)"
            rm -f "$tmp/perf.db"
            perf record -q -o "$tmp/perf.data" "$analyze" load -q --no-progress "$1" \
                "$tmp/perf.db" >/dev/null 2>&1 || true
            perf report -i "$tmp/perf.data" --no-children --sort sym --stdio 2>/dev/null \
                | grep -E '^ +[0-9]' | head -n 15
            rm -f "$tmp"/perf.*
        done
    else
        warn "BENCH_PERF=1 but perf is not installed (apt-get install linux-perf)"
    fi
fi

# ---- the stored event stream (analyze/store/events.c) --------------------------------
# Appended by the event-stream work; bench/evbench.c. A synthetic capture of
# BENCH_EVENTS events (default 20M; 0 skips this) with about 1M blocks live
# and random sizes, addresses and times (a hard case for compression) is
# loaded, then the live set is rebuilt at 10 instants (what `frag --at T`
# needs) and the whole stream is read once.
ev_n=${BENCH_EVENTS:-20000000}
case $ev_n in ''|*[!0-9]*) warn "BENCH_EVENTS must be a number"; ev_n=0 ;; esac
if [ "$ev_n" -gt 0 ] && [ -d "$b/analyze" ]; then
    say ""
    say "Event stream: synthetic capture of $ev_n events (bench/evbench.c)"
    # the analyzer's objects without its main(), as the unit tests link
    # (one folder a layer: build/analyze/*/*.o)
    set --
    for o in $(find "$b/analyze" -name '*.o' ! -name main.o | sort); do set -- "$@" "$o"; done
    if "$cc" -O2 -g -I"$top" -D_GNU_SOURCE -std=gnu11 -Wall -Wextra -Werror \
        -o "$bdir/evbench" "$top/bench/evbench.c" "$@" \
        -lsqlite3 -ldw -lelf -lzstd -lz -lm -pthread; then
        "$bdir/evbench" gen "$tmp/ev.vhcap" "$ev_n" 1000000 | sed 's/^/  /'
        "$bdir/evbench" load "$tmp/ev.vhcap" "$tmp/ev.sqlite" | tee evload.out | sed 's/^/  /'
        nrec=$(awk '$1 == "load:" { print $2 }' evload.out)
        say "  DB: $(bytes "$(stat -c %s "$tmp/ev.sqlite")") (capture $(bytes "$(stat -c %s "$tmp/ev.vhcap")"))"
        # issue 28's load and report targets, on this capture: the command's
        # records a second (wall and CPU), its peak RSS less the capture
        # (mapped: its pages count in the RSS), and `report` scaled linearly
        # to 500M events (see docs/design.md for the scaling measured)
        if [ -x "$analyze" ]; then
            rm -f res "$tmp/ev2.sqlite"
            "$stamp" res "$analyze" load -q --no-progress --no-symbols "$tmp/ev.vhcap" \
                "$tmp/ev2.sqlite" >/dev/null 2>&1 || true
            [ -s res ] && awk -v n="${nrec:-$ev_n}" -v c="$(stat -c %s "$tmp/ev.vhcap")" '{
                r = n / $1; rc = n / ($2 + $3); m = $4 * 1024 - c
                printf "  load: %.2f M records/s wall, %.2f M/s CPU %s (target >= 10 M/s);" \
                       " peak RSS %.0f MiB less the capture %.0f MiB: %.0f MiB %s (target <= 1 GiB)\n",
                       r / 1e6, rc / 1e6, (r >= 1e7 ? "ok" : "OVER"), $4 / 1024, c / 1048576,
                       m / 1048576, (m <= 1073741824 ? "ok" : "OVER") }' res
            rm -f res "$tmp/ev2.sqlite"
            "$stamp" res "$analyze" report "$tmp/ev.sqlite" -o "$tmp/ev.html" >/dev/null 2>&1 || true
            [ -s res ] && awk -v n="$ev_n" '{
                s = ($2 + $3) * 5e8 / n
                printf "  report: %.1f s wall, %.1f s CPU, peak RSS %.0f MiB; at 500M events" \
                       " (linear): %.0f s CPU %s, %.0f s wall (target <= 10 s)\n", $1, $2 + $3,
                       $4 / 1024, s, (s <= 10 ? "ok" : "OVER"),
                       $1 * 5e8 / n }' res
            rm -f "$tmp/ev.html"
        fi
        rm -f "$tmp/ev.vhcap"
        "$bdir/evbench" at "$tmp/ev.sqlite" 9 | sed 's/^/  /'
        "$bdir/evbench" scan "$tmp/ev.sqlite" | sed 's/^/  /'
        # `frag` (analyze/cmd/frag.c) on the same DB: one moment, and the
        # series that replays every event into its sorted structures
        if [ -x "$analyze" ]; then
            for at in 0.5s 1s end "--series --heap malloc"; do
                t0=$(date +%s%N)
                # shellcheck disable=SC2086
                case $at in --*) "$analyze" frag "$tmp/ev.sqlite" $at ;;
                            *) "$analyze" frag "$tmp/ev.sqlite" --at "$at" ;; esac >/dev/null ||
                    warn "frag $at failed"
                say "  frag ${at#--}: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
            done
        fi
        rm -f "$tmp/ev.sqlite"
        say "(target: liveset__at, i.e. frag --at T, in seconds at any instant)"
    else
        warn "bench/evbench.c did not build: event stream bench skipped"
    fi
fi

# The HTML report of a big run (bench/many_stacks.c): 2^BENCH_REPORT_BITS
# allocations (default 19: 524288), each from a stack of its own; how long
# `report` takes, how big the page is, and how long headless Chromium takes
# to draw it, a search keystroke and a cost switch in it (page_ui; issue 30
# asks 100 ms each), and the same for the whole tree (--prune 0).
# BENCH_REPORT_BITS=0 skips this.

# page_ui PAGE: how long headless Chromium takes to draw PAGE (the page's
# own measure, performance.now() when its script ends; median of 3), then a
# search typed and each cost clicked in it (bench/report_ui.html)
page_ui() {
    ms=""
    for _ in 1 2 3; do
        ms="$ms $(timeout 300 "$chrome" --headless --no-sandbox --disable-gpu --dump-dom \
            "file://$1" 2>/dev/null | grep -o 'data-render-ms="[0-9]*"' | tr -dc 0-9)"
    done
    say "  drawn by headless Chromium in (ms):$ms; median $(echo $ms | tr ' ' '\n' | sort -n | sed -n 2p) ms"
    python3 -c 'import sys; p = open(sys.argv[1]).read(); i = p.rindex("</body>")
open(sys.argv[3], "w").write(p[:i] + open(sys.argv[2]).read() + p[i:])' \
        "$1" "$top/bench/report_ui.html" "$1.ui.html"
    say "  in the page: $(timeout 300 "$chrome" --headless --no-sandbox --disable-gpu --dump-dom \
        "file://$1.ui.html" 2>/dev/null | grep -o 'data-timing="[^".]*"' | cut -d'"' -f2) (target: 100 ms each)"
    rm -f "$1.ui.html"
}
rb=${BENCH_REPORT_BITS:-19}
case $rb in ''|*[!0-9]*) warn "BENCH_REPORT_BITS must be a number"; rb=0 ;; esac
if [ "$rb" -gt 0 ] && [ -x "$analyze" ]; then
    say ""
    say "HTML report of a run with 2^$rb distinct stacks (bench/many_stacks.c)"
    "$cc" -O2 -g -Wall -Wextra -Werror -o "$bdir/many_stacks" "$top/bench/many_stacks.c"
    VHEAP_OUT="$tmp/many.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$lib" "$bdir/many_stacks" "$rb" >/dev/null
    t0=$(date +%s%N)
    "$analyze" load -q "$tmp/many.vhcap" "$tmp/many.sqlite"
    say "  load: $(( ($(date +%s%N) - t0) / 1000000 )) ms, DB $(bytes "$(stat -c %s "$tmp/many.sqlite")")"
    t0=$(date +%s%N)
    "$analyze" report "$tmp/many.sqlite" -o "$tmp/many.html" 2>/dev/null
    say "  report: $(( ($(date +%s%N) - t0) / 1000000 )) ms, page $(bytes "$(stat -c %s "$tmp/many.html")")"
    chrome=$(command -v chromium || command -v chromium-browser || true)
    if [ -n "$chrome" ]; then
        page_ui "$tmp/many.html"
        # the whole tree, nothing merged into '[smaller stacks]': it must
        # finish, and its page stay as quick (issue 30)
        t0=$(date +%s%N)
        "$analyze" report "$tmp/many.sqlite" -o "$tmp/many.html" --prune 0 2>/dev/null ||
            warn "report --prune 0 failed"
        say "  report --prune 0: $(( ($(date +%s%N) - t0) / 1000000 )) ms, page $(bytes "$(stat -c %s "$tmp/many.html")") (target: finishes)"
        page_ui "$tmp/many.html"
    else
        say "  (chromium not installed: the drawing time is not measured)"
    fi
    rm -f "$tmp/many.vhcap" "$tmp/many.sqlite" "$tmp/many.html"
fi
