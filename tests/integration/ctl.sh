# ctl.sh — `vheap-analyze ctl` against the capture of a live process. Until
# the shim's side is tested end to end elsewhere, the "live vheap process" is
# honest about what ctl checks: a python process that maps a capture
# (MAP_SHARED, as the shim maps its header page) whose header names its pid.
# Checks: status reads the header; start/stop write the ctl word, mark the
# label then the sequence (read back from the file); a pid that maps no
# capture, a capture whose process is gone, a dead pid and bad usage are
# refused with exit 1 / 2 and a message.
. "$TOP/tests/lib.sh"

need_cmd python3
[ -x "$ANALYZE" ] || { echo "no analyzer at $ANALYZE" >&2; exit 77; }
cc -O1 -I"$TOP" -o daemon "$TOP/tests/synth/daemon.c" -lm || die "cannot build tests/synth/daemon.c"

# the fake program: waits for its capture, maps it shared, sleeps
python3 -c '
import mmap, os, sys, time
p = sys.argv[1]
while not (os.path.exists(p + ".ready")): time.sleep(0.02)
f = open(p, "r+b"); m = mmap.mmap(f.fileno(), 4096)
open(p + ".mapped", "w").close()
time.sleep(120)' live.vhcap &
fake=$!
trap 'kill $fake 2>/dev/null' EXIT
./daemon live.vhcap --pid "$fake" --hours 0.01 --rate 524288 --no-end >/dev/null || die "daemon failed"
touch live.vhcap.ready
# (no fixed bound: a loaded machine starts python late; the harness bounds it)
until [ -e live.vhcap.mapped ]; do
    kill -0 $fake 2>/dev/null || die "the fake program did not map its capture"
    sleep 0.05
done

# header fields, read straight from the file (offsets: docs/capture-format.md)
field() { python3 -c '
import struct, sys
d = open(sys.argv[1], "rb").read(4096)
off, kind = int(sys.argv[2]), sys.argv[3]
print(struct.unpack_from(kind, d, off)[0] if kind != "s" else d[off:off+64].split(b"\0")[0].decode())' live.vhcap "$@"; }

out=$("$ANALYZE" ctl status "$fake") || die "status by pid failed"
expect_eq "status by pid" "$out" "recording=1 sample_rate=524288 pid=$fake request=none marks=0 capture=$(pwd -P)/live.vhcap"
"$ANALYZE" ctl stop "$fake" >out.txt || die "stop failed"
grep -q "stop requested" out.txt || die "stop said: $(cat out.txt)"
expect_eq "ctl word after stop" "$(field 3256 '<I')" 2
"$ANALYZE" ctl start live.vhcap >/dev/null || die "start by capture failed"
expect_eq "ctl word after start" "$(field 3256 '<I')" 1
"$ANALYZE" ctl mark "after warmup" live.vhcap >/dev/null || die "mark failed"
"$ANALYZE" ctl mark "second" "$fake" >/dev/null || die "mark by pid failed"
expect_eq "mark sequence" "$(field 3260 '<I')" 2
expect_eq "mark label" "$(field 3264 s)" "second"
out=$("$ANALYZE" ctl status live.vhcap) || die "status by capture failed"
expect_eq "status" "$out" "recording=1 sample_rate=524288 pid=$fake request=start marks=2 capture=live.vhcap"

# by pid, whatever the capture is called: a serf's is NAME.vhcap.1 when its
# fork child took NAME.vhcap (fails on the old code: only *.vhcap was looked
# at). The copy's header gets the second fake's pid (offset 40).
cp live.vhcap live.vhcap.1
python3 -c '
import mmap, sys, time
f = open(sys.argv[1], "r+b"); m = mmap.mmap(f.fileno(), 4096)
open(sys.argv[1] + ".mapped", "w").close()
time.sleep(120)' live.vhcap.1 &
fake1=$!
trap 'kill $fake $fake1 2>/dev/null' EXIT
for i in $(seq 100); do [ -e live.vhcap.1.mapped ] && break; sleep 0.05; done
python3 -c '
import struct, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(40); f.write(struct.pack("<I", int(sys.argv[2])))' live.vhcap.1 "$fake1"
out=$("$ANALYZE" ctl status "$fake1") || die "status by pid of a NAME.vhcap.1 capture failed"
case $out in *"pid=$fake1 "*"capture=$(pwd -P)/live.vhcap.1") ;; *) die "status by pid of .1: $out" ;; esac
kill $fake1; wait $fake1 2>/dev/null

# refusals: exit 1 with a reason
refuse() {  # WANT-RC PATTERN ARGS...
    _rc=$1 _pat=$2; shift 2
    "$ANALYZE" ctl "$@" >/dev/null 2>err.txt
    _got=$?
    [ "$_got" = "$_rc" ] || die "ctl $*: exit $_got, want $_rc ($(cat err.txt))"
    grep -q "$_pat" err.txt || die "ctl $*: said '$(cat err.txt)', want '$_pat'"
}
sleep 60 & other=$!
refuse 1 "not a live vheap process" status "$other"
kill $other
./daemon other.vhcap --pid "$other" --hours 0.01 >/dev/null
wait $other 2>/dev/null
refuse 1 "not running" start other.vhcap
./daemon mine.vhcap --pid $$ --hours 0.01 >/dev/null
refuse 1 "does not map it" stop mine.vhcap
refuse 1 "no process" status 999999999
printf 'not a capture at all, but long enough?' >junk.vhcap
refuse 1 "too short" status junk.vhcap
refuse 1 "No such file" stop missing.vhcap
refuse 2 "unknown request" pause live.vhcap
refuse 2 "at most 63 bytes" mark "$(printf '%070d' 0)" live.vhcap
refuse 2 "wants start|stop|status|mark" start
refuse 2 "usage" mark label
# the operands swapped: a usage error saying so, not the label's ENOENT
refuse 2 "the label comes first" mark "$fake" "after warmup"
refuse 2 "the label comes first" mark live.vhcap "after warmup"
"$ANALYZE" ctl --help | grep -q "ctl start|stop|status" || die "no --help"

# after the program is gone the same capture is refused
kill $fake; wait $fake 2>/dev/null
refuse 1 "not running" status live.vhcap
echo "ctl: ok"
