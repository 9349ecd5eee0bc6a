#!/bin/sh
# install-deps.sh — the one place that knows vheap's Debian packages.
# Used by `make demo`, `make deps` and .ci/run. As root it installs what is
# missing; otherwise it lists what is missing and how to install it.
set -eu

# build: compiler and libraries; check: cmocka, the reference tools the tests
# compare against (heaptrack, valgrind's ms_print), jemalloc as a target
# allocator; clang for the fuzz targets; libc6-dbg so the symbol tests can
# check that libc frames get file:line through /usr/lib/debug/.build-id;
# chromium renders the HTML report headless in the report tests;
# heaptrack-gui, xvfb and imagemagick (import) so that a test opens the
# heaptrack export in the GUI on a virtual screen and takes a screenshot;
# golang-go for `go tool pprof`, which reads the pprof export back;
# tcmalloc is another preloaded allocator the shim must live beside;
# tmux runs `top --live` in a terminal for its test (keys, screen).
PACKAGES="build-essential pkg-config libunwind-dev libsqlite3-dev sqlite3 \
libdw-dev libelf-dev zlib1g-dev libzstd-dev libjemalloc-dev libcmocka-dev \
heaptrack valgrind python3 clang libclang-rt-14-dev libc6-dbg chromium \
heaptrack-gui xvfb imagemagick golang-go libtcmalloc-minimal4 tmux"
# `install-deps.sh realworld`: also the real programs `make realworld` runs
# under the shim beside heaptrack (bench/realworld.sh)
# `install-deps.sh vere`: what ../shared/vere/build.sh needs to build Urbit's
# runtime for `make vere-check` (tests/vere/ship.sh); iproute2 and
# util-linux for netns.sh's loopback-only namespace and nsenter, curl for
# the ship's HTTP events, procps for pgrep
VERE_PACKAGES="libgmp-dev zlib1g-dev libunwind-dev libsigsegv-dev libuv1-dev \
liblmdb-dev libcurl4-openssl-dev libh2o-dev libnatpmp-dev libavahi-compat-libdnssd-dev \
zstd xxd iproute2 util-linux curl procps"
# `install-deps.sh sweep`: the programs that hung under the shim on
# --version before issue 25 (curl, wget, gpg, gdb, ps and procps' tools,
# logger, lslogins, appstreamcli: libgpg-error's constructor; every JVM
# tool: a thread's first allocation inside pthread_getattr_np), so that
# `make sweep` (bench/sweep.py) runs them; `make realworld` runs the sweep too.
SWEEP_PACKAGES="curl wget gnupg gdb procps bsdutils util-linux appstream default-jdk-headless"
case "${1:-}" in
realworld) PACKAGES="$PACKAGES redis-server redis-tools git g++ nodejs $SWEEP_PACKAGES" ;;
sweep) PACKAGES="$PACKAGES $SWEEP_PACKAGES" ;;
vere) PACKAGES="$PACKAGES $VERE_PACKAGES" ;;
esac

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
        || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "vheap: missing Debian packages:$missing" >&2
    echo "vheap: install them with: sudo apt-get install$missing" >&2
    exit 1
fi
echo "vheap: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
