#!/usr/bin/env bash
# Run a command and sample its memory every 50 ms (benchmarks only):
#
#   bash bench/rss_sample.sh CMD [ARGS...]
#
# Prints, after the command's own output: wall seconds, the kernel's peak
# RSS (VmHWM: heap and mapped file pages together) and the largest
# RssAnon (heap: what the process really holds) and RssFile (pages of
# mapped files: page cache the kernel can take back) seen in the samples.
# A mapped 10 GB file counts in VmHWM once its pages have been read, so
# the heap figure is the one to hold against a memory budget.  The command's
# child processes count too (summed per sample; VmHWM: the largest), so a
# benchmark that measures in a forked child (bench_trace) is seen.
set -uo pipefail
# The process and its descendants.
tree() {
    echo "$1"
    local c
    for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do tree "$c"; done
}
start=$(date +%s.%N)
"$@" &
pid=$!
anon=0 file=0 hwm=0
while kill -0 "$pid" 2>/dev/null; do
    a=0 f=0 h=0
    for p in $(tree "$pid"); do
        s=$(cat /proc/"$p"/status 2>/dev/null) || continue
        read -r pa pf ph < <(awk '/^RssAnon:/ {a=$2} /^RssFile:/ {f=$2} /^VmHWM:/ {h=$2}
                                 END {print a+0, f+0, h+0}' <<<"$s")
        a=$((a + pa)) f=$((f + pf))
        [ "$ph" -gt "$h" ] && h=$ph
    done
    [ "$a" -gt "$anon" ] && anon=$a
    [ "$f" -gt "$file" ] && file=$f
    [ "$h" -gt "$hwm" ] && hwm=$h
    sleep 0.05
done
wait "$pid"
rc=$?
end=$(date +%s.%N)
printf 'rss_sample: exit %d, %.2f s wall, VmHWM %.0f MB, max RssAnon %.0f MB, max RssFile %.0f MB\n' \
    "$rc" "$(echo "$end - $start" | bc -l)" "$(echo "$hwm / 1024" | bc -l)" \
    "$(echo "$anon / 1024" | bc -l)" "$(echo "$file / 1024" | bc -l)" >&2
exit "$rc"
