# loomsim — the loom stand-in under the shim, checked against its own books.
# loomsim reports every custom-heap event through preload/vheap.h and prints
# what it knows (per heap: live, peak, allocs, frees, moves, dropped at
# destroy; the leak; allocations per tag; its heaptrack-annotated pool). The
# dump of each capture (main process and forked worker) is replayed per heap
# here and must agree exactly: destroyed roads hold nothing, moved blocks keep
# their stacks, tags and marks are all there. The program must behave the
# same with and without vheap (its SIGSEGV dirty-page handler sees the same
# faults: vheap neither steals the signal nor writes into the loom).
# loomsim declares home's regions at every event, changed or not, as Vere's
# patch does: the capture holds only the changes (loomsim counts them), the
# worker's also its inherited regions, said again after fork; a sampled
# capture holds none (regions serve fragmentation only, which is refused on
# a sample), and names only the roads a sampled block was in.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/loomsim"

timeout 120 "$PROGS/loomsim" >plain.txt || die "loomsim without vheap exited $?"
grep -q ' vheap=off ' plain.txt || die "loomsim thinks it is profiled without the shim"
# (no timeout(1) here: it would be profiled too; the harness has one)
VHEAP_OUT='loom.%p.vhcap' VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/loomsim" \
    >out.txt 2>err.txt || die "loomsim under vheap exited $?: $(tail -n 3 err.txt)"
grep -q ' vheap=on ' out.txt || die "loomsim did not find vheap_api_v1 under the shim"
grep -q ' api=found ' out.txt || die "loomsim did not find heaptrack_malloc & co. under the shim"

# Same behaviour either way, heap ids and pids aside.
strip() { sed -e 's/ pid=[0-9]*//' -e 's/ id=[0-9]*//' -e 's/ parent=[0-9]*//' \
              -e 's/ vheap=o[nf]*//' -e 's/ api=[a-z]*//' "$1"; }
strip plain.txt >plain.s
strip out.txt >out.s
cmp -s plain.s out.s || { diff plain.s out.s | head -n 10 >&2; die "loomsim behaves differently under vheap"; }

main=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' out.txt)
worker=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=worker .*/\1/p' out.txt)
[ -n "$main" ] && [ -n "$worker" ] || die "no main/worker summary in loomsim's output"
expect_eq "captures" "$(ls loom.*.vhcap | sort | tr '\n' ' ')" \
    "$(printf 'loom.%s.vhcap\n' "$main" "$worker" | sort | tr '\n' ' ')"

# replay PID CAPTURE ROLE: compares the dump with loomsim's lines of process
# PID; prints "error: ..." lines and a "checked heaps=N ..." line.
replay() {
    vh_dump "$2" "$2.dump"
    awk -v pid="$1" -v pid_role="$3" "$VH_AWK_LIB"'
function err(m) { nerr++; if (nerr <= 20) print "error: " m }
function val(k,   i, p) {
    for (i = 2; i <= NF; i++) { p = index($i, "="); if (substr($i, 1, p - 1) == k) return substr($i, p + 1) }
    return ""
}
FILENAME == ARGV[1] {
    if ($1 != "loomsim" || val("pid") != pid) next
    if (index($2, "heap=") == 1) {
        id = val("id"); nh++; HID[nh] = id; EN[id] = substr($2, 6)
        split("live_blocks live_bytes peak_bytes allocs frees resizes moves destroyed dropped_blocks dropped_bytes parent", ks, " ")
        for (i = 1; i in ks; i++) E[id, ks[i]] = val(ks[i])
    } else if ($2 == "leak") {
        nl++; LADDR[nl] = val("addr"); LSIZE[nl] = val("size"); LFIRST[nl] = val("first_addr")
        LMOVED[nl] = val("moved"); LHEAP[nl] = val("id")
    } else if ($2 == "tag") {
        nt++; TLAB[nt] = val("label"); TN[nt] = val("allocs")
    } else if ($2 == "thread") {
        nth++; THL[nth] = val("label"); THN[nth] = val("mallocs")
    } else if ($2 == "heaptrack") {
        htb = val("live_blocks"); htby = val("live_bytes"); ht = 1
    } else if ($2 == "summary") {
        marks = val("marks") + 2 * val("melds") + 2 * val("packs"); moved = val("moved_blocks")
    }
    next
}
/^#/ || $1 == "header" || $1 == "argv" || $1 == "loss" { next }
{ kv(); k = $3 }
k == "heap_create" && ("flags" in F) { BUILTIN[F["id"]] = 1; next }  # built in: mmap
(k == "alloc" || k == "free" || k == "resize") && BUILTIN[F["heap"]] { next }
k == "heap_create" {
    id = F["id"]; HN[id] = F["name"]; HP[id] = F["parent"]; ALIVE[id] = 1
    if (id in SEEN) { err("heap id " id " created twice") }
    SEEN[id] = 1
    next
}
k == "tag" { TID[F["label"]] = F["id"]; next }
k == "mark" { nmarks++; next }
k == "alloc" && F["heap"] != 0 {
    h = F["heap"]; a = F["addr"]
    if ("failed" in W) { err("failed custom allocation"); next }
    if (!(h in ALIVE) || !ALIVE[h]) err("alloc in heap " h " which does not exist")
    if ((h, a) in L) err("heap " h ": " F["addr"] " allocated while live")
    L[h, a] = F["size"]; LB[h] += F["size"]; LN[h]++; AL[h]++
    if (LB[h] > PK[h]) PK[h] = LB[h]
    STK[h, a] = F["stack"]; LASTSTK[a] = F["stack"]
    if (HN[h] != "heaptrack-api") CT[F["tag"]]++
    next
}
k == "alloc" { ST[F["tag"]]++; next }
k == "resize" && F["heap"] != 0 {
    h = F["heap"]; a = F["addr"]
    if (!((h, a) in L)) { err("heap " h ": resize of " F["addr"] " which is not live"); next }
    LB[h] += F["size"] - L[h, a]; L[h, a] = F["size"]; RZ[h]++
    if (LB[h] > PK[h]) PK[h] = LB[h]
    next
}
k == "free" && F["heap"] != 0 {
    h = F["heap"]; a = F["addr"]
    if (!((h, a) in L)) { err("heap " h ": free of " F["addr"] " which is not live"); next }
    LB[h] -= L[h, a]; LN[h]--; FR[h]++
    delete L[h, a]; delete STK[h, a]
    next
}
k == "move" {
    h = F["heap"]; a = F["from"]; b = F["to"]
    if (!((h, a) in L)) { err("heap " h ": move of " F["from"] " which is not live"); next }
    if ((h, b) in L) err("heap " h ": move onto live " F["to"])
    L[h, b] = L[h, a]; STK[h, b] = STK[h, a]; delete L[h, a]; delete STK[h, a]; MV[h]++
    next
}
k == "move_range" || k == "free_range" {   # every block starting in the range
    h = F["heap"]; lo = hex(F["from"]); len = F["len"] + 0
    d = k == "move_range" ? hex(F["to"]) - lo : 0
    n = 0; split("", RG)
    for (key in L) {
        split(key, hk, SUBSEP)
        if (hk[1] == h && hex(hk[2]) >= lo && hex(hk[2]) < lo + len) RG[++n] = hk[2]
    }
    for (i = 1; i <= n; i++) {
        a = RG[i]
        if (k == "free_range") { LB[h] -= L[h, a]; LN[h]--; FR[h]++ }
        else { SZ[i] = L[h, a]; SS[i] = STK[h, a] }
        delete L[h, a]; delete STK[h, a]
    }
    if (k == "move_range")
        for (i = 1; i <= n; i++) {
            b = hexs(hex(RG[i]) + d)
            if ((h, b) in L) err("heap " h ": move_range onto live " b)
            L[h, b] = SZ[i]; STK[h, b] = SS[i]; MV[h]++
        }
    NR_RANGE[k]++
    next
}
k == "region" { NREG++; next }
k == "heap_destroy" {
    d = F["heap"]
    if (!ALIVE[d]) { err("destroy of heap " d " which does not exist"); next }
    # the heap and every heap nested in it
    split("", DOOM)
    for (x in ALIVE) if (ALIVE[x]) { y = x; while (y != 0 && y != d) y = HP[y]; if (y == d) DOOM[x] = 1 }
    for (key in L) {
        split(key, hk, SUBSEP)
        if (hk[1] in DOOM) { DR[hk[1]]++; DB[hk[1]] += L[key]; delete L[key]; delete STK[key] }
    }
    for (x in DOOM) { ALIVE[x] = 0; GONE[x] = 1; LB[x] = 0; LN[x] = 0 }
    next
}
function cmp(id, what, got) {
    if (got + 0 != E[id, what] + 0) err("heap " EN[id] " (id " id "): " what " " got " in the capture, " E[id, what] " by loomsim")
}
END {
    for (i = 1; i <= nh; i++) {
        id = HID[i]
        if (!(id in SEEN)) { err("heap " EN[id] " (id " id ") has no heap_create"); continue }
        if (HN[id] != EN[id]) err("heap " id " is named " HN[id] " in the capture, " EN[id] " by loomsim")
        if (HP[id] != E[id, "parent"]) err("heap " id ": parent " HP[id] ", loomsim says " E[id, "parent"])
        cmp(id, "live_blocks", LN[id]); cmp(id, "live_bytes", LB[id]); cmp(id, "peak_bytes", PK[id])
        cmp(id, "allocs", AL[id]); cmp(id, "frees", FR[id]); cmp(id, "resizes", RZ[id])
        cmp(id, "moves", MV[id]); cmp(id, "destroyed", GONE[id] ? 1 : 0)
        cmp(id, "dropped_blocks", DR[id]); cmp(id, "dropped_bytes", DB[id])
        if (GONE[id] && LN[id]) err("destroyed heap " id " still holds blocks")
        dest += GONE[id] ? 1 : 0; mv += MV[id]
    }
    # what is live in heaps that still exist = the leaks loomsim found
    live = 0
    for (key in L) { split(key, hk, SUBSEP); if (ALIVE[hk[1]] && HN[hk[1]] != "heaptrack-api") live++ }
    if (pid_role == "main" && live != nl) err(live " custom blocks live at the end, loomsim knows " nl " leak(s)")
    for (i = 1; i <= nl; i++) {
        h = LHEAP[i]
        if (!((h, LADDR[i]) in L)) { err("the leak at " LADDR[i] " is not live in heap " h); continue }
        if (L[h, LADDR[i]] != LSIZE[i]) err("the leak has size " L[h, LADDR[i]] ", loomsim says " LSIZE[i])
        if (LMOVED[i] == 1 && STK[h, LADDR[i]] != LASTSTK[LFIRST[i]])
            err("the moved leak has stack " STK[h, LADDR[i]] ", it was allocated with " LASTSTK[LFIRST[i]])
        leakmoved += LMOVED[i]
    }
    for (i = 1; i <= nt; i++) {
        t = TLAB[i] == "(none)" ? 0 : TID[TLAB[i]]
        if (t == "") { err("tag " TLAB[i] " has no tag record"); continue }
        if (CT[t] + 0 != TN[i] + 0) err("tag " TLAB[i] ": " CT[t] + 0 " custom allocations, loomsim made " TN[i])
    }
    for (i = 1; i <= nth; i++)
        if (ST[TID[THL[i]]] + 0 != THN[i] + 0) err("tag " THL[i] ": " ST[TID[THL[i]]] + 0 " mallocs, the thread made " THN[i])
    if (nmarks + 0 != marks + 0) err(nmarks + 0 " marks, loomsim made " marks)
    if (mv + 0 != moved + 0) err(mv + 0 " moves, loomsim moved " moved)
    if (ht) {                        # heaptrack_* calls land in their own heap
        hid = ""
        for (x in HN) if (HN[x] == "heaptrack-api") hid = x
        if (hid == "") err("no heaptrack-api heap")
        else if (LN[hid] + 0 != htb || LB[hid] + 0 != htby)
            err("heaptrack-api heap: " LN[hid] + 0 " blocks, " LB[hid] + 0 " bytes live; loomsim holds " htb ", " htby)
    }
    printf "checked heaps=%d destroyed=%d moves=%d leaks=%d leak_moved=%d tags=%d marks=%d move_ranges=%d free_ranges=%d regions=%d\n", nh, dest, mv, nl, leakmoved, nt, nmarks, NR_RANGE["move_range"], NR_RANGE["free_range"], NREG
}' out.txt "$2.dump" >"$2.check" || die "replay of $2 failed"
    if grep -q '^error: ' "$2.check"; then
        grep '^error: ' "$2.check" | head -n 10 >&2
        die "$2 disagrees with loomsim (see above)"
    fi
    cat "$2.check"
}

replay "$main" "loom.$main.vhcap" main >main.txt
replay "$worker" "loom.$worker.vhcap" worker >worker.txt
cat main.txt worker.txt

# The main process must have exercised what the test is for.
n() { sed -n "s/.* $2=\([0-9]*\).*/\1/p" "$1"; }
[ "$(n main.txt destroyed)" -ge 20 ] || die "too few roads destroyed: $(cat main.txt)"
[ "$(n main.txt moves)" -ge 100 ] || die "too few moves: $(cat main.txt)"
expect_eq "leaks in main" "$(n main.txt leaks)" 1
expect_eq "the leak moved during pack" "$(n main.txt leak_moved)" 1
[ "$(n main.txt tags)" -ge 8 ] || die "too few tags: $(cat main.txt)"
[ "$(n worker.txt heaps)" -ge 5 ] || die "the worker made too few heaps: $(cat worker.txt)"
sum=$(grep "summary pid=$main " out.txt)
case "$sum" in *" pops_copy=0 "*|*" pops_bail=0 "*|*" pops_signal=0 "*|*" dirty_faults=0 "*)
    die "a road pop kind or the dirty handler was not exercised: $sum" ;; esac
field() { echo "$1" | sed -n "s/.* $2=\([0-9]*\).*/\1/p"; }
[ "$(field "$sum" region_calls)" -gt "$(field "$sum" region_changes)" ] ||
    die "loomsim declared no region twice: $sum"
expect_eq "region records in main (its changes)" "$(n main.txt regions)" \
    "$(field "$sum" region_changes)"
wsum=$(grep "summary pid=$worker " out.txt)
wreg=$(n worker.txt regions) wchg=$(field "$wsum" region_changes)
[ "$wreg" -gt "$wchg" ] && [ "$wreg" -le $((wchg + 3)) ] ||
    die "worker: $wreg region records for $wchg changes (+ at most 3 inherited)"
VHEAP_SAMPLE=64KiB VHEAP_OUT='samp.%p.vhcap' VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" \
    "$PROGS/loomsim" >samp.txt 2>samp.err || die "loomsim sampled exited $?: $(tail -n 3 samp.err)"
smain=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' samp.txt)
expect_eq "region records sampled" "$(dump_count "samp.$smain.vhcap" region)" 0
# ...and names a road only once a block of it (or of a road in it) was
# sampled: most roads are not, and leave no record; what is there loads
# with no free of an unknown block.
made=$(grep -c "heap=road[.0-9]* pid=$smain " samp.txt)
named=$(dump_count "samp.$smain.vhcap" heap_create)
[ "$named" -lt "$made" ] || die "sampled: $named HEAP_CREATE records for $made heaps made"
"$ANALYZE" summary --format json "samp.$smain.vhcap" >samp.json 2>samp.err ||
    die "summary of the sampled capture: $(cat samp.err)"
python3 -c 'import json,sys; sys.exit(sum(h["unknown_frees"] for h in json.load(open("samp.json"))["heaps"]))' ||
    die "the sampled capture has frees of unknown blocks"

# The analyzer sees the leak in the loom with the stack of its allocation.
"$ANALYZE" leaks "loom.$main.vhcap" >leaks.txt 2>&1 || die "leaks failed: $(tail -n 3 leaks.txt)"
grep -q '^loom .* 1 ' leaks.txt || die "leaks does not list one block in the loom: $(head -n 20 leaks.txt)"
# (a frame-pointer walk stops early: test programs keep no frame pointers)
if grep -q '^header .* unwind=libunwind ' "loom.$main.vhcap.dump"; then
    awk '/^loom /{ f = 1; next } f && /^[^ ]/ { exit } f' leaks.txt | grep -q 'make_leak' \
        || die "the loom leak's stack lacks make_leak: $(cat leaks.txt)"
fi

# Tags and marks reach the database that queries read (leaks loaded it).
db="loom.$main.vhcap.sqlite"
if command -v sqlite3 >/dev/null 2>&1; then
    expect_eq "marks in the database" "$(sqlite3 "$db" 'SELECT count(*) FROM marks')" "$(n main.txt marks)"
    expect_eq "tags in the database" "$(sqlite3 "$db" 'SELECT count(*) FROM tags WHERE id > 0')" \
        "$(dump_count "loom.$main.vhcap" tag)"
    got=$(sqlite3 "$db" "SELECT count(*) FROM stack_stats s JOIN tags t ON t.id = s.tag_id
                         WHERE t.label = 'jet:add' AND s.heap_id <> 0 AND s.allocations > 0")
    [ "$got" -gt 0 ] || die "no jet:add allocations in stack_stats"
fi
exit 0
