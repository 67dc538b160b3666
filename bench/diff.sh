#!/usr/bin/env bash
# Benchmark of `xpview diff` (issue 15; not part of the test suite, timings
# are never asserted): a diff of two cold profiles against the two cold
# loads it cannot avoid, measured in the same run.
#
#   bash bench/diff.sh BASE NEW [TOOL] [REPEAT]
#       BASE, NEW  run directories (e.g. each holding a real profile grown
#                  with ../shared/tools/grow_xplane.py IN OUT 500000000)
#       TOOL       default framework_op_stats; REPEAT default 3
#
# Every measurement is a fresh process, so nothing is cached in memory
# ("cold"); the files are read once first so that every measurement finds
# them in the OS page cache alike.  Reported per run (median of REPEAT,
# wall seconds, user+system CPU seconds and peak RSS):
#   load BASE  `xpview export --tool TOOL BASE`: load + decode + the tool's
#              derived data + render
#   load NEW   the same for NEW
#   diff       `xpview diff --tool TOOL --format json BASE NEW`
#   ratio      diff / (load BASE + load NEW); the target is <= 1.10
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${XPV_BIN:-build/xpview}
base=${1:?usage: bench/diff.sh BASE NEW [TOOL] [REPEAT]}
new=${2:?usage: bench/diff.sh BASE NEW [TOOL] [REPEAT]}
tool=${3:-framework_op_stats}
repeat=${4:-3}
[ -x "$BIN" ] || { echo "build first: $BIN missing"; exit 1; }
cat $(find "$base" "$new" -type f) >/dev/null

. bench/lib.sh   # run NAME CMD..., median, cpu

for i in $(seq 1 "$repeat"); do
    run load_base "$BIN" export --tool "$tool" "$base"
    run load_new "$BIN" export --tool "$tool" "$new"
    run diff "$BIN" diff --tool "$tool" --format json "$base" "$new"
done
lb=$(cut -d' ' -f1 "$tmp/load_base" | median)
ln=$(cut -d' ' -f1 "$tmp/load_new" | median)
df=$(cut -d' ' -f1 "$tmp/diff" | median)
cb=$(cpu load_base); cn=$(cpu load_new); cd_=$(cpu diff)
rb=$(cut -d' ' -f2 "$tmp/load_base" | median)
rn=$(cut -d' ' -f2 "$tmp/load_new" | median)
rd=$(cut -d' ' -f2 "$tmp/diff" | median)
echo "tool $tool, $repeat runs each (median), files:"
du -b $(find "$base" "$new" -type f) | awk '{printf "  %s %.0f MB\n", $2, $1 / 1e6}'
printf '  load BASE  %7.2f s wall  %7.2f s CPU  peak RSS %6.0f MB\n' "$lb" "$cb" "$(echo "$rb / 1024" | bc -l)"
printf '  load NEW   %7.2f s wall  %7.2f s CPU  peak RSS %6.0f MB\n' "$ln" "$cn" "$(echo "$rn / 1024" | bc -l)"
printf '  diff       %7.2f s wall  %7.2f s CPU  peak RSS %6.0f MB\n' "$df" "$cd_" "$(echo "$rd / 1024" | bc -l)"
printf '  ratio diff / (load BASE + load NEW): wall %.3f, CPU %.3f (target <= 1.10)\n' \
    "$(echo "$df / ($lb + $ln)" | bc -l)" "$(echo "$cd_ / ($cb + $cn)" | bc -l)"
