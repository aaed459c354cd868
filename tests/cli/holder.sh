#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# --status and the busy message tell the truth: a kept file that nobody
# holds is free (exit 0), only a holder that ended without releasing makes
# a file abandoned (exit 2), and the holder named is the process that holds
# the kernel lock now, never a dead pid out of the file.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99
# Pid files of the tests' own processes are bare pids, lock files by
# every reader's rule: they live apart from the listed directory.
mkdir "$T/pids"
command -v flock >/dev/null || fail "flock(1) is not installed"

# js KEY: a key of the first lock object of the last status_json
js() {
	jv j 0 "$1"
}

# free_kept WHAT FILE: --status says free, exit 0, file still there
free_kept() {
	[ -e "$2" ] || fail "$1: the file is gone"
	"$PIDLOCK" --status "$2" > out
	[ $? -eq 0 ] || fail "$1: --status exit status $? ($(cat out))"
	[ "$(cat out)" = "$2: free (nobody holds it; the file stays for the next locker)" ] ||
		fail "$1: --status says: $(cat out)"
	status_json "$2"
	[ "$JRC" -eq 0 ] && [ "$(js state)" = free ] && [ "$(js exit_status)" = 0 ] &&
		[ "$(js kernel_locks)" = '[]' ] || fail "$1: JSON: $(cat j)"
	pass "$1: free, exit 0, in text and JSON"
}

# Idle kept files.
# (A young empty file may still be filled by its spec-only writer: these
# are aged past that grace period first.)
flock fl.lock true || fail "flock(1) failed"
[ -e fl.lock ] && [ ! -s fl.lock ] || fail "flock(1) left no empty file"
touch -d '1 min ago' fl.lock
free_kept "flock(1)'s empty file" fl.lock
"$PIDLOCK" --keep-file kept.lock true || fail "--keep-file run failed"
free_kept "a --keep-file leftover" kept.lock
"$PIDLOCK" --exec ex.lock true || fail "--exec run failed"
free_kept "an --exec leftover (the command's exit is its release)" ex.lock
: > touched.lock
touch -d '1 min ago' touched.lock
free_kept "a file made with ': >'" touched.lock
# pidlock takes flock(1)'s file over, and keeps it on release, so that
# flock(1) users sharing the path stay exclusive.
ino=$(stat -c %i fl.lock)
"$PIDLOCK" fl.lock true || fail "pidlock on flock(1)'s file failed"
[ "$(stat -c %i fl.lock 2>/dev/null)" = "$ino" ] || fail "pidlock deleted or replaced flock(1)'s file"
free_kept "flock(1)'s file after a pidlock run" fl.lock
expect 0 "--list exits 0" -- "$PIDLOCK" --list .
"$PIDLOCK" --list . > out
for f in fl.lock kept.lock ex.lock touched.lock; do
	grep -q "^$f *free " out || fail "--list: $f: $(cat out)"
done
pass "--list shows the kept files as free"

# The manual's monitoring example names none of them...
"$PIDLOCK" --list . | awk '$2 == "abandoned" { print $1 }' > named
[ ! -s named ] || fail "the monitoring example names: $(cat named)"
pass "the monitoring example is silent for kept files"

# ...but a crashed holder's file is abandoned, exit 2, and it names that.
crash_holder crash.lock pids/crash.cmdpid
crash=$LAST
expect 2 "a crashed holder's file: exit 2" -- "$PIDLOCK" --status crash.lock
"$PIDLOCK" --list . | awk '$2 == "abandoned" { print $1 }' > named
[ "$(cat named)" = crash.lock ] || fail "the monitoring example names: $(cat named)"
pass "the monitoring example names the crashed holder's file, and only it"

# The named holder.  flock(1) holds the crashed holder's file, whose
# record still names the dead pid: the message names flock(1).
dead=$crash
bg_peer flock crash.lock sleep 30
fl=$LAST
wait_until held crash.lock
[ "$(field crash.lock pid)" = "$dead" ] || fail "the record changed: $(cat crash.lock)"
"$PIDLOCK" -n crash.lock true 2> err
[ $? -eq 1 ] || fail "busy: exit status"
grep -qx "pidlock: crash.lock: lock is busy, held by pid $fl holding flock (the file names pid $dead, which is not running)" err ||
	fail "busy message: $(cat err)"
pass "busy: names flock(1)'s pid, and the recorded pid as not running"
"$PIDLOCK" --remove crash.lock 2> err
[ $? -eq 1 ] && grep -q "not removed, held by pid $fl holding flock" err ||
	fail "--remove: $(cat err)"
pass "--remove names flock(1)'s pid too"
"$PIDLOCK" --status crash.lock > out
grep -q "kernel: *flock (taken by pid $fl)" out || fail "--status: $(cat out)"
status_json crash.lock
[ "$(js state)" = held ] && [ "$(js kernel_pid)" = "$fl" ] || fail "JSON: $(cat j)"
pass "--status names flock(1)'s pid as the kernel's holder"
kill -KILL -- "-$fl"

# The kernel's record names the process that took the lock; when that
# pidlock is killed and its command holds on through the inherited
# descriptor, the holder named is the command.
for kinds in "flock,fcntl:" "fcntl:--fcntl-only"; do
	k=${kinds%%:*} opt=${kinds#*:}
	rm -f pass.lock pids/pass.cmdpid
	# shellcheck disable=SC2086 # $opt is one option or none
	start_bg $opt pass.lock sh -c 'echo $$ > pids/pass.cmdpid; exec sleep 30'
	pl=$LAST
	wait_until test -s pids/pass.cmdpid
	cmd=$(cat pids/pass.cmdpid)
	kill -KILL "$pl"
	wait "$pl" 2>/dev/null
	held pass.lock || fail "$k: the command lost the lock"
	"$PIDLOCK" -n pass.lock true 2> err
	grep -qx "pidlock: pass.lock: lock is busy, held by pid $cmd holding $k (the file names pid $pl, which is not running)" err ||
		fail "$k, passed on: $(cat err)"
	pass "$k: the lock passed on to the command: the message names the command"
	kill -KILL "$cmd"
	wait_until gone "$cmd"
done
done_testing
