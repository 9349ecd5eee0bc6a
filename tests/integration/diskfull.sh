# diskfull — the capture's disk fills up (VHEAP_OUT on a 2 MiB tmpfs): the
# program keeps running with the output and exit code it has bare, the shim
# prints one warning, the capture's header says "disabled" and its loss line
# counts exactly the program's calls that are not in it (recorded + dropped
# == what the program did, with one thread and with four racing into the
# full disk), and what the capture holds dumps without damage and passes
# every rule of the checker. And when not even the header page fits (the
# disk full before the program starts: space is taken page by page as the
# writer goes, not for the first chunks at once): one warning, no capture
# left behind, the program unharmed.
# Needs root to mount the tmpfs; skips otherwise.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/stress_fill"

small_disk

run() { # NAME THREADS ROUNDS
    rm -f "$mnt"/*
    VS_WARN=1 VS_CAPTURE="$mnt/$1.vhcap" vs_bare 120 "$1" "$PROGS/stress_fill" "$2" "$3"
    expect_eq "$1: shim warnings" "$(wc -l <"$1.vheap")" 1
    grep -q 'recording stopped' "$1.vheap" || die "$1: unexpected warning: $(cat "$1.vheap")"
    vh_dump "$mnt/$1.vhcap" "$1.dump"
    vh_check "$1.out" "$1.dump"
    has_flag "$(st header_flags)" disabled || die "$1: header flags '$(st header_flags)' lack disabled"
    has_flag "$(st header_flags)" ended && die "$1: a disabled capture says ended"
    calls=$(sed -n 's/^expect calls=\([0-9]*\) .*/\1/p' "$1.out")
    # (an event recorded with stack 0, its stack record not fitting, is
    # recorded: the checker counts it apart, as diskfull_stacks says)
    recorded=$(( $(st allocs) + $(st frees) + $(st stack0) + $(st stack0_frees) ))
    dropped=$(st loss_dropped)
    [ "$recorded" -gt 0 ] || die "$1: nothing recorded before the disk filled"
    [ "$dropped" -gt 0 ] || die "$1: nothing dropped: the disk never filled"
    echo "$1: $calls calls, $recorded recorded, $dropped dropped, $(du -k "$mnt/$1.vhcap" | cut -f1) KiB; $(cat "$1.vheap")"
}

# (Enough calls to fill the disk at format 3's ~4.4 bytes an event: 200000
# no longer did.)
VHEAP_CHUNK_SIZE=64KiB run one 1 600000
expect_eq "one: recorded + dropped" "$((recorded + dropped))" "$calls"

# Four threads race into the full disk: each call is still either recorded
# or counted, once (libc's own calls at thread start came before the disk
# filled; at thread exit it frees without going through free()).
VHEAP_CHUNK_SIZE=64KiB run four 4 120000
expect_eq "four: recorded + dropped" "$((recorded + dropped))" "$calls"

# Without VHEAP_QUIET the closing line repeats the count.
rm -f "$mnt"/*
VHEAP_QUIET=0 VHEAP_CHUNK_SIZE=64KiB VHEAP_OUT="$mnt/loud.vhcap" \
    env LD_PRELOAD="$VHEAP_LIB" "$PROGS/stress_fill" 1 400000 >loud.out 2>loud.err ||
    die "loud: exit $?"
vh_dump "$mnt/loud.vhcap" loud.dump
vh_check loud.out loud.dump
grep -q "(\([0-9]*\) events dropped)" loud.err || die "loud: no closing line with the count: $(cat loud.err)"
expect_eq "loud: count in the closing line" \
    "$(sed -n 's/.*(\([0-9]*\) events dropped).*/\1/p' loud.err)" "$(st loss_dropped)"

# A short run on a disk smaller than the header and two 1 MiB chunks that
# the file is sized to: space is taken as the writer goes, so the run is
# recorded whole, without a warning (it was "recording nothing" while the
# first extent was fallocated at once).
rm -f "$mnt"/*
dd if=/dev/zero of="$mnt/filler" bs=1k count=1024 2>/dev/null
VHEAP_CHUNK_SIZE=1MiB VS_CAPTURE="$mnt/short.vhcap" vs_bare 60 short "$PROGS/stress_fill" 1 1000
vh_dump "$mnt/short.vhcap" short.dump
vh_check short.out short.dump
calls=$(sed -n 's/^expect calls=\([0-9]*\) .*/\1/p' short.out)
expect_eq "short: recorded" "$(( $(st allocs) + $(st frees) ))" "$calls"
expect_eq "short: dropped" "$(st loss_dropped)" 0
has_flag "$(st header_flags)" ended || die "short: header flags '$(st header_flags)' lack ended"

# The disk is full from the start: nothing is recorded, and nothing is left.
rm -f "$mnt"/*
dd if=/dev/zero of="$mnt/filler" bs=4k 2>/dev/null || true
VS_WARN=1 VS_CAPTURE="$mnt/nospace.vhcap" vs_bare 60 nospace "$PROGS/stress_fill" 1 1000
expect_eq "nospace: shim warnings" "$(wc -l <nospace.vheap)" 1
grep -q 'recording nothing' nospace.vheap || die "nospace: unexpected warning: $(cat nospace.vheap)"
expect_eq "nospace: files left in the full directory" "$(ls "$mnt" | grep -vx filler | wc -l)" 0
echo "loud: closing line: $(grep 'events dropped' loud.err)"
echo "nospace: $(cat nospace.vheap)"
