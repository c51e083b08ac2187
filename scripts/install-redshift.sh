#!/bin/bash
# install-redshift.sh - one command from a fresh NVIDIA server (Ubuntu 24.04
# or 22.04) to a running rs-serve that VS Code Copilot can use (issue #16):
#
#   sudo ./scripts/install-redshift.sh --host 0.0.0.0 --public-host IP
#
# Steps, each printed as it runs ("--dry-run" prints them and does nothing):
#   1. check the OS, the GPU and its driver; on bare metal install the R580
#      driver and ask for a reboot (exit 3), after which the same command
#      goes on; in a container the host's driver is required
#   2. install the build dependencies (scripts/deps.sh) and the CUDA
#      Toolkit from NVIDIA's apt repository: 12.9 for sm_70 (CUDA 13's nvcc
#      no longer targets Volta), 13.0 for newer cards
#   3. fetch the pinned model with resume, unless verified weights already
#      exist, and check its size and SHA-256
#   4. build a release in /opt/redshift/releases/<id>/, run `make test`
#      there and validate the model with its `rs-inspect --check`
#   5. create the redshift user, the hardened redshift.service (and the
#      redshift-tls.service stunnel front for TLS), switch
#      /opt/redshift/current atomically, check /health and one completion;
#      on failure put back the previous release and units (exit 1)
#   6. write /opt/redshift/copilot-model.json, keep the previous release
#      and remove older ones
#
# Everything it creates is listed in /opt/redshift/install.manifest, which
# scripts/uninstall-redshift.sh reads.  Exit status: 0 installed, 1 the new
# release failed its checks and the previous state was restored, 2 usage
# error or a step failed (nothing activated), 3 reboot needed.
#
# Test hooks (tests/install/): RS_INSTALL_ROOT is prepended to every path
# the script reads or writes (default: the real root) and lifts the
# requirement to run as root; RS_INSTALL_SRC is the source tree (default:
# this script's repository); RS_INSTALL_HEALTH_TIMEOUT bounds the wait for
# /health in seconds (default 900: loading 19 GB of weights takes a while).
# Tools are found on PATH, so tests put shims first.
set -euo pipefail

readonly PROG=install-redshift.sh
readonly ROOT=${RS_INSTALL_ROOT:-}
readonly SRC=${RS_INSTALL_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
readonly HEALTH_TIMEOUT=${RS_INSTALL_HEALTH_TIMEOUT:-900}

# the pinned default model (issue #16)
readonly MODEL_REPO=ggml-org/Qwen3.8-27B-GGUF
readonly MODEL_FILE=Qwen3.8-27B-Q4_K_M.gguf
readonly MODEL_REV=97c30c65c8d9a3e73f9fdfb50f1d1a669e9a2827
readonly MODEL_SIZE=18973870432
readonly MODEL_SHA=31629f53165ab6a7dad8c9847dcfd1fdf55829dac1e6e748f4a68581b0033d34
readonly MODEL_DIR=/opt/models/qwen3.8-27b
readonly ALIAS=qwen3.8-27b

readonly BASE=/opt/redshift
readonly ETC=/etc/redshift
readonly UNITDIR=/etc/systemd/system
readonly SVC_USER=redshift
readonly MANIFEST=$BASE/install.manifest
# first line of every file we own; what lacks it is someone else's
readonly MARK="# Managed by install-redshift.sh (Redshift); uninstall-redshift.sh removes it."
# R580 is the last driver branch for Volta, and Volta needs its closed
# kernel modules (the open ones start at Turing)
readonly DRIVER_PKG=nvidia-driver-580-server
readonly DRIVER_MIN=580

host=127.0.0.1 port=8081 public_host='' internal_port=18081 ctx=131072 ctx_given=0
model='' model_url='' model_sha='' arch='' offline=0 dry=0
tls_cert='' tls_key='' tls_self=0 api_key_file=''
# set by the steps
os_repo='' gpu_arch='' cuda_ver='' nvcc='' release='' prev_release=''
model_from='' model_size='' model_sha256='' fixtures=''

# ---- output and actions ----

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { say "$2"; exit "$1"; }
usage_error() { say "$1"; echo "Try '$PROG --help'" >&2; exit 2; }

# Run a command that changes the system: print it, and run it unless this
# is a dry run.
act() {
	printf '+ %s\n' "$*" >&2
	[ "$dry" = 1 ] || "$@"
}

# Write stdin to $ROOT$1 with mode $2 (and owner $3) through a temporary
# file and rename, so no reader sees it half written or with a wider mode.
put_file() {
	local dst=$ROOT$1 tmp
	printf '+ write %s (mode %s%s)\n' "$1" "$2" "${3:+, owner $3}" >&2
	if [ "$dry" = 1 ]; then
		cat >/dev/null
		return
	fi
	mkdir -p "$(dirname "$dst")"
	tmp=$(umask 077 && mktemp "$dst.XXXXXX")
	cat >"$tmp"
	chmod "$2" "$tmp"
	[ -z "${3:-}" ] || chown "$3" "$tmp"
	mv -f "$tmp" "$dst"
}

# Note what this run created in the manifest, for uninstall-redshift.sh;
# notes taken before /opt/redshift exists wait in pending.
pending=()
record() {
	[ "$dry" = 1 ] && return
	pending+=("$*")
	[ -f "$ROOT$BASE/.install-redshift" ] || return 0
	local l
	for l in "${pending[@]}"; do
		grep -qxF "$l" "$ROOT$MANIFEST" 2>/dev/null || echo "$l" >>"$ROOT$MANIFEST"
	done
	pending=()
}

usage() {
	cat <<EOF
usage: $PROG [--host ADDR] [--port N] [--public-host NAME] [--model PATH |
       --model-url URL --model-sha256 SHA] [--arch SM] [--ctx N] [--offline]
       [--tls-cert FILE --tls-key FILE | --tls-self-signed]
       [--internal-port N] [--api-key-file FILE] [--dry-run]
Install Redshift as the redshift.service OpenAI-compatible endpoint.
      --host ADDR           address to listen on (default 127.0.0.1)
      --port N              port to listen on (default 8081)
      --public-host NAME    host name or IP clients use, for the Copilot
                            entry and the self-signed certificate (default:
                            ADDR, or 127.0.0.1 for 0.0.0.0); an IPv6
                            address with or without its brackets
      --model PATH          serve this GGUF file; a missing PATH is an error
      --model-url URL       download the model from URL (with --model-sha256)
      --model-sha256 SHA    the SHA-256 the downloaded model must have
      --arch SM             build for compute capability SM (70, 80, 90, ...)
                            instead of the one nvidia-smi reports
      --ctx N               context size the server offers (default 131072,
                            or the model's context where that is smaller)
      --offline             download nothing: CUDA, compiler and weights
                            must already be present
      --tls-cert FILE       serve HTTPS with this PEM certificate chain ...
      --tls-key FILE        ... and key, through a stunnel front
      --tls-self-signed     the same with a generated self-signed certificate
      --internal-port N     rs-serve's loopback port behind TLS (default 18081)
      --api-key-file FILE   require the key in FILE (first line: letters,
                            digits, . _ ~ + / = : -) from clients; a rerun
                            without it turns the key off (and says so)
  -n, --dry-run             print every action, change nothing, no network
  -h, --help                print this help
Default model: $MODEL_REPO $MODEL_FILE at revision $MODEL_REV.
Exit status: 0 installed, 1 activation failed and the previous release was
restored, 2 error (nothing activated), 3 reboot needed (then run it again).
EOF
}

# ---- options ----

need_arg() { [ $# -ge 2 ] || usage_error "$1: needs an argument"; }

number() {
	if ! [[ $2 =~ ^[0-9]+$ ]] || [ "$2" -lt "$3" ] || [ "$2" -gt "$4" ]; then
		usage_error "$1: expected an integer in [$3, $4], got '$2'"
	fi
}

parse_args() {
	while [ $# -gt 0 ]; do
		case $1 in
		--host) need_arg "$@"; host=$2; shift ;;
		--port) need_arg "$@"; number "$1" "$2" 1 65535; port=$2; shift ;;
		--public-host) need_arg "$@"; public_host=$2; shift ;;
		--model) need_arg "$@"; model=$2; shift ;;
		--model-url) need_arg "$@"; model_url=$2; shift ;;
		--model-sha256) need_arg "$@"; model_sha=$2; shift ;;
		--arch) need_arg "$@"; number "$1" "$2" 50 200; arch=$2; shift ;;
		--ctx) need_arg "$@"; number "$1" "$2" 256 1048576; ctx=$2; ctx_given=1; shift ;;
		--internal-port) need_arg "$@"; number "$1" "$2" 1 65535
			internal_port=$2; shift ;;
		--offline) offline=1 ;;
		--tls-cert) need_arg "$@"; tls_cert=$2; shift ;;
		--tls-key) need_arg "$@"; tls_key=$2; shift ;;
		--tls-self-signed) tls_self=1 ;;
		--api-key-file) need_arg "$@"; api_key_file=$2; shift ;;
		-n|--dry-run) dry=1 ;;
		-h|--help) usage; exit 0 ;;
		*) usage_error "unknown option '$1'" ;;
		esac
		shift
	done
	check_args
}

check_args() {
	if [ -n "$model" ] && [ -n "$model_url" ]; then
		usage_error "--model and --model-url exclude each other"
	fi
	if [ -n "$model_url" ] && ! [[ $model_sha =~ ^[0-9a-f]{64}$ ]]; then
		usage_error "--model-url needs --model-sha256 with 64 hex digits"
	fi
	if [ -n "$tls_cert$tls_key" ] &&
	    { [ -z "$tls_cert" ] || [ -z "$tls_key" ] || [ "$tls_self" = 1 ]; }; then
		usage_error "--tls-cert and --tls-key go together, without --tls-self-signed"
	fi
	if tls_on && [ "$internal_port" = "$port" ]; then
		usage_error "--internal-port must differ from --port"
	fi
	local f key
	for f in "$tls_cert" "$tls_key" "$api_key_file"; do
		[ -z "$f" ] || [ -r "$f" ] || usage_error "$f: cannot read"
	done
	# before anything changes; systemd's EnvironmentFile would strip
	# blanks and read backslashes and quotes as escapes, so the key the
	# service got would not be the one in the file
	if [ -n "$api_key_file" ]; then
		key=$(head -n1 "$api_key_file" | tr -d '\r')
		[ -n "$key" ] || usage_error "$api_key_file: the first line is empty"
		[[ $key =~ ^[A-Za-z0-9._~+/=:-]+$ ]] ||
		    usage_error "$api_key_file: the key may hold only letters, digits and . _ ~ + / = : -"
	fi
	# an IPv6 literal is kept bare ([2001:db8::7] or 2001:db8::7) and
	# bracketed where a URL or a Host header holds it (in_url)
	public_host=${public_host#[}
	public_host=${public_host%]}
	if [ -z "$public_host" ]; then
		public_host=$host
		[ "$host" != 0.0.0.0 ] && [ "$host" != :: ] || public_host=127.0.0.1
	fi
}

# HOST as a URL or a Host header holds it: an IPv6 literal in brackets
in_url() { if [[ $1 == *:* ]]; then echo "[$1]"; else echo "$1"; fi; }

tls_on() { [ -n "$tls_cert" ] || [ "$tls_self" = 1 ]; }

# ---- 1. system, GPU, driver ----

check_system() {
	[ -n "$ROOT" ] || [ "$(id -u)" = 0 ] || [ "$dry" = 1 ] ||
	    die 2 "run as root (sudo $PROG ...)"
	local id='' ver=''
	# shellcheck disable=SC1091
	[ -r "$ROOT/etc/os-release" ] && id=$(. "$ROOT/etc/os-release" && echo "$ID") &&
	    ver=$(. "$ROOT/etc/os-release" && echo "$VERSION_ID")
	case $id-$ver in
	ubuntu-24.04|ubuntu-22.04) os_repo=ubuntu${ver/./} ;;
	*) die 2 "unsupported system '$id $ver': Ubuntu 24.04 or 22.04 is needed (NVIDIA's apt repository, the R580 driver)" ;;
	esac
	command -v systemctl >/dev/null || die 2 "systemctl not found: the service needs systemd"
}

in_container() {
	[ -e "$ROOT/.dockerenv" ] || [ -e "$ROOT/run/.containerenv" ] ||
	    { command -v systemd-detect-virt >/dev/null &&
	      systemd-detect-virt --container >/dev/null 2>&1; }
}

# Sets gpu_arch (e.g. 70) from nvidia-smi or --arch; installs the driver
# on bare metal when there is none that works.
check_gpu() {
	local q drv cap
	if q=$(nvidia-smi --query-gpu=compute_cap,driver_version,name \
	    --format=csv,noheader 2>/dev/null) && [ -n "$q" ]; then
		q=${q%%$'\n'*}
		cap=${q%%,*}
		drv=$(echo "$q" | cut -d, -f2 | tr -d ' ')
		say "GPU: $(echo "$q" | cut -d, -f3- | sed 's/^ *//'), compute capability $cap, driver $drv"
		if [ "${drv%%.*}" -ge "$DRIVER_MIN" ]; then
			gpu_arch=${arch:-${cap/./}}
			return
		fi
		say "driver $drv is older than R$DRIVER_MIN"
	elif [ -n "$arch" ] && [ "$dry" = 1 ]; then
		gpu_arch=$arch
		return
	fi
	install_driver
}

install_driver() {
	in_container && die 2 "no working NVIDIA driver R$DRIVER_MIN+ visible in this container: install it on the host and start the container with the GPU (--gpus all)"
	[ "$offline" = 0 ] || die 2 "--offline: no working NVIDIA driver R$DRIVER_MIN+ and downloads are off"
	act apt-get update -qq
	act env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$DRIVER_PKG"
	record package "$DRIVER_PKG"
	[ "$dry" = 1 ] && { gpu_arch=${arch:-70}; return; }
	say "installed $DRIVER_PKG: reboot, then run the same command again"
	exit 3
}

# ---- 2. build dependencies, CUDA ----

# CUDA 13 dropped sm_70, so Volta builds with 12.9 (style.md §2.6)
pick_cuda() {
	if [ "$gpu_arch" -lt 75 ]; then cuda_ver=12.9; else cuda_ver=13.0; fi
	nvcc=/usr/local/cuda-$cuda_ver/bin/nvcc
}

check_offline() {
	[ "$offline" = 1 ] || return 0
	local t
	for t in cc make; do
		command -v "$t" >/dev/null || die 2 "--offline: '$t' not found"
	done
	[ -x "$ROOT$nvcc" ] || die 2 "--offline: CUDA $cuda_ver not found ($nvcc)"
	! tls_on || command -v stunnel4 >/dev/null ||
	    die 2 "--offline: stunnel4 not found for the TLS front"
}

install_deps() {
	[ "$offline" = 1 ] && return
	act sh "$SRC/scripts/deps.sh"
	[ -x "$ROOT$nvcc" ] || install_cuda
	tls_on || return 0
	command -v stunnel4 >/dev/null && return
	act env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stunnel4
	record package stunnel4
}

install_cuda() {
	local pkg=cuda-toolkit-${cuda_ver/./-} m keyring
	m=$(uname -m)
	[ "$m" = aarch64 ] && m=sbsa
	keyring=https://developer.download.nvidia.com/compute/cuda/repos/$os_repo/$m/cuda-keyring_1.1-1_all.deb
	if ! dpkg-query -W -f='${Status}' cuda-keyring 2>/dev/null | grep -q 'ok installed'; then
		# a directory of our own: a fixed name in the shared /tmp is one
		# another user could plant before root installs it
		local kd
		kd=$(mktemp -d "$ROOT/tmp/cuda-keyring.XXXXXX")
		act curl -fsSL -o "$kd/cuda-keyring.deb" "$keyring"
		act dpkg -i "$kd/cuda-keyring.deb"
		rm -rf "$kd"
		record package cuda-keyring
	fi
	act apt-get update -qq
	act env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg"
	record package "$pkg"
}

# ---- 3. model ----

# A model is verified when its size and SHA-256 match; the result is kept
# beside it (size, mtime, sha) so a rerun does not hash 19 GB again.
# $1 is a real path (with $ROOT).
verified() {
	local f=$1 size=$2 sha=$3 stamp
	[ -f "$f" ] || return 1
	[ -z "$size" ] || [ "$(stat -c %s "$f")" = "$size" ] || return 1
	stamp="$(stat -c '%s %Y' "$f") $sha"
	[ "$(cat "$f.verified" 2>/dev/null)" = "$stamp" ] && return 0
	say "checking the SHA-256 of ${f#"$ROOT"}"
	[ "$(sha256sum <"$f" | cut -d' ' -f1)" = "$sha" ] || return 1
	[ "$dry" = 1 ] || echo "$stamp" >"$f.verified"
}

# the Hugging Face cache of the user who ran sudo (HOME is root's by then)
hf_cache() {
	local home=$ROOT/root
	[ -z "${SUDO_USER:-}" ] || home=$ROOT$(getent passwd "$SUDO_USER" | cut -d: -f6)
	echo "${HF_HUB_CACHE:-${HF_HOME:-$home/.cache/huggingface}/hub}/models--${MODEL_REPO/\//--}/snapshots/$MODEL_REV/$MODEL_FILE"
}

# Decide where the weights come from before anything is changed: sets
# model (the path the service reads) and model_from (here, cache or the
# URL to download).  An explicit --model is never replaced by a download.
locate_model() {
	if [ -n "$model" ]; then
		[ -f "$ROOT$model" ] || die 2 "--model $model: no such file (nothing downloaded)"
		case $model in
		/*) ;;
		*) die 2 "--model $model: give an absolute path (the service reads it)" ;;
		esac
		case $model in
		/home/*|/root/*|/run/user/*)
			die 2 "--model $model: the service cannot see home directories (ProtectHome): move it to $MODEL_DIR/" ;;
		esac
		model_from=here
		return
	fi
	if [ -n "$model_url" ]; then
		model_from=$model_url model_size='' model_sha256=$model_sha
		model=$MODEL_DIR/${model_url##*/}
	else
		model_from=https://huggingface.co/$MODEL_REPO/resolve/$MODEL_REV/$MODEL_FILE
		model_size=$MODEL_SIZE model_sha256=$MODEL_SHA
		model=$MODEL_DIR/$MODEL_FILE
	fi
	if verified "$ROOT$model" "$model_size" "$model_sha256"; then
		say "model: $model verified"
		model_from=here
	elif [ -z "$model_url" ] && verified "$(hf_cache)" "$model_size" "$model_sha256"; then
		model_from=cache
	elif [ "$offline" = 1 ]; then
		die 2 "--offline: no verified model at $model or in $(hf_cache), and downloads are off"
	fi
}

fetch_model() {
	case $model_from in
	here) return ;;
	cache)
		make_dirs "$MODEL_DIR"
		act cp --reflink=auto "$(hf_cache)" "$ROOT$model"
		record model "$model"
		[ "$dry" = 1 ] || verified "$ROOT$model" "$model_size" "$model_sha256" ||
		    die 2 "$model: the copy from the cache does not verify"
		;;
	*) download "$model_from" "$model" "$model_size" "$model_sha256" ;;
	esac
}

# mkdir -p that records each directory it creates, parents first
make_dirs() {
	local d='' rest=${1#/}/
	while [ -n "$rest" ]; do
		d=$d/${rest%%/*}
		rest=${rest#*/}
		[ -d "$ROOT$d" ] || record dir "$d"
	done
	act mkdir -p "$ROOT$1"
}

# curl resumes a partial .part file (-C -); the file is renamed into place
# only once its size and SHA-256 are right.
download() {
	local url=$1 dst=$2 size=$3 sha=$4
	make_dirs "$MODEL_DIR"
	act curl -fL --retry 5 --retry-all-errors -C - --progress-bar \
	    -o "$ROOT$dst.part" "$url"
	[ "$dry" = 1 ] && return
	if [ -n "$size" ] && [ "$(stat -c %s "$ROOT$dst.part")" != "$size" ]; then
		die 2 "$url: got $(stat -c %s "$ROOT$dst.part") bytes, expected $size (kept $dst.part; rerun to resume)"
	fi
	local got
	got=$(sha256sum <"$ROOT$dst.part" | cut -d' ' -f1)
	if [ "$got" != "$sha" ]; then
		rm -f "$ROOT$dst.part"
		die 2 "$url: SHA-256 $got, expected $sha: refused and deleted"
	fi
	mv -f "$ROOT$dst.part" "$ROOT$dst"
	echo "$(stat -c '%s %Y' "$ROOT$dst") $sha" >"$ROOT$dst.verified"
	record model "$dst"
}

# ---- 4. release ----

# Refuse a unit, drop-in or directory of the same name that we did not
# make: installing over it would break or hijack someone else's service.
check_ownership() {
	local u
	for u in redshift.service redshift-tls.service; do
		if [ -e "$ROOT$UNITDIR/$u" ] && ! head -n1 "$ROOT$UNITDIR/$u" | grep -qxF "$MARK"; then
			die 2 "$UNITDIR/$u exists and was not made by $PROG: remove or rename it first"
		fi
		if [ -d "$ROOT$UNITDIR/$u.d" ] || [ -d "$ROOT/run/systemd/system/$u.d" ]; then
			die 2 "a drop-in directory for $u exists ($UNITDIR/$u.d): it would change the hardened unit; remove it first"
		fi
	done
	for u in "$BASE" "$ETC"; do
		if [ -e "$ROOT$u" ] && ! [ -f "$ROOT$u/.install-redshift" ]; then
			die 2 "$u exists and was not made by $PROG: move it away first"
		fi
	done
}

new_release() {
	local id n=1
	id=$(date -u +%Y%m%d-%H%M%S)
	release=$BASE/releases/$id
	while [ -e "$ROOT$release" ]; do
		n=$((n + 1))
		release=$BASE/releases/$id-$n
	done
	act mkdir -p "$ROOT$release"
	# the tree without build outputs or git metadata
	act tar -C "$SRC" --exclude=./build --exclude=./build-asan --exclude=./.git \
	    -cf "$ROOT$release.tar" .
	act tar -C "$ROOT$release" -xf "$ROOT$release.tar"
	act rm -f "$ROOT$release.tar"
}

# `make test` in the release reads the test fixtures (style.md §2.11),
# which a server owner who cloned only the repository does not have: then
# the release is checked by rs-inspect --check and, after activation, the
# health check and a real completion on the model, which every install runs
find_fixtures() {
	local d=${RS_FIXTURES:-$SRC/../shared/fixtures}
	fixtures=$(cd "$d" 2>/dev/null && pwd) || {
		fixtures=
		say "test fixtures not found at $d (RS_FIXTURES): make test is" \
		    "skipped; the model check, /health and a real completion still run"
	}
}

build_release() {
	local j
	j=$(nproc)
	act make -C "$ROOT$release" -j"$j" CUDA=1 CUDA_ARCHS="$gpu_arch" \
	    NVCC="$ROOT$nvcc" all ||
	    die 2 "build failed in $release (make CUDA_ARCHS=$gpu_arch NVCC=$nvcc)"
	if [ -n "$fixtures" ]; then
		act make -C "$ROOT$release" CUDA=1 CUDA_ARCHS="$gpu_arch" \
		    NVCC="$ROOT$nvcc" RS_FIXTURES="$fixtures" test ||
		    die 2 "make test failed in $release"
	fi
	act "$ROOT$release/build/bin/rs-inspect" --check "$ROOT$model" ||
	    die 2 "$model: rs-inspect --check: not a valid model for this engine"
	# rs-serve does not start on a model whose chat template it does not
	# render (serving.md §2.1), and Copilot speaks chat: say so here, with
	# rs-serve's reason, not after the health check's wait
	act "$ROOT$release/build/bin/rs-serve" -m "$ROOT$model" \
	    --copilot-config http://127.0.0.1:8081/v1 >/dev/null ||
	    die 2 "$model: rs-serve cannot serve chat with this model (above)"
}

# Without --ctx: the default, or the model's own context where that is
# smaller (rs-serve only warns beyond it, and the Copilot entry would
# offer a window the model was not trained for).
fit_ctx() {
	[ "$ctx_given" = 0 ] && [ "$dry" = 0 ] || return 0
	local n
	n=$("$ROOT$release/build/bin/rs-inspect" -j "$ROOT$model" 2>/dev/null |
	    sed -n 's/.*"key":"qwen35\.context_length","type":"[a-z0-9]*","value":\([0-9]*\).*/\1/p') || true
	if [ -n "$n" ] && [ "$n" -lt "$ctx" ]; then
		say "the model's context is $n tokens: serving $n, not $ctx"
		ctx=$n
	fi
}

ensure_user() {
	if getent passwd "$SVC_USER" >/dev/null; then
		return
	fi
	act useradd --system --user-group --home-dir "$BASE" --no-create-home \
	    --shell /usr/sbin/nologin "$SVC_USER"
	record user "$SVC_USER"
}

# The marker file says the directory is ours (check_ownership)
prepare_dirs() {
	local d
	for d in "$ETC" "$BASE"; do
		[ -e "$ROOT$d" ] && continue
		act mkdir -p "$ROOT$d"
		[ "$dry" = 1 ] || : >"$ROOT$d/.install-redshift"
		record dir "$d"
	done
}

secure_dirs() {
	act chmod 0755 "$ROOT$BASE"
	act chown "root:$SVC_USER" "$ROOT$ETC"
	act chmod 0750 "$ROOT$ETC"
}

# ---- 5. configuration and units ----

write_api_key() {
	if [ -z "$api_key_file" ]; then
		# a rerun without the key turns authentication off: say so,
		# and leave no key file the unit no longer reads
		if [ -f "$ROOT$ETC/api-key.env" ]; then
			say "warning: no --api-key-file: the service now answers without a key (it had one); $ETC/api-key.env removed"
			act rm -f "$ROOT$ETC/api-key.env"
		fi
		return 0
	fi
	local key
	key=$(head -n1 "$api_key_file" | tr -d '\r')
	[ -n "$key" ] || die 2 "$api_key_file: the first line is empty"
	# rs-serve reads RS_API_KEY; systemd passes it from this file, so the
	# key is on no command line and in no unit
	printf 'RS_API_KEY=%s\n' "$key" | put_file "$ETC/api-key.env" 0600 "$SVC_USER:$SVC_USER"
	record file "$ETC/api-key.env"
}

write_tls() {
	tls_on || return 0
	local dir=$ETC/tls
	if [ "$tls_self" = 1 ]; then
		[ -f "$ROOT$dir/key.pem" ] && [ -f "$ROOT$dir/cert.pem" ] && return
		act mkdir -p "$ROOT$dir"
		act openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		    -nodes -days 3650 -subj "/CN=$public_host" \
		    -addext "subjectAltName=$(san "$public_host")" \
		    -keyout "$ROOT$dir/key.pem" -out "$ROOT$dir/cert.pem"
	else
		put_file "$dir/cert.pem" 0644 <"$tls_cert"
		put_file "$dir/key.pem" 0600 <"$tls_key"
	fi
	act chown "root:$SVC_USER" "$ROOT$dir/key.pem"
	act chmod 0640 "$ROOT$dir/key.pem"
	stunnel_conf | put_file "$ETC/stunnel.conf" 0644
	record file "$ETC/stunnel.conf"
	record dir "$dir"
}

san() {
	if [[ $1 =~ ^[0-9.]+$ || $1 == *:* ]]; then echo "IP:$1"; else echo "DNS:$1"; fi
}

# stunnel relays bytes as they come, so SSE streams are not buffered
stunnel_conf() {
	cat <<EOF
$MARK
foreground = yes
pid =
syslog = no

[redshift]
accept = $host:$port
connect = 127.0.0.1:$internal_port
cert = $ETC/tls/cert.pem
key = $ETC/tls/key.pem
sslVersionMin = TLSv1.2
TIMEOUTidle = 3600
EOF
}

# Hardening shared by both units; `systemd-analyze security` scores them
# (README: Install on a server).
hardening() {
	cat <<EOF
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateMounts=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
ProtectProc=invisible
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
RemoveIPC=yes
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @mount @swap @reboot @raw-io @module @obsolete @clock @debug @cpu-emulation
CapabilityBoundingSet=$1
AmbientCapabilities=$1
UMask=0077
EOF
}

serve_unit() {
	local listen=$host listen_port=$port env_line='' caps=''
	[ -z "$api_key_file" ] || env_line="EnvironmentFile=$ETC/api-key.env"
	tls_on && listen=127.0.0.1 listen_port=$internal_port
	[ "$listen_port" -ge 1024 ] || caps=CAP_NET_BIND_SERVICE
	cat <<EOF
$MARK
[Unit]
Description=Redshift OpenAI-compatible endpoint ($ALIAS)
Documentation=man:rs-serve(1)
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
User=$SVC_USER
Group=$SVC_USER
# CUDA loads nvidia-uvm and makes its device node through the setuid
# nvidia-modprobe, which NoNewPrivileges stops: do it first, privileged
# ("+"), and go on where the node exists already or the tool is missing ("-")
ExecStartPre=-+/usr/bin/nvidia-modprobe -u -c=0
# --public-host: rs-serve answers only Host names it knows (DNS rebinding)
ExecStart=$BASE/current/build/bin/rs-serve -m $model --host $listen --port $listen_port --ctx $ctx --alias $ALIAS --public-host $(in_url "$public_host") -q
$env_line
Restart=on-failure
RestartSec=5
# the only devices: the NVIDIA nodes (nvidia0.., nvidiactl, nvidia-uvm)
DevicePolicy=closed
DeviceAllow=char-nvidia-frontend rw
DeviceAllow=char-nvidia-uvm rw
DeviceAllow=char-nvidia-caps r
$(hardening "$caps")
# CUDA maps memory it later makes executable (JIT, the driver)
MemoryDenyWriteExecute=no

[Install]
WantedBy=multi-user.target
EOF
}

tls_unit() {
	cat <<EOF
$MARK
[Unit]
Description=Redshift TLS front (stunnel) for redshift.service
After=redshift.service
PartOf=redshift.service

[Service]
Type=simple
User=$SVC_USER
Group=$SVC_USER
ExecStart=/usr/bin/stunnel4 $ETC/stunnel.conf
Restart=on-failure
RestartSec=5
DevicePolicy=closed
PrivateDevices=yes
MemoryDenyWriteExecute=yes
ProcSubset=pid
$(hardening CAP_NET_BIND_SERVICE)

[Install]
WantedBy=multi-user.target
EOF
}

# ---- 6. switch, check, roll back ----

units() { echo redshift.service; tls_on && echo redshift-tls.service; }

# Keep what is active now (the current link, the units) to put it back.
# the files a release changes, restored together on rollback
state_files() {
	printf '%s\n' "$UNITDIR/redshift.service" "$UNITDIR/redshift-tls.service" \
	    "$ETC/api-key.env" "$ETC/stunnel.conf" "$ETC/tls/cert.pem" "$ETC/tls/key.pem"
}

# Copy them to /opt/redshift/prev/ (absent ones stay absent there).
save_state() {
	prev_release=$(readlink "$ROOT$BASE/current" 2>/dev/null || true)
	act rm -rf "$ROOT$BASE/prev"
	local f
	while IFS= read -r f; do
		[ -f "$ROOT$f" ] || continue
		act mkdir -p "$ROOT$BASE/prev$(dirname "$f")"
		act cp -p "$ROOT$f" "$ROOT$BASE/prev$f"
	done < <(state_files)
}

# ln + rename(2) replaces the link in one step: no moment without one.
# The link is relative (releases/ID), so /opt/redshift can be moved whole.
switch_to() {
	act ln -sfn "releases/${1##*/}" "$ROOT$BASE/current.new"
	act mv -T "$ROOT$BASE/current.new" "$ROOT$BASE/current"
}

activate() {
	serve_unit | put_file "$UNITDIR/redshift.service" 0644
	record file "$UNITDIR/redshift.service"
	if tls_on; then
		tls_unit | put_file "$UNITDIR/redshift-tls.service" 0644
		record file "$UNITDIR/redshift-tls.service"
	elif [ -f "$ROOT$UNITDIR/redshift-tls.service" ]; then
		act systemctl disable --now redshift-tls.service
		act rm -f "$ROOT$UNITDIR/redshift-tls.service"
	fi
	switch_to "$release"
	act systemctl daemon-reload
	# shellcheck disable=SC2046
	act systemctl enable $(units)
	# shellcheck disable=SC2046
	act systemctl restart $(units)
}

base_url() {
	local h=${host#[}
	h=${h%]}
	[ "$h" != 0.0.0.0 ] || h=127.0.0.1
	[ "$h" != :: ] || h=::1
	h=$(in_url "$h")
	if tls_on; then echo "https://$h:$port"; else echo "http://$h:$port"; fi
}

curl_api() {
	local hdr=()
	[ -z "$api_key_file" ] || hdr=(-H "@$ROOT$ETC/api-key.hdr")
	curl -fsS -k --max-time 120 "${hdr[@]}" "$@"
}

# /health turns 200 once the weights are loaded; then one real completion
check_service() {
	[ "$dry" = 1 ] && { printf '+ check %s/health and one completion\n' "$(base_url)" >&2; return; }
	local url t0=$SECONDS out
	url=$(base_url)
	if [ -n "$api_key_file" ]; then
		# a header file keeps the key off curl's command line
		(umask 077 && printf 'Authorization: Bearer %s\n' \
		    "$(head -n1 "$api_key_file" | tr -d '\r')" >"$ROOT$ETC/api-key.hdr")
	fi
	until curl_api "$url/health" >/dev/null 2>&1; do
		if [ $((SECONDS - t0)) -ge "$HEALTH_TIMEOUT" ]; then
			say "$url/health: no answer within ${HEALTH_TIMEOUT}s (journalctl -u redshift.service)"
			return 1
		fi
		sleep 2
	done
	out=$(curl_api "$url/v1/chat/completions" -H 'Content-Type: application/json' \
	    -d '{"messages":[{"role":"user","content":"Say OK."}],"max_tokens":8}') || out=''
	if [[ $out != *'"choices"'* ]]; then
		say "$url/v1/chat/completions: no completion: ${out:-no answer}"
		return 1
	fi
	rm -f "$ROOT$ETC/api-key.hdr"
	say "$url: healthy, completion ok"
}

rollback() {
	rm -f "$ROOT$ETC/api-key.hdr"
	say "release $release failed its checks: restoring the previous state"
	local f
	while IFS= read -r f; do
		if [ -f "$ROOT$BASE/prev$f" ]; then
			mv -f "$ROOT$BASE/prev$f" "$ROOT$f"
			continue
		fi
		case $f in
		*.service) systemctl disable --now "${f##*/}" 2>/dev/null || true ;;
		esac
		rm -f "$ROOT$f"
	done < <(state_files)
	rm -rf "$ROOT$BASE/prev"
	rmdir "$ROOT$ETC/tls" 2>/dev/null || true
	if [ -n "$prev_release" ]; then
		switch_to "$prev_release"
		systemctl daemon-reload
		systemctl restart redshift.service
		[ ! -f "$ROOT$UNITDIR/redshift-tls.service" ] ||
		    systemctl restart redshift-tls.service
		say "back on $BASE/$prev_release; the failed one stays in $release for inspection"
	else
		rm -f "$ROOT$BASE/current"
		systemctl daemon-reload
		say "no previous release: the service is removed; $release stays for inspection"
	fi
	exit 1
}

copilot_config() {
	local scheme=http
	tls_on && scheme=https
	printf '+ %s --copilot-config %s\n' "$BASE/current/build/bin/rs-serve" \
	    "$scheme://$(in_url "$public_host"):$port/v1" >&2
	[ "$dry" = 1 ] && return
	"$ROOT$BASE/current/build/bin/rs-serve" -m "$ROOT$model" --ctx "$ctx" \
	    --alias "$ALIAS" --copilot-config "$scheme://$(in_url "$public_host"):$port/v1" |
	    put_file "$BASE/copilot-model.json" 0644
	record file "$BASE/copilot-model.json"
}

# keep the active release and the one before it
prune_releases() {
	local r keep
	keep=$(readlink "$ROOT$BASE/current" 2>/dev/null || true)
	for r in "$ROOT$BASE"/releases/*; do
		[ -d "$r" ] || continue
		case releases/${r##*/} in "$keep"|"$prev_release") continue ;; esac
		act rm -rf "$r"
	done
	act rm -rf "$ROOT$BASE/prev"
}

main() {
	parse_args "$@"
	[ "$dry" = 0 ] || say "dry run: printing what would be done, changing nothing"
	check_system
	check_ownership
	check_gpu
	pick_cuda
	say "building for sm_$gpu_arch with CUDA $cuda_ver"
	check_offline
	find_fixtures
	locate_model
	prepare_dirs
	ensure_user
	secure_dirs
	install_deps
	fetch_model
	new_release
	build_release
	fit_ctx
	save_state
	write_api_key
	write_tls
	activate
	check_service || rollback
	copilot_config
	prune_releases
	if [ "$dry" = 1 ]; then
		say "dry run: nothing changed"
	else
		say "installed $release; Copilot entry: $BASE/copilot-model.json"
	fi
}

main "$@"
