# deepbind — a library loaded with RTLD_DEEPBIND binds malloc and free to
# libc's, past the preloaded shim; the shim rebinds its malloc-family GOT
# slots to its hooks when it next looks at the module list (as heaptrack
# rewrites them at dlopen). deepbind_user allocates a block the library
# frees, and has the library allocate one the program frees and one that
# is leaked (3000 B). Before: the program's block was "leaked" (1000 B),
# the library's were unseen (the 3000 B leak missing, an unknown free).
# Now the leaks are what the program knows and what heaptrack_print says.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/deepbind_user" "$PROGS/libdeepbind.so"
need_cmd sqlite3
lib=$(cd "$PROGS" && pwd -P)/libdeepbind.so

profile "$PWD/db.vhcap" "$PROGS/deepbind_user" "$lib" >out.txt || die "deepbind_user exited $?"
"$ANALYZE" summary db.vhcap >sum.txt 2>sum.err || die "summary: $(cat sum.err)"
q() { sqlite3 db.vhcap.sqlite "$1"; }
in_lib="EXISTS (SELECT 1 FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id
          JOIN modules m ON m.id = f.module_id WHERE sf.stack_id = l.stack_id
          AND m.path LIKE '%/libdeepbind.so')"
expect_eq "leaked blocks of 1000 B (the program's, freed by the library)" \
    "$(q "SELECT count(*) FROM leaks l WHERE size = 1000")" 0
expect_eq "leaked blocks of 3000 B made in the library" \
    "$(q "SELECT count(*) FROM leaks l WHERE size = 3000 AND $in_lib")" 1
expect_eq "allocations of 2000 B made in the library" \
    "$(q "SELECT coalesce(sum(l.allocations), 0) FROM stack_stats l
          WHERE l.bytes_allocated = 2000 AND $in_lib")" 1

if command -v heaptrack >/dev/null 2>&1 && command -v heaptrack_print >/dev/null 2>&1; then
    heaptrack -o "$PWD/db.ht" "$PROGS/deepbind_user" "$lib" >ht.log 2>&1 ||
        die "deepbind_user failed under heaptrack: $(tail -3 ht.log)"
    heaptrack_print db.ht.zst >ht.txt 2>&1 || die "heaptrack_print failed"
    vh=$(sed -n 's/^total memory leaked: \([^ ]*\).*/\1/p' sum.txt)
    ht=$(sed -n 's/^total memory leaked: \([^ ]*\).*/\1/p' ht.txt)
    echo "total memory leaked: vheap $vh, heaptrack $ht"
    expect_eq "total memory leaked (vheap, heaptrack)" "$vh" "$ht"
else
    echo "heaptrack is not installed: not compared"
fi
