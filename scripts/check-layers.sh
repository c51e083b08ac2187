#!/bin/sh
# check-layers.sh - keep lib/'s layers honest: a file in lib/<layer>/ may
# include the headers of its own layer and of the layers the table below
# lets it see, never one above.  make test runs it (stage test-layers).
#
#   sh scripts/check-layers.sh [ROOT]     (default: the current directory)
#
# The layers, lowest first.  tok and chat sit beside cpu and engine, not
# above them: text never reaches the engine and the engine never reaches
# text, only gen joins the two.  A quoted include names a lib/ header
# (every lib/ folder is on the include path, Makefile LIB_INC), so the
# header's folder is its layer; a quoted include found in no lib/ folder
# (a kernels/ or cmd/ header) is above every layer.  A folder missing from
# the table fails too, so a new layer has to be placed here.
#
# Prints FILE:LINE: what it includes, and exits 1, for each upward include.
set -u
root=${1:-.}
cd "$root" || exit 2

layers='
base
model	base
cpu	base model
engine	base model cpu
tok	base model
chat	base model
gen	base model cpu engine tok chat
api	base model cpu engine tok chat gen
tools	base model cpu engine tok chat gen api
'

echo "$layers" | awk '
BEGIN {
	cmd = "ls lib/*/*.h"
	while ((cmd | getline h) > 0) {
		split(h, p, "/")
		layer_of[p[3]] = p[2]
	}
	close(cmd)
}
NF > 0 {
	known[$1] = 1
	for (i = 1; i <= NF; i++)
		may[$1, $i] = 1
}
END {
	bad = 0
	cmd = "ls lib/*/*.[ch]"
	while ((cmd | getline file) > 0) {
		split(file, p, "/")
		me = p[2]
		if (!(me in known)) {
			printf("%s: lib/%s/ is in no layer of " \
			    "scripts/check-layers.sh\n", file, me)
			bad = 1
			continue
		}
		n = 0
		while ((getline line < file) > 0) {
			n++
			if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/)
				continue
			h = line
			sub(/^[^"]*"/, "", h)
			sub(/".*/, "", h)
			if (!(h in layer_of)) {
				printf("%s:%d: includes \"%s\", which is " \
				    "not in lib/\n", file, n, h)
				bad = 1
			} else if (!may[me, layer_of[h]]) {
				printf("%s:%d: includes \"%s\" (layer %s), " \
				    "which layer %s may not see\n", file, n,
				    h, layer_of[h], me)
				bad = 1
			}
		}
		close(file)
	}
	close(cmd)
	exit bad
}' >&2 || {
	echo "check-layers: failed: a lib/ file reaches above its layer" \
	    "(the table in scripts/check-layers.sh)" >&2
	exit 1
}
echo "check-layers: every lib/ include stays within its layer or below"
