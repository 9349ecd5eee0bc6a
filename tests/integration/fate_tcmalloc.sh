# fate_tcmalloc — the shim beside another preloaded allocator, in both
# orders: LD_PRELOAD="libvheap.so libtcmalloc_minimal.so.4" (the order
# `record` builds) used to make malloc_usable_size read 0 for every block
# (the shim's pinning dlopen ran tcmalloc's constructor from inside its own
# malloc_usable_size). Now the program works in both orders and, with the
# shim first, its allocations are recorded with tcmalloc's usable sizes.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/fate"
tc=$(ls /usr/lib/*/libtcmalloc_minimal.so.4 2>/dev/null | head -n 1)
[ -n "$tc" ] || { echo "libtcmalloc-minimal4 is not installed (scripts/install-deps.sh)" >&2; exit 77; }

VHEAP_OUT=a.vhcap VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB $tc" "$PROGS/fate" usable 2000 >a.txt ||
    die "vheap first: $(cat a.txt)"
VHEAP_OUT=b.vhcap VHEAP_QUIET=1 LD_PRELOAD="$tc $VHEAP_LIB" "$PROGS/fate" usable 2000 >b.txt ||
    die "tcmalloc first: $(cat b.txt)"
"$ANALYZE" dump a.vhcap >d.txt || die "dump"
n=$(awk '$3 == "alloc" { for (i = 4; i <= NF; i++) if ($i ~ /^usable=/ && substr($i, 8) + 0 > 0) n++ }
         END { print n + 0 }' d.txt)
[ "$n" -ge 2000 ] || die "only $n allocations with a usable size recorded"
# tcmalloc rounds a 1-byte request up to its 8-byte class.
grep -q ' size=1 usable=8 ' d.txt || die "usable sizes are not tcmalloc's"
echo "tcmalloc: both orders work; $n allocations recorded with tcmalloc's usable sizes"
