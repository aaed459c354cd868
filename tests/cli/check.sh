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

fusermount3 -u a; fusermount3 -u b
done_testing
