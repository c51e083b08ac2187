#!/bin/sh
# seed.sh NAME DIR - write a seed corpus for fuzz target NAME into DIR.
set -eu
name=$1 dir=$2
fx=${RS_FIXTURES:-../shared/fixtures}
mkdir -p "$dir"
case $name in
fuzz_gguf)
	# header slices of the fixture models (the fuzzer mutates lengths,
	# counts and offsets from there) and a small complete file
	for f in "$fx"/tiny/model-*.gguf "$fx"/tokenizer/qwen3-vocab.gguf; do
		b=$(basename "$f" .gguf)
		head -c 65536 "$f" >"$dir/seed-$b"
		head -c 4096 "$f" >"$dir/seed-$b-4k"
	done
	;;
*)
	printf '' >"$dir/seed-empty"
	;;
esac
# checked-in seeds of the target, if any
if [ -d "fuzz/seeds/$name" ]; then
	cp fuzz/seeds/"$name"/* "$dir"/
fi
