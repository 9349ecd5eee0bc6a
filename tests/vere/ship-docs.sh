# ship-docs.sh — docs/vere.md's developer session on the real ship, sourced
# by ship.sh (its helpers, $W, $VH, $PLAIN, $SHIM, $PILL). Defines:
#  doc_session  every ```sh block of docs/vere.md is a step (`<!-- step:
#               NAME -->` before it) or says why it is not run (`<!-- not
#               run: why -->`); an unmarked block fails. The steps run in
#               the doc's order, as written, in one shell (a step's shell
#               variables and functions are the next one's), in one network
#               namespace, in $W/s with the doc's variables set to this
#               run's build and folders; `set -e`: a command that fails
#               fails its step and ends the session. Each step's output is
#               $W/step-NAME.log. With a kept boot (VHEAP_VERE_BOOTED) the
#               boot step is not run: the kept pier and captures stand in.
#               Then what each step must have shown: the least headroom,
#               grab's owners labelled 'grab', Vere's two leaks by their
#               stacks, the running ship's two snapshots labelled 'quac' with
#               their entries cut to what the sample may hold, its loom live.
#  doc_sql      every SQL example runs on the restarted serf's DB and on
#               meld's, each answering on one of them.
DOC_MD=$TOP/docs/vere.md

# The steps as files $W/doc/NN-NAME.sh and their names in $W/doc/steps.
doc_steps() {
    python3 - "$DOC_MD" "$W/doc" <<'PY'
import os, re, sys
text, out = open(sys.argv[1]).read(), sys.argv[2]
os.makedirs(out, exist_ok=True)
names, bad = [], 0
for m in re.finditer(r"(?:<!-- (step|not run): *(.*?) -->\n)?```sh\n(.*?)```", text, re.S):
    kind, name, body = m.groups()
    if not kind:
        print("a sh block neither a step nor 'not run': %s" % body.splitlines()[0])
        bad = 1
    elif kind == "step":
        if name in names:
            print("step %s twice" % name)
            bad = 1
        names.append(name)
        open(os.path.join(out, "%02d-%s.sh" % (len(names), name)), "w").write(body)
open(os.path.join(out, "steps"), "w").write("\n".join(names) + "\n")
sys.exit(bad)
PY
}

# The session's script: the doc's variables, then each step sourced with
# its output in its log; the boot's pier is copied out for ship.sh's runs.
doc_script() {
    local n f
    cat <<EOF
set -e
trap 'echo "step \$step: exit \$? at: \$BASH_COMMAND" >>"$W/steps.failed"' ERR
cd "$W/s"
urbit=$VH libvheap=$SHIM pill=$PILL vheap=$TOP cap=$W/cap
PATH=$B:\$PATH
EOF
    for f in "$W"/doc/[0-9]*.sh; do
        n=$(basename "$f" .sh)
        n=${n#*-}
        if [ "$n" = boot ] && [ -n "${VHEAP_VERE_BOOTED:-}" ]; then
            echo "cp -a '$W/zod' zod    # a kept boot stands in for step boot"
        else
            echo "step=$n"
            echo "{ . '$f'; } >'$W/step-$n.log' 2>&1"
            echo "echo $n >>'$W/steps.done'"
            [ "$n" = boot ] && echo "cp -a zod '$W/zod'; cp '$W/step-boot.log' '$W/boot-vheap.log'; echo 0 >'$W/boot-vheap.rc'"
        fi
        if [ "$n" = boot ]; then doc_plain; fi
    done
}

# After the boot: grab, pack and meld by the plain runtime on copies of the
# pier the session's own grab, pack and meld copy, for ship.sh's `same`.
doc_plain() {
    local u
    for u in grab pack meld; do
        echo "cp -a zod '$W/$u-plain'; rc=0"
        echo "'$PLAIN' $u '$W/$u-plain' </dev/null >'$W/$u-plain.log' 2>&1 || rc=\$?"
        echo "echo \$rc >'$W/$u-plain.rc'"
    done
}

doc_session() {
    log "docs/vere.md's session, step by step"
    doc_steps >"$W/doc-steps.err" || { bad "docs/vere.md's sh blocks: $(cat "$W/doc-steps.err")"; return; }
    rm -rf "$W/s" && mkdir -p "$W/s" "$W/cap"
    : >"$W/steps.done"
    doc_script >"$W/session.sh"
    local want done failed
    if ! timeout 5400 "$SHARED/netns.sh" bash "$W/session.sh" </dev/null >"$W/session.log" 2>&1; then
        failed=$(sed -n '1s/^step \([^:]*\):.*/\1/p' "$W/steps.failed" 2>/dev/null)
        bad "the session stopped: $(head -n 1 "$W/steps.failed" 2>/dev/null); the step's last lines:"
        tail -n 8 "$W/step-$failed.log" 2>/dev/null
    fi
    want=$(grep -v '^boot$' "$W/doc/steps" | tr '\n' ' ')
    done=$(grep -v '^boot$' "$W/steps.done" | tr '\n' ' ')
    [ "$want" = "$done" ] || bad "the session ran steps '$done', the doc has '$want'"
    log "session: steps $(tr '\n' ' ' <"$W/steps.done")"
    for u in grab pack meld; do    # Vere's own report, as ship.sh compares it with plain
        cp "$W/step-$u.log" "$W/$u-vheap.log" 2>/dev/null
        echo 0 >"$W/$u-vheap.rc"
    done
    doc_shown
}

# doc_saw STEP PATTERN WHAT: step STEP's output shows PATTERN
doc_saw() {
    grep -qE "$2" "$W/step-$1.log" 2>/dev/null || bad "step $1 does not show $3: $(head -n 5 "$W/step-$1.log" 2>/dev/null)"
}

# What the steps must have shown, and the snapshots' labels (the patch labels
# each by what ran the walk).
doc_shown() {
    doc_saw boot-read 'least headroom: .* in use at once' "the least headroom"
    doc_saw boot-read '(two/turn|ut/mint|by/put)' "jet tags"
    doc_saw grab-read 'arvo/vane/ames' "grab's owners"
    doc_saw pack 'compaction would reclaim' "frag's prediction"
    doc_saw meld 'compaction would reclaim' "frag's prediction for meld's pack"
    doc_saw leaks 'u3j_boot .*' "u3j_boot's jet table"
    doc_saw leaks 'u3_melt_all' "the jet table a meld allocates again"
    doc_saw leaks 'u3a_pack_init' "u3a_pack_init's bitmap"
    doc_saw run-read 'event [0-9]+ %' "events by their vane"
    local grab run
    grab=$(ls "$W"/cap/grab.*.vhcap.sqlite 2>/dev/null | head -n 1)
    run=$(ls "$W"/cap/run.*.vhcap.sqlite 2>/dev/null | head -n 1)
    [ -n "$grab" ] && [ -n "$run" ] || { bad "no DB of the session's grab ('$grab') or run ('$run')"; return; }
    python3 - "$grab" "$run" <<'PY' >"$W/session-snapshots.txt" 2>&1 || bad "the session's snapshots: $(cat "$W/session-snapshots.txt")"
import sqlite3, sys
grab, run = (sqlite3.connect(p) for p in sys.argv[1:3])
q = "SELECT label, complete, blocks, walk_bytes FROM owner_snapshots ORDER BY id"
g, r = grab.execute(q).fetchall(), run.execute(q).fetchall()
entries = [run.execute("SELECT count(*) FROM owned_blocks WHERE snapshot_id = ? AND address != 0",
                       (i,)).fetchone()[0] for i in (1, 2)]
named = grab.execute("SELECT count(*) FROM owned_blocks WHERE address != 0").fetchone()[0]
live = run.execute("SELECT max(live_bytes) FROM heaps WHERE name = 'loom'").fetchone()[0] or 0
print("snapshots: grab %s; running ship %s; entries with an address %s (grab in full: %d); "
      "the running loom's live bytes %d (estimated)" % (g, r, entries, named, live))
ok = ([x[0] for x in g] == ["grab"] and [x[0] for x in r] == ["quac", "quac"]
      and all(x[1] for x in g + r) and all(x[3] > 10 << 20 for x in r)
      and max(entries) < named // 20 and live > 10 << 20)
sys.exit(0 if ok else 1)
PY
    log "$(cat "$W/session-snapshots.txt")"
}

# Every SQL example runs on the restarted serf's DB and on meld's; each
# answers on one of them.
doc_sql() {
    local meld
    meld=$(ls "$W"/cap/meld.*.vhcap | head -n 1)
    [ -f "$meld.sqlite" ] || "$ANALYZE" load -q "$meld" "$meld.sqlite" || bad "load $meld failed"
    DOC=$DOC_MD python3 - "$W/serf.sqlite" "$meld.sqlite" <<'PY' || bad "docs/vere.md's SQL (above)"
import os, re, sqlite3, sys
blocks = re.findall(r"```sql\n(.*?)```", open(os.environ["DOC"]).read(), re.S)
bad = 0
for i, sql in enumerate(blocks):
    answered = False
    for path in sys.argv[1:]:
        try:
            answered |= bool(sqlite3.connect(path).execute(sql).fetchall())
        except sqlite3.Error as e:
            print("SQL example %d fails on %s: %s" % (i + 1, path, e)); bad = 1
    if not answered:
        print("SQL example %d answers nothing on either DB:\n%s" % (i + 1, sql)); bad = 1
sys.exit(bad)
PY
    # the inner road alive at the end of a capture is occupied, not a hole
    "$ANALYZE" frag "$W/serf.sqlite" --heap loom --format json >"$W/end-frag.json" 2>/dev/null &&
        [ "$(json 'd["frag"]["largest_hole"] < 1 << 30' <"$W/end-frag.json")" = True ] ||
        bad "frag at the end counts a gigabyte hole in the loom"
}
