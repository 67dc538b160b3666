#!/usr/bin/env bash
# Cost of the enrichment pass (event grouping + derived lines, run once per
# profile after decode: analysis/enrich/enrich.c) against decode, on real-shaped
# profiles: real xplanes grown to SIZE bytes with ../shared/tools/grow_xplane.py.
#
#   bash bench/grouping.sh [SIZE_BYTES] [FILE.xplane.pb ...]
#
# Default SIZE 1000000000 (1 GB); default inputs: the JAX TPU profile
# (openxla-xprof tpu_inference_2), the TF GPU one (tensorflow-profiler
# GPU-multi-worker: grouped by TF itself, derived lines in the file, so the
# pass has nothing to do) and a JAX GPU one (AMD-AGI-TraceLens
# jax08_attention: derived lines from kernels) from ../shared/testdata/real.  For each input: the md5
# of the grown file (a baseline: the same bytes on every run), then
# build/bench/bench_group_events (best of 3: decode and enrichment, wall and
# CPU, measured in the same process, their ratio, and a checksum of the
# pass's result).  One grown file exists at a time; each is deleted after
# its run.  Timings are never asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-1000000000}
shift || true
real=../shared/testdata/real
inputs=("$@")
if [ ${#inputs[@]} -eq 0 ]; then
  inputs=("$real/openxla-xprof/plugins/profile/tpu_inference_2/tpu_inference_2.xplane.pb"
          "$real/tensorflow-profiler/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb"
          "$real/AMD-AGI-TraceLens/plugins/profile/jax08_attention/tw003.xplane.pb")
fi
grow=../shared/tools/grow_xplane.py
[ -f "$grow" ] || { echo "bench/grouping.sh: $grow not found (needs ../shared)"; exit 1; }
[ -x build/bench/bench_group_events ] || cmake --build build -j2 --target bench_group_events
work=${XPV_BENCH_DIR:-/tmp/xpview-bench}
mkdir -p "$work"
for src in "${inputs[@]}"; do
  out="$work/grown-$(basename "$src")"
  echo "== $src grown to $size bytes"
  python3 "$grow" "$src" "$out" "$size" >/dev/null
  # grow_xplane repeats events only (metadata stays once): aim again when
  # the result fell short of SIZE by more than 10%.
  got=$(stat -c %s "$out")
  if [ "$got" -lt $((size * 9 / 10)) ]; then
    python3 "$grow" "$src" "$out" $((size * size / got)) >/dev/null
  fi
  echo "md5         $(md5sum "$out" | cut -d' ' -f1)  $(stat -c %s "$out") bytes"
  ./build/bench/bench_group_events "$out" 3
  rm -f "$out"
done
