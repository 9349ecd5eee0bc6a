# badinput — the analyzer on input that is not a good capture or DB, made
# from a real capture of threads_xfer: truncated, bit-flipped, zero-filled,
# wrong version, wrong magic, bad header fields; a SQLite file that is not a
# vheap DB, a vheap DB of another schema version or cut short; a missing
# file, a directory, a FIFO, an empty file. Every command (dump, load,
# summary, leaks, top, peak) answers with one clear line and exit 1 (2 for
# usage), never a crash (exit >= 128, a sanitizer report) or a hang; a
# damaged capture still yields what was valid (dump prints those records,
# identical to the originals; load writes a DB with them).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/threads_xfer"
need_cmd sqlite3

# A sanitized analyzer (make asan) must crash loudly, not exit 1.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}abort_on_error=1"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}abort_on_error=1:halt_on_error=1"
QUERIES="summary leaks top peak"
CHUNK=65536
NOTCAP='magic|not a vheap|neither'
ran=0

# run NAME CMD ARGS...: the analyzer with a time limit; exit code in $rc,
# stdout in NAME.out, stderr in NAME.err. A hang or a crash fails at once.
run() {
    _n=$1; shift
    timeout 120 "$ANALYZE" "$@" >"$_n.out" 2>"$_n.err"
    rc=$?
    ran=$((ran + 1))
    [ $rc -ne 124 ] || die "$* hung (killed after 120 s)"
    [ $rc -lt 128 ] || die "$* crashed (exit $rc): $(head -c 2000 "$_n.err")"
    if grep -q -E 'Sanitizer|runtime error:|^ *#[0-9]+ 0x' "$_n.err"; then
        die "$*: sanitizer report: $(head -c 2000 "$_n.err")"
    fi
    # Every diagnostic is the analyzer's own, on one line each.
    if grep -v -q '^vheap-analyze: ' "$_n.err"; then
        die "$*: a stderr line not from vheap-analyze: $(grep -v '^vheap-analyze: ' "$_n.err" | head -n 3)"
    fi
}

# refused WANT_RC PATTERN NAME CMD ARGS...: exit WANT_RC and exactly one
# stderr line matching PATTERN (grep -E, case-insensitive).
refused() {
    _want=$1 _pat=$2 _n=$3; shift 3
    run "$_n" "$@"
    [ $rc -eq "$_want" ] || die "$*: exit $rc, want $_want; stderr: $(cat "$_n.err")"
    expect_eq "stderr lines of: $*" "$(wc -l <"$_n.err")" 1
    grep -q -i -E "$_pat" "$_n.err" || die "$*: error does not say '$_pat': $(cat "$_n.err")"
}

# poke FILE OFFSET BYTE...: overwrites bytes in place.
poke() {
    _f=$1 _off=$2; shift 2
    for _b; do printf "\\$(printf %o "$_b")"; done |
        dd of="$_f" bs=1 seek="$_off" conv=notrunc status=none
}
copy() { cp good.vhcap "$1"; }

# ---- the real capture -------------------------------------------------------
VHEAP_CHUNK_SIZE=64KiB profile good.vhcap "$PROGS/threads_xfer" >prog.out \
    || die "threads_xfer exited $?"
run good dump good.vhcap
expect_eq "dump of the good capture: exit" "$rc" 0
expect_eq "dump of the good capture: stderr" "$(cat good.err)" ""
grep -v '^#' good.out | grep -v -E '^(header|argv|loss) ' | sort >good.recs
full=$(wc -l <good.recs)
size=$(wc -c <good.vhcap)
chunks=$(( (size - 4096) / CHUNK ))
[ "$full" -gt 1000 ] && [ "$chunks" -ge 4 ] || die "capture too small to damage: $full records, $chunks chunks"
run goodload load -q --no-symbols good.vhcap good.sqlite
expect_eq "load of the good capture" "$rc" 0
good_allocs=$(sqlite3 good.sqlite 'SELECT sum(allocations) FROM summary')

# ---- files that are no capture at all: every command, one line, exit 1 ------
mkdir adir
mkfifo afifo
: >empty.vhcap
echo "just some text, long enough to have a magic's worth of bytes" >text.vhcap
head -c 100 good.vhcap >short.vhcap
head -c 4000 good.vhcap >cuthdr.vhcap
copy magic.vhcap; poke magic.vhcap 0 0x58
copy version.vhcap; poke version.vhcap 8 5
copy chunksz.vhcap; poke chunksz.vhcap 16 3 0 0 0
copy hdrsz.vhcap; poke hdrsz.vhcap 12 0 0 1 0
copy choff.vhcap; poke choff.vhcap 24 3
head -c "$size" /dev/zero >zero.vhcap
sqlite3 other.sqlite 'CREATE TABLE t(a); INSERT INTO t VALUES (1);'
check_unreadable() { # FILE PATTERN
    for cmd in dump $QUERIES; do
        refused 1 "$2" "u.$cmd" "$cmd" "$1"
    done
    refused 1 "$2" u.load load -q "$1" u.sqlite
    [ ! -e u.sqlite ] || die "load of $1 left a DB behind"
    [ -z "$(ls -a | grep -E '\.sqlite.*-|\.tmp')" ] || die "temporary files left after $1: $(ls -a)"
}
check_unreadable missing.vhcap 'no such file'
check_unreadable adir 'not a regular file|directory'
check_unreadable afifo 'not a regular file'
check_unreadable empty.vhcap "$NOTCAP|empty"
check_unreadable text.vhcap "$NOTCAP"
check_unreadable short.vhcap "$NOTCAP|truncated"
check_unreadable cuthdr.vhcap 'truncated header'
check_unreadable magic.vhcap "$NOTCAP"
check_unreadable version.vhcap 'version 5'
check_unreadable chunksz.vhcap 'chunk size'
check_unreadable hdrsz.vhcap 'header size'
check_unreadable choff.vhcap 'chunk offset'
check_unreadable zero.vhcap "$NOTCAP"
# A SQLite file that is not a vheap DB: the queries say so; dump and load
# see no capture.
for cmd in $QUERIES; do
    refused 1 'not a vheap database' "o.$cmd" "$cmd" other.sqlite
done
refused 1 "$NOTCAP" o.dump dump other.sqlite
refused 1 "$NOTCAP" o.load load -q other.sqlite o2.sqlite
# ... and load never replaces it.
before=$(cksum <other.sqlite)
refused 1 'not a vheap database|refus' o.replace load -q --no-symbols good.vhcap other.sqlite
expect_eq "other.sqlite after load refused to replace it" "$(cksum <other.sqlite)" "$before"

# ---- module paths that are no ELF file ------------------------------------------
# The symbolizer opens the paths a capture names: a FIFO, a device or a
# directory there must not block or feed the load (it used to wait on the
# FIFO forever). The main executable's MODULE record gets the new path.
exe_off=$(grep -obUaF "$PROGS/threads_xfer" good.vhcap | awk -F: '$1 >= 4096 { print $1; exit }')
[ -n "$exe_off" ] || die "no MODULE record of the executable in good.vhcap"
mkfifo modfifo
for p in modfifo /dev/zero adir; do
    copy mp.vhcap
    { printf '%s' "$p"; head -c 64 /dev/zero; } | dd of=mp.vhcap bs=1 seek="$exe_off" \
        count=$(( ${#p} + 1 )) conv=notrunc status=none
    run mp load -q mp.vhcap mp.sqlite
    expect_eq "load of a capture whose executable is $p" "$rc" 0
    sqlite3 mp.sqlite "SELECT value FROM meta WHERE key = 'symbols_modules_missing'" | grep -q '^[1-9]' \
        || die "module path $p not counted as missing"
    rm -f mp.sqlite
done

# ---- bad vheap DBs -----------------------------------------------------------
cp good.sqlite v99.sqlite
sqlite3 v99.sqlite "UPDATE meta SET value = 99 WHERE key = 'schema_version'"
cp good.sqlite cut.sqlite
truncate -s $(( $(wc -c <good.sqlite) / 3 )) cut.sqlite
for cmd in $QUERIES; do
    refused 1 'schema version 99|version' "v.$cmd" "$cmd" v99.sqlite
    run "c.$cmd" "$cmd" cut.sqlite
    [ $rc -eq 1 ] || die "$cmd on a DB cut to a third: exit $rc, want 1"
    [ "$(wc -l <"c.$cmd.err")" -le 2 ] || die "$cmd on a cut DB: $(cat "c.$cmd.err")"
done
# bytes flipped inside the DB's pages: any answer but a crash or hang
dbsize=$(wc -c <good.sqlite)
for s in 1 2 3 4 5 6; do
    cp good.sqlite f$s.sqlite
    off=$(( (s * 7919 * 4093 + 1234567) % (dbsize - 4096) + 100 ))
    poke f$s.sqlite $off 0xff 0x00 0x7f 0x80
    for cmd in $QUERIES; do
        run "f$s.$cmd" "$cmd" f$s.sqlite
        [ $rc -le 1 ] || die "$cmd on a flipped DB: exit $rc"
    done
done

# ---- usage errors: exit 2, one line --------------------------------------------
refused 2 'no capture|usage|see' us1 dump
refused 2 'unknown option' us2 dump --bogus good.vhcap
refused 2 'one capture' us3 dump good.vhcap good.vhcap
refused 2 'usage|see|capture' us4 load
refused 2 'unknown option' us5 load --bogus good.vhcap
for cmd in $QUERIES; do
    refused 2 'needed|see' "us.$cmd.1" "$cmd"
    refused 2 'unknown option' "us.$cmd.2" "$cmd" --bogus good.sqlite
    refused 2 'limit' "us.$cmd.3" "$cmd" --limit abc good.sqlite
    refused 2 'format' "us.$cmd.4" "$cmd" --format xml good.sqlite
    refused 2 'one DB' "us.$cmd.5" "$cmd" good.sqlite good.sqlite
done

# ---- damaged captures: the valid part is kept and the damage named -----------
# damaged NAME: dump, load and every query on the loaded DB; dump's records
# must all be records of the good capture (nothing invented) and, when it
# exits 1, it names one damaged place; the loaded DB has at most the good
# number of allocations. Prints the number of records dump kept.
damaged() {
    _c=$1.vhcap
    run "$1.d" dump "$_c"
    [ $rc -le 1 ] || die "dump $_c: exit $rc"
    if [ $rc -eq 1 ]; then
        expect_eq "stderr lines of dump $_c" "$(wc -l <"$1.d.err")" 1
        grep -q -E 'at (offset )?0x[0-9a-f]+|0x[0-9a-f]+' "$1.d.err" \
            || die "dump $_c names no offset: $(cat "$1.d.err")"
    fi
    grep -v '^#' "$1.d.out" | grep -v -E '^(header|argv|loss) ' | sort >"$1.recs"
    _extra=$(comm -23 "$1.recs" good.recs | wc -l)
    _drc=$rc
    kept=$(wc -l <"$1.recs")
    run "$1.l" load -q --no-symbols "$_c" "$1.sqlite"
    [ $rc -le 1 ] || die "load $_c: exit $rc"
    [ $rc -eq 0 ] || grep -q 'vheap-analyze: load: ' "$1.l.err" || die "load $_c: exit 1 without a message"
    [ -f "$1.sqlite" ] || die "load $_c wrote no DB (exit $rc): $(cat "$1.l.err")"
    _a=$(sqlite3 "$1.sqlite" 'SELECT coalesce(sum(allocations), 0) FROM summary')
    # summary shows everything valid and, when the DB says the capture was
    # damaged, exits 1 (it used to exit 0 saying "exited cleanly: yes").
    _dmg=$(sqlite3 "$1.sqlite" "SELECT count(*) FROM meta WHERE key = 'damage' AND value IS NOT NULL")
    for cmd in $QUERIES; do
        run "$1.$cmd" "$cmd" "$1.sqlite"
        _want=0
        [ "$cmd" = summary ] && [ "$_dmg" -gt 0 ] && _want=1
        [ $rc -eq $_want ] || die "$cmd on the DB of $_c: exit $rc, want $_want: $(cat "$1.$cmd.err")"
    done
    if [ "$_dmg" -gt 0 ]; then
        grep -q 'capture damage' "$1.summary.out" && grep -q 'but the capture is damaged' "$1.summary.out" ||
            die "summary of the damaged $_c: $(cat "$1.summary.out")"
        grep -q 'warning: the capture is damaged' "$1.summary.err" ||
            die "summary of the damaged $_c does not warn: $(cat "$1.summary.err")"
    fi
    echo "$1: dump kept $kept of $full records (exit $_drc), $_a of $good_allocs allocations loaded, $_extra changed records"
    EXTRA=$_extra
}

# Truncated: in the first chunk and in the middle. Only original records
# come out, and the first damage names the cut.
for cut in $((4096 + 5000)) $((4096 + 2 * CHUNK + 777)); do
    head -c "$cut" good.vhcap >t$cut.vhcap
    damaged t$cut
    expect_eq "records of the capture cut at $cut that are not in the original" "$EXTRA" 0
    [ "$kept" -gt 0 ] && [ "$kept" -lt "$full" ] || die "cut at $cut kept $kept of $full records"
    refused 1 'truncated|past the end|0x' t$cut.dd dump t$cut.vhcap
    expect_eq "load of a truncated capture: exit" \
        "$(timeout 120 "$ANALYZE" load -q --no-symbols t$cut.vhcap t$cut.b.sqlite 2>/dev/null; echo $?)" 1
    sqlite3 t$cut.b.sqlite "SELECT value FROM meta WHERE key = 'damage'" | grep -q . \
        || die "the DB of a truncated capture does not say it is damaged"
done
# Cut in the unused tail of the last chunk: nothing is lost.
head -c $((size - 3)) good.vhcap >tail.vhcap
damaged tail
expect_eq "records kept from a capture cut in its unused tail" "$kept" "$full"
# Chunk 2 onwards gone but the header still claims them: a DB with chunks 0-1.
head -c $((4096 + 2 * CHUNK)) good.vhcap >t2chunks.vhcap
damaged t2chunks
[ "$kept" -gt 0 ] && [ "$kept" -lt "$full" ] || die "2-chunk cut kept $kept of $full"

# Zero-filled: a whole chunk, and 4 KiB in the middle of one.
copy z1.vhcap
dd if=/dev/zero of=z1.vhcap bs=4096 seek=$(( (4096 + CHUNK) / 4096 )) count=$((CHUNK / 4096)) \
    conv=notrunc status=none
damaged z1
copy z2.vhcap
dd if=/dev/zero of=z2.vhcap bs=4096 count=1 conv=notrunc status=none seek=$(( (4096 + 8192) / 4096 ))
damaged z2

# Header and chunk-header fields that a reader must not trust.
copy h1.vhcap; poke h1.vhcap 32 0xff 0xff 0xff 0xff 0xff 0xff 0xff 0x7f  # chunks_claimed
damaged h1
copy h2.vhcap; poke h2.vhcap 128 0xff 0xff 0xff 0x7f                      # argv_len
damaged h2
copy h3.vhcap
head -c 1024 /dev/zero | tr '\0' 'A' | dd of=h3.vhcap bs=1 seek=144 conv=notrunc status=none
damaged h3                                                                  # exe unterminated
for i in 0 1 3; do
    base=$((4096 + i * CHUNK))
    copy c$i.vhcap; poke c$i.vhcap $((base + 6)) 0x10                      # used: 1 TiB more
    damaged c$i
    copy m$i.vhcap; poke m$i.vhcap $((base + 8)) 0x00                      # chunk magic
    damaged m$i
    copy i$i.vhcap; poke i$i.vhcap $((base + 12)) 0x42                     # chunk index
    damaged i$i
done

# Bit flips at pseudo-random places in the records of the first chunks
# (where the data is), one to eight bytes at a time.
s=1
while [ $s -le 24 ]; do
    copy b$s.vhcap
    n=$(( s % 8 + 1 ))
    k=0
    while [ $k -lt $n ]; do
        r=$(( (s * 1103515245 + k * 12345 + 4242) % 2147483647 ))
        off=$(( 4096 + (r % 4) * CHUNK + 32 + (r / 7) % 6000 ))
        poke b$s.vhcap $off $(( (r / 3) % 256 ))
        k=$((k + 1))
    done
    damaged b$s
    s=$((s + 1))
done
echo "badinput: $ran analyzer runs, no crash, no hang"
