# 05_dlopen — dlopen/dlclose of a library that allocates, twice at the same
# address: a module record with the library's path and load bias each time,
# a module_unload after each dlclose, the library's allocations exact with
# their first frame inside the library's lo..hi, and the two rounds' stacks
# never sharing an id (a stack after an unload must not alias one before).
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/dlopen_user" "$PROGS/libdlalloc.so"
lib=$(cd "$PROGS" && pwd -P)/libdlalloc.so

profile cap.vhcap "$PROGS/dlopen_user" "$lib" >out.txt || die "dlopen_user exited $?"
vh_dump cap.vhcap dump.txt

# The library's module records: "bias lo hi line".
awk -v L="$lib" '$3 == "module" {
    p = index($0, " path="); path = substr($0, p + 6); sub(/ main$/, "", path)
    if (path == L) print substr($4, 6), substr($5, 4), substr($6, 4), NR
}' dump.txt >mods.txt
expect_eq "module records of $lib" "$(wc -l <mods.txt)" 2
sed -n 's/^round [0-9] base=//p' out.txt >bases.txt
expect_eq "module biases" "$(cut -d' ' -f1 mods.txt | tr '\n' ' ')" "$(tr '\n' ' ' <bases.txt)"

# Each load is followed by an unload of the same bias before the next load.
awk -v L="$lib" '
    $3 == "module" { p = index($0, " path="); path = substr($0, p + 6); sub(/ main$/, "", path)
                     if (path == L) { if (open) { print "loaded twice"; exit 1 } open = substr($4, 6); n++ } }
    $3 == "module_unload" && open != "" && substr($4, 6) == open { open = ""; u++ }
    END { if (open != "") { print "no module_unload for bias " open; exit 1 }
          if (u != 2) { print u " unloads"; exit 1 } }' dump.txt >unload.txt \
    || die "module_unload order: $(cat unload.txt)"

# The library's allocations: its ranges stand in for the program's USER range.
{ awk '{ print "user lo=" $2 " hi=" $3 }' mods.txt; grep '^ev ' out.txt; } >lib.out
vh_check lib.out dump.txt
expect_line out.txt
expect_eq "allocations whose first frame is in the library" "$(st first)" "$(st allocs)"

# Stack ids of round 0 and round 1 are disjoint.
awk "$VH_AWK_LIB"'
    FILENAME == ARGV[1] { lo[NR] = hex($2); hi[NR] = hex($3); ln[NR] = $4; next }
    { kv() }
    $3 == "stack" { split(F["frames"], fr, ","); S[F["id"]] = hex(fr[1]); next }
    $3 == "alloc" && (F["stack"] in S) {
        r = (FNR > ln[2]) ? 2 : 1
        if (FNR > ln[1] && S[F["stack"]] >= lo[r] && S[F["stack"]] <= hi[r]) ID[r, F["stack"]] = 1
    }
    END {
        for (k in ID) { split(k, p, SUBSEP); if (p[1] == 1) n1++; else n2++
                        if (p[1] == 1 && ((2, p[2]) in ID)) { print "stack " p[2] " used in both rounds"; bad = 1 } }
        if (n1 < 1 || n2 < 1) { print "rounds without library stacks: " n1 + 0 " " n2 + 0; bad = 1 }
        exit bad }' mods.txt dump.txt >ids.txt || die "stack ids across dlclose: $(cat ids.txt)"
echo "dlopen: bias $(head -n 1 bases.txt) both rounds; $(st allocs) library allocations"
