#!/usr/bin/env bash
# tests/hosts.sh - a many-host run within the memory budget (issue 17).
#
# One synthetic host profile copied as N hosts of one run (different files,
# the same bytes: every host must be decoded, and the answer over all of
# them is known from one host's: N times each count).  Servers run with a
# --cache_mb far below what N decoded profiles take:
#   1. ALL_HOSTS overview_page, kernel_stats, framework_op_stats,
#      input_pipeline_analyzer, pod_viewer: 200, each host decoded once in
#      all (statz `decodes` = N, not more), peak anonymous RSS (RssAnon,
#      sampled: heap, not the mapped files' page cache, which the budget
#      does not hold) within the budget + a margin (two profiles being
#      decoded at once + fixed costs),
#      well under what holding every profile takes.
#   2. the combination is right: ALL_HOSTS kernel_stats rows = one host's
#      rows with occurrences and total duration times N; framework_op_stats
#      occurrences times N; overview run environment task_count = N (the
#      copies share one embedded hostname: host_count 1, as XProf counts).
#   3. single-host answers after ALL_HOSTS decode nothing more (the hosts'
#      parts are cached apart from their profiles).
#   4. a budget that holds one decoded host at a time: the same answer,
#      still N decodes (no re-decode thrash), no 503; profiles were evicted
#      on the way (the budget really held one at a time).
# Never asserts timings.  Env: XPV_BIN (set by ctest), default build/xpview.
set -euo pipefail
BIN=${XPV_BIN:-build/xpview}
[ -x "$BIN" ] || { echo "FAIL: xpview binary not found: $BIN"; exit 1; }
command -v python3 >/dev/null || { echo "FAIL: python3 is needed"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xpv-hosts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
cat >"$tmp/hosts.py" <<'PY'
import json, os, re, shutil, signal, subprocess, sys, time, urllib.error, urllib.request

import xpv_servers

BIN, TMP = sys.argv[1], sys.argv[2]
N = 8
import checks
from checks import check

def start(*args):
    return xpv_servers.start(BIN, TMP, *args)

def stop(p):
    p.terminate()
    p.wait()

def get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=300) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()

def data(port, tool, host):
    return get(port, "/data/plugin/profile/data?run=pod&tag=%s&host=%s" % (tool, host))

def statz(port):
    return json.loads(get(port, "/statz")[1])

def hwm_mib(p):
    with open("/proc/%d/status" % p.pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    return 0

# One host profile, copied as N hosts of the run "pod".
gen = os.path.join(TMP, "gen")
subprocess.run([BIN, "synth", "--size", "20000000", "--hosts", "1", "--run", "one", gen],
               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
src = [os.path.join(dp, f) for dp, _, fs in os.walk(gen) for f in fs if f.endswith(".xplane.pb")][0]
run = os.path.join(TMP, "logdir", "plugins", "profile", "pod")
os.makedirs(run)
for i in range(N):
    shutil.copyfile(src, os.path.join(run, "host%d.xplane.pb" % i))
info = subprocess.run([BIN, "info", src], check=True, capture_output=True, text=True).stdout
model_mib = int(re.search(r"model (\d+) bytes", info).group(1)) / 2**20
file_mib = os.path.getsize(src) / 2**20
logdir = os.path.join(TMP, "logdir")
print("one host: %.1f MiB file, %.1f MiB decoded; %d hosts" % (file_mib, model_mib, N))

TOOLS = ["overview_page", "kernel_stats", "framework_op_stats", "input_pipeline_analyzer",
         "pod_viewer"]

# Admission asks for a host's heap estimate (7/8 of a mapped file's size,
# xpv_decode_heap_estimate), more than this synthetic model takes: the
# budgets below are in units of the larger of the two.
unit_mib = max(model_mib, file_mib * 7 / 8 + 0.1)

# ---- 1-3: a budget for about two decoded hosts ----
budget = int(2.5 * unit_mib) + 1
srv, port = start("--logdir", logdir, "--cache_mb", str(budget))
peak_anon = xpv_servers.AnonPeak(srv)
idle = xpv_servers.rss_anon_kb(srv) // 1024
answers = {}
for t in TOOLS:
    st, body = data(port, t, "ALL_HOSTS")
    check(st == 200, "%s ALL_HOSTS: %d %s" % (t, st, body[:120] if st != 200 else ""))
    answers[t] = body
d = statz(port)["decodes"]
check(d == N, "ALL_HOSTS over %d hosts: %d decodes (each host once)" % (N, d))
peak = peak_anon.stop()
# Heap, not the mapped files' page cache (RssFile, reclaimable; VmHWM
# counts it): two hosts are decoded at once (each admitted against the
# budget by its heap estimate, then growing to its decoded size);
# everything else is the budget's.  Holding every profile would take
# N * decoded.
limit = budget + 2 * model_mib + idle + 40
check(peak <= limit,
      "peak anonymous RSS %d MiB <= budget %d + two decoding hosts %d + idle %d + 40 MiB "
      "(all %d hosts decoded: %d MiB; VmHWM with mapped pages %d MiB)"
      % (peak, budget, 2 * model_mib, idle, N, N * model_mib, hwm_mib(srv)))

def table_rows(body):
    t = json.loads(body)
    if isinstance(t, list):
        t = t[0]
    cols = [c["id"] for c in t["cols"]]
    return cols, [[c.get("v") if c else None for c in r["c"]] for r in t["rows"]]

# Combination: N identical hosts = one host times N.
st, one = data(port, "kernel_stats", "host0")
check(st == 200, "kernel_stats host0: %d" % st)
cols, rows1 = table_rows(one)
_, rowsn = table_rows(answers["kernel_stats"])
occ, tot = cols.index("occurrences"), cols.index("total_duration_us")
key = lambda r: tuple(str(v) for i, v in enumerate(r) if i not in (0, occ, tot) and
                      cols[i] not in ("avg_duration_us", "min_duration_us", "max_duration_us"))
one_by = {key(r): r for r in rows1}
good = len(rows1) > 0 and len(rowsn) == len(rows1)
for r in rowsn:
    o = one_by.get(key(r))
    good = good and o is not None and r[occ] == N * o[occ] and \
        abs(r[tot] - N * o[tot]) <= 1e-6 * max(1.0, abs(r[tot]))
check(good, "kernel_stats ALL_HOSTS = host0's %d kernels with occurrences and total "
      "duration x %d" % (len(rows1), N))

st, one = data(port, "framework_op_stats", "host0")
cols, rows1 = table_rows(one)
_, rowsn = table_rows(answers["framework_op_stats"])
oc = cols.index("occurrences")
nm = [i for i, c in enumerate(cols) if c in ("host_or_device", "type", "operation")]
sum1 = {tuple(r[i] for i in nm): r[oc] for r in rows1}
sumn = {tuple(r[i] for i in nm): r[oc] for r in rowsn}
check(len(sum1) > 0 and sumn == {k: N * v for k, v in sum1.items()},
      "framework_op_stats ALL_HOSTS occurrences = host0's x %d (%d ops)" % (N, len(sum1)))

ov = json.loads(answers["overview_page"])
env = [t for t in ov if t.get("p", {}).get("host_count") is not None] if isinstance(ov, list) else []
hc = env[0]["p"]["host_count"] if env else None
tc = env[0]["p"].get("task_count") if env else None
# The N files are one profile's bytes, so one embedded XSpace hostname:
# XProf counts hosts by hostname and tasks by XSpace.
check(hc == "1", "overview run environment host_count = 1 (got %r)" % (hc,))
check(tc == "%d (num tasks per host = %d)" % (N, N),
      "overview run environment task_count = %d (got %r)" % (N, tc))

for t in TOOLS:
    if t in ("overview_page", "pod_viewer"):
        continue
    st, _ = data(port, t, "host%d" % (N - 1))
    check(st == 200, "%s host%d: %d" % (t, N - 1, st))
d = statz(port)["decodes"]
check(d == N, "single-host answers after ALL_HOSTS decode nothing more: %d decodes" % d)
stop(srv)

# ---- 4: a budget that holds one decoded host ----
# Room for one decode (its estimate) beside the hosts' cached parts, not
# for two decoded hosts beside a third's estimate.
budget1 = int(1.6 * unit_mib) + 1
srv, port = start("--logdir", logdir, "--cache_mb", str(budget1))
st, body = data(port, "overview_page", "ALL_HOSTS")
check(st == 200 and body == answers["overview_page"],
      "budget %d MiB (one decoded host): overview ALL_HOSTS %d, the same answer" % (budget1, st))
st, body = data(port, "kernel_stats", "ALL_HOSTS")
check(st == 200 and body == answers["kernel_stats"], "then kernel_stats ALL_HOSTS %d, the same" % st)
sz = statz(port)
check(sz["decodes"] == N, "%d decodes for %d hosts (no re-decode thrash)" % (sz["decodes"], N))
check(sz["cache"]["evictions"] >= N - 2,
      "%d evictions: the budget held one host at a time" % sz["cache"]["evictions"])
stop(srv)

print("%d failure(s)" % checks.fails)
sys.exit(1 if checks.fails else 0)
PY
PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 "$tmp/hosts.py" "$BIN" "$tmp"
