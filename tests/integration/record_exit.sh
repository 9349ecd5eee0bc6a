#!/bin/sh
# record_exit.sh — `vheap-analyze record` passes the program's exit status
# through (exit code; 128+N and a message for a signal death; 127 for a
# missing program), loads the main capture and prints its summary, keeps an
# existing LD_PRELOAD, and its summary matches what the program knows.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/ht_leaky"
need_cmd cc

# A program that allocates, then exits with the code or signal it is given.
cat >exiter.c <<'C'
#include <signal.h>
#include <stdlib.h>
#include <string.h>
void *volatile sink;
int main(int argc, char **argv)
{
    for (int i = 0; i < 10; i++)
        sink = malloc(1000);                 /* 10 leaks of 1000 bytes */
    if (argc > 2 && !strcmp(argv[1], "signal"))
        raise(atoi(argv[2]));
    return argc > 1 ? atoi(argv[1]) : 0;
}
C
cc -O1 -o exiter exiter.c || die "cannot build exiter"

for code in 0 3 42; do
    "$ANALYZE" record --out "$PWD/exit$code.%p.vhcap" -- ./exiter "$code" \
        >out.$code 2>err.$code
    rc=$?
    expect_eq "record's status for exit $code" "$rc" "$code"
    grep -q '^calls to allocation functions: ' out.$code ||
        die "no summary after exit $code: $(cat out.$code err.$code)"
    grep -q 'record: summarized: .*exit'"$code"'\.[0-9]*\.vhcap (pid [0-9]*, ' err.$code ||
        die "the main capture is not named on stderr: $(cat err.$code)"
done

# A signal death: 128+N, said on stderr, and the capture is still loaded.
"$ANALYZE" record --out "$PWD/sig.%p.vhcap" -- ./exiter signal 15 >out.sig 2>err.sig
expect_eq "record's status for SIGTERM" "$?" 143
grep -q 'killed by signal 15' err.sig || die "no signal message: $(cat err.sig)"
grep -q '^calls to allocation functions: ' out.sig || die "no summary after a signal death"
grep -q 'did not exit cleanly' err.sig || die "no 'did not exit cleanly' warning: $(cat err.sig)"

# A missing program: 127, nothing run.
"$ANALYZE" record -- ./no-such-program >out.miss 2>err.miss
expect_eq "record's status for a missing program" "$?" 127
grep -q 'command not found' err.miss || die "no 'not found' message: $(cat err.miss)"

# Usage errors: 2.
"$ANALYZE" record >/dev/null 2>&1
expect_eq "record without a program" "$?" 2
"$ANALYZE" record --bogus -- ./exiter >/dev/null 2>&1
expect_eq "record with an unknown option" "$?" 2

# An LD_PRELOAD already set is kept, after libvheap.so.
cat >empty.c <<'C'
int vheap_test_empty_library;
C
cc -shared -fPIC -o libempty.so empty.c || die "cannot build libempty.so"
LD_PRELOAD="$PWD/libempty.so" "$ANALYZE" record --no-load --out "$PWD/pre.%p.vhcap" -- \
    sh -c 'echo "preload=$LD_PRELOAD"' >out.pre 2>err.pre || die "record of sh failed: $(cat err.pre)"
lib=$(cd "$(dirname "$VHEAP_LIB")" && pwd -P)/$(basename "$VHEAP_LIB")
expect_eq "LD_PRELOAD seen by the program" "$(cat out.pre)" "preload=$lib:$PWD/libempty.so"
# --no-load lists the capture without claiming it was summarized
grep -q "record: captured: $PWD/pre\.[0-9]*\.vhcap (pid " err.pre ||
    die "--no-load does not say which capture it wrote: $(cat err.pre)"
grep -q "summarized" err.pre && die "--no-load says it summarized: $(cat err.pre)"

# The summary is the program's: JSON numbers against what it knows.
"$ANALYZE" record --format json --out "$PWD/leaky.%p.vhcap" -- "$PROGS/ht_leaky" >out.json 2>err.json ||
    die "record of ht_leaky failed: $(cat err.json)"
want=$(sed -n 's/^ht .*leaked_bytes=\([0-9]*\).*/\1/p' out.json)
[ -n "$want" ] || die "ht_leaky printed no expectation"
got=$(sed -n '/^{/,$p' out.json | python3 -c '
import json, sys
d = json.load(sys.stdin)
h = [h for h in d["heaps"] if h["heap"] == "malloc"][0]
print(h["leaked_bytes"], d["process"]["ended"], h["allocations"])')
set -- $got
[ "$1" -ge "$want" ] || die "leaked_bytes $1 < the $want bytes ht_leaky leaked"
expect_eq "ended" "$2" True
[ "$3" -ge 200 ] || die "allocations $3 < the 200 ht_leaky made"
ls leaky.*.vhcap.sqlite >/dev/null 2>&1 || die "no DB next to the capture"
exit 0
