# ship-docs.sh — docs/vere.md's commands on the real ship, sourced by ship.sh
# (its helpers and $W: the booted pier $W/zod, the captures in $W/cap). Each
# command of sections 3 and 4 runs as the guide shows it, with this run's
# paths; the SQL examples run on the restarted serf's DB and on meld's.

# section 3: the capture loop names the serf's capture (argv 1 "work")
loop=$(cd "$W/cap" && for c in restart.*.vhcap*; do
    case $c in *.sqlite) continue ;; esac
    printf '%s: ' "$c"; "$ANALYZE" dump "$c" | sed -n 's/^argv 1 //p' | head -n 1
done)
echo "$loop" | grep -q ': work$' || bad "the capture loop finds no serf: $loop"
SERF=$(serf_capture work restart) || bad "no capture of the restarted serf"
"$ANALYZE" load -q "$SERF" "$W/serf.sqlite" || bad "load $SERF failed"
DB=$W/serf.sqlite

# section 4: each command must run and answer
doc() {
    "$ANALYZE" "$@" >"$W/doc.out" 2>"$W/doc.err" || { bad "vheap-analyze $*: $(cat "$W/doc.err")"; return; }
    [ -s "$W/doc.out" ] || bad "vheap-analyze $* printed nothing"
}
doc heaps "$DB" --heap 'loom/*' --limit 30
doc summary "$DB" --heap loom
doc top "$DB" --heap loom --by peak --depth 8
doc top "$DB" --by-tag --heap 'loom/*' --by bytes --limit 20
grep -q '/' "$W/doc.out" || bad "top --by-tag shows no jet tag: $(head -n 5 "$W/doc.out")"
doc frag "$DB" --heap loom
grep -q 'RSS - live usable: -' "$W/doc.out" && bad "frag prints a negative RSS line"
doc frag "$DB" --heap 'loom/*' --series
doc leaks "$DB" --heap malloc
doc series "$DB" --heap malloc
doc summary "$DB" --heap 'loom/*' --limit 5
# who holds the loom: grab's ownership snapshot (loaded by ship.sh already)
doc owners "$GRAB" --limit 0
doc owners "$GRAB" --owner arvo/vane/ames --by stack --depth 8
doc frag "$GRAB" --by owner
doc export -f flamegraph --cost owned "$GRAB" -o -
n=$("$ANALYZE" summary "$DB" --heap 'loom/*' --limit 5 --format json | json 'len(d["heaps"])')
[ "$n" -le 5 ] || bad "summary --limit 5 lists $n heaps"
MELD=$(ls "$W"/cap/meld.*.vhcap | head -n 1)
"$ANALYZE" load -q "$MELD" "$W/meld.sqlite" || bad "load $MELD failed"
# the inner road alive at the end of a capture is occupied, not a hole
# (the boot's serf ends inside no event; the restart's may)
"$ANALYZE" frag "$DB" --heap loom --format json >"$W/end-frag.json" 2>/dev/null &&
    [ "$(json 'd["frag"]["largest_hole"] < 1 << 30' <"$W/end-frag.json")" = True ] ||
    bad "frag at the end counts a gigabyte hole in the loom"

# every SQL example runs on both; each answers on one of them
DOC=$TOP/docs/vere.md python3 - "$DB" "$W/meld.sqlite" <<'PY' || bad "docs/vere.md's SQL (above)"
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

# section 3, running a ship for days: sampled, paused, the serf switched on
# by pid, a mark, events (HTTP requests), off; then leaks --growth
log "days-long session: sampled, paused, ctl start on the serf"
rm -rf "$W/days" && cp -a "$W/zod" "$W/days"
"$SHARED/netns.sh" env VHEAP_SAMPLE=512KiB VHEAP_START=paused VHEAP_OUT="$W/cap/days.%p.vhcap" \
    LD_PRELOAD="$SHIM" "$VH" -t -L "$W/days" </dev/null >"$W/days.log" 2>&1 &
KING=$!
for i in $(seq 600); do
    grep -q 'web interface live' "$W/days.log" 2>/dev/null && break
    sleep 1
done
port=$(tr -d '\r' <"$W/days.log" | sed -n 's/.*web interface live on http:\/\/localhost:\([0-9]*\).*/\1/p' | head -n 1)
serf=$(pgrep -f "work --snap-dir $W/days" | head -n 1)   # the doc: pgrep -f 'urbit work'
if [ -z "$port" ] || [ -z "$serf" ]; then
    bad "the paused ship did not come up (port '$port', serf '$serf'): $(tail -n 5 "$W/days.log")"
else
    "$ANALYZE" ctl start "$serf" >/dev/null || bad "ctl start $serf (the serf) failed"
    "$ANALYZE" ctl mark "before |pack" "$serf" >/dev/null || bad "ctl mark failed"
    for i in 1 2 3 4 5; do
        nsenter -t "$KING" -n curl -s -o /dev/null "http://127.0.0.1:$port/~/login"
        sleep 1
    done
    "$ANALYZE" ctl stop "$serf" >/dev/null || bad "ctl stop failed"
    cap=$("$ANALYZE" ctl status "$serf" | sed 's/.* capture=//')
    kill -TERM "$KING"
    wait "$KING"
    KING=
    log "days-long: the serf's capture $(basename "$cap")"
    "$ANALYZE" leaks --growth "$cap" >"$W/growth.out" 2>"$W/doc.err" ||
        bad "leaks --growth $cap: $(cat "$W/doc.err")"
    "$ANALYZE" summary "$cap" --heap loom --format json >"$W/days.json" 2>"$W/doc.err" ||
        bad "the paused serf's capture has no loom: $(cat "$W/doc.err")"
    live=$(json 'max(h["live_bytes"] for h in d["heaps"])' <"$W/days.json" 2>/dev/null || echo 0)
    log "days-long: the loom's live bytes once switched on: $live (estimated)"
    [ "${live:-0}" -gt $((10 << 20)) ] ||
        bad "the serf switched on records no loom (live $live B; grab counts $marked)"
fi
