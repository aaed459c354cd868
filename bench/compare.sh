#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make bench-compare REF=<tag or commit>: the benchmark of REF beside
# this tree's, on one machine, interleaved, each figure side by side.
#
#   compare.sh SRCDIR BUILDDIR REF [PART...]
#
# REF is built once under BUILDDIR/bench/ref/<commit> (git archive, then
# autoreconf, configure and make bench/bench there; kept for the next
# run).  Then, for each part (default: cycle handoff throughput herd),
# REF's bench and ours run one after the other, the first one taking
# turns, COMPARE_RUNS times (default 1); each figure is the median of
# its runs.  BENCH_ARGS go to both.  It prints; its figures fail
# nothing.  Exit 1 only when REF cannot be built or a bench fails.
set -u

[ $# -ge 3 ] || { echo "usage: compare.sh SRCDIR BUILDDIR REF [PART...]" >&2; exit 64; }
src=$1 build=$2 ref=$3
shift 3
PARTS=${*:-cycle handoff throughput herd}
RUNS=${COMPARE_RUNS:-1}
ours="$build/bench/bench"

die() { echo "bench-compare: $*" >&2; exit 1; }

[ -x "$ours" ] || die "$ours is not built"
sha=$(git -C "$src" rev-parse --verify -q "$ref^{commit}") ||
	die "$ref: no such commit in $src (a git checkout is needed)"
short=$(git -C "$src" rev-parse --short "$sha")
refdir="$build/bench/ref/$sha"
theirs="$refdir/bench/bench"

# Built once; a failed build leaves no stamp and is done again.
if [ ! -f "$refdir/.built" ]; then
	echo "bench-compare: building $ref ($short) in $refdir"
	rm -rf "$refdir"
	mkdir -p "$refdir" || die "mkdir $refdir failed"
	git -C "$src" archive "$sha" | tar -x -C "$refdir" ||
		die "git archive $ref failed"
	( cd "$refdir" && autoreconf -fi && ./configure &&
	  make -j"$(nproc 2>/dev/null || echo 2)" bench/bench ) \
		>"$refdir.log" 2>&1 ||
		die "building $ref failed: see $refdir.log"
	: >"$refdir/.built"
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-compare.XXXXXX") ||
	die "mktemp failed"
trap 'rm -rf "$out"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One run of one part by one side: its CSV files in $out/SIDE.RUN/.
run() {	# side bench part run
	mkdir -p "$out/$1.$4" || exit 1
	# shellcheck disable=SC2086 # BENCH_ARGS: words on purpose
	"$2" --csv "$out/$1.$4" ${BENCH_ARGS:-} "$3" >"$out/$1.$4.$3.txt" 2>&1 ||
		die "$1's bench $3 failed: $(tail -3 "$out/$1.$4.$3.txt")"
}

i=0
while [ "$i" -lt "$RUNS" ]; do
	for part in $PARTS; do
		echo "bench-compare: run $((i + 1))/$RUNS: $part"
		if [ $((i % 2)) -eq 0 ]; then
			run ref "$theirs" "$part" "$i"; run ours "$ours" "$part" "$i"
		else
			run ours "$ours" "$part" "$i"; run ref "$theirs" "$part" "$i"
		fi
	done
	i=$((i + 1))
done

ver() { sed -n '1s/^libpidlock \([^ ]*\) benchmark.*/\1/p' "$1"; }
set -- "$out"/ours.0.*.txt
this=$(ver "$1")
set -- "$out"/ref.0.*.txt
echo
echo "bench-compare: $ref ($short, $(ver "$1")) against this tree" \
	"($this), $(nproc) cores," \
	"Linux $(uname -r), $RUNS run(s), medians"

# Every CSV row of both sides, as SIDE,FILE,ROW: the leading columns
# that are not numbers name the row, each number column is a figure.
# Throughput also gets each side's pidlock/bare, herds each kind's
# latency and CPU over bare's: figures made within one run.
for f in cycle synced handoff throughput herd; do
	for side in ref ours; do
		for d in "$out/$side".*/; do
			[ -f "$d$f.csv" ] && sed "s/^/$side,$f,/" "$d$f.csv"
		done
	done
done | awk -F, -v refname="$ref" '
function num(s) { return s ~ /^-?[0-9]+(\.[0-9]*)?(e[-+]?[0-9]+)?$/ }
function median(key, side,   n, i, j, t, v) {
	n = cnt[side, key]
	if (!n) return ""
	for (i = 1; i <= n; i++) v[i] = val[side, key, i]
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
			t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
		}
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function add(side, key, x) {
	if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
	val[side, key, ++cnt[side, key]] = x
}
# The first line of each file names its columns.
$3 == "subject" || $3 == "procs" || $3 == "kind" || $3 == "dir" {
	for (i = 3; i <= NF; i++) head[$2, i] = $i
	next
}
{
	side = $1; f = $2; name = f
	i = 3
	if (f == "throughput") { name = f " " $3 " procs"; i = 4 }
	for (; i <= NF && !num($i); i++) name = name " " $i
	if (f == "herd") { name = name " " $i; i++ }
	for (; i <= NF; i++)
		if (num($i) && head[f, i] != "handoffs")
			add(side, name " " head[f, i], $i)
	if (f == "throughput" && $4 > 0)
		add(side, name " pidlock/bare", $5 / $4)
	if (f == "herd") {
		if ($3 == "bare") { bl[side, $4] = $6; bc[side, $4] = $7 }
		else if (bl[side, $4] > 0) {
			add(side, name " latency/bare", $6 / bl[side, $4])
			add(side, name " cpu/bare", $7 / bc[side, $4])
		}
	}
}
END {
	printf "  %-40s %12s %12s %9s\n", "figure", refname, "this tree", "this/ref"
	for (k = 1; k <= nk; k++) {
		a = median(order[k], "ref"); b = median(order[k], "ours")
		r = (a != "" && b != "" && a + 0 != 0) ? sprintf("%8.2fx", b / a) : "        -"
		printf "  %-40s %12s %12s %9s\n", substr(order[k], 1, 40),
		       a == "" ? "-" : sprintf("%.4g", a),
		       b == "" ? "-" : sprintf("%.4g", b), r
	}
}'
echo "  (us for times, per second for throughput; /bare and ratio columns" \
	"are within one run: lower is better for times, higher for throughput)"
