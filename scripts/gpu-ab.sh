#!/bin/bash
# gpu-ab.sh - a kernel variant under measurement (RS_KERNELS: rs_kernels.h)
# against the default kernels on one GPU, in one run, so that the ratio
# is a same-run ratio (docs/perf-log.md): check_cuda's tests of the
# variants (its TCase "variants"), the playground's rows
# (build/dev/matvec_xq, when built: the engine's launcher with and
# without the variant, and the variant's kernels by shape), then on a
# synthetic Qwen3.8-27B file, alternately without and with the variant,
# REPS times each: `rs-bench --depth 16` (decode and passes of 1, 2, 4, 8
# and 16 tokens) and `rs-bench --spec --draft mtp` (its first line: the
# engine's pass costs of 1..9 tokens in one-token passes; its table: the
# speedups at acceptance 0.8, fixed and adaptive k).
#
#   make CUDA=1 all build/tests/check_cuda build/dev/matvec_xq &&
#       bash scripts/gpu-pack.sh
#   # there (after gpu-pack's unpacking line):
#   bash scripts/gpu-ab.sh roundup|cm [REPS]
#
# Environment: RS_FIXTURES (default ../shared/fixtures), SYNTH (where the
# 17 GB file goes, default /tmp/rs-s27b.gguf), OUT (a directory for the
# outputs, default /tmp/gpu-ab).  Exit 1 if a check fails.
set -u
variant=${1:?usage: gpu-ab.sh VARIANT [REPS]}
reps=${2:-2}
export RS_FIXTURES=${RS_FIXTURES:-../shared/fixtures}
synth=${SYNTH:-/tmp/rs-s27b.gguf}
out=${OUT:-/tmp/gpu-ab}
bin=build/bin
rc=0
mkdir -p "$out"

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
# (check_cuda's TCase of the variants: each variant's kernels and the
# engine's batch invariance with it)
CK_RUN_CASE=variants build/tests/check_cuda >"$out/check-variants.txt" 2>&1 ||
    rc=1
tail -1 "$out/check-variants.txt"
grep -q "Checks: 3," "$out/check-variants.txt" || rc=1
if [ -x build/dev/matvec_xq ]; then
	build/dev/matvec_xq >"$out/matvec_xq.jsonl" 2>&1 || rc=1
	grep '"cols"' "$out/matvec_xq.jsonl"
fi
[ -f "$synth" ] || $bin/rs-bench --synth 27b --out "$synth" -q || exit 1
for i in $(seq "$reps"); do
	for v in "" "$variant"; do
		f="$out/${v:-default}-$i"
		echo "== RS_KERNELS='$v' run $i"
		RS_KERNELS=$v timeout 100 $bin/rs-bench -m "$synth" \
		    --backend cuda --depth 16 >"$f-depth.txt" 2>&1 || rc=1
		grep -E "probe|decode|verify" "$f-depth.txt"
		RS_KERNELS=$v timeout 200 $bin/rs-bench -m "$synth" \
		    --backend cuda --spec --draft mtp --alpha 0.8 \
		    --spec-tokens 64 >"$f-spec.txt" 2>&1 || rc=1
		grep -E "pass of|^none|^mtp|^0\.8" "$f-spec.txt"
	done
done
exit $rc
