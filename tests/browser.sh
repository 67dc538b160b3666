#!/usr/bin/env bash
# tests/browser.sh - runs the browser tests (tests/browser/*.test.js).
#
# Uses Debian's chromium (/usr/bin/chromium) driven by playwright-core, which
# is installed locally under tests/browser/node_modules from the committed
# package-lock.json when missing (never downloads a browser).  Builds
# nothing: XPV_BIN (set by ctest; default build/xpview) is the server.
#
# Starts, each on 127.0.0.1 with an ephemeral port (--port 0):
#   XPV_URL         the demo: a logdir written by `xpview synth` (1 host run,
#                   2 host run, and a corrupt run);
#   XPV_PREFIX_URL  the same logdir under --path_prefix /team/profile;
#   XPV_REAL_URL    --logdir $XPV_SHARED/testdata/real, only when it exists;
#   XPV_CAPTURE_URL a logdir of its own for Capture Profile, with a stand-in
#                   profiler server (tests/capture_server.py) at
#                   XPV_CAPTURE_TARGET (and one answering an error at
#                   XPV_CAPTURE_ERROR_TARGET), when python3-grpcio is there.
# Then runs every tests/browser/*.test.js with node (XPV_BROWSER_ONLY=name
# runs one), each with those URLs in its environment.  Servers are killed on
# exit.  Exit status: 0 when every test file passed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
BIN=${XPV_BIN:-$root/build/xpview}
CHROMIUM=${XPV_CHROMIUM:-/usr/bin/chromium}

[ -x "$BIN" ] || { echo "FAIL: xpview binary not found: $BIN (build it first)"; exit 1; }
if [ ! -x "$CHROMIUM" ]; then
    echo "FAIL: $CHROMIUM not found. Install Debian's chromium: sudo apt-get install -y chromium"
    exit 1
fi
command -v node >/dev/null || { echo "FAIL: node is needed (sudo apt-get install -y nodejs npm)"; exit 1; }

bdir=$here/browser
if [ ! -f "$bdir/node_modules/playwright-core/package.json" ]; then
    command -v npm >/dev/null || { echo "FAIL: npm is needed to install playwright-core"; exit 1; }
    echo "installing playwright-core into $bdir/node_modules"
    (cd "$bdir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error) || {
        echo "FAIL: npm ci failed in $bdir"; exit 1; }
fi

. "$here/lib.sh"
xpv_tmpdir browser

# start NAME ARGS... -> sets URL to http://127.0.0.1:PORT[/prefix]/
start() {
    xpv_launch "$1" --host 127.0.0.1 "${@:2}"
    xpv_await "$1" "$PID" 400
}

logdir=$tmp/logdir
"$BIN" synth --size 300000 --hosts 1 --steps 8 --run 2024_01_01_00_00_01 "$logdir" >/dev/null
"$BIN" synth --size 300000 --hosts 2 --steps 6 --run 2024_01_02_00_00_00 "$logdir/multi" >/dev/null
mkdir -p "$logdir/broken/plugins/profile/2023_12_31_00_00_00"
printf '\x0a\xff\xff\xff\xff\x0f' >"$logdir/broken/plugins/profile/2023_12_31_00_00_00/bad.xplane.pb"

start demo --logdir "$logdir"
export XPV_URL=$URL
start prefix --logdir "$logdir" --path_prefix /team/profile
export XPV_PREFIX_URL=$URL
if [ -n "${XPV_SHARED:-}" ] && [ -d "$XPV_SHARED/testdata/real" ]; then
    start real --logdir "$XPV_SHARED/testdata/real"
    export XPV_REAL_URL=$URL
else
    echo "note: XPV_SHARED/testdata/real absent; tests of real profiles will skip"
    unset XPV_REAL_URL
fi
# Capture Profile (capture.test.js): a logdir of its own (captures add runs)
# and a stand-in profiler server (tests/capture_server.py, python3-grpcio).
if /usr/bin/python3 -c 'import grpc' 2>/dev/null; then
    caplog=$tmp/capture_logdir
    "$BIN" synth --size 300000 --hosts 1 --steps 4 --run 2024_01_01_00_00_00 "$caplog" >/dev/null
    /usr/bin/python3 "$here/capture_server.py" --modes xspace,error \
        --xplane "$caplog/plugins/profile/2024_01_01_00_00_00/$(ls "$caplog/plugins/profile/2024_01_01_00_00_00" | head -1)" \
        --log "$tmp/capture_server.log" >"$tmp/capture_ports" 2>"$tmp/capture_server.err" &
    pids+=("$!")
    for _ in $(seq 1 200); do [ -s "$tmp/capture_ports" ] && break; sleep 0.05; done
    export XPV_CAPTURE_TARGET=127.0.0.1:$(/usr/bin/python3 -c "import json; print(json.load(open('$tmp/capture_ports'))['xspace'])")
    export XPV_CAPTURE_ERROR_TARGET=127.0.0.1:$(/usr/bin/python3 -c "import json; print(json.load(open('$tmp/capture_ports'))['error'])")
    start capture --logdir "$caplog"
    export XPV_CAPTURE_URL=$URL
else
    echo "note: python3-grpcio absent; the Capture Profile browser test will skip"
    unset XPV_CAPTURE_URL
fi
export XPV_CHROMIUM=$CHROMIUM
echo "demo $XPV_URL  prefix $XPV_PREFIX_URL  real ${XPV_REAL_URL:-none}"

fails=0
ran=0
for t in "$bdir"/*.test.js; do
    [ -e "$t" ] || continue
    name=$(basename "$t" .test.js)
    if [ -n "${XPV_BROWSER_ONLY:-}" ] && [ "$name" != "$XPV_BROWSER_ONLY" ]; then continue; fi
    ran=$((ran + 1))
    echo "=== $name"
    if (cd "$bdir" && timeout 300 node "$t"); then
        echo "=== $name: ok"
    else
        echo "=== $name: FAIL"
        fails=$((fails + 1))
    fi
done
[ "$ran" -gt 0 ] || { echo "FAIL: no browser test ran"; exit 1; }
echo "$((ran - fails))/$ran browser test files passed"
[ "$fails" -eq 0 ]
