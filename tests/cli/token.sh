#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# --token: each run's command finds a fencing token in PIDLOCK_TOKEN,
# greater than every earlier run's on the path (across the unlink of each
# release, and the directory's removal and re-creation); any number of
# lock names in a directory works; a high mark that cannot be kept runs
# no command, and the message says what to do.
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

# The directory removed and made again (systemd's RuntimeDirectory=, a
# tmpfiles rule): its attributes go with it, and tokens still increase.
mkdir run
for round in 1 2 3; do
	tok=$("$PIDLOCK" --token run/t.lock sh -c 'echo "$PIDLOCK_TOKEN"') ||
		fail "round $round failed"
	[ "$tok" -gt "$last" ] || fail "round $round: token $tok after $last"
	last=$tok
	rm -rf run && mkdir run
done
pass "the directory made again three times: tokens still increasing"

# The directory replaced while a holder has its token: the next holder,
# in the new directory, outranks it.
start_bg --token run/t.lock sh -c 'echo "$PIDLOCK_TOKEN" > tokA; exec sleep 30'
wait_until test -s tokA
mv run run.old && mkdir run
tok=$("$PIDLOCK" --token run/t.lock sh -c 'echo "$PIDLOCK_TOKEN"') ||
	fail "the run in the new directory failed"
[ "$tok" -gt "$(cat tokA)" ] || fail "token $tok in the new directory, under the holder's $(cat tokA)"
kill -TERM "$LAST"
pass "the directory replaced while A holds: B's token $tok is above A's $(cat tokA)"

# attrs DIR: the user.pidlock.token* attributes of DIR, one a line.
attrs() {
	"$PYTHON" -c 'import os, sys
print("\n".join(a for a in os.listxattr(sys.argv[1]) if a.startswith("user.pidlock.token")))' "$1"
}

# A lock name per job: the 88th name in one directory filled ext4's
# attribute block when each name kept an attribute.  300 names, and the
# directory keeps a bounded set.
mkdir jobs
for i in $(seq 1 300); do
	"$PIDLOCK" --token "jobs/job-$i.lock" true || fail "name $i failed"
done
n=$(attrs jobs | wc -l)
[ "$n" -le 16 ] || fail "300 names left $n attributes"
pass "300 lock names in one directory: all ran, $n attributes kept"

# A high mark that is not a number: the acquire fails, nothing runs.
mkdir bad
"$PIDLOCK" --token bad/t.lock true || fail "the first run in bad/"
mark=$(attrs bad)
"$PYTHON" -c 'import os, sys; os.setxattr("bad", sys.argv[1], b"x")' "$mark"
expect 71 "a high mark that is not a number: refused" -- \
	"$PIDLOCK" --token bad/t.lock sh -c 'touch ran'
[ ! -e ran ] || fail "the command ran without a token"
[ ! -e bad/t.lock ] || fail "a lock file was left"
grep -q "fencing token's high mark.*setfattr -x" "$EXPECT_ERR" ||
	fail "the message does not name the high mark and what to do"

# Another user in root's sticky directory may make the lock file but not
# write the directory's attributes: the message says so, and what to do.
chmod 0755 "$T"
# The other user runs pidlock itself: a private build tree (the musl
# build's scratch directory) is out of its reach.
if [ "$(id -u)" = 0 ] && getent passwd nobody >/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups "$PIDLOCK" --version >/dev/null 2>&1; then
	mkdir -m 1777 sticky
	expect 77 "--token in another user's sticky directory: refused" -- \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$PIDLOCK" --token sticky/t.lock sh -c 'touch ran'
	[ ! -e ran ] || fail "the command ran without a token"
	grep -q "only the directory's owner may; put the lock in a directory of your own" "$EXPECT_ERR" ||
		fail "the message does not say what was refused"
	# A foreign lock file there is refused for itself, as without --token.
	setpriv --reuid=65534 --regid=65534 --clear-groups sh -c ': > sticky/theirs.lock'
	expect 77 "a foreign file in a sticky directory with --token" -- \
		"$PIDLOCK" --token sticky/theirs.lock true
	grep -q "the file belongs to uid 65534" "$EXPECT_ERR" ||
		fail "the foreign file's message was replaced"
else
	echo "# not tested: the sticky directory (needs root, and nobody able to run $PIDLOCK)"
fi

expect 64 "--token with -s" -- "$PIDLOCK" -s --token t.lock true
done_testing
