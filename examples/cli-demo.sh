#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The command-line tool in action: run a command under a lock, look at
# the lock while it runs, see a second run refused, and the lock gone after.
set -eu
PIDLOCK=${PIDLOCK:-tools/pidlock}
dir=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-demo.XXXXXX")
lock=$dir/backup.lock
trap 'rm -rf "$dir"' EXIT

echo "\$ pidlock --tag 'nightly backup' $lock sleep 2 &"
"$PIDLOCK" --tag 'nightly backup' "$lock" sleep 2 &
job=$!
while [ ! -e "$lock" ]; do sleep 0.05; done

echo "\$ pidlock --status $lock"
st=0; "$PIDLOCK" --status "$lock" || st=$?
echo "(exit $st: held)"

echo "\$ pidlock -n $lock echo second run"
st=0; "$PIDLOCK" -n "$lock" echo second run || st=$?
echo "(exit $st: busy)"

wait "$job"
echo "\$ pidlock --status --json $lock   # after the command ended"
st=0; "$PIDLOCK" --status --json "$lock" || st=$?
echo "(exit $st: free)"
[ ! -e "$lock" ]
