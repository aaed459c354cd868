#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# examples/epoll-locks: two locks and a timer in one epoll loop
# (pidlock_acquire_async(3)).  It takes both locks once their holders,
# pidlock(1) and flock(1), let go, ticking meanwhile; and gives up at its
# deadline while one stays held.
. "$(dirname "$0")/lib.sh"
EX=${EX:-$PWD/examples/epoll-locks}
cd "$T" || exit 99
command -v flock >/dev/null || fail "flock(1) is not installed"

: > b.lock
"$PIDLOCK" a.lock sleep 0.6 &
flock -n b.lock sleep 1.2 &
sleep 0.2
start=$(date +%s%N)
"$EX" a.lock b.lock 10 > out
rc=$?
took=$(( ($(date +%s%N) - start) / 1000000 ))
wait
[ $rc -eq 0 ] || fail "exit $rc: $(cat out)"
grep -q "^holding a.lock" out && grep -q "^holding b.lock" out ||
	fail "did not report both locks: $(cat out)"
grep -q "^tick 1: still waiting" out || fail "the timer did not tick: $(cat out)"
# Woken by the releases, long before its 10 s deadline.
[ "$took" -lt 5000 ] || fail "took $took ms"
[ "$(sed -n 1p out | cut -c1-4)" = tick ] || fail "held before the holders let go"
pass "both locks taken after their holders, the timer ticking meanwhile"

"$PIDLOCK" a.lock sleep 3 &
holder=$!
sleep 0.2
"$EX" a.lock b.lock 1 > out
rc=$?
kill "$holder"; wait
[ $rc -eq 1 ] && grep -q "^gave up after 1 s" out || fail "deadline: exit $rc: $(cat out)"
[ ! -e b.lock ] || [ "$(cat b.lock)" = "" ] || grep -q keep=1 b.lock ||
	fail "b.lock left held: $(cat b.lock)"
pass "gives up at its deadline, and lets go of what it took"
done_testing
