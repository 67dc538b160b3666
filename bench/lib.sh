# bench/lib.sh - the timing helpers of the shell benchmarks.  Sourced, not
# run: `. bench/lib.sh` (the scripts cd to the checkout first).
#
# Sets $tmp (a temporary directory removed on exit) and defines:
#   run NAME CMD...   run CMD under /usr/bin/time, output discarded; appends
#                     "wall_s maxrss_kb user_s sys_s" to $tmp/NAME
#   median            the median of the numbers on stdin, one a line
#   wall/cpu/rss NAME the median wall seconds, CPU seconds (user + sys) and
#                     peak RSS (KB) of NAME's runs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() { # run NAME CMD...
    local name=$1; shift
    /usr/bin/time -f '%e %M %U %S' -o "$tmp/t" "$@" >/dev/null
    cat "$tmp/t" >>"$tmp/$name"
}
wall() { cut -d' ' -f1 "$tmp/$1" | median; }
cpu() { awk '{print $3 + $4}' "$tmp/$1" | median; }
rss() { cut -d' ' -f2 "$tmp/$1" | median; }
