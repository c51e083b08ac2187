#!/bin/bash
# gpu-spec.sh - speculative decoding on the GPU (issue #13): what the lead
# runs on the device machine, writing everything under $OUT.
#
#   make -j16 CUDA=1 all && OUT=/tmp/spec bash scripts/gpu-spec.sh
#
# Sections (GPU_SPEC, default "demo identity oracle"; each fits the
# device's 10-minute limit on its own):
#   demo      the trained demo model (fixtures/demo, its Q4_K_M file) on
#             --backend cuda: its three prompts, 200 greedy tokens with
#             each drafter through rs-generate; the tokens must equal
#             plain decoding's; the
#             timings (acceptance per position, draft time) go to
#             demo-<drafter>.jsonl, a summary to demo.txt
#   identity  the synthetic 27B (rs-bench --synth 27b, written to $SYNTH
#             when missing): rs-bench --spec with 512 generated tokens;
#             every drafter's output is checked against plain decoding by
#             rs-bench itself (exit 2 on a difference): identity.jsonl
#   oracle    the oracle table on the synthetic 27B, MTP drafting, k = 1..8,
#             alpha 0.5..1 (oracle.txt: the table with the cost model's
#             prediction; oracle.jsonl: the rows)
# Environment: RS_FIXTURES (default ../shared/fixtures), SYNTH (default
# /tmp/rs-s27b.gguf), OUT (default /tmp/rs-gpu-spec), GPU_SPEC.
# Exit 1 if a check fails.
set -u
fx=${RS_FIXTURES:-../shared/fixtures}
out=${OUT:-/tmp/rs-gpu-spec}
synth=${SYNTH:-/tmp/rs-s27b.gguf}
bin=build/bin
sections=${GPU_SPEC:-demo identity oracle}
rc=0
mkdir -p "$out"
want() {
	case " $sections " in *" $1 "*) return 0 ;; esac
	return 1
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader |
    tee "$out/gpu.txt"
git log -1 --format='%h %s' | tee -a "$out/gpu.txt"

if want demo; then
	echo "== demo: each drafter vs plain decoding, 200 greedy tokens"
	m=$fx/demo/model-q4_k_m.gguf
	python3 - "$fx/demo/reference.json" >"$out/demo-in.jsonl" <<'PY'
import json, sys
for p in json.load(open(sys.argv[1]))["prompts"]:
    print(json.dumps({"tokens": p["prompt_ids"], "max_tokens": 200,
                      "temperature": 0}))
PY
	for d in none ngram mtp mtp+ngram; do
		$bin/rs-generate -m "$m" --backend cuda --draft "$d" \
		    --draft-max 4 -q <"$out/demo-in.jsonl" \
		    >"$out/demo-$d.jsonl" || rc=1
	done
	python3 - "$out" <<'PY' | tee "$out/demo.txt" || rc=1
import json, sys
d = sys.argv[1]
rows = lambda k: [json.loads(l) for l in open(f"{d}/demo-{k}.jsonl")]
plain = rows("none")
bad = 0
for k in ["ngram", "mtp", "mtp+ngram"]:
    for i, (a, b) in enumerate(zip(plain, rows(k))):
        t = b["timings"]
        same = a["tokens"] == b["tokens"]
        bad += not same
        print(f"{k:10s} prompt {i}: {'same' if same else 'DIFFERENT'} "
              f"tokens; {t['draft_n_accepted']}/{t['draft_n']} drafts "
              f"kept in {t['draft_rounds']} passes, per position "
              f"{[round(x, 3) for x in t['draft_acceptance']]}, "
              f"{t['predicted_per_second']:.1f} tok/s (plain "
              f"{a['timings']['predicted_per_second']:.1f}), draft "
              f"{t['draft_ms']:.1f} ms, catch-up {t['draft_catchup_ms']:.1f} ms")
sys.exit(1 if bad else 0)
PY
fi

if want identity || want oracle; then
	if [ ! -s "$synth" ]; then
		echo "== writing $synth"
		$bin/rs-bench --synth 27b -o "$synth" -q || exit 1
	fi
fi

if want identity; then
	echo "== synthetic 27B: each drafter vs plain decoding, 512 tokens"
	$bin/rs-bench -m "$synth" --backend cuda --spec --spec-tokens 512 \
	    --oracle-k 1 --alpha 1 --json >"$out/identity.jsonl" || rc=1
	grep '"test":"spec"' "$out/identity.jsonl"
fi

if want oracle; then
	echo "== synthetic 27B: oracle table, mtp drafting"
	$bin/rs-bench -m "$synth" --backend cuda --spec --draft mtp \
	    --spec-tokens 128 --oracle-k 8 --alpha 0.5,0.6,0.7,0.8,0.9,1 \
	    -q | tee "$out/oracle.txt" || rc=1
fi
exit $rc
