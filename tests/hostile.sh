#!/usr/bin/env bash
# tests/hostile.sh - hostile input and HTTP hygiene against a running xpview.
#
#   1. bad-file matrix: truncated (several offsets), bit-flipped, 0-byte,
#      random, gzip bomb, absurd lengths, deep groups, a huge string, a
#      directory / FIFO / symlink-out named like a profile, unreadable
#      (skipped as root), deleted / replaced / growing while served.  Each
#      is a clear 4xx JSON error naming the file (or a 200), the good run
#      keeps working, peak anonymous RSS (heap: RssAnon sampled; mapped
#      profile pages are page cache, not budget) stays under --cache_mb +
#      100 MiB.
#   2. path confinement: ../, %2e%2e, encoded slashes, absolute paths, NUL,
#      a TB run whose plugins directory is a symlink out of the logdir,
#      overlong names, symlinks out of the logdir, raw request targets.
#   3. HTTP hygiene: 405 + Allow, header / request-line limits, bodies never
#      read, slowloris and idle timeouts, connection cap, ETag/304 keyed on
#      the file identity, graceful SIGTERM with a request in flight, and the
#      `xpview healthcheck` subcommand.
#   4. budgets: 1 GiB of empty planes in a ~1 MB gzip, a 6 GB-in-6 MB ratio
#      bomb and 16Mi raw empty planes are 413s naming the file within
#      600 MiB; with one worker, cold requests queue or get 503 +
#      Retry-After while /healthz and cached answers keep flowing; a cold
#      decode beside entries pinned by a slow download gets 503 instead of
#      growing past --cache_mb.
#   5. out of memory inside a converter (XPV_ALLOC_LIMIT makes big
#      allocations fail): that request gets a 413 saying so (kept: asking
#      again does not rebuild), a streamed body is cut, the server stays
#      up and answers everything else.
# Every server runs on 127.0.0.1 with an ephemeral port and is killed on
# exit.  Bounded: about a minute and a half.
# Env: XPV_BIN (set by ctest), default build/xpview.
set -euo pipefail
BIN=${XPV_BIN:-build/xpview}
[ -x "$BIN" ] || { echo "FAIL: xpview binary not found: $BIN"; exit 1; }
command -v python3 >/dev/null || { echo "FAIL: python3 is needed"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xpv-hostile.XXXXXX")
pypid=""
cleanup() {
    [ -n "$pypid" ] && kill "$pypid" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
cat >"$tmp/hostile.py" <<'PY'
import gzip, json, os, random, re, signal, socket, stat, subprocess, sys, threading, time
import urllib.request, urllib.error

import xpv_servers

BIN, TMP = sys.argv[1], sys.argv[2]
import checks
from checks import bad, check

from xpv_servers import cleanup, rss_anon_kb, AnonPeak

def start(*args, env=None):
    return xpv_servers.start(BIN, TMP, *args, env=env)

def get(port, path, headers=None, method="GET", timeout=30):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), headers=headers or {},
                                 method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()

def jget(port, path):
    st, h, body = get(port, path)
    try:
        return st, json.loads(body) if body else None
    except ValueError:
        return st, "<not JSON: %r>" % body[:80]

def rss_kb(p, key="VmRSS"):
    with open("/proc/%d/status" % p.pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0

def raw(port, data, read_timeout=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=read_timeout)
    s.sendall(data)
    chunks = []
    try:
        while True:
            c = s.recv(65536)
            if not c:
                break
            chunks.append(c)
            if b"\r\n\r\n" in b"".join(chunks) and b"Connection: close" not in b"".join(chunks):
                break
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    return b"".join(chunks)

def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7f) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)

def field(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload

def synth(run, where, size=150000, hosts=1, seed=1):
    subprocess.run([BIN, "synth", "--size", str(size), "--steps", "2", "--hosts", str(hosts),
                    "--seed", str(seed), "--run", run, where], check=True,
                   stdout=subprocess.DEVNULL)

# ==== logdir ===============================================================
LD = os.path.join(TMP, "logdir")
synth("good", LD)
good = open(os.path.join(LD, "plugins/profile/good/localhost.xplane.pb"), "rb").read()
MX = os.path.join(LD, "plugins/profile/matrix")
os.makedirs(MX)
def put(name, data):
    with open(os.path.join(MX, name), "wb") as f:
        f.write(data)
rng = random.Random(6)
cases = {}   # host -> allowed statuses
for label, cut in (("1", 1), ("7", 7), ("100", 100), ("half", len(good) // 2),
                   ("minus1", len(good) - 1)):
    put("trunc_%s.xplane.pb" % label, good[:cut])
    cases["trunc_" + label] = {422}
for i in range(8):
    b = bytearray(good)
    for _ in range(1 + i * 3):
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    put("flip_%d.xplane.pb" % i, bytes(b))
    cases["flip_%d" % i] = {200, 422}
put("empty.xplane.pb", b"")
cases["empty"] = {422}
put("random.xplane.pb", bytes(rng.randrange(256) for _ in range(65536)))
cases["random"] = {200, 422}
put("bomb.xplane.pb.gz", gzip.compress(bytes(256 << 20), 1))
cases["bomb"] = {413}
put("absurd_len.xplane.pb", varint(1 << 3 | 2) + varint(1 << 50) + b"\x08\x01")
cases["absurd_len"] = {422}
line = varint(4 << 3 | 2) + varint(1 << 40) + b"\x08"      # events claim 1 TiB
put("absurd_count.xplane.pb", field(1, varint(1 << 3) + b"\x01" + field(3, line)))
cases["absurd_count"] = {422}
put("deep_groups.xplane.pb", varint(9 << 3 | 3) * 200000)
cases["deep_groups"] = {422}
put("huge_string.xplane.pb", field(1, field(2, b"A" * (8 << 20))) + field(4, b"h"))
cases["huge_string"] = {200}
os.mkdir(os.path.join(MX, "dir.xplane.pb"))
os.mkfifo(os.path.join(MX, "fifo.xplane.pb"))
OUT = os.path.join(TMP, "outside")
synth("secret", OUT, size=20000)
os.symlink(os.path.join(OUT, "plugins/profile/secret/localhost.xplane.pb"),
           os.path.join(MX, "symlink_out.xplane.pb"))
os.symlink(OUT, os.path.join(LD, "escape"))
# A TB run whose `plugins` directory is a symlink out of the logdir (its
# last component, plugins/profile, is a plain directory over there).
os.makedirs(os.path.join(LD, "tbx"))
os.symlink(os.path.join(OUT, "plugins"), os.path.join(LD, "tbx/plugins"))
put("unreadable.xplane.pb", good)
os.chmod(os.path.join(MX, "unreadable.xplane.pb"), 0)
as_root = os.geteuid() == 0
cases["unreadable"] = {200} if as_root else {500}
put("deleted.xplane.pb", good)

CACHE_MB, MAX_FILE_MB = 128, 64
srv, port = start("--logdir", LD, "--cache_mb", str(CACHE_MB), "--max_file_size",
                  "%dM" % MAX_FILE_MB, "--timeout", "2")
matrix_peak = AnonPeak(srv)
P = "/data/plugin/profile/"

# ==== 1. bad-file matrix =====================================================
print("-- bad-file matrix")
st, hosts = jget(port, P + "hosts?run=matrix")
names = {h["hostname"] for h in hosts}
for h in ("dir", "fifo", "symlink_out"):
    check(h not in names, "%s.xplane.pb (not a regular file inside the logdir) not listed" % h)
    st, body = jget(port, P + "profile_info?run=matrix&host=" + h)
    check(st == 404 and "error" in body, "%s: 404 JSON (%s)" % (h, st))
if as_root:
    print("note: running as root: chmod 000 does not stop root, so 'unreadable' reads fine; "
          "the FIFO case covers a file that cannot be read")
for host, allowed in sorted(cases.items()):
    for route in ("profile_info?run=matrix&host=", "data?run=matrix&tag=overview_page&host="):
        st, body = jget(port, P + route + host)
        fn = "matrix/%s.xplane.pb%s" % (host, ".gz" if host == "bomb" else "")
        good_err = (st == 200 or (isinstance(body, dict) and "error" in body and
                                  body.get("file", "").endswith(fn)))
        check(st in allowed and good_err,
              "%-14s %-12s -> %s %s" % (host, route.split("?")[0], st,
                                       (body.get("error", "")[:90] if isinstance(body, dict) else "")))
        if host.startswith("trunc_") and route.startswith("profile"):
            check("incomplete" in body.get("error", "") and "still being written" in body["error"],
                  "%s: says incomplete / still being written" % host)
    st, _, _ = get(port, "/healthz")
    assert st == 200
st, body = jget(port, P + "profile_info?run=matrix&host=bomb")
check("inflates beyond" in body.get("error", "") or "gzip bomb" in body.get("error", ""),
      "gzip bomb: 413 'inflates beyond the limit' or 'gzip bomb' (ratio)")
st, body = jget(port, P + "profile_info?run=matrix&host=absurd_len")
check("incomplete" not in body.get("error", ""), "absurd length: corrupt, not 'incomplete'")
st, body = jget(port, P + "data?run=good&tag=overview_page")
check(st == 200, "good run still served after the matrix")
# deleted after the scan
st, _ = jget(port, P + "hosts?run=matrix")
os.unlink(os.path.join(MX, "deleted.xplane.pb"))
st, body = jget(port, P + "profile_info?run=matrix&host=deleted")
check(st == 404 and "deleted" in json.dumps(body), "file deleted after the scan: 404 naming it (%s)" % st)
# The budget bounds heap (models, inflated and converted bytes), not the
# mapped files' page cache: the peak of anonymous memory, sampled, against
# the budget + 100 MiB of fixed costs (threads, buffers).
peak = matrix_peak.stop()
check(peak < CACHE_MB + 100,
      "peak anonymous RSS %d MiB < cache %d + 100 MiB (VmHWM with mapped pages: %d MiB)"
      % (peak, CACHE_MB, rss_kb(srv, "VmHWM") // 1024))

# replaced while served: rename a different profile over it
synth("tmp_other", os.path.join(TMP, "other"), size=60000, seed=9)
st, a = jget(port, P + "profile_info?run=good")
os.rename(os.path.join(TMP, "other/plugins/profile/tmp_other/localhost.xplane.pb"),
          os.path.join(LD, "plugins/profile/good/localhost.xplane.pb"))
time.sleep(1.2)
st, b = jget(port, P + "profile_info?run=good")
check(st == 200 and a["size"] != b["size"], "replaced file: new content served (%s -> %s bytes)"
      % (a["size"], b["size"]))

# growing while served: a writer appends, a reader polls
grow = os.path.join(MX, "growing.xplane.pb")
seen = {}
done = threading.Event()
def writer():
    with open(grow, "wb") as f:
        for i in range(0, len(good), len(good) // 25):
            f.write(good[i:i + len(good) // 25])
            f.flush()
            time.sleep(0.08)
    done.set()
t = threading.Thread(target=writer)
t.start()
time.sleep(1.1)
while not done.is_set():
    st, body = jget(port, P + "profile_info?run=matrix&host=growing")
    key = st if st != 422 else ("422 incomplete" if "incomplete" in body.get("error", "") else "422 other")
    seen[key] = seen.get(key, 0) + 1
    time.sleep(0.03)
t.join()
time.sleep(1.2)
st, body = jget(port, P + "profile_info?run=matrix&host=growing")
check(set(seen) <= {200, 404, "422 incomplete"} and "422 incomplete" in seen,
      "growing file: only 'incomplete' 422s / 404 before it is listed while written: %s" % seen)
check(st == 200, "growing file: 200 once complete")

# ==== 2. path confinement ====================================================
print("-- path confinement")
st, runs = jget(port, P + "runs")
check(not any("secret" in r for r in runs), "symlink to a directory outside the logdir not followed")
check("tbx/secret" not in runs, "a symlinked 'plugins' directory out of the logdir: not listed")
for u in ("hosts?run=tbx/secret", "run_tools?run=tbx/secret", "profile_info?run=tbx/secret"):
    st, body = jget(port, P + u)
    check(st == 404, "symlinked plugins: %s -> 404 (%s)" % (u, st))
for u in ["/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2fetc%2fpasswd", "//etc/passwd",
          "/%2F%2Fetc%2Fpasswd", "/tools/../../etc/passwd", "/..;/etc/passwd",
          P + "data?run=escape/secret&tag=overview_page",
          P + "data?run=..%2F..%2F..%2Fetc&tag=overview_page",
          P + "data?run=%2Fetc&tag=overview_page",
          P + "data?run=good&tag=overview_page&host=..%2F..%2F..%2Fetc%2Fpasswd",
          P + "data?run=good&tag=..%2F..%2Fetc%2Fpasswd",
          P + "data?run=good&tag=overview_page&host=%2Fetc%2Fpasswd",
          P + "profile_info?run=good%00&host=x", P + "profile_info?run=good&host=localhost%00.txt",
          P + "hosts?run=" + "a" * 5000, "/" + "b" * 300 + "%2e%2e%2f" * 50]:
    st, h, body = get(port, u)
    check(400 <= st < 500 and b"root:" not in body and b"CANARY" not in body,
          "confined: %s -> %d" % (u[:70], st))
for target in [b"/../../../../etc/passwd", b"http://evil.example/etc/passwd",
               b"/data/plugin/profile/../../../etc/passwd", b"*"]:
    r = raw(port, b"GET " + target + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    status = r.split(b" ", 2)[1] if r.startswith(b"HTTP/") else b"-"
    check(status.startswith(b"4") and b"root:" not in r, "raw target %s -> %s" % (target.decode(), status.decode()))
st, h, body = get(port, "/" + "c" * 9000)
check(st == 414, "overlong path: 414 (%d)" % st)
try:
    st = get(port, P + "runs?" + "x=1&" * 3000)[0]
except (OSError, urllib.error.URLError):
    st = "connection closed"   # MHD drops a request line over its buffer
check(st in (400, 414, 431, "connection closed"), "overlong query (12 KB): %s" % st)
st, h, body = get(port, P + "runs?" + "x=1&" * 100)
check(st == 400 and b"too many" in body, "more than 64 parameters: 400")

# ==== 3. HTTP hygiene ========================================================
print("-- HTTP hygiene")
for m in ("PUT", "DELETE", "OPTIONS", "PATCH", "TRACE"):
    st, h, body = get(port, P + "runs", method=m)
    check(st == 405 and h.get("Allow") == "GET, HEAD", "%s: 405 with Allow" % m)
r = raw(port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n")
check(r.startswith(b"HTTP/1.1 431") or r.startswith(b"HTTP/1.1 413") or r == b"",
      "100 KB header refused (%r)" % r[:20])
before = rss_kb(srv)
t0 = time.time()
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(b"POST /data/plugin/profile/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 52428800\r\n\r\n")
try:
    chunk = b"z" * 65536
    for _ in range(800):
        s.sendall(chunk)
except OSError:
    pass
resp = b""
try:
    resp = s.recv(4096)
except OSError:
    pass
s.close()
check(b" 405 " in resp[:20] or resp == b"", "50 MB POST body: 405, body not read (%r)" % resp[:15])
check(rss_kb(srv) - before < 20 * 1024, "RSS did not grow with the body (+%d KiB)" % (rss_kb(srv) - before))
st, h, _ = get(port, "/healthz")
check(st == 200, "alive after oversized requests")

# slowloris: a complete head must arrive within --timeout (2 s), however
# slowly the bytes trickle in
socks = []
for i in range(10):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    socks.append(s)
t0 = time.time()
closed_at = {}
while time.time() - t0 < 6 and len(closed_at) < len(socks):
    for i, s in enumerate(socks):
        if i in closed_at:
            continue
        try:
            s.sendall(b"X-a: b\r\n")
            s.setblocking(False)
            try:
                if s.recv(1) == b"":
                    closed_at[i] = time.time() - t0
            except BlockingIOError:
                pass
            s.setblocking(True)
        except OSError:
            closed_at[i] = time.time() - t0
    st, h, _ = get(port, "/healthz", timeout=2)
    if st != 200:
        bad("healthz during slowloris: %s" % st)
    time.sleep(0.3)
check(len(closed_at) == len(socks) and max(closed_at.values()) < 5,
      "slowloris: %d/%d trickling connections closed within %.1fs (timeout 2s)"
      % (len(closed_at), len(socks), max(closed_at.values() or [0])))
for s in socks:
    s.close()
s = socket.create_connection(("127.0.0.1", port))
t0 = time.time()
s.settimeout(8)
try:
    gone = s.recv(1) == b""
except OSError:
    gone = True
check(gone and time.time() - t0 < 5, "idle connection closed after %.1fs" % (time.time() - t0))
s.close()

# ETag / Last-Modified keyed on the file identity
dec0 = jget(port, "/statz")[1]["decodes"]
st, h, body = get(port, P + "data?run=good&tag=framework_op_stats")
etag, lm = h.get("ETag"), h.get("Last-Modified")
check(st == 200 and etag and lm, "data: ETag %s, Last-Modified %s" % (etag, lm))
st, h2, body2 = get(port, P + "data?run=good&tag=framework_op_stats", {"If-None-Match": etag})
check(st == 304 and body2 == b"" and h2.get("ETag") == etag, "If-None-Match -> 304, empty body")
st, h3, _ = get(port, P + "data?run=good&tag=framework_op_stats&x=1", {"If-None-Match": etag})
check(st == 200 and h3.get("ETag") != etag, "other query: other ETag")
# If-Modified-Since (RFC 9110 13.1.3), decided only without If-None-Match
DATA = P + "data?run=good&tag=framework_op_stats"
st, h6, b6 = get(port, DATA, {"If-Modified-Since": lm})
check(st == 304 and b6 == b"" and h6.get("Last-Modified") == lm,
      "If-Modified-Since = Last-Modified -> 304, empty body")
st, _, _ = get(port, DATA, {"If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"})
check(st == 200, "older If-Modified-Since -> 200")
st, _, _ = get(port, DATA, {"If-Modified-Since": lm, "If-None-Match": '"other"'})
check(st == 200, "If-None-Match decides over If-Modified-Since -> 200")
st, _, _ = get(port, DATA, {"If-Modified-Since": "not a date"})
check(st == 200, "invalid If-Modified-Since ignored -> 200")
for route in ("profile_info?run=good", "run_tools?run=good"):
    st, h4, _ = get(port, P + route)
    st2, _, _ = get(port, P + route, {"If-None-Match": h4.get("ETag", "none")})
    check(st == 200 and st2 == 304, "%s: 304 on revalidation" % route.split("?")[0])
path = os.path.join(LD, "plugins/profile/good/localhost.xplane.pb")
os.utime(path, (time.time() + 10, time.time() + 10))
time.sleep(1.2)
st, h5, _ = get(port, P + "data?run=good&tag=framework_op_stats", {"If-None-Match": etag})
check(st == 200 and h5.get("ETag") != etag, "file touched (mtime): 200 with a new ETag")
st, _, _ = get(port, DATA, {"If-Modified-Since": lm})
check(st == 200, "file touched: If-Modified-Since the old Last-Modified -> 200")
stz = jget(port, "/statz")[1]
check(stz["decodes"] == dec0 + 1 and stz["not_modified"] >= 3,
      "statz: one decode for the changed file (%d -> %d), %d not-modified answers"
      % (dec0, stz["decodes"], stz["not_modified"]))
st, h, _ = get(port, "/index.html")
if st == 200:
    st2, _, _ = get(port, "/index.html", {"If-None-Match": h.get("ETag")})
    check(h.get("Cache-Control") == "no-cache" and st2 == 304, "index.html: ETag + no-cache, 304")

# healthcheck subcommand
rc = subprocess.run([BIN, "healthcheck", "http://127.0.0.1:%d/healthz" % port]).returncode
check(rc == 0, "xpview healthcheck: exit 0 on 200")
rc = subprocess.run([BIN, "healthcheck", "http://127.0.0.1:%d/nope" % port],
                    stderr=subprocess.DEVNULL).returncode
check(rc == 1, "xpview healthcheck: exit 1 on 404")

# connection cap
srv.send_signal(signal.SIGTERM)
srv.wait(timeout=15)
srv, port = start("--logdir", LD, "--max_connections", "8")
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(8)]
time.sleep(0.3)
served = 0
for _ in range(4):
    try:
        st, _, _ = get(port, "/healthz", timeout=2)
        if st == 200:
            served += 1
    except (OSError, urllib.error.URLError):
        pass
# At the cap, connections that sent nothing are closed to admit new ones
# (stalled clients must not lock everyone out).
check(served == 4, "connection cap 8 held by silent connections: new requests served (%d/4)" % served)
time.sleep(0.3)
evicted = 0
for s in held:
    s.setblocking(False)
    try:
        if s.recv(1) == b"":
            evicted += 1
    except BlockingIOError:
        pass
    except OSError:
        evicted += 1
check(evicted >= 4, "connection cap: silent connections closed to make room (%d)" % evicted)
for s in held:
    s.close()
time.sleep(0.3)
st, _, _ = get(port, "/healthz")
check(st == 200, "connection cap: served again once connections close")
srv.send_signal(signal.SIGTERM)
srv.wait(timeout=15)

# graceful shutdown with a cold request in flight
BIG = os.path.join(TMP, "big")
synth("big", BIG, size=30000000)
srv, port = start("--logdir", BIG)
result = {}
def slow():
    try:
        st, h, body = get(port, P + "data?run=big&tag=trace_viewer", timeout=60)
        # The full trace is streamed (chunked: no Content-Length); urllib
        # raises IncompleteRead if the last chunk never came.
        result["st"], result["len"], result["cl"] = st, len(body), int(h.get("Content-Length", -1))
        result["chunked"] = h.get("Transfer-Encoding") == "chunked"
        result["tail"] = body[-3:].decode("latin-1")
        result["conn"] = h.get("Connection")
    except Exception as e:  # noqa
        result["err"] = repr(e)
t = threading.Thread(target=slow)
t.start()
time.sleep(0.2)
t0 = time.time()
srv.send_signal(signal.SIGTERM)
time.sleep(0.1)
try:
    socket.create_connection(("127.0.0.1", port), timeout=1).close()
    refused = False
except OSError:
    refused = True
t.join()
code = srv.wait(timeout=20)
check(refused, "SIGTERM: new connections refused at once")
check(result.get("st") == 200 and result.get("len", 0) > 0 and
      (result.get("len") == result.get("cl") or result.get("chunked")) and
      result.get("tail") == "\n]}",
      "SIGTERM: the request in flight finished: %s" % result)
check(code == 0, "SIGTERM: exit 0 after %.1fs" % (time.time() - t0))

# ==== 4. budgets: decoding, inflate, workers, pinned memory ==================
print("-- decoding budgets and bounded inflate")
BL = os.path.join(TMP, "budget")
def put_run(root, run, name, data):
    d = os.path.join(root, "plugins/profile", run)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
# Concatenated gzip members: one member compressed once, repeated.
planes = gzip.compress(b"\x0a\x00" * (8 << 20), 9) * 64     # 1 GiB of empty planes
put_run(BL, "planes", "h.xplane.pb.gz", planes)
put_run(BL, "ratio", "h.xplane.pb.gz", gzip.compress(bytes(64 << 20), 9) * 96)  # 6 GiB
put_run(BL, "planes_raw", "h.xplane.pb", b"\x0a\x00" * (16 << 20))  # 16Mi planes, 32 MiB
synth("ok", BL, size=150000)
print("note: empty planes gzip %d bytes, ratio bomb %d bytes" %
      (len(planes), os.path.getsize(os.path.join(BL, "plugins/profile/ratio/h.xplane.pb.gz"))))
srv, port = start("--logdir", BL, "--cache_mb", "256")
for run, name, what in (("planes", "h.xplane.pb.gz", "gzip bomb"),
                        ("ratio", "h.xplane.pb.gz", "gzip bomb"),
                        ("planes_raw", "h.xplane.pb", "memory budget")):
    for route in ("profile_info?run=", "run_tools?run=", "data?tag=overview_page&run="):
        st, body = jget(port, P + route + run)
        msg = body.get("error", "") if isinstance(body, dict) else ""
        fn = "plugins/profile/%s/%s" % (run, name)
        check(st == 413 and what in msg and fn in msg,
              "%s %s: 413 '%s' naming the file (%s %s)" % (run, route.split("?")[0], what, st,
                                                           msg[:120]))
    st, _, _ = get(port, "/healthz")
    check(st == 200 and srv.poll() is None, "%s: server up" % run)
st, body = jget(port, P + "data?run=ok&tag=overview_page")
check(st == 200, "the good run is still served")
peak = rss_kb(srv, "VmHWM") // 1024
check(peak <= 600, "bombs refused within 600 MiB: peak RSS %d MiB" % peak)
srv.send_signal(signal.SIGTERM)
srv.wait(timeout=15)

print("-- heavy requests on workers: /healthz and cached answers keep flowing")
bigfile = os.path.join(BIG, "plugins/profile/big/localhost.xplane.pb")
WL = os.path.join(TMP, "workers")
synth("warm", WL, size=150000)
for i in range(8):
    d = os.path.join(WL, "plugins/profile/c%d" % i)
    os.makedirs(d)
    os.link(bigfile, os.path.join(d, "localhost.xplane.pb"))   # cold: another path
srv, port = start("--logdir", WL, "--workers", "1", "--max_queued", "2", "--busy_wait", "1")
st, _, _ = get(port, P + "data?run=warm&tag=overview_page")
check(st == 200, "warm run cached")
heavy = {}
def cold(i):
    st, h, body = get(port, P + "data?run=c%d&tag=overview_page" % i, timeout=120)
    heavy[i] = (st, h.get("Retry-After"), body[:200])
ths = [threading.Thread(target=cold, args=(i,)) for i in range(8)]
for t in ths:
    t.start()
time.sleep(0.05)
st_h, _, _ = get(port, "/healthz", timeout=10)
in_flight_h = sum(t.is_alive() for t in ths)
st_w, _, _ = get(port, P + "data?run=warm&tag=overview_page", timeout=10)
in_flight_w = sum(t.is_alive() for t in ths)
for t in ths:
    t.join()
check(st_h == 200 and in_flight_h > 0,
      "/healthz answered while %d cold requests were in flight" % in_flight_h)
check(st_w == 200 and in_flight_w > 0,
      "a cached answer served while %d cold requests were in flight" % in_flight_w)
codes = sorted(v[0] for v in heavy.values())
busy = [v for v in heavy.values() if v[0] == 503]
check(codes.count(200) >= 1 and busy and set(codes) <= {200, 503},
      "one worker, 2 queued: cold requests answered 200 or 503 (%s)" % codes)
check(all(v[1] and b"busy" in v[2] for v in busy),
      "every 503 says busy and has Retry-After (%s)" % [(v[1], v[2][:60]) for v in busy])
ok_after = [get(port, P + "data?run=c%d&tag=overview_page" % i, timeout=120)[0] for i in range(8)]
check(ok_after == [200] * 8, "all cold runs served once the load is gone: %s" % ok_after)
srv.send_signal(signal.SIGTERM)
check(srv.wait(timeout=30) == 0, "workers: clean exit on SIGTERM")

print("-- --busy_wait while every worker builds, and --grace bounds shutdown")
# One worker held 8 s by a build (XPV_DEBUG_BUILD_SLEEP_MS, the test hook):
# a queued cold request gets its 503 after --busy_wait (2 s), not when the
# worker is free; SIGTERM with --grace 1 ends the process within the grace
# period, the build still running (issue 26, item 12).
srv, port = start("--logdir", WL, "--workers", "1", "--busy_wait", "2", "--grace", "1",
                  env={"XPV_DEBUG_BUILD_SLEEP_MS": "8000"})
held = {}
def hold():
    try:
        held["st"] = get(port, P + "data?run=c0&tag=kernel_stats", timeout=30)[0]
    except Exception as e:  # noqa
        held["err"] = repr(e)
th = threading.Thread(target=hold)
th.start()
time.sleep(0.5)
t0 = time.time()
st, h, body = get(port, P + "data?run=c1&tag=kernel_stats", timeout=30)
waited = time.time() - t0
check(st == 503 and h.get("Retry-After") and b"busy" in body and waited < 4.5,
      "queued behind a held worker: 503 after %.1fs (--busy_wait 2)" % waited)
st, _, _ = get(port, "/healthz", timeout=5)
check(st == 200, "held worker: /healthz answers")
t0 = time.time()
srv.send_signal(signal.SIGTERM)
try:
    code = srv.wait(timeout=6)
except subprocess.TimeoutExpired:
    code = None
check(code == 0 and time.time() - t0 < 4.0,
      "SIGTERM with a build running: exit %s after %.1fs (--grace 1)" % (code, time.time() - t0))
th.join()

print("-- pinned entries count against the budget")
PL = os.path.join(TMP, "pinned")
for r in ("a", "b"):
    d = os.path.join(PL, "plugins/profile", r)
    os.makedirs(d)
    os.link(bigfile, os.path.join(d, "localhost.xplane.pb"))
# A budget that holds one profile's decode (admitted by its heap estimate,
# 7/8 of the 30 MB file; the mapped file itself is page cache) but not a
# second one beside what the slow download pins.
srv, port = start("--logdir", PL, "--cache_mb", "32", "--busy_wait", "1")
# A slow client: asks for a's full trace (streamed: pins a's profile and
# trace index) and reads only the first bytes.
slow = socket.create_connection(("127.0.0.1", port), timeout=30)
slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
slow.sendall(("GET %sdata?run=a&tag=trace_viewer HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % P).encode())
first = slow.recv(4096)
check(first.startswith(b"HTTP/1.1 200"), "slow full-trace download started (%r)" % first[:20])
time.sleep(0.3)
# Anonymous memory (heap): b's mapped file pages are page cache, outside
# the budget; a decoded profile is heap.
rss_a = rss_anon_kb(srv) // 1024
st, h, body = get(port, P + "profile_info?run=b", timeout=60)
rss_b = rss_anon_kb(srv) // 1024
check(st == 503 and h.get("Retry-After") and b"held by requests" in body,
      "cold decode beside pinned entries: 503 + Retry-After (%s %s)" % (st, body[:120]))
check(rss_b - rss_a < 20, "anonymous RSS did not grow by another profile: %d -> %d MiB" % (rss_a, rss_b))
st, _, _ = get(port, "/healthz")
check(st == 200, "pinned: /healthz answers")
slow.close()
time.sleep(0.5)
st, _, _ = get(port, P + "profile_info?run=b", timeout=60)
check(st == 200, "once the download is gone, b loads (%s)" % st)
srv.send_signal(signal.SIGTERM)
srv.wait(timeout=30)

print("-- out of memory inside a converter fails that request, not the server")
OL = os.path.join(TMP, "oom")
synth("r", OL, size=3000000)
tools = ["overview_page", "framework_op_stats", "memory_profile", "kernel_stats",
         "input_pipeline_analyzer", "pod_viewer", "tf_data_bottleneck_analysis", "op_profile"]
oom_seen = []
for limit in ("1500000", "2000000"):
    srv, port = start("--logdir", OL, env={"XPV_ALLOC_LIMIT": limit})
    codes = {}
    for t in tools:
        st, body = jget(port, P + "data?run=r&tag=%s" % t)
        codes[t] = st
        if st == 413 and isinstance(body, dict) and "out of memory" in body.get("error", ""):
            oom_seen.append((limit, t))
            st2, body2 = jget(port, P + "data?run=r&tag=%s" % t)
            check(st2 == 413 and body2 == body, "limit %s: %s again: the same 413, kept" % (limit, t))
    check(set(codes.values()) <= {200, 413, 503}, "limit %s: answers 200/413/503: %s" % (limit, codes))
    try:
        st, _, body = get(port, P + "data?run=r&tag=trace_viewer", timeout=60)
        full = st
    except Exception as e:       # a body cut by the failing writer
        full = "cut (%s)" % type(e).__name__
    st, _, _ = get(port, "/healthz")
    check(st == 200 and srv.poll() is None,
          "limit %s: the server is up after the failures (full trace: %s)" % (limit, full))
    st, _, _ = get(port, P + "runs")
    check(st == 200, "limit %s: runs answered" % limit)
    srv.send_signal(signal.SIGTERM)
    check(srv.wait(timeout=30) == 0, "limit %s: clean exit" % limit)
check(len(oom_seen) >= 1, "converters ran out of memory and answered 413: %s" % oom_seen)

cleanup()
print()
if checks.fails:
    print("%d check(s) failed" % checks.fails)
    sys.exit(1)
print("all checks passed")
PY
PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 "$tmp/hostile.py" "$BIN" "$tmp" &
pypid=$!
wait "$pypid"
