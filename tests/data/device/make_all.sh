#!/bin/bash
# Regenerates the device test data (run from the repository root on a GPU
# machine with JAX, PyTorch and grpcio installed).  Results go to $OUT.
set -u
D=tests/data/device
OUT=${OUT:-/tmp/device_out}
W=/tmp/device_work
rm -rf "$W"; mkdir -p "$W" "$OUT"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
pick() {  # pick SRC DESTBASE: raw if <= 1 MiB, else gzip -9
  if [ "$(stat -c %s "$1")" -le 1048576 ]; then cp "$1" "$2"; else gzip -9 -c "$1" > "$2.gz"; fi
}
echo "=== versions"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
nvcc --version | tail -2
python3 - <<'PY'
import sys, platform
print("python", sys.version.split()[0], platform.platform())
import jax, jaxlib
print("jax", jax.__version__, "jaxlib", jaxlib.__version__, "devices", jax.devices())
try:
    print("jax backend platform_version:", jax.devices()[0].client.platform_version)
except Exception as e: print("platform_version n/a", e)
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name(0))
import grpc, google.protobuf
print("grpcio", grpc.__version__, "protobuf", google.protobuf.__version__)
PY
python3 -m pip list 2>/dev/null | grep -iE 'jax|torch |tensorboard|xprof|profile|grpc|protobuf|tensorflow'

echo "=== 1. jax.profiler.trace MLP"
timeout 180 python3 $D/jax_mlp_profile.py "$W/mlp" 5
ls -laR "$W/mlp/plugins/profile"
f=$(ls "$W"/mlp/plugins/profile/*/*.xplane.pb | head -1)
if [ "$(gzip -9 -c "$f" | wc -c)" -gt 1500000 ]; then
  echo "too large ($(stat -c %s "$f") bytes), redoing with 3 steps and python_tracer_level=0"
  timeout 180 python3 $D/jax_mlp_profile.py "$W/mlp2" 3 0
  f=$(ls "$W"/mlp2/plugins/profile/*/*.xplane.pb | head -1)
fi
echo "mlp xplane: $f $(stat -c %s "$f") bytes"
pick "$f" "$OUT/jax_gpu_mlp.xplane.pb"
# jax.profiler.trace also writes its own Chrome-trace conversion beside it
t=$(ls "$(dirname "$f")"/*.trace.json.gz 2>/dev/null | head -1)
[ -n "$t" ] && cp "$t" "$OUT/jax_gpu_mlp.trace.json.gz"

echo "=== 1b. same loop with XLA command buffers (CUDA graphs) disabled"
XLA_FLAGS=--xla_gpu_enable_command_buffer= timeout 180 python3 $D/jax_mlp_profile.py "$W/mlp_nocb" 5
f=$(ls "$W"/mlp_nocb/plugins/profile/*/*.xplane.pb | head -1)
echo "mlp_nocb xplane: $f $(stat -c %s "$f") bytes"
pick "$f" "$OUT/jax_gpu_mlp_nocmdbuf.xplane.pb"

echo "=== 2. remote capture via jax.profiler.start_server"
timeout 120 python3 $D/jax_server_target.py 9999 40 "$W/ready" > "$W/target.log" 2>&1 &
TP=$!
for i in $(seq 1 90); do [ -e "$W/ready" ] && break; sleep 1; done
sleep 2
JAX_PLATFORMS=cpu timeout 150 python3 $D/jax_remote_capture.py 127.0.0.1:9999 9998 "$W/cap" 1000 "$OUT/capture_request.txt"
echo "capture rc=$?"
kill "$TP" 2>/dev/null; wait "$TP" 2>/dev/null
cat "$W/target.log" | tail -20
ls -laR "$W/cap" 2>/dev/null
f=$(ls "$W"/cap/plugins/profile/*/*.xplane.pb 2>/dev/null | head -1)
[ -n "$f" ] && pick "$f" "$OUT/jax_gpu_capture.xplane.pb"

echo "=== 3. torch.profiler"
timeout 180 python3 $D/torch_profile.py "$W/torch_gpu.pt.trace.json"
ls -la "$W"/torch_gpu.pt.trace.json*
gzip -9 -c "$W/torch_gpu.pt.trace.json" > "$OUT/torch_gpu.pt.trace.json.gz"

echo "=== 4. facts"
for f in "$OUT"/*.xplane.pb* "$OUT"/*.json.gz; do
  echo "----- $(basename "$f")"; python3 $D/facts.py "$f" --scope mlp
done > "$OUT/facts.txt" 2>&1
cat "$OUT/facts.txt"
ls -la "$OUT"
