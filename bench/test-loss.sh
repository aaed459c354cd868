#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The throughput part's loss accounting (issue 46, item 3), with real
# losses: --no-lock makes one row a locker that takes no lock at all.
#  1. the peer's row without a lock: the bench names it, prints its lost
#     increments (the row's "lost" column, a "!" line, the summary line
#     and the CSV's liblockfile_lost column), and exits 0;
#  2. pidlock's own row without a lock: the bench names pidlock and
#     exits 1.
# Short points (0.05 s, 1, 4 and 16 processes): about 2 s in all.  No
# figure is judged, only who is said to have lost and the exit status.
set -u

top=$(pwd)
BENCH="$top/bench/bench"
[ -x "$BENCH" ] || { echo "test-loss: $BENCH not built"; exit 99; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-test-loss.XXXXXX") ||
	{ echo "test-loss: mktemp failed"; exit 99; }
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail=0
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); echo "not ok $n - $*"; fail=1; }
check() {	# description command...
	what=$1
	shift
	if "$@"; then ok "$what"; else notok "$what"; fi
}
# The sum of one CSV column (by its header's name) of throughput.csv.
column_sum() {	# dir name
	awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++)
		if ($i == name) c = i; next }
		c { s += $c } END { print c ? s : "none" }' "$1/throughput.csv"
}

bench() {	# case --no-lock-row
	mkdir -p "$WORK/$1/dir" "$WORK/$1/csv" || exit 99
	"$BENCH" --quick -s 0.05 -d "$WORK/$1/dir" --csv "$WORK/$1/csv" \
		--no-lock "$2" throughput >"$WORK/$1.out" 2>"$WORK/$1.err"
	echo $? >"$WORK/$1.rc"
	sed 's/^/# /' "$WORK/$1.out" "$WORK/$1.err"
}

# ---- 1. a peer that takes no lock ---------------------------------------
bench peer peer
rc=$(cat "$WORK/peer.rc")
check "a peer's loss does not fail the run (exit $rc)" [ "$rc" -eq 0 ]
check "the peer is named in the \"!\" line of a point" \
	grep -q '^  ! [0-9]* procs: none lost [1-9][0-9]* of ' "$WORK/peer.out"
check "the summary line names the peer and its loss" \
	grep -q '^  lost increments: none lost [1-9][0-9]* at .*a peer' \
	"$WORK/peer.out"
lost=$(column_sum "$WORK/peer/csv" liblockfile_lost)
positive() { [ "$1" != none ] && [ "$1" -gt 0 ]; }
check "the CSV's liblockfile_lost column sums the peer's loss ($lost)" \
	positive "$lost"
own=$(column_sum "$WORK/peer/csv" pidlock_lost)
check "pidlock lost nothing beside it ($own)" [ "$own" = 0 ]
check "nothing says pidlock failed" \
	sh -c '! grep -q FAIL "$1" "$2"' sh "$WORK/peer.out" "$WORK/peer.err"

# ---- 2. pidlock's own row takes no lock ---------------------------------
bench ours pidlock
rc=$(cat "$WORK/ours.rc")
check "a loss of pidlock's own fails the run (exit $rc)" [ "$rc" -eq 1 ]
check "the failure names pidlock" \
	grep -q '^bench: FAIL: pidlock lost [1-9][0-9]* increments' \
	"$WORK/ours.err"
check "the point's line names pidlock" \
	grep -q "^  ! [0-9]* procs: pidlock lost [1-9][0-9]* of .*own lock" \
	"$WORK/ours.out"
check "the table was printed to its end" \
	grep -q '^  lost increments: pidlock lost' "$WORK/ours.out"

echo "1..$n"
exit $fail
