#!/usr/bin/env bash
# tests/fuzz/parallel.sh - a fuzzing campaign on a many-core machine that
# builds nothing (the device machine of docs/fuzzing.md), on the corpus
# that `.ci/fuzz` / campaign.sh keep in build-fuzz/corpus/.
#
#   bash tests/fuzz/parallel.sh pack BUNDLE TARGET...
#       copy the targets, the shared libraries they need beyond libc and
#       libstdc++ (the other machine may lack them) and each target's corpus
#       (minimised with -merge=1, plus the seeds) into BUNDLE, with this script
#   bash BUNDLE/parallel.sh run BUNDLE SECONDS TARGET:WORKERS...
#       fuzz every TARGET at once with WORKERS processes each (-jobs/-workers,
#       one shared corpus per target) for SECONDS; then print the executions
#       summed over the workers, the logs that report an error and the crash
#       inputs, and write OUT/<target>.tgz (new corpus units, logs, crashes)
#       for `tar xzf` back here; OUT is $OUT, else BUNDLE/out.
set -euo pipefail
mode=${1:?pack or run}
bundle=${2:?bundle directory}
shift 2

pack() {
    local root fz t
    root=$(cd "$(dirname "$0")/../.." && pwd)
    fz=$root/build-fuzz/tests/fuzz
    mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/corpus"
    cp "$0" "$bundle/parallel.sh"
    for t in "$@"; do
        cp "$fz/$t" "$bundle/bin/"
        ldd "$fz/$t" | awk '$3 ~ /^\// {print $3}' | grep -v -e '/libc\.' -e '/libm\.' \
            -e '/libstdc++' -e '/libgcc_s' | xargs -r -I{} cp -L {} "$bundle/lib/"
        rm -rf "$bundle/corpus/$t"
        mkdir -p "$bundle/corpus/$t"
        ( cd "$root/build-fuzz" && TMPDIR=${TMPDIR:-/tmp} "$fz/$t" -merge=1 -max_len=8192 \
            -timeout=20 -rss_limit_mb=2048 "$bundle/corpus/$t" "corpus/$t" \
            $( [ -d "seeds/$t" ] && echo "seeds/$t" ) >"$bundle/merge-$t.log" 2>&1 )
    done
    du -sh "$bundle"
}

run() {
    local secs=${1:?seconds} spec t n out f g fin
    shift
    bundle=$(cd "$bundle" && pwd)
    out=${OUT:-$bundle/out}
    mkdir -p "$out"
    export LD_LIBRARY_PATH=$bundle/lib ASAN_OPTIONS=detect_leaks=1
    nproc
    find "$bundle/corpus" -type f | sort >"$bundle/before.txt"
    for spec in "$@"; do
        t=${spec%:*} n=${spec#*:}
        mkdir -p "$bundle/work/$t" "$bundle/art/$t" "$bundle/tmp/$t"
        ( cd "$bundle/work/$t" && TMPDIR=$bundle/tmp/$t "$bundle/bin/$t" -jobs="$n" -workers="$n" \
            -max_total_time="$secs" -max_len=8192 -timeout=20 -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="$bundle/art/$t/" "$bundle/corpus/$t" \
            >parent.log 2>&1 ) &
    done
    wait
    find "$bundle/corpus" -type f | sort >"$bundle/after.txt"
    for spec in "$@"; do
        t=${spec%:*} n=${spec#*:} fin=0
        for f in "$bundle/work/$t"/fuzz-*.log; do
            g=$(sed -n 's/^stat::number_of_executed_units: *//p' "$f" | tail -1)
            fin=$((fin + ${g:-0}))
        done
        echo "$t: $fin executions in $secs s on $n workers;" \
            "logs reporting an error: $(grep -l -e '==ERROR' -e 'runtime error' -e 'deadly signal' \
                "$bundle/work/$t"/*.log 2>/dev/null | wc -l);" \
            "crash inputs: $(ls "$bundle/art/$t" | wc -l);" \
            "$(grep -ho 'cov: [0-9]* ft: [0-9]*' "$bundle/work/$t"/fuzz-*.log | sort -k2 -n | tail -1)" |
            tee -a "$out/summary.txt"
        comm -13 "$bundle/before.txt" "$bundle/after.txt" | grep "/corpus/$t/" |
            sed "s|^$bundle/||" >"$bundle/new-$t.txt" || true
        tar czf "$out/$t.tgz" -C "$bundle" -T "$bundle/new-$t.txt" "work/$t" "art/$t"
    done
}

case $mode in
pack) pack "$@" ;;
run) run "$@" ;;
*) echo "usage: parallel.sh pack BUNDLE TARGET... | run BUNDLE SECONDS TARGET:WORKERS..." >&2; exit 2 ;;
esac
