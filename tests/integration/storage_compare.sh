# storage_compare.sh — every query's output on fixed captures, against the
# outputs of the analyzer before stacks were stored as a tree (commit
# 6cb8794, with a stack_frames table): summary, leaks, peak, top --by each
# measure, series, frag (one moment and --series) and every export format.
# The captures: the golden specs (tests/golden/*.spec, through gen.c) and a
# real one, tests/golden/compare/stack_fill.vhcap.zst (bench-like: 3579
# distinct 14-20 frame stacks from tests/programs/stack_fill 2 3000), loaded
# without symbols (the programs' binaries are not where they were). After a
# deliberate change in what a command prints, review and regenerate with
#   COMPARE_UPDATE=1 tests/run-integration.sh storage_compare
# The outputs (80 MB, mostly the top lists of the real capture in JSON) are
# kept as their SHA-256 in tests/golden/compare/outputs.sha256.
. "$TOP/tests/lib.sh"

[ -x "$ANALYZE" ] || { echo "no analyzer at $ANALYZE" >&2; exit 77; }
need_cmd zstd

want="$TOP/tests/golden/compare"
here=$(pwd -P)
cc -O1 -I"$TOP" -o gen "$TOP/tests/golden/gen.c" || die "cannot build tests/golden/gen.c"
zstd -q -d -c "$want/stack_fill.vhcap.zst" >stack_fill.vhcap || die "cannot unpack the capture"
names=stack_fill
for spec in "$TOP"/tests/golden/*.spec; do
    n=$(basename "$spec" .spec)
    grep -q '^expect load-exit' "$spec" && continue      # refused captures
    ./gen "$spec" "$n.vhcap" || die "$n: gen failed"
    names="$names $n"
done

for n in $names; do
    "$ANALYZE" load -q --no-symbols --no-progress "$n.vhcap" "$n.sqlite" 2>"$n.load.err" ||
        die "$n: load failed: $(cat "$n.load.err")"
    for key in summary leaks peak top-allocations top-bytes top-temporary top-peak top-leaked \
               top-max-live series series-json frag frag-json frag-series \
               flamegraph massif heaptrack chrome-trace; do
        case $key in
        top-*) set -- top "$n.sqlite" --by "${key#top-}" --limit 0 --format json ;;
        summary|leaks|peak) set -- "$key" "$n.sqlite" --limit 0 --format json ;;
        series) set -- series "$n.sqlite" --top 5 --bytes ;;
        series-json) set -- series "$n.sqlite" --top 5 --format json ;;
        frag) set -- frag "$n.sqlite" --limit 0 --bytes ;;
        frag-json) set -- frag "$n.sqlite" --at peak --limit 0 --format json ;;
        frag-series) set -- frag "$n.sqlite" --series --format csv ;;
        *) set -- export --format "$key" "$n.sqlite" -o - ;;
        esac
        [ "$key" = summary ] && set -- summary "$n.sqlite" --format json
        [ "$key" = peak ] && set -- peak "$n.sqlite" --limit 0 --format json
        "$ANALYZE" "$@" >"$n.$key.raw" 2>"$n.$key.err" ||
            die "$n: $* failed: $(cat "$n.$key.err")"
        sed "s|$here/||g" "$n.$key.raw" >"$n.$key.out"
        echo "$(sha256sum <"$n.$key.out" | cut -d' ' -f1) $n.$key" >>got.sha256
        rm -f "$n.$key.raw"
    done
done
if [ -n "${COMPARE_UPDATE:-}" ]; then
    cp got.sha256 "$want/outputs.sha256"
    exit 0
fi
[ -f "$want/outputs.sha256" ] || die "no $want/outputs.sha256 (COMPARE_UPDATE=1 makes it)"
# the outputs that differ, by name (their text is here, *.out, to look at)
fails=$(sort -k2 "$want/outputs.sha256" | join -1 2 -2 2 -a 1 -a 2 -e none -o 0,1.1,2.1 - \
        "$(sort -k2 got.sha256 >got.sorted && echo got.sorted)" | awk '$2 != $3 { print $1 }')
for f in $fails; do echo "FAIL: $f differs from the output before the storage change" >&2; done
[ -z "$fails" ] || die "$(echo $fails | wc -w) output(s) differ"
