#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Ctrl-C on a terminal reaches the whole foreground job: the command must
# get it once, not a second time from pidlock.
. "$(dirname "$0")/lib.sh"

"$PYTHON" "$CLI_SRCDIR/ctrl_c.py" "$PIDLOCK" "$T/x.lock" "$T" > "$T/out" ||
	fail "ctrl_c.py: $(cat "$T/out")"
grep -qx "count 1" "$T/out" || fail "SIGINTs the command got: $(cat "$T/out")"
pass "Ctrl-C reaches the command exactly once"
grep -qx "status 0" "$T/out" || fail "pidlock's status: $(cat "$T/out")"
pass "pidlock survives Ctrl-C and passes on the command's status"
[ ! -e "$T/x.lock" ] || fail "lock file left"
pass "and releases the lock"

# The same under strace: pidlock must not send SIGINT itself.
"$PYTHON" "$CLI_SRCDIR/ctrl_c.py" "$PIDLOCK" "$T/x.lock" "$T" "$T/kills" \
	> "$T/out" || fail "ctrl_c.py under strace: $(cat "$T/out")"
grep -qx "count 1" "$T/out" || fail "SIGINTs the command got: $(cat "$T/out")"
grep -q 'kill(' "$T/kills" && fail "pidlock sent: $(grep 'kill(' "$T/kills")"
pass "pidlock does not send the terminal's SIGINT a second time"

# With --check and --lease pidlock stops the whole job once the lock is
# lost (job.c), and still leaves the process group as it is: Ctrl-C
# reaches the command once, from the terminal.
PIDLOCK_OPTS="--check 0.2 --lease 5" "$PYTHON" "$CLI_SRCDIR/ctrl_c.py" \
	"$PIDLOCK" "$T/x.lock" "$T" > "$T/out" || fail "ctrl_c.py --check: $(cat "$T/out")"
grep -qx "count 1" "$T/out" || fail "--check: SIGINTs the command got: $(cat "$T/out")"
grep -qx "status 0" "$T/out" || fail "--check: pidlock's status: $(cat "$T/out")"
pass "with --check, Ctrl-C still reaches the command exactly once"
done_testing
