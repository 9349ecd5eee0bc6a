# fate_fds — the shim's descriptors stay out of the program's way.
# 1. closeall: the program closes every descriptor above 2, opens its own
#    files (they must get 3, 4, ...: nothing of the shim's sits low), dups
#    one onto the top 40 numbers (where the shim kept its own), allocates
#    (RSS samples, capture growth), forks a child that allocates: every
#    file is still itself and intact. Before, the shim's RSS re-open closed
#    one of the program's numbers and put /proc/self/statm there.
# 2. ulimit -n 4, 5, 20, 1024: the program opens as many files as without
#    the shim.
# 3. The exit line goes to fd 2 only while fd 2 is what it was at start: a
#    daemon's file put at number 2 gets nothing appended.
# 4. Control bytes in the capture's name never reach the terminal raw.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/fate"

VHEAP_OUT=cap.vhcap VHEAP_QUIET=1 VHEAP_CHUNK_SIZE=64KiB \
    timeout 60 env LD_PRELOAD="$VHEAP_LIB" "$PROGS/fate" closeall >out.txt 2>err.txt ||
    die "closeall: $(cat err.txt)"
vh_dump cap.vhcap dump.txt
child=$(ls cap.vhcap.* 2>/dev/null | head -n 1)
[ -n "$child" ] || die "the fork child wrote no capture"
"$ANALYZE" dump "$child" >/dev/null || die "the child's capture does not read"
echo "closeall: $(cat out.txt)"

# Every limit: the shim holds no descriptor (before, libunwind's pipe kept
# one end under 5 and 20, and the capture, statm and the pipe sat at the
# top under 1024).
for lim in 4 5 20 1024; do
    bare=$(sh -c 'ulimit -n $2; exec "$1" nofile' sh "$PROGS/fate" $lim)
    shim=$(sh -c 'ulimit -n $3; VHEAP_OUT=cap$3.vhcap VHEAP_QUIET=1 LD_PRELOAD="$2" exec "$1" nofile' \
        sh "$PROGS/fate" "$VHEAP_LIB" $lim)
    expect_eq "files opened under ulimit -n $lim" "$shim" "$bare"
done
n=$("$ANALYZE" dump cap4.vhcap | awk '$3 == "alloc" { n++ } END { print n + 0 }')
[ "$n" -ge 100 ] || die "ulimit -n 4: only $n allocations recorded"
echo "ulimit -n 4: $shim with and without the shim; $n allocations recorded"

# A daemon's data file at fd 2 (the shell opens it there before exec).
echo "data" >data.txt
VHEAP_OUT=cap2.vhcap LD_PRELOAD="$VHEAP_LIB" "$PROGS/fate" usable 100 >/dev/null 2>>data.txt
# The shim saw data.txt as fd 2 from the start: its line goes there. Now
# the case that matters: fd 2 replaced after start.
cat >swap.c <<'EOC'
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
int main(void)
{
    void *volatile p = malloc(100);
    free(p);
    int fd = open("daemon.dat", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    write(2, "payload\n", 8);
    p = malloc(200);
    free(p);
    return 0;
}
EOC
cc -o swap swap.c || die "cc"
VHEAP_OUT=cap3.vhcap LD_PRELOAD="$VHEAP_LIB" ./swap 2>stderr.txt
expect_eq "daemon.dat after exit" "$(cat daemon.dat)" "payload"
[ -f cap3.vhcap ] || die "no capture"

# A name with an escape sequence in it.
esc=$(printf 'cap\033[31mred.vhcap')
VHEAP_OUT="$esc" LD_PRELOAD="$VHEAP_LIB" "$PROGS/fate" usable 10 >/dev/null 2>line.txt
grep -q 'capture written to cap\\x1b\[31mred.vhcap' line.txt ||
    die "exit line: $(od -c line.txt | head -3)"
"$ANALYZE" load "$esc" 2>load.txt >/dev/null || die "load: $(cat load.txt)"
if grep -q "$(printf '\033')" line.txt load.txt; then die "a raw escape byte reached stderr"; fi
grep -q 'cap\\x1b\[31mred.vhcap' load.txt || die "load line: $(cat load.txt)"
echo "fd 2 and names: ok"
