# lock_matrix — the shim never hangs a program whose first allocation
# happens with a glibc-internal lock held (issue 25: libgpg-error's
# constructor called bindtextdomain, whose malloc ran the shim's init, whose
# dlerror() released _nl_state_lock under it; a JVM thread's first
# allocation inside pthread_getattr_np waited for ever on its own lock).
# Each cell (lockcell --list) makes the first allocation inside one glibc
# call from liblockcell.so's constructor; lockcell then takes every one of
# those locks again, so a lock left held or corrupted hangs. Each cell runs
# bare and under the shim in full, sampled (every call, and almost none)
# and paused modes, each under a timeout: every run must exit as the bare
# one did with the same output (dlerror()'s pending message included). In
# full mode the capture must show the first allocation (the thread's, for
# thread_* cells) made inside the cell's function: a cell whose glibc call
# stopped allocating would prove nothing.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/lockcell" "$PROGS/liblockcell.so" "$PROGS/liblockctor.so"
need_cmd sqlite3 timeout
limit=${LOCK_TIMEOUT:-10}
# LOCK_CELLS="a b": only those cells (for a look at one).
cells=${LOCK_CELLS:-$("$PROGS/lockcell" --list)}
modes="full sample1 sample512k paused"

mode_env() {
    case $1 in
    full) echo "VHEAP_CLOCK=auto" ;;       # the default, named: env needs a word
    sample1) echo "VHEAP_SAMPLE=1" ;;       # every call sampled: the recording path
    sample512k) echo "VHEAP_SAMPLE=512KiB" ;; # almost none: the unsampled fast path
    paused) echo "VHEAP_START=paused" ;;
    esac
}

# first_in CELL CAPTURE: fails unless the first allocation the capture holds
# (of a thread other than the main one, for thread_* cells) has the cell's
# function of liblockcell.so on its stack.
first_in() {
    case $1 in
    thread_getattr_np) fn=thread_getattr ;;
    thread_*) fn=$1 ;;
    pthread_getattr_np) fn=cell_getattr ;;
    pthread_once) fn=cell_once ;;
    iconv_open) fn=cell_iconv ;;
    pthread_atfork) fn=cell_atfork ;;
    *) fn=cell_$1 ;;
    esac
    case $1 in thread_*) thr=1 ;; *) thr=0 ;; esac
    vh_dump "$2" "$1.dump"
    # Dump lines: TIME TID KIND key=value...; the main thread's tid is the pid.
    frames=$(awk -v thr=$thr "$VH_AWK_LIB"'
        $1 == "header" { split($2, p, "="); pid = p[2]; next }
        $3 == "stack" { kv(); S[F["id"]] = F["frames"] }
        $3 == "alloc" && (!thr || $2 != pid) { kv(); print S[F["stack"]]; exit }' "$1.dump")
    [ -n "$frames" ] || die "$1: no first allocation in the capture"
    "$ANALYZE" load -q "$2" "$1.db" || die "$1: load failed (exit $?)"
    addrs=$(echo "$frames" | tr ',' '\n' | sed "s/.*/'&'/" | paste -sd, -)
    # frames.address is an integer, the dump's frames hex: compared as text.
    names=$(sqlite3 "$1.db" "SELECT group_concat(function, ' ') FROM frames
                             WHERE printf('0x%x', address) IN ($addrs)")
    case " $names " in
    *" $fn "*) ;;
    *) die "$1: the first allocation was not made inside $fn (its stack: $names)" ;;
    esac
}

bad=0
printf '%-20s' cell; for m in $modes; do printf ' %-10s' "$m"; done; echo
for cell in $cells; do
    VH_CELL="$cell" timeout -k 5 "$limit" "$PROGS/lockcell" >"$cell.bare" 2>&1
    want=$?
    [ $want -eq 3 ] || die "$cell: the bare run exited $want, not 3: $(tail -n 2 "$cell.bare")"
    printf '%-20s' "$cell"
    for m in $modes; do
        out="$cell.$m"
        # timeout outside the shim: only lockcell writes a capture.
        # shellcheck disable=SC2046
        timeout -k 5 "$limit" env $(mode_env "$m") VH_CELL="$cell" VHEAP_OUT="$out.vhcap" \
            VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/lockcell" >"$out.out" 2>&1
        rc=$?
        if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
            r=HANG
        elif [ $rc -ne $want ]; then
            r="exit$rc"
        elif ! cmp -s "$cell.bare" "$out.out"; then
            r=DIFF
        else
            r=ok
        fi
        printf ' %-10s' "$r"
        if [ $r != ok ]; then
            bad=$((bad + 1))
            [ $r = HANG ] || diff "$cell.bare" "$out.out" | sed 's/^/    /' >>diffs.txt
        fi
    done
    echo
done
[ ! -s diffs.txt ] || { echo "differences from the bare runs:"; cat diffs.txt; }
[ $bad -eq 0 ] || die "$bad of the runs above hung (timeout ${limit}s) or differed"

for cell in $cells; do
    # none and cxx_dlerror allocate first in lockcell's main, not in a cell.
    case $cell in none | cxx_dlerror) ;; *) first_in "$cell" "$cell.full.vhcap" ;; esac
done
echo "lock_matrix: every cell finished in every mode as the bare run did; each first allocation inside its cell"
