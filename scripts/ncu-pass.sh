#!/bin/bash
# ncu-pass.sh - where one exact-path pass of N tokens goes, kernel by
# kernel: ncu's duration of every kernel of rs-verify over DEPTH context
# tokens and N candidates (calls of 16 tokens, the exact path's largest,
# then one of N), less the same run without the candidates, summed by
# kernel (its template arguments kept:
# the matvecs' column counts and launch shapes).  ncu runs each kernel
# alone, so the sum is above the pass's time in its CUDA graph, where
# programmatic launches overlap the small kernels with their neighbours
# (docs/perf-log.md, session 10): read it for where the work is, not as
# the pass's time.  Clocks and caches are left as they run (ncu's default
# locks the SM clock at base, which inflates the instruction-bound
# kernels against the memory-bound ones).
#
#   bash scripts/ncu-pass.sh MODEL N [DEPTH]    # N 1..16, DEPTH a multiple
#                                               # of 16 (default 16)
#
# Needs ncu (in PATH or under /usr/local/cuda*/bin) and build/bin/rs-verify
# (BIN overrides build/bin).  Prints one line a kernel: µs, launches, name;
# then the total.
set -eu
if [ $# -lt 2 ]; then
	echo "usage: $0 MODEL N [DEPTH]" >&2
	exit 2
fi
model=$1 n=$2 depth=${3:-16}
if [ "$n" -lt 1 ] || [ "$n" -gt 16 ] || [ $((depth % 16)) -ne 0 ]; then
	echo "ncu-pass: N in 1..16, DEPTH a multiple of 16" >&2
	exit 2
fi
bin=${BIN:-build/bin}
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -n 1)
if [ -z "$ncu" ]; then
	echo "ncu-pass: no ncu found" >&2
	exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# $1: how many tokens, $2: the csv
profile() {
	"$ncu" --csv --print-units base --clock-control none \
	    --cache-control none --metrics gpu__time_duration.sum \
	    "$bin/rs-verify" -m "$model" --tokens "$(seq -s, 1 "$1")" \
	    --prefix "$depth" -c 4096 -b 16 -q >"$2"
}
profile "$depth" "$tmp/a.csv"
profile $((depth + n)) "$tmp/b.csv"

python3 - "$tmp/a.csv" "$tmp/b.csv" <<'EOF'
import collections
import csv
import re
import sys


def load(path):
    """Kernel name (parameter list dropped) -> [ns, launches]."""
    lines = [l for l in open(path) if l.startswith('"')]
    agg = collections.defaultdict(lambda: [0.0, 0])
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = re.sub(r"\([^()]*\)$", "", row["Kernel Name"])
        agg[name][0] += float(row["Metric Value"].replace(",", ""))
        agg[name][1] += 1
    return agg


a, b = load(sys.argv[1]), load(sys.argv[2])
rows = []
for name, (ns, count) in b.items():
    ns -= a.get(name, [0.0, 0])[0]
    count -= a.get(name, [0.0, 0])[1]
    if count != 0 or abs(ns) > 500:
        rows.append((ns / 1e3, count, name))
rows.sort(reverse=True)
for us, count, name in rows:
    print(f"{us:10.1f} us {count:5d}  {name[:120]}")
print(f"{sum(r[0] for r in rows):10.1f} us in all")
EOF
