#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# --token: each run's command finds a fencing token in PIDLOCK_TOKEN,
# greater than every earlier run's on the path (across the unlink of each
# release); a counter that cannot be kept runs no command.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

if ! "$PYTHON" -c 'import os, sys; os.setxattr(sys.argv[1], "user.t", b"1")' . 2>/dev/null; then
	expect 71 "--token where no user xattrs are kept: refused" -- \
		"$PIDLOCK" --token t.lock sh -c 'touch ran'
	[ ! -e ran ] || fail "the command ran without a token"
	echo "# not tested: the counter (no user xattrs in $T)"
	done_testing
fi

last=0
for i in 1 2 3 4 5; do
	tok=$("$PIDLOCK" --token t.lock sh -c 'echo "$PIDLOCK_TOKEN"') ||
		fail "run $i failed"
	[ "$tok" -gt "$last" ] || fail "run $i: token $tok after $last"
	last=$tok
done
[ ! -e t.lock ] || fail "the lock file stayed"
pass "five runs: tokens strictly increasing, ending at $last"

# The command runs with the lock held and the record names the token.
"$PIDLOCK" --token t.lock sh -c 'grep -q "^token=$PIDLOCK_TOKEN *$" t.lock' ||
	fail "the record does not name the command's token"
pass "the record's token= line is the command's PIDLOCK_TOKEN"

# Without --token, no number is taken and none is exported.
out=$("$PIDLOCK" t.lock sh -c 'echo "${PIDLOCK_TOKEN-unset}"')
[ "$out" = unset ] || fail "PIDLOCK_TOKEN without --token: $out"
pass "no token without --token"

# A counter that is not a number: the acquire fails, nothing runs.
"$PYTHON" -c 'import os; os.setxattr(".", "user.pidlock.token.t.lock", b"x")'
expect 71 "a counter that is not a number: refused" -- \
	"$PIDLOCK" --token t.lock sh -c 'touch ran'
[ ! -e ran ] || fail "the command ran without a token"
[ ! -e t.lock ] || fail "a lock file was left"
grep -q "fencing token's counter" "$EXPECT_ERR" || fail "the message does not name the counter"

expect 64 "--token with -s" -- "$PIDLOCK" -s --token t.lock true
done_testing
