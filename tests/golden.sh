#!/usr/bin/env bash
# tests/golden.sh - golden JSON per tool: what each tool answers on our own
# fixtures, byte for byte, kept in tests/golden/<tool>/<case>.json.
#
# Fixtures (built here, nothing big checked in):
#   synth1  `xpview synth` 1 host, 3 steps, seed 7 (TF-shaped, GPU)
#   synth2  the same with 2 hosts (ALL_HOSTS answers, pod viewer)
#   jax     tests/data/device/jax_gpu_mlp.xplane.pb (JAX on an H100, with
#           HLO protos: the HLO tools)
#   torch   tests/data/device/torch_gpu.pt.trace.json.gz (PyTorch/Kineto)
# Every tool `xpview export` answers for a fixture must have its golden
# file (a new tool or fixture fails until its golden is written), and every
# golden file must still be answered identically.  A change that means to
# change an answer rewrites them with XPV_UPDATE_GOLDEN=1 and shows the
# difference in review (git diff tests/golden).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${XPV_BIN:-$here/../build/xpview}
GOLD=$here/golden
[ -x "$BIN" ] || { echo "FAIL: xpview binary not found: $BIN"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xpv-golden.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Fixture logdirs: $tmp/<case>/plugins/profile/demo/<host files>.
"$BIN" synth --size 64K --hosts 1 --steps 3 --seed 7 --run demo "$tmp/synth1" >/dev/null
"$BIN" synth --size 64K --hosts 2 --steps 3 --seed 7 --run demo "$tmp/synth2" >/dev/null
mkdir -p "$tmp/jax/plugins/profile/demo" "$tmp/torch/plugins/profile/demo"
cp "$here/data/device/jax_gpu_mlp.xplane.pb" "$tmp/jax/plugins/profile/demo/h100.xplane.pb"
cp "$here/data/device/torch_gpu.pt.trace.json.gz" \
   "$tmp/torch/plugins/profile/demo/h100.pt.trace.json.gz"

# The tools, from the binary's own table (run_tools of a run lists only
# what that run offers; `export` answers 404 for the others).
tools=$("$BIN" export --list_tools)

# Extra queries beside the plain one: "case tool golden-name k=v...".
extra=$(cat <<'EOF'
synth1 trace_viewer trace_viewer@res50 resolution=50 start_time_ms=0 end_time_ms=5
synth2 trace_viewer trace_viewer@res50 resolution=50 start_time_ms=0 end_time_ms=5
synth2 memory_profile memory_profile@worker1 host=worker1
jax op_profile op_profile@category group_by=category
jax op_profile op_profile@provenance group_by=provenance
EOF
)
# Plain answers too large to be useful as goldens (the windowed query above
# covers them).
too_big="synth1/trace_viewer synth2/trace_viewer"

fails=0 checked=0 written=0
compare() { # compare CASE NAME OUTFILE
    local want=$GOLD/$2/$1.json
    checked=$((checked + 1))
    if [ "${XPV_UPDATE_GOLDEN:-}" = 1 ]; then
        mkdir -p "$GOLD/$2"
        if ! cmp -s "$3" "$want"; then cp "$3" "$want"; written=$((written + 1)); fi
        return
    fi
    if [ ! -f "$want" ]; then
        echo "FAIL $1 $2: no golden file $want (write it with XPV_UPDATE_GOLDEN=1)"
        fails=$((fails + 1))
    elif ! cmp -s "$3" "$want"; then
        echo "FAIL $1 $2: answer differs from $want:"
        diff <(python3 -m json.tool "$want" 2>/dev/null || cat "$want") \
             <(python3 -m json.tool "$3" 2>/dev/null || cat "$3") | head -20 || true
        fails=$((fails + 1))
    fi
}

for c in synth1 synth2 jax torch; do
    run=$tmp/$c/plugins/profile/demo
    for t in $tools; do
        case " $too_big " in *" $c/$t "*) continue ;; esac
        out=$tmp/out.json
        if "$BIN" export --tool "$t" "$run" >"$out" 2>"$tmp/err"; then
            compare "$c" "$t" "$out"
        elif [ -f "$GOLD/$t/$c.json" ]; then
            echo "FAIL $c $t: no longer answered: $(cat "$tmp/err")"
            fails=$((fails + 1))
        fi
    done
done
while read -r c t name params; do
    [ -n "$c" ] || continue
    args=()
    for kv in $params; do
        case $kv in host=*) args+=(--host "${kv#host=}") ;; *) args+=(--param "$kv") ;; esac
    done
    out=$tmp/out.json
    if "$BIN" export --tool "$t" "${args[@]}" "$tmp/$c/plugins/profile/demo" >"$out" 2>"$tmp/err"; then
        compare "$c" "$name" "$out"
    else
        echo "FAIL $c $name: $(cat "$tmp/err")"
        fails=$((fails + 1))
    fi
done <<<"$extra"

# Golden files nobody asks for any more are stale.
for f in "$GOLD"/*/*.json; do
    [ -e "$f" ] || continue
    n=$(basename "$(dirname "$f")") c=$(basename "$f" .json)
    case $c in synth1|synth2|jax|torch) ;; *) continue ;; esac
    tool=${n%@*}
    if ! grep -qx "$tool" <<<"$tools"; then
        echo "FAIL stale golden $f (no tool $tool)"
        fails=$((fails + 1))
    fi
done

if [ "${XPV_UPDATE_GOLDEN:-}" = 1 ]; then
    echo "golden: $checked answers, $written files written"
    exit 0
fi
echo "golden: $checked answers compared, $fails failures"
[ "$fails" = 0 ]
