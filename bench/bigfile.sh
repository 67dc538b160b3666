#!/usr/bin/env bash
# Large single-host profiles (issue 17; not part of the test suite, timings
# are never asserted): cold first trace viewport and cold overview_page
# against md5sum of the same file, in the same run of this script.
#
#   bash bench/bigfile.sh RUN_DIR [REPEAT] [BASE_BIN]
#       RUN_DIR   a run directory (.../plugins/profile/RUN) holding one host
#                 file, e.g. a real
#                 profile grown to 1 GB (RUN_DIR /tmp/tf1g/plugins/profile/r):
#                 python3 ../shared/tools/grow_xplane.py \
#                   ../shared/testdata/real/tensorflow-profiler/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb \
#                   /tmp/tf1g/plugins/profile/r/host.xplane.pb 1617000000
#       REPEAT    default 3
#       BASE_BIN  another xpview build (e.g. of the previous commit) measured
#                 the same way in the same run, for before/after ratios
#
# Every measurement is a fresh `xpview export` process: "cold" = load +
# decode + the tool's derived data + render; the file is read once first
# so that every measurement finds it in the OS page cache alike (md5sum
# too).  The first viewport is the page's first request
# (`trace_viewer@`, resolution 960: a 1920 px canvas).  Reported: median
# wall and CPU seconds, peak RSS, and wall / md5sum wall (goal <= 1.6).
# On a shared machine the CPU seconds are the steadier figure.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${XPV_BIN:-build/xpview}
run_dir=${1:?usage: bench/bigfile.sh RUN_DIR [REPEAT] [BASE_BIN]}
repeat=${2:-3}
base=${3:-}
[ -x "$BIN" ] || { echo "build first: $BIN missing"; exit 1; }
# XPV_MAX_FILE_SIZE=BYTES: files past the default 4 GiB (a 10 GB profile)
extra=${XPV_MAX_FILE_SIZE:+--max_file_size $XPV_MAX_FILE_SIZE}
files=$(find "$run_dir" -type f)
cat $files >/dev/null
. bench/lib.sh
bins="new"
[ -n "$base" ] && bins="base new"
for i in $(seq 1 "$repeat"); do
    run md5sum md5sum $files
    for b in $bins; do
        bin=$BIN
        [ "$b" = base ] && bin=$base
        run "trace.$b" "$bin" export $extra --tool trace_viewer@ --param resolution=960 "$run_dir"
        run "overview.$b" "$bin" export $extra --tool overview_page "$run_dir"
    done
done
echo "$repeat runs each (median); load average $(cut -d' ' -f1-3 /proc/loadavg); files:"
du -b $files | awk '{printf "  %s %.0f MB\n", $2, $1 / 1e6}'
m=$(wall md5sum)
printf '  %-16s %7.2f s wall %7.2f s CPU\n' md5sum "$m" "$(cpu md5sum)"
for b in $bins; do
    for t in trace overview; do
        printf '  %-16s %7.2f s wall %7.2f s CPU  peak RSS %6.0f MB  %5.2fx md5sum\n' \
            "$t ($b)" "$(wall "$t.$b")" "$(cpu "$t.$b")" "$(echo "$(rss "$t.$b") / 1024" | bc -l)" \
            "$(echo "$(wall "$t.$b") / $m" | bc -l)"
    done
done
