#!/bin/bash
# cuda129.sh - a CUDA 12.9 tree for Volta (sm_70 + compute_70 PTX) builds,
# from PyPI wheels only, since CUDA 13's nvcc no longer targets sm_70:
#
#   bash scripts/cuda129.sh            # prints the nvcc to use, e.g.
#   make CUDA=1 CUDA_ARCHS=70 NVCC=$(bash scripts/cuda129.sh)
#
# PyPI has no CUDA 12.x nvcc driver: nvidia-cuda-nvcc-cu12 (every 12.x
# release) holds only ptxas, libnvvm and libdevice, without nvcc, cicc,
# cudafe++ or fatbinary.  The tree therefore pairs clang (>= 17, from
# Debian: clang-19) as the CUDA C++ compiler with CUDA 12.9's headers,
# ptxas, libdevice and static runtime, and a fatbinary built on libnvfatbin
# 12.9; bin/nvcc is scripts/cuda129/nvcc, which takes the nvcc options
# the Makefile passes.
#
# Layout under DEST (default build/cuda129):
#   pip/                 the wheels, installed with pip --target
#   root/{bin,include,lib64,nvvm}  a CUDA_HOME made of links into pip/
#
# Environment: DEST, PIP (default: python3 -m pip).  Idempotent; prints the
# absolute path of root/bin/nvcc on stdout, everything else on stderr.
set -eu
cd "$(dirname "$0")/.."
src=$PWD/scripts/cuda129
dest=${DEST:-build/cuda129}
pip=${PIP:-python3 -m pip}
wheels="nvidia-cuda-nvcc-cu12==12.9.86 nvidia-cuda-runtime-cu12==12.9.79
nvidia-cuda-cccl-cu12==12.9.27 nvidia-nvfatbin-cu12==12.9.82"

# clang 14 (Debian's default) fails on CUDA 12 headers; 19 is tested
have_clang=
for v in 21 20 19 18 17; do
	command -v clang++-$v >/dev/null && have_clang=$v && break
done
if [ -z "$have_clang" ]; then
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	export DEBIAN_FRONTEND=noninteractive
	{ $SUDO apt-get update -qq &&
	    $SUDO apt-get install -y -qq --no-install-recommends clang-19; } >&2
fi

mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
if [ ! -f "$dest/pip/.done" ]; then
	# shellcheck disable=SC2086
	$pip install -q --no-deps --disable-pip-version-check --upgrade \
	    --target "$dest/pip" $wheels >&2
	touch "$dest/pip/.done"
fi

nv=$dest/pip/nvidia
root=$dest/root
rm -rf "$root"
mkdir -p "$root/bin" "$root/include" "$root/lib64" "$root/nvvm"
for d in cuda_runtime cuda_cccl cuda_nvcc nvfatbin; do
	for f in "$nv/$d/include/"*; do
		case ${f##*/} in __init__.py|__pycache__) continue ;; esac
		ln -s "$f" "$root/include/"
	done
done
for f in "$nv/cuda_runtime/lib/"* "$nv/nvfatbin/lib/"*; do
	case ${f##*/} in __init__.py|__pycache__) continue ;; esac
	ln -s "$f" "$root/lib64/"
done
ln -s libcudart.so.12 "$root/lib64/libcudart.so"
ln -s libnvfatbin.so.12 "$root/lib64/libnvfatbin.so"
ln -s "$nv/cuda_nvcc/bin/ptxas" "$root/bin/ptxas"
ln -s "$nv/cuda_nvcc/nvvm/libdevice" "$root/nvvm/libdevice"
ln -s "$nv/cuda_nvcc/nvvm/lib64" "$root/nvvm/lib64"
${CC:-cc} -std=c11 -O2 -Wall -Wextra -I"$root/include" \
    "$src/fatbinary.c" -L"$root/lib64" -lnvfatbin \
    -Wl,-rpath,"$root/lib64" -o "$root/bin/fatbinary"
ln -s "$src/nvcc" "$root/bin/nvcc"
"$root/bin/nvcc" --version >&2
echo "$root/bin/nvcc"
