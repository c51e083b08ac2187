#!/bin/sh
# deps.sh - install Redshift's build and test dependencies (Debian/Ubuntu).
#
#   build:  C compiler, make, pkg-config, jansson, PCRE2, utf8proc, Kore
#           (its sources in /usr/share/kore, built into rs-serve, need the
#           OpenSSL headers)
#   test:   Check, mandoc, clang (libFuzzer and sanitizers), shellcheck
#           (tests/install; its exposure-score check also uses systemd's
#           systemd-analyze where present); for rs-serve's tests
#           (tests/serve) curl, openssl, jq (the man pages' examples)
#           and, from PyPI, the OpenAI Python SDK and pytest
#           (tests/serve/requirements.txt)
# Run as root (or with sudo).  Idempotent.
set -eu
pkgs="build-essential pkg-config libjansson-dev libpcre2-dev libutf8proc-dev
kore libssl-dev check libsubunit-dev mandoc clang libclang-rt-dev
bash-completion curl jq openssl shellcheck"
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
	    missing="$missing $p"
done
if [ -n "$missing" ]; then
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq
	# shellcheck disable=SC2086
	$SUDO apt-get install -y -qq --no-install-recommends $missing
fi

# Python packages for tests/serve.  A pyenv or venv python3 takes them as
# is; Debian's own python3 is "externally managed" (PEP 668) and needs the
# override.
req="$(dirname "$0")/../tests/serve/requirements.txt"
if ! python3 -c 'import openai, pytest' 2>/dev/null; then
	if ! python3 -m pip --version >/dev/null 2>&1; then
		SUDO=
		[ "$(id -u)" -eq 0 ] || SUDO=sudo
		export DEBIAN_FRONTEND=noninteractive
		$SUDO apt-get update -qq
		$SUDO apt-get install -y -qq --no-install-recommends python3-pip
	fi
	pip="python3 -m pip install -q --disable-pip-version-check -r $req"
	$pip 2>/dev/null || $pip --break-system-packages
fi
echo "deps: all installed"
