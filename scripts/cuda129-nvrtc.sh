#!/bin/bash
# cuda129-nvrtc.sh - compile the kernels' device code with CUDA 12.9's own
# front end, NVRTC (nvidia-cuda-nvrtc-cu12), to compute_70 PTX: a check
# that NVIDIA's compiler, not only clang (scripts/cuda129.sh), takes every
# kernel for Volta.  PyPI has no CUDA 12.x nvcc, and NVRTC is the only
# 12.9 CUDA C++ front end it has.
#
#   bash scripts/cuda129-nvrtc.sh [FILE.cu ...]    (default: kernels/*.cu
#                                                   that define kernels)
#
# NVRTC compiles device code only: it rejects host functions ("host
# functions are not allowed in JIT mode"), has no host runtime API
# (cudaMemset, events, graphs) and finds no system headers.  So this runs
# it with -default-device (the launchers become device functions) and
# -rdc=true (their <<<>>> launches then go through the device runtime),
# which makes every launcher instantiate its kernel templates as nvcc's
# host pass would, and with small stand-ins for the C headers the sources
# include.  The PTX of the launchers is meaningless and is not used: only
# whether NVRTC accepts the kernels counts.  cuda_forward.cu (no kernels, host
# runtime calls), gemm.cu (cuBLAS calls) and probe.cu (cudaEvent* timing)
# are host code and are left out.
#
# PTX goes to build/cuda129/nvrtc-ptx/.  Exit 1 if a file fails.
set -u
cd "$(dirname "$0")/.." || exit 1
nvcc=$(bash scripts/cuda129.sh) || exit 1
root=${nvcc%/bin/nvcc}
dest=$(dirname "$root")
nv=$dest/nvrtc/nvidia/cuda_nvrtc
if [ ! -f "$nv/lib/libnvrtc.so.12" ]; then
	${PIP:-python3 -m pip} install -q --no-deps \
	    --disable-pip-version-check --target "$dest/nvrtc" \
	    nvidia-cuda-nvrtc-cu12==12.9.86 >&2 || exit 1
fi
${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$nv/include" \
    scripts/cuda129/nvrtc-ptx.c -L"$nv/lib" -l:libnvrtc.so.12 \
    -Wl,-rpath,"$nv/lib" -o "$dest/nvrtc/nvrtc-ptx" || exit 1

# The C headers the kernels reach, for NVRTC (which predefines size_t and
# va_list): LP64 integer types, so that kernel names mangle as on the host.
shim=$dest/nvrtc-shim
mkdir -p "$shim" "$dest/nvrtc-ptx"
for h in stdarg stddef stdio stdlib string; do
	echo "#pragma once" >"$shim/$h.h"
done
cat >"$shim/stdint.h" <<'EOF'
#pragma once
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;
#define INT32_MAX 0x7fffffff
#define INT64_MAX 0x7fffffffffffffffL
#define UINT32_MAX 0xffffffffu
#define UINT64_MAX 0xffffffffffffffffUL
#define SIZE_MAX UINT64_MAX
EOF
cat >"$shim/math.h" <<'EOF'
#pragma once
#define INFINITY (__int_as_float(0x7f800000))
#define NAN (__int_as_float(0x7fc00000))
EOF

if [ $# -eq 0 ]; then
	for f in kernels/*.cu; do
		case $f in */cuda_forward.cu|*/gemm.cu|*/probe.cu) ;; *) set -- "$@" "$f" ;; esac
	done
fi
# every lib/ folder, as the Makefile's LIB_INC: sources include "rs_<m>.h"
libinc=
for d in lib/*/; do
	libinc="$libinc -I${d%/}"
done
rc=0
for f in "$@"; do
	out=$dest/nvrtc-ptx/$(basename "$f" .cu).ptx
	if "$dest/nvrtc/nvrtc-ptx" "$f" "$out" --gpu-architecture=compute_70 \
	    -std=c++17 -DRS_CUDA=1 $libinc -Ikernels -I"$shim" \
	    -I"$root/include" -default-device -rdc=true \
	    >/dev/null 2>"$out.log"; then
		n=$(grep -oE '\.entry [A-Za-z0-9_]+' "$out" | sort -u | wc -l)
		echo "ok   $f: $n kernels," \
		    "$(wc -c <"$out") bytes of PTX"
	else
		echo "FAIL $f (log: $out.log)"
		rc=1
	fi
done
exit $rc
