#!/bin/sh
# man-test.sh - lint man pages with mandoc and run every EXAMPLES command.
#
# In a page's EXAMPLES section, each line of a literal display that starts
# with "$ " is a command.  It runs from the repository root with $RS_BIN
# (default build/bin) first on PATH, under "set -o pipefail", and must exit
# 0.  redshift.7's SEE ALSO must name every rs-*.1 beside it.
# Usage: man-test.sh PAGE...
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
	# a quote opened inside another on one line: a partial-implicit
	# macro (.Qq, .Ql) swallowed the rest of its line, commas and all
	if mandoc -Tutf8 "$page" | sed 's/.\x08//g' |
	    LC_ALL=C.UTF-8 grep -nE '‘[^’]*‘|“[^”]*“|"""'; then
		echo "man-test: $page: nested quotes (use .Po/.Pc, one" \
		    "quoting macro a line)" >&2
		fail=$((fail + 1))
	fi
	# redshift(7) is the index: its SEE ALSO names every command
	case $page in */redshift.7)
		for cmd in "${page%/*}"/rs-*.1; do
			name=${cmd##*/}
			name=${name%.1}
			if ! awk '/^\.Sh / { see = ($2 == "SEE") }
			    see && $1 == ".Xr" && $2 == n { found = 1 }
			    END { exit !found }' n="$name" "$page"; then
				echo "man-test: $page: SEE ALSO lacks $name(1)" >&2
				fail=$((fail + 1))
			fi
		done
	esac
	cmds=$(awk '
		/^\.Sh / { ex = ($2 == "EXAMPLES") }
		ex && /^\$ / { sub(/^\$ /, ""); gsub(/\\e/, "\\"); print }
	' "$page")
	[ -n "$cmds" ] || continue
	printf "%s\n" "$cmds" | while IFS= read -r cmd; do
		if ! PATH="$bin:$PATH" bash -o pipefail -c "$cmd" >/dev/null 2>&1; then
			echo "man-test: $page: example failed: $cmd" >&2
			exit 1
		fi
	done || fail=$((fail + 1))
	ran=$((ran + $(printf "%s\n" "$cmds" | wc -l)))
done
echo "man-test: $ran examples run, $fail pages failed"
[ "$fail" -eq 0 ]
