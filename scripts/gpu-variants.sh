#!/bin/bash
# gpu-variants.sh - same-run A/B of kernel variants on a GPU machine: main's
# rs-bench against builds of main plus one prepared commit each (the
# experiments docs/perf-log.md keeps as a commit and its revert), with
# their own NVCCFLAGS.
#
#   here:   make CUDA=1 all && bash scripts/gpu-pack.sh &&
#           bash scripts/gpu-variants.sh pack NAME=COMMIT[:FLAGS] ...
#   there:  bash scripts/gpu-variants.sh run [ROUNDS]
#
# pack: for each NAME, `git cherry-pick -n COMMIT` on a clean tree, a copy
# of build/ rebuilt where the commit changed a source or a header it
# includes (every kernel where FLAGS are given), with NVCCFLAGS="-O3
# -lineinfo FLAGS" (FLAGS: -D options, words separated by commas;
# CUDA_ARCHS from the environment, as build/ was made), its stripped
# rs-bench to .dev/var/NAME, the tree reset to HEAD; then
# .dev/var.tar.xz; with PG (a playground's name, e.g. attn_decode) also
# its build/dev/PG, for `pg` (the base's is gpu-pack.sh's, so build it
# in build/ first).
# run: extracts what pack and gpu-pack.sh made, writes the synthetic 27B
# (SYNTH, default /tmp/s27.gguf) unless it is there, and runs `rs-bench
# --backend cuda --depth DEPTHS --json` (DEPTHS from the environment,
# default 16; e.g. 4096,32768 for attention at depth) for base
# (build/bin) and each variant in turn, ROUNDS times (default 2), into
# $OUT/bench.txt (or stdout), then prints decode and verify 1/2/4/8/16
# in ms, a line a run (rows past depth 16 marked @DEPTH).
# pg: as run, the playground PG of base and each variant in turn, ROUNDS
# times, into $OUT/pg.txt (or stdout), then a line a run: each timed
# case's name and µs, each check's result.
set -u
cd "$(dirname "$0")/.." || exit 1

pack() {
	if [ $# -eq 0 ]; then
		echo "gpu-variants: pack: no NAME=COMMIT[:FLAGS]" >&2
		return 2
	fi
	for spec in "$@"; do
		case $spec in
		[A-Za-z0-9_-]*=?*) ;;
		*)	echo "gpu-variants: $spec: not NAME=COMMIT[:FLAGS]" >&2
			return 2 ;;
		esac
		case ${spec%%=*} in
		*[!A-Za-z0-9_-]*)
			echo "gpu-variants: ${spec%%=*}: a NAME is letters," \
			    "digits, _ and -" >&2
			return 2 ;;
		esac
	done
	# (each variant is undone by a hard reset: nothing else may be
	# pending)
	if ! git diff --quiet HEAD; then
		echo "gpu-variants: the tree has changes; commit them first" >&2
		return 1
	fi
	rm -rf .dev/var
	mkdir -p .dev/var
	for spec in "$@"; do
		local name=${spec%%=*} rest=${spec#*=}
		local commit=${rest%%:*} flags=""
		[ "$rest" != "$commit" ] && flags=${rest#*:}
		local b=/tmp/rs-var-$name
		git cherry-pick -n "$commit" || { git reset -q --hard HEAD;
		    return 1; }
		# (build/ less the sm_70 build and the CUDA 12.9 tools; the
		# copied dependency files name build/'s objects, so that
		# make would not see a changed header: they are renamed)
		rm -rf "$b" && mkdir -p "$b" && tar cf - -C build \
		    --exclude=./sm70 --exclude=./cuda129 . | tar xf - -C "$b" &&
		    rm -f "$b/librs.a" &&
		    find "$b/obj" -name '*.d' -exec sed -i \
		    "s#^build/#$b/#; s# build/# $b/#g" {} +
		# (make does not track flags: with FLAGS every kernel is
		# compiled again)
		[ -z "$flags" ] || rm -f "$b"/obj/kernels/*.o
		if ! NVCCFLAGS="-O3 -lineinfo ${flags//,/ }" make CUDA=1 \
		    ${CUDA_ARCHS:+CUDA_ARCHS="$CUDA_ARCHS"} BUILD="$b" \
		    "$b/bin/rs-bench" ${PG:+"$b/dev/$PG"} >"$b.log" 2>&1; then
			echo "gpu-variants: $name does not build ($b.log)" >&2
			git reset -q --hard HEAD
			return 1
		fi
		git reset -q --hard HEAD
		mkdir -p ".dev/var/$name"
		strip -o ".dev/var/$name/rs-bench" "$b/bin/rs-bench"
		[ -z "${PG:-}" ] || strip -o ".dev/var/$name/$PG" "$b/dev/$PG"
		echo "gpu-variants: $name = $commit ${flags//,/ }"
	done
	tar cf - -C .dev/var . | xz -6 -T2 >.dev/var.tar.xz
	rm -rf .dev/var
	du -sh .dev
}

# What pack and gpu-pack.sh made, extracted here; the shared libraries.
unpack() {
	python3 - <<'P' || return 1
import tarfile
tarfile.open(".dev/bin.tar.xz").extractall()
tarfile.open(".dev/var.tar.xz").extractall(".dev/var")
P
	chmod +x build/bin/* .dev/var/*/*
	[ ! -d build/dev ] || chmod +x build/dev/*
	export LD_LIBRARY_PATH=$PWD/.dev/lib
}

# ROUNDS times, base's BASE and each variant's FILE in turn (VARS from the
# environment: only the variants it names), each under "== NAME round R"
# and at most SECONDS, with ARGS.
in_turn() {
	local rounds=$1 base=$2 file=$3 seconds=$4
	shift 4
	for r in $(seq "$rounds"); do
		for v in base ${VARS:-$(ls .dev/var)}; do
			local b=.dev/var/$v/$file
			[ "$v" = base ] && b=$base
			echo "== $v round $r"
			timeout "$seconds" "$b" "$@"
		done
	done
}

run() {
	local rounds=${1:-2} synth=${SYNTH:-/tmp/s27.gguf}
	local out=${OUT:+$OUT/bench.txt}
	out=${out:-/dev/stdout}
	unpack || return 1
	[ -f "$synth" ] || build/bin/rs-bench --synth 27b --out "$synth" -q ||
	    return 1
	in_turn "$rounds" build/bin/rs-bench rs-bench 180 -m "$synth" \
	    --backend cuda --depth "${DEPTHS:-16}" --json >"$out" 2>&1
	[ "$out" = /dev/stdout ] || summary bench "$out"
}

pg() {
	local rounds=${1:-2} out=${OUT:+$OUT/pg.txt}
	out=${out:-/dev/stdout}
	if [ -z "${PG:-}" ]; then
		echo "gpu-variants: pg: no PG (a playground's name)" >&2
		return 2
	fi
	unpack || return 1
	in_turn "$rounds" "build/dev/$PG" "$PG" 300 >"$out" 2>&1
	[ "$out" = /dev/stdout ] || summary pg "$out"
}

# A line a run of FILE: "NAME round R: ...".  KIND bench: probe GB/s,
# decode and verify 1/2/4/8/16 ms; pg: each timed case's name and µs,
# each check's result and hash.
summary() {
	python3 - "$1" "$2" <<'P'
import json, sys
kind, name, row = sys.argv[1], None, []
keys = ("kernel", "probe", "pattern", "depth", "tokens", "in_flight_kb",
    "keys_a_block")
def flush():
    if name:
        print(name + ": " + (" " if kind == "bench" else " | ").join(row))
def bench(d):
    if d["test"] == "probe":
        row.append("probe %.0f" % d["gb_s"])
    elif d["test"] in ("decode", "verify"):
        at = "" if d["depth"] == 16 else "@%d" % d["depth"]
        row.append("%s%d%s %.3f" % (d["test"][0], d["tokens"], at, d["ms"]))
def pg(d):
    if "check" in d:
        row.append("%s %s" % (d.get("identical"), d.get("fnv1a", "")[:8]))
    elif "us" in d:
        row.append("/".join(str(d[k]) for k in keys if k in d) +
            " %.1f" % d["us"])
for line in open(sys.argv[2]):
    if line.startswith("=="):
        flush()
        name, row = line.strip("= \n"), []
    elif line.startswith("{"):
        (bench if kind == "bench" else pg)(json.loads(line))
flush()
P
}

case ${1:-} in
pack)	shift; pack "$@" ;;
run)	shift; run "$@" ;;
pg)	shift; pg "$@" ;;
*)	echo "usage: gpu-variants.sh pack NAME=COMMIT[:FLAGS] ... |" \
	    "run [ROUNDS] | pg [ROUNDS]" >&2
	exit 2 ;;
esac
