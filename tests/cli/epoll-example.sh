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

# flock_busy FILE: somebody holds flock(2) on FILE (ours or flock(1)'s)
flock_busy() {
	[ -e "$1" ] && ! flock -n "$1" true
}

: > b.lock
"$PIDLOCK" a.lock sleep 0.8 &
# Blocking, not -n: the probe below takes the lock for an instant, and a
# holder started with -n that came at that instant would just give up.
flock b.lock sleep 1.5 &
wait_until flock_busy a.lock
wait_until flock_busy b.lock
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
# b.lock is held for 1.5 s: the timer ticks before the loop takes it.
tick=$(grep -n "^tick 1:" out | cut -d: -f1)
held_b=$(grep -n "^holding b.lock" out | cut -d: -f1)
[ "$tick" -lt "$held_b" ] || fail "b.lock taken before its holder let go: $(cat out)"
pass "both locks taken after their holders, the timer ticking meanwhile"

"$PIDLOCK" a.lock sleep 3 &
holder=$!
wait_until flock_busy a.lock
"$EX" a.lock b.lock 1 > out
rc=$?
kill "$holder"; wait
[ $rc -eq 1 ] && grep -q "^gave up after 1 s" out || fail "deadline: exit $rc: $(cat out)"
[ ! -e b.lock ] || [ "$(cat b.lock)" = "" ] || grep -q keep=1 b.lock ||
	fail "b.lock left held: $(cat b.lock)"
pass "gives up at its deadline, and lets go of what it took"
done_testing
