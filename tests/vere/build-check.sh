#!/bin/sh
# build-check.sh — applies contrib/vere/vheap-hooks.patch to a copy of a
# vere-v4.5 checkout and compiles Vere's pkg/noun (every source file its
# build.zig lists) and the patched files of pkg/vere with gcc, so that a
# change to the patch or to the API it mirrors is caught without zig.
#
#   VERE_SRC=/path/to/vere  [VERE_DEPS=/path/to/deps]  tests/vere/build-check.sh
#
# VERE_SRC: a checkout of urbit/vere at tag vere-v4.5. VERE_DEPS: a
# directory with Vere's pinned dependencies unpacked (the versions in
# ext/*/build.zig.zon), one directory each: urcrypt, softfloat, pdjson,
# whereami, backtrace, wasm3, softblas; default $VERE_SRC/../vere-deps.
# Debian packages for the rest: libgmp-dev libssl-dev libsigsegv-dev
# libuv1-dev liblmdb-dev zlib1g-dev. Without VERE_SRC it says so and exits
# 77 (skipped): CI has no network to fetch Vere.
#
# With vheap built (VHEAP_BUILD, default build/), tests/vere/drive.c is then
# linked with the patched objects and run under vheap (see step 7).
#
# gcc is not Vere's compiler (zig's clang is), so the copy gets two
# build-only fixes the patch must not carry: manage.c's
# `static c3_w u3m_Ford_fresh_road_depth_w` follows an extern declaration
# (the `static` goes), urwasm.c has a static_assert gcc 12 cannot evaluate
# (it is dropped); and nock.c & co. use C23 `true`/`false` (-include
# stdbool.h). Files the patch touches are compiled with -Wall twice, as
# released and patched: the patch must add no warning (Vere's own are its
# business); the others with -w.
set -eu

TOP=$(cd "$(dirname "$0")/../.." && pwd)
PATCH="$TOP/contrib/vere/vheap-hooks.patch"
say() { printf 'build-check: %s\n' "$*" >&2; }

if [ -z "${VERE_SRC:-}" ]; then
    say "skipped: set VERE_SRC to a vere-v4.5 checkout (git clone -b vere-v4.5 https://github.com/urbit/vere)"
    exit 77
fi
[ -f "$VERE_SRC/pkg/noun/palloc.c" ] && [ -f "$VERE_SRC/pkg/vere/mars.c" ] ||
    { say "$VERE_SRC is not a Vere checkout (no pkg/noun/palloc.c, pkg/vere/mars.c)"; exit 1; }
DEPS=${VERE_DEPS:-$VERE_SRC/../vere-deps}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/vere-check.XXXXXX")
[ -n "${VERE_KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT INT TERM
mkdir -p "$WORK/src/ext" "$WORK/orig" "$WORK/obj" "$WORK/gen/lmdb"
cp -R "$VERE_SRC/pkg" "$WORK/src/pkg"
cp -R "$VERE_SRC/pkg" "$WORK/orig/pkg"
cp -R "$VERE_SRC/ext/murmur3" "$WORK/src/ext/" 2>/dev/null || true

# 1. the patch applies
(cd "$WORK/src" && patch -p1 --no-backup-if-mismatch <"$PATCH" >"$WORK/patch.log" 2>&1) ||
    { cat "$WORK/patch.log" >&2; say "the patch does not apply to $VERE_SRC (is it vere-v4.5?)"; exit 1; }
if grep -qi 'fuzz\|offset' "$WORK/patch.log"; then
    grep -i 'fuzz\|offset' "$WORK/patch.log" >&2
fi
sed -n 's|^+++ b/||p' "$PATCH" | grep '\.c$' >"$WORK/touched"

# 2. build-only fixes for gcc (see above), patched tree and released copy
gccfix() {
    sed -i 's/^static c3_w u3m_Ford_fresh_road_depth_w/c3_w u3m_Ford_fresh_road_depth_w/' \
        "$1/manage.c"
    awk 'BEGIN { skip = 0 }
         /^static_assert\($/ { skip = 1 }
         skip { if ($0 ~ /^\);$/) skip = 0; next }
         { print }' "$1/jets/e/urwasm.c" >"$WORK/urwasm.c"
    mv "$WORK/urwasm.c" "$1/jets/e/urwasm.c"
}
N="$WORK/src/pkg/noun"
gccfix "$N"
gccfix "$WORK/orig/pkg/noun"
printf '#define U3_VERE_PACE "live"\n' >"$WORK/gen/pace.h"
printf '#define URBIT_VERSION "%s"\n' "$(cat "$VERE_SRC/pkg/vere/VERSION" 2>/dev/null || echo 0)" \
    >"$WORK/gen/version.h"
printf '#include <lmdb.h>\n' >"$WORK/gen/lmdb/lmdb.h"

# 3. headers of the pinned dependencies
DINC="-I$WORK/gen -I$WORK/src/ext/murmur3/vendor"
missing=
for d in urcrypt/urcrypt:urcrypt.h softfloat/source/include:softfloat.h pdjson:pdjson.h \
         whereami/src:whereami.h backtrace:backtrace.h wasm3/source:wasm3.h \
         softblas/include:softblas.h; do
    dir=$DEPS/${d%%:*}
    if [ -f "$dir/${d#*:}" ]; then DINC="$DINC -I$dir"; else missing="$missing ${d#*:}"; fi
done
for h in gmp.h openssl/ssl.h sigsegv.h uv.h lmdb.h zlib.h; do
    printf '#include <%s>\n' "$h" | gcc -E -x c - >/dev/null 2>&1 || missing="$missing $h"
done
[ -z "$missing" ] || { say "missing headers:$missing (VERE_DEPS=$DEPS; see this script's head)"; exit 1; }
inc() { echo "-I$WORK/gen -I$1/pkg -I$1/pkg/noun -I$1/pkg/noun/platform/linux -I$1/pkg/ur -I$1/pkg/vere -I$1/pkg/vere/ivory $DINC"; }

# 4. compile every pkg/noun source of build.zig, its unit tests, and the
#    patched pkg/vere files (palloc.c is #included by allocate.c)
CFLAGS="-std=gnu11 -include stdbool.h -O1 -g0 -DU3_GUARD_PAGE -DU3_OS_ENDIAN_little=1"
CFLAGS="$CFLAGS -DU3_OS_PROF=1 -DU3_OS_linux=1 -DENT_GETENTROPY_UNISTD"
sed -n '/^const c_source_files = /,/^};/s|^ *"\(.*\.c\)",.*|pkg/noun/\1|p' "$N/build.zig" \
    >"$WORK/files"
grep '^pkg/vere/' "$WORK/touched" >>"$WORK/files" || true
for t in "$N"/*_tests.c; do           # Vere's unit tests (palloc_tests.c
    echo "pkg/noun/${t##*/}" >>"$WORK/files"   # #includes palloc.c)
done
nfiles=$(wc -l <"$WORK/files")
[ "$nfiles" -gt 100 ] || { say "read only $nfiles sources from pkg/noun/build.zig"; exit 1; }
start=$(date +%s)
INC=$(inc "$WORK/src")
export WORK CFLAGS INC
xargs -P "$JOBS" -I{} sh -c '
    f={}; o="$WORK/obj/$(echo "$f" | tr / _).o"; w=-w
    grep -qx "$f" "$WORK/touched" && w=-Wall
    gcc $CFLAGS $w $INC -c "$WORK/src/$f" -o "$o" 2>"$o.err" || { echo "FAILED $f"; cat "$o.err"; }
' <"$WORK/files" >"$WORK/build.log" 2>&1
end=$(date +%s)
if grep -q '^FAILED ' "$WORK/build.log"; then
    head -n 40 "$WORK/build.log" >&2
    say "$(grep -c '^FAILED ' "$WORK/build.log") of $nfiles files failed to compile"
    exit 1
fi
nobj=$(ls "$WORK/obj"/*.o | wc -l)

# 5. no new warnings in the files the patch touches (palloc.c: via allocate.c)
wkinds() { grep -o '\[-W[a-z0-9=-]*\]' "$1" | sort | uniq -c || true; }
OINC=$(inc "$WORK/orig")
for f in $(grep -Fx -f "$WORK/touched" "$WORK/files"); do
    o="$WORK/obj/$(echo "$f" | tr / _).o"
    gcc $CFLAGS -Wall $OINC -c "$WORK/orig/$f" -o "$o.orig" 2>"$o.orig.err" ||
        { cat "$o.orig.err" >&2; say "$f as released does not compile with these flags"; exit 1; }
    if [ "$(wkinds "$o.err")" != "$(wkinds "$o.orig.err")" ]; then
        diff "$o.orig.err" "$o.err" | grep 'warning' | head -n 20 >&2 || true
        say "$f: the patch adds warnings"
        exit 1
    fi
done

# 6. the hooks are in: allocate.o defines the table pointer, the entry
#    points call into it
nm "$WORK/obj/pkg_noun_allocate.c.o" | grep -q ' [BDC] u3a_Vh$' ||
    { say "allocate.c.o does not define u3a_Vh: the patch did not take"; exit 1; }
for o in pkg_noun_manage.c.o pkg_noun_jets.c.o pkg_vere_mars.c.o; do
    nm "$WORK/obj/$o" | grep -q ' U u3a_Vh$' || { say "$o does not use u3a_Vh"; exit 1; }
done
say "ok: the patch applies; $nobj of $nfiles files compiled with gcc in $((end - start)) s;" \
    "the patched files add no warning (palloc.c checked through allocate.c)"

# 7. run it: tests/vere/drive.c on the patched allocator, linked with
#    pkg/c3, pkg/ur, pkg/ent, murmur3, pkg/vere/melt.c and Debian's
#    libraries; what the
#    driver never calls (softfloat, urcrypt, wasm3, ... not built here) is
#    stubbed. Under vheap, the loom's live set at the end must be the
#    allocator's own, block for block: the driver's last act is
#    u3a_vh_resync(), which reports every block the allocator holds; each
#    must land on a block vheap already has live (an implicit free), and
#    none may be left over.
B=${VHEAP_BUILD:-$TOP/build}
if [ ! -f "$B/libvheap.so" ] || [ ! -x "$B/vheap-analyze" ] || ! command -v python3 >/dev/null; then
    say "not run: needs $B/libvheap.so, vheap-analyze (make first, or set VHEAP_BUILD) and python3"
    exit 0
fi
mkdir -p "$WORK/x"
for f in pkg/c3/defs.c pkg/ur/bitstream.c pkg/ur/hashcons.c pkg/ur/serial.c pkg/ent/ent.c \
         ext/murmur3/vendor/murmur3.c; do
    gcc $CFLAGS -w $INC -c "$WORK/src/$f" -o "$WORK/x/${f##*/}.o" ||
        { say "cannot compile $f for the driver"; exit 1; }
done
gcc $CFLAGS -Wall -Werror $INC -c "$TOP/tests/vere/drive.c" -o "$WORK/x/drive.o" ||
    { say "cannot compile tests/vere/drive.c"; exit 1; }
ls "$WORK/obj"/*.o | grep -v '_tests\.c\.o$\|pkg_vere_' >"$WORK/objs"
echo "$WORK/obj/pkg_vere_melt.c.o" >>"$WORK/objs"     # u3_meld_all, for |meld
LIBS="-lgmp -lssl -lcrypto -lsigsegv -lz -lm -lpthread"
# shellcheck disable=SC2046
gcc -o "$WORK/drive" $(cat "$WORK/objs") "$WORK"/x/*.o $LIBS 2>&1 |
    sed -n "s/.*undefined reference to \`\([^']*\)'.*/\1/p" | sort -u >"$WORK/undef" || true
{
    echo '/* never called by the driver: libraries not built here */'
    while read -r sym; do
        case $sym in
        softfloat_roundingMode|softfloat_exceptionFlags|softfloat_detectTininess)
            echo "unsigned char $sym;" ;;
        *) echo "long $sym(void) { return 0; }" ;;    # init calls get 0
        esac
    done <"$WORK/undef"
} >"$WORK/stubs.c"
gcc -w -c "$WORK/stubs.c" -o "$WORK/x/stubs.o" &&
    gcc -o "$WORK/drive" $(cat "$WORK/objs") "$WORK"/x/*.o $LIBS >"$WORK/link.log" 2>&1 ||
    { tail -n 20 "$WORK/link.log" >&2; say "cannot link the driver"; exit 1; }
(cd "$WORK" && DRIVE_BARE=1 ./drive >bare.out 2>bare.err) ||
    { tail -n 5 "$WORK/bare.err" >&2; say "the driver fails without vheap"; exit 1; }
# run NAME ARGS...: the driver under vheap, its capture loaded as NAME.sqlite
run() {
    _n=$1; shift
    (cd "$WORK" && VHEAP_OUT="$WORK/$_n.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$B/libvheap.so" \
        ./drive "$@" >"$_n.out" 2>"$_n.err") ||
        { tail -n 5 "$WORK/$_n.err" >&2; say "the driver ($_n) fails under vheap"; exit 1; }
    "$B/vheap-analyze" load -q "$WORK/$_n.vhcap" "$WORK/$_n.sqlite" || { say "load of $_n failed"; exit 1; }
    "$B/vheap-analyze" dump "$WORK/$_n.vhcap" >"$WORK/$_n.dump"
}
q() { sqlite3 "$WORK/$N.sqlite" "$1" 2>/dev/null ||
      python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' \
          "$WORK/$N.sqlite" "$1"; }
count() { awk -v k="$1" '$3 == k { n++ } END { print n + 0 }' "$WORK/$N.dump"; }
# sets N: replays the loom's blocks (heap 1) through capture N's dump up to
# the mark `resync`, and compares them with the blocks the re-sync reported
# after it: "same=S vheap_only=V allocator_only=A"
sets() {
    python3 - "$WORK/$1.dump" <<'PY'
import sys
live, resync, on = set(), set(), False
def f(w, k):
    for x in w[3:]:
        if x.startswith(k + "="):
            return x[len(k) + 1:]
for line in open(sys.argv[1]):
    w = line.split()
    if len(w) < 4 or w[0].startswith("#"):
        continue
    k = w[2]
    if k == "mark" and line.rstrip().endswith("label=resync"):
        on = True
        continue
    if f(w, "heap") != "1":
        continue
    if on:
        if k == "alloc":
            resync.add(int(f(w, "addr"), 16))
        continue
    if k == "alloc":
        live.add(int(f(w, "addr"), 16))
    elif k == "free":
        live.discard(int(f(w, "addr"), 16))
    elif k == "move":
        live.discard(int(f(w, "from"), 16)); live.add(int(f(w, "to"), 16))
    elif k in ("move_range", "free_range"):
        lo, n = int(f(w, "from"), 16), int(f(w, "len"))
        got = {a for a in live if lo <= a < lo + n}
        live -= got
        if k == "move_range":
            live |= {a - lo + int(f(w, "to"), 16) for a in got}
print("same=%d vheap_only=%d allocator_only=%d" % (len(live & resync), len(live - resync),
                                                    len(resync - live)))
PY
}
# exact N: the loom of capture N, re-synced at its end, was the allocator's
exact() {
    N=$1
    cmp=$(sets "$N")
    resync=$(awk '$3 == "mark" && $4 == "label=resync" { on = 1; next }
                  on && $3 == "alloc" && $4 == "heap=1" { n++ } END { print n + 0 }' "$WORK/$N.dump")
    live=$(q "SELECT live_blocks FROM heaps WHERE name = 'loom' AND destroy_time IS NULL")
    implicit=$(q "SELECT value FROM meta WHERE key = 'implicit_frees'")
    unknown=$(q "SELECT sum(unknown_frees) FROM heaps WHERE name = 'loom'")
    moves=$(q "SELECT value FROM meta WHERE key = 'unknown_moves'")
    open=$(q "SELECT count(*) FROM heaps WHERE name = 'road' AND destroy_time IS NULL")
    roads=$(q "SELECT count(*) FROM heaps WHERE name = 'road'")
    [ "$resync" -gt 1000 ] || bad="$bad; $N: the re-sync reported only $resync blocks"
    [ "$cmp" = "same=$resync vheap_only=0 allocator_only=0" ] ||
        bad="$bad; $N: vheap's live loom blocks against the allocator's: $cmp"
    [ "$implicit" = "$resync" ] || bad="$bad; $N: $resync blocks re-synced, $implicit were live in vheap"
    [ "$live" = "$resync" ] || bad="$bad; $N: vheap holds $live loom blocks, the allocator $resync"
    [ "$unknown" = 0 ] && [ "$moves" = 0 ] || bad="$bad; $N: $unknown unknown frees, $moves unknown moves"
    [ "$open" = 0 ] && [ "$roads" -gt 40 ] || bad="$bad; $N: $open of $roads roads never destroyed"
    [ "$(count move_range)" -gt 0 ] && [ "$(count free_range)" -gt 0 ] ||
        bad="$bad; $N: no range records from pack and sweep"
}
bad=
run drive
exact drive
# Vere's own leaks (docs/vere.md, section 5), found on the system heap:
# u3j_boot's jet table at boot and at every meld, u3a_pack_init's bitmap at
# every pack (one direct, one in each meld)
leaked() { q "SELECT count(*) FROM leaks l JOIN stack_text t ON t.stack_id = l.stack_id
              WHERE l.heap_id = 0 AND t.text LIKE '$1 <- $2%'"; }
[ "$(leaked u3j_boot u3_melt_all)" = 2 ] && [ "$(leaked u3j_boot u3m_boot_lite)" = 1 ] ||
    bad="$bad; u3j_boot's tables live at exit: $(leaked u3j_boot u3_melt_all) from melds (2 expected)"
[ "$(leaked u3a_pack_init u3a_pack_seek)" = 3 ] ||
    bad="$bad; u3a_pack_init's bitmaps live at exit: $(leaked u3a_pack_init u3a_pack_seek) (3 expected)"
first="$(sed -n 's/^drive //p' "$WORK/drive.out"), $roads roads, $(count move_range) page/chunk moves,"
first="$first $(count free_range) page frees, 2 melds: the loom's $live live blocks"
# a checkpoint saved by one process and restored by the next: _find_home's
# re-sync must report exactly the restored blocks, metadata left out
run save save "$WORK/pier"
run restore restore "$WORK/pier"
restored=$(N=restore q "SELECT sum(s.allocations) FROM stack_stats s JOIN stack_text t
                      ON t.stack_id = s.stack_id WHERE t.text LIKE 'u3a_vh_resync <- u3m_pave%'")
exact restore
# and none of the allocator's own chunks (directory, free-page entries,
# chunk-page headers, listed by the driver once booted) is a live block of
# vheap's at that point (the driver's first event mark: the patch's own
# "loom resync" comes earlier, before u3m_boot's tail made the chunks listed)
sed -n 's/^drive meta //p' "$WORK/restore.out" | sort -u >"$WORK/meta"
awk '$3 == "mark" && $4 == "label=event" { for (a in L) print a; exit }
     ($3 == "alloc" || $3 == "free") && $4 == "heap=1" {
         for (i = 5; i <= NF; i++) if ($i ~ /^addr=/) a = substr($i, 6)
         if ($3 == "alloc") L[a] = 1; else delete L[a]
     }' "$WORK/restore.dump" | sort -u >"$WORK/restored"
nmeta=$(wc -l <"$WORK/meta")
[ "$nmeta" -gt 2 ] || bad="$bad; the driver listed only $nmeta metadata chunks"
both=$(comm -12 "$WORK/meta" "$WORK/restored" | wc -l)
[ "$both" = 0 ] || bad="$bad; $both of the allocator's metadata chunks were re-synced as blocks"
[ -z "$bad" ] || { say "the driver's captures disagree with the allocator${bad}"; exit 1; }
say "ok: under vheap, $first are the allocator's, block for block; u3j_boot's and" \
    "u3a_pack_init's leaks found; restored from a checkpoint ($restored loom blocks re-synced at boot," \
    "none of them among the allocator's $nmeta metadata chunks), then $live live blocks," \
    "again the allocator's"
