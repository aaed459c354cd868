#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A holder in this pid namespace, a reader in a child one with its own
# /proc (a container that shares the directory): /proc/locks there leaves
# the holder out, and the kernel's own answer must say held
# (doc/protocol.md, 5a, "Pid namespaces").  Holders: flock(1) -x and -s,
# with-lock-ex (a POSIX lock), pidlock itself.  Needs root and
# unshare(1); skipped otherwise.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99
export PIDLOCK

for p in flock with-lock-ex unshare; do
	command -v $p >/dev/null || fail "$p is not installed"
done
if ! unshare -p -f --mount-proc true 2>/dev/null; then
	echo "SKIP: unshare -p -f --mount-proc fails here (needs root and" \
	     "pid namespaces)"
	exit 77
fi

# in_ns COMMAND...: run it in a new pid namespace with its own /proc.
in_ns() {
	unshare -p -f --mount-proc "$@"
}

# Does this namespace's /proc/locks list a lock on FILE?
listed() {
	grep -q ":$(stat -c %i "$1") " /proc/locks
}

# An empty file as flock(1) leaves it, past the library's grace period.
aged() {
	: > "$1"
	touch -d '1 minute ago' "$1"
}

aged x.lock
bg_peer flock -x x.lock sleep 300
wait_until listed x.lock
"$PIDLOCK" --status x.lock > here
[ $? -eq 1 ] || fail "--status here: $(cat here)"
grep -q "outside this pid namespace" here && fail "hidden here: $(cat here)"
pass "here, flock(1)'s holder is named: $(sed -n 's/^ *kernel: *//p' here)"

in_ns "$PIDLOCK" --status x.lock > st
rc=$?
[ $rc -eq 1 ] || fail "--status in a child pid namespace: exit $rc: $(cat st)"
grep -q "kernel:  flock (held by a process outside this pid namespace)" st ||
	fail "--status does not say where the holder is: $(cat st)"
pass "--status in a child pid namespace: held by flock(1), outside it"

in_ns "$PIDLOCK" --status --json x.lock > j
JRC=$?
json_flat j
[ $JRC -eq 1 ] && [ "$(jv j 0 state)" = held ] &&
	[ "$(jv j 0 holder_hidden)" = true ] &&
	[ "$(jv j 0 kernel_pid)" = null ] ||
	fail "--json: exit $JRC, $(cat j)"
pass "--status --json: held, holder_hidden true, kernel_pid null"

"$PIDLOCK" --status --json x.lock > j
json_flat j
[ "$(jv j 0 holder_hidden)" = false ] || fail "--json here: $(cat j)"
pass "--status --json here: holder_hidden false"

in_ns "$PIDLOCK" --list . > ls
grep -q "^x.lock *held .*(held by a process outside this pid namespace)" ls ||
	fail "--list: $(cat ls)"
pass "--list in a child pid namespace: held, outside it"

in_ns "$PIDLOCK" -n x.lock true 2> busy
rc=$?
[ $rc -eq 1 ] || fail "pidlock -n in a child pid namespace: exit $rc"
grep -q "busy, held by a process outside this pid namespace holding flock" busy ||
	fail "the busy message: $(cat busy)"
pass "the busy message names no pid, says outside this pid namespace"

# --- shared: flock(1) -s; the probe must not take it for free ------------------
aged s.lock
bg_peer flock -s s.lock sleep 300
wait_until listed s.lock
in_ns "$PIDLOCK" --status s.lock > st
[ $? -eq 1 ] || fail "--status of flock -s: $(cat st)"
grep -q "mode:    shared" st && grep -q "outside this pid namespace" st ||
	fail "--status of flock -s: $(cat st)"
pass "flock(1) -s outside: held, shared, outside this pid namespace"

# --- with-lock-ex: a POSIX lock, whose pid F_OFD_GETLK gives as 0 -------------
aged w.lock
bg_peer with-lock-ex w.lock sleep 300
wait_until listed w.lock
in_ns "$PIDLOCK" --status w.lock > st
[ $? -eq 1 ] || fail "--status of with-lock-ex's: $(cat st)"
grep -q "kernel:  fcntl (held by a process outside this pid namespace)" st ||
	fail "--status of with-lock-ex's: $(cat st)"
pass "with-lock-ex outside: held (fcntl), outside this pid namespace"

# --- pidlock itself: its OFD lock is listed, its flock is not -----------------
start_bg p.lock sleep 300
wait_until held p.lock
in_ns "$PIDLOCK" --status p.lock > st
[ $? -eq 1 ] || fail "--status of pidlock's: $(cat st)"
grep -q "kernel:  flock,fcntl (held by a process outside this pid namespace)" st ||
	fail "--status of pidlock's: $(cat st)"
grep -q "pid: .*(not judged here: another pid namespace's)" st ||
	fail "the record's pid is not said to be another namespace's: $(cat st)"
pass "pidlock outside: held, flock,fcntl, its recorded pid not ours"

# --- a free file stays free --------------------------------------------------
aged free.lock
in_ns "$PIDLOCK" --status free.lock > st
[ $? -eq 0 ] || fail "a free file in a child pid namespace: $(cat st)"
pass "a free file reads free in a child pid namespace"

# --- semaphores: the look needs no /proc/locks --------------------------------
# Slot 0 held by flock(1), slot 1 by with-lock-ex, both outside: the
# reader's --status counts both, and its acquire gets slot 2.
aged sem.0
aged sem.1
bg_peer flock -x sem.0 sleep 300
bg_peer with-lock-ex sem.1 sleep 300
wait_until listed sem.0
wait_until listed sem.1
in_ns "$PIDLOCK" --status --slots 2 sem > st
[ $? -eq 1 ] || fail "--status --slots 2: $(cat st)"
grep -q "sem: semaphore, 2 of 2 slots held" st || fail "--slots: $(cat st)"
pass "--status --slots in a child pid namespace: 2 of 2 held"
# The look finds flock(1)'s hidden hold too (inspect's probe): sem.0 is
# skipped without a try, which would open it for writing (a close event
# for every waiter) and make a temp file for nothing.
if command -v strace >/dev/null; then
	# LeakSanitizer cannot run under ptrace (make check-asan).
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	in_ns strace -f -o trace -e trace=open,openat \
		"$PIDLOCK" -n --slots 2 sem true 2>/dev/null
	rc=$?
	[ $rc -eq 1 ] || fail "-n --slots 2 with both held: exit $rc"
	grep -q 'sem\.0", O_RDONLY' trace || fail "sem.0 was never looked at"
	grep 'sem\.0", O_RDWR' trace &&
		fail "sem.0, held outside, was tried: opened for writing"
	pass "the slots' look skips sem.0, held outside, without a try"
else
	echo "# strace not installed: the look's skip of sem.0 not checked"
fi
slot=$(in_ns "$PIDLOCK" -n --slots 3 sem sh -c 'echo $PIDLOCK_SLOT')
[ "$slot" = 2 ] || fail "the slot taken in a child pid namespace: '$slot'"
pass "an acquire in a child pid namespace takes slot 2"

# --- pidlock FD under a wrapper, in a container whose shell is pid 1 ---------
# The record names the shell, pid 1 there, not timeout(1) between.
got=$(in_ns bash -c 'exec 9<>c.lock || exit 90
	timeout 5 "$PIDLOCK" -n 9 || exit 91
	sed -n "s/^pid=//p" c.lock; exit 0')
[ "$got" = 1 ] || fail "timeout 5 pidlock -n 9 under a pid-1 shell: pid=$got"
pass "timeout 5 pidlock -n 9 under a container's pid-1 shell names pid 1"

done_testing
