# load.sh — the `vheap-analyze load` contract: exit codes and one-line
# errors, the default DB path, damage loaded partially with exit 1, an
# existing non-DB file never replaced, and query commands loading a capture
# into its default DB once and reusing it while the capture is unchanged.
# Captures come from tests/golden/*.spec through tests/golden/gen.c.
. "$TOP/tests/lib.sh"

[ -x "$ANALYZE" ] || { echo "no analyzer at $ANALYZE" >&2; exit 77; }
cc -O1 -I"$TOP" -o gen "$TOP/tests/golden/gen.c" || die "cannot build tests/golden/gen.c"
./gen "$TOP/tests/golden/basic.spec" basic.vhcap || die "gen basic"
./gen "$TOP/tests/golden/damaged.spec" damaged.vhcap || die "gen damaged"

# usage errors: exit 2
"$ANALYZE" load 2>err; expect_eq "no argument" $? 2
"$ANALYZE" load --bogus basic.vhcap 2>err; expect_eq "unknown option" $? 2
"$ANALYZE" load a b c 2>err; expect_eq "three arguments" $? 2
"$ANALYZE" load --help | grep -q "^usage: vheap-analyze load" || die "--help"

# not a capture: exit 1, one line naming the file, no DB left behind
echo "hello" >notcap
"$ANALYZE" load notcap 2>err; expect_eq "not a capture" $? 1
expect_eq "error lines" "$(wc -l <err)" 1
grep -q "^vheap-analyze: load: notcap: not a vheap capture" err || die "message: $(cat err)"
[ ! -e notcap.sqlite ] || die "a DB was written for a non-capture"
"$ANALYZE" load missing.vhcap 2>err; expect_eq "missing file" $? 1

# the default DB path, and nothing temporary left
"$ANALYZE" load -q --no-symbols basic.vhcap 2>err || die "load basic: $(cat err)"
[ -s basic.vhcap.sqlite ] || die "no basic.vhcap.sqlite"
expect_eq "tables" "$(sqlite3 basic.vhcap.sqlite 'SELECT allocations, leaked_bytes FROM heaps WHERE id = 0')" "6|5300"
ls ./*.tmp-* 2>/dev/null && die "temporary files left"

# an existing file that is not a vheap DB is refused; the capture is intact
cp basic.vhcap keep.vhcap
"$ANALYZE" load -q basic.vhcap basic.vhcap 2>err; expect_eq "onto the capture" $? 1
grep -q "exists and is not a vheap database" err || die "message: $(cat err)"
cmp -s basic.vhcap keep.vhcap || die "the capture was changed"
# ... while a vheap DB is replaced
"$ANALYZE" load -q --no-symbols damaged.vhcap basic.vhcap.sqlite 2>/dev/null
expect_eq "replaced" "$(sqlite3 basic.vhcap.sqlite 'SELECT pid FROM processes')" 400

# damage: everything valid is loaded, the damage is stored, exit 1
"$ANALYZE" load -q --no-symbols damaged.vhcap 2>err; expect_eq "damaged" $? 1
grep -q "^vheap-analyze: load: damaged.vhcap: chunk 1 at offset 0x" err || die "message: $(cat err)"
expect_eq "valid part" "$(sqlite3 damaged.vhcap.sqlite "SELECT allocations FROM heaps WHERE id = 0")" 3
expect_eq "damage stored" "$(sqlite3 damaged.vhcap.sqlite "SELECT value FROM meta WHERE key = 'damage_count'")" 1

# a query command given a capture loads it once, then reuses the DB
cp basic.vhcap auto.vhcap
"$ANALYZE" summary auto.vhcap >/dev/null 2>err || die "summary auto: $(cat err)"
[ -s auto.vhcap.sqlite ] || die "summary did not create auto.vhcap.sqlite"
ino1=$(ls -i auto.vhcap.sqlite | awk '{print $1}')
"$ANALYZE" leaks auto.vhcap >/dev/null 2>err || die "leaks auto: $(cat err)"
ino2=$(ls -i auto.vhcap.sqlite | awk '{print $1}')
expect_eq "DB reused while the capture is unchanged" "$ino2" "$ino1"
# a different capture under the same name: loaded again
cp "damaged.vhcap" auto.vhcap
"$ANALYZE" summary auto.vhcap >/dev/null 2>err
expect_eq "reloaded" "$(sqlite3 auto.vhcap.sqlite 'SELECT pid FROM processes')" 400

# read-only: the query commands never write the DB
chmod a-w auto.vhcap.sqlite
# (the DB is of the damaged capture: summary prints it all, then exits 1)
"$ANALYZE" summary auto.vhcap.sqlite >ro.out 2>err
expect_eq "summary of a read-only DB of a damaged capture: exit" "$?" 1
grep -q "capture is damaged" err && [ -s ro.out ] || die "summary of a read-only DB: $(cat err)"
if grep -qi "read-only\|readonly" err; then die "summary wrote a read-only DB: $(cat err)"; fi
"$ANALYZE" leaks auto.vhcap.sqlite >/dev/null 2>err || die "leaks of a read-only DB: $(cat err)"
exit 0
