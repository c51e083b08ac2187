#!/bin/sh
# load-test.sh - a bounded load test of rs-serve with wrk(1) (Debian's
# wrk package), on the tiny fixture model, CPU backend, 127.0.0.1 only.
#
#   sh scripts/load-test.sh [SECONDS]     (default 10 per run)
#
# Two runs, each SECONDS long: GET /health from 64 connections, and short
# chat completions (max_tokens 4) from 16 connections, more than the engine
# and its queue (--queue 4) take, so some get the queue-full 503.  Prints
# wrk's latency percentiles and the statuses from rs-serve's access log;
# exits 1 on socket errors, on a status other than 200 and 503 (499, the
# requests cut when wrk stops, are counted apart), or when the server died.  Not part of make test (docs/hardening.md has figures).
# Environment: RS_BIN (default build/bin), RS_FIXTURES, THREADS (rs-serve
# -t, default 1).
set -eu
cd "$(dirname "$0")/.."
secs=${1:-10}
bin=${RS_BIN:-build/bin}
fx=${RS_FIXTURES:-../shared/fixtures}
command -v wrk >/dev/null || { echo "load-test.sh: needs wrk (apt-get install wrk)" >&2; exit 2; }
tmp=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin/rs-serve" -m "$fx/tiny/model-q8_0.gguf" --backend cpu -t "${THREADS:-1}" \
    --host 127.0.0.1 --port "$port" --queue 4 2>"$tmp/log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
i=0
until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do
	i=$((i + 1))
	[ $i -lt 300 ] || { echo "load-test.sh: rs-serve did not start" >&2; cat "$tmp/log" >&2; exit 1; }
	kill -0 $pid 2>/dev/null || { cat "$tmp/log" >&2; exit 1; }
	sleep 0.1
done
cat >"$tmp/chat.lua" <<'EOF'
wrk.method = "POST"
wrk.body = '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4}'
wrk.headers["Content-Type"] = "application/json"
EOF
fail=0
run() {	# NAME, then wrk's arguments
	name=$1
	shift
	echo "== $name"
	wrk --latency --timeout 10s -d "${secs}s" "$@" >"$tmp/out" 2>&1 || fail=1
	sed -n '/Latency Distribution/,/^ *99%/p;/Requests\/sec/p;/requests in/p;/Non-2xx/p;/Socket errors/p' "$tmp/out"
	grep -q 'Socket errors' "$tmp/out" && fail=1
	return 0
}
run "GET /health, 64 connections" -t 2 -c 64 "http://127.0.0.1:$port/health"
run "POST /v1/chat/completions (max_tokens 4), 16 connections" -t 2 -c 16 \
    -s "$tmp/chat.lua" "http://127.0.0.1:$port/v1/chat/completions"
echo "== statuses in the access log"
awk '$3 ~ /^(GET|POST)$/ { n[$3 " " $4 " " $5]++ } END { for (k in n) print "  " k ": " n[k] }' \
    "$tmp/log" | sort
echo "== completed chat requests (200), server-side total_ms"
awk '$3 == "POST" && $5 == 200 { for (i = 6; i <= NF; i++) if ($i ~ /^total_ms=/)
    { sub(/^total_ms=/, "", $i); print $i } }' "$tmp/log" | sort -n >"$tmp/ms"
n=$(wc -l <"$tmp/ms")
if [ "$n" -gt 0 ]; then
	for q in 50 90 99; do
		k=$(( (n * q + 99) / 100 ))
		printf '  p%s %s ms\n' "$q" "$(sed -n "${k}p" "$tmp/ms")"
	done
fi
# 499: a request still running when wrk stopped and closed its connection
if awk '$3 ~ /^(GET|POST)$/ && $5 != 200 && $5 != 503 && $5 != 499 { bad = 1 }
    END { exit !bad }' "$tmp/log"; then
	echo "load-test.sh: statuses other than 200 and 503 (and 499 at the end)" >&2
	fail=1
fi
kill -0 $pid 2>/dev/null || { echo "load-test.sh: rs-serve died" >&2; fail=1; }
[ $fail -eq 0 ] && echo "load-test.sh: ok" || echo "load-test.sh: FAILED" >&2
exit $fail
