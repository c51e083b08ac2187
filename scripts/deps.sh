#!/bin/sh
# deps.sh - install Redshift's build and test dependencies (Debian/Ubuntu).
#
#   build:  C compiler, make, pkg-config, jansson, PCRE2, utf8proc, Kore
#   test:   Check, mandoc, clang (libFuzzer and sanitizers)
# Run as root (or with sudo).  Idempotent.
set -eu
pkgs="build-essential pkg-config libjansson-dev libpcre2-dev libutf8proc-dev
kore check libsubunit-dev mandoc clang libclang-rt-dev bash-completion"
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
echo "deps: all installed"
