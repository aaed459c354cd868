#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make check-mutations-sample: CI's share of make check-mutations, in
# about ten minutes on two cores (the whole table: most of an hour).
#
# It runs, through run.sh (MUTATION_TESTS=expect: each mutation rebuilds
# the library and runs only the programs that its expect: line names):
#  - every entry of mutations.txt whose file changed since the last
#    release (the commit in ci/last-release), and every entry added or
#    changed in the table since then;
#  - MUTATION_SAMPLE_RANDOM (3) more of the others, at random;
# both in an order shuffled with the current commit's id as the seed
# (apply.pl pick), so that a commit picks the same on every machine.
# When the release's commit is not in this clone (a shallow clone), the
# whole table, shuffled the same way, is the list.  A time budget
# bounds the run: a mutation that would, by the baseline's times, end
# after MUTATION_SAMPLE_BUDGET seconds from the start (420, building
# included) is not run, and the next one is tried; the count is said.
#
# It fails when a mutation that ran was not caught by the test that its
# expect: line names, no longer applies, or does not build; and when the
# budget left time for none.
#
# Environment:
#   MUTATION_BASE            the commit to compare with (default: the
#                            one in ci/last-release)
#   MUTATION_SEED            the seed (default: git rev-parse HEAD)
#   MUTATION_SAMPLE_RANDOM   entries picked at random (default 3)
#   MUTATION_SAMPLE_BUDGET   seconds (default 420: with one mutation's
#                            MUTATION_TIMEOUT of 180 s, ten minutes at most)
#   MUTATION_TIMEOUT         seconds for one mutation's tests (180)
#   and run.sh's MUTATION_DIR, KEEP_MUTATION_DIR, PYTHON.
set -u

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
table=$here/mutations.txt
apply="perl $here/apply.pl $table"
budget=${MUTATION_SAMPLE_BUDGET:-420}
nrandom=${MUTATION_SAMPLE_RANDOM:-3}
start=$(date +%s)

die() { echo "check-mutations-sample: $*" >&2; exit 2; }

cd "$src" || die "no $src"
head=$(git rev-parse HEAD 2>/dev/null) || die "$src is not a git checkout"
seed=${MUTATION_SEED:-$head}
if [ -n "${MUTATION_BASE:-}" ]; then
	base=$MUTATION_BASE
	relname="MUTATION_BASE"
else
	[ -r ci/last-release ] || die "no ci/last-release"
	line=$(grep -v '^[[:space:]]*\(#\|$\)' ci/last-release | tail -n 1)
	[ "$(echo "$line" | wc -w)" -eq 2 ] ||
		die "ci/last-release: no line 'VERSION COMMIT'"
	relname=$(echo "$line" | awk '{ print $1 }')
	base=$(echo "$line" | awk '{ print $2 }')
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-sample.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# What changed since the release: its commit against this work tree
# (uncommitted changes count), and files that git does not know yet.
if git cat-file -e "$base^{commit}" 2>/dev/null; then
	{ git diff --name-only "$base" -- &&
	  git ls-files --others --exclude-standard; } >"$tmp/changed" ||
		die "git diff $base failed"
	git show "$base:tests/mutations/mutations.txt" >"$tmp/old" 2>/dev/null ||
		: >"$tmp/old"
	changed=$tmp/changed
	echo "check-mutations-sample: files changed since $relname" \
		"($(git rev-parse --short "$base")): $(wc -l <"$tmp/changed")"
else
	changed=-
	: >"$tmp/old"
	echo "check-mutations-sample: $relname's commit $base is not in this" \
		"clone (shallow?): a random sample of the whole table instead"
fi
$apply pick "$seed" "$nrandom" "$tmp/old" "$changed" >"$tmp/pick" ||
	die "cannot pick from $table"
nchanged=$(grep -c '	changed$' "$tmp/pick")
echo "check-mutations-sample: seed $seed; $nchanged changed," \
	"$(grep -c '	random$' "$tmp/pick") at random; budget $budget s"

# MUTATION_PYTEST_K: a Python mutation runs the tests its expect: line
# names, not the whole Python suite, which alone is near the timeout
# (PY29x8 was cut off at 180 s, its own test red in 10 s).
# MUTATION_CHECK_K: a Check program runs only the tests the line names,
# as the whole gate does (40 mutations took 874 s against 2,066 s; the
# gate's run of 2026-12-03 caught every entry so).
MUTATIONS=$(cut -f1 "$tmp/pick" | tr '\n' ' ') MUTATION_TESTS=expect \
	MUTATION_PYTEST_K=1 MUTATION_CHECK_K=1 \
	MUTATION_DEADLINE=$((start + budget)) \
	MUTATION_TIMEOUT=${MUTATION_TIMEOUT:-180} \
	MUTATION_RESULTS=$tmp/results \
	sh "$here/run.sh"
rc=$?
[ -f "$tmp/results" ] || die "run.sh stopped before the mutations ($rc)"

# One line an entry: ID, file, why picked, result, seconds; and a total.
echo
echo "check-mutations-sample: the sample"
printf '%-6s %-28s %-8s %-18s %5s\n' ID FILE PICKED RESULT TIME
awk -F'\t' -v picks="$tmp/pick" '
	BEGIN { while ((getline l < picks) > 0) { split(l, f, "\t"); why[f[1]] = f[3] } }
	{
		r = $2
		if (r == "caught") r = "caught"
		else if (r == "MISSED" || r == "caught-elsewhere") r = "NOT CAUGHT"
		else if (r == "NO-LONGER-APPLIES") r = "NO LONGER APPLIES"
		else if (r == "BUILD-FAILED") r = "DOES NOT BUILD"
		else if (r == "NOT-RUN") next
		printf "%-6s %-28s %-8s %-18s %5s\n", $1, $3, why[$1], r, $4
	}' "$tmp/results"
awk -F'\t' -v picks="$tmp/pick" -v secs="$(($(date +%s) - start))" '
	BEGIN { while ((getline l < picks) > 0) { split(l, f, "\t"); why[f[1]] = f[3] } }
	$2 == "NOT-RUN" { skip++; if (why[$1] == "changed") { cskip++; cut = cut " " $1 } next }
	{ ran++ }
	$2 == "caught" { ok++ }
	END {
		printf "check-mutations-sample: %d run, %d caught, %d not caught;", ran, ok, ran - ok
		printf " %d not run for the budget (%d of them changed); %d s\n", skip, cskip, secs
		if (cskip)
			printf "check-mutations-sample: changed, not run: make check-mutations MUTATIONS=\"%s\"\n", substr(cut, 2)
	}' "$tmp/results"
# A budget that leaves time for none proves nothing: that fails too.
if [ "$rc" -eq 0 ] && ! grep -qv '	NOT-RUN	' "$tmp/results"; then
	echo "check-mutations-sample: no mutation ran within $budget s" >&2
	exit 1
fi
exit $rc
