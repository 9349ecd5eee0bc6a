#!/bin/sh
# realworld.sh — `make realworld`: Debian's own programs under libvheap.so
# beside heaptrack, the check every change to the shim or the loader owes:
# a stand-in test program can pass where a real one breaks (round 1's
# siglongjmp bug hid that way). Each program runs once under vheap and once
# under heaptrack; the table shows, side by side, what each tool counted:
#   exit    the program's exit status under each tool (vheap/heaptrack)
#   calls   calls to allocation functions (heaptrack counts one call of its
#           own in every process: its libstdc++'s emergency pool)
#   peak    peak heap consumption (heaptrack_print rounds to 3 digits)
#   leaked  leaked at exit (heaptrack: leaked + suppressed, since vheap does
#           not suppress)
#   events  vheap's capture health: dropped/nested events and guard resets
#           (all three must be 0)
#   reach   the reachability scan at exit: malloc blocks leaked without a
#           class (must be 0 when the scan ran), the scan's CPU time, and
#           that per GiB read (roots and blocks); '-' for a program that did
#           not exit by itself (no scan)
# Then every capture goes through load, summary, top, leaks and the
# heaptrack export read back by heaptrack_print: a crash or a non-zero exit
# there is a failure too. Exit status: 0 when every program exited alike
# under both tools, every analysis step worked and no event was lost; 1
# otherwise. A program that is not installed is skipped with a note
# (`scripts/install-deps.sh realworld` installs them as root).
#
# Environment: B=build (libvheap.so, vheap-analyze), REALWORLD="python3
# sqlite3 git g++ node redis" (a subset, in this order), TMPDIR.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
b=${B:-build}
case $b in /*) ;; *) b=$top/$b ;; esac
lib=$b/libvheap.so
analyze=$b/vheap-analyze
progs=${REALWORLD:-python3 sqlite3 git g++ node redis}

warn() { printf 'realworld: %s\n' "$*" >&2; }
[ -f "$lib" ] && [ -x "$analyze" ] || { warn "build first (make all): $lib"; exit 2; }
command -v heaptrack >/dev/null 2>&1 && command -v heaptrack_print >/dev/null 2>&1 ||
    { warn "heaptrack is not installed (scripts/install-deps.sh)"; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vheap-realworld.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
cd "$tmp"
fail=0

# The workloads: each a command line, run from $tmp.
cat >work.py <<'EOF'
import json, collections
docs = [{"id": i, "name": "item-%d" % i, "tags": ["t%d" % (i % 7)] * (i % 5)}
        for i in range(20000)]
s = json.dumps(docs)
back = json.loads(s)
c = collections.Counter(t for d in back for t in d["tags"])
print(len(s), sum(c.values()))
EOF
cat >work.sql <<'EOF'
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
INSERT INTO t SELECT i, printf('row %d %s', i, hex(randomblob(8))), i * 0.5 FROM n;
CREATE INDEX t_b ON t(b);
SELECT count(*), sum(length(b)) FROM t WHERE b LIKE 'row 1%';
SELECT b, count(*) FROM t GROUP BY substr(b, 1, 6) ORDER BY 2 DESC LIMIT 3;
EOF
cat >work.cc <<'EOF'
#include <map>
#include <string>
#include <vector>
#include <algorithm>
#include <sstream>
template <int N> struct fib { static constexpr long v = fib<N - 1>::v + fib<N - 2>::v; };
template <> struct fib<0> { static constexpr long v = 0; };
template <> struct fib<1> { static constexpr long v = 1; };
std::string f(const std::map<std::string, std::vector<int>> &m) {
    std::ostringstream o;
    for (auto &[k, v] : m) o << k << std::count(v.begin(), v.end(), 3) << fib<40>::v;
    return o.str();
}
EOF
cat >work.js <<'EOF'
const m = new Map();
for (let i = 0; i < 200000; i++) m.set('k' + i, { i, s: 'v'.repeat(i % 50) });
let n = 0;
for (const [k, v] of m) n += v.s.length + k.length;
console.log(n, JSON.stringify([...m.values()].slice(0, 1000)).length);
EOF

command -v g++ >/dev/null 2>&1 && g++ -std=c++17 -E work.cc -o work.ii

# run NAME TOOL: runs program NAME under TOOL (vheap or heaptrack);
# prints its exit status.
run() {
    case $2 in
    vheap) set -- "$1" env LD_PRELOAD="$lib" VHEAP_OUT="$tmp/$1.%p.vhcap" VHEAP_QUIET=1 ;;
    heaptrack) set -- "$1" heaptrack -o "$tmp/$1.ht" ;;
    esac
    _p=$1; shift
    _rc=0
    case $_p in
    python3) PYTHONHASHSEED=0 PYTHONMALLOC=malloc "$@" /usr/bin/python3 work.py ;;
    sqlite3) "$@" sqlite3 :memory: <work.sql ;;
    git) "$@" git -C "$top" log -p -n 200 --stat ;;
    # the compiler proper on the preprocessed file (heaptrack follows no
    # child process, so under the g++ driver the driver is all it sees)
    g++) "$@" "$(g++ -print-prog-name=cc1plus)" -fpreprocessed -quiet -std=c++17 -O1 \
             work.ii -o work.s ;;
    node) "$@" node work.js ;;
    redis) redis_run "$@" ;;
    esac >"$_p.out" 2>&1 || _rc=$?
    echo "$_rc"
}

# redis-server on a free loopback port under the tool, a redis-benchmark
# run against it, then a SHUTDOWN so that the server exits by itself. A
# server that never answered, or is still there 30 s after it was told to
# stop, is killed (its exit status then says so) rather than waited for
# forever: under heaptrack $_srv is heaptrack's script, so the server is
# found by its port.
redis_run() {
    _port=$(( 20000 + $$ % 20000 ))
    "$@" redis-server --port "$_port" --bind 127.0.0.1 --save '' --appendonly no \
        >redis.log 2>&1 &
    _srv=$!
    for _ in $(seq 100); do
        redis-cli -p "$_port" ping >/dev/null 2>&1 && break
        sleep 0.1
    done
    redis-benchmark -p "$_port" -q -n 20000 -t set,get,lpush,lpop >/dev/null 2>&1 || true
    redis-cli -p "$_port" shutdown nosave >/dev/null 2>&1 || true
    for _ in $(seq 300); do
        kill -0 "$_srv" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$_srv" 2>/dev/null; then
        echo "realworld: redis-server on port $_port did not stop; killed" >&2
        pkill -KILL -f "redis-server.*$_port" || true
    fi
    wait "$_srv"
}

have() {
    case $1 in
    python3) [ -x /usr/bin/python3 ] ;;
    redis) command -v redis-server >/dev/null 2>&1 && command -v redis-benchmark >/dev/null 2>&1 &&
           command -v redis-cli >/dev/null 2>&1 ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
    esac
}

# The row's numbers: vheap's from its summary (JSON), heaptrack's from
# heaptrack_print's summary lines, read as tests/vhcheck.py reads them.
cat >numbers.py <<'EOF'
import json, sys
sys.path.insert(0, sys.argv[3])
from vhcheck import ht_print_value, ht_size_bounds
d = json.load(open(sys.argv[1]))
p = d.get("process", {})
h = ([x for x in d.get("heaps", []) if x.get("heap") == "malloc"] or [{}])[0]
ht = open(sys.argv[2]).read()
def size(label):
    lo, hi = ht_size_bounds(ht_print_value(ht, label, "heaptrack_print"))
    return round((lo + hi) / 2)
sup = size("suppressed leaks") if "suppressed leaks:" in ht else 0
print(h.get("allocations", "-"), h.get("peak_bytes", "-"), h.get("leaked_bytes", "-"),
      p.get("dropped_events", "-"), p.get("nested_events", "-"),
      ht_print_value(ht, "calls to allocation functions", "heaptrack_print"),
      size("peak heap memory consumption"), size("total memory leaked") + sup)
EOF

# The scan at exit: "UNCLASSIFIED CPU_MS MS_PER_GIB", or "- - -" (no scan).
cat >reach.py <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
r = db.execute("SELECT status, cpu_ns, root_bytes + heap_bytes FROM reach WHERE scan = 0").fetchone()
if not r or r[0] != "done":
    print("- - -" if not r else "%s - -" % r[0])
else:
    n = db.execute("SELECT count(*) FROM leaks WHERE heap_id = 0 AND class IS NULL").fetchone()[0]
    print(n, "%.1f" % (r[1] / 1e6), "%.0f" % (r[1] / 1e6 / max(r[2], 1) * (1 << 30)))
EOF

printf '%-8s %7s %21s %21s %21s %10s %17s  %s\n' program exit "calls vheap/ht" "peak vheap/ht" \
    "leaked vheap/ht" events "reach n/ms/ms/GiB" analysis
for p in $progs; do
    if ! have "$p"; then
        printf '%-8s skipped: not installed (scripts/install-deps.sh realworld)\n' "$p"
        continue
    fi
    vrc=$(run "$p" vheap)
    hrc=$(run "$p" heaptrack)
    # the program's own process (the largest capture: node's or python's
    # helper processes, if any, are small)
    cap=$(ls -S "$tmp/$p".*.vhcap 2>/dev/null | head -n 1)
    htf=$(ls "$tmp/$p.ht".* 2>/dev/null | head -n 1)
    if [ -z "$cap" ] || [ -z "$htf" ]; then
        printf '%-8s %3s/%-3s no capture from one of the tools\n' "$p" "$vrc" "$hrc"
        fail=1
        continue
    fi
    steps=ok
    db=$tmp/$p.sqlite
    if ! "$analyze" load -q --no-progress "$cap" "$db" 2>load.err; then
        steps="load failed: $(head -c 120 load.err)"
    else
        for q in "summary --format json" "top --limit 5" "leaks --limit 5" "peak"; do
            # shellcheck disable=SC2086
            "$analyze" $q "$db" >q.out 2>q.err || { steps="$q failed: $(head -c 100 q.err)"; break; }
            # the first, summary's JSON, gives the row's vheap numbers
            [ -f summary.json ] || cp q.out summary.json
        done
        if [ "$steps" = ok ]; then
            "$analyze" export --format heaptrack "$db" -o "$tmp/$p.export.zst" 2>/dev/null &&
                heaptrack_print "$tmp/$p.export.zst" >/dev/null 2>&1 || steps="heaptrack export unreadable"
        fi
    fi
    vg=$("$analyze" dump "$cap" 2>/dev/null | sed -n '/^loss /{s/.*guard_resets=\([0-9]*\).*/\1/p;q;}')
    heaptrack_print "$htf" >ht.txt 2>/dev/null || true
    [ -f summary.json ] || echo '{}' >summary.json
    # shellcheck disable=SC2046
    set -- $(python3 numbers.py summary.json ht.txt "$top/tests" 2>/dev/null || echo - - - - - - - -)
    rm -f summary.json
    va=$1 vp=$2 vl=$3 vd=$4 vn=$5 ha=$6 hp=$7 hl=$8
    # shellcheck disable=SC2046
    set -- $(python3 reach.py "$db" 2>/dev/null || echo '? ? ?')
    rn=$1
    printf '%-8s %3s/%-3s %10s/%-10s %10s/%-10s %10s/%-10s %10s %17s  %s\n' "$p" "$vrc" "$hrc" \
        "$va" "${ha:--}" "$vp" "${hp:--}" "$vl" "$hl" "$vd/$vn/${vg:--}" "$1/$2/$3" "$steps"
    [ "$vrc" = "$hrc" ] && [ "$steps" = ok ] && [ "$vd" = 0 ] && [ "$vn" = 0 ] && [ "$vg" = 0 ] &&
        { [ "$rn" = 0 ] || [ "$rn" = - ]; } || fail=1
done
echo "(heaptrack_print rounds peak and leaked to 3 significant digits; heaptrack"
echo " counts one call of its own in each process and its 72 KB pool in the peak;"
echo " node, python and cc1plus vary a little from run to run under either tool:"
echo " GC timing, and hash tables keyed by addresses under ASLR; python copies"
echo " its environment, which holds VHEAP_OUT and VHEAP_QUIET in vheap's run)"
exit $fail
