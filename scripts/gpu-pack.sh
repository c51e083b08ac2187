#!/bin/bash
# gpu-pack.sh - what a GPU machine needs to run scripts/gpu-check.sh, in
# .dev/ (git-ignored), small enough to travel with the working tree
# (64 MiB): the stripped commands, check_cuda and kernel playgrounds of
# build/ (and of build/sm70 and build/sm80, the `make volta` and `make
# ampere` builds, when they are there) as one xz tarball,
# the fixtures the GPU tests read (tiny/*.gguf, tiny/reference.json and
# ref-logits.npy, demo/model-q4_k_m.gguf, reference.json and the eval
# windows), and
# the shared libraries of our dependencies that a CUDA image lacks
# (jansson, PCRE2, utf8proc, Check's subunit), for LD_LIBRARY_PATH.
#
#   make CUDA=1 CUDA_ARCHS=90 CUDA_PTX= all build/tests/check_cuda &&
#   make volta && make ampere && make BUILD=build/sm75 CUDA=1 \
#   CUDA_ARCHS=75 CUDA_PTX= build/sm75/bin/rs-generate &&
#   bash scripts/gpu-pack.sh
#   # there:
#   python3 -c 'import tarfile; tarfile.open(".dev/bin.tar.xz").extractall()'
#   LD_LIBRARY_PATH=$PWD/.dev/lib RS_FIXTURES=.dev/fx bash scripts/gpu-check.sh
#
# (CUDA_ARCHS=90 CUDA_PTX=: the H100 / H200 run sm_90 code, and the
# default's sm_75 and sm_80 SASS and PTX would grow the tarball past what
# travels beside the fixtures.  build/sm75's rs-generate, sm_75 alone, is
# gpu-check.sh's case of a build that has no code for the GPU.)
#
# Environment: RS_FIXTURES (default ../shared/fixtures).
set -eu
cd "$(dirname "$0")/.."
fx=${RS_FIXTURES:-../shared/fixtures}
# (a worktree's .git is a file: ask git where its exclude file is)
ex=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$ex")"
grep -qx '/.dev/' "$ex" 2>/dev/null || echo '/.dev/' >>"$ex"

rm -rf .dev
mkdir -p .dev/fx/tiny .dev/stage .dev/lib
for l in libjansson.so.4 libpcre2-8.so.0 libutf8proc.so.2 libsubunit.so.0; do
	cp -L "$(ldconfig -p | awk -v l="$l" '$1 == l { print $NF; exit }')" \
	    .dev/lib/
done
cp "$fx"/tiny/model-*.gguf "$fx"/tiny/reference.json "$fx"/tiny/ref-logits.npy \
    .dev/fx/tiny/
mkdir -p .dev/fx/demo
cp "$fx"/demo/model-q4_k_m.gguf "$fx"/demo/reference.json \
    "$fx"/demo/eval-tokens.npy "$fx"/demo/eval-argmax.npy .dev/fx/demo/
for b in build build/sm70 build/sm80 build/sm75; do
	# (build/sm75: rs-generate alone, gpu-check.sh's refusal case)
	[ -x "$b/tests/check_cuda" ] || [ -x "$b/bin/rs-generate" ] ||
	    continue
	mkdir -p ".dev/stage/$b/bin" ".dev/stage/$b/tests"
	for f in "$b"/bin/*; do
		[ -x "$f" ] || continue		# (make ampere: no commands)
		strip -o ".dev/stage/$b/bin/${f##*/}" "$f"
	done
	[ ! -x "$b/tests/check_cuda" ] ||
	    strip -o ".dev/stage/$b/tests/check_cuda" "$b/tests/check_cuda"
	# the kernel playgrounds built there
	for f in "$b"/dev/*; do
		[ -x "$f" ] || continue
		mkdir -p ".dev/stage/$b/dev"
		strip -o ".dev/stage/$b/dev/${f##*/}" "$f"
	done
done
tar cf - -C .dev/stage . | xz -9 -T2 >.dev/bin.tar.xz
rm -rf .dev/stage
du -sh .dev
