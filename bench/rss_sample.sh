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
# the heap figure is the one to hold against a memory budget.
set -uo pipefail
start=$(date +%s.%N)
"$@" &
pid=$!
anon=0 file=0 hwm=0
while kill -0 "$pid" 2>/dev/null; do
    if s=$(cat /proc/$pid/status 2>/dev/null); then
        a=$(awk '/^RssAnon:/ {print $2}' <<<"$s"); f=$(awk '/^RssFile:/ {print $2}' <<<"$s")
        h=$(awk '/^VmHWM:/ {print $2}' <<<"$s")
        [ -n "$a" ] && [ "$a" -gt "$anon" ] && anon=$a
        [ -n "$f" ] && [ "$f" -gt "$file" ] && file=$f
        [ -n "$h" ] && [ "$h" -gt "$hwm" ] && hwm=$h
    fi
    sleep 0.05
done
wait "$pid"
rc=$?
end=$(date +%s.%N)
printf 'rss_sample: exit %d, %.2f s wall, VmHWM %.0f MB, max RssAnon %.0f MB, max RssFile %.0f MB\n' \
    "$rc" "$(echo "$end - $start" | bc -l)" "$(echo "$hwm / 1024" | bc -l)" \
    "$(echo "$anon / 1024" | bc -l)" "$(echo "$file / 1024" | bc -l)" >&2
exit "$rc"
