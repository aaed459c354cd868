#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A running daemon's hand-written pidfile, and a dotlockfile -p lock, are
# held by their process: pidlock -n refuses, --status and --json say
# held-pidfile and name it, the file is left as it was.  Once the process
# is gone, or when the pid belongs to a process started after the file
# was written (a reused pid), the file is taken over (doc/protocol.md,
# rule C).
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

# The old daemon, then its pidfile, written after it started.
setsid sleep 300 &
old=$!
track "$old"
sleep 0.05
echo "$old" > daemon.pid
sleep 0.3	# past rule C's grace
cp daemon.pid before
"$PIDLOCK" -n daemon.pid echo second started > out 2> err
rc=$?
[ $rc -eq 1 ] || fail "a second daemon started beside the first: exit $rc, $(cat out)"
[ ! -s out ] || fail "the command ran: $(cat out)"
grep -q "lock is busy, held by pid $old (a pidfile or dotlock, no kernel lock" err ||
	fail "busy message: $(cat err)"
cmp -s before daemon.pid || fail "the pidfile was changed: $(cat daemon.pid)"
pass "a running daemon's pidfile: no second instance, its pid named, the file unchanged"

"$PIDLOCK" --status daemon.pid > out
rc=$?
[ $rc -eq 1 ] && head -1 out | grep -q "^daemon.pid: held-pidfile (" &&
	grep -q "pid: *$old (running)" out || fail "--status: exit $rc: $(cat out)"
status_json daemon.pid
[ "$JRC" -eq 1 ] && [ "$(jv j 0 state)" = held-pidfile ] && [ "$(jv j 0 pid)" = "$old" ] ||
	fail "--status --json: $(cat j)"
pass "--status and --json: held-pidfile, exit 1"

# /proc with hidepid=2 hides other users' processes (ENOENT) while
# kill(2) finds them (EPERM): the start is unknown, and a live pid may be
# the writer.  A reader that is nobody, in a mount namespace of its own.
chmod 755 "$T"
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null &&
	unshare -m sh -c 'mount -t proc -o hidepid=2 proc /proc' 2>/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$PIDLOCK" --status "$T/daemon.pid" >/dev/null 2>&1; [ $? -eq 1 ]; then
	unshare -m sh -c 'mount -t proc -o hidepid=2 proc /proc &&
		exec setpriv --reuid=65534 --regid=65534 --clear-groups "$0" --status "$1"' \
		"$PIDLOCK" "$T/daemon.pid" > out 2>&1
	rc=$?
	[ $rc -eq 1 ] && head -1 out | grep -q "held-pidfile" ||
		fail "hidepid=2: exit $rc: $(cat out)"
	pass "under hidepid=2 a live pid whose start is hidden may be the writer"
else
	echo "# not tested: hidepid=2 (needs root, unshare -m, setpriv, and a build tree that nobody may run)"
fi

# A reused pid: the same live process, but the file written before it
# started (its mtime set back past the slack of 2 s).
touch -d '-1 minute' daemon.pid
"$PIDLOCK" --status daemon.pid > out
[ $? -eq 2 ] && head -1 out | grep -q "^daemon.pid: abandoned" || fail "reused pid: $(cat out)"
expect 0 "a reused pid's pidfile is taken over, its process left alone" -- \
	"$PIDLOCK" -n daemon.pid true
kill -0 "$old" || fail "the process the pidfile named is gone"

# The daemon ends without removing its pidfile: taken over at once.
echo "$old" > daemon.pid
sleep 0.3
kill "$old"
wait_until gone "$old"
expect 0 "the pidfile of a daemon that is gone is taken over" -- \
	"$PIDLOCK" -n daemon.pid true

# liblockfile: dotlockfile -p runs a command under its dotlock.
if command -v dotlockfile >/dev/null; then
	# It holds until told (touch d.go), however slow the machine.
	bg_peer dotlockfile -p -r 0 d.lock sh -c "$SH_WAIT_FOR"'
		wait_for d.go; : > d.left'
	dl=$LAST
	wait_until test -s d.lock
	sleep 0.3
	"$PIDLOCK" -n d.lock true 2> err
	rc=$?
	[ $rc -eq 1 ] && grep -q "held by pid $dl (a pidfile or dotlock" err ||
		fail "dotlock: exit $rc: $(cat err)"
	pass "a live dotlockfile -p lock is busy and names dotlockfile"
	# The waiter says that it waits; its command runs after the holder's.
	"$PIDLOCK" -v -w 20 d.lock sh -c 'test -e d.left' 2> err &
	waiter=$!
	track "$waiter"
	wait_until grep -q "waiting for pid $dl" err
	touch d.go
	wait "$waiter" || fail "the waiter: exit status $?: $(cat err)"
	pass "a waiting pidlock gets the lock when dotlockfile lets go"
else
	fail "dotlockfile(1) is not installed (liblockfile-bin)"
fi
done_testing
