#!/bin/sh
# man-test.sh - lint man pages with mandoc and run every EXAMPLES command.
#
# In a page's EXAMPLES section, each line of a literal display that starts
# with "$ " is a command.  It runs from the repository root with $RS_BIN
# (default build/bin) first on PATH, under "set -o pipefail", and must exit
# 0.  Usage: man-test.sh PAGE...
set -u
bin=${RS_BIN:-build/bin}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
fail=0 ran=0
for page in "$@"; do
	[ -f "$page" ] || continue
	if ! mandoc -Tlint -Wwarning "$page"; then
		echo "man-test: $page: mandoc lint failed" >&2
		fail=$((fail + 1))
	fi
	cmds=$(awk '
		/^\.Sh / { ex = ($2 == "EXAMPLES") }
		ex && /^\$ / { sub(/^\$ /, ""); gsub(/\\e/, "\\"); print }
	' "$page")
	[ -n "$cmds" ] || continue
	echo "$cmds" | while IFS= read -r cmd; do
		if ! PATH="$bin:$PATH" bash -o pipefail -c "$cmd" >/dev/null 2>&1; then
			echo "man-test: $page: example failed: $cmd" >&2
			exit 1
		fi
	done || fail=$((fail + 1))
	ran=$((ran + $(echo "$cmds" | wc -l)))
done
echo "man-test: $ran examples run, $fail pages failed"
[ "$fail" -eq 0 ]
