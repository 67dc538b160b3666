#!/usr/bin/env bash
# tests/proxy.sh - xpview behind nginx under /team/profile/, two replicas.
#
# Starts two xpview replicas (--path_prefix /team/profile) on one shared
# logdir and one shared --cache_dir, and nginx on 127.0.0.1 with
# docs/deploy/nginx.conf (upstream round robin; ports, listen address and
# writable paths rewritten to a temporary prefix; no root-owned path).
# Checks: the prefix redirect; both replicas answer every run/tool with the
# same bytes and ETag; nginx spreads requests over both; 304s pass
# through; a trace index built by one replica is written under the shared
# --cache_dir and loaded by the other (same bytes; no file in the logdir);
# a --cache_dir inside the logdir is refused; Capture Profile through
# nginx: the token read through the proxy starts a capture through it and
# every poll finds the job (both capture routes go to one replica,
# upstream xpview_capture), and a proxied request may capture only from
# the replica's machine; then every page is driven
# through nginx in headless chromium
# (tests/proxy_browser.js: no broken link, no URL escaping the prefix, no
# external request).  Finally two demo-mode replicas started at the same
# moment on one --cache_dir (the demo logdir is written to a temporary
# directory and renamed into place) serve identical data.
# Skips (exit 0 with a message) without nginx; the browser part skips
# without chromium/node/playwright-core.  Every process is killed on exit.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
BIN=${XPV_BIN:-$root/build/xpview}
. "$here/lib.sh"
xpv_need
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "SKIP: nginx is not installed (apt-get install nginx); proxy test not run"; exit 0; }
xpv_tmpdir proxy
chmod 711 "$tmp"            # nginx workers (user nobody when run as root) reach ngx/

# launch NAME ARGS... starts a replica; await NAME waits for its startup
# line and sets PORT_<NAME>.  start = launch + await.
launch() {
    xpv_launch "$1" --host 127.0.0.1 "${@:2}"
    printf -v "PID_$1" %s "$PID"
}
await() {
    local pidvar="PID_$1"
    xpv_await "$1" "${!pidvar}" 600
    printf -v "PORT_$1" %s "$PORT"
}
start() { launch "$@"; await "$1"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

logdir=$tmp/logdir
"$BIN" synth --size 300000 --steps 4 --run 2024_02_01_00_00_00 "$logdir" >/dev/null
"$BIN" synth --size 300000 --steps 3 --hosts 2 --run 2024_02_02_00_00_00 "$logdir/multi" >/dev/null
start a --logdir "$logdir" --path_prefix /team/profile --cache_dir "$tmp/cache" --allow_capture
start b --logdir "$logdir" --path_prefix /team/profile --cache_dir "$tmp/cache" --allow_capture

# ---- nginx from the documented config ---------------------------------------
NPORT=$(free_port)
ngx=$tmp/ngx
mkdir -p "$ngx/logs" "$ngx/tmp"
chmod 777 "$ngx/tmp"
sed -e "s|server 127.0.0.1:6006|server 127.0.0.1:$PORT_a|" \
    -e "s|server 127.0.0.1:6007|server 127.0.0.1:$PORT_b|" \
    -e "s|listen 8080;|listen 127.0.0.1:$NPORT;|" \
    -e "s|^pid .*|pid $ngx/nginx.pid;|" \
    -e "s|^error_log .*|error_log $ngx/logs/error.log warn;|" \
    -e "s|access_log .*|access_log $ngx/logs/access.log;|" \
    -e "s|/var/lib/nginx/|$ngx/tmp/|" \
    "$root/docs/deploy/nginx.conf" >"$ngx/nginx.conf"
grep -q "127.0.0.1:$PORT_a" "$ngx/nginx.conf" && grep -q "listen 127.0.0.1:$NPORT" "$ngx/nginx.conf" ||
    { echo "FAIL: docs/deploy/nginx.conf no longer has the lines this test rewrites"; exit 1; }
"$NGINX" -t -q -p "$ngx" -c "$ngx/nginx.conf" -e "$ngx/logs/error.log" ||
    { echo "FAIL: nginx rejects docs/deploy/nginx.conf"; exit 1; }
"$NGINX" -p "$ngx" -c "$ngx/nginx.conf" -e "$ngx/logs/error.log" -g 'daemon off;' &
pids+=($!)
BASE=http://127.0.0.1:$NPORT
for _ in $(seq 1 100); do curl -s -o /dev/null "$BASE/" && break; sleep 0.05; done


fetch "$BASE/team/profile"
[ "$STATUS" = 301 ] && [[ "$(header Location)" == */team/profile/ ]] && ok "/team/profile -> 301 /team/profile/" ||
    bad "prefix redirect: $STATUS $(header Location)"
fetch "$BASE/team/profile/"
[ "$STATUS" = 200 ] && grep -qi '<html' "$tmp/body" && ok "index through nginx" || bad "index: $STATUS"
fetch "$BASE/data/plugin/profile/runs"
[ "$STATUS" = 404 ] && ok "nothing served outside the prefix" || bad "outside the prefix: $STATUS"

# ---- both replicas: same answers ---------------------------------------------
P=team/profile/data/plugin/profile
runs=$(curl -s "$BASE/$P/runs" | python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)))')
n=0; diff=0
for run in $runs; do
    enc=$(python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$run")
    for tool in $(curl -s "$BASE/$P/run_tools?run=$enc" | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)))'); do
        for route in "data?run=$enc&tag=$tool" "hosts?run=$enc&tag=$tool"; do
            fa=$tmp/a.out; fb=$tmp/b.out
            ea=$(curl -s -o "$fa" -D - "http://127.0.0.1:$PORT_a/$P/$route" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag"{print $2}')
            eb=$(curl -s -o "$fb" -D - "http://127.0.0.1:$PORT_b/$P/$route" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag"{print $2}')
            curl -s -o "$tmp/p.out" "$BASE/$P/$route"
            n=$((n + 1))
            if ! cmp -s "$fa" "$fb" || ! cmp -s "$fa" "$tmp/p.out" || [ "$ea" != "$eb" ]; then
                diff=$((diff + 1)); echo "     differs: $run $route"
            fi
        done
    done
done
[ "$n" -ge 10 ] && [ "$diff" = 0 ] && ok "replicas and proxy give identical bytes and ETags ($n responses)" ||
    bad "$diff of $n responses differ between replicas"
# round robin: both replicas served proxied data requests
hits() { curl -s "http://127.0.0.1:$1/team/profile/statz" | python3 -c 'import json,sys; c=json.load(sys.stdin)["cache"]; print(c["hits"]+c["misses"])'; }
ha0=$(hits "$PORT_a"); hb0=$(hits "$PORT_b")
for _ in $(seq 1 20); do curl -s -o /dev/null "$BASE/$P/data?run=2024_02_01_00_00_00&tag=overview_page"; done
ha=$(( $(hits "$PORT_a") - ha0 )); hb=$(( $(hits "$PORT_b") - hb0 ))
[ "$ha" -ge 5 ] && [ "$hb" -ge 5 ] && ok "round robin: replica a $ha, replica b $hb cache lookups of 20 requests" ||
    bad "round robin: a $ha, b $hb"
fetch "$BASE/$P/data?run=2024_02_01_00_00_00&tag=overview_page"
etag=$(header ETag)
fetch "$BASE/$P/data?run=2024_02_01_00_00_00&tag=overview_page" -H "If-None-Match: $etag"
[ -n "$etag" ] && [ "$STATUS" = 304 ] && ok "ETag revalidation through nginx: 304 (either replica)" ||
    bad "revalidation through nginx: $STATUS ($etag)"

# ---- shared --cache_dir: one replica's trace index serves the other ---------------
# A host set not requested above (one host of the multi-host run): replica a
# builds its index and writes it (in the background) under the shared
# --cache_dir; replica b then loads it instead of building, and answers the
# same bytes.  Cache files land in the cache dir, never in the logdir.
mrun=$(curl -s "$BASE/$P/runs" | python3 -c 'import json,sys; print([r for r in json.load(sys.stdin) if "2024_02_02" in r][0])')
menc=$(python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$mrun")
ixdir=$tmp/cache/trace-index
nbefore=$(find "$ixdir" -name '*.bin' 2>/dev/null | wc -l)
disk() { curl -s "http://127.0.0.1:$1/team/profile/statz" | python3 -c "import json,sys; print(json.load(sys.stdin)['disk_cache']['$2'])"; }
hb0=$(disk "$PORT_b" hits)
tv="data?run=$menc&tag=trace_viewer@&host=worker1&resolution=700"
curl -s -o "$tmp/tv_a" "http://127.0.0.1:$PORT_a/$P/$tv"
for _ in $(seq 1 100); do
    [ "$(find "$ixdir" -name '*.bin' | wc -l)" -gt "$nbefore" ] && break; sleep 0.05
done
curl -s -o "$tmp/tv_b" "http://127.0.0.1:$PORT_b/$P/$tv"
hb=$(( $(disk "$PORT_b" hits) - hb0 ))
span=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["fullTimespan"]; print("%.6f %.6f" % (s[0] + (s[1]-s[0])/3, s[0] + (s[1]-s[0])/2))' "$tmp/tv_a")
vp="data?run=$menc&tag=trace_viewer@&host=worker1&start_time_ms=${span% *}&end_time_ms=${span#* }&resolution=1900"
curl -s -o "$tmp/vp_a" "http://127.0.0.1:$PORT_a/$P/$vp"
curl -s -o "$tmp/vp_b" "http://127.0.0.1:$PORT_b/$P/$vp"
inlog=$(find "$logdir" -type f ! -name '*.xplane.pb' | wc -l)
leftover=$(find "$tmp/cache" -name '.tmp.*' | wc -l)
if cmp -s "$tmp/tv_a" "$tmp/tv_b" && cmp -s "$tmp/vp_a" "$tmp/vp_b" && [ -s "$tmp/vp_a" ] &&
   grep -q '"traceEvents"' "$tmp/vp_a" && [ "$hb" -ge 1 ] && [ "$inlog" = 0 ] && [ "$leftover" = 0 ] &&
   [ "$(find "$ixdir" -name '*.bin' | wc -l)" -gt "$nbefore" ]; then
    ok "shared --cache_dir: replica b loaded replica a's trace index ($hb disk hit), identical viewports, files in the cache dir only"
else
    bad "shared --cache_dir: same=$(cmp -s "$tmp/tv_a" "$tmp/tv_b" && cmp -s "$tmp/vp_a" "$tmp/vp_b" && echo 1 || echo 0) b_hits=$hb files_in_logdir=$inlog tmp_left=$leftover"
fi
# A --cache_dir inside the logdir is refused at startup.
if "$BIN" --port 0 --logdir "$logdir" --cache_dir "$logdir/cache" >"$tmp/in.out" 2>"$tmp/in.err"; then
    bad "--cache_dir inside the logdir accepted"
elif grep -q 'inside the logdir' "$tmp/in.err" && [ ! -e "$logdir/cache" ]; then
    ok "--cache_dir inside the logdir refused: $(head -c 80 "$tmp/in.err")..."
else
    bad "--cache_dir inside the logdir: $(cat "$tmp/in.err")"
fi

# ---- Capture Profile through nginx: one replica holds its state -------------------
# The token, the jobs and the per-target limit live in one process, so both
# capture routes go to replica a (b is its backup): with round robin the
# token read through the proxy would be another replica's half the time
# (403) and polls would alternate 200 / 404.  Targets: closed loopback
# ports (the capture fails at once; its status is still polled).
CP=$P/capture_profile
starts=0; polls=0
for _ in 1 2 3 4 5 6; do
    tk=$(curl -s "$BASE/$P/capture_token" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
    st=$(curl -s -o "$tmp/cap.json" -w '%{http_code}' \
        "$BASE/$CP?token=$tk&service_addr=127.0.0.1:$(free_port)&duration=10&num_retry=0")
    [ "$st" = 200 ] || { echo "     start: $st $(cat "$tmp/cap.json")"; continue; }
    starts=$((starts + 1))
    id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["capture_id"])' "$tmp/cap.json")
    for _ in 1 2 3 4; do
        st=$(curl -s -o "$tmp/poll.json" -w '%{http_code}' "$BASE/$CP?capture_id=$id")
        [ "$st" = 200 ] && grep -q "\"capture_id\":\"$id\"" "$tmp/poll.json" && polls=$((polls + 1))
    done
done
ran_a=$(grep -c 'xpview: capture ' "$tmp/a.err" || true)
ran_b=$(grep -c 'xpview: capture ' "$tmp/b.err" || true)
[ "$starts" = 6 ] && [ "$polls" = 24 ] && [ "$ran_a" = 6 ] && [ "$ran_b" = 0 ] &&
    ok "capture through nginx: 6 of 6 starts with the proxy's token, 24 of 24 polls found the job, all on one replica" ||
    bad "capture through nginx: starts $starts/6, polls $polls/24, captures on a $ran_a, on b $ran_b"
tk=$(curl -s "$BASE/$P/capture_token" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
fetch "$BASE/$CP?token=$tk&service_addr=224.0.0.1:9&duration=10"
[ "$STATUS" = 403 ] && grep -q "only from this machine" "$tmp/body" &&
    ok "capture through nginx: a target off the replica's machine -> 403" ||
    bad "capture through nginx, 224.0.0.1:9: $STATUS $(cat "$tmp/body")"

# ---- every page in headless chromium ---------------------------------------------
if [ ! -x /usr/bin/chromium ] || ! command -v node >/dev/null ||
   [ ! -f "$here/browser/node_modules/playwright-core/package.json" ]; then
    echo "SKIP: browser part (needs /usr/bin/chromium, node and tests/browser/node_modules; run tests/browser.sh once)"
else
    if (cd "$here" && XPV_URL="$BASE/team/profile/" timeout 300 node proxy_browser.js); then
        ok "browser: every page through nginx"
    else
        bad "browser: pages through nginx"
    fi
fi

# ---- demo mode: two replicas writing the demo into one --cache_dir at once ---------
launch c --cache_dir "$tmp/democache" --path_prefix /team/profile
launch d --cache_dir "$tmp/democache" --path_prefix /team/profile
await c
await d
same=1
for route in runs "data?run=2025_01_01_00_00_02&tag=overview_page" \
             "data?run=2025_01_01_00_00_01_two_hosts&tag=framework_op_stats&host=ALL_HOSTS"; do
    curl -s -o "$tmp/c.body" "http://127.0.0.1:$PORT_c/$P/$route"
    curl -s -o "$tmp/d.body" "http://127.0.0.1:$PORT_d/$P/$route"
    cmp -s "$tmp/c.body" "$tmp/d.body" && [ -s "$tmp/c.body" ] || same=0
done
leftovers=$(find "$tmp/democache" -maxdepth 1 -name 'demo.tmp.*' | wc -l)
[ "$same" = 1 ] && [ "$leftovers" = 0 ] &&
    ok "demo replicas on one --cache_dir: identical data, no temporary directory left" ||
    bad "demo replicas: same=$same, leftovers=$leftovers"

echo
xpv_done
echo "all checks passed"
