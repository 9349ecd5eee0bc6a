# dlreload — a library dlclosed and another loaded at its address, over and
# over, while a second thread keeps looking at (and diffing) the module
# list: libdlra.so and libdlrb.so are the same code under two function names
# and the same size, so B lands where A was and calls malloc from the same
# offset. After `vheap-analyze load`, every allocation B made must be
# symbolized to B's function and every one A made to A's: a stack id or a
# module record carried across the reload would give B's blocks A's name
# (or none). 1000 filler libraries (17 MB of copies) make each look at
# the list slow, the windows wide: without the fixes in preload/modules.c
# most runs either misname blocks or deadlock (a diff waiting for ld.so's
# lock, held by a dlclose whose free waits for the diff).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/dlreload" "$PROGS/libdlra.so" "$PROGS/libdlrb.so"
need_cmd sqlite3
a=$(cd "$PROGS" && pwd -P)/libdlra.so
b=$(cd "$PROGS" && pwd -P)/libdlrb.so
rounds=${DLRELOAD_ROUNDS:-400}

mkdir fill
i=0
while [ $i -lt 1000 ]; do i=$((i + 1)); cp "$a" "fill/f$i.so"; done
VHEAP_OUT=r.vhcap VHEAP_QUIET=1 timeout 120 env LD_PRELOAD="$VHEAP_LIB" \
    "$PROGS/dlreload" "$a" "$b" "$rounds" fill/*.so >r.out 2>r.err ||
    die "dlreload exited $? (124: hung): $(tail -n 3 r.err)"
same=$(sed -n 's/^same_base \([0-9]*\) .*/\1/p' r.err)
[ "${same:-0}" -ge $((rounds / 2)) ] ||
    { echo "skip: B loaded at A's address in only ${same:-0} of $rounds rounds" >&2; exit 77; }
vh_dump r.vhcap r.dump
main_range r.dump >r.check
vh_check r.check r.dump
"$ANALYZE" load -q r.vhcap r.db || die "load failed (exit $?)"

# Per innermost function, A's and B's and none (a frame no module record
# covers, for blocks of their sizes): allocations, bytes, and stacks whose
# bytes are not a multiple of that library's size (the other's blocks).
sqlite3 -separator ' ' r.db "
    SELECT coalesce(l.function, 'none'), sum(s.allocations), sum(s.bytes_allocated),
           sum(s.bytes_allocated != s.allocations *
               CASE l.function WHEN 'dl_alpha_make' THEN 3001 ELSE 5003 END)
    FROM stack_stats s JOIN stack_leaf l USING (stack_id)
    WHERE l.function IN ('dl_alpha_make', 'dl_bravo_make')
       OR (l.function IS NULL AND s.allocations > 0 AND
           s.bytes_allocated IN (3001 * s.allocations, 5003 * s.allocations))
    GROUP BY 1 ORDER BY 1" >by_fn.txt || die "query failed"
fn() { awk -v f="$1" -v c="$2" '$1 == f { print $c }' by_fn.txt; }
exp() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" r.out; }
expect_eq "allocations symbolized to dl_alpha_make" "$(fn dl_alpha_make 2)" "$(exp alpha_allocs)"
expect_eq "allocations symbolized to dl_bravo_make" "$(fn dl_bravo_make 2)" "$(exp bravo_allocs)"
expect_eq "dl_alpha_make stacks holding other sizes" "$(fn dl_alpha_make 4)" 0
expect_eq "dl_bravo_make stacks holding other sizes" "$(fn dl_bravo_make 4)" 0
[ -z "$(fn none 2)" ] || die "$(fn none 2) library allocations with an unsymbolized first frame"
echo "dlreload: $rounds rounds, B at A's address $same times; $(exp alpha_allocs) + $(exp bravo_allocs) allocations each named for its own library; $(st modules) module records, $(st unloads) unloads"
