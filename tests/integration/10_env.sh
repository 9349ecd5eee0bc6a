# 10_env — the env vars: VHEAP_OUT patterns (%e %p %%, default name),
# VHEAP_DEPTH (cut and flagged truncated), VHEAP_UNWIND=fp on a program with
# frame pointers, bad values (one warning, default kept), VHEAP_QUIET, and
# how the capture file is created: mode 0600, never over an existing file or
# through a symlink, never in a world-writable directory without sticky bit.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/exec_target" "$PROGS/deep_stack"
T=$PROGS/exec_target
run_quiet() { VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$@"; }
tpid() { sed -n 's/^target pid=\([0-9]*\) .*/\1/p' "$1"; }

# --- VHEAP_OUT patterns ----------------------------------------------------
VHEAP_OUT='x.%e.%p.%%.vhcap' run_quiet "$T" 3 100 >out.txt || die "exec_target exited $?"
pid=$(tpid out.txt)
[ -f "x.exec_target.$pid.%.vhcap" ] || die "VHEAP_OUT=x.%e.%p.%%.vhcap made: $(ls)"
sed -n 's/^target //p' out.txt >t.out
vh_dump "x.exec_target.$pid.%.vhcap" d.txt
vh_check t.out d.txt
expect_line t.out
rm -f ./*.vhcap*

(unset VHEAP_OUT; run_quiet "$T" 3 100 >out.txt) || die "exec_target exited $?"
pid=$(tpid out.txt)
[ -f "vheap.exec_target.$pid.vhcap" ] || die "default capture name: got $(ls)"
rm -f ./*.vhcap*

# --- VHEAP_QUIET -----------------------------------------------------------
VHEAP_OUT=q.vhcap LD_PRELOAD="$VHEAP_LIB" "$T" 2 100 >/dev/null 2>err.txt || die "exit $?"
expect_eq "stderr without VHEAP_QUIET" "$(cat err.txt)" "vheap: capture written to q.vhcap"
VHEAP_OUT=q2.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$T" 2 100 >/dev/null 2>err.txt || die "exit $?"
expect_eq "stderr with VHEAP_QUIET=1" "$(cat err.txt)" ""

# --- mode 0600, whatever the umask ------------------------------------------
(umask 000; VHEAP_OUT=m.vhcap run_quiet "$T" 2 100 >/dev/null) || die "exit $?"
expect_eq "capture mode" "$(stat -c %a m.vhcap)" 600

# --- an existing file is never overwritten (O_EXCL, then .1, .2) -------------
echo sentinel >taken.vhcap
VHEAP_OUT=taken.vhcap run_quiet "$T" 2 100 >/dev/null || die "exit $?"
VHEAP_OUT=taken.vhcap run_quiet "$T" 2 100 >/dev/null || die "exit $?"
expect_eq "existing file" "$(cat taken.vhcap)" sentinel
vh_dump taken.vhcap.1 d.txt
vh_check /dev/null d.txt
expect_eq "exec_generation of .1" "$(st header_exec_generation)" 1
vh_dump taken.vhcap.2 d.txt
vh_check /dev/null d.txt
expect_eq "exec_generation of .2" "$(st header_exec_generation)" 2

# --- no writing through a symlink, dangling or not ---------------------------
echo victim >victim.txt
ln -s victim.txt link.vhcap
ln -s nowhere.txt dangling.vhcap
VHEAP_OUT=link.vhcap run_quiet "$T" 2 100 >/dev/null || die "exit $?"
VHEAP_OUT=dangling.vhcap run_quiet "$T" 2 100 >/dev/null || die "exit $?"
expect_eq "symlink target" "$(cat victim.txt)" victim
[ ! -e nowhere.txt ] || die "the capture was created through a dangling symlink"
[ -f link.vhcap.1 ] && [ ! -L link.vhcap.1 ] || die "no capture beside the symlink: $(ls)"

# --- a world-writable directory without the sticky bit is refused ------------
mkdir ww st
chmod 0777 ww
chmod 1777 st
VHEAP_OUT=ww/c.vhcap LD_PRELOAD="$VHEAP_LIB" "$T" 2 100 >/dev/null 2>err.txt \
    || die "the program must run on when the capture is refused (exit $?)"
expect_eq "files in a world-writable dir" "$(ls ww)" ""
grep -q '^vheap: ' err.txt || die "no warning for a world-writable directory"
VHEAP_OUT=st/c.vhcap run_quiet "$T" 2 100 >/dev/null || die "exit $?"
[ -f st/c.vhcap ] || die "no capture in a sticky world-writable directory"

# --- bad values: one warning each, defaults kept ----------------------------
# (not quiet: whether VHEAP_QUIET also silences warnings is not specified)
for bad in abc 0 257 4x; do
    VHEAP_DEPTH=$bad VHEAP_OUT=bad.vhcap LD_PRELOAD="$VHEAP_LIB" "$T" 2 100 >/dev/null 2>err.txt \
        || die "VHEAP_DEPTH=$bad: exit $?"
    expect_eq "warnings for VHEAP_DEPTH=$bad" "$(grep -c 'VHEAP_DEPTH' err.txt)" 1
    expect_eq "stderr lines for VHEAP_DEPTH=$bad (warning + capture written)" "$(wc -l <err.txt)" 2
    vh_dump bad.vhcap d.txt
    vh_check /dev/null d.txt
    expect_eq "max_depth after VHEAP_DEPTH=$bad" "$(st header_max_depth)" 64
    rm -f bad.vhcap*
done
VHEAP_UNWIND=bogus VHEAP_OUT=bad.vhcap LD_PRELOAD="$VHEAP_LIB" "$T" 2 100 >/dev/null 2>err.txt \
    || die "exit $?"
expect_eq "warnings for VHEAP_UNWIND=bogus" "$(grep -c 'VHEAP_UNWIND' err.txt)" 1
vh_dump bad.vhcap d.txt
vh_check /dev/null d.txt
expect_eq "unwind after VHEAP_UNWIND=bogus" "$(st header_unwind)" libunwind

# --- VHEAP_DEPTH and VHEAP_UNWIND=fp on deep_stack ---------------------------
# user_frames: how many frames of the deep allocation's stack lie in USER code.
user_frames() { # PROGOUT DUMP
    awk "$VH_AWK_LIB"'
        FILENAME == ARGV[1] { if ($1 == "user") { lo = hex(substr($2, 4)); hi = hex(substr($3, 4)) }
                              if ($1 == "deep") size = substr($2, 6); next }
        { kv() }
        $3 == "stack" { S[F["id"]] = F["frames"]; next }
        $3 == "alloc" && F["size"] == size {
            n = split(S[F["stack"]], fr, ","); c = 0
            for (i = 1; i <= n; i++) if (hex(fr[i]) >= lo && hex(fr[i]) <= hi) c++
            print c; exit }' "$1" "$2"
}
for unwind in libunwind fp; do
    VHEAP_UNWIND=$unwind VHEAP_OUT=deep.$unwind.vhcap run_quiet "$PROGS/deep_stack" >deep.out 2>err.txt \
        || die "deep_stack ($unwind) exited $?"
    [ -s err.txt ] && die "warnings with VHEAP_UNWIND=$unwind: $(cat err.txt)"
    want=$(sed -n 's/^deep size=[0-9]* user_frames=//p' deep.out)
    vh_dump deep.$unwind.vhcap d.txt
    vh_check deep.out d.txt
    expect_line deep.out
    expect_eq "unwind in header" "$(st header_unwind)" "$unwind"
    expect_eq "first frame in caller ($unwind)" "$(st first)" "$(st allocs)"
    expect_eq "USER frames of the deep allocation ($unwind)" "$(user_frames deep.out d.txt)" "$want"
done

VHEAP_DEPTH=4 VHEAP_OUT=d4.vhcap run_quiet "$PROGS/deep_stack" >deep.out || die "exit $?"
vh_dump d4.vhcap d.txt
vh_check deep.out d.txt
expect_line deep.out
expect_eq "max_depth in header" "$(st header_max_depth)" 4
[ "$(st max_depth_seen)" -le 4 ] || die "a stack deeper than VHEAP_DEPTH=4: $(st max_depth_seen)"
[ "$(st truncated)" -ge 1 ] || die "no stack flagged truncated under VHEAP_DEPTH=4"
expect_eq "USER frames of the deep allocation (depth 4)" "$(user_frames deep.out d.txt)" 4
echo "env: patterns, quiet, mode, O_EXCL, symlinks, directory, bad values, depth, fp ok"
