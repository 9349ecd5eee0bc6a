# security — what docs/security.md promises. (1) A setuid or setgid program
# records nothing unless VHEAP_ALLOW_SETUID=1: a copy of a small program
# linked against the shim (so that ld.so loads it even in secure-execution
# mode, as /etc/ld.so.preload would), owned by another user, chmod u+s or
# g+s, run by an unprivileged user through setpriv; and the loader itself
# drops an LD_PRELOAD path for a setuid program. (2) Query commands open
# DBs read-only: the file is unchanged, no journal appears, and a DB whose
# schema calls functions with side effects is refused. (The capture file's
# own rules, 0600, O_EXCL, O_NOFOLLOW and the directory check, are in
# 10_env.)
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/exec_target"
need_cmd sqlite3

# ---- (2) read-only queries ---------------------------------------------------
profile cap.vhcap "$PROGS/exec_target" 50 100 >/dev/null || die "exec_target exited $?"
"$ANALYZE" load -q --no-symbols cap.vhcap db.sqlite || die "load failed"
before=$(cksum <db.sqlite)
for cmd in summary leaks top peak; do
    for fmt in table json csv; do
        "$ANALYZE" $cmd --format $fmt db.sqlite >/dev/null 2>err.txt \
            || die "$cmd --format $fmt: exit $?: $(cat err.txt)"
    done
done
expect_eq "DB after every query command" "$(cksum <db.sqlite)" "$before"
expect_eq "files beside the DB" "$(ls db.sqlite*)" db.sqlite
# A DB whose heaps table became a view over a virtual table that is not
# "innocuous" (a stand-in for anything a schema should not reach): refused,
# because a DB from elsewhere is not a trusted schema.
cp db.sqlite evil.sqlite
sqlite3 evil.sqlite "ALTER TABLE heaps RENAME TO heaps_real;
    CREATE VIEW heaps AS SELECT h.* FROM heaps_real h
        WHERE (SELECT count(*) FROM pragma_table_info('meta')) >= 0;" \
    || die "cannot prepare evil.sqlite"
sqlite3 evil.sqlite 'SELECT count(*) FROM heaps' >/dev/null || die "evil.sqlite is broken"
"$ANALYZE" summary evil.sqlite >/dev/null 2>err.txt && die "summary used the schema's pragma_table_info"
grep -q -i 'unsafe' err.txt || die "summary on evil.sqlite: $(cat err.txt)"
expect_eq "stderr lines for evil.sqlite" "$(wc -l <err.txt)" 1

# ---- (1) setuid / setgid -------------------------------------------------------
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
    echo "security: read-only queries ok; setuid part needs root and setpriv" >&2
    exit 77
fi
CC=${CC:-cc}
command -v "$CC" >/dev/null || { echo "no C compiler for the setuid test program" >&2; exit 77; }
nobody=65534
daemon_uid=$(id -u daemon 2>/dev/null) || { echo "no 'daemon' user" >&2; exit 77; }
daemon_gid=$(id -g daemon)
# The unprivileged user must reach the test directory.
chmod 0711 .
mkdir lib out
cp "$VHEAP_LIB" lib/libvheap.so
chmod 0755 lib lib/libvheap.so
chmod 1777 out                  # world-writable with sticky bit: allowed
cat >prog.c <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static void *volatile keep;     /* the compiler must not drop the pairs */
int main(void)
{
    for (int i = 0; i < 100; i++) {
        keep = malloc(100 + (size_t)i);
        free(keep);
    }
    printf("ruid=%d euid=%d rgid=%d egid=%d\n", (int)getuid(), (int)geteuid(), (int)getgid(),
           (int)getegid());
    return 0;
}
EOF
"$CC" -O1 -o linked prog.c -L"$PWD/lib" -Wl,-rpath,"$PWD/lib" -Wl,--no-as-needed -lvheap \
    || die "cannot build the test program"
as_nobody() { setpriv --reuid=$nobody --regid=$nobody --clear-groups "$@"; }
# run_as NAME PROGRAM [ENV...]: PROGRAM as nobody, its output in NAME.out
run_as() {
    _n=$1 _p=$2; shift 2
    as_nobody env VHEAP_OUT="$PWD/out/$_n.vhcap" VHEAP_QUIET=1 "$@" "$_p" >"$_n.out" 2>"$_n.err" \
        || die "$_n: exit $?: $(cat "$_n.err")"
}
captures() { ls out | grep -c "^$1\.vhcap" || true; }

# Control: not setuid, run by nobody: the linked shim records, as nobody.
cp linked plain
chmod 0755 plain
run_as plain ./plain
expect_eq "captures of the plain program" "$(captures plain)" 1
expect_eq "owner of its capture" "$(stat -c %u:%a out/plain.vhcap)" "$nobody:600"
n=$("$ANALYZE" dump --no-header out/plain.vhcap | awk '$3 == "alloc" && $7 ~ /^size=1[0-9][0-9]$/' | wc -l)
[ "$n" -ge 100 ] || die "the plain program's capture has $n of its 100 allocations"

# setuid daemon, run by nobody: AT_SECURE. Nothing, and silent.
cp linked suid
chown "$daemon_uid:$daemon_gid" suid
chmod 4755 suid
run_as suid ./suid
grep -q "euid=$daemon_uid " suid.out || die "setuid did not take effect: $(cat suid.out)"
expect_eq "captures of a setuid program" "$(captures suid)" 0
expect_eq "stderr of a setuid program" "$(cat suid.err)" ""
# VHEAP_ALLOW_SETUID=1 from an unprivileged user is not honoured: the
# environment is theirs, the program's privileges are not.
run_as suid_allowed ./suid VHEAP_ALLOW_SETUID=1
expect_eq "captures of a setuid program, VHEAP_ALLOW_SETUID=1 set by nobody" "$(captures suid_allowed)" 0

# setgid daemon (owner root), run by nobody.
cp linked sgid
chown "0:$daemon_gid" sgid
chmod 2755 sgid
run_as sgid ./sgid
grep -q "egid=$daemon_gid" sgid.out || die "setgid did not take effect: $(cat sgid.out)"
expect_eq "captures of a setgid program" "$(captures sgid)" 0
run_as sgid_allowed ./sgid VHEAP_ALLOW_SETUID=1
expect_eq "captures of a setgid program, VHEAP_ALLOW_SETUID=1 set by nobody" "$(captures sgid_allowed)" 0
# Started by root with VHEAP_ALLOW_SETUID=1: recorded, the capture belongs to
# the effective user, 0600. (root running a setgid program: AT_SECURE holds.)
env VHEAP_OUT="$PWD/out/sgid_root.vhcap" VHEAP_ALLOW_SETUID=1 setpriv --reuid=0 --regid=0 --clear-groups ./sgid >sgid_root.out 2>&1 \
    || die "sgid run by root exited $?: $(cat sgid_root.out)"
expect_eq "captures of a setgid program run by root with VHEAP_ALLOW_SETUID=1" "$(captures sgid_root)" 1
expect_eq "mode of its capture" "$(stat -c %a out/sgid_root.vhcap)" "600"

# The usual way in, LD_PRELOAD with a path, never reaches a setuid program:
# ld.so drops it (the shim's own check above is the second line).
cp "$PROGS/exec_target" suid_target
chown "$daemon_uid:$daemon_gid" suid_target
chmod 4755 suid_target
as_nobody env VHEAP_OUT="$PWD/out/preload.vhcap" VHEAP_ALLOW_SETUID=1 \
    LD_PRELOAD="$PWD/lib/libvheap.so" ./suid_target 3 100 >preload.out 2>&1 \
    || die "suid_target exited $?: $(cat preload.out)"
expect_eq "captures of a setuid program through LD_PRELOAD=/path" "$(captures preload)" 0
echo "security: read-only queries, untrusted schema refused, setuid/setgid silent unless allowed"
