#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make check-mutations: remove each guarded rule from lib/ (or python/,
# or tools/) in turn and check that the suite turns red, and which test
# catches it.
#
# The source tree (tracked and untracked files, with their working
# changes) is copied to a scratch directory, configured and built once;
# then, for each mutation of mutations.txt: apply it to the scratch copy,
# rebuild (incremental), run the tests, record which failed, restore the
# file.  The source tree itself is never written.
#
# Environment:
#   MUTATIONS        ids to run (default: all in the table)
#   MUTATION_TESTS   test programs to run (default: every Check program
#                    of tests/ and tests/fault/, and the unlink race);
#                    "all" for the whole `make check`.  A mutation of a
#                    file under python/ runs the Python suite instead
#                    (tests/python/run.sh, with the PYTHON of the
#                    environment, else the one this tree was configured
#                    with), unless "all".  One under tools/ runs the
#                    tests/cli scripts that `expect:` lines name, unless
#                    MUTATION_TESTS is given.  "expect": for each
#                    mutation only the programs that its expect: line
#                    names (apply.pl tests: a Check test's program, the
#                    Python suite for a test_ function, tests/cli/X.sh
#                    for X.sh, every Check program for "*").
#   MUTATION_DIR     scratch directory (default: a new one under $TMPDIR,
#                    removed at the end unless KEEP_MUTATION_DIR=1)
#   MUTATION_TIMEOUT seconds for one mutation's test run (default 600)
#   MUTATION_DEADLINE a time (seconds since the epoch): the baseline then
#                    runs one program at a time, just before the first
#                    mutation that needs it, and notes its time; a
#                    mutation that would, by those times and the last
#                    rebuild's, end after the deadline is not run
#                    (NOT-RUN, no failure), and the next one is tried.
#                    The order of MUTATIONS is the order of priority.
#   MUTATION_RESULTS a file to write the result lines to: ID, RESULT,
#                    FILE, seconds ("12s"), rule, failing tests, by tabs
#                    (make check-mutations-sample reads them)
# For gate.sh (make check-mutations), which runs several of these at once;
# unset, nothing changes:
#   MUTATION_TABLE    the table (default: mutations.txt here); a changed
#                     copy tries the gate on a mutation made to fail
#   MUTATION_EXCLUDE  path prefixes not copied to the scratch tree (an
#                     untracked check-under-load tree: minutes to copy,
#                     and it changes under the copy)
#   MUTATION_BARRIER  a directory: the baseline starts when
#                     MUTATION_WORKERS runs have built (each notes
#                     ready.PID there), so each baseline runs under the
#                     others' load; DIR/abort ends the wait (exit 2)
#   MUTATION_ESCALATE 1: a mutation that its list does not catch by its
#                     guard is run again with the whole `make check`
#                     before it is called MISSED or caught-elsewhere
#   MUTATION_CONFIRM  1: a caught mutation is run again, the catching
#                     test's program only, and that test must fail again
#                     (else UNCONFIRMED); the result line gets two more
#                     fields: the catching test and "expect" or "all";
#                     and a baseline that MUTATION_TIMEOUT cuts fails
#   MUTATION_PYTEST_K 1: with MUTATION_TESTS=expect, the Python suite of a
#                     mutation runs only the test_ functions that its
#                     expect: line names (pytest -k), and a confirmation
#                     only the catching one: the whole suite takes minutes
#                     (the baseline and MUTATION_ESCALATE's run it whole)
#   MUTATION_CHECK_K  1: with MUTATION_TESTS=expect, each Check program of
#                     a mutation runs only the tests that its expect: line
#                     names (TU_TESTS, tests/testutil.h), and a
#                     confirmation only the catching one; not where the
#                     line names a whole program (test-lease, a tests/
#                     script that runs one), and never in the baseline or
#                     MUTATION_ESCALATE's run
set -u

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
table=${MUTATION_TABLE:-$here/mutations.txt}
apply="perl $here/apply.pl $table"
jobs=$(nproc 2>/dev/null || echo 2)
# Every Check program (found by its cases, so that a new suite is never
# left out), and the unlink race.
default_tests=$(cd "$src" && for f in tests/test-*.c tests/fault/test-*.c; do
	grep -qE 'START_TEST|tu_run_cases' "$f" && printf '%s ' "${f%.c}"
done)tests/torture/test-unlink-race
tests=${MUTATION_TESTS:-$default_tests}
py_tests=tests/python/run.sh
# The pidlock(1) scripts that the table names, for mutations of tools/
# (a bare name: python/run.sh and distributed/run.sh are not of them).
cli_tests=$(sed -n 's/^expect:[ 	]*//p' "$table" | tr ' \t' '\n\n' |
	sed 's,^tests/cli/,,' | grep '^[^/]*\.sh$' | sort -u | sed 's,^,tests/cli/,' | tr '\n' ' ')
cli_tests=${cli_tests% }
# The scratch tree's configure takes PYTHON from the environment; without
# one, the interpreter that this tree's own configure chose.
if [ -z "${PYTHON:-}" ] && [ -f "$src/Makefile" ]; then
	PYTHON=$(sed -n 's/^PYTHON = //p' "$src/Makefile")
	if [ -n "$PYTHON" ] && [ "$PYTHON" != : ]; then export PYTHON; else unset PYTHON; fi
fi
timeout=${MUTATION_TIMEOUT:-600}
deadline=${MUTATION_DEADLINE:-}

die() { echo "check-mutations: $*" >&2; exit 2; }

list=$($apply list) || die "cannot read $table"
ids=${MUTATIONS:-$(echo "$list" | cut -f1)}

if [ -n "${MUTATION_DIR:-}" ]; then
	work=$MUTATION_DIR
	rm -rf "$work" && mkdir -p "$work" || die "cannot make $work"
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-mutations.XXXXXX") ||
		die "mktemp failed"
fi
cleanup() { [ "${KEEP_MUTATION_DIR:-0}" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# The tests for a mutation of file $1 whose expect: line is $2.  A rule
# that only a shared file system shows (expect: distributed/run.sh) adds
# make check-distributed's run (root, GlusterFS; tests/distributed/README)
# to that mutation's list, and to no other: it takes a minute.
dist_test=tests/distributed/run.sh
tests_for() {
	if [ "$tests" = expect ]; then expect_tests "$1" "$3"; return; fi
	case $1 in
	python/*) [ "$tests" = all ] && echo all || echo "$py_tests" ;;
	tools/*) [ -n "${MUTATION_TESTS:-}" ] && echo "$tests" || echo "$cli_tests" ;;
	*) if [ "$tests" = all ]; then echo all; return; fi
	   case " $2 " in
	   *" distributed/run.sh "*) echo "$tests $dist_test" ;;
	   *) echo "$tests $(own_cli "$2")" ;;
	   esac ;;
	esac
}

# MUTATION_TESTS=expect: the programs that mutation $2's expect line
# names (of the scratch tree: the sources under test).  "*" is every
# Check program; a word that names no test (apply.pl shows it "?WORD")
# runs what a mutation of file $1 runs by default, with a warning.
expect_tests() {
	set -f	# "*" is a word here, not a pattern
	out=
	for t in $($apply tests "$2" "$work/src"); do
		case $t in
		'*') t=$default_tests ;;
		'?'*) echo "check-mutations: $2: no test ${t#?} in tests/," \
			"running the default list" >&2
		      t=$(tests=$default_tests; tests_for "$1" "") ;;
		esac
		out="$out $t"
	done
	echo "$out" | tr ' ' '\n' | awk 'NF && !seen[$0]++' | tr '\n' ' '
}

# The tests/cli scripts that expect line $1 names (a library rule that
# pidlock(1) shows), unless MUTATION_TESTS chose the tests.
own_cli() {
	[ -z "${MUTATION_TESTS:-}" ] || return 0
	echo "$1" | tr ' \t' '\n\n' | sed 's,^tests/cli/,,' |
		grep '^[^/]*\.sh$' | sed 's,^,tests/cli/,' | tr '\n' ' '
}

# The scratch tree is configured without -Werror: a removed line may
# leave an unused variable; that is not what is tested.  With the default
# test list only the library and those programs are rebuilt (relinking
# every program of `make all` and `make check` would double the time).
# build LIST, run_tests LOG LIST: LIST is a test list or "all".
build() {
	if [ "$1" = all ]; then
		make -j"$jobs"
	else
		extra=
		case " $1 " in *" $py_tests "*) extra=tests/python/layout ;; esac
		case " $1 " in *" tests/cli/"*) extra="$extra tools/pidlock" ;; esac
		case " $1 " in *" $dist_test "*) extra="$extra tests/distributed/dlock tools/pidlock" ;; esac
		# shellcheck disable=SC2086
		make -j"$jobs" lib/libpidlock.la tests/fault/libfaultshim.la \
			$extra $1
	fi
}

run_tests() {
	# MUTATION_PYTEST_K: $pyk, the -k expression of this run, if any;
	# MUTATION_CHECK_K: $tuk, the Check tests of this run, if any.
	if [ -n "${pyk:-}" ]; then
		PYTEST_ADDOPTS="${PYTEST_ADDOPTS:-} -k '$pyk'" TU_TESTS="${tuk:-}" \
			run_tests_ "$@"
	else
		TU_TESTS="${tuk:-}" run_tests_ "$@"
	fi
}

# MUTATION_CHECK_K: the Check test names of an expect: line, or nothing
# where it names a whole program (a Check program, "*", a tests/test-*.sh
# that runs one); a pidlock(1) or Python script is run whole either way.
check_names() {
	echo "$1" | awk '{
		for (i = 1; i <= NF; i++) {
			t = $i
			if (t ~ /^[A-Za-z_][A-Za-z0-9_]*$/)
				names = names t " "
			else if (t !~ /\.sh$/ || t ~ /(^|\/)test-[^\/]*\.sh$/)
				whole = 1
		}
	} END { if (!whole) print names }'
}
run_tests_() {
	if [ "$2" = all ]; then
		timeout "$timeout" make -k -j"$jobs" check >"$1" 2>&1
		return
	fi
	rest=
	for t in $2; do [ "$t" = "$dist_test" ] || rest="$rest $t"; done
	# shellcheck disable=SC2086
	[ -z "$rest" ] || timeout "$timeout" make -k -j"$jobs" check-TESTS \
		TESTS="$rest" >"$1" 2>&1
	case " $2 " in *" $dist_test "*) run_dist ;; esac
}

# check-distributed's run is no member of TESTS (it needs root and
# GlusterFS): run it as the make target does, and note its result in a
# .trs of its own for failures().  A skip (77) is no failure.
run_dist() {
	timeout "$timeout" sh "$dist_test" >"$dist_test.log" 2>&1
	case $? in 0|77) res=PASS ;; *) res=FAIL ;; esac
	echo ":test-result: $res" >"$dist_test.trs"
}

start=$(date +%s)
echo "check-mutations: scratch tree $work/src"
mkdir -p "$work/src" "$work/orig"
(cd "$src" && git ls-files -z --cached --others --exclude-standard) \
	>"$work/files" 2>/dev/null || die "$src is not a git checkout"
for x in ${MUTATION_EXCLUDE:-}; do
	tr '\0' '\n' <"$work/files" | awk -v x="$x" 'index($0, x) != 1' |
		tr '\n' '\0' >"$work/files.new" && mv "$work/files.new" "$work/files"
done
(cd "$src" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh \
	<"$work/files" | xargs -0 cp --parents -t "$work/src") ||
	die "copying the tree failed"

# The baseline runs what the chosen mutations will run (with a deadline:
# only the library is built first, and each program's baseline waits for
# the first mutation that runs it).
base_tests=
[ -n "$deadline" ] || for id in $ids; do
	file=$(echo "$list" | awk -F'\t' -v id="$id" '$1 == id { print $2 }')
	exp=$(echo "$list" | awk -F'\t' -v id="$id" '$1 == id { print $3 }')
	for t in $(tests_for "$file" "$exp" "$id"); do
		case " $base_tests " in *" $t "*) ;; *) base_tests="$base_tests $t" ;; esac
	done
done
base_tests=${base_tests# }
case " $base_tests " in *" all "*) base_tests=all ;; esac

cd "$work/src" || die "no $work/src"
echo "check-mutations: configure and build (log: $work/build.log)"
{ autoreconf -fi && ./configure && build "$base_tests"; } >"$work/build.log" 2>&1 ||
	die "the unmutated scratch tree does not build, see $work/build.log"
echo "check-mutations: copied, configured and built in $(($(date +%s) - start)) s"

# "prog:test prog:test ..." of the failed tests of the last run.
failures() {
	for trs in $(find tests -name '*.trs' | sort); do
		t=${trs%.trs}
		grep -q '^:test-result: \(FAIL\|ERROR\)' "$trs" || continue
		names=$(sed -n 's/^[^:]*:[0-9]*:[FE]:[^:]*:\([^:]*\):.*/\1/p' \
			"$t.log" | sort -u)
		# pytest's summary: "FAILED tests/python/test_x.py::test_name[p] - ..."
		[ -n "$names" ] || names=$(sed -n \
			's/^\(FAILED\|ERROR\) [^ ]*::\([A-Za-z0-9_]*\).*/\2/p' \
			"$t.log" | sort -u)
		if [ -n "$names" ]; then
			for n in $names; do printf '%s:%s ' "${t#tests/}" "$n"; done
		else
			printf '%s ' "${t#tests/}"
		fi
	done
}

clean_results() { find tests -name '*.trs' -o -name '*.log' | \
	grep -v '^tests/.*/corpus' | xargs rm -f; rm -f test-suite.log; }

# baseline LOG LIST: LIST runs unmutated, and must pass.
baseline() {
	pyk='' tuk=''	# the baseline runs whole programs
	echo "check-mutations: baseline run of: $2"
	t_base=$(date +%s)
	clean_results
	run_tests "$1" "$2"
	base=$(failures)
	[ -z "$base" ] || die "the unmutated suite fails ($base); see $1"
	# MUTATION_CONFIRM (gate.sh): a program that MUTATION_TIMEOUT cut
	# has no .trs, and would pass here unseen.
	if [ "${MUTATION_CONFIRM:-0}" = 1 ] && [ "$2" != all ]; then
		cut=$(for t in $2; do [ -f "$t.trs" ] || printf '%s ' "$t"; done)
		[ -z "$cut" ] || die "the unmutated suite fails (${cut% } did not end in $timeout s); see $1"
	fi
	# A skipped Python suite (no pytest for configure's python3) would
	# show every python/ mutation as missed: say why instead.
	if [ -f "$py_tests.trs" ] && grep -q '^:test-result: SKIP' "$py_tests.trs"; then
		die "the Python suite is skipped ($(grep -h 'SKIP' "$py_tests.log" | head -n 1)); set PYTHON to a python3 with pytest"
	fi
	echo "check-mutations: baseline passed in $(($(date +%s) - t_base)) s"
}

# MUTATION_DEADLINE: the baseline of each program of LIST $1 that has
# none yet, one at a time, its seconds noted in $work/cost.
: >"$work/cost"
baseline_each() {
	build "$1" >"$work/build-baseline.log" 2>&1 ||
		die "the unmutated scratch tree does not build, see $work/build-baseline.log"
	for t in $1; do
		grep -q "^$t " "$work/cost" && continue
		t0=$(date +%s)
		baseline "$work/baseline-$(echo "$t" | tr / _).log" "$t"
		echo "$t $(($(date +%s) - t0))" >>"$work/cost"
	done
}
# The programs of LIST $1 without a baseline yet.
unknown() { for t in $1; do grep -q "^$t " "$work/cost" || echo "$t"; done; }

if [ -n "${MUTATION_BARRIER:-}" ]; then
	: >"$MUTATION_BARRIER/ready.$$" || die "cannot write $MUTATION_BARRIER"
	echo "check-mutations: waiting for ${MUTATION_WORKERS:-1} workers to build"
	while [ "$(find "$MUTATION_BARRIER" -name 'ready.*' | wc -l)" -lt "${MUTATION_WORKERS:-1}" ]; do
		[ ! -e "$MUTATION_BARRIER/abort" ] ||
			die "another worker stopped before its baseline"
		sleep 1
	done
fi
[ -n "$deadline" ] || baseline "$work/baseline.log" "$base_tests"

# MUTATION_DEADLINE: the seconds that a mutation running the programs
# $1 should take: its last rebuild's, and each program's in the baseline.
rebuild=15
estimate() {
	awk -v list=" $1 " -v sum="$rebuild" '
		index(list, " " $1 " ") { sum += $2; n++ }
		END { print sum + 60 * (split(list, a, " ") - n) }' "$work/cost"
}

# The status of the failures $caught for a mutation guarded by $expect,
# and $catcher: the first failing test that is its guard (any, for "*").
classify() {
	catcher=
	if [ -z "$caught" ]; then
		status=MISSED
	elif [ "$expect" = "*" ]; then
		status=caught
		catcher=${caught%% *}
	else
		status="caught-elsewhere"
		for w in $caught; do
			for e in $expect; do
				case $w in
				*":$e"|"$e"|*"/$e") [ -n "$catcher" ] || catcher=$w ;;
				esac
			done
		done
		[ -z "$catcher" ] || status=caught
	fi
}

results=$work/results
: >"$results"
bad=0
for id in $ids; do
	line=$(echo "$list" | awk -F'\t' -v id="$id" '$1 == id')
	[ -n "$line" ] || die "no mutation $id"
	file=$(echo "$line" | cut -f2)
	expect=$(echo "$line" | cut -f3)
	what=$(echo "$line" | cut -f4)
	mtests=$(tests_for "$file" "$expect" "$id")
	# One that would not end in time is not run, and the next is
	# tried: stopping at the first such one (a "*" mutation, every
	# Check program, early in the order) left a CI sample of one
	# mutation in 420 s.  A program without a baseline gets one first,
	# if that (a rebuild, and some 40 s a program: a guess) leaves time
	# to run it.
	if [ -n "$deadline" ]; then
		new=$(unknown "$mtests" | wc -l)
		est=$((2 * rebuild + 40 * new))
		fits=0
		if [ "$new" -eq 0 ] || [ $(($(date +%s) + est)) -le "$deadline" ]; then
			[ "$new" -eq 0 ] || baseline_each "$mtests"
			est=$(estimate "$mtests")
			[ $(($(date +%s) + est)) -gt "$deadline" ] || fits=1
		fi
		if [ "$fits" -eq 0 ]; then
			printf '%s\t%s\t%s\t%ss\t%s\t%s\n' "$id" NOT-RUN \
				"$file" 0 "$what" \
				"not run: would end after the deadline (about $est s)" \
				>>"$results"
			continue
		fi
	fi
	t0=$(date +%s)
	catcher='' how=expect pyk='' tuk=''
	[ "${MUTATION_CHECK_K:-0}" != 1 ] || [ "$tests" != expect ] ||
		tuk=$(check_names "$expect")
	# pytest's -k takes substrings: "test_x" runs test_x_more too, a
	# harmless surplus.
	[ "${MUTATION_PYTEST_K:-0}" != 1 ] || [ "$tests" != expect ] ||
		pyk=$(for e in $expect; do case $e in test_*) echo "$e" ;; esac; done |
			awk '{ printf "%s%s", (NR > 1 ? " or " : ""), $0 }')
	mkdir -p "$work/orig/$(dirname "$file")"
	cp -p "$file" "$work/orig/$file"
	if ! $apply apply "$id" "$work/src" 2>"$work/apply.err"; then
		status="NO-LONGER-APPLIES"
		caught=$(tr '\n' ' ' <"$work/apply.err")
	elif ! build "$mtests" >"$work/build-$id.log" 2>&1; then
		status="BUILD-FAILED"
		caught="see $work/build-$id.log"
	else
		rebuild=$(($(date +%s) - t0))
		clean_results
		run_tests "$work/check-$id.log" "$mtests"
		caught=$(failures)
		classify
		how=expect
		# MUTATION_ESCALATE: a list that does not catch it may be too
		# short (a guard that fails only beside the rest of the suite,
		# or "*"): the whole make check decides.  The checks that read
		# the sources, not run them (the table itself fails on every
		# mutated tree), catch nothing here.
		if [ "${MUTATION_ESCALATE:-0}" = 1 ] && [ "$status" != caught ] &&
		    [ "$mtests" != all ]; then
			how=all pyk='' tuk=''
			echo "check-mutations: $id: $status with its tests; the whole suite"
			if build all >>"$work/build-$id.log" 2>&1; then
				clean_results
				run_tests "$work/check-$id-all.log" all
				caught=$(for w in $(failures); do case ${w%%:*} in
					mutations/table.sh|docs.sh|check-calls.sh|check-man.sh|daemon/man-lint.sh) ;;
					*) printf '%s ' "$w" ;;
					esac; done)
				classify
			else
				status="BUILD-FAILED"
				caught="see $work/build-$id.log"
			fi
		fi
		# MUTATION_CONFIRM: a catch is one run; a test that failed by
		# chance (load, a timeout) would pass a mutation that nothing
		# guards.  The same test must fail again, its program alone.
		if [ "${MUTATION_CONFIRM:-0}" = 1 ] && [ "$status" = caught ]; then
			tuk=''
			case $catcher in
			python/run.sh:*) [ "${MUTATION_PYTEST_K:-0}" != 1 ] ||
				pyk=${catcher#*:} ;;
			*:*) [ "${MUTATION_CHECK_K:-0}" != 1 ] ||
				tuk=${catcher#*:} ;;
			esac
			clean_results
			run_tests "$work/confirm-$id.log" "tests/${catcher%%:*}"
			case " $(failures)" in
			*" $catcher "*) ;;
			*) status=UNCONFIRMED ;;
			esac
		fi
	fi
	cp -p "$work/orig/$file" "$file" && touch "$file"
	[ "$status" = caught ] || bad=$((bad + 1))
	# The guard first, then at most 6 others: S4-like mutations break all.
	case $status in caught*|MISSED) n=$(echo "$caught" | wc -w) ;; *) n=0 ;; esac
	shown=$(for w in $caught; do
		for e in $expect; do case $w in *":$e"|"$e") echo "$w" ;; esac; done
	done; for w in $caught; do echo "$w"; done)
	shown=$(echo "$shown" | awk 'NF && !seen[$0]++' | head -n 7 | tr '\n' ' ')
	[ "$n" -le 7 ] || shown="$shown(+$((n - 7)) more)"
	[ "$n" -gt 0 ] || shown=$caught
	if [ "${MUTATION_CONFIRM:-0}" = 1 ]; then
		printf '%s\t%s\t%s\t%ss\t%s\t%s\t%s\t%s\n' "$id" "$status" "$file" \
			"$(($(date +%s) - t0))" "$what" "$shown" "${catcher:--}" \
			"${how:-expect}" | tee -a "$results"
	else
		printf '%s\t%s\t%s\t%ss\t%s\t%s\n' "$id" "$status" "$file" \
			"$(($(date +%s) - t0))" "$what" "$shown" | tee -a "$results"
	fi
done

[ -z "${MUTATION_RESULTS:-}" ] || cp "$results" "$MUTATION_RESULTS" ||
	die "cannot write $MUTATION_RESULTS"
notrun=$(grep -c '	NOT-RUN	' "$results")
echo
echo "check-mutations: $(($(wc -l <"$results") - notrun)) mutations, $bad not caught by their guard, $notrun not run (deadline), $(($(date +%s) - start)) s"
printf '%-4s %-18s %-24s %5s  %s\n' ID RESULT FILE TIME "RULE REMOVED / FAILING TESTS"
while IFS='	' read -r id status file secs what caught; do
	[ "$status" != NOT-RUN ] || continue
	printf '%-4s %-18s %-24s %5s  %s\n' "$id" "$status" "$file" "$secs" "$what"
	printf '%54s %s\n' "" "$caught" | fold -s -w 160
done <"$results"
[ "$bad" -eq 0 ]
