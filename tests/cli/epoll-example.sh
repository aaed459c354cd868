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

# The holders let go when told (a file appears), not after a set time: on
# a loaded machine a timed hold could end before the loop even started.
: > b.lock
"$PIDLOCK" a.lock sh -c 'while [ ! -e go-a ]; do sleep 0.02; done' &
# Blocking, not -n: the probe below takes the lock for an instant, and a
# holder started with -n that came at that instant would just give up.
flock b.lock sh -c 'while [ ! -e go-b ]; do sleep 0.02; done' &
wait_until flock_busy a.lock
wait_until flock_busy b.lock
"$EX" a.lock b.lock 30 > out &
ex=$!
wait_until grep -q "^tick 1: still waiting" out
grep -q "^holding" out && fail "took a lock from a holder: $(cat out)"
touch go-a
wait_until grep -q "^holding a.lock" out
grep -q "^holding b.lock" out && fail "took b.lock from its holder: $(cat out)"
touch go-b
wait "$ex"
rc=$?
wait
[ $rc -eq 0 ] || fail "exit $rc: $(cat out)"
grep -q "^holding a.lock" out && grep -q "^holding b.lock" out ||
	fail "did not report both locks: $(cat out)"
pass "both locks taken after their holders, the timer ticking meanwhile"

rm -f go-a
"$PIDLOCK" a.lock sh -c 'while [ ! -e go-a ]; do sleep 0.02; done' &
wait_until flock_busy a.lock
"$EX" a.lock b.lock 1 > out
rc=$?
touch go-a; wait
[ $rc -eq 1 ] && grep -q "^gave up after 1 s" out || fail "deadline: exit $rc: $(cat out)"
[ ! -e b.lock ] || [ "$(cat b.lock)" = "" ] || grep -q keep=1 b.lock ||
	fail "b.lock left held: $(cat b.lock)"
pass "gives up at its deadline, and lets go of what it took"
done_testing
