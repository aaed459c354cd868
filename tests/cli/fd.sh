#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# pidlock FD and pidlock -u FD: a shell locks the descriptor it opened
# (exec 9<>FILE), as with flock(1) FD.  Real shells (bash and sh) hold;
# the peers are a second shell, flock(1), with-lock-ex, pidlock's own
# acquire of the path and a spec-only locker (noclobber create).
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

for p in flock with-lock-ex sh; do
	command -v $p >/dev/null || fail "$p is not installed"
done
export PIDLOCK

# shell_holds NAME [SHELL]: a shell in the background that opens x.lock
# with 9<>, locks it with pidlock -n 9, writes its pid ($$) to NAME.pid,
# and once NAME.go appears releases with pidlock -u 9 and writes
# NAME.done.  Nothing it starts inherits fd 9 but pidlock.  LAST is the
# shell's pid; returns once it holds.
shell_holds() {
	bg_peer "${2:-bash}" -c '
		exec 9<>x.lock || exit 90
		"$PIDLOCK" -n 9 || exit 91
		echo $$ > "$0.pid"
		while [ ! -e "$0.go" ]; do sleep 0.05 9<&-; done
		"$PIDLOCK" -u 9 || exit 92
		echo released > "$0.done"
		exec sleep 30 9<&-' "$1"
	wait_until test -s "$1.pid"
}

# --- the record names the shell ----------------------------------------------
exec 9<>x.lock
expect 0 "pidlock -n 9 locks the shell's descriptor" -- "$PIDLOCK" -n 9
[ "$(field x.lock pid)" = "$$" ] || fail "pid=$(field x.lock pid), shell is $$"
pass "the record names the shell (\$\$), not pidlock"
[ "$(field x.lock keep)" = 1 ] || fail "no keep=1: $(cat x.lock)"
pass "the record says keep=1: the file stays at the path"
"$PIDLOCK" --status x.lock > st
[ $? -eq 1 ] || fail "--status does not say held"
grep -q "pid: *$$ (running)" st || fail "--status does not name the shell: $(cat st)"
pass "--status names the shell as the holder"

# --- a wrapper that forks: the record names the shell, not the wrapper ------
# timeout(1) forks pidlock and exits with it; it has descriptor 9 too.
# The record names the process that keeps the open file description
# open, the shell, so --status says running and spec-only peers see a
# live pid.  Likewise pidlock in a subshell.
expect 0 "timeout 5 pidlock -n 9 (a refresh)" -- timeout 5 "$PIDLOCK" -n 9
[ "$(field x.lock pid)" = "$$" ] ||
	fail "timeout 5 pidlock -n 9: pid=$(field x.lock pid), shell is $$"
"$PIDLOCK" --status x.lock > st
grep -q "pid: *$$ (running)" st || fail "--status after timeout: $(cat st)"
pass "timeout 5 pidlock -n 9: the record names the shell, running"
( "$PIDLOCK" -n 9; exit $? ) || fail "pidlock -n 9 in a subshell"
[ "$(field x.lock pid)" = "$$" ] ||
	fail "a subshell's pidlock -n 9: pid=$(field x.lock pid), shell is $$"
pass "pidlock -n 9 in a subshell: the record names the shell"
# The descriptor opened for pidlock alone dies with it: refused, 64.
"$PIDLOCK" -n 8 8<>y.lock 2> err
rc=$?
[ $rc -eq 64 ] || fail "pidlock -n 8 8<>FILE: exit $rc"
grep -q "descriptor 8 is not open in the parent process $$" err ||
	fail "pidlock -n 8 8<>FILE: $(cat err)"
expect 0 "flock -n gets in: pidlock -n 8 8<>FILE left no lock" -- \
	flock -n y.lock true
pass "pidlock -n 8 8<>FILE: refused (64), the parent does not keep it"

# --- peers are kept out while the shell holds --------------------------------
expect 1 "a second shell's pidlock -n 9 fails" -- \
	bash -c 'exec 9<>x.lock; "$PIDLOCK" -n 9; exit $?'
expect 1 "a second sh's pidlock -w 0.3 9 times out" -- \
	sh -c 'exec 9<>x.lock; "$PIDLOCK" -w 0.3 9; exit $?'
expect 1 "flock -n -x fails" -- flock -n -x x.lock true
expect 1 "with-lock-ex -q fails" -- \
	sh -c 'with-lock-ex -q x.lock true; [ $? -ne 0 ] && exit 1'
expect 1 "pidlock's own acquire of the path fails" -- \
	"$PIDLOCK" -n x.lock true
( set -C; echo "pid=$$" > x.lock ) 2>/dev/null && fail "a spec-only create succeeded"
pass "a spec-only locker's noclobber create fails"
[ "$(field x.lock pid)" = "$$" ] || fail "a peer changed the record"
expect 0 "pidlock -n 9 again, while holding, is a refresh" -- "$PIDLOCK" -n 9

# --- -u releases: a waiting flock(1) gets in, on the same inode --------------
ino=$(stat -c %i x.lock)
bg_peer flock -x x.lock sh -c 'stat -c %i x.lock > flock.ino; exec sleep 30'
flocker=$LAST
sleep 0.3
[ ! -e flock.ino ] || fail "flock(1) got in while the shell held"
expect 0 "pidlock -u 9 releases" -- "$PIDLOCK" -u 9
wait_until test -s flock.ino
[ "$(cat flock.ino)" = "$ino" ] || fail "flock(1) holds another inode"
pass "the waiting flock(1) gets in at once, on the kept inode"
[ "$(field x.lock pid)" = 4194304 ] || fail "not marked released: $(cat x.lock)"
[ -n "$(field x.lock released)" ] || fail "no released=: $(cat x.lock)"
pass "-u marks the record released in place"
expect 1 "flock(1) holds: pidlock -n 9 fails" -- "$PIDLOCK" -n 9
"$PIDLOCK" 9 &
waiter=$!
track $waiter
sleep 0.3
gone "$waiter" && fail "pidlock 9 did not wait for flock(1)"
kill -KILL -- "-$flocker"
wait "$waiter" || fail "pidlock 9 did not get the lock after flock(1)"
pass "pidlock 9 waits for flock(1), then locks"
[ "$(field x.lock pid)" = "$$" ] || fail "pid=$(field x.lock pid) after the wait"
expect 0 "pidlock -u 9" -- "$PIDLOCK" -u 9
expect 0 "-u twice is harmless, as flock -u" -- "$PIDLOCK" -u 9

# --- another shell holds: a waiter gets in after its -u ----------------------
shell_holds a
holder=$(cat a.pid)
[ "$(field x.lock pid)" = "$holder" ] || fail "the record does not name shell $holder"
pass "another shell holds; the record names it"
expect 1 "it holds: pidlock -n 9 here fails" -- "$PIDLOCK" -n 9
expect 1 "it holds: pidlock -u 9 here says not ours, changes nothing" -- \
	"$PIDLOCK" -u 9
[ "$(field x.lock pid)" = "$holder" ] || fail "-u of a non-holder changed the record"
"$PIDLOCK" -w 10 9 &
waiter=$!
track $waiter
sleep 0.3
gone "$waiter" && fail "pidlock -w 10 9 did not wait"
touch a.go
wait "$waiter" || fail "the waiter did not get the lock after -u"
# The waiter is let in by the kernel as the holder's -u drops its locks,
# and may be done before that pidlock -u has exited and its shell written
# a.done (under ASan, whose exit is slow): wait for it, do not race it.
wait_until test -s a.done
pass "the other shell's pidlock -u 9 lets a timed waiter in"
[ "$(field x.lock pid)" = "$$" ] || fail "the waiter's record does not name this shell"
expect 0 "pidlock -u 9" -- "$PIDLOCK" -u 9

# --- flock(1) and with-lock-ex hold, then pidlock's own acquire --------------
bg_peer with-lock-ex -w x.lock sleep 30
wait_until held x.lock
expect 1 "with-lock-ex holds: pidlock -n 9 fails" -- "$PIDLOCK" -n 9
kill -KILL -- "-$LAST"
wait_until status_is x.lock 0
expect 0 "with-lock-ex gone: pidlock -n 9 locks" -- "$PIDLOCK" -n 9
expect 0 "pidlock -u 9" -- "$PIDLOCK" -u 9
start_bg x.lock sleep 30
pl=$LAST
wait_until held x.lock
expect 1 "pidlock's acquire holds (taking the kept file): pidlock -n 9 fails" -- \
	"$PIDLOCK" -n 9
kill -TERM "$pl"
wait "$pl"
[ "$(stat -c %i x.lock)" = "$ino" ] || fail "the acquire's release removed the kept file"
pass "the acquire's release keeps the file (keep=1 passed on)"
expect 0 "and pidlock -n 9 locks it again" -- "$PIDLOCK" -n 9
expect 0 "pidlock -u 9" -- "$PIDLOCK" -u 9

# --- a spec-only holder -------------------------------------------------------
exec 9<&-
rm -f x.lock
spec_lock x.lock $$ "$(date +%s)"
exec 9<>x.lock
expect 1 "a spec-only holder: pidlock -n 9 fails" -- "$PIDLOCK" -n 9
[ "$(field x.lock pid)" = "$$" ] && [ -z "$(field x.lock lock)" ] ||
	fail "the spec-only record was changed: $(cat x.lock)"
pass "the spec-only record is left as it was"

# --- the file is replaced or removed: exit 75, open it again -----------------
# A file pidlock created stays at its release while the shell has it
# open and waits on it (pidlock(1), "FLOCK(1) ON THE SAME PATH"): the
# waiter gets that file's lock.
exec 9<&-
rm -f x.lock
start_bg x.lock sleep 30
pl=$LAST
wait_until held x.lock
ino=$(stat -c %i x.lock)
exec 9<>x.lock
"$PIDLOCK" -w 10 9 2> w.err &
waiter=$!
track $waiter
sleep 0.3
kill -TERM "$pl"
wait "$pl"
wait "$waiter"
rc=$?
[ $rc -eq 0 ] || fail "waiter on the file pidlock made: exit $rc, expected 0: $(cat w.err)"
[ "$(stat -c %i x.lock)" = "$ino" ] && [ "$(field x.lock pid)" = "$$" ] ||
	fail "the waiter does not hold the file at the path: $(cat x.lock)"
pass "a waiter on a file pidlock made gets it: the release kept it"
expect 0 "pidlock -u 9" -- "$PIDLOCK" -u 9
# Removed by somebody while the shell waits: the descriptor is on a file
# that is no longer the lock.
bg_peer sh -c 'exec 8<>x.lock; "$0" 8; exec sleep 30' "$PIDLOCK"
pl=$LAST
wait_until held x.lock
"$PIDLOCK" -w 10 9 2> w.err &
waiter=$!
track $waiter
sleep 0.3
rm -f x.lock
kill -TERM "$pl"
wait "$pl"
wait "$waiter"
rc=$?
[ $rc -eq 75 ] || fail "waiter after the file was removed: exit $rc, expected 75"
grep -q "exec 9<>FILE" w.err || fail "no word of reopening: $(cat w.err)"
pass "a waiter whose file was removed exits 75 and says to reopen"
exec 9<>x.lock
expect 0 "reopened, pidlock -n 9 locks" -- "$PIDLOCK" -n 9
echo 'pid=1' > new
mv new x.lock	# somebody replaces the file
expect 75 "the file replaced: pidlock -n 9 exits 75" -- "$PIDLOCK" -n 9
expect 75 "the file replaced: pidlock -u 9 exits 75" -- "$PIDLOCK" -u 9
[ "$(cat x.lock)" = "pid=1" ] || fail "the new file was written"
pass "the file that replaced it is left as it was"
exec 9<&-

# --- 9< and 9> ----------------------------------------------------------------
rm -f x.lock
exec 9<>x.lock
expect 0 "pidlock -n 9" -- "$PIDLOCK" -n 9
size=$(stat -c %s x.lock)
[ "$size" -gt 0 ] || fail "no record"
bash -c 'exec 8>x.lock; "$PIDLOCK" -n 8; exit $?' 2> wo.err
[ $? -eq 1 ] || fail "a 9> descriptor beside a holder: not busy (1): $(cat wo.err)"
[ "$(stat -c %s x.lock)" = 0 ] || fail "8> did not truncate"
grep -q "8>>FILE or 8<>FILE, which never truncate" wo.err ||
	fail "no word of the truncation: $(cat wo.err)"
pass "9> beside a holder: busy (1); the shell's open emptied the holder's record, and pidlock says so"
bash -c 'exec 8>>x.lock; "$PIDLOCK" -n 8; exit $?' 2> ap.err
[ $? -eq 1 ] || fail "a 9>> descriptor beside a holder: not busy (1): $(cat ap.err)"
! grep -q "truncate" ap.err || fail "9>> said to truncate: $(cat ap.err)"
pass "9>> beside a holder: busy (1), no word of truncation"
expect 1 "the shell still holds: flock -n fails" -- flock -n x.lock true
expect 0 "the holder restores its record with pidlock -n 9" -- "$PIDLOCK" -n 9
[ "$(field x.lock pid)" = "$$" ] || fail "record not restored: $(cat x.lock)"
bash -c 'exec 8<x.lock; exec "$PIDLOCK" -n 8' 2> ro.err
[ $? -eq 64 ] || fail "a 9< descriptor was not refused with 64"
grep -q "reading only" ro.err || fail "no word of 9<: $(cat ro.err)"
pass "9<: refused with 64 and a message"
[ "$(field x.lock pid)" = "$$" ] || fail "a refused call changed the record"
expect 0 "pidlock -u 9" -- "$PIDLOCK" -u 9
exec 9<&-

# --- not a lock file ---------------------------------------------------------
printf '#!/bin/sh\necho hello\n' > script
exec 9<>script
expect 65 "a script is not a lock file: 65" -- "$PIDLOCK" -n 9
[ "$(cat script)" = "$(printf '#!/bin/sh\necho hello')" ] || fail "the script changed"
pass "the script is left as it was"
expect 0 "flock -n gets in: no kernel lock was left" -- flock -n script true
exec 9<&-

# --- a SIGKILLed shell frees the lock at once ---------------------------------
rm -f x.lock
shell_holds k sh
shpid=$(cat k.pid)
[ "$(field x.lock pid)" = "$shpid" ] || fail "sh's record does not name it"
pass "sh holds; the record names it"
exec 9<>x.lock
expect 1 "sh holds: pidlock -n 9 fails" -- "$PIDLOCK" -n 9
kill -KILL "$shpid"
wait_until gone "$shpid"
expect 0 "the holder was SIGKILLed: pidlock -n 9 locks at once" -- \
	"$PIDLOCK" -n 9
[ "$(field x.lock pid)" = "$$" ] || fail "not taken over: $(cat x.lock)"
expect 0 "pidlock -u 9" -- "$PIDLOCK" -u 9
exec 9<&-

# --- the script's end is its release -----------------------------------------
# ( pidlock -w 5 9 || exit 1; ... ) 9>F: the subshell's end closes the
# descriptor, which releases; the file left must read as free (exit 0),
# not as a crash (exit 2), or monitoring alerts after every normal run.
rm -f e.lock
( "$PIDLOCK" -w 5 9 || exit 1
  "$PIDLOCK" --status e.lock > e.held; echo $? > e.rc ) 9>e.lock ||
	fail "the subshell could not lock e.lock"
[ "$(cat e.rc)" = 1 ] || fail "--status while the subshell held: $(cat e.rc)"
grep -q "^  kernel:  flock,fcntl (held by pid [0-9]*; taken by pid [0-9]*, which handed it on)" e.held ||
	fail "--status while held: $(cat e.held)"
pass "held: the taker that handed it on is no fault in --status"
"$PIDLOCK" --status e.lock > e.after
rc=$?
[ "$rc" = 0 ] && grep -q '^e.lock: free' e.after ||
	fail "after the subshell's end, --status: exit $rc, $(cat e.after)"
pass "the script's end reads as a release (free, exit 0), not a crash"

# --- usage --------------------------------------------------------------------
expect 65 "a closed descriptor: 65, as flock(1) exits" -- "$PIDLOCK" -n 57
expect 64 "-q is refused with a descriptor" -- "$PIDLOCK" -q 9
expect 64 "-u needs a number" -- "$PIDLOCK" -u x.lock
expect 64 "--exec is refused with a lone descriptor" -- "$PIDLOCK" --exec 9
expect 64 "-o is refused with a lone descriptor" -- "$PIDLOCK" -o 9
done_testing
