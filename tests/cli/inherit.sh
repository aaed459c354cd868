#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The command inherits the lock: it stays held after SIGKILL of pidlock
# while the command lives.  -o/--close keeps the descriptor from it.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

# has_lock_fd PID FILE: does PID have FILE's inode open?
has_lock_fd() {
	local ino fd
	ino=$(stat -c %d:%i "$2") || return 1
	for fd in /proc/"$1"/fd/*; do
		[ "$(stat -L -c %d:%i "$fd" 2>/dev/null)" = "$ino" ] && return 0
	done
	return 1
}

start_bg x.lock sh -c 'echo $$ > a.cmdpid; exec sleep 30'
pl=$LAST
wait_until test -s a.cmdpid
cmd=$(cat a.cmdpid)
has_lock_fd "$cmd" x.lock || fail "the command has no descriptor of the lock file"
pass "the command inherits the lock descriptor"
kill -KILL "$pl"
wait "$pl" 2>/dev/null
kill -0 "$cmd" || fail "the command died with pidlock"
expect 1 "the lock stays held after SIGKILL of pidlock" -- "$PIDLOCK" --status x.lock
status_json x.lock
[ "$(jv j 0 pid_alive)" = false ] || fail "pid_alive: $(cat j)"
[ "$(jv j 0 kernel_locks)" = '["flock", "fcntl"]' ] || fail "kernel locks: $(cat j)"
pass "status: the named pid is gone, the kernel locks are held"
rm -f ran
expect 1 "another pidlock cannot take it" -- "$PIDLOCK" -n x.lock touch ran
[ ! -e ran ] || fail "ran while the command holds the lock"
expect 1 "neither can flock(1)" -- flock -n x.lock true
kill -KILL "$cmd"
wait_until gone "$cmd"
expect 2 "once the command is gone, the file is abandoned" -- \
	"$PIDLOCK" --status x.lock
expect 0 "and the next locker takes it" -- "$PIDLOCK" -n x.lock touch ran
[ -e ran ] && [ ! -e x.lock ] || fail "the takeover did not run or did not clean up"

# -o: the lock ends with pidlock.
start_bg -o x.lock sh -c 'echo $$ > b.cmdpid; exec sleep 30'
pl=$LAST
wait_until test -s b.cmdpid
cmd=$(cat b.cmdpid)
held x.lock || fail "-o: not held while pidlock lives"
has_lock_fd "$cmd" x.lock && fail "-o: the command has the lock descriptor"
pass "-o: the command does not get the lock descriptor"
kill -KILL "$pl"
wait "$pl" 2>/dev/null
kill -0 "$cmd" || fail "-o: the command died with pidlock"
expect 2 "-o: after SIGKILL of pidlock the file is abandoned" -- \
	"$PIDLOCK" --status x.lock
expect 0 "-o: and free for the next locker, command still running" -- \
	"$PIDLOCK" -n x.lock true
kill -KILL "$cmd"
start_bg --close x.lock sh -c 'echo $$ > c.cmdpid; exec sleep 30'
wait_until test -s c.cmdpid
has_lock_fd "$(cat c.cmdpid)" x.lock && fail "--close: the command has the descriptor"
pass "--close is -o"
done_testing
