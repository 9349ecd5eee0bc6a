# lib.sh — helpers shared by tests/integration/*.sh (sourced, POSIX sh).
# Environment from run-integration.sh: VHEAP_LIB, ANALYZE, PROGS, TOP.
# A test starts with: . "$TOP/tests/lib.sh"

die() { echo "FAIL: $*" >&2; exit 1; }

# expect_eq WHAT GOT WANT
expect_eq() { [ "$2" = "$3" ] || die "$1: got '$2', want '$3'"; }

# profile OUT PROGRAM ARGS...: runs PROGRAM under the shim, capture in OUT.
profile() {
    _out=$1; shift
    VHEAP_OUT="$_out" VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$@"
}

# dump_count CAPTURE KIND [AWK-CONDITION]: number of dump lines of KIND.
dump_count() {
    "$ANALYZE" dump "$1" | awk -v k="$2" "\$3 == k ${3:+&& ($3)} { n++ } END { print n + 0 }"
}
