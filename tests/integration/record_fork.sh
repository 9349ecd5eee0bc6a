#!/bin/sh
# record_fork.sh — `record` of a program that forks lists both captures (the
# main one and the child's, "forked by" the parent), and of one whose child
# execs another program lists the exec'd image's capture; the summary is the
# parent's.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/ht_leaky"
need_cmd cc

cat >forker.c <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
void *volatile sink;
int main(int argc, char **argv)
{
    for (int i = 0; i < 5; i++)
        sink = malloc(4321);
    printf("parent=%d\n", (int)getpid());
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        for (int i = 0; i < 3; i++)
            sink = malloc(5555);
        if (argc > 1) {
            execv(argv[1], argv + 1);
            _exit(126);
        }
        _exit(0);
    }
    printf("child=%d\n", (int)c);
    int st;
    waitpid(c, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
C
cc -O1 -o forker forker.c || die "cannot build forker"

# fork without exec
"$ANALYZE" record --out "$PWD/f.%p.vhcap" -- ./forker >out 2>err ||
    die "record failed (exit $?): $(cat err)"
parent=$(sed -n 's/^parent=//p' out)
child=$(sed -n 's/^child=//p' out)
[ -n "$parent" ] && [ -n "$child" ] || die "forker printed no pids: $(cat out)"
grep -q "record: summarized: $PWD/f\.$parent\.vhcap (pid $parent, " err ||
    die "main capture not listed: $(cat err)"
grep -q "record: child capture: $PWD/f\.$child\.vhcap.* (pid $child, forker, forked by $parent)" err ||
    die "child capture not listed: $(cat err)"
[ -f "f.$parent.vhcap" ] && [ -f "f.$child.vhcap" ] || die "captures missing: $(ls)"
grep -q '^calls to allocation functions: ' out || die "no summary: $(cat out)"
grep -q "^pid: $parent\$" out || die "the summary is not the parent's: $(cat out)"
# The child's capture holds the child's own allocations (3 x 5555 bytes).
"$ANALYZE" top "f.$child.vhcap" --format csv --limit 0 >child.csv 2>child.err ||
    die "cannot read the child's capture: $(cat child.err)"
n=$(awk -F, 'NR > 1 && $6 % 5555 == 0 && $6 > 0 { n += $5 } END { print n + 0 }' child.csv)
expect_eq "5555-byte allocations in the child's capture" "$n" 3
"$ANALYZE" summary "f.$child.vhcap" >child.txt 2>&1 || die "summary of the child failed"
grep -q '^fork child: yes$' child.txt || die "the child's capture is not marked forked"

# fork + exec: the exec'd image writes its own capture, listed as well.
"$ANALYZE" record --out "$PWD/e.%p.vhcap" -- ./forker "$PROGS/ht_leaky" >out2 2>err2 ||
    die "record (fork+exec) failed (exit $?): $(cat err2)"
parent=$(sed -n 's/^parent=//p' out2)
child=$(sed -n 's/^child=//p' out2)
grep -q "record: summarized: $PWD/e\.$parent\.vhcap (pid $parent, " err2 ||
    die "fork+exec: main capture not listed: $(cat err2)"
grep -q "record: child capture: .*(pid $child, ht_leaky, exec #1)" err2 ||
    die "fork+exec: the exec'd image's capture is not listed: $(cat err2)"

# A wrapper script that execs the real program: the program's image is the
# main capture, the shell's is listed as the image before the exec.
printf '#!/bin/sh\nexec "%s" "$@"\n' "$PROGS/ht_leaky" >wrapper.sh
chmod +x wrapper.sh
"$ANALYZE" record --out "$PWD/w.%p.vhcap" -- ./wrapper.sh >out3 2>err3 ||
    die "record of the wrapper failed (exit $?): $(cat err3)"
grep -q "^executable: .*/ht_leaky\$" out3 || die "the summary is not ht_leaky's: $(cat out3)"
grep -q "record: earlier image: .*/w\.[0-9]*\.vhcap (pid [0-9]*, [a-z]*: image 1 of 2, before an exec)" err3 ||
    die "the shell's image is not listed: $(cat err3)"
exit 0
