#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# While the command runs, pidlock rewrites the timestamp every third of
# the stale timeout, in place, keeping the rest of the record.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

start_bg --stale 1 --tag long-job x.lock sleep 30
pl=$LAST
wait_until test -s x.lock
ino=$(stat -c %i x.lock)
t0=$(field x.lock timestamp)
newer() {
	[ "$(field x.lock timestamp)" -gt "$t0" ]
}
wait_until newer
pass "the timestamp moves while the command runs (--stale 1)"
[ "$(field x.lock pid)" = "$pl" ] || fail "pid= changed to $(field x.lock pid)"
[ "$(field x.lock tag)" = long-job ] || fail "tag= lost: $(cat x.lock)"
[ "$(field x.lock lock)" = flock,ofd ] || fail "lock= lost: $(cat x.lock)"
[ "$(stat -c %i x.lock)" = "$ino" ] || fail "the file was replaced"
pass "the refresh keeps pid, tag, marker and the inode"
t0=$(field x.lock timestamp)
wait_until newer
pass "and goes on"
expect 1 "still held" -- "$PIDLOCK" --status --stale 1 x.lock
kill -TERM "$pl"
wait "$pl"

# With the default stale timeout (an hour) there is no rewrite for a
# long time: the file is written once.
start_bg x.lock sleep 30
pl=$LAST
wait_until test -s x.lock
t0=$(field x.lock timestamp)
m0=$(stat -c %Y.%y x.lock)
sleep 1.2
[ "$(field x.lock timestamp)" = "$t0" ] && [ "$(stat -c %Y.%y x.lock)" = "$m0" ] ||
	fail "rewritten within 1.2 s with the default stale timeout"
pass "no rewrite before a third of the default stale timeout"
done_testing
