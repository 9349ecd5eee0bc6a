#!/bin/sh
# check-stress.sh — `make check-stress [STRESS_RUNS=N]`: `make check` N
# times (default 5) while a CPU hog per core keeps the machine busy (as a
# loaded CI machine is: a test that assumes how fast anything runs fails
# there at random), then every test that failed in any run and how often.
# Exit 1 when any did. Each run's log: build/check-stress/run-K.log.
# STRESS_HOGS=N runs N hogs instead of one a core (0 when the machine is
# busy already, say with other builds: the load average of each run is
# printed, so the log says how loaded it was).
set -u
runs=${1:-5}
case $runs in '' | *[!0-9]*) echo "check-stress: '$runs' is not a count of runs" >&2; exit 2 ;; esac
top=$(cd "$(dirname "$0")/.." && pwd)
b=${B:-build}
case $b in /*) ;; *) b="$top/$b" ;; esac
logs="$b/check-stress"
mkdir -p "$logs"
rm -f "$logs"/run-*.log "$logs/failed"

# The hogs: one busy loop a core, stopped however this script ends.
hogs=""
stop() { for p in $hogs; do kill "$p" 2>/dev/null; done; }
trap stop EXIT
trap 'exit 130' INT TERM
cores=${STRESS_HOGS:-$(nproc 2>/dev/null || echo 2)}
case $cores in '' | *[!0-9]*) echo "check-stress: STRESS_HOGS='$cores' is not a count" >&2; exit 2 ;; esac
i=0
while [ $i -lt "$cores" ]; do
    sh -c 'while :; do :; done' &
    hogs="$hogs $!"
    i=$((i + 1))
done
echo "check-stress: $runs runs of make check, $cores CPU hogs running"

k=0
while [ $k -lt "$runs" ]; do
    k=$((k + 1))
    log="$logs/run-$k.log"
    start=$(date +%s)
    ${MAKE:-make} --no-print-directory -C "$top" B="${B:-build}" check >"$log" 2>&1
    rc=$?
    # what failed: fuzz targets and integration tests ("FAIL  [fuzz] name"),
    # cmocka tests ("[  FAILED  ] name", listed twice), the layer check
    # (any line but its "layers: includes follow the layer rule")
    sed -n -e 's/^FAIL  fuzz \([^ :]*\).*/fuzz \1/p' \
           -e 's/^FAIL  \([^ :]*\).*/integration \1/p' \
           -e 's/^\[  FAILED  \] \([a-z_0-9]*\)$/unit \1/p' \
           -e '/^layers: includes follow/d' -e 's/^layers: .*/layers/p' \
           "$log" | sort -u >"$logs/run-$k.failed"
    if [ $rc -ne 0 ] && [ ! -s "$logs/run-$k.failed" ]; then
        echo "make-check-exit-$rc" >"$logs/run-$k.failed"
    fi
    cat "$logs/run-$k.failed" >>"$logs/failed"
    echo "run $k: exit $rc in $(( $(date +%s) - start ))s, load average at its end $(cut -d' ' -f1-3 /proc/loadavg);" \
        "failed: $(tr '\n' ' ' <"$logs/run-$k.failed")"
done

if [ -s "$logs/failed" ]; then
    echo "check-stress: failed at least once (count of $runs runs):"
    sort "$logs/failed" | uniq -c | sort -rn
    exit 1
fi
echo "check-stress: all $runs runs passed"
