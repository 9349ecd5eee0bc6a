# module_paths — a module's path is the file the kernel mapped, by absolute
# path, so the analyzer finds it from any directory:
# 1. a library dlopened by a relative path ("./libdlalloc.so") is stored as
#    /…/libdlalloc.so and symbolized by a load run elsewhere (before: stored
#    as given, its frames stayed libdlalloc.so+0x…);
# 2. a program started as `ld.so PROGRAM` is the main module itself (before:
#    /proc/self/exe named ld.so, every main frame became
#    ld-linux-x86-64.so.2+0x… with a false "rebuilt since the run").
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/dlopen_user" "$PROGS/libdlalloc.so"
need_cmd sqlite3 readelf

mkdir run elsewhere
cp "$PROGS/libdlalloc.so" run/
(cd run && VHEAP_OUT=../rel.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" \
    "$PROGS/dlopen_user" ./libdlalloc.so >out.txt) || die "dlopen_user exited $?"
want=$(cd run && pwd -P)/libdlalloc.so
(cd elsewhere && "$ANALYZE" load ../rel.vhcap rel.db 2>load.err) ||
    die "load: $(cat elsewhere/load.err)"
paths=$(sqlite3 elsewhere/rel.db "SELECT DISTINCT path FROM modules WHERE path LIKE '%libdlalloc.so'")
expect_eq "the relative dlopen's module path" "$paths" "$want"
fn=$(sqlite3 elsewhere/rel.db "SELECT DISTINCT coalesce(f.function, '?') FROM frames f
        JOIN modules m ON m.id = f.module_id WHERE m.path LIKE '%libdlalloc.so'")
expect_eq "functions of the library's frames, loaded elsewhere" "$fn" "dl_make"
echo "relative dlopen: $paths, frames in $fn"

ldso=$(readelf -l "$PROGS/dlopen_user" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
[ -x "$ldso" ] || die "no program interpreter found in dlopen_user ($ldso)"
lib=$(cd "$PROGS" && pwd -P)/libdlalloc.so
VHEAP_OUT=ldso.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" \
    "$ldso" "$PROGS/dlopen_user" "$lib" >out.txt || die "ld.so dlopen_user exited $?"
"$ANALYZE" load ldso.vhcap ldso.db 2>load.err || die "load: $(cat load.err)"
exe=$(cd "$PROGS" && pwd -P)/dlopen_user
expect_eq "the main module under ld.so" \
    "$(sqlite3 ldso.db "SELECT path FROM modules WHERE is_main")" "$exe"
expect_eq "the header's program" "$("$ANALYZE" dump ldso.vhcap | sed -n 's/^header .*exe=\([^ ]*\) .*/\1/p')" "$exe"
if grep -q rebuilt load.err; then die "load warned: $(cat load.err)"; fi
main_fns=$(sqlite3 ldso.db "SELECT DISTINCT f.function FROM frames f JOIN modules m
        ON m.id = f.module_id WHERE m.is_main AND f.function = 'round_trip'")
expect_eq "main-program functions under ld.so" "$main_fns" "round_trip"
echo "ld.so PROGRAM: main module $exe, frames named"
