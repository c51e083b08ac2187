#!/bin/bash
# gpu-check.sh - what a GPU machine runs for the CUDA backend: the kernel and
# engine tests (also those of `make volta`'s sm_70 + compute_70 build, when
# it is there: on a newer GPU they run the PTX through the driver's JIT),
# rs-verify's rollback check and rs-generate's greedy decode on the GPU
# against the fixtures, rs-serve answering under its seccomp sandbox with
# the CUDA backend, then rs-bench on a synthetic Qwen3.8-27B file.
#
#   make CUDA=1 all build/tests/check_cuda && bash scripts/gpu-check.sh
#
# Environment: RS_FIXTURES (default ../shared/fixtures), BENCH_TIMEOUT
# (seconds for rs-bench, default 380), SYNTH (where the 17 GB file goes,
# default /tmp/rs-s27b.gguf).  Prints everything on stdout; exit 1 if a
# check fails.
set -u
fx=${RS_FIXTURES:-../shared/fixtures}
export RS_FIXTURES=$fx
bin=build/bin
synth=${SYNTH:-/tmp/rs-s27b.gguf}
rc=0

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem \
    --format=csv,noheader
build/tests/check_cuda | grep -v "rel err vs cpu" || rc=1
if [ -x build/sm70/tests/check_cuda ]; then
	echo "== check_cuda of the sm_70 + compute_70 build (make volta)"
	build/sm70/tests/check_cuda | grep -v "rel err vs cpu" || rc=1
fi

# the greedy sequence of reference.json: prompt, then 40 reference tokens
read -r prompt greedy < <(python3 - "$fx/tiny/reference.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["prompts"][d["greedy"]["prompt_index"]]
print(",".join(map(str, p)), ",".join(map(str, d["greedy"]["tokens"])))
PY
)
n_prompt=$(echo "$prompt" | tr ',' '\n' | wc -l)

echo "== rs-verify --backend cuda --check-rollback"
$bin/rs-verify -m "$fx/tiny/model-q4_k_m.gguf" --backend cuda -q \
    --tokens "$prompt,$greedy" --prefix "$n_prompt" --check-rollback \
    | python3 -c 'import json,sys; d=json.loads(sys.stdin.readline()); print({k: v for k, v in d.items() if not isinstance(v, list)})' \
    || rc=1

echo "== rs-generate --backend cuda, greedy"
got=$(echo "{\"tokens\":[$prompt],\"max_tokens\":40,\"temperature\":0}" |
    $bin/rs-generate -m "$fx/tiny/model-f16.gguf" --backend cuda -q |
    python3 -c 'import json,sys; print(",".join(map(str, json.loads(sys.stdin.readline())["tokens"])))')
if [ "$got" = "$greedy" ]; then
	echo "greedy continuation matches reference.json"
else
	echo "greedy continuation differs: $got"
	rc=1
fi

echo "== rs-serve --backend cuda under its sandbox"
port=${PORT:-8099}
# in its own session: on the H200 a run without setsid saw this script
# killed (SIGKILL) seconds after rs-serve had exited; cause not pinned down
setsid $bin/rs-serve -m "$fx/tiny/model-q4_k_m.gguf" --backend cuda \
    --port "$port" -q </dev/null 2>/tmp/rs-serve-gpu.err &
pid=$!
for _ in $(seq 60); do
	curl -sf "127.0.0.1:$port/health" >/dev/null && break
	sleep 0.5
done
if curl -sf -m 60 "127.0.0.1:$port/v1/chat/completions" \
    -H 'Content-Type: application/json' -d '{"messages":[{"role":"user",
    "content":"hi"}],"max_tokens":8,"temperature":0}' |
    grep -q '"finish_reason"'; then
	echo "rs-serve answered a chat request on the GPU"
else
	echo "rs-serve failed:"
	cat /tmp/rs-serve-gpu.err
	rc=1
fi
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null

echo "== rs-bench on a synthetic Qwen3.8-27B Q4_K_M"
$bin/rs-bench --synth 27b -o "$synth" || rc=1
timeout "${BENCH_TIMEOUT:-380}" $bin/rs-bench -m "$synth" --backend cuda || rc=1
rm -f "$synth"
exit $rc
