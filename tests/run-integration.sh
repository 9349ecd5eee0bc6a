#!/bin/sh
# run-integration.sh — runs every tests/integration/*.sh against the built
# shim and analyzer, each in a fresh temporary directory, and prints one
# closing line "N passed, N failed, N skipped". A test script exits 0 (pass),
# 77 (skip, with a reason on stderr) or anything else (fail). With
# VHEAP_STRICT=1 (CI) a skip fails unless tests/integration/MAY_SKIP names
# the test: anything else skips only when a tool is missing that the
# install script should have installed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
# Another build dir: set VHEAP_LIB, ANALYZE and PROGS (or VHEAP_BUILD) first.
b="${VHEAP_BUILD:-build}"
case $b in /*) ;; *) b="$top/$b" ;; esac
export VHEAP_LIB="${VHEAP_LIB:-$b/libvheap.so}"
export ANALYZE="${ANALYZE:-$b/vheap-analyze}"
export PROGS="${PROGS:-$b/tests/programs}"
export TOP="$top"
pass=0 fail=0 skip=0
strict="${VHEAP_STRICT:-0}"
only="${1:-}"
for t in "$top"/tests/integration/*.sh; do
    name=$(basename "$t" .sh)
    [ -n "$only" ] && [ "$only" != "$name" ] && continue
    dir=$(mktemp -d "${TMPDIR:-/tmp}/vheap-test.XXXXXX")
    start=$(date +%s)
    (cd "$dir" && timeout 600 sh "$t") >"$dir/.log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    if [ $rc -eq 0 ]; then
        pass=$((pass + 1)); echo "ok    $name (${secs}s)"; rm -rf "$dir"
    elif [ $rc -eq 77 ] && [ "$strict" = 1 ] &&
        ! grep -q "^$name " "$top/tests/integration/MAY_SKIP"; then
        fail=$((fail + 1))
        echo "FAIL  $name: skipped, and VHEAP_STRICT=1 allows no skip here: $(tail -n 1 "$dir/.log")"
        rm -rf "$dir"
    elif [ $rc -eq 77 ]; then
        skip=$((skip + 1)); echo "skip  $name: $(tail -n 1 "$dir/.log")"; rm -rf "$dir"
    else
        fail=$((fail + 1)); echo "FAIL  $name (exit $rc, ${secs}s), log:"
        tail -n 30 "$dir/.log" | sed 's/^/    /'
    fi
done
echo "integration: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
