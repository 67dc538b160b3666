#!/usr/bin/env bash
# Benchmarks (not part of the test suite; timings are never asserted).
#
#   bash bench/run.sh [SIZE_BYTES]      default 1000000000 (1 GB)
#
# Builds release binaries, generates a synthetic single-host profile of the
# given size with `xpview synth`, then runs each bench program against it.
# Every figure is printed next to a baseline measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-1000000000}
bash .ci/setup >/dev/null
work=${XPV_BENCH_DIR:-/tmp/xpview-bench}
mkdir -p "$work"
logdir="$work/logdir-$size"
if [ ! -d "$logdir" ]; then
  echo "== generating a $size-byte synthetic profile in $logdir"
  ./build/xpview synth --size "$size" --hosts 1 "$logdir"
fi
file=$(find "$logdir" -name '*.xplane.pb' | head -1)
echo "== ingest: $file"
./build/bench/bench_ingest "$file" 3
for b in build/bench/bench_*; do
  case "$b" in */bench_ingest) continue ;; esac
  [ -x "$b" ] || continue
  echo "== $(basename "$b")"
  "$b" "$file"
done
