#!/usr/bin/env bash
# tests/fuzz/campaign.sh - a long fuzzing campaign, outside CI, on the
# corpus and seeds that `.ci/fuzz` prepared in build-fuzz/ (run it first).
#
#   bash tests/fuzz/campaign.sh SECONDS_PER_TARGET [MAX_LEN] [RUNS] [TARGETS...]
#
# Runs each target in turn (one process at a time, nice 19, so it takes
# only the CPU that other work leaves) until RUNS executions (default 10M)
# or SECONDS_PER_TARGET, whichever comes first, with inputs up to MAX_LEN
# bytes (default 8192: small inputs keep the rate high; the seeds are
# truncated to it, and small_seeds.py adds cut-down profiles that fit).  Corpus kept in build-fuzz/corpus/<target> between
# campaigns; crashes in build-fuzz/artifacts/<target>/; one log per target
# in build-fuzz/campaign/.  Prints a table of executions per target.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:?seconds per target}
maxlen=${2:-8192}
runs=${3:-10000000}
shift $(( $# < 3 ? $# : 3 ))
dir=${XPV_FUZZ_DIR:-build-fuzz}
fz=$dir/tests/fuzz
targets=${*:-$(cd "$fz" && ls fuzz_* | grep -v '\.' | tr '\n' ' ')}
mkdir -p "$dir/campaign"
# Seeds that fit MAX_LEN for the targets that analyse a decoded profile: a
# profile truncated by libFuzzer no longer decodes, so with real-sized seeds
# they would fuzz little but the decoder's error paths (small_seeds.py).
small=$dir/seeds-small
rm -rf "$small"
if [ -d "$dir/seeds/fuzz_xplane" ]; then
    python3 tests/fuzz/small_seeds.py "$maxlen" "$small/xspace" \
        "$dir"/seeds/fuzz_xplane/* tests/data/device/*.xplane.pb >"$dir/campaign/small_seeds.txt"
    for t in fuzz_xplane fuzz_tools fuzz_group_events fuzz_derived_lines fuzz_hlo; do
        mkdir -p "$small/$t"
        for f in "$small"/xspace/*.xplane.pb; do
            if [ $t = fuzz_hlo ]; then { printf X; cat "$f"; } >"$small/$t/${f##*/}"   # see fuzz_hlo.c
            else cp "$f" "$small/$t/"; fi
        done
    done
    for f in "$small"/xspace/*.hlo*; do { printf P; cat "$f"; } >"$small/fuzz_hlo/${f##*/}"; done
fi
for t in $targets; do
    mkdir -p "$dir/corpus/$t" "$dir/artifacts/$t"
    seeds=$dir/seeds/$t
    [ -d "$seeds" ] || seeds=
    sm=$small/$t
    [ -d "$sm" ] || sm=
    ( cd "$dir/campaign" && ASAN_OPTIONS=detect_leaks=1 nice -n 19 "../tests/fuzz/$t" \
        -runs="$runs" -max_total_time="$secs" -max_len="$maxlen" -timeout=20 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="../artifacts/$t/" \
        "../corpus/$t" ${seeds:+"../seeds/$t"} ${sm:+"../seeds-small/$t"} >"$t.log" 2>&1 ) ||
        echo "$t: exit $? (see $dir/campaign/$t.log)"
done
printf '| target | executions | seconds | exec/s | coverage (cov / ft) |\n|---|---|---|---|---|\n'
for t in $targets; do
    log=$dir/campaign/$t.log
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    s=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
    printf '| %s | %s | %s | %s | %s |\n' "$t" "${n:-?}" "$(( ${n:-0} / (${s:-0} > 0 ? ${s:-1} : 1) ))" "${s:-?}" "${cov:-?}"
done
