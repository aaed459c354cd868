#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# --remove deletes a lock file only if it can be acquired: never a held
# lock, whoever holds it.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

expect 0 "nothing to remove is success" -- "$PIDLOCK" --remove none.lock
[ ! -e none.lock ] || fail "--remove created a file"
expect 66 "a missing directory is an error" -- "$PIDLOCK" --remove nodir/x.lock

# A crashed holder's file goes.
crash_holder crash.lock c.cmdpid
expect 0 "a crashed holder's file is removed" -- "$PIDLOCK" -v --remove crash.lock
[ ! -e crash.lock ] || fail "crash.lock is still there"
pass "and is gone"

# A held lock stays, with every option.
start_bg --tag keep held.lock sleep 30
holder=$LAST
wait_until held held.lock
ino=$(stat -c %i held.lock)
"$PIDLOCK" --remove held.lock 2> err
[ $? -eq 1 ] || fail "--remove of a held lock: exit status"
grep -q "held.lock: not removed, held by pid $holder" err || fail "message: $(cat err)"
pass "--remove refuses a held lock with 1 and says who holds it"
expect 5 "--remove -E 5" -- "$PIDLOCK" --remove -E 5 held.lock
expect 1 "--remove -w 0.2 times out" -- "$PIDLOCK" --remove -w 0.2 held.lock
expect 1 "--remove -n" -- "$PIDLOCK" --remove -n held.lock
"$PIDLOCK" --remove -q held.lock 2> err
[ $? -eq 0 ] && [ ! -s err ] || fail "--remove -q: $(cat err)"
pass "--remove -q: exit 0, silent"
[ "$(stat -c %i held.lock)" = "$ino" ] && [ "$(field held.lock pid)" = "$holder" ] &&
	[ "$(field held.lock tag)" = keep ] || fail "the held lock file was touched"
held held.lock || fail "the lock is no longer held"
pass "the held lock is untouched and still held"
kill -TERM "$holder"
wait "$holder"

# remove_when_waiting NAME TEXT: pidlock --remove -w on NAME.lock in the
# background ($remover, its stderr in err); once it says "NAME.lock:
# TEXT", the holder is told to go on (go.NAME).
remove_when_waiting() {
	"$PIDLOCK" -v --remove -w 10 "$1.lock" 2> err &
	remover=$!
	track "$remover"
	wait_until grep -q "$1.lock: $2" err
	touch "go.$1"
}

# -w: wait for a holder that leaves its file (--keep-file).  The file is
# kept for flock(1) users of the path: --remove frees it and says so.
# The holders hold until told (touch go.*), however slow the machine:
# --remove -w has said that it waits before they let go.
start_bg --keep-file kept.lock sh -c "$SH_WAIT_FOR; wait_for go.kept"
kept=$LAST
wait_until held kept.lock
remove_when_waiting kept "waiting for pid $kept"
wait "$kept" || fail "the --keep-file holder: exit status $?"
wait "$remover" || fail "--remove -w of a kept lock: exit status $?: $(cat err)"
grep -q "kept.lock: not removed: nobody holds it" err || fail "--remove -w: $(cat err)"
[ -e kept.lock ] || fail "kept.lock was deleted"
pass "--remove -w waits for the holder; the --keep-file file stays, and it says so"
expect 0 "the kept file is free" -- "$PIDLOCK" --status kept.lock
# A holder that left its own file (not kept) behind: -w waits, removes.
start_bg own.lock sh -c 'echo $$ > own.cmdpid; '"$SH_WAIT_FOR"'; wait_for go.own'
own=$LAST
wait_until test -s own.cmdpid
kill -KILL "$own"
wait "$own" 2>/dev/null
held own.lock || fail "own.lock is not held by the command"
remove_when_waiting own "waiting for"
wait "$remover" || fail "--remove -w of a dead holder's file: exit status $?: $(cat err)"
pass "--remove -w waits for the command, then removes its file"
[ ! -e own.lock ] || fail "own.lock is still there"

# Peers: their locks stay.
bg_peer flock fl.lock sleep 30
wait_until held fl.lock
expect 1 "a flock(1) lock is not removed" -- "$PIDLOCK" --remove fl.lock
[ -e fl.lock ] || fail "fl.lock was removed"
bg_peer with-lock-ex -w wle.lock sleep 30
wait_until held wle.lock
expect 1 "a with-lock-ex lock is not removed" -- "$PIDLOCK" --remove wle.lock
[ -e wle.lock ] || fail "wle.lock was removed"
spec_lock spec.lock $$ "$(date +%s)"
expect 1 "a spec-only lock is not removed" -- "$PIDLOCK" --remove spec.lock
[ -e spec.lock ] || fail "spec.lock was removed"
spec_lock stale.lock "$(dead_pid)" $(( $(date +%s) - 600 ))
expect 1 "a spec-only lock within the stale timeout is not removed" -- \
	"$PIDLOCK" --remove stale.lock
expect 0 "a stale spec-only lock is removed (--stale 60)" -- \
	"$PIDLOCK" --remove --stale 60 stale.lock
[ ! -e stale.lock ] || fail "stale.lock is still there"

# dotlockfile(1) writes a bare pid and holds no kernel lock.
if command -v dotlockfile >/dev/null; then
	sh -c 'dotlockfile -p -l dot.lock; echo $$ > dot.owner; exec sleep 30' &
	track $!
	wait_until test -s dot.owner
	"$PIDLOCK" --remove dot.lock 2> err
	[ $? -eq 1 ] || fail "a dotlockfile lock of a live process was removed"
	grep -q "not removed, it names pid" err || fail "message: $(cat err)"
	pass "a dotlockfile lock whose process lives is not removed"
else
	fail "dotlockfile (liblockfile-bin) is not installed"
fi
# A bare pid of a process that is gone (dotlockfile, a pid file) goes.
printf '%s\n' "$(dead_pid)" > olddot.lock
touch -d '1 hour ago' olddot.lock
expect 0 "a bare-pid file whose process is gone is removed" -- \
	"$PIDLOCK" --remove olddot.lock
[ ! -e olddot.lock ] || fail "olddot.lock is still there"
# An empty file that flock(1) made is kept on release, so that flock(1)
# users sharing the path stay exclusive: --remove frees it, keeps it, and
# says so.
flock fl-idle.lock true
touch -d '1 hour ago' fl-idle.lock
ino=$(stat -c %i fl-idle.lock)
"$PIDLOCK" --remove fl-idle.lock 2> err
[ $? -eq 0 ] || fail "--remove fl-idle.lock: exit status ($(cat err))"
grep -qx "pidlock: fl-idle.lock: not removed: nobody holds it, but another kind of locker (such as flock(1)) may share the path, so the file stays; delete it with rm(1) if none does" err ||
	fail "--remove fl-idle.lock: $(cat err)"
[ "$(stat -c %i fl-idle.lock)" = "$ino" ] || fail "--remove replaced fl-idle.lock"
expect 0 "fl-idle.lock is free afterwards" -- "$PIDLOCK" --status fl-idle.lock
"$PIDLOCK" --remove -q fl-idle.lock 2> err
[ $? -eq 0 ] && [ ! -s err ] || fail "--remove -q fl-idle.lock: $(cat err)"
pass "flock(1)'s empty file: kept, and it says so (not with -q)"

# Several files: each on its own, the largest status.
start_bg many.lock sleep 30
wait_until held many.lock
printf 'pid=%s\ntimestamp=1\nlock=flock,ofd\n' "$(dead_pid)" > left.lock
"$PIDLOCK" --remove left.lock many.lock none.lock 2> /dev/null
[ $? -eq 1 ] || fail "several: exit status"
[ ! -e left.lock ] && [ -e many.lock ] || fail "several: wrong files removed"
pass "several files: the free ones go, the held one stays, exit 1"
mkdir dir.lock
expect 66 "--remove of a directory" -- "$PIDLOCK" --remove dir.lock
[ -d dir.lock ] || fail "the directory went"
done_testing
