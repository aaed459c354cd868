#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A file made a moment ago that nobody else has open is decided at once,
# even with -n: `: > f` and `touch f` before the lock (the way to share a
# path with flock(1)), a shell's own `exec 9<>f`.  Rule C's grace is only
# for a file that another process has open, as a writer between its
# create and its write does.  No timing: -n would answer "busy" within
# the grace, which the checks below tell from 0.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

: > a.lock
"$PIDLOCK" -n a.lock true || fail ": > f; pidlock -n f true: exit status $?"
pass ": > f, then pidlock -n f: taken at once"

touch b.lock
"$PIDLOCK" -n b.lock true || fail "touch f; pidlock -n f true: exit status $?"
pass "touch f, then pidlock -n f: taken at once"

rm -f c.lock
exec 9<> c.lock
"$PIDLOCK" -n 9 || fail "exec 9<>f; pidlock -n 9: exit status $?"
"$PIDLOCK" -u 9 || fail "pidlock -u 9: exit status $?"
exec 9>&-
pass "exec 9<>f, then pidlock -n 9: taken at once"

# Another process has the young file open for writing: maybe a spec-only
# writer about to write.  -n reports it busy; after it closes, free.
: > d.lock
sleep 30 >> d.lock &
writer=$!
track "$writer"
# Young within the 200 ms grace for over a second: the next whole second,
# set early in this one.
while [ "$(date +%N | cut -c1)" != 0 ]; do sleep 0.01; done
touch -d "@$(( $(date +%s) + 1 ))" d.lock
opened() { [ "$(readlink "/proc/$writer/fd/1")" = "$T/d.lock" ]; }
wait_until opened
rc=0
"$PIDLOCK" -n d.lock true 2> err || rc=$?
[ "$rc" -eq 1 ] || fail "young file open for writing elsewhere: exit status $rc, expected 1"
grep -q "d.lock: lock is busy" err || fail "busy message: $(cat err)"
# Nobody holds it: the message says why it counts as held, not that an
# unknown process holds it.
grep -q "nobody known yet: the file is new and holds no record" err ||
	fail "young file's message: $(cat err)"
grep -q "unknown process" err && fail "young file named an unknown holder: $(cat err)"
kill "$writer"
wait "$writer" 2>/dev/null
"$PIDLOCK" -n d.lock true || fail "after the writer closed: exit status $?"
pass "a young file that another process has open for writing waits for its grace"

done_testing
