#!/usr/bin/env bash
# tests/diff.sh - comparing runs (issue 15) over HTTP and on the command line.
#
# Fixture logdir: `xpview synth` runs (1 host with 3 and 6 steps, 2 hosts),
# a run holding a real JAX profile and one holding the same profile with
# every event happening twice (../shared/tools/grow_xplane.py, 2x size), and
# two different real JAX runs.  Starts `xpview --port 0` on 127.0.0.1 and
# checks GET diff / diff_csv (a run against itself: every delta 0; doubled:
# +100%; different runs: rows added and removed; host rules and errors),
# then `xpview diff`: formats, --top, exit 0 / 3 (--fail_if_slower) / 2
# (usage, unreadable file named).  The real-file checks are skipped with a
# message when ../shared is absent.  Every process started here is killed
# on exit.
set -euo pipefail

BIN=${XPV_BIN:-build/xpview}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SHARED=${XPV_SHARED:-$here/../../shared}
. "$here/lib.sh"
xpv_need curl python3
xpv_tmpdir diff

start() { xpv_serve "server.$RANDOM" "$@"; BASE="http://127.0.0.1:$PORT"; }

json() { python3 -c "import json,sys; d=json.load(open('$tmp/body')); s=d.get('summary'); rows=d.get('rows'); $1"; }

# ---- fixture logdir --------------------------------------------------------
L=$tmp/logdir
"$BIN" synth --size 200000 --steps 3 --run s3 "$L" >/dev/null
"$BIN" synth --size 200000 --steps 6 --run s6 "$L" >/dev/null
"$BIN" synth --size 200000 --steps 3 --hosts 2 --run m2 "$L" >/dev/null
"$BIN" synth --size 200000 --steps 3 --hosts 2 --seed 7 --run m2b "$L" >/dev/null
REAL=$SHARED/testdata/real/AMD-AGI-TraceLens/plugins/profile
have_real=0
if [ -f "$REAL/jax08_gemm/tw003.xplane.pb" ] && [ -f "$SHARED/tools/grow_xplane.py" ]; then
    have_real=1
    mkdir -p "$L/plugins/profile/gemm" "$L/plugins/profile/gemm2x" "$L/plugins/profile/attention"
    cp "$REAL/jax08_gemm/tw003.xplane.pb" "$L/plugins/profile/gemm/"
    cp "$REAL/jax08_attention/tw003.xplane.pb" "$L/plugins/profile/attention/"
    size=$(stat -c %s "$REAL/jax08_gemm/tw003.xplane.pb")
    python3 "$SHARED/tools/grow_xplane.py" "$REAL/jax08_gemm/tw003.xplane.pb" \
        "$L/plugins/profile/gemm2x/tw003.xplane.pb" $((2 * size)) >/dev/null
else
    echo "SKIP: $SHARED/testdata/real or grow_xplane.py not present; real-file checks skipped"
fi
mkdir -p "$L/plugins/profile/bad"
printf '\x0a\xff\xff\xff\x0f not a profile' >"$L/plugins/profile/bad/x.xplane.pb"

start --logdir "$L" --host 127.0.0.1
P="$BASE/data/plugin/profile"

# ---- HTTP: a run against itself ------------------------------------------
for t in overview_page framework_op_stats kernel_stats memory_profile; do
    expect_status 200 "diff $t s3 vs s3: 200" fetch "$P/diff?run=s3&base_run=s3&tag=$t"
    check "diff $t s3 vs s3: every delta 0, nothing added or removed" json "
assert s['delta_pct'] == 0 and s['base_total_us'] == s['new_total_us'] > 0, s
assert s['rows_added'] == 0 and s['rows_removed'] == 0 and rows, s
assert all(r['delta_us'] == 0 and r['delta_pct'] == 0 and r['status'] == 'common' for r in rows)"
done
check "diff: application/json" [ "$(header Content-Type)" = "application/json" ]
fetch "$P/diff?run=s3&base_run=s3"
check "diff: default tool overview_page with both steps series" json "
assert s['tool'] == 'overview_page', s
assert len(d['steps']['base']) == 3 and d['steps']['base'] == d['steps']['new'], d['steps']"

# ---- HTTP: more steps, sorted by change, CSV ------------------------------
fetch "$P/diff?run=s6&base_run=s3&tag=framework_op_stats"
check "diff s6 vs s3: slower, rows sorted by |change|" json "
assert s['new_total_us'] > s['base_total_us'] and s['delta_pct'] > 5, s
ch = [abs(r['delta_us']) for r in rows if r.get('unit') is None]
assert ch == sorted(ch, reverse=True), ch[:5]
r = rows[0]
for k in ('name', 'host_or_device', 'type', 'base_us', 'new_us', 'delta_pct', 'base_occurrences', 'new_occurrences'):
    assert k in r, (k, r)"
fetch "$P/diff?run=s6&base_run=s3&tag=overview_page"
check "diff overview s6 vs s3: both step series" json "
assert len(d['steps']['base']) == 3 and len(d['steps']['new']) == 6, d['steps']"
fetch "$P/diff?run=s6&base_run=s3&tag=kernel_stats&top=2"
check "diff top=2: two rows" json "assert len(rows) == 2 and s['rows'] > 2, s"
fetch "$P/diff_csv?run=s6&base_run=s3&tag=kernel_stats"
check "diff_csv: 200 text/csv attachment" bash -c "[ $STATUS = 200 ] && grep -qi '^Content-Type: text/csv' $tmp/hdr && grep -qi 'attachment; filename=\"diff_kernel_stats_s3_vs_s6.csv\"' $tmp/hdr"
check "diff_csv: header and one line per row" python3 -c "
import csv
rows = list(csv.reader(open('$tmp/body', newline='')))
assert rows[0][:3] == ['name', 'op_name', 'base_us'], rows[0]
assert len(rows) > 2 and all(len(r) == len(rows[0]) for r in rows), rows[:3]"

# ---- HTTP: hosts -----------------------------------------------------------
expect_status 200 "diff ALL_HOSTS vs ALL_HOSTS: 200" fetch "$P/diff?run=m2b&base_run=m2&tag=framework_op_stats"
h=$(curl -s "$P/hosts?run=m2&tag=framework_op_stats" | python3 -c "import json,sys; print([h['hostname'] for h in json.load(sys.stdin) if h['hostname'] != 'ALL_HOSTS'][0])")
h2=$(curl -s "$P/hosts?run=m2b&tag=framework_op_stats" | python3 -c "import json,sys; print([h['hostname'] for h in json.load(sys.stdin) if h['hostname'] != 'ALL_HOSTS'][1])")
expect_status 200 "diff host vs host: 200" fetch "$P/diff?run=m2b&base_run=m2&tag=framework_op_stats&host=$h2&base_host=$h"
fetch "$P/diff?run=m2&base_run=m2&tag=framework_op_stats&host=$h&base_host=ALL_HOSTS"
check "diff host vs ALL_HOSTS: 400" bash -c "[ $STATUS = 400 ] && grep -q ALL_HOSTS $tmp/body"
expect_status 400 "diff 1 host vs 2 hosts merged: 400" fetch "$P/diff?run=s3&base_run=m2&tag=framework_op_stats"

# ---- HTTP: errors ------------------------------------------------------------
expect_status 400 "diff without base_run: 400" fetch "$P/diff?run=s3&tag=framework_op_stats"
expect_status 404 "diff unknown base_run: 404" fetch "$P/diff?run=s3&base_run=nope"
expect_status 400 "diff of a tool without compare: 400" fetch "$P/diff?run=s3&base_run=s3&tag=trace_viewer"
fetch "$P/diff?run=s3&base_run=bad&tag=framework_op_stats"
check "diff with an undecodable base: 422 naming the file" bash -c "[ $STATUS = 422 ] && grep -q 'x.xplane.pb' $tmp/body"
expect_status 400 "diff bad top: 400" fetch "$P/diff?run=s3&base_run=s3&top=x"

# ---- HTTP: real runs -------------------------------------------------------
if [ $have_real = 1 ]; then
    for t in framework_op_stats kernel_stats hlo_stats; do
        fetch "$P/diff?run=gemm2x&base_run=gemm&tag=$t"
        check "diff $t gemm x2 vs gemm: total +100%, no row added/removed" json "
assert abs(s['delta_pct'] - 100) < 0.5, s
assert s['rows_added'] == 0 and s['rows_removed'] == 0, s
assert all(abs(r['delta_pct'] - 100) < 0.5 for r in rows), [r for r in rows if abs(r['delta_pct'] - 100) >= 0.5][:3]"
        fetch "$P/diff?run=attention&base_run=gemm&tag=$t"
        check "diff $t attention vs gemm: rows added and removed" json "
assert s['rows_added'] > 0 and s['rows_removed'] > 0, s
st = {r['status'] for r in rows}
assert {'added', 'removed'} <= st, st
assert all(r['base_us'] == 0 for r in rows if r['status'] == 'added')
assert all(r['new_us'] == 0 and r['delta_pct'] == -100 for r in rows if r['status'] == 'removed')"
    done
fi

# ---- CLI -----------------------------------------------------------------------
R=$L/plugins/profile
out=$("$BIN" diff "$R/s3" "$R/s3"); rc=$?
check "cli: self, text, exit 0" bash -c "[ $rc = 0 ] && grep -q 'overview_page' <<<'$out' && grep -q '+0.0%' <<<'$out'"
"$BIN" diff --format json --tool framework_op_stats "$R/s3" "$R/s6" >"$tmp/body"; rc=$?
check "cli: --format json = the HTTP answer" bash -c "[ $rc = 0 ] && curl -s '$P/diff?run=s6&base_run=s3&tag=framework_op_stats' | python3 -c \"
import json,sys
a = json.load(sys.stdin); b = json.load(open('$tmp/body'))
assert a == b, (a['summary'], b['summary'])\""
"$BIN" diff --format csv --top 3 --tool kernel_stats "$R/s3" "$R/s6" >"$tmp/body"; rc=$?
check "cli: --format csv --top 3: header + 3 lines" bash -c "[ $rc = 0 ] && [ \$(wc -l <$tmp/body) = 4 ]"
set +e
"$BIN" diff --tool framework_op_stats --fail_if_slower 1 "$R/s3" "$R/s3" >/dev/null 2>&1; rc=$?
check "cli: gate on itself: exit 0" [ $rc = 0 ]
"$BIN" diff --tool framework_op_stats --fail_if_slower 1 "$R/s3" "$R/s6" >/dev/null 2>"$tmp/err"; rc=$?
check "cli: gate on a slower run: exit 3 with a message" bash -c "[ $rc = 3 ] && grep -q 'slower' $tmp/err"
"$BIN" diff --tool framework_op_stats --fail_if_slower 1 "$R/s6" "$R/s3" >/dev/null 2>&1; rc=$?
check "cli: gate on a faster run: exit 0" [ $rc = 0 ]
"$BIN" diff "$R/s3" >/dev/null 2>&1; rc=$?
check "cli: one path: exit 2" [ $rc = 2 ]
"$BIN" diff --format xml "$R/s3" "$R/s3" >/dev/null 2>&1; rc=$?
check "cli: bad format: exit 2" [ $rc = 2 ]
"$BIN" diff --tool trace_viewer "$R/s3" "$R/s3" >/dev/null 2>&1; rc=$?
check "cli: tool without compare: exit 2" [ $rc = 2 ]
"$BIN" diff "$R/s3" "$R/nope" >/dev/null 2>"$tmp/err"; rc=$?
check "cli: missing NEW: exit 2 naming it" bash -c "[ $rc = 2 ] && grep -q 'nope' $tmp/err"
"$BIN" diff --tool framework_op_stats "$R/s3" "$R/bad/x.xplane.pb" >/dev/null 2>"$tmp/err"; rc=$?
check "cli: undecodable file: exit 2 naming it" bash -c "[ $rc = 2 ] && grep -q 'x.xplane.pb' $tmp/err"
if [ $have_real = 1 ]; then
    "$BIN" diff --tool framework_op_stats --fail_if_slower 50 "$R/gemm/tw003.xplane.pb" \
        "$R/gemm2x/tw003.xplane.pb" >"$tmp/out" 2>"$tmp/err"; rc=$?
    check "cli: files, doubled events: +100.0%, gate 50% exits 3" bash -c "[ $rc = 3 ] && grep -q '(+100.0%)' $tmp/out"
    "$BIN" diff --tool kernel_stats --fail_if_slower 101 "$R/gemm" "$R/gemm2x" >/dev/null 2>&1; rc=$?
    check "cli: doubled events, gate 101%: exit 0" [ $rc = 0 ]
    "$BIN" diff --tool kernel_stats --format json "$R/gemm" "$R/attention" >"$tmp/body"; rc=$?
    check "cli: two real runs: rows added and removed" bash -c "[ $rc = 0 ] && python3 -c \"
import json; s = json.load(open('$tmp/body'))['summary']
assert s['rows_added'] > 0 and s['rows_removed'] > 0, s\""
fi
set -e

echo
if [ $fails -gt 0 ]; then echo "$fails check(s) FAILED"; exit 1; fi
echo "all diff checks passed"
