#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Permissions, with a second user: a reader of a 0644 lock file can block
# it and one of a 0600 file cannot (what pidlock(1) PERMISSIONS says); the
# EPERM refusal names the one cause that applies.  Needs root, to act as
# another user and give files away.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

need_second_user
command -v flock >/dev/null || fail "flock(1) is not installed"
OTHER=65534	# nobody
chmod 0755 "$T"

# as_other COMMAND...: run as uid/gid 65534 with no supplementary groups.
as_other() {
	setpriv --reuid=$OTHER --regid=$OTHER --clear-groups "$@"
}

# A 0644 file: another user's shared flock keeps pidlock out.
"$PIDLOCK" --keep-file open.lock true || fail "--keep-file run"
[ "$(stat -c %a open.lock)" = 644 ] || fail "the default mode is $(stat -c %a open.lock)"
bg_peer setpriv --reuid=$OTHER --regid=$OTHER --clear-groups flock -s open.lock sleep 30
blocker=$LAST
wait_until held open.lock
expect 1 "0644: another user's flock -s blocks pidlock" -- "$PIDLOCK" -n open.lock true
kill -KILL -- "-$blocker"
wait "$blocker" 2>/dev/null
wait_until status_is open.lock 0
expect 0 "and pidlock gets it once the reader lets go" -- "$PIDLOCK" -n open.lock true

# --mode 0600: the other user cannot even open it.
"$PIDLOCK" --mode 0600 --keep-file private.lock true || fail "--mode 0600 run"
[ "$(stat -c %a private.lock)" = 600 ] || fail "--mode 0600 made $(stat -c %a private.lock)"
as_other flock -s -n private.lock true 2> err && fail "the other user locked a 0600 file"
grep -q 'Permission denied' err || fail "flock as the other user: $(cat err)"
expect 0 "0600: pidlock is not blocked" -- "$PIDLOCK" -n private.lock true
pass "--mode 0600 keeps other users from blocking the lock"

# EPERM, cause 1: a world-writable directory without the sticky bit.
mkdir open-dir
chmod 0777 open-dir
"$PIDLOCK" open-dir/x.lock true 2> err
[ $? -eq 77 ] || fail "world-writable directory: exit status"
grep -qx "pidlock: open-dir/x.lock: Operation not permitted (the directory open-dir is writable by everyone and has no sticky bit, so anybody could remove or replace the lock file; use a directory that only trusted users can write, or set its sticky bit (chmod +t))" err ||
	fail "world-writable directory: $(cat err)"
! grep -q 'belongs to' err || fail "names both causes: $(cat err)"
[ ! -e open-dir/x.lock ] || fail "a file was made"
pass "a world-writable directory without the sticky bit: 77, that cause only"

# EPERM, cause 2: a file another user made in a shared sticky directory.
mkdir shared
chmod 1777 shared
as_other sh -c ': > shared/theirs.lock' || fail "the other user cannot create a file"
touch -d '1 hour ago' shared/theirs.lock
before=$(stat -c '%i %s %U' shared/theirs.lock)
"$PIDLOCK" shared/theirs.lock true 2> err
[ $? -eq 77 ] || fail "foreign file: exit status ($(cat err))"
grep -qx "pidlock: shared/theirs.lock: Operation not permitted (the file belongs to uid $OTHER, not to you, in the shared sticky directory shared, and nobody holds it; a file another user created there is never used, so nobody can plant a lock file for you; ask uid $OTHER to remove it, or use another name or a directory of your own)" err ||
	fail "foreign file: $(cat err)"
! grep -q 'no sticky bit' err || fail "names both causes: $(cat err)"
[ "$(stat -c '%i %s %U' shared/theirs.lock)" = "$before" ] || fail "the foreign file changed"
pass "another user's file in a sticky directory: 77, that cause only"
expect 77 "--remove of it: 77" -- "$PIDLOCK" --remove shared/theirs.lock
[ -e shared/theirs.lock ] || fail "--remove deleted the other user's file"
# The other user runs pidlock itself below: a build tree it cannot
# reach (a private scratch directory, as the musl build's) cannot show
# it, and test-hostile's test_other_users_file_busy_then_taken, which
# forks instead of running the program, proves the library's part.
if ! as_other test -x "$PIDLOCK" || ! as_other "$PIDLOCK" --version >/dev/null 2>&1; then
	echo "SKIP: the other user cannot run $PIDLOCK here (the build tree is private)"
	done_testing
fi

# A lock shared between users: the other user's hold is busy (exit 1),
# and a wait takes the lock once the holder's release removes its file;
# for root in the sticky directory as for the other user on root's 0644
# file, which it cannot write.
bg_peer setpriv --reuid=$OTHER --regid=$OTHER --clear-groups \
	"$PIDLOCK" shared/s.lock sleep 30
holder=$LAST
wait_until held shared/s.lock
expect 1 "root, another user's hold in a sticky directory: busy" -- \
	"$PIDLOCK" -n shared/s.lock true
( sleep 0.5; kill -TERM -- "-$holder" ) &
expect 0 "root -w takes it once the other user's release removed its file" -- \
	"$PIDLOCK" -w 10 shared/s.lock true
wait
bg_peer "$PIDLOCK" shared/r.lock sleep 30
holder=$LAST
wait_until held shared/r.lock
expect 1 "the other user, root's 0644 file held: busy, not denied" -- \
	as_other "$PIDLOCK" -n shared/r.lock true
( sleep 0.5; kill -TERM -- "-$holder" ) &
expect 0 "the other user -w takes it after root's release" -- \
	as_other "$PIDLOCK" -w 10 shared/r.lock true
wait
"$PIDLOCK" --keep-file shared/k.lock true || fail "--keep-file run"
as_other "$PIDLOCK" -n shared/k.lock true 2> err
[ $? -eq 77 ] || fail "root's kept 0644 file, nobody holds: exit status ($(cat err))"
grep -q "Permission denied (the file belongs to uid 0 with mode 0644, which you cannot write, and nobody holds it; .* --mode 0666" err ||
	fail "root's kept file: $(cat err)"
pass "a file nobody holds and the caller cannot write: 77, whose it is and what to do"
(umask 022; "$PIDLOCK" --keep-file --mode 0666 shared/m.lock true) || fail "--mode 0666 run"
[ "$(stat -c %a shared/m.lock)" = 666 ] || fail "--mode 0666 under umask 022 made $(stat -c %a shared/m.lock)"
expect 0 "--mode 0666 is exact: the other user takes the kept file" -- \
	as_other "$PIDLOCK" -n shared/m.lock true
done_testing
