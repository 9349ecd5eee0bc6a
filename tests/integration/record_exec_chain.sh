# record_exec_chain — `record` summarizes what the user meant when the
# program is reached through wrappers that exec: `sh -c 'exec PROG'` and
# `env env PROG` (each image writes a capture of its own, named by its own
# executable, so the .N suffixes restart). The summary must be PROG's (its
# executable, its allocations: demo_app's 697), stderr must say which
# capture was summarized and list the wrappers' images as earlier images
# with how to load them, and --format json must describe PROG too.
. "$TOP/tests/lib.sh"
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/demo_app"
prog="$PROGS/demo_app"

# chain NAME WANT_IMAGES ARGS...: record ARGS, check the summary is demo_app's
chain() {
    n=$1 images=$2
    shift 2
    mkdir "$n"
    (cd "$n" && "$ANALYZE" record -- "$@" >out 2>err) || die "$n: record failed: $(cat "$n/err")"
    grep -q "^executable: $prog\$" "$n/out" ||
        die "$n: the summary is not demo_app's: $(grep '^executable' "$n/out")"
    grep -q "^calls to allocation functions: 697 " "$n/out" ||
        die "$n: not demo_app's 697 allocations: $(grep '^calls to alloc' "$n/out")"
    grep -q "record: summarized: $PWD/$n/vheap\.demo_app\.[0-9]*\.vhcap (pid [0-9]*, demo_app: the last of its $images exec'd images)" "$n/err" ||
        die "$n: stderr does not say demo_app's capture was summarized: $(cat "$n/err")"
    earlier=$(grep -c "record: earlier image: .*: image [0-9] of $images, before an exec)" "$n/err")
    expect_eq "$n: earlier images listed" "$earlier" "$((images - 1))"
    grep -q "load another capture with \`vheap-analyze load CAPTURE\`" "$n/err" ||
        die "$n: stderr does not say how to load the others"
    (cd "$n" && "$ANALYZE" record --format json -- "$@" >json 2>/dev/null) ||
        die "$n: record --format json failed"
    grep -q "\"exe\": \"$prog\"" "$n/json" || die "$n: the JSON summary is not demo_app's"
}

chain sh 2 sh -c "exec '$prog'"
grep -q "earlier image: .*/vheap\.[a-z]*sh\.[0-9]*\.vhcap (pid [0-9]*, [a-z]*sh: image 1 of 2" sh/err ||
    die "sh: the shell's image is not named: $(cat sh/err)"
chain env 3 env env "$prog"
grep -q "earlier image: .*/vheap\.env\.[0-9]*\.vhcap\.1 (pid [0-9]*, env: image 2 of 3" env/err ||
    die "env: the second env's image is not named: $(cat env/err)"
echo "record summarizes demo_app behind sh -c 'exec ...' and env env"
