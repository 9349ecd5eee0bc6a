# ship-busy.sh — how fast a busy serf's capture grows (issue 25), sourced by
# ship.sh (its helpers and $W: the booted pier $W/zod). The pier restarted
# under vheap sampled, as docs/vere.md's days-long session runs it, and
# driven by a steady stream of HTTP requests to Eyre (`GET /~/login`, one
# event each) from inside the ship's network namespace: BUSY_REQUESTS
# (1800) at most BUSY_RATE (10) a second, one after the other. The serf's
# capture's used bytes before and after the stream give its growth in MB a
# minute and in bytes an event, the events being the serf's own event
# marks; at most 0.5 MB a minute (issue 25: 4-5 MB a minute before region
# records were deduplicated). The record types that grew are logged
# (ship.sh's $CAPSTAT: bench/capstat --types), and the check fails if the
# requests made no events.

BUSY_REQUESTS=${BUSY_REQUESTS:-1800}
BUSY_RATE=${BUSY_RATE:-10}
log "busy serf: sampled, $BUSY_REQUESTS HTTP requests at most $BUSY_RATE a second"

# busy_state CAP OUT: the capture's used bytes, its event marks and its
# record types (capstat --types) into OUT
busy_state() {
    { "$CAPSTAT" --types "$1" | tr -d '\r'
      echo "events $("$ANALYZE" dump --no-header "$1" 2>/dev/null | grep -c ' mark label=event ')"
    } >"$2"
}

rm -rf "$W/busy" && cp -a "$W/zod" "$W/busy"
"$SHARED/netns.sh" env VHEAP_SAMPLE=512KiB VHEAP_OUT="$W/cap/busy.%p.vhcap" \
    LD_PRELOAD="$SHIM" "$VH" -t -L "$W/busy" </dev/null >"$W/busy.log" 2>&1 &
KING=$!
for _ in $(seq 600); do
    grep -q 'web interface live' "$W/busy.log" 2>/dev/null && break
    kill -0 "$KING" 2>/dev/null || break
    sleep 1
done
port=$(tr -d '\r' <"$W/busy.log" | sed -n 's/.*web interface live on http:\/\/localhost:\([0-9]*\).*/\1/p' | head -n 1)
serf=$(pgrep -f "work --snap-dir $W/busy" | head -n 1)
cap=
[ -n "$serf" ] && cap=$("$ANALYZE" ctl status "$serf" 2>/dev/null | sed 's/.* capture=//')
if [ -z "$port" ] || [ -z "$cap" ]; then
    bad "the busy ship did not come up (port '$port', serf '$serf'): $(tail -n 5 "$W/busy.log")"
else
    # warm up (Eyre's first requests build what later ones reuse), then
    # the stream, timed
    nsenter -t "$KING" -n curl -s "http://127.0.0.1:$port/~/login?w=[1-20]" >/dev/null
    sleep 2
    busy_state "$cap" "$W/busy-before.txt"
    t0=$(date +%s%N)
    nsenter -t "$KING" -n curl -s --rate "$BUSY_RATE/s" \
        "http://127.0.0.1:$port/~/login?n=[1-$BUSY_REQUESTS]" >/dev/null ||
        bad "curl's stream of requests failed"
    t1=$(date +%s%N)
    sleep 2                    # the last events' records
    busy_state "$cap" "$W/busy-after.txt"
    kill -TERM "$KING"
    wait "$KING"
    KING=
    python3 - "$W/busy-before.txt" "$W/busy-after.txt" $(( (t1 - t0) / 1000000 )) \
        "$BUSY_REQUESTS" >"$W/busy.out" <<'PY' || bad "busy serf: $(grep FAIL "$W/busy.out")"
import sys
def read(p):
    lines = open(p).read().split("\n")
    used = int(lines[0].split()[8])
    types = {l.split()[0][5:]: (int(l.split()[1]), int(l.split()[2]))
             for l in lines if l.startswith("type=")}
    events = int([l for l in lines if l.startswith("events ")][0].split()[1])
    return used, types, events
(u0, t0, e0), (u1, t1, e1) = read(sys.argv[1]), read(sys.argv[2])
ms, requests = int(sys.argv[3]), int(sys.argv[4])
events, grew = e1 - e0, u1 - u0
per_min = grew / 1e6 / (ms / 60000.0)
print("busy serf: %d requests in %.1f s (%.1f a second), %d events marked; the capture "
      "grew %d B: %.3f MB a minute, %.0f B an event (target: 0.5 MB a minute)"
      % (requests, ms / 1000.0, requests * 1000.0 / ms, events, grew, per_min,
         grew / events if events else 0))
for t in sorted(t1, key=lambda t: -(t1[t][1] - t0.get(t, (0, 0))[1]))[:6]:
    n, b = t1[t][0] - t0.get(t, (0, 0))[0], t1[t][1] - t0.get(t, (0, 0))[1]
    if b:
        print("  type %s: %d records, %d B" % (t, n, b))
bad = []
if events < requests / 2:
    bad.append("%d requests made %d events" % (requests, events))
if per_min > 0.5:
    bad.append("the serf's capture grew %.3f MB a minute, more than 0.5" % per_min)
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
    while read -r l; do log "$l"; done <"$W/busy.out"
fi
