# tests/lib.sh - what the shell tests that run xpview share.  Sourced, not
# run: `. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"`.
#
#   xpv_tmpdir NAME       $tmp (a fresh temporary directory), the pids array
#                         and the traps: on exit every pid in pids is killed
#                         and waited for, then $tmp is removed
#   ok / bad / check      print one result; bad counts it in $fails
#   xpv_launch NAME ARGS  start "$BIN" --port 0 ARGS in the background, its
#                         output in $tmp/NAME.out and $tmp/NAME.err; sets PID
#                         and adds it to pids
#   xpv_await NAME PID [TRIES]
#                         wait (TRIES x 50 ms, default 200) for the startup
#                         line of the server whose output is $tmp/NAME.out;
#                         sets PORT and URL (http://127.0.0.1:PORT/prefix/),
#                         or says what the server printed and exits 1
#   xpv_serve NAME ARGS   xpv_launch then xpv_await
#   xpv_need CMD...       exit 1 unless $BIN is executable and every CMD
#                         is on PATH
#   fetch URL [CURL ARGS] GET URL: STATUS, the body in $tmp/body, the
#                         headers in $tmp/hdr; header NAME reads one of them
#   xpv_done              exit 1 naming the count when a check failed
#
# The callers set BIN (the xpview binary) before starting servers.

xpv_tmpdir() {
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/xpv-$1.XXXXXX")
    pids=()
    trap xpv_cleanup EXIT
    trap 'exit 1' INT TERM
}

xpv_cleanup() {
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$tmp"
}

fails=0
ok()   { echo "ok   $*"; }
bad()  { echo "FAIL $*"; fails=$((fails + 1)); }
check() { # check DESC COND...
    local d=$1; shift
    if "$@"; then ok "$d"; else bad "$d"; fi
}

xpv_need() {
    [ -x "$BIN" ] || { echo "FAIL: xpview binary not found: $BIN"; exit 1; }
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null || { echo "FAIL: $c is needed"; exit 1; }
    done
}

fetch() {
    local url=$1; shift
    STATUS=$(curl -s --path-as-is -o "$tmp/body" -D "$tmp/hdr" -w '%{http_code}' "$@" "$url")
}
# expect_status WANT DESC CMD ARGS...: run a request through CMD (fetch, or
# a test's own getter that sets STATUS) and check that it answered WANT.
expect_status() {
    local want=$1 d=$2; shift 2
    "$@"
    check "$d" [ "$STATUS" = "$want" ]
}
header() { grep -i "^$1:" "$tmp/hdr" | head -1 | cut -d' ' -f2- | tr -d '\r'; }

xpv_launch() {
    local name=$1; shift
    : >"$tmp/$name.out"; : >"$tmp/$name.err"   # exist before the child opens them
    "$BIN" --port 0 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    PID=$!
    pids+=("$PID")
}

xpv_await() {
    local name=$1 pid=$2 tries=${3:-200} line=""
    for _ in $(seq 1 "$tries"); do
        line=$(grep -o 'at http://[^ ]*' "$tmp/$name.out" || true)
        [ -n "$line" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    if [ -z "$line" ]; then
        echo "FAIL server $name did not start: $(cat "$tmp/$name.out" "$tmp/$name.err")"
        exit 1
    fi
    # "at http://localhost:PORT/prefix/" -> http://127.0.0.1:PORT/prefix/
    PORT=$(echo "$line" | sed 's|^at http://[^/]*:\([0-9]*\).*|\1|')
    URL=$(echo "$line" | sed 's|^at http://[^/]*:\([0-9]*\)|http://127.0.0.1:\1|')
}

xpv_serve() {
    xpv_launch "$@"
    xpv_await "$1" "$PID"
}

xpv_done() {
    if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
}
