#!/bin/sh
# test-stages.sh - run every test stage even when one fails, then say
# which failed: make test's driver (a failing Check suite must not hide a
# man page or rs-serve failure, and the other way round).
#
# Usage: test-stages.sh STAGE...   runs "$MAKE STAGE" for each (MAKE
# defaults to make); exits 1 if any failed, naming them on the last line.
set -u
make=${MAKE:-make}
failed=
for stage in "$@"; do
	echo "==> $stage"
	$make "$stage" || failed="$failed $stage"
done
if [ -n "$failed" ]; then
	echo "test stages failed:$failed (passed: the others of $*)" >&2
	exit 1
fi
echo "test stages passed: $*"
