#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# --exec: no fork; the command holds the lock as pidlock's own process
# and leaves the file for the next locker.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

start_bg --exec --tag ex x.lock sh -c 'echo $$ > e.cmdpid; exec sleep 30'
pl=$LAST
wait_until test -s e.cmdpid
[ "$(cat e.cmdpid)" = "$pl" ] || fail "--exec forked: command $(cat e.cmdpid), pidlock $pl"
pass "--exec runs the command in pidlock's process"
[ "$(field x.lock pid)" = "$pl" ] || fail "pid= $(field x.lock pid)"
pass "the lock file names the command"
expect 1 "--exec: held while the command runs" -- "$PIDLOCK" --status x.lock
expect 1 "--exec: another locker is refused" -- "$PIDLOCK" -n x.lock true
kill -TERM "$pl"
wait "$pl"
[ -f x.lock ] || fail "--exec: the file was deleted"
pass "--exec leaves the file when the command exits"
expect 0 "--exec: the left file is free (the command's exit was its release)" -- "$PIDLOCK" --status x.lock
expect 0 "and is taken over by the next locker" -- "$PIDLOCK" -n x.lock true
[ ! -e x.lock ] || fail "the next locker did not clean up"

expect 6 "--exec: the exit status is the command's" -- \
	"$PIDLOCK" --exec x.lock sh -c 'exit 6'
expect 8 "--exec with -c" -- "$PIDLOCK" --exec x.lock -c 'exit 8'
rm -f x.lock
expect 69 "--exec: a missing command exits 69" -- \
	"$PIDLOCK" --exec x.lock ./no-such-command
[ ! -e x.lock ] || fail "--exec: lock file left after a failed exec"
pass "--exec: a failed exec releases the lock and its file"
done_testing
