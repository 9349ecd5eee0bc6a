# symbols — the symbolizer on real programs under the shim: exact function,
# file and line of allocation sites (inlined ones with their inline chain),
# demangled C++ (and Rust, when rustc is installed), libc through Debian's
# libc6-dbg, separate debug files through .gnu_debuglink and build-id, and
# modules that are missing or rebuilt since the run keeping module+offset.
# The programs print their sites (__LINE__); each leaked block has a size of
# its own, so its stack is found through the leaks table.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/inline_syms" "$PROGS/cxx_syms"
need_cmd sqlite3
"$ANALYZE" load --help >/dev/null 2>&1 ||
    { echo "skip: vheap-analyze has no load command yet" >&2; exit 77; }

TAB=$(printf '\t')
q() { sqlite3 -batch -noheader -separator "$TAB" "$1" "$2"; }

# load CAPTURE DB: loads, keeping stderr (the symbolizer's warnings) in DB.err.
load() {
    "$ANALYZE" load "$1" "$2" 2>"$2.err" || die "load $1 exited $?: $(cat "$2.err")"
}

# site DB SIZE MODULE-GLOB: the innermost frame inside MODULE of the stack
# that leaked a block of SIZE bytes, as
# id, function, file, line, inline_depth, stack_id, idx.
site() {
    q "$1" "SELECT f.id, coalesce(f.function, ''), coalesce(f.file, ''),
                   coalesce(f.line, 0), f.inline_depth, sf.stack_id, sf.idx
            FROM leaks l
            JOIN stack_frames sf ON sf.stack_id = l.stack_id
            JOIN frames f ON f.id = sf.frame_id
            JOIN modules m ON m.id = f.module_id
            WHERE l.size = $2 AND m.path GLOB '$3'
            ORDER BY l.time, sf.idx LIMIT 1"
}

# same_as_symbolize DB: `symbolize` on a copy of DB (the resolver fed from
# the DB) writes the rows the load's thread wrote, and warns the same.
same_as_symbolize() {
    cp "$1" "$1.again"
    "$ANALYZE" symbolize "$1.again" >/dev/null 2>"$1.again.err" ||
        die "symbolize $1 exited $?: $(cat "$1.again.err")"
    for sql in "SELECT * FROM frames ORDER BY id" \
        "SELECT * FROM frame_inlines ORDER BY frame_id, depth" \
        "SELECT key, value FROM meta WHERE key LIKE 'symbols%' ORDER BY key"; do
        [ "$(q "$1" "$sql")" = "$(q "$1.again" "$sql")" ] ||
            die "$1: symbolize wrote other rows than the load: $sql"
    done
    # the load's stderr also has its summary line: the warnings only
    [ "$(grep 'symbols:' "$1.err")" = "$(cat "$1.again.err")" ] ||
        die "$1: symbolize warned '$(cat "$1.again.err")', the load '$(cat "$1.err")'"
}

# field N LINE: the Nth tab-separated field.
field() { printf '%s\n' "$2" | cut -f "$1"; }

# expect_site WHAT ROW FUNCTION FILE-SUFFIX LINE
expect_site() {
    [ -n "$2" ] || die "$1: no frame found"
    expect_eq "$1 function" "$(field 2 "$2")" "$3"
    case "$(field 3 "$2")" in
    */"$4") ;;
    *) die "$1 file: got '$(field 3 "$2")', want .../$4" ;;
    esac
    expect_eq "$1 line" "$(field 4 "$2")" "$5"
}

# ---- inline_syms: C, always_inline chains, libc --------------------------
SRC=tests/programs/inline_syms.c

# check_sites PROGOUT DB MODULE-GLOB: every site, inline and caller line the
# program printed matches the DB exactly.
check_sites() {
    nsites=0
    while read -r kind size a b c; do
        case $kind in
        site)
            row=$(site "$2" "$size" "$3")
            expect_site "site $size" "$row" "$a" "$SRC" "$b"
            want=$(awk -v s="$size" '$1 == "inline" && $2 == s { n++ } END { print n + 0 }' "$1")
            expect_eq "site $size inline_depth" "$(field 5 "$row")" "$want"
            frame=$(field 1 "$row"); stack=$(field 6 "$row"); idx=$(field 7 "$row")
            nsites=$((nsites + 1)) ;;
        inline)
            # "inline SIZE DEPTH FUNCTION LINE", for the site just read
            got=$(q "$2" "SELECT function, file, line FROM frame_inlines
                          WHERE frame_id = $frame AND depth = $a")
            [ -n "$got" ] || die "site $size: no inline depth $a"
            expect_site "site $size inline $a" "0$TAB$got" "$b" "$SRC" "$c" ;;
        caller)
            # the next physical frame of the same stack
            got=$(q "$2" "SELECT f.id, f.function, f.file, f.line FROM stack_frames sf
                          JOIN frames f ON f.id = sf.frame_id
                          WHERE sf.stack_id = $stack AND sf.idx = $idx + 1")
            expect_site "site $size caller" "$got" "$a" "$SRC" "$b" ;;
        esac
    done <"$1"
    [ "$nsites" -eq 3 ] || die "inline_syms printed $nsites sites, want 3"
    # Every frame of the program itself has a function.
    unresolved=$(q "$2" "SELECT count(*) FROM frames f JOIN modules m ON m.id = f.module_id
                         WHERE m.path GLOB '$3' AND f.function IS NULL")
    expect_eq "unresolved frames in $3" "$unresolved" 0
}

profile inl.vhcap "$PROGS/inline_syms" >inl.out || die "inline_syms exited $?"
load inl.vhcap inl.sqlite
check_sites inl.out inl.sqlite '*/inline_syms'
libc_size=$(awk '$1 == "libc" { print $2 }' inl.out)

# libc: strdup's frame names strdup.c when Debian's libc6-dbg is installed.
[ -n "${libc_size:-}" ] || die "inline_syms printed no libc line"
libc_row=$(site inl.sqlite "$libc_size" '*/libc.so*')
[ -n "$libc_row" ] || die "no libc frame in the strdup stack"
case "$(field 2 "$libc_row")" in
*strdup*) ;;
*) die "libc frame: got '$(field 2 "$libc_row")', want strdup" ;;
esac
libc_path=$(q inl.sqlite "SELECT path FROM modules WHERE path GLOB '*/libc.so*' LIMIT 1")
libc_id=$(readelf -n "$libc_path" 2>/dev/null | awk '/Build ID/ { print $3; exit }')
if [ -n "$libc_id" ] &&
    [ -e "/usr/lib/debug/.build-id/$(echo "$libc_id" | cut -c1-2)/$(echo "$libc_id" | cut -c3-).debug" ]; then
    case "$(field 3 "$libc_row")" in
    */strdup.c) ;;
    *) die "libc frame file: got '$(field 3 "$libc_row")', want .../strdup.c (libc6-dbg is installed)" ;;
    esac
    [ "$(field 4 "$libc_row")" -gt 0 ] || die "libc frame has no line"
else
    echo "note: libc6-dbg not installed, libc file:line not checked" >&2
fi
same_as_symbolize inl.sqlite
echo "inline_syms: $nsites sites, inline chains and libc resolved"

# clang emits no .debug_aranges, which libdw 0.188 needs to find a CU: the
# same checks on a clang build exercise the fallback through CU ranges.
if command -v clang >/dev/null 2>&1; then
    clang -O2 -g -o clang_inline "$TOP/$SRC" -lm || die "clang failed on $SRC"
    profile clang.vhcap ./clang_inline >clang.out || die "clang_inline exited $?"
    load clang.vhcap clang.sqlite
    check_sites clang.out clang.sqlite '*/clang_inline'
    echo "inline_syms built by clang: $nsites sites resolved"
else
    echo "note: clang not installed, the no-aranges path is not checked" >&2
fi

# ---- cxx_syms: demangled C++ names ------------------------------------------
profile cxx.vhcap "$PROGS/cxx_syms" >cxx.out || die "cxx_syms exited $?"
load cxx.vhcap cxx.sqlite
set -- "ns::Widget<int>::Widget()" "ns::Widget<int>::grow(unsigned long)" \
    "ns::Widget<int>::operator+=(int)" "ns::Widget<int>::make_static(long)" \
    "double* ns::detail::make_buffer<double>(unsigned long)"
n=0
while read -r kind size line; do
    [ "$kind" = site ] || continue
    n=$((n + 1))
    row=$(site cxx.sqlite "$size" '*/cxx_syms')
    expect_site "cxx site $size" "$row" "$1" tests/programs/cxx_syms.cc "$line"
    shift
done <cxx.out
[ "$n" -eq 5 ] || die "cxx_syms printed $n sites, want 5"
# operator new[] is hooked itself (preload/hooks_cxx.c): the stack starts
# at its caller, with no frame of libstdc++'s operator new in it.
expect_eq "cxx site 600 frame index" "$(field 7 "$(site cxx.sqlite 600 '*/cxx_syms')")" 0
expect_eq "libstdc++ frame under new[]" "$(site cxx.sqlite 600 '*/libstdc++.so*')" ""
same_as_symbolize cxx.sqlite
echo "cxx_syms: 5 demangled sites"

# ---- separate debug files -----------------------------------------------
# .gnu_debuglink: the program without DWARF, its debug file beside it.
mkdir -p bin dbg
cp "$PROGS/inline_syms" bin/linked
objcopy --only-keep-debug bin/linked bin/linked.debug
objcopy --strip-debug --add-gnu-debuglink=bin/linked.debug bin/linked
profile linked.vhcap ./bin/linked >linked.out || die "linked exited $?"
load linked.vhcap linked.sqlite
site_line=$(awk '$1 == "site" && $2 == 2222 { print $4 }' linked.out)
expect_site "debuglink" "$(site linked.sqlite 2222 '*/bin/linked')" plain_alloc \
    "$SRC" "$site_line"

# build-id: fully stripped, no debuglink; the debug file only in
# DIR/.build-id/xx/rest.debug, DIR given by VHEAP_DEBUGINFO_PATH.
cp "$PROGS/inline_syms" bin/stripped
strip bin/stripped
bid=$(readelf -n bin/stripped | awk '/Build ID/ { print $3; exit }')
[ -n "$bid" ] || die "no build-id in the test program"
mkdir -p "dbg/.build-id/$(echo "$bid" | cut -c1-2)"
cp bin/linked.debug "dbg/.build-id/$(echo "$bid" | cut -c1-2)/$(echo "$bid" | cut -c3-).debug"
profile stripped.vhcap ./bin/stripped >stripped.out || die "stripped exited $?"
load stripped.vhcap nodebug.sqlite
expect_eq "stripped, no debug dir: function" \
    "$(field 2 "$(site nodebug.sqlite 2222 '*/bin/stripped')")" ""
VHEAP_DEBUGINFO_PATH="$PWD/dbg" load stripped.vhcap buildid.sqlite
expect_site "build-id debug file" "$(site buildid.sqlite 2222 '*/bin/stripped')" plain_alloc \
    "$SRC" "$site_line"
echo "separate debug files: debuglink and build-id"

# ---- modules that cannot be trusted -------------------------------------------
# Rebuilt since the run (another build-id at the path), then deleted: frames
# keep module and offset, no function; a warning names the file.
cp "$PROGS/inline_syms" bin/victim
profile victim.vhcap ./bin/victim >/dev/null || die "victim exited $?"
cp "$PROGS/cxx_syms" bin/victim
load victim.vhcap rebuilt.sqlite
row=$(site rebuilt.sqlite 2222 '*/bin/victim')
[ -n "$row" ] || die "rebuilt: the frame lost its module"
expect_eq "rebuilt: function" "$(field 2 "$row")" ""
expect_eq "rebuilt: meta" "$(q rebuilt.sqlite "SELECT value FROM meta WHERE key = 'symbols_modules_rebuilt'")" 1
[ "$(grep -c 'bin/victim: rebuilt since the run' rebuilt.sqlite.err)" = 1 ] ||
    die "rebuilt: not one warning (stderr: $(cat rebuilt.sqlite.err))"
same_as_symbolize rebuilt.sqlite
offset=$(q rebuilt.sqlite "SELECT module_offset FROM frames WHERE id = $(field 1 "$row")")
[ "${offset:-0}" -gt 0 ] || die "rebuilt: no module_offset"
rm bin/victim
load victim.vhcap missing.sqlite
expect_eq "missing: function" "$(field 2 "$(site missing.sqlite 2222 '*/bin/victim')")" ""
expect_eq "missing: meta" "$(q missing.sqlite "SELECT value FROM meta WHERE key = 'symbols_modules_missing'")" 1
[ "$(grep -c 'bin/victim: .*keep' missing.sqlite.err)" = 1 ] ||
    die "missing: not one warning (stderr: $(cat missing.sqlite.err))"
same_as_symbolize missing.sqlite
echo "untrusted modules: rebuilt and missing keep module+offset"

# ---- Rust: legacy and v0 mangling -------------------------------------------------
if ! command -v rustc >/dev/null 2>&1; then
    echo "note: rustc not installed, Rust names not checked" >&2
    exit 0
fi
cat >symtest.rs <<'EOF'
pub struct Widget<T> { items: Vec<T> }
impl<T: Copy> Widget<T> {
    #[inline(never)]
    pub fn grow(&mut self, n: usize, x: T) {
        self.items = Vec::with_capacity(n); self.items.push(x);
    }
}
#[inline(never)]
pub fn make_buffer(n: usize) -> Vec<u8> { let mut v = Vec::with_capacity(n); v.push(1); v }
fn main() {
    let mut w = Widget { items: Vec::new() };
    w.grow(1234, 7u32);
    let b = make_buffer(4321);
    std::mem::forget(w);
    std::mem::forget(b);
}
EOF
for scheme in legacy v0; do
    flag=
    [ $scheme = v0 ] && flag="-C symbol-mangling-version=v0"
    rustc -g -C opt-level=1 $flag -o "rs_$scheme" symtest.rs 2>rustc.err ||
        die "rustc ($scheme) failed: $(tail -n 3 rustc.err)"
    # Bounded: a Rust program's first allocation happens inside glibc's
    # pthread_getattr_np (std's stack guard setup), a path that has hung.
    timeout 60 env VHEAP_OUT="rs_$scheme.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "./rs_$scheme"
    rc=$?
    [ $rc -ne 124 ] || die "rs_$scheme hung under the shim (killed after 60 s)"
    [ $rc -eq 0 ] || die "rs_$scheme exited $rc"
    load "rs_$scheme.vhcap" "rs_$scheme.sqlite"
    # Every function on the stacks of the two leaked blocks, inlined ones
    # too (Vec::with_capacity may be inlined into the program's functions).
    names=$(q "rs_$scheme.sqlite" "WITH fr AS (SELECT sf.frame_id AS id FROM leaks l
                    JOIN stack_frames sf ON sf.stack_id = l.stack_id
                    WHERE l.size IN (4936, 4321))
                SELECT function FROM frames WHERE id IN (SELECT id FROM fr)
                UNION
                SELECT function FROM frame_inlines WHERE frame_id IN (SELECT id FROM fr)")
    if [ $scheme = v0 ]; then want_grow="<symtest::Widget<u32>>::grow"; else want_grow="symtest::Widget<T>::grow"; fi
    printf '%s\n' "$names" | grep -qxF "$want_grow" ||
        die "rust $scheme: no frame '$want_grow' in: $(printf '%s' "$names" | tr '\n' ';')"
    printf '%s\n' "$names" | grep -qxF "symtest::make_buffer" ||
        die "rust $scheme: no frame 'symtest::make_buffer' in: $(printf '%s' "$names" | tr '\n' ';')"
    if printf '%s\n' "$names" | grep -q '^_[RZ]\|::h[0-9a-f]\{16\}$'; then
        die "rust $scheme: mangled or hashed names left: $(printf '%s\n' "$names" | grep '^_[RZ]\|::h[0-9a-f]\{16\}$' | head -n 3)"
    fi
done
echo "rust: legacy and v0 names demangled"
