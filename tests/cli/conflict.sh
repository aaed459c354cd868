#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A busy lock: -n, -w, -E, -q, waiting by default, and -v.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

start_bg --tag holder x.lock sleep 30
holder=$LAST
wait_until held x.lock

# busy RC DESCRIPTION ARGS...: exit RC, and the command did not run.
busy() {
	local want=$1 what=$2 rc
	shift 2
	rm -f ran
	"$PIDLOCK" "$@" x.lock touch ran 2> err
	rc=$?
	[ "$rc" -eq "$want" ] || fail "$what: exit status $rc, expected $want"
	[ ! -e ran ] || fail "$what: the command ran although the lock is busy"
	pass "$what"
}

busy 1 "-n: busy exits 1" -n
grep -q "x.lock: lock is busy, held by pid $holder .*tag \"holder\"" err ||
	fail "-n message: $(cat err)"
pass "the conflict message names the holder and its tag"
busy 1 "--nonblock is -n" --nonblock
busy 42 "-E 42 changes the conflict status" -n -E 42
busy 0 "-E 0 is honoured" -n -E 0
busy 9 "--conflict-exit-code" -n --conflict-exit-code 9
busy 1 "-w 0 is -n" -w 0
busy 1 "-w 0.3 times out with 1" -w 0.3
grep -q "timed out" err || fail "-w message: $(cat err)"
pass "-w says it timed out"
busy 7 "-w with -E" --timeout 0.2 -E 7
busy 0 "-q exits 0 at once" -q
[ ! -s err ] || fail "-q printed: $(cat err)"
pass "-q prints nothing"
busy 0 "--quiet-conflict with -w waits, then exits 0" --quiet-conflict -w 0.2

# Waiting by default: the waiter runs as soon as the holder is gone.
start_bg -v x.lock sh -c 'echo waited > ran2' 2> verr
waiter=$LAST
start_bg -w 10 x.lock sh -c 'echo waited > ran3'
waiter2=$LAST
wait_until grep -q "x.lock: waiting for pid $holder holding .*tag \"holder\"" verr
pass "-v says it waits, and for whom"
sleep 0.3
[ ! -e ran2 ] && [ ! -e ran3 ] || fail "a waiter ran while the lock was held"
pass "waiters do not run while the lock is held"
kill -TERM "$holder"
wait "$holder"
[ $? -eq 143 ] || fail "the holder's command was not terminated"
wait "$waiter" || fail "the default waiter failed"
wait "$waiter2" || fail "the -w 10 waiter failed"
[ "$(cat ran2)" = waited ] && [ "$(cat ran3)" = waited ] ||
	fail "the waiters did not run"
pass "by default pidlock waits, and runs the command once the lock is free"
grep -q "x.lock: locked after [0-9]*\.[0-9]* s" verr || fail "-v: $(cat verr)"
grep -q "x.lock: released" verr || fail "-v: $(cat verr)"
pass "-v says when it got the lock and when it released it"
"$PIDLOCK" --verbose x.lock true 2> verr2
grep -q "locked after" verr2 || fail "--verbose: $(cat verr2)"
pass "--verbose is -v"
done_testing
