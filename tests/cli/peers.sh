#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# pidlock against real peers, both ways: flock(1), with-lock-ex(1), and a
# spec-only locker made with the shell's noclobber create.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

for p in flock with-lock-ex; do
	command -v $p >/dev/null || fail "$p is not installed"
done

# pidlock holds: every peer is kept out.
start_bg x.lock sleep 30
pl=$LAST
wait_until held x.lock
expect 1 "pidlock holds: flock -n fails" -- flock -n x.lock true
expect 1 "pidlock holds: with-lock-ex -f fails" -- \
	sh -c 'with-lock-ex -f x.lock true; [ $? -ne 0 ] && exit 1'
( set -C; echo "pid=$$" > x.lock ) 2>/dev/null && fail "noclobber create succeeded"
pass "pidlock holds: a spec-only create fails"
[ "$(field x.lock pid)" = "$pl" ] || fail "a peer changed the file"
kill -TERM "$pl"
wait "$pl"

# --flock-only lets fcntl lockers in, and keeps flock lockers out.
start_bg --flock-only x.lock sleep 30
pl=$LAST
wait_until held x.lock
expect 1 "--flock-only: flock -n fails" -- flock -n x.lock true
expect 0 "--flock-only: with-lock-ex -f gets in" -- \
	with-lock-ex -f x.lock true
kill -TERM "$pl"
wait "$pl"
rm -f x.lock

# --fcntl-only: the other way round.
start_bg --fcntl-only x.lock sleep 30
pl=$LAST
wait_until held x.lock
expect 0 "--fcntl-only: flock -n gets in" -- flock -n x.lock true
expect 1 "--fcntl-only: with-lock-ex -f fails" -- \
	sh -c 'with-lock-ex -f x.lock true; [ $? -ne 0 ] && exit 1'
kill -TERM "$pl"
wait "$pl"
rm -f x.lock

# Peers hold: pidlock waits or fails.
# peer_holds NAME PID [OPTION...]: while the peer NAME (process group PID)
# holds x.lock, pidlock -n fails and pidlock OPTION... waits; it runs
# once the peer is killed.
peer_holds() {
	local name=$1 peer=$2 waiter
	shift 2
	wait_until held x.lock
	rm -f ran
	expect 1 "$name holds: pidlock -n fails" -- "$PIDLOCK" -n x.lock touch ran
	"$PIDLOCK" "$@" x.lock touch ran &
	waiter=$!
	track $waiter
	sleep 0.3
	[ ! -e ran ] || fail "pidlock ran while $name held the lock"
	kill -KILL -- "-$peer"
	wait "$waiter" || fail "pidlock did not get the lock after $name"
	[ -e ran ] || fail "the command did not run"
	pass "$name holds: pidlock waits, then runs"
	rm -f x.lock ran
}
bg_peer flock x.lock sleep 30
peer_holds "flock(1)" "$LAST"
bg_peer with-lock-ex -w x.lock sleep 30
peer_holds with-lock-ex "$LAST" -w 10

spec_lock x.lock $$ "$(date +%s)"
expect 1 "a spec-only holder: pidlock -n fails" -- "$PIDLOCK" -n x.lock touch ran
expect 1 "a spec-only holder: pidlock -w 0.3 times out" -- \
	"$PIDLOCK" -w 0.3 x.lock touch ran
[ ! -e ran ] || fail "pidlock ran under a spec-only holder"
"$PIDLOCK" -w 10 x.lock touch ran &
waiter=$!
track $waiter
sleep 0.2
rm x.lock	# the spec-only holder releases
wait "$waiter" || fail "pidlock did not get the lock after the spec-only holder"
[ -e ran ] || fail "the command did not run"
pass "a spec-only holder: pidlock waits for its release, then runs"
[ "$(field x.lock pid)" = "" ] || fail "lock file left"
done_testing
