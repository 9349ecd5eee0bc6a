#!/bin/sh
# run.sh — runs the libFuzzer targets built in BINDIR (GNUmakefile: make fuzz,
# make check). Each target replays its regressions (tests/fuzz/regressions/
# <name>/, every input once: these crashed once), then fuzzes from its seeds
# (tests/fuzz/corpus/<name>/) for SECONDS, and prints executions and time.
#   run.sh probe CC               is CC a clang with libFuzzer? (else: skip)
#   run.sh smoke BINDIR SECONDS   make check: fresh work corpus, short
#   run.sh fuzz BINDIR SECONDS    make fuzz: work corpus kept in BINDIR
# A target's extra libFuzzer flags live in tests/fuzz/<name>.flags. A crash
# leaves its input in BINDIR/crashes/<name>/ and fails the run.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-}

if [ "$mode" = probe ]; then
    cc=${2:-clang}
    d=$(mktemp -d "${TMPDIR:-/tmp}/vheap-fuzzprobe.XXXXXX")
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return d && n == 99; }' >"$d/p.c"
    if "$cc" -fsanitize=fuzzer,address,undefined -o "$d/p" "$d/p.c" >/dev/null 2>&1; then
        rm -rf "$d"; exit 0
    fi
    rm -rf "$d"
    echo "fuzz: skipped: '$cc' cannot build libFuzzer targets (install clang and libclang-rt-14-dev: scripts/install-deps.sh)" >&2
    exit 1
fi

[ $# -eq 3 ] || { echo "usage: run.sh probe CC | run.sh smoke|fuzz BINDIR SECONDS" >&2; exit 2; }
bindir=$2 secs=$3
case "$mode" in smoke|fuzz) ;; *) echo "run.sh: unknown mode $mode" >&2; exit 2 ;; esac

# Leaks are bugs too, but only in the analyzer: libFuzzer reports them.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

fail=0 total_runs=0 total_secs=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vheap-fuzz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
for bin in "$bindir"/tests/fuzz/fuzz_*; do
    [ -x "$bin" ] || continue
    name=$(basename "$bin"); name=${name#fuzz_}
    seeds=$top/tests/fuzz/corpus/$name
    regs=$top/tests/fuzz/regressions/$name
    flags=$(cat "$top/tests/fuzz/$name.flags" 2>/dev/null | sed "s|@TOP@|$top|g")
    crashes=$bindir/crashes/$name
    mkdir -p "$crashes"
    log=$tmp/$name.log

    # 1. regressions: each input runs once; any failure fails the run.
    if [ -d "$regs" ] && [ -n "$(ls -A "$regs" 2>/dev/null)" ]; then
        nreg=$(ls "$regs" | wc -l)
        # shellcheck disable=SC2086
        if ! "$bin" $flags -close_fd_mask=2 "$regs"/* >"$log" 2>&1; then
            echo "FAIL  fuzz $name: a regression input fails again:"
            grep -E 'ERROR|fuzz check|Running|SUMMARY' "$log" | head -n 20 | sed 's/^/    /'
            fail=1
            continue
        fi
        echo "ok    fuzz $name: $nreg regression inputs replayed"
    fi

    # 2. fuzz from the seeds (run first in full), for secs seconds.
    # The smoke run is a gate: one fixed seed, so what fails in CI fails the
    # same way here (the first N runs are the same for the same binary and
    # seeds). Exploring with fresh seeds is make fuzz's job.
    if [ "$mode" = smoke ]; then
        work=$tmp/corpus-$name
        seed=${VHEAP_FUZZ_SEED:-1}
    else
        work=$bindir/corpus/$name
        seed=${VHEAP_FUZZ_SEED:-0}
    fi
    mkdir -p "$work"
    start=$(date +%s)
    # shellcheck disable=SC2086
    "$bin" $flags -seed="$seed" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
        -close_fd_mask=2 -print_final_stats=1 -artifact_prefix="$crashes/" \
        "$work" ${seeds:+$( [ -d "$seeds" ] && echo "$seeds")} >"$log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    cov=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | sed -n 's/.*cov: \([0-9]*\).*corp: \([0-9]*\).*/cov=\1 corpus=\2/p')
    total_runs=$((total_runs + ${runs:-0}))
    total_secs=$((total_secs + took))
    if [ $rc -ne 0 ]; then
        [ "$seed" = 0 ] && seed=$(sed -n 's/.*Seed: \([0-9]*\).*/\1/p' "$log" | head -n 1)
        echo "FAIL  fuzz $name (exit $rc after ${took}s, ${runs:-?} runs, -seed=$seed); input kept in $crashes/:"
        grep -E 'ERROR|fuzz check|SUMMARY|Test unit written|^    #[0-9]' "$log" | head -n 30 | sed 's/^/    /'
        cp "$log" "$crashes/last.log" 2>/dev/null
        fail=1
    else
        echo "ok    fuzz $name: ${runs:-?} runs in ${took}s ${cov}"
    fi
done
echo "fuzz: $total_runs executions in ${total_secs}s$( [ $fail -ne 0 ] && echo ', FAILED')"
exit $fail
