#!/bin/sh
# reach_cost.sh — the reachability scan's cost per GiB of heap (issue 31:
# "Cost stated: the scan's time per GiB of heap"), part of `make bench`:
# bench/reach_heap.c allocates BENCH_REACH_MIB MiB (default 512) in blocks
# of 4 KiB, then of 64 bytes (a quarter as much: 16 M blocks a GiB), half
# of them reachable through chains, and exits; the scan at exit reports its
# CPU time, which is printed per GiB of what it read (roots and blocks) and
# per million blocks, beside docs/usage.md's statement. BENCH_REACH_MIB=0
# skips it. Environment as bench/run.sh (B, CC, TMPDIR).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
b=${B:-build}
case $b in /*) ;; *) b=$top/$b ;; esac
mib=${BENCH_REACH_MIB:-512}
case $mib in ''|*[!0-9]*) echo "bench: BENCH_REACH_MIB must be a number" >&2; exit 2 ;; esac
[ "$mib" -gt 0 ] || exit 0
mkdir -p "$b/bench"
"${CC:-cc}" -O2 -g -Wall -Wextra -Werror -o "$b/bench/reach_heap" "$top/bench/reach_heap.c"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vheap-reach.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo ""
echo "Reachability scan at exit (bench/reach_heap.c; docs/usage.md states the cost)"
printf '  %-14s %10s %10s %9s %12s %14s\n' "block size" blocks read "scan CPU" "CPU per GiB" "per M blocks"
for run in "$mib 4096" "$((mib / 4 > 0 ? mib / 4 : 1)) 64"; do
    # shellcheck disable=SC2086
    set -- $run
    rm -f "$tmp/r.vhcap" "$tmp/r.sqlite"
    VHEAP_OUT="$tmp/r.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$b/libvheap.so" \
        "$b/bench/reach_heap" "$1" "$2" >/dev/null
    "$b/vheap-analyze" load -q --no-progress --no-symbols "$tmp/r.vhcap" "$tmp/r.sqlite"
    sqlite3 -separator ' ' "$tmp/r.sqlite" \
        "SELECT status, blocks, root_bytes + heap_bytes, cpu_ns FROM reach WHERE scan = 0" |
        awk -v size="$2" '$1 != "done" { printf "  %-14s scan %s\n", size " B", $1; next }
            { gib = $3 / 1073741824
              printf "  %-14s %10.0f %9.2fG %8.2fs %11.2fs %13.2fs\n", size " B", $2, gib,
                     $4 / 1e9, $4 / 1e9 / gib, $4 / 1e9 / ($2 / 1e6) }'
done
