# heaptrack_gui — heaptrack_gui 1.4 opens vheap's heaptrack exports: under
# Xvfb it is started on the export that `make demo` writes (demo_app, .zst)
# and on loomsim's (four threads, frees across threads, several heaps
# merged), stays up GUI_SECONDS (default 6) and until a screenshot of the
# screen (kept in build/screenshots/) is not blank, and the GUI must not
# have crashed nor said it could not read a line. Skipped when
# heaptrack_gui, Xvfb or ImageMagick's import is not installed
# (scripts/install-deps.sh installs them).
. "$TOP/tests/lib.sh"

for t in heaptrack_gui Xvfb import identify; do
    command -v $t >/dev/null 2>&1 ||
        { echo "$t is not installed (scripts/install-deps.sh installs it)" >&2; exit 77; }
done
need "$ANALYZE" "$VHEAP_LIB" "$PROGS/demo_app" "$PROGS/loomsim"
secs=${GUI_SECONDS:-6}
shots="$(dirname "$ANALYZE")/screenshots"
mkdir -p "$shots"

# A display of our own: Xvfb picks a free number and writes it to fd 3.
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3>display.txt 2>xvfb.err &
xvfb=$!
trap 'kill $xvfb 2>/dev/null' EXIT
# (no fixed bound on a loaded machine: the harness bounds the test)
until [ -s display.txt ]; do
    kill -0 $xvfb 2>/dev/null || die "Xvfb did not start: $(cat xvfb.err)"
    sleep 0.1
done
export DISPLAY=":$(cat display.txt)" QT_QPA_PLATFORM=xcb XDG_RUNTIME_DIR="$PWD"

# gui NAME FILE: heaptrack_gui FILE stays up at least $secs and until a
# screenshot NAME.png shows its window drawn (a loaded machine may take
# longer than $secs to paint it; the harness bounds the wait)
gui() {
    heaptrack_gui "$2" >"$1.gui.log" 2>&1 &
    pid=$!
    t=0
    while :; do
        sleep 1
        t=$((t + 1))
        kill -0 $pid 2>/dev/null || { wait $pid; die "heaptrack_gui $2 ended (exit $?) within ${t}s: $(tail -5 "$1.gui.log")"; }
        [ $t -lt "$secs" ] && continue
        import -window root "$1.png" || die "import could not take a screenshot"
        colors=$(identify -format '%k' "$1.png")
        [ "$colors" -gt 16 ] && break
    done
    kill $pid
    wait $pid 2>/dev/null
    cp "$1.png" "$shots/heaptrack_gui.$1.png"
    if grep -E "failed to parse|out of bounds|Failed to|error" "$1.gui.log"; then
        die "heaptrack_gui could not read every line of $2 (above)"
    fi
    echo "heaptrack_gui $2: up ${t}s, screenshot $shots/heaptrack_gui.$1.png ($colors colours)"
}

"$ANALYZE" record --out "$PWD/demo.vhcap" --no-load -- "$PROGS/demo_app" >demo.out 2>&1 ||
    die "demo_app failed under vheap: $(tail -3 demo.out)"
"$ANALYZE" export --format heaptrack demo.vhcap -o demo.heaptrack.zst 2>/dev/null ||
    die "export of demo.vhcap failed"
gui demo demo.heaptrack.zst

VHEAP_OUT="$PWD/loom.%p.vhcap" VHEAP_QUIET=1 LD_PRELOAD="$VHEAP_LIB" "$PROGS/loomsim" \
    >loom.out 2>loom.err || die "loomsim failed under vheap: $(tail -3 loom.err)"
main=$(sed -n 's/^loomsim summary pid=\([0-9]*\) role=main .*/\1/p' loom.out)
"$ANALYZE" export --format heaptrack "loom.$main.vhcap" --heap 'loom/*' -o loom.heaptrack.gz \
    2>/dev/null || die "export of loomsim's capture failed"
gui loom loom.heaptrack.gz
