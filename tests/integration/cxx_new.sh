# cxx_new — C++'s operator new and delete, every replaceable form, hooked
# themselves: once with libstdc++'s (which calls malloc underneath: each call
# must be one event, not two), once with jemalloc's (which never calls
# malloc: without the hooks nothing would be seen). The capture matches the
# program call by call with the operators' own names, failures included
# (nothrow NULL, std::bad_alloc caught by the program, allocations after it);
# the innermost frame of each is the program's function; the two builds give
# the same numbers; load + summary count the same.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/cxx_new" "$PROGS/cxx_new_jemalloc"

for p in cxx_new cxx_new_jemalloc; do
    profile $p.vhcap "$PROGS/$p" >$p.out || die "$p exited $?"
    vh_dump $p.vhcap $p.dump
    vh_check $p.out $p.dump
    expect_line $p.out
    has_flag "$(st header_flags)" ended || die "$p: capture not ended"
    expect_eq "$p: nested events" "$(st loss_nested)" 0
    expect_eq "$p: dropped events" "$(st loss_dropped)" 0
    # The hook's frames and the real operator's are not in the stacks: the
    # first frame of every one of the program's calls is its own code.
    expect_eq "$p: first frame in the program" "$(st first)" "$(( $(st allocs) + $(st failed) ))"
    for k in allocs failed frees bytes live_blocks live_bytes unknown_frees; do
        eval "${p}_$k=\$(st $k)"
    done
    # every operator the program called, by name (all 20 in g++'s default C++17)
    awk '$1 == "ev" { print $3 }' $p.out | grep '^operator_' | sort -u >$p.ops
    echo "$p: $(st evs) events match, $(wc -l <$p.ops) operators, $(st failed) failed"
done

cmp -s cxx_new.ops cxx_new_jemalloc.ops || die "the two builds called different operators"
awk '$3 == "module" && /libjemalloc/ { f = 1 } END { exit !f }' cxx_new_jemalloc.dump ||
    die "cxx_new_jemalloc: libjemalloc is not among the modules"
for k in allocs failed frees bytes live_blocks live_bytes unknown_frees; do
    eval "a=\$cxx_new_$k b=\$cxx_new_jemalloc_$k"
    expect_eq "libstdc++ vs jemalloc: $k" "$a" "$b"
done
# One std::bad_alloc object per throw, allocated inside the real operator
# new (not an event), freed after the catch: a free of an unknown block.
throws=$(grep -c '^ev alloc operator_new[a-z_]* 0x0 .* failed$' cxx_new.out)
nothrow=$(grep -c '^ev alloc operator_new[a-z_]*_nothrow 0x0 .* failed$' cxx_new.out)
expect_eq "frees of exception objects" "$cxx_new_unknown_frees" "$((throws - nothrow))"

# The loaded database: the calls whose innermost frame is one of the
# program's cxxnew_* functions are exactly the program's, and summary's
# totals are the capture's.
command -v sqlite3 >/dev/null && command -v python3 >/dev/null ||
    { echo "skip: the sqlite3 CLI or python3 is not installed" >&2; exit 77; }
for p in cxx_new cxx_new_jemalloc; do
    "$ANALYZE" load $p.vhcap $p.sqlite 2>$p.load.err || die "$p: load exited $?: $(cat $p.load.err)"
    got=$(sqlite3 -batch -noheader -separator ' ' $p.sqlite \
        "SELECT sum(s.allocations), sum(s.failed), sum(s.frees), sum(s.bytes_allocated),
                sum(s.leaked_blocks), sum(s.leaked_bytes)
         FROM stack_stats s JOIN stack_leaf l ON l.stack_id = s.stack_id
         WHERE l.function LIKE 'cxxnew_%'")
    want=$(sed -n 's/^expect allocs=\([0-9]*\) failed=\([0-9]*\) frees=\([0-9]*\) resizes=[0-9]* bytes=\([0-9]*\) live_blocks=\([0-9]*\) live_bytes=\([0-9]*\)$/\1 \2 \3 \4 \5 \6/p' $p.out)
    # the program's one malloc (after the exceptions) has its frame there too
    expect_eq "$p: per-stack totals of the program's functions" "$got" "$want"
    "$ANALYZE" summary --format json --bytes $p.sqlite >$p.json || die "$p: summary exited $?"
    awk "$VH_AWK_LIB"'$3 == "alloc" { if ($NF == "failed") f++; else { n++; kv(); b += F["size"] } }
        END { printf "%d %d %.0f\n", n, f, b }' $p.dump >$p.totals
    python3 - $p.json $p.totals <<'EOF' || die "$p: summary differs from the capture"
import json, sys
row = next(h for h in json.load(open(sys.argv[1]))["heaps"] if h["heap_id"] == 0)
want = tuple(int(x) for x in open(sys.argv[2]).read().split())
got = (row["allocations"], row["failed"], row["bytes_allocated"])
if got != want:
    sys.exit(f"summary allocations/failed/bytes {got}, the capture's records {want}")
EOF
done
echo "cxx_new: libstdc++ and jemalloc builds agree: allocs=$cxx_new_allocs failed=$cxx_new_failed frees=$cxx_new_frees bytes=$cxx_new_bytes"
