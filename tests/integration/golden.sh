# golden.sh — small synthetic captures in, expected JSON out.
#
# Each tests/golden/NAME.spec is turned into a capture by tests/golden/gen.c,
# loaded (without symbols: the modules are made up), and queried with
# summary, leaks, peak and top --by each measure in --format json. Two checks:
#  - the spec's `expect COMMAND PATH VALUE` lines, computed by hand from the
#    events (so a wrong loader cannot bless its own output);
#  - the whole JSON against tests/golden/NAME.COMMAND.json, so that any change
#    in what the commands print is seen. After reviewing a deliberate change,
#    regenerate those files with:  GOLDEN_UPDATE=1 tests/run-integration.sh golden
. "$TOP/tests/lib.sh"

[ -x "$ANALYZE" ] || { echo "no analyzer at $ANALYZE" >&2; exit 77; }
need_cmd python3
for c in summary leaks peak top; do
    "$ANALYZE" "$c" --help >/dev/null 2>&1 || { echo "no '$c' command yet" >&2; exit 77; }
done

cc -O1 -I"$TOP" -o gen "$TOP/tests/golden/gen.c" || die "cannot build tests/golden/gen.c"
here=$(pwd -P)
golden="$TOP/tests/golden"
fails=0

for spec in "$golden"/*.spec; do
    name=$(basename "$spec" .spec)
    ./gen "$spec" "$name.vhcap" || die "$name: gen failed"

    want_rc=$(awk '$1 == "expect" && $2 == "load-exit" { print $3 }' "$spec")
    "$ANALYZE" load -q --no-symbols --no-progress "$name.vhcap" "$name.sqlite" 2>"$name.load.err"
    rc=$?
    [ "$rc" = "${want_rc:-0}" ] || {
        cat "$name.load.err" >&2
        die "$name: load exited $rc, want ${want_rc:-0}"
    }

    for key in summary leaks peak top-allocations top-bytes top-temporary top-peak top-leaked; do
        case $key in
        top-*) set -- top "$name.sqlite" --by "${key#top-}" ;;
        *) set -- "$key" "$name.sqlite" ;;
        esac
        "$ANALYZE" "$@" --format json --limit 0 >"$name.$key.raw" 2>"$name.$key.err"
        rc=$?
        # summary shows a damaged capture (load exit 1) whole, then exits 1
        want_q=0
        [ "$key" = summary ] && [ "${want_rc:-0}" = 1 ] && want_q=1
        [ $rc -eq $want_q ] || die "$name: $* exited $rc, want $want_q: $(cat "$name.$key.err")"
        # the capture's absolute path is the only thing that depends on where
        # the test runs
        sed "s|$here/||g" "$name.$key.raw" >"$name.$key.json"
        if [ -n "${GOLDEN_UPDATE:-}" ]; then
            cp "$name.$key.json" "$golden/$name.$key.json"
        elif [ ! -f "$golden/$name.$key.json" ]; then
            echo "FAIL: $name: no $golden/$name.$key.json (GOLDEN_UPDATE=1 makes it)" >&2
            fails=$((fails + 1))
        elif ! json_diff "$golden/$name.$key.json" "$name.$key.json" >&2; then
            echo "FAIL: $name: $key output differs from $name.$key.json" >&2
            fails=$((fails + 1))
        fi
    done

    python3 - "$spec" "$name" <<'EOF' || fails=$((fails + 1))
import json, sys
spec, name = sys.argv[1], sys.argv[2]
bad = 0
for line in open(spec):
    w = line.split()
    if len(w) < 4 or w[0] != "expect" or w[1] == "load-exit":
        continue
    key, path, want = w[1], w[2], " ".join(w[3:])
    v = json.load(open(f"{name}.{key}.json"))
    try:
        for p in path.split("."):
            v = v[int(p)] if isinstance(v, list) else v[p]
    except (KeyError, IndexError, ValueError):
        print(f"FAIL: {name}: {key}: no {path}", file=sys.stderr)
        bad += 1
        continue
    got = v if isinstance(v, str) else json.dumps(v)
    if got != want:
        print(f"FAIL: {name}: {key} {path}: got {got}, want {want}", file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
EOF
done

[ "$fails" -eq 0 ] || die "$fails golden check(s) failed"
