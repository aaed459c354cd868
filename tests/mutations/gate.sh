#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make check-mutations: the release gate over tests/mutations/mutations.txt,
# run as MUTATION_JOBS copies of run.sh at once, each with a share of the
# table, its own scratch tree and its own result file.
#
# Why it may run fewer tests than run.sh alone and still prove the same:
#  - each mutation runs only the programs that its expect: line names
#    (MUTATION_TESTS=expect), and of those only the tests it names
#    (MUTATION_CHECK_K, MUTATION_PYTEST_K); one that they do not catch
#    by its guard is
#    run against the whole `make check` before it is called MISSED or
#    caught-elsewhere (run.sh MUTATION_ESCALATE), so a short list never
#    makes a survivor;
#  - the workers build first, then all run their baselines at once (run.sh
#    MUTATION_BARRIER): a test that fails on the unmutated tree under the
#    load the mutants will see stops the gate, with its name, since a
#    failure of it would prove nothing about a mutant;
#  - a catch is confirmed: the catching test's program runs again on the
#    mutant and the same test must fail (run.sh MUTATION_CONFIRM), so a
#    test that failed by chance under load cannot pass a mutation.
#
# Environment:
#   MUTATIONS         ids to run (default: the whole table)
#   MUTATION_JOBS     workers (default 2); `make check-mutations-serial`
#                     is run.sh alone, as before the gate
#   MUTATION_TESTS    passed to run.sh (default "expect")
#   MUTATION_TABLE    the table (default: mutations.txt here)
#   MUTATION_PREVIOUS a result file of an earlier gate (or of run.sh's
#                     MUTATION_RESULTS): its seconds split the work
#   MUTATION_RESULTS  where to write the final table: ID, RESULT,
#                     catching test, seconds ("12s"), FILE, and "all" for
#                     a mutation that needed the whole suite, by tabs
#   MUTATION_DIR      the gate's scratch directory (workers w1, w2, ...
#                     under it; removed unless KEEP_MUTATION_DIR=1)
#   MUTATION_TIMEOUT  seconds for one test run of a worker (default 1200:
#                     the baseline runs the Python suite whole, beside
#                     the other workers; one that this cuts fails)
#   and run.sh's PYTHON.
set -u

here=$(cd "$(dirname "$0")" && pwd)
table=${MUTATION_TABLE:-$here/mutations.txt}
apply="perl $here/apply.pl $table"
njobs=${MUTATION_JOBS:-2}
start=$(date +%s)

die() { echo "check-mutations: $*" >&2; exit 2; }

case $njobs in ''|*[!0-9]*|0) die "MUTATION_JOBS must be a number > 0" ;; esac
list=$($apply list) || die "cannot read $table"
ids=${MUTATIONS:-$(echo "$list" | cut -f1)}
for id in $ids; do
	echo "$list" | awk -F'\t' -v id="$id" '$1 == id { f = 1 } END { exit !f }' ||
		die "no mutation $id in $table"
done

if [ -n "${MUTATION_DIR:-}" ]; then
	work=$MUTATION_DIR
	rm -rf "$work" && mkdir -p "$work" || die "cannot make $work"
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-gate.XXXXXX") || die "mktemp failed"
fi
mkdir "$work/barrier" || die "cannot make $work/barrier"

# The workers' subshells, and everything under them (run.sh's make and
# tests run under timeout(1), in a process group of their own: a group
# kill would miss them).  The tree is listed before any is killed, while
# each child still has its parent.
pids=
descendants() { for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done; }
stop_workers() {
	all=$(for p in $pids; do echo "$p"; descendants "$p"; done)
	# shellcheck disable=SC2086
	[ -z "$all" ] || kill $all 2>/dev/null
}
cleanup() {
	stop_workers
	[ "${KEEP_MUTATION_DIR:-0}" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The expected seconds of each id: an earlier run's, else a guess from
# its expect: line (a Check program some 40 s under load, the Python
# suite two minutes, "*" every program).  Only the split uses them.
prev=${MUTATION_PREVIOUS:-/dev/null}
[ -r "$prev" ] || die "cannot read MUTATION_PREVIOUS $prev"
i=0
for id in $ids; do
	i=$((i + 1))
	echo "$list" | awk -F'\t' -v id="$id" -v n="$i" '$1 == id { print n "\t" $0 }'
done | awk -F'\t' -v prev="$prev" '
	BEGIN {
		while ((getline l < prev) > 0) {
			k = split(l, f, "\t")
			for (j = 2; j <= k; j++)
				if (f[j] ~ /^[0-9]+s$/) { secs[f[1]] = f[j] + 0; break }
		}
	}
	{
		if ($2 in secs) c = secs[$2]
		else if ($3 ~ /^python\//) c = 120
		else if ($4 == "*") c = 300
		else c = 40 * split($4, w, " ")
		print $1 "\t" $2 "\t" c
	}' >"$work/cost"

# Longest first, each to the worker with the least expected work so far
# (a share ends when its worker has run it: the longest ones last would
# leave one worker alone at the end).  Each share then runs in the
# table's order, so that mutations of one file follow each other and
# their rebuilds stay small.
[ "$njobs" -le "$(wc -l <"$work/cost")" ] || njobs=$(wc -l <"$work/cost")
sort -t '	' -k3,3nr -k1,1n "$work/cost" | awk -F'\t' -v n="$njobs" '
	{
		best = 1
		for (w = 2; w <= n; w++) if (load[w] < load[best]) best = w
		load[best] += $3
		print best "\t" $1 "\t" $2
	}
	END { for (w = 1; w <= n; w++) printf "check-mutations: worker %d: about %d s\n", w, load[w] > "/dev/stderr" }' |
	sort -t '	' -k1,1n -k2,2n >"$work/split"

echo "check-mutations: $(wc -l <"$work/cost") mutations, $njobs workers, scratch $work"
w=0
while [ "$w" -lt "$njobs" ]; do
	w=$((w + 1))
	share=$(awk -F'\t' -v w="$w" '$1 == w { printf "%s ", $3 }' "$work/split")
	(
		MUTATIONS=$share MUTATION_TESTS=${MUTATION_TESTS:-expect} \
		MUTATION_TABLE=$table MUTATION_DIR=$work/w$w \
		MUTATION_RESULTS=$work/w$w.results KEEP_MUTATION_DIR=1 \
		MUTATION_BARRIER=$work/barrier MUTATION_WORKERS=$njobs \
		MUTATION_ESCALATE=1 MUTATION_CONFIRM=1 MUTATION_PYTEST_K=1 \
		MUTATION_CHECK_K=1 \
		MUTATION_EXCLUDE="_check-under-load/ ${MUTATION_EXCLUDE:-}" \
		MUTATION_DEADLINE='' \
		MUTATION_TIMEOUT=${MUTATION_TIMEOUT:-1200} \
		sh "$here/run.sh" >"$work/w$w.log" 2>&1
		echo $? >"$work/w$w.rc"
	) &
	pids="$pids $!"
	echo "check-mutations: worker $w ($work/w$w.log): $share"
done

# Until every worker has ended: each result line as it comes (run.sh
# appends them to its scratch directory's results), and a worker that
# stops before its baseline ends the others' wait at the barrier.
failed=
for w in $(seq "$njobs"); do echo 0 >"$work/w$w.seen"; done
while :; do
	done_n=0
	for w in $(seq "$njobs"); do
		live=$work/w$w/results
		if [ -f "$live" ]; then
			# Whole lines only (wc counts newlines): one being
			# written waits for the next look.
			seen=$(cat "$work/w$w.seen")
			now=$(wc -l <"$live")
			[ "$now" -le "$seen" ] || sed -n "$((seen + 1)),${now}p" "$live" |
				awk -F'\t' -v w="$w" '{ printf "check-mutations: [w%s] %-7s %-18s %6s  %s%s\n", w, $1, $2, $4, ($7 == "" || $7 == "-" ? $6 : $7), ($8 == "all" ? " (whole suite)" : "") }'
			echo "$now" >"$work/w$w.seen"
		fi
		[ -f "$work/w$w.rc" ] || continue
		done_n=$((done_n + 1))
		rc=$(cat "$work/w$w.rc")
		if [ "$rc" -ge 2 ] && ! echo " $failed " | grep -q " $w "; then
			failed="$failed $w"
			: >"$work/barrier/abort"
		fi
	done
	[ -z "$failed" ] || break
	[ "$done_n" -lt "$njobs" ] || break
	sleep 2
done

if [ -n "$failed" ]; then
	# A baseline that fails names its tests (run.sh's message); the
	# others' work is then of no use: stop them.
	stop_workers
	for w in $failed; do
		echo "check-mutations: worker $w stopped ($work/w$w.log):" >&2
		grep '^check-mutations: ' "$work/w$w.log" | tail -n 3 | sed 's/^/  /' >&2
		if grep -q 'the unmutated suite fails' "$work/w$w.log"; then
			echo "check-mutations: the unmutated tree fails under the gate's load;" \
				"a failure of that test proves nothing about a mutant" >&2
		fi
	done
	KEEP_MUTATION_DIR=1
	echo "check-mutations: kept $work" >&2
	exit 2
fi

# The final table, in the order of MUTATIONS (or the table's).
results=${MUTATION_RESULTS:-$work/results}
cat "$work"/w*.results >"$work/all" 2>/dev/null
for id in $ids; do
	awk -F'\t' -v id="$id" '
		$1 == id { found = 1
			t = ($2 == "caught" || $2 == "UNCONFIRMED") ? $7 : $6
			sub(/ +$/, "", t)
			if (t == "") t = "-"
			print $1 "\t" $2 "\t" t "\t" $4 "\t" $3 "\t" ($8 == "all" ? "all" : "")
		}
		END { if (!found) print id "\tNOT-RUN\t-\t0s\t-\t" }' "$work/all"
done >"$work/final" || die "cannot write the results"
cp "$work/final" "$results" || die "cannot write $results"

echo
echo "check-mutations: the slowest ten"
sort -t '	' -k4,4nr "$work/final" | head -n 10 |
	awk -F'\t' '{ printf "  %-7s %6s  %-18s %s\n", $1, $4, $2, $3 }'

n=$(wc -l <"$work/final")
bad=$(awk -F'\t' '$2 != "caught"' "$work/final" | wc -l)
sum=$(awk -F'\t' '{ s += $4 } END { print s + 0 }' "$work/final")
echo
printf '%-7s %-18s %6s  %s\n' ID RESULT TIME "CATCHING TEST (or why not)"
awk -F'\t' '{ printf "%-7s %-18s %6s  %s%s\n", $1, $2, $4, $3, ($6 == "all" ? "  [whole suite]" : "") }' "$work/final"
echo
echo "check-mutations: $n mutations, $((n - bad)) caught and confirmed," \
	"$bad not; $njobs workers, $(($(date +%s) - start)) s" \
	"(mutations $sum s); table in $results"
[ "$bad" -eq 0 ]
