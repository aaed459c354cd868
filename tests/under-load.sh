#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make check-under-load: the suite on a busy machine, as a CI runner or
# a build server with neighbours runs it.  LOAD_TREES copies of the
# release tree (made by the rule from `make distdir`), each configured
# and built on its own, run `make -jLOAD_JOBS check` at the same time,
# beside LOAD_BUSY busy loops, LOAD_ROUNDS times.  A test that fails
# here waits for a time where it should wait for an event, or shares
# something with a second copy of itself (a fixed path, a name).
#
#   under-load.sh DIR SRC   DIR: an empty work directory; SRC: the tree
#
# Prints each round's time and the tests that failed in it, with the end
# of their logs; exits 1 if any test failed in any round.
set -u
dir=$(cd "$1" && pwd) || exit 99
src=$(cd "$2" && pwd) || exit 99
rounds=${LOAD_ROUNDS:-3}
busy=${LOAD_BUSY:-2}
trees=${LOAD_TREES:-2}
jobs=${LOAD_JOBS:-2}

say() { echo "under-load: $*"; }

# Configure and build each copy first, one after the other: the load is
# for the tests, not for the compiler.
i=1
while [ "$i" -le "$trees" ]; do
	cp -a "$src" "$dir/tree$i" || exit 99
	(cd "$dir/tree$i" && ./configure ${PYTHON:+PYTHON="$PYTHON"} \
		>configure.log 2>&1 && make -j"$jobs" >build.log 2>&1 &&
		make -j"$jobs" check TESTS= >>build.log 2>&1) ||
		{ say "tree $i did not build: see $dir/tree$i/*.log"; exit 99; }
	i=$((i + 1))
done

loops=
stop_loops() {
	for pid in $loops; do kill "$pid" 2>/dev/null; done
	for pid in $loops; do wait "$pid" 2>/dev/null; done
	loops=
}
trap 'stop_loops' EXIT
trap 'exit 130' INT TERM

failed=0
round=1
while [ "$round" -le "$rounds" ]; do
	n=0
	while [ "$n" -lt "$busy" ]; do
		sh -c 'while :; do :; done' &
		loops="$loops $!"
		n=$((n + 1))
	done
	touch "$dir/round$round.stamp"
	t0=$(date +%s)
	pids=
	i=1
	while [ "$i" -le "$trees" ]; do
		(cd "$dir/tree$i" && make -j"$jobs" check \
			>"$dir/round$round-tree$i.log" 2>&1) &
		pids="$pids $!"
		i=$((i + 1))
	done
	for pid in $pids; do wait "$pid"; done
	stop_loops
	t1=$(date +%s)
	bad=0
	i=1
	while [ "$i" -le "$trees" ]; do
		for trs in $(find "$dir/tree$i" -name '*.trs' -newer \
				"$dir/round$round.stamp" -exec \
				grep -l -E '^:test-result: (FAIL|ERROR)' {} +); do
			bad=$((bad + 1))
			say "round $round, tree $i: FAILED ${trs%.trs}"
			tail -n 40 "${trs%.trs}.log" | sed 's/^/    /'
		done
		i=$((i + 1))
	done
	# A round that ran no suite (a tree that would not start) proves
	# nothing: say so, and fail.
	i=1
	while [ "$i" -le "$trees" ]; do
		grep -q '^# TOTAL: *[1-9]' "$dir/round$round-tree$i.log" || {
			say "round $round, tree $i ran no tests:"
			tail -n 20 "$dir/round$round-tree$i.log"
			exit 99
		}
		i=$((i + 1))
	done
	totals=$(grep -h '^# \(PASS\|FAIL\|ERROR\|SKIP\)' \
		"$dir"/round"$round"-tree*.log | tr -s ' ' | tr '\n' ' ')
	say "round $round of $rounds: $((t1 - t0)) s, $bad failed" \
		"($trees trees, $busy busy loops; $totals)"
	failed=$((failed + bad))
	round=$((round + 1))
done
say "$failed failed in $rounds rounds"
[ "$failed" -eq 0 ]
