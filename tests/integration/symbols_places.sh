# symbols_places — where the symbolizer looks, and symbolizing again.
#   - VHEAP_DEBUGINFO_PATH adds directories: with it set to an unrelated
#     directory, libc's frames still get file:line from /usr/lib/debug;
#   - a program moved since the run: its frames stay module+offset, and
#     `load --exe-path OLD=NEW` or `--search-dir DIR` find it (the build-id
#     recorded must match: a different program there is not trusted);
#   - `symbolize DB` resolves a loaded DB again: after the program came
#     back, and when debug info appears later (a stripped program whose
#     .debug file is then put under DIR/.build-id/ and named by
#     VHEAP_DEBUGINFO_PATH), with before/after counts in JSON;
#   - a rebuilt program is symbolized from its old .debug file kept under
#     the recorded build-id (VHEAP_DEBUGINFO_PATH or --search-dir);
#   - `symbolize` never replaces a frame's resolution with a worse one
#     (debug info gone since): it keeps the row and warns;
#   - bad uses exit 2 or 1.
. "$TOP/tests/lib.sh"
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/demo_app" "$PROGS/basic"
need_cmd objcopy

# fn_frames DB FUNCTION: frames resolved to FUNCTION with a line
fn_frames() { sqlite3 "$1" "SELECT count(*) FROM frames WHERE function = '$2' AND line > 0"; }

mkdir A
cp "$PROGS/demo_app" A/demo_app
(cd A && "$ANALYZE" record --no-load --out "$PWD/run.vhcap" -- ./demo_app >/dev/null 2>&1) ||
    die "demo_app failed under vheap"
mv A/run.vhcap .
mv A B

"$ANALYZE" load -q run.vhcap plain.sqlite 2>plain.err || die "load failed: $(cat plain.err)"
expect_eq "main resolved with the program gone" "$(fn_frames plain.sqlite main)" 0
grep -q "A/demo_app: .*module+offset" plain.err || die "no warning for the missing program: $(cat plain.err)"

"$ANALYZE" load -q run.vhcap mapped.sqlite --exe-path "$PWD/A=$PWD/B" 2>/dev/null ||
    die "load --exe-path failed"
[ "$(fn_frames mapped.sqlite main)" -ge 1 ] || die "--exe-path A=B: main is not resolved"
"$ANALYZE" load -q run.vhcap mapped2.sqlite --exe-path "$PWD/A/demo_app=$PWD/B/demo_app" \
    2>/dev/null || die "load --exe-path (file) failed"
[ "$(fn_frames mapped2.sqlite main)" -ge 1 ] || die "--exe-path FILE=FILE: main is not resolved"
"$ANALYZE" load -q run.vhcap searched.sqlite --search-dir B 2>/dev/null ||
    die "load --search-dir failed"
[ "$(fn_frames searched.sqlite main)" -ge 1 ] || die "--search-dir B: main is not resolved"
# another program under the name: its build-id differs, it is not trusted
mkdir C
cp "$PROGS/basic" C/demo_app
"$ANALYZE" load -q run.vhcap wrong.sqlite --search-dir C 2>wrong.err || die "load failed"
expect_eq "main resolved from another program" "$(fn_frames wrong.sqlite main)" 0
grep -q "build-id differs" wrong.err || die "no build-id warning: $(cat wrong.err)"

# VHEAP_DEBUGINFO_PATH adds to /usr/lib/debug
libc_lines() {
    sqlite3 "$1" "SELECT count(*) FROM frames f JOIN modules m ON m.id = f.module_id
                  WHERE m.path LIKE '%/libc.so%' AND f.line > 0"
}
if [ "$(libc_lines mapped.sqlite)" -gt 0 ]; then
    VHEAP_DEBUGINFO_PATH="$PWD/C" "$ANALYZE" load -q run.vhcap dbgpath.sqlite \
        --search-dir B 2>/dev/null || die "load with VHEAP_DEBUGINFO_PATH failed"
    expect_eq "libc frames with a line under VHEAP_DEBUGINFO_PATH" \
        "$(libc_lines dbgpath.sqlite)" "$(libc_lines mapped.sqlite)"
else
    echo "libc has no debug info here (libc6-dbg): VHEAP_DEBUGINFO_PATH part skipped"
fi

# symbolize again: the program is back
mv B A
"$ANALYZE" symbolize plain.sqlite --format json >sym.json 2>sym.err ||
    die "symbolize failed: $(cat sym.err)"
[ "$(fn_frames plain.sqlite main)" -ge 1 ] || die "symbolize: main is not resolved"
grep -q '"with_line_before": [0-9]*, "with_line": [0-9]*' sym.json || die "symbolize JSON: $(cat sym.json)"
python3 -c "
import json, sys
d = json.load(open('sym.json'))['symbolize']
sys.exit(0 if d['resolved'] > d['resolved_before'] and d['with_line'] > d['with_line_before'] else 1)
" || die "symbolize did not count more resolved frames: $(cat sym.json)"
inl=$(sqlite3 plain.sqlite "SELECT count(*) FROM frame_inlines")
"$ANALYZE" symbolize plain.sqlite >/dev/null 2>&1 || die "symbolize (again) failed"
expect_eq "frame_inlines after symbolizing twice" "$(sqlite3 plain.sqlite "SELECT count(*) FROM frame_inlines")" "$inl"

# debug info that appears later
mkdir S
cp "$PROGS/demo_app" S/demo_app
objcopy --only-keep-debug S/demo_app S/demo_app.debug || die "objcopy --only-keep-debug failed"
objcopy --strip-all S/demo_app || die "objcopy --strip-all failed"
(cd S && "$ANALYZE" record --no-load --out "$PWD/s.vhcap" -- ./demo_app >/dev/null 2>&1) ||
    die "stripped demo_app failed under vheap"
mv S/demo_app.debug .
"$ANALYZE" load -q S/s.vhcap s.sqlite 2>/dev/null || die "load of the stripped run failed"
expect_eq "process_line with a line in a stripped program" "$(fn_frames s.sqlite process_line)" 0
bid=$(sqlite3 s.sqlite "SELECT build_id FROM modules WHERE path LIKE '%/S/demo_app'")
[ -n "$bid" ] || die "no build-id recorded for the stripped demo_app"
mkdir -p "D/.build-id/$(echo "$bid" | cut -c1-2)"
mv demo_app.debug "D/.build-id/$(echo "$bid" | cut -c1-2)/$(echo "$bid" | cut -c3-).debug"
VHEAP_DEBUGINFO_PATH="$PWD/D" "$ANALYZE" symbolize s.sqlite >/dev/null 2>&1 ||
    die "symbolize with the debug file failed"
[ "$(fn_frames s.sqlite process_line)" -ge 1 ] ||
    die "symbolize: the debug file under VHEAP_DEBUGINFO_PATH was not used"

# A rebuilt program whose old debug file was kept under its build-id: the
# .debug file is the program that ran (before, a rebuilt file at the path
# ended the search: no symbols, though it worked with the file removed).
mkdir R K
cat >R/rb.c <<'C'
#include <stdlib.h>
#ifdef AGAIN
int again = 1;
#endif
__attribute__((noinline)) void *make_block(void) { return malloc(4242); }
int main(void) { return make_block() == NULL; }
C
cc -g -O1 -o R/rb R/rb.c || die "cc rb"
(cd R && "$ANALYZE" record --no-load --out "$PWD/rb.vhcap" -- ./rb >/dev/null 2>&1) ||
    die "rb failed under vheap"
"$ANALYZE" load -q R/rb.vhcap rb0.sqlite 2>/dev/null || die "load of rb failed"
rbid=$(sqlite3 rb0.sqlite "SELECT build_id FROM modules WHERE is_main")
mkdir -p "K/.build-id/$(echo "$rbid" | cut -c1-2)"
objcopy --only-keep-debug R/rb "K/.build-id/$(echo "$rbid" | cut -c1-2)/$(echo "$rbid" | cut -c3-).debug" ||
    die "objcopy --only-keep-debug rb"
cc -g -O1 -DAGAIN -o R/rb R/rb.c || die "cc rb again"
"$ANALYZE" load -q R/rb.vhcap rb1.sqlite 2>rb1.err || die "load of the rebuilt rb failed"
expect_eq "make_block in the rebuilt program, no debug file named" "$(fn_frames rb1.sqlite make_block)" 0
grep -q "build-id differs" rb1.err || die "no rebuilt warning: $(cat rb1.err)"
VHEAP_DEBUGINFO_PATH="$PWD/K" "$ANALYZE" load -q R/rb.vhcap rb2.sqlite 2>rb2.err ||
    die "load with VHEAP_DEBUGINFO_PATH failed"
expect_eq "make_block from the kept debug file (VHEAP_DEBUGINFO_PATH)" "$(fn_frames rb2.sqlite make_block)" 1
if grep -q "build-id differs" rb2.err; then die "rebuilt warning with the debug file found: $(cat rb2.err)"; fi
"$ANALYZE" load -q R/rb.vhcap rb3.sqlite --search-dir K 2>/dev/null || die "load --search-dir K failed"
expect_eq "make_block from the kept debug file (--search-dir)" "$(fn_frames rb3.sqlite make_block)" 1

# symbolize never makes a frame worse: with the debug file gone from the
# places named, rb2's file:line rows stay, and it says so (before: the rows
# were cleared to module+offset without a word).
lines() { sqlite3 "$1" "SELECT count(*) FROM frames WHERE line > 0"; }
kept_lines=$(lines rb2.sqlite)
[ "$kept_lines" -ge 1 ] || die "rb2 has no frame with a line"
"$ANALYZE" symbolize rb2.sqlite --format json >worse.json 2>worse.err || die "symbolize rb2: $(cat worse.err)"
expect_eq "frames with file:line after symbolize without the debug file" "$(lines rb2.sqlite)" "$kept_lines"
expect_eq "make_block after symbolize without the debug file" "$(fn_frames rb2.sqlite make_block)" 1
grep -q "kept their earlier resolution\|kept its earlier resolution" worse.err ||
    die "symbolize did not warn about the frames it kept: $(cat worse.err)"
[ "$(sqlite3 rb2.sqlite "SELECT value FROM meta WHERE key = 'symbols_kept'")" -ge 1 ] ||
    die "meta.symbols_kept is not set"
# and as good or better still replaces: symbolize with the file found again
VHEAP_DEBUGINFO_PATH="$PWD/K" "$ANALYZE" symbolize rb2.sqlite >/dev/null 2>again.err ||
    die "symbolize rb2 again: $(cat again.err)"
expect_eq "symbols_kept once the debug file is back" \
    "$(sqlite3 rb2.sqlite "SELECT value FROM meta WHERE key = 'symbols_kept'")" 0

# bad uses
"$ANALYZE" load run.vhcap x.sqlite --exe-path nothing 2>err.txt
expect_eq "--exe-path without =" "$?" 2
"$ANALYZE" load run.vhcap x.sqlite --search-dir nosuch 2>err.txt
expect_eq "--search-dir missing" "$?" 2
"$ANALYZE" symbolize 2>err.txt
expect_eq "symbolize without a DB" "$?" 2
"$ANALYZE" symbolize nosuch.sqlite 2>err.txt
expect_eq "symbolize a missing DB" "$?" 1
echo "not a db" >junk.sqlite
"$ANALYZE" symbolize junk.sqlite 2>err.txt
expect_eq "symbolize a non-DB" "$?" 1
"$ANALYZE" symbolize --help | grep -q "^examples:" || die "symbolize --help has no examples"
echo "moved programs, later debug info and VHEAP_DEBUGINFO_PATH are all found"
