#!/bin/bash
# run.sh - tests of scripts/install-redshift.sh and uninstall-redshift.sh
# (issue #16).  Each case runs the real scripts against a fake root
# (RS_INSTALL_ROOT) with the shims in tests/install/shims first on PATH:
# apt-get, dpkg, systemctl, curl (downloads and the health check),
# nvidia-smi, make (no real build), useradd, chown.  Nothing is downloaded,
# built or started.  Usage: run.sh [CASE...] (default: all); exit 1 if a
# case fails.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
REPO=$PWD
SHIMS=$REPO/tests/install/shims
INSTALL=$REPO/scripts/install-redshift.sh
UNINSTALL=$REPO/scripts/uninstall-redshift.sh
WORK=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT
fails=0 ran=0

# ---- fixtures and helpers ----

# A fresh case: a fake Ubuntu 24.04 root, a tiny source tree, a fake model
# and empty logs.  Sets T, ROOT, MODEL, SHA.
setup() {
	T=$WORK/$1
	ROOT=$T/root
	mkdir -p "$ROOT/etc/systemd/system" "$ROOT/tmp" "$T/src/scripts" "$T/fixtures"
	printf 'ID=ubuntu\nVERSION_ID="24.04"\n' >"$ROOT/etc/os-release"
	echo 'root:x:0:0:root:/root:/bin/bash' >"$ROOT/etc/passwd"
	# shellcheck disable=SC2016 # expands when the installer runs it
	echo 'echo deps.sh >>"$SHIM_LOG"' >"$T/src/scripts/deps.sh"
	echo 'all:' >"$T/src/Makefile"
	MODEL=$T/model.gguf
	printf 'GGUF fake weights\n' >"$MODEL"
	SHA=$(sha256sum <"$MODEL" | cut -d' ' -f1)
	: >"$T/log"
}

# Run the installer (or $SCRIPT) in the case's fake root; output in $T/out.
run() {
	env PATH="$SHIMS:$PATH" RS_INSTALL_ROOT="$ROOT" RS_INSTALL_SRC="$T/src" \
	    RS_FIXTURES="$T/fixtures" RS_INSTALL_HEALTH_TIMEOUT=0 \
	    SHIM_LOG="$T/log" SHIM_MODEL="$MODEL" HF_HOME="$T/hf" \
	    "${SCRIPT:-$INSTALL}" "$@" >"$T/out" 2>&1
}

url_args() { echo --model-url http://models.test/m.gguf --model-sha256 "$SHA"; }

# every path under the root with its type, mode, size, link target and
# content hash: equal listings mean an unchanged tree
tree() {
	(cd "$1" && find . -printf '%p %y %m %s %l\n' | sort &&
	    find . -type f -exec sha256sum {} + | sort)
}

fail() {
	echo "FAIL $case: $*"
	sed 's/^/    | /' "$T/out"
	return 1
}

expect_rc() { [ "$1" = "$2" ] || fail "exit status $1, expected $2"; }
has() { grep -q -- "$2" "$1" || fail "${1#"$T"/}: no '$2'"; }
hasnt() { ! grep -q -- "$2" "$1" || fail "${1#"$T"/}: unexpected '$2'"; }
releases() { find "$ROOT/opt/redshift/releases" -mindepth 1 -maxdepth 1 -type d | wc -l; }
current() { echo "/opt/redshift/$(readlink "$ROOT/opt/redshift/current")"; }

# ---- cases ----

t_help() {
	setup help
	run --help; expect_rc $? 0 || return
	has "$T/out" '--dry-run' || return
	run --bogus; expect_rc $? 2 || return
	has "$T/out" "Try 'install-redshift.sh --help'" || return
	run --port 70000; expect_rc $? 2 || return
	has "$T/out" 'expected an integer in \[1, 65535\]'
}

t_shellcheck() {
	setup shellcheck
	shellcheck "$INSTALL" "$UNINSTALL" "$0" "$SHIMS"/* >"$T/out" 2>&1 ||
	    fail "shellcheck"
}

t_fresh() {
	setup fresh
	# shellcheck disable=SC2046
	run --host 0.0.0.0 --public-host 10.0.0.5 $(url_args); expect_rc $? 0 || return
	local unit=$ROOT/etc/systemd/system/redshift.service
	[ "$(releases)" = 1 ] || fail "$(releases) releases, expected 1" || return
	[ -d "$ROOT$(current)" ] || fail "current -> $(current)" || return
	has "$unit" '^# Managed by install-redshift.sh' || return
	has "$unit" 'ExecStart=/opt/redshift/current/build/bin/rs-serve -m /opt/models/qwen3.8-27b/m.gguf --host 0.0.0.0 --port 8081' || return
	has "$unit" '--public-host 10.0.0.5 ' || return
	local h
	for h in NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes \
	    DevicePolicy=closed 'DeviceAllow=char-nvidia-frontend rw' User=redshift; do
		has "$unit" "^$h\$" || return
	done
	# V100: CUDA 12.9 from NVIDIA's repository, an sm_70 build, its tests
	has "$T/log" 'apt-get install -y -qq cuda-toolkit-12-9' || return
	# the keyring through a directory of its own, not a fixed /tmp name
	has "$T/log" 'dpkg -i .*/tmp/cuda-keyring\.[A-Za-z0-9]*/cuda-keyring\.deb' || return
	[ -z "$(ls -A "$ROOT/tmp")" ] || fail "left in /tmp: $(ls -A "$ROOT/tmp")" || return
	has "$T/log" "CUDA_ARCHS=70 NVCC=$ROOT/usr/local/cuda-12.9/bin/nvcc all" || return
	has "$T/log" 'make -C .* test' || return
	has "$T/log" '^deps.sh' || return
	has "$T/log" 'useradd --system .* redshift' || return
	has "$T/log" 'systemctl restart redshift.service' || return
	has "$T/log" 'curl .*http://127.0.0.1:8081/health' || return
	has "$T/log" 'curl .*/v1/chat/completions' || return
	has "$ROOT/opt/redshift/copilot-model.json" 'http://10.0.0.5:8081/v1/chat/completions' || return
	has "$ROOT/opt/redshift/install.manifest" '^user redshift$' || return
	cmp -s "$MODEL" "$ROOT/opt/models/qwen3.8-27b/m.gguf" || fail "model not in place"
}

# a server owner who cloned only the repository has no test fixtures: the
# install goes on without make test, and says so
t_no_fixtures() {
	setup no_fixtures
	rmdir "$T/fixtures"
	# shellcheck disable=SC2046
	run $(url_args); expect_rc $? 0 || return
	has "$T/out" 'make test is skipped' || return
	hasnt "$T/log" 'make -C .* test' || return
	has "$T/log" 'curl .*/v1/chat/completions'
}

t_newer_gpu() {
	setup newer
	# shellcheck disable=SC2046
	SHIM_GPU='9.0, 580.95.05, NVIDIA H200' run $(url_args); expect_rc $? 0 || return
	has "$T/log" 'cuda-toolkit-13-0' || return
	has "$T/log" "CUDA_ARCHS=90 NVCC=$ROOT/usr/local/cuda-13.0/bin/nvcc" || return
	setup arch
	# shellcheck disable=SC2046
	SHIM_GPU='9.0, 580.95.05, NVIDIA H200' run --arch 70 $(url_args); expect_rc $? 0 || return
	has "$T/log" 'CUDA_ARCHS=70 NVCC=.*cuda-12.9' || return
	setup olddriver
	# shellcheck disable=SC2046
	SHIM_GPU='7.0, 550.54, Tesla V100' run $(url_args); expect_rc $? 3 || return
	has "$T/log" 'apt-get install -y -qq nvidia-driver-580-server' || return
	has "$T/out" 'reboot, then run the same command again'
}

t_container() {
	setup container
	touch "$ROOT/.dockerenv"
	# shellcheck disable=SC2046
	SHIM_GPU=none run $(url_args); expect_rc $? 2 || return
	has "$T/out" 'install it on the host' || return
	hasnt "$T/log" '^apt-get'
}

t_rerun() {
	setup rerun
	# shellcheck disable=SC2046
	run $(url_args); expect_rc $? 0 || return
	local first
	first=$(current)
	# shellcheck disable=SC2046
	run $(url_args); expect_rc $? 0 || return
	[ "$(releases)" = 2 ] || fail "$(releases) releases after a rerun, expected 2" || return
	[ "$(current)" != "$first" ] || fail "current still $first" || return
	[ -d "$ROOT$first" ] || fail "previous release $first removed" || return
	[ "$(grep -c -- ' -o .*gguf.part' "$T/log")" = 1 ] || fail "the verified model was downloaded again" || return
	local second
	second=$(current)
	# shellcheck disable=SC2046
	run $(url_args); expect_rc $? 0 || return
	[ "$(releases)" = 2 ] || fail "$(releases) releases after a third run, expected 2" || return
	if [ ! -d "$ROOT$second" ] || [ -d "$ROOT$first" ]; then
		fail "kept the wrong releases"
	fi
}

t_rollback() {
	setup rollback
	# shellcheck disable=SC2046
	run $(url_args); expect_rc $? 0 || return
	local good
	good=$(current)
	tree "$ROOT/etc" >"$T/before"
	: >"$T/log"
	# a new port, a TLS front and a key: all of it must go again
	echo key >"$T/key"
	# shellcheck disable=SC2046
	SHIM_BROKEN=1 run --port 9000 --tls-self-signed --api-key-file "$T/key" $(url_args)
	expect_rc $? 1 || return
	has "$T/out" 'restoring the previous state' || return
	[ "$(current)" = "$good" ] || fail "current -> $(current), expected $good" || return
	tree "$ROOT/etc" >"$T/after"
	cmp -s "$T/before" "$T/after" || fail "/etc not restored: $(diff "$T/before" "$T/after")" || return
	has "$T/log" 'systemctl disable --now redshift-tls.service' || return
	[ "$(tail -n1 "$T/log")" = 'systemctl restart redshift.service' ] ||
	    fail "last action: $(tail -n1 "$T/log")" || return
	[ "$(releases)" = 2 ] || fail "the failed release should stay for inspection"
}

t_rollback_first() {
	setup rollback1
	# shellcheck disable=SC2046
	SHIM_BROKEN=1 run $(url_args); expect_rc $? 1 || return
	[ ! -e "$ROOT/opt/redshift/current" ] || fail "current left behind" || return
	[ ! -e "$ROOT/etc/systemd/system/redshift.service" ] || fail "unit left behind"
}

t_sha_mismatch() {
	setup sha
	run --model-url http://models.test/m.gguf --model-sha256 "$(printf '%064d' 0)"
	expect_rc $? 2 || return
	has "$T/out" 'SHA-256 .*expected 0000.*refused' || return
	[ -z "$(find "$ROOT/opt/models" -type f)" ] || fail "a model file stays" || return
	[ ! -e "$ROOT/etc/systemd/system/redshift.service" ] || fail "unit written"
}

t_missing_model() {
	setup missing
	run --model /opt/models/none.gguf; expect_rc $? 2 || return
	has "$T/out" 'no such file (nothing downloaded)' || return
	hasnt "$T/log" '^curl' || return
	hasnt "$T/log" '^apt-get'
}

# A model rs-serve cannot serve chat with (a chat template it does not
# render): refused before anything is activated, with rs-serve's reason
# (the service failed to start and the health check waited out its
# timeout).
t_no_chat() {
	setup nochat
	mkdir -p "$ROOT/srv"
	cp "$MODEL" "$ROOT/srv/m.gguf"
	SHIM_NO_CHAT=1 run --model /srv/m.gguf; expect_rc $? 2 || return
	has "$T/out" 'chat requests are not available' || return
	has "$T/out" 'cannot serve chat with this model' || return
	hasnt "$T/log" 'systemctl restart'
}

t_offline() {
	setup offline
	run --offline; expect_rc $? 2 || return
	has "$T/out" '--offline' || return
	if grep -qv '^nvidia-smi' "$T/log"; then
		fail "the refused run acted: $(cat "$T/log")"
		return
	fi
	# with CUDA and the weights present it installs, downloading nothing
	mkdir -p "$ROOT/usr/local/cuda-12.9/bin" "$ROOT/srv"
	printf '#!/bin/sh\n' >"$ROOT/usr/local/cuda-12.9/bin/nvcc"
	chmod +x "$ROOT/usr/local/cuda-12.9/bin/nvcc"
	cp "$MODEL" "$ROOT/srv/m.gguf"
	run --offline --model /srv/m.gguf; expect_rc $? 0 || return
	hasnt "$T/log" '^apt-get' || return
	hasnt "$T/log" '^deps.sh' || return
	hasnt "$T/log" ' -o ' || return
	hasnt "$T/log" 'http.*resolve'
}

t_unrelated() {
	setup unrelated
	local unit=$ROOT/etc/systemd/system/redshift.service
	printf '[Service]\nExecStart=/usr/bin/someone-elses\n' >"$unit"
	# shellcheck disable=SC2046
	run $(url_args); expect_rc $? 2 || return
	has "$T/out" 'redshift.service exists and was not made by' || return
	has "$unit" someone-elses || return
	[ ! -e "$ROOT/opt/redshift" ] || fail "/opt/redshift created" || return
	rm "$unit"
	mkdir "$unit.d"
	# shellcheck disable=SC2046
	run $(url_args); expect_rc $? 2 || return
	has "$T/out" 'drop-in directory for redshift.service' || return
	rmdir "$unit.d"
	mkdir -p "$ROOT/opt/redshift"
	# shellcheck disable=SC2046
	run $(url_args); expect_rc $? 2 || return
	has "$T/out" '/opt/redshift exists and was not made by'
}

t_dry_run() {
	setup dry
	tree "$ROOT" >"$T/before"
	run --dry-run --host 0.0.0.0 --tls-self-signed; expect_rc $? 0 || return
	tree "$ROOT" >"$T/after"
	cmp -s "$T/before" "$T/after" || fail "tree changed: $(diff "$T/before" "$T/after")" || return
	hasnt "$T/log" '^curl' || return
	# every step is printed, with the pinned model
	has "$T/out" "+ curl .*huggingface.co/ggml-org/Qwen3.8-27B-GGUF/resolve/97c30c65c8d9a3e73f9fdfb50f1d1a669e9a2827/Qwen3.8-27B-Q4_K_M.gguf" || return
	has "$T/out" '+ write /etc/systemd/system/redshift.service' || return
	has "$T/out" '+ write /etc/systemd/system/redshift-tls.service' || return
	has "$T/out" '+ systemctl restart redshift.service redshift-tls.service' || return
	# and on an installed system
	# shellcheck disable=SC2046
	run $(url_args); expect_rc $? 0 || return
	tree "$ROOT" >"$T/before"
	: >"$T/log"
	# shellcheck disable=SC2046
	run --dry-run --port 9000 $(url_args); expect_rc $? 0 || return
	tree "$ROOT" >"$T/after"
	cmp -s "$T/before" "$T/after" || fail "tree changed: $(diff "$T/before" "$T/after")" || return
	hasnt "$T/log" '^curl'
}

t_tls_key() {
	setup tls
	echo 'sk-test-123' >"$T/key"
	# shellcheck disable=SC2046
	run --host 0.0.0.0 --public-host 10.0.0.5 --tls-self-signed --api-key-file "$T/key" $(url_args)
	expect_rc $? 0 || return
	local etc=$ROOT/etc/redshift unit=$ROOT/etc/systemd/system/redshift.service
	has "$etc/stunnel.conf" '^accept = 0.0.0.0:8081$' || return
	has "$etc/stunnel.conf" '^connect = 127.0.0.1:18081$' || return
	has "$ROOT/etc/systemd/system/redshift-tls.service" '^ExecStart=/usr/bin/stunnel4 /etc/redshift/stunnel.conf$' || return
	has "$unit" -- '--host 127.0.0.1 --port 18081' || return
	has "$unit" '^EnvironmentFile=/etc/redshift/api-key.env$' || return
	openssl x509 -in "$etc/tls/cert.pem" -noout -ext subjectAltName 2>/dev/null |
	    grep -q 'IP Address:10.0.0.5' || fail "certificate lacks IP:10.0.0.5" || return
	# the key: only in the 0600 file the service user owns
	[ "$(stat -c %a "$etc/api-key.env")" = 600 ] || fail "api-key.env mode $(stat -c %a "$etc/api-key.env")" || return
	has "$etc/api-key.env" '^RS_API_KEY=sk-test-123$' || return
	has "$T/log" "^chown redshift:redshift $etc/api-key.env\." || return
	hasnt "$unit" sk-test-123 || return
	hasnt "$T/log" sk-test-123 || return
	[ ! -e "$etc/api-key.hdr" ] || fail "curl header file left behind" || return
	has "$T/log" 'curl .*https://127.0.0.1:8081/health' || return
	has "$ROOT/opt/redshift/copilot-model.json" 'https://10.0.0.5:8081/v1'
}

# An IPv6 --public-host, bare or in brackets: bare in the certificate,
# in brackets in the Copilot URL and in the Host rs-serve checks.
t_ipv6() {
	setup ipv6
	local ph
	for ph in 2001:db8::7 '[2001:db8::7]'; do
		# shellcheck disable=SC2046
		run --host :: --public-host "$ph" --tls-self-signed $(url_args)
		expect_rc $? 0 || return
		has "$ROOT/etc/systemd/system/redshift.service" '--public-host \[2001:db8::7\] ' || return
		has "$ROOT/opt/redshift/copilot-model.json" 'https://\[2001:db8::7\]:8081/v1' || return
		has "$T/log" 'curl .*https://\[::1\]:8081/health' || return
	done
	openssl x509 -in "$ROOT/etc/redshift/tls/cert.pem" -noout -ext subjectAltName 2>/dev/null |
	    grep -q 'IP Address:2001:DB8:0:0:0:0:0:7' || fail "certificate lacks the IPv6 address" || return
}

# A model trained for 4,096 tokens: served at 4,096 unless --ctx says
# otherwise (the default 131,072 was served and offered to Copilot).
t_small_ctx() {
	setup small_ctx
	local unit=$ROOT/etc/systemd/system/redshift.service
	# shellcheck disable=SC2046
	SHIM_CTX=4096 run $(url_args); expect_rc $? 0 || return
	has "$unit" ' --ctx 4096 ' || return
	has "$T/out" "the model's context is 4096 tokens: serving 4096" || return
	# shellcheck disable=SC2046
	SHIM_CTX=4096 run --ctx 8192 $(url_args); expect_rc $? 0 || return
	has "$unit" ' --ctx 8192 '
}

# The exposure score of the generated unit must not rise above the one the
# README documents.
t_security() {
	setup security
	if ! systemd-analyze security --help 2>/dev/null | grep -q -- --offline; then
		echo "skip security: no systemd-analyze security --offline here"
		return
	fi
	# shellcheck disable=SC2046
	run --tls-self-signed $(url_args); expect_rc $? 0 || return
	local doc got
	doc=$(sed -n 's/.*exposure score of .redshift.service. is \([0-9.]*\).*/\1/p' "$REPO/README.md")
	[ -n "$doc" ] || fail "README documents no exposure score" || return
	local u
	for u in redshift.service redshift-tls.service; do
		systemd-analyze security --offline=true --no-pager \
		    "$ROOT/etc/systemd/system/$u" >"$T/out" 2>&1
		got=$(sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p' "$T/out")
		[ -n "$got" ] || fail "$u: no score" || return
		awk -v g="$got" -v d="$doc" 'BEGIN { exit !(g <= d) }' ||
		    fail "$u: exposure $got, README documents $doc" || return
	done
}

t_uninstall() {
	setup uninstall
	mkdir -p "$ROOT/usr/local/cuda-12.9/bin" "$ROOT/opt/models/other"
	printf '#!/bin/sh\n' >"$ROOT/usr/local/cuda-12.9/bin/nvcc"
	chmod +x "$ROOT/usr/local/cuda-12.9/bin/nvcc"
	echo theirs >"$ROOT/opt/models/other/x.gguf"
	tree "$ROOT" >"$T/before"
	echo key >"$T/key"
	# shellcheck disable=SC2046
	run --tls-self-signed --api-key-file "$T/key" $(url_args); expect_rc $? 0 || return
	# shellcheck disable=SC2046
	run $(url_args); expect_rc $? 0 || return
	# the rerun without the key turned authentication off: said, and
	# the key file the unit no longer reads is gone
	has "$T/out" 'warning: no --api-key-file: the service now answers without a key' || return
	[ ! -e "$ROOT/etc/redshift/api-key.env" ] || fail "api-key.env left" || return
	SCRIPT=$UNINSTALL run --dry-run; expect_rc $? 0 || return
	[ -e "$ROOT/opt/redshift/current" ] || fail "--dry-run removed something" || return
	SCRIPT=$UNINSTALL run; expect_rc $? 0 || return
	tree "$ROOT" >"$T/after"
	cmp -s "$T/before" "$T/after" || fail "not back to the tree before: $(diff "$T/before" "$T/after")" || return
	has "$T/log" 'systemctl disable --now redshift.service' || return
	has "$T/log" 'userdel redshift' || return
	SCRIPT=$UNINSTALL run; expect_rc $? 0 || return
	has "$T/out" 'nothing installed'
}

# A key systemd's EnvironmentFile would change (a backslash, a quote) or
# an empty one: a usage error before anything is made.
t_bad_key() {
	setup bad_key
	tree "$ROOT" >"$T/before"
	local k
	for k in 'k3y"quote\\back' ''; do
		printf '%s\n' "$k" >"$T/key"
		# shellcheck disable=SC2046
		run --api-key-file "$T/key" $(url_args); expect_rc $? 2 || return
	done
	has "$T/out" 'the first line is empty' || return
	tree "$ROOT" >"$T/after"
	cmp -s "$T/before" "$T/after" || fail "changed: $(diff "$T/before" "$T/after")"
}

# A user's own files put inside the installer's trees (a model in
# /opt/redshift/models, a proxy configuration in /etc/redshift) survive
# an uninstall, --keep-model or not; the installer's own files there go.
t_uninstall_keeps_foreign() {
	setup uninstall_foreign
	# shellcheck disable=SC2046
	run --tls-self-signed $(url_args); expect_rc $? 0 || return
	mkdir -p "$ROOT/opt/redshift/models"
	echo mine >"$ROOT/opt/redshift/models/own.gguf"
	echo mine >"$ROOT/etc/redshift/my-proxy.conf"
	SCRIPT=$UNINSTALL run --keep-model; expect_rc $? 0 || return
	[ "$(cat "$ROOT/opt/redshift/models/own.gguf" 2>/dev/null)" = mine ] ||
	    fail "own.gguf removed" || return
	[ "$(cat "$ROOT/etc/redshift/my-proxy.conf" 2>/dev/null)" = mine ] ||
	    fail "my-proxy.conf removed" || return
	local left
	left=$(cd "$ROOT" && find opt/redshift etc/redshift -type f | sort | tr '\n' ' ')
	[ "$left" = "etc/redshift/my-proxy.conf opt/redshift/models/own.gguf " ] ||
	    fail "left behind: $left" || return
	has "$T/out" 'left, with what the installer did not make'
}

[ $# -gt 0 ] || set -- help shellcheck fresh no_fixtures newer_gpu container rerun rollback \
    rollback_first sha_mismatch missing_model no_chat offline unrelated dry_run \
    tls_key bad_key ipv6 small_ctx security uninstall uninstall_keeps_foreign
for case in "$@"; do
	ran=$((ran + 1))
	if "t_$case"; then
		echo "ok   $case"
	else
		fails=$((fails + 1))
	fi
done
echo "install tests: $ran cases, $fails failed"
[ "$fails" = 0 ]
