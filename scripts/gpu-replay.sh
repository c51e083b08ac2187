#!/bin/bash
# gpu-replay.sh - issue #14's measurement, unattended: a Copilot-shaped
# agent session (scripts/copilot-replay.py) against rs-serve with the CUDA
# backend on a synthetic Qwen3.8-27B file, with the checkpoint cache and,
# for comparison, without it.
#
#   make CUDA=1 all && bash scripts/gpu-replay.sh
#
# What it shows: conversation A grows to CONTEXT (default 30,000) tokens of
# system prompt, tools and files plus its turns; its last turn adds a
# 200-token user message, whose time to first token is the number to beat
# (<= 0.5 s), with the same request's full prefill beside it (--cold); a
# second conversation B and a title request are interleaved, and both
# conversations must keep hitting.  One table per run, one JSON line per
# request in $OUT/replay-*.jsonl.
#
# Environment: SYNTH (the 17 GB file, made when absent; default
# /tmp/rs-s27b.gguf), PORT (default 8099), CTX (default 65536), CONTEXT
# (default 30000), TURNS (default 12), OUT (default /tmp), RUNS ("cache
# nocache" by default; "drop" is the cache with preserve_thinking false,
# where the template drops earlier turns' reasoning; one run fits a
# 10-minute device command once the file exists).  Exit 1 when a replay
# fails.
set -u
bin=build/bin
synth=${SYNTH:-/tmp/rs-s27b.gguf}
port=${PORT:-8099}
ctx=${CTX:-65536}
context=${CONTEXT:-30000}
turns=${TURNS:-12}
out=${OUT:-/tmp}
runs=${RUNS:-cache nocache}
rc=0

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ ! -s "$synth" ]; then
	echo "== rs-bench --synth 27b -o $synth"
	$bin/rs-bench --synth 27b -o "$synth" || exit 1
fi

# rs-serve on $synth with options "$@"; waits up to 300 s for /health.
start() {
	setsid $bin/rs-serve -m "$synth" --backend cuda --ctx "$ctx" \
	    --slots 3 --port "$port" "$@" </dev/null 2>"$out/replay-serve.err" &
	spid=$!
	for _ in $(seq 600); do
		curl -sf "127.0.0.1:$port/health" >/dev/null && return 0
		kill -0 "$spid" 2>/dev/null || return 1
		sleep 0.5
	done
	return 1
}

stop() {
	kill -TERM "$spid" 2>/dev/null
	for _ in $(seq 40); do
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.5
	done
	kill -KILL -- "-$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
}

for run in $runs; do
	extra=()
	case $run in
	cache) opts=() ;;
	nocache) opts=(--cache-mem 0 --cache-host-mem 0) ;;
	drop) opts=(); extra=(--drop-reasoning) ;;
	*) echo "gpu-replay: unknown run '$run'" >&2; exit 2 ;;
	esac
	echo "== $run: rs-serve --slots 3 --ctx $ctx ${opts[*]}"
	if ! start "${opts[@]}"; then
		echo "rs-serve did not become healthy:"
		tail -20 "$out/replay-serve.err"
		exit 1
	fi
	python3 scripts/copilot-replay.py --url "http://127.0.0.1:$port" \
	    --context-tokens "$context" --turns "$turns" --cold \
	    --jsonl "$out/replay-$run.jsonl" --timeout 300 "${extra[@]}" || rc=1
	curl -s "127.0.0.1:$port/metrics" | grep '^rs_checkpoint' || true
	stop
	grep -v ' 200 ' "$out/replay-serve.err" | tail -5
done
exit $rc
