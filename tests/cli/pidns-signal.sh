#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# --signal and --stop through a /proc of another pid namespace
# (doc/protocol.md, 5a, "Pid namespaces"): pidfd_open(2) reads a pid in
# the caller's namespace, /proc in its mount's, so a holder proven in one
# and signalled by number in the other is another process.  The library
# refuses such a /proc (EREMOTE, exit 3).  The whole test runs in a pid
# namespace of its own, whose pid 1 is this script (the "host's" pid 1,
# with a trap that records what reaches it), with sacrificial sleeps at
# chosen numbers (ns_last_pid), so that nothing real is ever hit.  Needs
# root, unshare(1) and nsenter(1); skipped otherwise.
if [ -z "${PIDNS_SIGNAL_INNER:-}" ]; then
	for p in unshare nsenter mount; do
		command -v $p >/dev/null || { echo "SKIP: no $p"; exit 77; }
	done
	if ! unshare -p -f --mount-proc true 2>/dev/null; then
		echo "SKIP: unshare -p -f --mount-proc fails here (needs root" \
		     "and pid namespaces)"
		exit 77
	fi
	PIDNS_SIGNAL_INNER=1 exec unshare -p -f --mount-proc "$BASH" "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99
export PIDLOCK
# A pidlock built with AddressSanitizer cannot run through another
# namespace's /proc, which every case here does on purpose: its runtime
# reads /proc/self/exe and /proc/PID/task there and dies (LeakSanitizer's
# "fatal error", detect_leaks=0 or not).  make check-asan skips this
# test; every other build runs it.
if ldd "$(dirname "$PIDLOCK")/.libs/pidlock" 2>/dev/null | grep -q libasan; then
	echo "SKIP: pidlock is built with AddressSanitizer, whose runtime needs its own /proc"
	exit 77
fi

[ $$ -eq 1 ] || fail "not pid 1 of a namespace of our own: $$"
: > got
trap 'echo USR1 >> "$T/got"' USR1
trap 'echo USR2 >> "$T/got"' USR2

# The one child of process $1 (unshare -f's).
child_of() {
	local c
	c=$(cat "/proc/$1/task/$1/children" 2>/dev/null)
	[ -n "$c" ] && echo "${c%% *}"
}

# at_pid N COMMAND...: run COMMAND in the background as pid N of this
# namespace (the next fork after ns_last_pid N-1); LAST is its pid.
at_pid() {
	local n=$1
	shift
	echo $((n - 1)) > /proc/sys/kernel/ns_last_pid || fail "ns_last_pid"
	"$@" &
	LAST=$!
	track "$LAST"
	[ "$LAST" -eq "$n" ] || fail "wanted pid $n, got $LAST"
}

runs() {
	kill -0 "$1" 2>/dev/null && ! gone "$1"
}

# A container: pidlock holding c1.lock as its pid 1, in its own pid and
# mount namespaces with its own /proc.  The record names pid 1.
env --default-signal=INT,QUIT,HUP,USR1,USR2,TERM \
	unshare -p -f --mount-proc "$PIDLOCK" c1.lock sleep 300 &
track $!
wait_until child_of $! >/dev/null
CPID=$(child_of $!)
wait_until held c1.lock
[ "$(field c1.lock pid)" = 1 ] || fail "the container's record: $(cat c1.lock)"
wait_until child_of "$CPID" >/dev/null
CSLEEP=$(child_of "$CPID")
pass "a container's holder: pid 1 there, $CPID here"

# --- nsenter -m: the container's files through its /proc ------------------
nsenter -t "$CPID" -m -r "$PIDLOCK" --signal USR1 "$T/c1.lock" 2> err
rc=$?
sleep 0.2	# a trap runs between commands; a signal sent is there now
grep -q USR1 got && fail "our pid 1 got the USR1 meant for the container's"
[ $rc -eq 3 ] || fail "--signal through the container's /proc: exit $rc, $(cat err)"
grep -q "out of sight" err || fail "the refusal: $(cat err)"
runs "$CSLEEP" || fail "the container's holder was signalled"
pass "nsenter -m --signal USR1: refused (exit 3), our pid 1 untouched"

# --- unshare -m, and a /proc of the container's pid namespace mounted ------
# The mount is made by a process of the container's pid namespace (its
# procfs is its active namespace's) in the mount namespace of a process
# of ours (a sleep), where pidlock then runs.
unshare -m --propagation private sleep 300 &
MNT=$!
track "$MNT"
own_mnt() {
	[ "$(readlink "/proc/$1/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ]
}
wait_until own_mnt "$MNT"
nsenter -t "$MNT" -m -r --pid="/proc/$CPID/ns/pid" mount -t proc proc /proc ||
	fail "mounting the container's /proc"
nsenter -t "$MNT" -m -r "$PIDLOCK" --signal USR2 "$T/c1.lock" 2> err
rc=$?
sleep 0.2
grep -q USR2 got && fail "our pid 1 got the USR2 meant for the container's"
[ $rc -eq 3 ] || fail "--signal with another /proc mounted: exit $rc, $(cat err)"
pass "unshare -m, another namespace's /proc mounted: refused (exit 3)"

# --- --status here: the record's pid 1 is the container's ---------------------
"$PIDLOCK" --status c1.lock > st
grep -q "pid: *1 (not judged here: another pid namespace's)" st ||
	fail "--status of the container's record: $(cat st)"
grep -q "pid: *1 (running)" st && fail "our pid 1 taken for the holder"
pass "--status here: the record's pid 1 not judged (another pid namespace's)"

# --- --stop: an innocent process with the holder's number -------------------
# The holder is pid 200 in a second container; our pid 200 is a sleep.
env --default-signal=INT,QUIT,HUP,USR1,USR2,TERM \
	unshare -p -f --mount-proc sh -c \
	'echo 199 > /proc/sys/kernel/ns_last_pid; "$0" c2.lock sleep 300 & wait' \
	"$PIDLOCK" &
track $!
wait_until child_of $! >/dev/null
C2=$(child_of $!)
wait_until held c2.lock
[ "$(field c2.lock pid)" = 200 ] || fail "the second container's record: $(cat c2.lock)"
at_pid 200 sleep 300
INNOCENT=$LAST
nsenter -t "$C2" -m -r "$PIDLOCK" --stop --retry TERM/1/KILL/1 "$T/c2.lock" 2> err
rc=$?
runs "$INNOCENT" || fail "--stop killed our pid 200, an innocent sleep (exit $rc)"
[ $rc -eq 3 ] || fail "--stop through the container's /proc: exit $rc, $(cat err)"
held c2.lock || fail "the holder is gone"
pass "nsenter -m --stop --retry TERM/1/KILL/1: refused, the innocent lives"

# --- unshare -p -f without --mount-proc: our /proc is the parent's ---------
# The holder is our pid 300; in the child namespace, pid 300 is a sleep.
at_pid 300 env --default-signal=INT,QUIT,HUP,USR1,USR2,TERM \
	"$PIDLOCK" c3.lock sleep 300
wait_until held c3.lock
unshare -p -f sh -c 'echo 299 > /proc/sys/kernel/ns_last_pid || exit 90
	sleep 300 & s=$!
	[ "$s" = 300 ] || exit 91
	"$0" --signal USR1 c3.lock 2> err; rc=$?
	sleep 0.2
	kill -0 $s 2>/dev/null || exit 92
	kill $s
	exit $rc' "$PIDLOCK"
rc=$?
[ $rc -eq 92 ] && fail "the child namespace's pid 300 was signalled"
[ $rc -eq 3 ] || fail "--signal in unshare -p -f: exit $rc, $(cat err)"
held c3.lock || fail "the holder was signalled"
pass "unshare -p -f (the parent's /proc): refused, its pid 300 untouched"

# --- our own /proc: the right process --------------------------------------
# From here the container's holder is proven by the number our /proc and
# pidfd_open(2) share; the signal reaches it, and our pid 1 gets nothing.
"$PIDLOCK" --signal TERM c1.lock 2> err || fail "--signal TERM here: $(cat err)"
wait_until gone "$CSLEEP"
wait_until status_is c1.lock 0
sleep 0.2
[ -s got ] && fail "our pid 1 got: $(cat got)"
pass "--signal TERM here reaches the container's holder, not our pid 1"

done_testing
