# ship-events.sh — events, headroom and jets on the real ship, sourced by
# ship.sh (its helpers and $W: the restarted pier $W/zod, the captures in
# $W/cap, the runs' logs). Checks, against Vere's own accounting:
#  - events: the restarted serf marks each event once, as it commits, with
#    its vane; the numbers run in order up to the event log's last
#    (`urbit info` on a copy of the pier afterwards), none twice;
#  - headroom: the restarted serf's least headroom (summary) is the loom's
#    size less the loom's and its live roads' usable bytes at that instant
#    as `frag --at` rebuilds them from the event stream, road by road;
#  - jets, on the sampled boot: one 'boot 1-N' mark; the tags that allocate
#    most are jets named as the jet dashboard nests them (two/turn,
#    ut/mint); no tag level lost however deep the jets nest (the shim says
#    "tag stack deeper" on stderr when one is);
#  - headroom on the sampled boot: the least headroom is the loom's size
#    less its in-use at that instant, in the boot's event, its road alive
#    then, the events' most in use the same, and series' replay of the
#    stored events there short of it by no more than the blocks' slack. The
#    road-by-road equality is the restart's: frag refuses a sampled capture
#    (and a sampled one records no regions), and a boot recorded in full
#    writes tens of GB.

log "events, headroom, jets"
[ -f "$W/serf.sqlite" ] || { SERF=$(serf_capture work restart) &&
    "$ANALYZE" load -q "$SERF" "$W/serf.sqlite"; } || bad "no DB of the restarted serf"
rm -rf "$W/info-after" && cp -a "$W/zod" "$W/info-after"
"$PLAIN" info "$W/info-after" </dev/null >"$W/info.log" 2>&1 || bad "urbit info failed: $(tail -n 3 "$W/info.log")"
last=$(tr -d '\r' <"$W/info.log" | sed -n 's/.*disk:.* event=\([0-9]*\).*/\1/p' | head -n 1)
live=$(tr -d '\r' <"$W/restart-vheap.log" | sed -n 's/^pier (\([0-9]*\)): live.*/\1/p' | head -n 1)
log "events: the event log ends at ${last:-?}; the restart said 'pier (${live:-?}): live'"
python3 - "$W/serf.sqlite" "${last:-0}" "${live:-0}" <<'PY' || bad "the restarted serf's event marks (above)"
import re, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
last, live = int(sys.argv[2]), int(sys.argv[3])
vanes = {"ames", "behn", "clay", "dill", "eyre", "gall", "iris", "jael", "khan", "lick", "arvo"}
nums, bad = [], []
for (label,) in db.execute("SELECT label FROM marks ORDER BY time"):
    m = re.match(r"(event|replay) (\d+) %(\S+) (/\S*)", label)
    if re.match(r"(event|replay) ", label) and not m:
        bad.append("a mark without vane and wire: %r" % label)
    elif m:
        nums.append(int(m.group(2)))
        if m.group(3) not in vanes:
            bad.append("%r: no vane of Arvo's" % label)
if not nums:
    bad.append("no event marks")
elif nums != list(range(nums[0], nums[0] + len(nums))):
    bad.append("event numbers not each once in order: %s" % nums)
elif nums[-1] != last or live > last:
    bad.append("the last event marked is %d; the event log's is %d (pier said %d)"
               % (nums[-1], last, live))
spans = db.execute("SELECT count(*) FROM event_spans WHERE label LIKE 'event %'"
                   " OR label LIKE 'replay %'").fetchone()[0]
if spans != len(nums):
    bad.append("event_spans has %d events, the marks %d" % (spans, len(nums)))
print("events: %s" % ("%d to %d, each once with its vane" % (nums[0], nums[-1]) if nums else "none"))
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY

# headroom: the loader's most in use at once against frag's rebuild
"$ANALYZE" summary "$W/serf.sqlite" --heap loom --format json >"$W/headroom.json" 2>"$W/err" ||
    bad "summary --heap loom: $(cat "$W/err")"
t=$(json '[h for h in d["heaps"] if h["in_use_peak"] is not None][0]["in_use_peak_time_ns"]' \
    <"$W/headroom.json" 2>/dev/null)
if [ -z "$t" ]; then
    bad "no least headroom for the loom: $(head -c 300 "$W/headroom.json")"
else
    "$ANALYZE" frag "$W/serf.sqlite" --heap 'loom/*' --at "${t}ns" --format json \
        >"$W/headroom-frag.json" 2>"$W/err" || bad "frag --at ${t}ns: $(cat "$W/err")"
    python3 - "$W/headroom.json" "$W/headroom-frag.json" <<'PY' || bad "the least headroom (above)"
import json, sys
h = [h for h in json.load(open(sys.argv[1]))["heaps"] if h["in_use_peak"] is not None][0]
f = json.load(open(sys.argv[2]))
roads = sum(r["usable"] for r in f["regions"] if r["kind"] == "heap bounds")
print("headroom: least %d of the loom at %.3fs (event %r, %s %d deep): %d in use;"
      " the loom and its %d live roads there: %d"
      % (h["least_headroom"], h["in_use_peak_time_ns"] / 1e9, h["in_use_peak_event"],
         "heap", h["in_use_peak_depth"], h["in_use_peak"], len(f["frag"]["heaps"]) - 1, roads))
ok = roads == h["in_use_peak"] == f["frag"]["usable"] and h["in_use_peak_event"]
sys.exit(0 if ok else 1)
PY
fi

# jets and the boot
BOOT=$(serf_capture boot boot)
if [ -z "$BOOT" ]; then
    log "no capture of the boot's serf (a kept work folder made before boots were kept): boot checks not run"
else
    "$ANALYZE" load -q "$BOOT" "$W/boot.sqlite" || bad "load $BOOT failed"
    grep -q 'tag stack deeper' "$W/boot-vheap.log" &&
        bad "the boot lost jet tags: $(grep 'tag stack deeper' "$W/boot-vheap.log" | head -n 1)"
    n=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(
        "SELECT count(*) FROM marks WHERE label LIKE ?", ("boot 1-%",)).fetchone()[0])' "$W/boot.sqlite")
    [ "$n" = 1 ] || bad "the boot's serf has $n 'boot 1-N' marks"
    "$ANALYZE" top "$W/boot.sqlite" --by-tag --heap 'loom/*' --by bytes --limit 10 --format json \
        >"$W/boot-tags.json" 2>"$W/err" || bad "top --by-tag on the boot: $(cat "$W/err")"
    python3 - "$W/boot-tags.json" <<'PY' || bad "the boot's jet tags (above)"
import json, re, sys
tags = [t["tag"] for t in json.load(open(sys.argv[1]))["tags"] if t["tag"]]
print("jets: the boot's top tags by bytes: %s" % ", ".join(tags))
odd = [t for t in tags if not re.fullmatch(r"[a-z0-9-]+(/[a-z0-9.-]+)+", t)]
known = {"two/turn", "ut/mint", "ut/mull", "ut/nest", "ut/crop", "ut/fish", "by/put", "in/put"}
sys.exit(1 if odd or len(known & set(tags)) < 2 or len(tags) < 10 else 0)
PY
    # headroom on the boot: the least headroom is the loom's size less the
    # loom's and its live roads' in-use at one instant, in the boot's event,
    # its road alive then; the query layer's own replay of the stored event
    # stream (series, one row an event) has the tree's live requested bytes
    # there at most that in-use and short of it only by the blocks' slack.
    # Exact equality road by road is the restart's check above: a sampled
    # capture records no regions and frag refuses one.
    "$ANALYZE" summary "$W/boot.sqlite" --heap loom --format json >"$W/boot-headroom.json" 2>"$W/err" ||
        bad "summary --heap loom on the boot: $(cat "$W/err")"
    t=$(json '[h for h in d["heaps"] if h["in_use_peak"] is not None][0]["in_use_peak_time_ns"]' \
        <"$W/boot-headroom.json" 2>/dev/null)
    if [ -z "$t" ]; then
        bad "no least headroom for the boot's loom: $(head -c 300 "$W/boot-headroom.json")"
    else
        "$ANALYZE" series "$W/boot.sqlite" --heap 'loom/*' --interval event --from "$((t - 1))ns" \
            --to "$((t + 1))ns" --top 0 --bytes --format json >"$W/boot-at.json" 2>"$W/err" ||
            bad "series at the boot's least headroom: $(cat "$W/err")"
        python3 - "$W/boot-headroom.json" "$W/boot-at.json" "$W/boot.sqlite" <<'PY' ||
import json, sqlite3, sys
h = [h for h in json.load(open(sys.argv[1]))["heaps"] if h["in_use_peak"] is not None][0]
rows = [r for r in json.load(open(sys.argv[2]))["series"] if r["time_ns"] == h["in_use_peak_time_ns"]]
db = sqlite3.connect(sys.argv[3])
t, road = h["in_use_peak_time_ns"], h["in_use_peak_heap_id"]
size, alive = db.execute("SELECT (SELECT size FROM heaps WHERE name = 'loom' AND create_time <= ?1"
                         " ORDER BY create_time DESC LIMIT 1), count(*) FROM heaps"
                         " WHERE id = ?2 AND create_time <= ?1"
                         " AND (destroy_time IS NULL OR destroy_time > ?1)", (t, road)).fetchone()
spans = db.execute("SELECT max(in_use_peak) FROM event_spans").fetchone()[0]
live = rows[0]["live_bytes"] if rows else None
print("boot headroom: least %d of %d at %.3fs (event %r, road %d, %d deep): %d in use;"
      " the events' most %s; the replay's live requested bytes there %s"
      % (h["least_headroom"], size, t / 1e9, h["in_use_peak_event"], road,
         h["in_use_peak_depth"], h["in_use_peak"], spans, live))
ok = (h["least_headroom"] == size - h["in_use_peak"] and alive == 1 and spans == h["in_use_peak"]
      and (h["in_use_peak_event"] or "").startswith("boot 1-") and live is not None
      and 0.9 * h["in_use_peak"] <= live <= h["in_use_peak"])
sys.exit(0 if ok else 1)
PY
            bad "the boot's least headroom (above)"
    fi
    "$ANALYZE" summary "$W/boot.sqlite" --heap loom >"$W/boot-summary.txt" 2>&1 ||
        bad "summary of the boot failed"
    log "boot (sampled, estimates): $(grep -m1 'least headroom' "$W/boot-summary.txt")"
fi
