# node_stacks — stacks through code without DWARF unwind info. Debian's node
# calls its C++ runtime from V8 builtins embedded in the binary without
# .eh_frame (Builtins_CEntry_*) and from JIT code outside any object; the
# walk steps those frames by their frame pointers. A JSON and string
# workload under the shim must have nearly every allocation's stack reach
# main/_start (or a thread's start), none end at a Builtins_CEntry frame.
# (Before the fallback: 59% and 28%; heaptrack: 100%.) Skipped without node.
. "$TOP/tests/lib.sh"
need_cmd node
need "$ANALYZE" "$VHEAP_LIB"

js='let o = []; for (let i = 0; i < 20000; i++) { const s = JSON.stringify({a: i, b: [i, 2, 3], c: "x" + i}); o.push(JSON.parse(s)); if (i % 5000 == 0) o = []; "abc".repeat(i % 50).replace(/b/g, "d"); } console.log(o.length)'
profile "$PWD/n.vhcap" node -e "$js" >n.out || die "node failed under vheap"
"$ANALYZE" load -q n.vhcap n.sqlite 2>/dev/null || die "load of node's capture failed"
sqlite3 n.sqlite "
WITH roots AS (SELECT DISTINCT sf.stack_id FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id
               WHERE f.function IN ('main', '_start', '__libc_start_main_impl', '__clone3',
                                    'start_thread')),
     outer AS (SELECT s.id, (SELECT f.function FROM stack_frames sf JOIN frames f
                             ON f.id = sf.frame_id WHERE sf.stack_id = s.id
                             ORDER BY sf.idx DESC LIMIT 1) AS fn FROM stacks s)
SELECT sum(allocations),
       sum(CASE WHEN stack_id IN roots THEN allocations ELSE 0 END),
       sum(CASE WHEN stack_id IN (SELECT id FROM outer WHERE fn LIKE 'Builtins_CEntry%')
                THEN allocations ELSE 0 END)
FROM stack_stats WHERE heap_id = 0" >reach.txt || die "the query failed"
IFS='|' read -r total rooted centry <reach.txt
echo "node: $total allocations, $rooted reach main/_start or a thread start, $centry end at Builtins_CEntry"
[ "$total" -gt 10000 ] || die "only $total allocations recorded"
[ $((rooted * 1000)) -ge $((total * 985)) ] ||
    die "only $rooted of $total allocations' stacks reach main/_start (want 98.5%)"
[ $((centry * 1000)) -le "$total" ] || die "$centry stacks still end at Builtins_CEntry"
