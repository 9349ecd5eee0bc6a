#!/bin/sh
# gen-corpus.sh — regenerates the committed seed corpora of tests/fuzz/corpus/
# (make fuzz-corpus): synthetic captures from tests/unit/capture_builder.h and
# real captures of test programs, re-packed small by gen_corpus. The capture
# and load targets read the same format, so they share the seeds; the other
# targets' seeds are written here (demangle's and svg's: their own authors'
# or none). Keep the total under 1 MiB.
#   gen-corpus.sh BUILDDIR
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$(cd "${1:-$top/build}" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vheap-corpus.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

run() { # NAME PROGRAM ARGS...: a real capture of PROGRAM, 64 KiB chunks
    _n=$1; shift
    (cd "$tmp" && VHEAP_OUT="$tmp/$_n.vhcap" VHEAP_QUIET=1 VHEAP_CHUNK_SIZE=64KiB \
        LD_PRELOAD="$b/libvheap.so" "$@" >/dev/null)
    reals="$reals real_$_n=$tmp/$_n.vhcap"
}
reals=""
run basic "$b/tests/programs/basic"
run threads "$b/tests/programs/threads_xfer"
run cxx "$b/tests/programs/cxx_user"
run dlopen "$b/tests/programs/dlopen_user" "$b/tests/programs/libdlalloc.so"

rm -rf "$top/tests/fuzz/corpus/capture" "$top/tests/fuzz/corpus/load"
mkdir -p "$top/tests/fuzz/corpus/capture"
# shellcheck disable=SC2086
"$b/tests/fuzz/gen_corpus" "$top/tests/fuzz/corpus/capture" $reals
ln -s capture "$top/tests/fuzz/corpus/load"

# Shim options: NUL-separated VAR=value lines, as in environ.
d=$top/tests/fuzz/corpus/shim_options
rm -rf "$d"; mkdir -p "$d"
printf 'VHEAP_OUT=x.%%e.%%p.vhcap\0VHEAP_DEPTH=32\0VHEAP_UNWIND=fp\0' >"$d/basic"
printf 'VHEAP_CHUNK_SIZE=1MiB\0VHEAP_RSS_INTERVAL=0\0VHEAP_QUIET=yes\0' >"$d/sizes"
printf 'VHEAP_CHUNK_SIZE=64k\0VHEAP_DEPTH=257\0VHEAP_ALLOW_SETUID=true\0VHEAP_X=1\0' >"$d/bad"

# Query options: NUL-separated argv after the command name.
d=$top/tests/fuzz/corpus/query_opts
rm -rf "$d"; mkdir -p "$d"
printf 'leaks\0--format\0json\0--limit\05\0x.sqlite\0' >"$d/leaks"
printf 'top\0--by\0peak\0--heap\0loom\0--depth=3\0--bytes\0db\0' >"$d/top"
printf 'summary\0--min-bytes\0100K\0--limit\0000\0--\0-x\0' >"$d/summary"

# Event stream: the first byte picks round trip (even) or raw rows (odd);
# the rest is consumed as it comes, so any bytes are a valid start.
d=$top/tests/fuzz/corpus/events
rm -rf "$d"; mkdir -p "$d"
python3 - "$d" <<'PY'
import random, sys
r = random.Random(7)
for i, n in enumerate([64, 300, 1200, 3000, 800, 2000]):
    b = bytearray(r.getrandbits(8) for _ in range(n))
    b[0] = i & 1
    open(f"{sys.argv[1]}/seed{i}", "wb").write(bytes(b))
PY

# CFI: real objects' unwind tables (the shim's, a test program built as
# users build theirs, and system libraries with hand-written CFI: libgcc_s
# and libz), as fuzz_cfi.c reads them.
d=$top/tests/fuzz/corpus/cfi
rm -rf "$d"; mkdir -p "$d"
"${CC:-cc}" -O1 -g -Wall -Wextra -Werror -o "$tmp/gen_cfi_seeds" "$top/tests/fuzz/gen_cfi_seeds.c"
libdir=$(dirname "$(ldd "$b/libvheap.so" | awk '/libc\.so/ {print $3}')")
"$tmp/gen_cfi_seeds" "$d" "$b/libvheap.so" "$b/tests/programs/basic" \
    "$libdir/libgcc_s.so.1" "$libdir/libz.so.1"

du -sh "$top/tests/fuzz/corpus"
