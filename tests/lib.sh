# lib.sh — helpers shared by tests/integration/*.sh (sourced, POSIX sh).
# Environment from run-integration.sh: VHEAP_LIB, ANALYZE, PROGS, TOP.
# A test starts with: . "$TOP/tests/lib.sh"
# Python parts import tests/vhcheck.py (check(), the failures collected).
export PYTHONPATH="$TOP/tests${PYTHONPATH:+:$PYTHONPATH}"

die() { echo "FAIL: $*" >&2; exit 1; }

# expect_eq WHAT GOT WANT
expect_eq() { [ "$2" = "$3" ] || die "$1: got '$2', want '$3'"; }

# poll PID CMD...: runs CMD every 0.05 s until it succeeds (0), PID (of
# the program that is to make it true; 0: none) has ended (1), or 600 s
# have passed (2). A test waits for what a program did: the bound only
# ends a hang, and is far above any starved run (check-stress's runs load
# the machine 10-15 deep on 2 cores).
poll() {
    _pid=$1; shift
    _end=$(( $(date +%s) + 600 ))
    until "$@"; do
        [ "$_pid" = 0 ] || kill -0 "$_pid" 2>/dev/null || { "$@" && return 0; return 1; }
        [ "$(date +%s)" -lt $_end ] || return 2
        sleep 0.05
    done
}

# profile OUT PROGRAM ARGS...: runs PROGRAM under the shim, capture in OUT.
profile() {
    _out=$1; shift
    VHEAP_OUT="$_out" VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$@"
}

# dump_count CAPTURE KIND [AWK-CONDITION]: number of dump lines of KIND.
dump_count() {
    "$ANALYZE" dump "$1" | awk -v k="$2" "\$3 == k ${3:+&& ($3)} { n++ } END { print n + 0 }"
}

# ---- capture checks shared by the integration tests ----------------------
# A test program prints what it knows it did (tests/programs/testprog.h):
# "user lo=.. hi=.." (the range of its USER code), "ev ..." lines (its own
# allocator calls in order) and an "expect k=v ..." line. vh_check replays
# the dump against that: a record is the program's own when it is an ALLOC
# or RESIZE whose stack has a frame in a USER range, or a FREE of an address
# the replay holds as a live block of the program's own.

# need_cmd CMD...: skips the test (exit 77, the reason on stderr) when a
# command it runs is not installed; under VHEAP_STRICT=1 that skip fails
# (tests/run-integration.sh): scripts/install-deps.sh installs them all.
need_cmd() {
    for _c; do
        command -v "$_c" >/dev/null 2>&1 || { echo "$_c is not installed" >&2; exit 77; }
    done
}

# need FILE...: fails when a build product is missing.
need() {
    for _f; do [ -e "$_f" ] || die "missing $_f (build it: make integration)"; done
}

# json_diff WANT GOT: diff -u of two JSON files one value a line (a whole
# document on one line makes a diff nobody can read); status as diff's.
json_diff() {
    if command -v python3 >/dev/null &&
        python3 -m json.tool "$1" >"$2.want.pretty" 2>/dev/null &&
        python3 -m json.tool "$2" >"$2.got.pretty" 2>/dev/null; then
        diff -u "$2.want.pretty" "$2.got.pretty"
    else
        cmp -s "$1" "$2" || { diff -u "$1" "$2" | cut -c 1-200; false; }
    fi
}

# vh_dump CAPTURE OUT: the dump text in OUT; a failing dump fails the test.
vh_dump() {
    [ -f "$1" ] || die "no capture $1 (files here: $(ls | tr '\n' ' '))"
    "$ANALYZE" dump "$1" >"$2" 2>"$2.err" || die "dump $1 failed (exit $?): $(cat "$2.err")"
}

# awk helpers (POSIX awk: Debian's default is mawk, no strtonum).
VH_AWK_LIB='
function hex(s,   i, c, v) {
    s = tolower(s); v = 0
    if (substr(s, 1, 2) == "0x") s = substr(s, 3)
    for (i = 1; i <= length(s); i++) {
        c = index("0123456789abcdef", substr(s, i, 1))
        if (!c) return -1
        v = v * 16 + c - 1
    }
    return v
}
# hexs(v): v as the dump writes addresses ("0x" and lowercase digits: the
# printf %x stops at 32 bits in mawk).
function hexs(v,   s, d) {
    s = ""
    do { d = v % 16; s = substr("0123456789abcdef", d + 1, 1) s; v = (v - d) / 16 } while (v > 0)
    return "0x" s
}
# kv(): F[key] = value for the key=value words of a dump record line
# (from field 4 on), W[word] = 1 for bare flag words.
function kv(   i, p) {
    split("", F); split("", W)
    for (i = 4; i <= NF; i++) {
        p = index($i, "=")
        if (p) F[substr($i, 1, p - 1)] = substr($i, p + 1); else W[$i] = 1
    }
}
function kvh(   i, p) {    # same for the header and loss lines (from field 2)
    for (i = 2; i <= NF; i++) {
        p = index($i, "=")
        if (p) H[$1 "_" substr($i, 1, p - 1)] = substr($i, p + 1)
    }
}
'

# VH_AWK_USER (after VH_AWK_LIB): for `awk ... PROGRAM-OUTPUT DUMP`, reads the
# program's "user 0xLO 0xHI" line (the address range of its own code) and
# marks in O[] every stack of the dump with a frame in that range.
VH_AWK_USER='
FILENAME == ARGV[1] { if ($1 == "user") { lo = hex(substr($2, 4)); hi = hex(substr($3, 4)) }; next }
{ kv() }
$3 == "stack" { split(F["frames"], fr, ",")
                for (i in fr) if (hex(fr[i]) >= lo && hex(fr[i]) <= hi) O[F["id"]] = 1; next }
'

# The checker: reads the program output (ARGV[1]) and the dump (ARGV[2]),
# prints key=value statistics, and "error: ..." lines for every broken rule
# that holds for any capture (time order, stacks defined before use, usable
# >= size, no allocation of an address that is still live, ev sequence).
VH_AWK_CHECK='
FILENAME == ARGV[1] {
    if ($1 == "user") {
        nr++
        RLO[nr] = hex(substr($2, 4)); RHI[nr] = hex(substr($3, 4))
    } else if ($1 == "ev") {
        ne++; EXP[ne] = substr($0, 4)
    }
    next
}
function inrange(a,   k) {
    for (k = 1; k <= nr; k++) if (a >= RLO[k] && a <= RHI[k]) return 1
    return 0
}
function err(m) { nerr++; if (nerr <= 20) print "error: " m }
function seq(s) { ng++; if (ne > 0 || seqcheck) GOT[ng] = s }
# fields of an ev line match, "*" matching anything; "align=N" checks the
# address instead of matching a word.
function same(want, got,   nw, ng2, w, g, i, j, a) {
    nw = split(want, w, " "); ng2 = split(got, g, " ")
    j = 0
    for (i = 1; i <= nw; i++) {
        if (substr(w[i], 1, 6) == "align=") {
            a = substr(w[i], 7) + 0
            if (hex(g[3]) % a != 0) return 0
            continue
        }
        j++
        if (w[i] == "*") continue
        if (w[i] ~ /^0x/ && g[j] ~ /^0x/) { if (hex(w[i]) != hex(g[j])) return 0; continue }
        if (w[i] != g[j]) return 0
    }
    return j == ng2
}
/^#/ { if ($2 == "records=" || substr($2, 1, 8) == "records=") { sub(/^# /, ""); TRAILER = $0 }; next }
$1 == "header" || $1 == "loss" { kvh(); next }
$1 == "argv" { nargv++; next }
{
    t = $1 + 0; tid = $2; kind = $3
    if (t < lastt) err("time goes backwards at line " FNR ": " $0)
    lastt = t; nrec++
    kv()
}
kind == "stack" {
    id = F["id"]
    if (id in SFR && SFR[id] != F["frames"]) err("stack " id " defined twice with different frames")
    SFR[id] = F["frames"]; nstacks++
    if (F["depth"] + 0 > maxdepth) maxdepth = F["depth"] + 0
    if ("truncated" in W) truncated++
    n = split(F["frames"], fr, ",")
    if (n != F["depth"] + 0) err("stack " id " depth=" F["depth"] " but " n " frames")
    OURS[id] = 0; FIRST[id] = 0
    # skiplast: the outermost frame does not count (_start, in the main
    # executable, is below every stack of the process).
    for (i = 1; i <= n - (skiplast ? 1 : 0); i++) if (inrange(hex(fr[i]))) { OURS[id] = i; break }
    if (n >= 1 && inrange(hex(fr[1]))) FIRST[id] = 1
    next
}
kind == "alloc" || kind == "resize" {
    sid = F["stack"]
    if (sid != 0 && !(sid in SFR)) err("line " FNR ": stack " sid " used before its stack record")
    if (sid == 0) stack0++
    ours = (sid in OURS) && OURS[sid] > 0
    a = F["addr"]; size = F["size"]; us = F["usable"]
    fl = ("realloc" in W) ? " realloc" : ""
}
kind == "alloc" {
    if ("failed" in W) {
        if (hex(a) != 0) err("line " FNR ": failed allocation with an address")
        if (ours) { failed++; seq("alloc " F["func"] " 0x0 " size " " us fl " failed"); first += FIRST[sid] }
        next
    }
    if (us + 0 < size + 0) err("line " FNR ": usable < size")
    if (a in LIVE) err("line " FNR ": allocation of " a " which is still live (since line " LINE[a] ")")
    LIVE[a] = size; LINE[a] = FNR; OWN[a] = ours; ATID[a] = tid
    if (sid == 0) S0[a] = 1
    if (ours) {
        allocs++; bytes += size; first += FIRST[sid]; TIDN[tid]++
        if (a in LASTFREE && LASTFREE[a] != "" && ATID0[a] != tid) xreuse++
        ATID0[a] = tid
        seq("alloc " F["func"] " " a " " size " " us fl)
    }
    next
}
kind == "resize" {
    if (!(a in LIVE)) {
        if (ours) err("line " FNR ": resize of " a " which is not live")
        next
    }
    if (us + 0 < size + 0) err("line " FNR ": usable < size")
    LIVE[a] = size
    if (OWN[a] || ours) { OWN[a] = 1; resizes++; seq("resize " F["func"] " " a " " size " " us) }
    next
}
kind == "free" {
    a = F["addr"]
    if (hex(a) == 0) err("line " FNR ": free of address 0 recorded")
    if (!(a in LIVE)) { unknown_frees++; next }
    if (a in S0) { stack0_frees++; delete S0[a] }
    if (OWN[a]) {
        frees++; FTIDN[tid]++
        if (ATID[a] != tid) xfree++
        seq("free " F["func"] " " a (("realloc" in W) ? " realloc" : ""))
    }
    LASTFREE[a] = tid
    delete LIVE[a]; delete OWN[a]
    next
}
kind == "module" { modules++; next }
kind == "module_unload" { unloads++; next }
kind == "thread" { THR[tid] = 1; next }
kind == "end" { ended++; next }
kind == "rss" { rss++; next }
kind == "unknown" { err("line " FNR ": unknown record " $0); next }
END {
    for (a in OWN) if (OWN[a]) { live_blocks++; live_bytes += LIVE[a] }
    # The sequence is compared when the program logged one (or seqcheck=1: it
    # logged none because it made none).
    for (i = 1; (ne > 0 || seqcheck) && (i <= ne || i <= ng); i++) {
        if (i > ne) { err("capture has more of the program events than it logged; first extra #" i ": " GOT[i]); break }
        if (i > ng) { err("capture lacks program event #" i ": " EXP[i]); break }
        if (!same(EXP[i], GOT[i])) {
            err("program event #" i " differs: program did \"" EXP[i] "\", capture has \"" GOT[i] "\"")
            break
        }
    }
    # printf: mawk prints numbers past 2^31 as %.6g.
    split("allocs failed frees resizes bytes live_blocks live_bytes first records stacks " \
          "max_depth_seen truncated stack0 unknown_frees xthread_free xthread_reuse modules " \
          "unloads ended rss argv evs stack0_frees", K, " ")
    V["allocs"] = allocs; V["failed"] = failed; V["frees"] = frees; V["resizes"] = resizes
    V["bytes"] = bytes; V["live_blocks"] = live_blocks; V["live_bytes"] = live_bytes
    V["first"] = first; V["records"] = nrec; V["stacks"] = nstacks
    V["max_depth_seen"] = maxdepth; V["truncated"] = truncated; V["stack0"] = stack0
    V["unknown_frees"] = unknown_frees; V["xthread_free"] = xfree; V["xthread_reuse"] = xreuse
    V["modules"] = modules; V["unloads"] = unloads; V["ended"] = ended; V["rss"] = rss
    V["argv"] = nargv; V["evs"] = ng; V["stack0_frees"] = stack0_frees
    for (i = 1; i in K; i++) printf "%s=%.0f\n", K[i], V[K[i]] + 0
    for (k in H) print k "=" H[k]
    nt = 0; for (k in TIDN) { nt++; print "tid_allocs_" k "=" TIDN[k] }
    print "tids=" nt
    print "trailer=" TRAILER
    print "errors=" nerr + 0
}
'

# vh_check PROGOUT DUMP [AWK-ARGS]: runs the checker; statistics go to
# DUMP.stats and are read with st KEY. Fails the test on any error line.
vh_check() {
    VH_STATS="$2.stats"
    awk ${3:-} "$VH_AWK_LIB$VH_AWK_CHECK" "$1" "$2" >"$VH_STATS" || die "checker failed on $2"
    if grep -q '^error: ' "$VH_STATS"; then
        grep '^error: ' "$VH_STATS" | head -n 10 >&2
        die "$(grep -c '^error: ' "$VH_STATS") rule(s) broken in $2 (see above)"
    fi
}

# profile_checked PROG [ARGS...]: runs $PROGS/PROG under the shim into
# cap.vhcap (its own report in out.txt, the dump in dump.txt) and checks
# the dump against the report record by record (vh_check).
profile_checked() {
    _p=$1; shift
    profile cap.vhcap "$PROGS/$_p" "$@" >out.txt || die "$_p exited $?"
    vh_dump cap.vhcap dump.txt
    vh_check out.txt dump.txt
}

# st KEY: a statistic from the last vh_check ("header_pid", "loss_nested", ...).
st() { sed -n "s/^$1=//p" "$VH_STATS" | head -n 1; }

# expect_line PROGOUT [PREFIX]: compares every k=v of the program's
# "PREFIXexpect ..." line with the statistic of the same name.
expect_line() {
    _line=$(grep "^${2:-}expect " "$1" | tail -n 1)
    [ -n "$_line" ] || die "no '${2:-}expect' line in $1"
    for _kv in ${_line#"${2:-}"expect }; do
        expect_eq "${2:-}${_kv%%=*}" "$(st "${_kv%%=*}")" "${_kv#*=}"
    done
}

# main_range DUMP: a "user lo=.. hi=.." line for the main executable's
# module record, for programs without a USER section.
main_range() {
    awk '$3 == "module" && $NF == "main" { print "user " $5 " " $6; exit }' "$1"
}

# has_flag FLAGS WORD: true if the comma-separated header flags hold WORD.
has_flag() { case ",$1," in *,"$2",*) return 0 ;; esac; return 1; }

# small_disk [SIZE]: mounts a tmpfs of SIZE (tmpfs's words; 2m) at
# $PWD/small, sets mnt to it and unmounts it when the test exits; skips the
# test (77) where it cannot mount (not root). For tests of a capture whose
# disk fills up.
small_disk() {
    mnt=$PWD/small
    mkdir -p "$mnt"
    if ! mount -t tmpfs -o "size=${1:-2m}" tmpfs "$mnt" 2>mount.err; then
        echo "skip: cannot mount a ${1:-2m} tmpfs (needs root): $(cat mount.err)" >&2
        exit 77
    fi
    trap 'umount "$mnt" 2>/dev/null' EXIT INT TERM
}

# ---- the target survives the profiler (stress_*.sh) ----------------------
# vs_bare SECS NAME PROGRAM ARGS...: runs PROGRAM bare, then under the shim
# (capture NAME.vhcap or $VS_CAPTURE; other VHEAP_* settings come from the
# environment), each under `timeout SECS` (never itself under the shim).
# Fails on a hang, on exit codes that differ or are not ${VS_RC:-0}, or on
# different output: stdout without testprog's lines (first or second word
# user, ev, expect: addresses and counts differ between runs), stderr
# without the shim's "vheap:" lines; those go to NAME.vheap and fail the
# test unless VS_WARN=1. Leaves NAME.out, NAME.err (the shim run) and
# NAME.bare.out.
vs_bare() {
    _secs=$1 _name=$2; shift 2
    timeout "$_secs" "$@" >"$_name.bare.out" 2>"$_name.bare.err"
    _brc=$?
    VHEAP_OUT="${VS_CAPTURE:-$_name.vhcap}" VHEAP_QUIET=${VHEAP_QUIET:-1} \
        timeout "$_secs" env LD_PRELOAD="$VHEAP_LIB" "$@" >"$_name.out" 2>"$_name.err"
    _src=$?
    [ $_brc -ne 124 ] || die "$_name: the bare run hung (killed after ${_secs}s)"
    [ $_src -ne 124 ] || die "$_name: hung under the shim (killed after ${_secs}s; bare exit $_brc)"
    [ $_src -eq $_brc ] || die "$_name: exit $_src under the shim, $_brc bare; stderr: $(tail -n 3 "$_name.err")"
    [ $_src -eq "${VS_RC:-0}" ] || die "$_name: exit $_src (want ${VS_RC:-0}); stderr: $(tail -n 3 "$_name.err")"
    for _f in "$_name.bare.out" "$_name.out"; do
        grep -Ev '^([^ ]+ )?(user|ev|expect) ' "$_f" >"$_f.cmp"
    done
    cmp -s "$_name.bare.out.cmp" "$_name.out.cmp" ||
        die "$_name: output differs under the shim: $(diff "$_name.bare.out.cmp" "$_name.out.cmp" | head -n 5)"
    grep '^vheap: ' "$_name.err" >"$_name.vheap"
    grep -v '^vheap: ' "$_name.err" >"$_name.err.cmp"
    cmp -s "$_name.bare.err" "$_name.err.cmp" ||
        die "$_name: stderr differs under the shim: $(diff "$_name.bare.err" "$_name.err.cmp" | head -n 5)"
    [ "${VS_WARN:-0}" = 1 ] || [ ! -s "$_name.vheap" ] ||
        die "$_name: the shim warned: $(head -n 3 "$_name.vheap")"
    return 0
}
