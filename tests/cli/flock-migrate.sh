#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Scripts migrated from flock(1) one at a time: pidlock(1) and flock(1)
# on one path that pidlock made (issue 28).  pidlock's release keeps the
# file while somebody else is on it, so flock(1) never holds a removed
# file while the next pidlock makes a new one (pidlock(1), "FLOCK(1) ON
# THE SAME PATH").  And what pidlock(1) does with a file it did not make.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

FLOCK=${FLOCK:-flock}
command -v "$FLOCK" >/dev/null || fail "flock(1) is not installed"

ino() { stat -c %i "$1"; }
# Somebody blocked in the kernel on inode $1.
blocked_on() { grep -q -- "-> .*:$1 " /proc/locks; }

# 1. The issue's commands: pidlock holds, flock(1) waits, pidlock -n.
# Each holder holds until told (touch go.*), however slow the machine.
start_bg m.lock sh -c "$SH_WAIT_FOR; wait_for go.holder"
holder=$LAST
wait_until held m.lock
i=$(ino m.lock)
bg_peer "$FLOCK" m.lock sh -c "$SH_WAIT_FOR; : > flock.ran; wait_for go.flock"
flock1=$LAST
wait_until blocked_on "$i"
touch go.holder
wait "$holder" || fail "the holding pidlock: exit status $?"
wait_until test -e flock.ran
[ -e m.lock ] && [ "$(ino m.lock)" = "$i" ] ||
	fail "the release removed the file flock(1) was blocked on"
pass "release with flock(1) blocked on the file keeps it"
grep -q '^keep=1$' m.lock && fail "kept for good after one waiter"
pass "kept this once: no keep=1"
expect 1 "pidlock -n while flock(1) holds the file pidlock made" -- \
	"$PIDLOCK" -n m.lock sh -c ': > second.ran'
[ -e second.ran ] && fail "two holders: the second pidlock ran"
touch go.flock
wait "$flock1" || fail "flock(1) and its command: exit status $?"
expect 0 "pidlock -n after flock(1)" -- "$PIDLOCK" -n m.lock true
[ -e m.lock ] && fail "a file nobody else is on is kept"
pass "with nobody else on it, the release removes the file"

# 2. flock(1) started from a shell's "9<": the file is open, and flock(1)
# not yet blocked, when pidlock lets go (the lease test sees the open).
start_bg d.lock sh -c "$SH_WAIT_FOR; wait_for go.holder2"
holder=$LAST
wait_until held d.lock
i=$(ino d.lock)
bg_peer sh -c "$SH_WAIT_FOR"'
	exec 9<d.lock || exit 90
	: > opened
	wait_for go.flock2
	'"$FLOCK"' 9 || exit 91
	: > fd.ran
	wait_for go.peer2'
peer=$LAST
wait_until test -e opened
touch go.holder2
wait "$holder" || fail "the holding pidlock: exit status $?"
[ -e d.lock ] && [ "$(ino d.lock)" = "$i" ] ||
	fail "the release removed a file a shell had open for flock(1)"
pass "release with the file open elsewhere keeps it"
touch go.flock2
wait_until test -e fd.ran
expect 1 "pidlock -n while flock(1) holds it through the shell's descriptor" -- \
	"$PIDLOCK" -n d.lock true
touch go.peer2
wait "$peer" || fail "the shell with flock(1) 9: exit status $?"

# 3. Files pidlock(1) did not make.  An empty one (flock(1)'s, touch's)
# is kept for good: flock(1) users may open it at any time.
: > e.lock
touch -d '-10 min' e.lock
i=$(ino e.lock)
expect 0 "pidlock on an empty file it did not make" -- "$PIDLOCK" e.lock true
[ "$(ino e.lock)" = "$i" ] && grep -q '^keep=1$' e.lock ||
	fail "an empty file taken over was not kept for good"
pass "an empty file taken over is kept, keep=1"
# A dead holder's pidfile: its writers take an absent file as free.
echo "$(dead_pid)" > p.lock
touch -d '-10 min' p.lock
expect 0 "pidlock on a dead daemon's pidfile" -- "$PIDLOCK" p.lock true
[ -e p.lock ] && fail "a pidfile taken over was kept"
pass "a pidfile taken over is removed on release"
done_testing
