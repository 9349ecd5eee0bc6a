#!/bin/sh
# record_static.sh — `record` refuses a statically linked program (and a
# script whose interpreter is one) with the message that says why, exit 1,
# and runs nothing; and when a recorded program execs a static one (which
# then writes no capture) it says so, naming it, exit 1.
. "$TOP/tests/lib.sh"
need "$ANALYZE"
need_cmd cc

cat >touchit.c <<'C'
#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    /* Leaves a mark if it ever runs. */
    int fd = open(argc > 1 ? argv[1] : "ran", O_CREAT | O_WRONLY, 0600);
    return fd < 0;
}
C
cc -static -O1 -o touch_static touchit.c 2>cc.err ||
    { echo "cannot link statically here (no libc.a): $(tail -1 cc.err)" >&2; exit 77; }
cc -O1 -o touch_dynamic touchit.c || die "cannot build the dynamic twin"

want="is statically linked: LD_PRELOAD cannot work. Official Urbit binaries are static (musl); build a dynamically linked glibc binary (see docs/vere.md)."

"$ANALYZE" record -- ./touch_static marker1 >out 2>err
expect_eq "status for a static program" "$?" 1
grep -qF "./touch_static $want" err || die "unexpected message: $(cat err)"
[ ! -e marker1 ] || die "the static program was run"
[ -z "$(ls ./*.vhcap 2>/dev/null)" ] || die "a capture was written"

# static-pie has no PT_INTERP either (when the toolchain can build one).
if cc -static-pie -O1 -o touch_spie touchit.c 2>/dev/null; then
    "$ANALYZE" record -- ./touch_spie marker2 >out 2>err
    expect_eq "status for a static-pie program" "$?" 1
    grep -qF "$want" err || die "static-pie: unexpected message: $(cat err)"
    [ ! -e marker2 ] || die "the static-pie program was run"
fi

# A script is judged by its interpreter.
printf '#!%s/touch_static\n' "$PWD" >script.sh
chmod +x script.sh
"$ANALYZE" record -- ./script.sh >out 2>err
expect_eq "status for a script run by a static interpreter" "$?" 1
grep -qF "statically linked: LD_PRELOAD cannot work" err || die "script: $(cat err)"
grep -qF "touch_static" err || die "script: the interpreter is not named: $(cat err)"
[ ! -e script.sh.ran ] && [ ! -e ran ] || die "the static interpreter was run"

# A static program exec'd by a dynamic one (sh -c 'exec ...'): it runs, it
# writes no capture, and record says so, naming it, instead of summarizing
# the shell (before: the shell's capture was summarized, exit 0, no word).
need "$VHEAP_LIB"
"$ANALYZE" record --out "$PWD/ex.%p.vhcap" -- sh -c 'exec ./touch_static marker4' >out 2>err
expect_eq "status for sh -c 'exec ./touch_static'" "$?" 1
[ -e marker4 ] || die "the exec'd static program did not run: $(cat err)"
grep -qF "exec'd $PWD/touch_static, which wrote no capture" err ||
    die "the exec'd program is not named: $(cat err)"
grep -qF "$PWD/touch_static is statically linked: LD_PRELOAD cannot work" err ||
    die "the exec'd program is not said to be static: $(cat err)"
if grep -q "^vheap-analyze: record: summarized:" err; then die "the shell was summarized: $(cat err)"; fi
[ ! -s out ] || die "a summary was printed: $(cat out)"
# ... while an exec of a dynamic program summarizes that program
"$ANALYZE" record --out "$PWD/ex2.%p.vhcap" -- sh -c 'exec ./touch_dynamic marker5' >out 2>err
expect_eq "status for sh -c 'exec ./touch_dynamic'" "$?" 0
grep -q "summarized: .*touch_dynamic" err || die "the exec'd dynamic program was not summarized: $(cat err)"

# The dynamic twin is accepted (and runs) — the check is not a blanket refusal.
need "$VHEAP_LIB"
"$ANALYZE" record --no-load --out "$PWD/dyn.%p.vhcap" -- ./touch_dynamic marker3 >out 2>err
expect_eq "status for the dynamic twin" "$?" 0
[ -e marker3 ] || die "the dynamic program did not run: $(cat err)"
exit 0
