# cli_small — small promises of the command line: `--version`; no command's
# --help prints a printf escape ("%%") literally (frag's did), and every one
# has examples; `frag --at` after the end
# of the run is an error, not an empty answer; `load` and `dump` speak JSON
# (`--format json`), and dump's JSON holds what its text holds; the
# repository has its LICENSE (MIT, "the vheap authors"). Option parsing
# (getopt_long underneath, analyze/cmd/cli.c vh_getopt): options before or
# after the operand, NAME=VALUE, "--" before an operand; an abbreviation
# ("--form"), a cluster ("-qv"), "-oFILE", a missing value, an option another
# command has, each a usage error (exit 2) naming the option. export --help
# describes every format export takes.
. "$TOP/tests/lib.sh"
need_cmd python3
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/basic"

v=$("$ANALYZE" --version) || die "--version failed"
case $v in "vheap-analyze "[0-9]*) ;; *) die "--version printed '$v'" ;; esac

for c in $("$ANALYZE" --help | sed -n 's/^  \([a-z-]*\) .*/\1/p'); do
    "$ANALYZE" "$c" --help >help.txt 2>&1 || die "$c --help failed"
    # (record's --out documents its pattern's own "%%", which means '%')
    grep -n '%%' help.txt | grep -v "%% a '%'" && die "$c --help prints a literal %% (above)"
    grep -q '^examples:' help.txt || die "$c --help has no examples"
done

profile "$PWD/b.vhcap" "$PROGS/basic" >/dev/null || die "basic failed under vheap"
"$ANALYZE" load b.vhcap b.sqlite --format json >load.json 2>load.err || die "load --format json failed"
[ -s load.err ] && die "load --format json wrote to stderr: $(cat load.err)"
python3 - <<'PY' || die "load's JSON is wrong: $(cat load.json)"
import json, sqlite3
d = json.load(open("load.json"))["load"]
db = sqlite3.connect("b.sqlite")
assert d["db"] == "b.sqlite" and d["capture"] == "b.vhcap", d
assert d["records"] == int(db.execute("SELECT value FROM meta WHERE key = 'records'").fetchone()[0]), d
assert d["stacks"] > 0 and d["frames"] > 0 and d["damage"] is None and d["damage_count"] == 0, d
PY

"$ANALYZE" dump b.vhcap >dump.txt || die "dump failed"
"$ANALYZE" dump --format json b.vhcap >dump.json || die "dump --format json failed"
"$ANALYZE" dump --format json --no-header b.vhcap >dump2.json || die "dump --format json --no-header failed"
python3 - <<'PY' || die "dump's JSON differs from its text (above)"
import json
d = json.load(open("dump.json"))
text = [l.split() for l in open("dump.txt") if l[0].isdigit()]
recs = d["records"]
assert len(recs) == len(text), (len(recs), len(text))
assert json.load(open("dump2.json"))["records"] == recs
for t, r in zip(text, recs):
    assert int(t[0]) == r["time"] and int(t[1]) == r["tid"] and t[2] == r["kind"], (t, r)
    for w in t[3:]:
        if "=" in w:
            k, v = w.split("=", 1)
            got = r[k]
            if isinstance(got, list):
                got = ",".join(got)
            assert str(got) == v, (k, v, r)
        else:
            assert w in r.get("flags", []), (w, r)
tot = d["totals"]
assert tot["records"] == len(recs) and tot["allocs"] == sum(r["kind"] == "alloc" for r in recs)
hdr = next(l.split() for l in open("dump.txt") if l.startswith("header "))
assert str(d["header"]["pid"]) == hdr[1].split("=")[1]
print("dump JSON: %d records agree with the text" % len(recs))
PY
"$ANALYZE" dump --format xml b.vhcap >/dev/null 2>&1
expect_eq "dump --format xml" "$?" 2

runtime=$(sqlite3 b.sqlite "SELECT runtime_ns FROM processes")
"$ANALYZE" frag b.sqlite --at 99s >/dev/null 2>err.txt
rc=$?
[ "$rc" -ne 0 ] || die "frag --at 99s on a ${runtime} ns run was accepted"
grep -q "after the end of the run" err.txt || die "frag --at 99s: no reason given: $(cat err.txt)"
"$ANALYZE" frag b.sqlite --at "$((runtime / 2))ns" >/dev/null 2>err.txt ||
    die "frag --at within the run failed: $(cat err.txt)"

# usage_error WANT-TEXT COMMAND...: exit 2, and stderr says WANT-TEXT.
usage_error() {
    _want=$1; shift
    "$ANALYZE" "$@" >/dev/null 2>err.txt
    _rc=$?
    [ "$_rc" = 2 ] || die "$*: exit $_rc, want 2 ($(cat err.txt))"
    grep -qF -- "$_want" err.txt || die "$*: stderr '$(cat err.txt)', want '$_want'"
}
a=$("$ANALYZE" summary --format json b.sqlite) || die "summary --format json DB failed"
b=$("$ANALYZE" summary b.sqlite --format=json) || die "summary DB --format=json failed"
c=$("$ANALYZE" summary --format json -- b.sqlite) || die "summary --format json -- DB failed"
[ "$a" = "$b" ] && [ "$a" = "$c" ] || die "summary's output depends on where its options are"
"$ANALYZE" leaks b.sqlite --min-bytes=1Ki --limit 3 --growth --min-r2=0.5 >/dev/null ||
    die "leaks with its own options and shared ones mixed failed"
"$ANALYZE" export b.sqlite --format=flamegraph -o=fg.txt && [ -s fg.txt ] || die "export -o=FILE failed"
"$ANALYZE" symbolize -- b.sqlite >/dev/null || die "symbolize -- DB failed"
"$ANALYZE" load -q --no-progress -- b.vhcap b2.sqlite || die "load -- CAPTURE DB failed"
usage_error "unknown option '--form'" summary b.sqlite --form json
usage_error "unknown option '--lim'" top --lim 3 b.sqlite
usage_error "unknown option '-qv'" load -qv b.vhcap b3.sqlite
usage_error "unknown option '-ofg.txt'" export b.sqlite --format flamegraph -ofg.txt
usage_error "unknown option '--min-bytes'" top b.sqlite --min-bytes 4K
usage_error "unknown option '--format'" report b.sqlite -o r.html --format json
usage_error "unknown option '--bytes=1'" peak b.sqlite --bytes=1
usage_error "--limit needs a value (see --help)" leaks b.sqlite --limit
usage_error "--min-r2 needs a value (see --help)" leaks b.sqlite --growth --min-r2
usage_error "-o needs a value (see --help)" export b.sqlite --format massif -o
usage_error "--exe-path needs a value" load b.vhcap b3.sqlite --exe-path
usage_error "--search-dir /nonexistent: not a directory" symbolize b.sqlite --search-dir /nonexistent
usage_error "one DB or capture expected, got 'b.sqlite' and 'x'" heaps b.sqlite x
usage_error "too many arguments" load b.vhcap b3.sqlite x
usage_error "unknown option '--no-head'" dump --no-head b.vhcap
usage_error "--format: '' is not text or json" dump b.vhcap --format
usage_error "one capture at a time" dump b.vhcap b.vhcap
usage_error "--out needs a value" record --out
usage_error "unknown option '--outx'" record --outx x "$PROGS/basic"
usage_error "no PROGRAM to run" record --no-load --
[ ! -e b3.sqlite ] || die "a refused load wrote its DB"

# every format export takes (its "--format is needed" list) has its
# paragraph in export --help (pprof had none)
fmts=$("$ANALYZE" export b.sqlite -o x.out 2>&1 | sed -n 's/.*--format is needed: //p' |
       sed 's/ or /, /; s/,//g')
[ -n "$fmts" ] || die "export without --format does not list the formats"
"$ANALYZE" export --help >help.txt
for f in $fmts; do
    grep -q "^  $f  " help.txt || die "export --help has no paragraph for --format $f"
done

grep -q "^MIT License" "$TOP/LICENSE" || die "no MIT LICENSE at the top of the repository"
grep -q "Copyright (c) the vheap authors" "$TOP/LICENSE" || die "LICENSE names no vheap authors"
echo "--version, --help texts, frag --at, load/dump JSON, option parsing and the LICENSE are as promised"
