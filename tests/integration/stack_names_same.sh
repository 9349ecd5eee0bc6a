# stack_names_same — `series` (its top stacks) and `frag` (its map legend)
# name a stack after the same frame, in the same words: one rule
# (analyze/query/frame_rule.c) skips allocator and runtime frames for both.
# On tests/programs/cxx_syms (C++ templates, operators, a stack that is all
# libstdc++ and loader frames), every legend entry of `frag --map` must be
# the name and place `series --top 100` gives that stack, and the C++ names
# must be the short ones ("ns::Widget::grow", not "ns::Widget<int>::grow(
# unsigned long)"). Before, frag named a stack by the full signature and, when
# every frame was machinery, by the outermost frame where series took the
# innermost.
. "$TOP/tests/lib.sh"
need "$VHEAP_LIB" "$ANALYZE" "$PROGS/cxx_syms"
need_cmd python3

profile cap.vhcap "$PROGS/cxx_syms" >/dev/null || die "cxx_syms exited $?"
"$ANALYZE" load -q --no-progress cap.vhcap db.sqlite 2>load.err || die "load: $(cat load.err)"
"$ANALYZE" series db.sqlite --format json --top 100 >series.json || die "series failed"
"$ANALYZE" frag db.sqlite --map map.svg >/dev/null 2>&1 || die "frag --map failed"

python3 - <<'PY' || die "frag and series name stacks differently (see above)"
import json, re, sys, xml.dom.minidom

names = set()
for s in json.load(open("series.json"))["stacks"]:
    name, where = s["name"], s["where"]
    if where:
        line = where.rsplit(":", 1)[-1]
        if name.endswith(":" + line):       # series tells same-named apart
            name = name[: -len(line) - 1]
        names.add(f"{name} ({where})")
    else:
        names.add(name)

doc = xml.dom.minidom.parse("map.svg")
legend = []
for g in doc.getElementsByTagName("g"):
    if not g.getElementsByTagName("title"):
        continue
    texts = g.getElementsByTagName("text")
    if texts and texts[0].firstChild:
        legend.append(texts[0].firstChild.data.split(" < ")[0])
errors = []
if len(legend) < 4:
    errors.append(f"only {len(legend)} legend entries: {legend}")
for label in legend:
    ok = label in names or (label.endswith("\u2026") and
                            any(n.startswith(label[:-1]) for n in names))
    if not ok:
        errors.append(f"frag's legend says {label!r}; series' names: {sorted(names)}")
if not any(l.startswith("ns::Widget::grow (") for l in legend):
    errors.append(f"no short C++ name 'ns::Widget::grow (...)' in the legend: {legend}")
for e in errors:
    print(e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
