#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# --check and --lease (issue 38): pidlock asks, while its command runs,
# whether the lock is still its own; once it is not, the command gets
# TERM and pidlock exits 75, leaving the file to the other holder.  Two
# bindfs mounts of one directory are two clients whose kernel locks do
# not see each other, as two hosts' on a file server that has given one
# host's lock to the other; a stopped bindfs daemon is a server that does
# not answer.  Needs root, bindfs and /dev/fuse (else skipped, 77); runs
# in a mount namespace of its own, so that no mount outlives it.
if [ -z "${PIDLOCK_CHECK_NS:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (FUSE mounts)"; exit 77; }
	command -v bindfs >/dev/null || { echo "SKIP: bindfs not installed"; exit 77; }
	[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
	PIDLOCK_CHECK_NS=1 exec unshare -m --propagation private "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

# The options: each needs a positive time, and a process to ask.
expect 64 "--check 0 is refused" -- "$PIDLOCK" --check 0 x.lock true
expect 64 "--lease abc is refused" -- "$PIDLOCK" --lease abc x.lock true
expect 64 "--check with -F is refused (nobody would ask)" -- \
	"$PIDLOCK" -F --check 1 x.lock true

# A lock on a local file system stays ours: the command runs to its end.
expect 0 "--check on a local file system: the command's own status" -- \
	"$PIDLOCK" --check 0.05 --lease 1 x.lock sh -c 'sleep 0.4'
[ ! -e x.lock ] || fail "the file was left after a normal release"

mkdir src a b
bindfs -f src a & DA=$!
bindfs -f src b & DB=$!
track "$DA"; track "$DB"
mounted() { [ "$(stat -c %d "$1")" != "$(stat -c %d src)" ]; }
wait_until mounted a
wait_until mounted b

# The other client takes the file in place: its flock on b's side, its
# record written over ours.  pidlock, on a, must find the record not its
# own, stop its command, and leave the file as the other holder wrote it.
start_bg --check 0.1 a/x.lock sh -c 'echo $$ > cmd.pid; exec sleep 30'
holder=$LAST
wait_until test -s cmd.pid
wait_until test -s src/x.lock
bg_peer flock -n b/x.lock sh -c \
	'printf "pid=%s\ntimestamp=%s\ntag=other\n" $$ "$(date +%s)" > b/x.lock; exec sleep 30'
other=$LAST
wait_until grep -q tag=other src/x.lock
wait "$holder"
rc=$?
[ "$rc" -eq 75 ] || fail "pidlock exited $rc when the lock was taken away, not 75"
gone "$(cat cmd.pid)" || fail "the command still runs after the lock was lost"
grep -q tag=other src/x.lock || fail "the other holder's record was changed: $(cat src/x.lock)"
pass "another client's takeover: the command got TERM, exit 75, its record kept"
kill -KILL -- "-$other" 2>/dev/null
rm -f src/x.lock cmd.pid

# A server that stops answering: with a 1 s lease, the lock counts as
# lost within the lease and a check's bound, while every call on the
# mount hangs.  Its release's close waits for the daemon (FUSE), so the
# daemon runs again before pidlock's exit is waited for.
start_bg --lease 1 a/y.lock sh -c 'echo $$ > cmd.pid; exec sleep 30'
holder=$LAST
wait_until test -s cmd.pid
cmd=$(cat cmd.pid)
kill -STOP "$DA"
t0=$(date +%s%N)
wait_until gone "$cmd"
ms=$((($(date +%s%N) - t0) / 1000000))
kill -CONT "$DA"
wait "$holder"
rc=$?
[ "$rc" -eq 75 ] || fail "pidlock exited $rc after its lease lapsed, not 75"
[ "$ms" -lt 3000 ] || fail "the lease of 1 s ended the command after $ms ms"
pass "an unanswering server: the lease lapsed, the command got TERM after $ms ms, exit 75"

# take_away LOCK: another client (b) takes the lock in place and writes
# its record; pidlock on a must find it.  The peer's group is in $other.
take_away() {
	bg_peer flock -n "b/$1" sh -c \
		'printf "pid=%s\ntimestamp=%s\ntag=other\n" $$ "$(date +%s)" > "b/$0"; exec sleep 30' "$1"
	other=$LAST
}

# lose_lock LOCK FILE...: once each FILE is written (the command and its
# children are up) and the record is on the server, another client takes
# LOCK away; waits for pidlock (the last start_bg), and sets rc and ms,
# from the takeover to pidlock's exit.
lose_lock() {
	holder=$LAST lock=$1
	shift
	for f in "$@"; do wait_until test -s "$f"; done
	wait_until test -s "src/$lock"
	take_away "$lock"
	t0=$(date +%s%N)
	wait "$holder"
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
}

# A script with children: one in the background, one that left the
# process group and session with setsid.  Once the lock is lost all
# three are stopped, not only the script.
start_bg --check 0.1 a/j.lock sh -c \
	'sleep 300 & echo $! > bg.pid; setsid sleep 300 & echo $! > sid.pid
	 echo $$ > cmd.pid; wait'
lose_lock j.lock cmd.pid sid.pid bg.pid
[ "$rc" -eq 75 ] || fail "pidlock exited $rc when the lock was taken away, not 75"
for f in cmd bg sid; do
	gone "$(cat $f.pid)" || fail "the $f process still runs after the lock was lost"
done
pass "a lost lock stops the script, its background child and its setsid child ($ms ms)"
kill -KILL -- "-$other" 2>/dev/null
rm -f src/j.lock ./*.pid

# A command that ignores TERM, and its child, which inherits that: KILL
# once the grace (--kill-after 1) has run out.
start_bg --check 0.1 --kill-after 1 a/k.lock sh -c \
	'trap "" TERM; sleep 300 & echo $! > bg.pid; echo $$ > cmd.pid
	 i=0; while [ $i -lt 30 ]; do sleep 1; i=$((i + 1)); done'
lose_lock k.lock cmd.pid bg.pid
[ "$rc" -eq 75 ] || fail "pidlock exited $rc with a TERM-ignoring command, not 75"
gone "$(cat cmd.pid)" || fail "the TERM-ignoring command still runs"
gone "$(cat bg.pid)" || fail "its TERM-ignoring child still runs"
[ "$ms" -ge 900 ] || fail "KILL came after $ms ms, before the grace of 1 s"
# A bound for a loaded machine; without KILL the command ran its 30 s.
[ "$ms" -lt 15000 ] || fail "the command ran on for $ms ms after the loss"
pass "a TERM-ignoring command and its child: KILL after the grace ($ms ms), exit 75"
kill -KILL -- "-$other" 2>/dev/null
rm -f src/k.lock ./*.pid

expect 64 "--kill-after without --check or --lease is refused" -- \
	"$PIDLOCK" --kill-after 1 x.lock true

fusermount3 -u a; fusermount3 -u b
done_testing
