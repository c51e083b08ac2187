#!/bin/bash
# uninstall-redshift.sh - remove what install-redshift.sh made, and nothing
# else: it reads /opt/redshift/install.manifest and removes only what is
# listed there and still carries the installer's mark (units), and in the
# trees that hold the installer's marker file (/opt/redshift,
# /etc/redshift) the files it makes there; a file of the user's in them
# stays, and so do the directories above it.  A model directory is removed only
# when it is empty once the downloaded model is gone.  Packages (the driver,
# CUDA, stunnel4, build dependencies) stay: other software may use them;
# the script names them.
#
# Exit status: 0 removed (or nothing installed), 2 usage error or a step
# failed.  Test hooks as in install-redshift.sh: RS_INSTALL_ROOT.
set -euo pipefail

readonly PROG=uninstall-redshift.sh
readonly ROOT=${RS_INSTALL_ROOT:-}
readonly BASE=/opt/redshift
readonly ETC=/etc/redshift
readonly MANIFEST=$BASE/install.manifest
readonly MARK="# Managed by install-redshift.sh (Redshift); uninstall-redshift.sh removes it."

dry=0 keep_model=0

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { say "$2"; exit "$1"; }

act() {
	printf '+ %s\n' "$*" >&2
	[ "$dry" = 1 ] || "$@"
}

usage() {
	cat <<EOF
usage: $PROG [--keep-model] [--dry-run]
Remove the Redshift service, releases, configuration, downloaded model and
user that install-redshift.sh created (listed in $MANIFEST).
      --keep-model          keep the downloaded model file
  -n, --dry-run             print every action, change nothing
  -h, --help                print this help
Exit status: 0 removed or nothing to remove, 2 error.
EOF
}

parse_args() {
	while [ $# -gt 0 ]; do
		case $1 in
		--keep-model) keep_model=1 ;;
		-n|--dry-run) dry=1 ;;
		-h|--help) usage; exit 0 ;;
		*) say "unknown option '$1'"; echo "Try '$PROG --help'" >&2; exit 2 ;;
		esac
		shift
	done
}

# lines "KIND VALUE" of the manifest
entries() { awk -v k="$1" '$1 == k { sub(/^[^ ]+ /, ""); print }' "$ROOT$MANIFEST"; }

ours() { head -n1 "$1" 2>/dev/null | grep -qxF "$MARK"; }

remove_units() {
	local f reload=0
	while IFS= read -r f; do
		case $f in /etc/systemd/system/*.service) ;; *) continue ;; esac
		[ -f "$ROOT$f" ] || continue
		if ! ours "$ROOT$f"; then
			say "$f: no longer made by the installer; left alone"
			continue
		fi
		act systemctl disable --now "${f##*/}" || true
		act rm -f "$ROOT$f"
		reload=1
	done < <(entries file)
	[ "$reload" = 0 ] || act systemctl daemon-reload
}

remove_models() {
	local f d
	if [ "$keep_model" = 0 ]; then
		while IFS= read -r f; do
			act rm -f "$ROOT$f" "$ROOT$f.verified" "$ROOT$f.part"
		done < <(entries model)
	fi
	# a directory we created goes only when nothing else is in it,
	# children before parents (the manifest lists parents first)
	while IFS= read -r d; do
		case $d in "$BASE"|"$ETC"|"$ETC"/*) continue ;; esac
		[ -d "$ROOT$d" ] || continue
		if [ -z "$(ls -A "$ROOT$d")" ]; then
			act rmdir "$ROOT$d"
		else
			say "$d: not empty; left alone"
		fi
	done < <(entries dir | tac)
}

# What the installer makes in its two trees besides the manifest's files:
# releases and the state saved for a rollback, the current link, the
# manifest (/opt/redshift); the key's header file, the certificates
# (/etc/redshift).
own_paths() {
	case $1 in
	"$BASE") printf '%s\n' releases prev current current.new \
	    install.manifest ;;
	"$ETC") printf '%s\n' api-key.hdr tls/cert.pem tls/key.pem ;;
	esac
}

# A tree the installer made (its marker file): its files go, then every
# directory left empty, deepest first.  A file it did not make (a model
# or a configuration of the user's put there) stays, and with it the
# directories above it: the tree is not removed whole.
remove_tree() {
	local d=$1 p
	[ -f "$ROOT$d/.install-redshift" ] || return 0
	while IFS= read -r p; do
		case $p in "$d"/*) act rm -f "$ROOT$p" ;; esac
	done < <(entries file)
	while IFS= read -r p; do
		[ -e "$ROOT$d/$p" ] || [ -L "$ROOT$d/$p" ] || continue
		act rm -rf "$ROOT$d/$p"
	done < <(own_paths "$d")
	act rm -f "$ROOT$d/.install-redshift"
	[ "$dry" = 1 ] && return
	find "$ROOT$d" -depth -type d -empty -delete
	[ ! -e "$ROOT$d" ] ||
	    say "$d: left, with what the installer did not make: $(cd "$ROOT$d" && find . -type f | sed 's|^\./||' | tr '\n' ' ')"
}

main() {
	parse_args "$@"
	[ -n "$ROOT" ] || [ "$(id -u)" = 0 ] || [ "$dry" = 1 ] ||
	    die 2 "run as root (sudo $PROG)"
	if [ ! -f "$ROOT$MANIFEST" ] || [ ! -f "$ROOT$BASE/.install-redshift" ]; then
		say "nothing installed by install-redshift.sh ($MANIFEST not found)"
		exit 0
	fi
	local users pkgs u
	users=$(entries user)
	pkgs=$(entries package | tr '\n' ' ')
	remove_units
	remove_models
	remove_tree "$ETC"
	remove_tree "$BASE"
	for u in $users; do
		act userdel "$u"
	done
	[ -z "$pkgs" ] || say "packages the installer added stay installed: $pkgs(apt-get remove them if nothing else needs them)"
	say "removed"
}

main "$@"
