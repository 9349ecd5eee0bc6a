# stress_dlopen — dlopen/dlclose of an allocating library in a loop from two
# threads while two more allocate: first both threads open the same library
# (reference counts: not every dlclose unloads), then each its own copy. Same output and exit code as bare; every
# allocation the library made is in the capture (count and bytes, found by
# their sizes) and so is every free of them (inside the library, or by the
# program after the library was unloaded); each has a first frame inside
# the very library that made it as it was mapped at that moment (a MODULE
# record with its path earlier, no MODULE_UNLOAD in between: a copy loaded
# at the address another just left must not be mistaken for it); loads and
# unloads pair up.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/stress_dlopen" "$PROGS/libdlalloc.so"
lib=$(cd "$PROGS" && pwd -P)/libdlalloc.so

run() { # NAME LIB2
    vs_bare 300 "$1" "$PROGS/stress_dlopen" "$lib" "${STRESS_DLOPEN_ROUNDS:-300}" "$2"
    vh_dump "$1.vhcap" "$1.dump"
    main_range "$1.dump" >"$1.check"
    vh_check "$1.check" "$1.dump"
    expect_eq "$1: dropped" "$(st loss_dropped)" 0

    awk -v lib="$lib" -v lib2="$2" "$VH_AWK_LIB"'
        { kv() }
        $3 == "module" && (F["path"] == lib || F["path"] == lib2) {
            CUR[F["bias"]] = F["path"]; LO[F["bias"]] = hex(F["lo"]); HI[F["bias"]] = hex(F["hi"])
            loads++; next }
        $3 == "module_unload" && (F["bias"] in CUR) { delete CUR[F["bias"]]; unloads++; next }
        $3 == "stack" { split(F["frames"], fr, ","); FIRST[F["id"]] = hex(fr[1]); next }
        $3 == "alloc" && !("failed" in W) && F["size"] + 0 >= 7000 && F["size"] + 0 < 7064 {
            n++; bytes += F["size"]; LIB[F["addr"]] = 1
            # Sizes from 7032 up were made by LIB2.
            want = F["size"] + 0 < 7032 ? lib : lib2
            f = FIRST[F["stack"]]; ok = 0
            for (b in CUR) if (f >= LO[b] && f < HI[b] && CUR[b] == want) ok = 1
            if (!ok && bad++ < 5) print "line " FNR ": library allocation whose first frame is not in the library that made it, as loaded then: " $0 > "/dev/stderr"
            next }
        $3 == "free" && (F["addr"] in LIB) { frees++; delete LIB[F["addr"]] }
        END { live = 0; for (b in CUR) live++
              print "lib_allocs=" n + 0; print "lib_bytes=" bytes + 0; print "lib_frees=" frees + 0
              print "loads=" loads + 0; print "unloads=" unloads + 0; print "loaded_at_end=" live
              print "misplaced=" bad + 0 }' "$1.dump" >"$1.lib" || die "awk failed"
    VH_STATS=$1.lib
    expect_line "$1.out"
    # Guards preload/modules.c: a load or unload between two looks at ld.so's
    # list must still be recorded, and a MODULE record must precede the
    # first stack with an address in that library.
    [ "$(st misplaced)" = 0 ] || die "$1: $(st misplaced) library allocations whose first frame is" \
        "not in the library that made it as the capture's MODULE records place it"
    expect_eq "$1: library copies still loaded at the end" "$(st loaded_at_end)" 0
    expect_eq "$1: unloads" "$(st unloads)" "$(st loads)"
    [ "$(st loads)" -ge 2 ] || die "$1: the library was loaded only $(st loads) times"
    echo "$1: $(st lib_allocs) library allocations, $(st loads) loads and unloads"
}
run shared "$lib"
cp "$lib" "$PWD/libcopy.so"
run two "$PWD/libcopy.so"
