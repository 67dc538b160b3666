#!/usr/bin/env bash
# tests/http.sh - end-to-end HTTP test of the xpview binary.
#
# Writes a logdir with `xpview synth` (a 1-host and a 2-host run) plus a
# corrupt file, starts `xpview --port 0` on 127.0.0.1 (an ephemeral port,
# read back from the startup line) and checks every route with curl: JSON
# shapes, gzip, HEAD, 405, security headers, 404/422 errors, traversal
# attempts, new runs appearing without a restart, path-prefix mode and a
# graceful SIGTERM.  Every process started here is killed on exit (trap).
#
# Env: XPV_BIN (the xpview binary; set by ctest), default build/xpview.
set -euo pipefail

BIN=${XPV_BIN:-build/xpview}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
xpv_need curl python3
xpv_tmpdir http

# start ARGS... -> sets PID, BASE (http://127.0.0.1:PORT)
start() { xpv_serve "server.$RANDOM" "$@"; BASE="http://127.0.0.1:$PORT"; }

json() { python3 -c "import json,sys; d=json.load(open('$tmp/body')); $1"; }

# ---- fixture logdir --------------------------------------------------------
"$BIN" synth --size 200000 --steps 3 --run r1 "$tmp/logdir" >/dev/null
"$BIN" synth --size 200000 --steps 3 --hosts 2 --run r2 "$tmp/logdir/train" >/dev/null
mkdir -p "$tmp/logdir/plugins/profile/bad"
printf '\x0a\xff\xff\xff\x0f not a profile' >"$tmp/logdir/plugins/profile/bad/x.xplane.pb"
: >"$tmp/logdir/plugins/profile/bad/empty.xplane.pb"

start --logdir "$tmp/logdir" --host 127.0.0.1
P="$BASE/data/plugin/profile"

# ---- discovery routes ------------------------------------------------------
expect_status 200 "runs: 200" fetch "$P/runs"
check "runs: newest first, nested TB run named train/r2" \
    json "assert d == ['train/r2', 'r1', 'bad'], d"
check "runs: application/json" [ "$(header Content-Type)" = "application/json" ]

fetch "$P/hosts?run=train/r2"
check "hosts: two hosts" json "assert len([h for h in d if h['hostname'] != 'ALL_HOSTS']) == 2, d"

fetch "$P/run_tools?run=r1"
check "run_tools: 200 + JSON list" json "assert isinstance(d, list), d"
tools=$(json "print(' '.join(d))")
echo "     tools: $tools"

# ---- every tool answers JSON, gzip works -----------------------------------
for t in $tools; do
    fetch "$P/data?run=r1&tag=$t"
    check "data $t: 200 JSON" bash -c "[ $STATUS = 200 ] && python3 -m json.tool $tmp/body >/dev/null"
    cp "$tmp/body" "$tmp/plain"
    fetch "$P/data?run=r1&tag=$t" -H 'Accept-Encoding: gzip'
    if [ "$(stat -c %s "$tmp/plain")" -ge 1024 ]; then
        check "data $t: gzip when accepted" [ "$(header Content-Encoding)" = gzip ]
        check "data $t: gzip body inflates to the same bytes" \
            bash -c "gzip -dc <$tmp/body | cmp -s - $tmp/plain"
    fi
    expect_status 200 "hosts $t (2 hosts): 200" fetch "$P/hosts?run=train/r2&tag=$t"
done

# ---- the full trace is streamed (chunked), gzip or not ---------------------
for run in r1 train/r2; do
    u="$P/data?run=$run&tag=trace_viewer"
    fetch "$u"
    cp "$tmp/body" "$tmp/trace_plain"
    check "full trace $run: 200, chunked, no Content-Length" bash -c \
        "[ $STATUS = 200 ] && grep -qi '^transfer-encoding: chunked' $tmp/hdr && \
         ! grep -qi '^content-length:' $tmp/hdr"
    etag=$(header ETag)
    check "full trace $run: ETag, Last-Modified, Vary" bash -c \
        "[ -n '$etag' ] && [ -n '$(header Last-Modified)' ] && [ '$(header Vary)' = Accept-Encoding ]"
    fetch "$u" --compressed
    check "full trace $run: gzip when accepted" [ "$(header Content-Encoding)" = gzip ]
    check "full trace $run: gzip download decodes to the identity bytes" \
        cmp -s "$tmp/body" "$tmp/trace_plain"
    check "full trace $run: both decode to the same JSON" python3 -c "
import json, sys
a = json.load(open('$tmp/body')); b = json.load(open('$tmp/trace_plain'))
assert a == b and len(a['traceEvents']) > 10, len(a['traceEvents'])"
    expect_status 304 "full trace $run: 304 on matching ETag" fetch "$u" -H "If-None-Match: $etag"
    head_out=$(curl -s -I -o /dev/null -w '%{http_code} %{size_download}' "$u")
    check "full trace $run: HEAD 200, no body" [ "$head_out" = "200 0" ]
done

fetch "$P/profile_info?run=train/r2"
check "profile_info: planes listed" json "assert d['planes'] and d['events'] > 0, d"
expect_status 200 "profile_info: JSON" fetch "$P/profile_info?run=r1" -H 'Accept-Encoding: gzip'

fetch "$P/version"
check "version: text/plain" bash -c "[ $STATUS = 200 ] && grep -q '^[0-9]' $tmp/body"
fetch "$BASE/healthz"
check "healthz" bash -c "[ $STATUS = 200 ] && grep -q ok $tmp/body"

# ---- static files ----------------------------------------------------------
fetch "$BASE/"
if [ "$STATUS" = 200 ]; then
    check "index: text/html" grep -qi '^content-type: text/html' "$tmp/hdr"
    etag=$(header ETag)
    expect_status 304 "index: 304 on matching ETag" fetch "$BASE/index.html" -H "If-None-Match: $etag"
    fetch "$BASE/index.html" -H 'Accept-Encoding: gzip'
    check "index: pre-gzipped" [ "$(header Content-Encoding)" = gzip ]
    # Hashed assets: index.html names its files v/<tree hash>/..., served
    # immutable; every module they import (relative) resolves under the
    # same prefix, immutable too; unhashed names and stale hashes still
    # answer, revalidated (no-cache).
    fetch "$BASE/"
    check "index: Cache-Control no-cache" [ "$(header Cache-Control)" = no-cache ]
    check "static: hashed assets immutable, module graph inside the hash" python3 - "$BASE" <<'PY'
import re, sys, urllib.parse, urllib.request
base = sys.argv[1] + "/"
def get(u):
    with urllib.request.urlopen(u) as r:
        return r.status, r.headers.get("Cache-Control"), r.read().decode()
_, _, html = get(base)
refs = re.findall(r'(?:src|href)="(v/[0-9a-f]{12}/[^"]+)"', html)
assert any(r.endswith("app.js") for r in refs) and any(r.endswith(".css") for r in refs), refs
ver = refs[0].split("/")[1]
todo, seen = [urllib.parse.urljoin(base, r) for r in refs], set()
todo.append(urllib.parse.urljoin(base, "v/%s/tools/overview_page.js" % ver))  # import(`./tools/${t}.js`)
while todo:
    u = todo.pop()
    if u in seen: continue
    seen.add(u)
    assert u.startswith(base + "v/" + ver + "/"), u
    st, cc, body = get(u)
    assert st == 200 and cc == "public, max-age=31536000, immutable", (u, st, cc)
    if u.endswith(".js"):
        for m in re.findall(r"""(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}/[^'"]+)['"]""", body):
            todo.append(urllib.parse.urljoin(u, m))
assert len(seen) >= 4, seen
for path in ("app.js", "lib/api.js", "v/000000000000/app.js"):
    st, cc, _ = get(base + path)
    assert st == 200 and cc == "no-cache", (path, st, cc)
print("     %d hashed assets checked under v/%s/" % (len(seen), ver))
PY
else
    echo "note: no web/index.html embedded yet ($STATUS)"
fi

# ---- methods, headers ------------------------------------------------------
head_out=$(curl -s -I -o /dev/null -w '%{http_code} %{size_download}' "$P/runs")
check "HEAD: 200, no body" [ "$head_out" = "200 0" ]
fetch "$P/runs" -I
check "HEAD: Content-Length of the GET body" \
    bash -c "grep -qi '^content-length: [1-9]' $tmp/body"
expect_status 405 "POST: 405" fetch "$P/runs" -X POST -d 'x=1'
check "POST: Allow header" [ "$(header Allow)" = "GET, HEAD" ]
expect_status 405 "DELETE: 405" fetch "$P/runs" -X DELETE
for u in "$P/runs" "$BASE/nope" "$P/data?run=zz&tag=x"; do
    fetch "$u"
    csp=$(header Content-Security-Policy)
    check "CSP on $u" bash -c "[[ \"$csp\" == *\"default-src 'self'\"* ]] && [[ \"$csp\" != *http* ]]"
    check "nosniff on $u" [ "$(header X-Content-Type-Options)" = nosniff ]
    check "no-referrer on $u" [ "$(header Referrer-Policy)" = no-referrer ]
done

# ---- errors ---------------------------------------------------------------
fetch "$P/run_tools?run=nope"
check "unknown run: 404 JSON" bash -c "[ $STATUS = 404 ] && grep -q '\"error\"' $tmp/body"
expect_status 404 "unknown tool: 404" fetch "$P/data?run=r1&tag=no_such_tool"
expect_status 422 "corrupt file: 422" fetch "$P/profile_info?run=bad&host=x"
check "corrupt file: names file and offset" \
    json "assert d['file'].endswith('bad/x.xplane.pb') and 'offset' in d, d"
fetch "$P/profile_info?run=bad&host=empty"
check "empty file: 422 'empty file'" bash -c "[ $STATUS = 422 ] && grep -q 'empty file' $tmp/body"
expect_status 200 "still serving after bad files" fetch "$P/runs"
for u in "/%2e%2e/%2e%2e/etc/passwd" "/../../etc/passwd" \
         "/data/plugin/profile/data?run=../../etc&tag=x" \
         "/data/plugin/profile/hosts?run=%2Fetc%2Fpasswd"; do
    fetch "$BASE$u"
    check "traversal $u: 404" bash -c "[ $STATUS = 404 ] && ! grep -q 'root:' $tmp/body"
done
expect_status 400 "NUL in query: 400" fetch "$P/runs?run=%00"

# ---- a run written while serving shows up ----------------------------------
"$BIN" synth --size 100000 --steps 2 --run r0_late "$tmp/logdir/late" >/dev/null
# The logdir is rescanned in the background once a second: poll a while.
for _ in $(seq 1 30); do
    fetch "$P/runs"
    json "assert 'late/r0_late' in d" 2>/dev/null && break
    sleep 0.2
done
check "new run listed without restart (background rescan)" json "assert 'late/r0_late' in d, d"

# ---- graceful stop ---------------------------------------------------------
kill -TERM "$PID"
rc=0
for _ in $(seq 1 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$PID" 2>/dev/null; then bad "SIGTERM: still running"; else
    wait "$PID" || rc=$?
    check "SIGTERM: exit 0" [ "$rc" = 0 ]
fi

# ---- path prefix ----------------------------------------------------------
start --logdir "$tmp/logdir" --path_prefix /sub/xp/
fetch "$BASE/sub/xp"
check "prefix: redirect to the slash form" \
    bash -c "[ $STATUS = 301 ] && [ '$(header Location)' = xp/ ]"
expect_status 200 "prefix: data under the prefix" fetch "$BASE/sub/xp/data/plugin/profile/runs"
expect_status 404 "prefix: nothing outside it" fetch "$BASE/data/plugin/profile/runs"
expect_status 200 "prefix: healthz" fetch "$BASE/sub/xp/healthz"
fetch "$BASE/sub/xp/"
hashed=$(grep -o 'src="v/[0-9a-f]*/app.js"' "$tmp/body" | cut -d'"' -f2 || true)
if [ -n "$hashed" ]; then
    fetch "$BASE/sub/xp/$hashed"
    check "prefix: hashed $hashed immutable under the prefix" \
        bash -c "[ $STATUS = 200 ] && [[ '$(header Cache-Control)' == *immutable* ]]"
fi

# ---- export = the /data bytes -------------------------------------------------
for t in $tools; do
    fetch "$BASE/sub/xp/data/plugin/profile/data?run=r1&tag=$t"
    "$BIN" export --tool "$t" "$tmp/logdir/plugins/profile/r1" >"$tmp/export"
    check "export $t: same bytes as /data" cmp -s "$tmp/export" "$tmp/body"
done
if "$BIN" export --tool no_such_tool "$tmp/logdir/plugins/profile/r1" >/dev/null 2>&1; then
    bad "export: unknown tool fails"
else
    ok "export: unknown tool fails"
fi
# --max_file_size, as the server's: a file past it is refused naming the limit
if "$BIN" export --max_file_size 1000 --tool overview_page "$tmp/logdir/plugins/profile/r1" \
        >/dev/null 2>"$tmp/err"; then
    bad "export --max_file_size 1000: refused"
else
    check "export --max_file_size 1000: refused with 413" grep -q "413" "$tmp/err"
fi
"$BIN" export --max_file_size 12000000000 --tool overview_page "$tmp/logdir/plugins/profile/r1" \
    >"$tmp/export"
fetch "$BASE/sub/xp/data/plugin/profile/data?run=r1&tag=overview_page"
check "export --max_file_size 12000000000: the same bytes" cmp -s "$tmp/export" "$tmp/body"

# ---- trace viewer on real xplanes: complete events vs the file -------------
# The expected counts come from the file itself, read by an independent
# protobuf wire walker (no xpview code): every event of a shown plane
# (/host:CPU*, /device:GPU:* or else /device:TPU:*, /device:CUSTOM:*), minus
# lines named counters_*, minus `_counters_` samples (those are "C"
# events), minus the internal events XProf drops (MemoryAllocation,
# MemoryDeallocation, tf.data *Produce/*Consume), minus XProf's async events
# (an integer `_a` stat and a `flow` stat with direction bits; written as
# "b" for direction out or in+out and "e" for in or in+out, counted here
# too).  The walker's own total is checked against profile_info's event
# count first.
REAL="${XPV_SHARED:-../shared}/testdata/real"
if [ ! -d "$REAL" ]; then
    echo "skip real-xplane trace viewer checks: $REAL absent (set XPV_SHARED)"
else
    cat >"$tmp/count.py" <<'EOF'
import sys
def varint(b, i):
    r = s = 0
    while True:
        c = b[i]; i += 1
        r |= (c & 0x7f) << s; s += 7
        if c < 0x80: return r, i
def fields(b):
    i, n = 0, len(b)
    while i < n:
        k, i = varint(b, i); f, t = k >> 3, k & 7
        if t == 0: v, i = varint(b, i)
        elif t == 1: v = b[i:i+8]; i += 8
        elif t == 5: v = b[i:i+4]; i += 4
        elif t == 2:
            l, i = varint(b, i); v = b[i:i+l]; i += l
        else: raise ValueError('wire type %d' % t)
        yield f, v
INTERNAL = {'MemoryAllocation', 'MemoryDeallocation'}
def internal(name):
    return name in INTERNAL or (name.endswith(('Produce', 'Consume')) and name[:-7] in
        ('Prefetch', 'ParallelInterleave', 'ParallelMap', 'MapAndBatch', 'ParseExample', 'ParallelBatch'))
# Rows XProf derives (derived_timeline.cc) are left out on both sides: the
# server adds them (checked against independent counts in the unit tests),
# and files written with them already hold some of the same names.
DERIVED = ('Framework Name Scope', 'Framework Ops', 'Source code', 'Steps', 'XLA Modules - from',
           'XLA Ops - from', 'Launch Stats')
def derived(name):
    return name.startswith(DERIVED)
def meta_entry(w):
    # One map entry of event (4) or stat (5) metadata: key, metadata name.
    key, name = 0, ''
    for h, x in fields(w):
        if h == 1: key = x
        elif h == 2:
            for m, y in fields(x):
                if m == 2: name = y.decode('utf-8', 'replace')
    return key, name
planes = []
for f, v in fields(open(sys.argv[1], 'rb').read()):
    if f != 1: continue
    p = {'name': '', 'lines': [], 'meta': {}, 'smeta': {}}
    for g, w in fields(v):
        if g == 2: p['name'] = w.decode('utf-8', 'replace')
        elif g == 3: p['lines'].append(w)
        elif g in (4, 5):
            key, name = meta_entry(w)
            p['meta' if g == 4 else 'smeta'][key] = name
    planes.append(p)
gpu = any(p['name'].startswith('/device:GPU:') for p in planes)
dev = '/device:GPU:' if gpu else '/device:TPU:'
x = c = dropped = nb = ne = 0
total = sum(len([1 for g, w in fields(ln) if g == 4]) for p in planes for ln in p['lines'])
for p in planes:
    n = p['name']
    if not (n.startswith('/host:CPU') or n.startswith(dev) or n.startswith('/device:CUSTOM:')): continue
    for ln in p['lines']:
        name, evs = '', []
        for g, w in fields(ln):
            if g == 2: name = w.decode('utf-8', 'replace')
            elif g == 4: evs.append(w)
        if name.startswith('counters_') or derived(name): continue
        for e in evs:
            mid, is_a, flow = 0, False, 0
            for g, w in fields(e):
                if g == 1: mid = w
                elif g == 4:
                    sid, ival = 0, None
                    for h, y in fields(w):
                        if h == 1: sid = y
                        elif h in (3, 4): ival = y
                    sn = p['smeta'].get(sid, '')
                    if sn == '_a' and ival is not None: is_a = True
                    elif sn == 'flow' and ival is not None: flow = ival
            if internal(p['meta'].get(mid, '')): dropped += 1
            elif name == '_counters_': c += 1
            elif is_a and flow & 3:
                nb += (flow & 2) >> 1
                ne += flow & 1
            else: x += 1
print(x, c, dropped, total, nb, ne)
EOF
    mkdir -p "$tmp/real/plugins/profile/gpu" "$tmp/real/plugins/profile/tpu"
    cp "$REAL"/tensorflow-profiler/plugins/profile/GPU-multi-worker/*.xplane.pb \
        "$tmp/real/plugins/profile/gpu/"
    cp "$REAL/openxla-xprof/plugins/profile/tpu_inference_2/tpu_inference_2.xplane.pb" \
        "$tmp/real/plugins/profile/tpu/"
    start --logdir "$tmp/real"
    P="$BASE/data/plugin/profile"
    sum_x=0
    for f in "$tmp"/real/plugins/profile/*/*.xplane.pb; do
        run=$(basename "$(dirname "$f")"); host=$(basename "$f" .xplane.pb)
        read -r want_x want_c want_drop total want_b want_e < <(python3 "$tmp/count.py" "$f")
        fetch "$P/profile_info?run=$run&host=$host"
        check "real $run/$host: wire walker total = profile_info events ($total)" \
            json "assert d['events'] == $total, (d['events'], $total)"
        expect_status 200 "real $run/$host: trace_viewer 200" fetch "$P/data?run=$run&tag=trace_viewer&host=$host"
        check "real $run/$host: $want_x complete events ($want_drop internal dropped), $want_c counters, async $want_b b / $want_e e" \
            json "import collections; ev = d['traceEvents']; \
tn = {(e['pid'], e.get('tid')): e['args']['name'] for e in ev if e.get('ph') == 'M' and e.get('name') == 'thread_name'}; \
D = ('Framework Name Scope', 'Framework Ops', 'Source code', 'Steps', 'XLA Modules - from', 'XLA Ops - from', 'Launch Stats', 'Host Offload Ops'); \
c = collections.Counter(e.get('ph') for e in ev if not str(tn.get((e.get('pid'), e.get('tid')), '')).startswith(D)); \
assert c['X'] == $want_x and c['C'] <= $want_c and c['b'] == $want_b and c['e'] == $want_e, (dict(c), $want_x, $want_c, $want_b, $want_e)"
        [ "$run" = gpu ] && sum_x=$((sum_x + want_x))
    done
    fetch "$P/data?run=gpu&tag=trace_viewer&hosts=34.83.195.179_6003,34.83.195.180_6003"
    check "real gpu, both hosts: $sum_x complete events, pids remapped per host" \
        json "import collections; ev = d['traceEvents']; \
tn = {(e['pid'], e.get('tid')): e['args']['name'] for e in ev if e.get('ph') == 'M' and e.get('name') == 'thread_name'}; \
D = ('Framework Name Scope', 'Framework Ops', 'Source code', 'Steps', 'XLA Modules - from', 'XLA Ops - from', 'Launch Stats', 'Host Offload Ops'); \
c = collections.Counter(e.get('ph') for e in ev if not str(tn.get((e.get('pid'), e.get('tid')), '')).startswith(D)); \
pids = {e['pid'] // 1000 for e in ev if e.get('ph') == 'X'}; \
assert c['X'] == $sum_x and pids == {1, 2}, (dict(c), pids)"
    # Substring search over names and args (issue: "Philox" found nothing
    # with the prefix search): at least every event whose name holds it.
    h1=34.83.195.179_6003
    fetch "$P/data?run=gpu&tag=trace_viewer&host=$h1"
    names=$(json "print(sum(1 for e in d['traceEvents'] if e.get('ph') == 'X' and 'philox' in e.get('name', '').lower()))")
    fetch "$P/data?run=gpu&tag=trace_viewer@&host=$h1&search=PHILOX&search_limit=5"
    check "search=PHILOX: >= $names matches (names holding it, any case), 5 returned" json "
assert $names > 0 and d['totalMatches'] >= $names and len([e for e in d['traceEvents'] if e.get('ph') == 'X']) == 5, d['totalMatches']"
    fetch "$P/data?run=gpu&tag=trace_viewer@&host=$h1&search_prefix=philox"
    check "search_prefix=philox: still a prefix (no name starts with it)" json "assert d['totalMatches'] == 0, d['totalMatches']"
fi

# ---- what users point --logdir at -----------------------------------------
# A TensorBoard run, plugins/profile, one run directory, a single file and a
# bare path argument each serve what they hold (not an empty dashboard).
r2host=$(ls "$tmp/logdir/train/plugins/profile/r2" | head -1)
for form in "--logdir $tmp/logdir/train:r2" "--logdir $tmp/logdir/train/plugins/profile:r2" \
            "--logdir $tmp/logdir/train/plugins/profile/r2:r2" \
            "--logdir $tmp/logdir/train/plugins/profile/r2/$r2host:r2" \
            "$tmp/logdir/train/plugins/profile/r2:r2"; do
    args=${form%:*}; want=${form##*:}
    # shellcheck disable=SC2086
    start $args
    fetch "$BASE/data/plugin/profile/runs"
    check "$args: runs = [$want]" json "assert d == ['$want'], d"
    expect_status 200 "$args: overview 200" fetch "$BASE/data/plugin/profile/data?run=$want&tag=overview_page&host=ALL_HOSTS"
    kill "$PID"; wait "$PID" 2>/dev/null || true
done
if "$BIN" --logdir /etc/hostname --port 0 >"$tmp/nf.out" 2>&1; then bad "a non-profile file is refused"
else check "a non-profile file is refused with a message naming it" grep -q "/etc/hostname: not a directory or a profile file" "$tmp/nf.out"; fi

echo
xpv_done
echo "all checks passed"
