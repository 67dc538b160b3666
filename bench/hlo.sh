#!/usr/bin/env bash
# Benchmark of the HLO tools (issue 13; not part of the test suite, timings
# are never asserted): cold hlo_stats / op_profile / roofline_model against
# a cold overview_page of the same run, in the same run of this script.
#
#   bash bench/hlo.sh RUN_DIR [REPEAT]
#       RUN_DIR  a run directory holding one JAX profile, e.g. the TPU
#                profile of ../shared grown to 500 MB:
#                python3 ../shared/tools/grow_xplane.py \
#                  ../shared/testdata/real/openxla-xprof/plugins/profile/tpu_inference_2/tpu_inference_2.xplane.pb \
#                  /tmp/hlo500/plugins/profile/r/host.xplane.pb 500000000
#       REPEAT   default 3
#
# Every measurement is a fresh `xpview export` process (load + decode +
# the tool's derived data + render: "cold"); the file is read once first so
# that every measurement finds it in the OS page cache alike.  Reported:
# median wall and CPU seconds and peak RSS per tool, the ratio of each HLO
# tool to the overview (target <= 1.2), and md5sum of the file as a
# same-run baseline.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${XPV_BIN:-build/xpview}
run_dir=${1:?usage: bench/hlo.sh RUN_DIR [REPEAT]}
repeat=${2:-3}
[ -x "$BIN" ] || { echo "build first: $BIN missing"; exit 1; }
files=$(find "$run_dir" -type f)
cat $files >/dev/null
. bench/lib.sh
tools="overview_page hlo_stats op_profile"
"$BIN" export --list_tools | grep -qx roofline_model && tools="$tools roofline_model"
for i in $(seq 1 "$repeat"); do
    run md5sum md5sum $files
    for t in $tools; do run "$t" "$BIN" export --tool "$t" "$run_dir"; done
done
echo "$repeat runs each (median); files:"
du -b $files | awk '{printf "  %s %.0f MB\n", $2, $1 / 1e6}'
printf '  %-16s %7.2f s wall\n' md5sum "$(wall md5sum)"
ov=$(wall overview_page)
for t in $tools; do
    printf '  %-16s %7.2f s wall %7.2f s CPU  peak RSS %6.0f MB  %5.2fx overview  %5.2fx md5sum\n' \
        "$t" "$(wall "$t")" "$(cpu "$t")" "$(echo "$(rss "$t") / 1024" | bc -l)" \
        "$(echo "$(wall "$t") / $ov" | bc -l)" "$(echo "$(wall "$t") / $(wall md5sum)" | bc -l)"
done
