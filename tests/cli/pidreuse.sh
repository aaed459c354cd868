#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The pid-reuse race of issue 23, made to happen every time: a holder
# exits and its pid goes at once to an innocent process, between the
# look-up of the holder and the signal.  In a private pid namespace the
# next pid is ours to choose (/proc/sys/kernel/ns_last_pid), and the
# fault shim (tests/fault/faultshim.c) runs the swap inside pidlock, right
# before its pidfd_open(2) or its pidfd_send_signal(2).
#  (a) kill -TERM $(head -n1 pidfile), with the swap between the read and
#      the kill: the innocent gets TERM.  This must happen, or the harness
#      proves nothing.
#  (b) pidlock --signal TERM, the swap before its pidfd_open: the innocent
#      never gets it.
#  (c) the same, the swap after the pidfd is open and proven, before the
#      signal: never either.
# Needs root (unshare -p, ns_last_pid); skipped otherwise.
. "$(dirname "$0")/lib.sh"

if [ "${PIDREUSE_INNER:-}" != 1 ]; then
	shim_preload
	REAPER=$PWD/tests/daemon/reaper
	[ -x "$REAPER" ] || { echo "no $REAPER: make check builds it" >&2; exit 99; }
	if ! unshare -p -f --mount-proc sh -c \
		'echo 100 > /proc/sys/kernel/ns_last_pid' 2>/dev/null; then
		echo "SKIP: unshare -p -f --mount-proc, or writing ns_last_pid" \
		     "in it, is not allowed here (needs root and pid namespaces)"
		exit 77
	fi
	# The reaper is the namespace's pid 1: a killed holder is reaped at
	# once, so that its pid is free to be given again.
	PIDREUSE_INNER=1 SHIM=$SHIM PIDLOCK=$PIDLOCK PYTHON=$PYTHON \
		unshare -p -f --mount-proc "$REAPER" bash "$0"
	exit $?
fi

cd "$T" || exit 99
export DIR=$T

# The innocent: records each signal it gets; ready once it listens.
cat > innocent-prog.py <<'PY'
import os, signal, sys, time
d = os.environ["DIR"]
def note(sig, frame):
    with open(os.path.join(d, "innocent.got"), "a") as f:
        f.write(signal.Signals(sig).name + "\n")
    if sig == signal.SIGTERM:
        sys.exit(143)
for s in (signal.SIGTERM, signal.SIGWINCH):
    signal.signal(s, note)
open(os.path.join(d, "innocent.ready"), "w").close()
while True:
    time.sleep(1)
PY

# The swap: the holder killed and reaped, its pid given to the innocent.
# Nothing forks between the write of ns_last_pid and the innocent's fork.
# The kernel may free the pid a moment after /proc stops showing it
# (release_task() frees the pids after the task is unhashed): an
# innocent that got the next pid instead is killed, and the swap tried
# again.
cat > swap.sh <<SH
P=\$(cat "$T/holder.pid")
kill -KILL "\$P"
while [ -e "/proc/\$P" ]; do sleep 0.01; done
n=0
while :; do
	echo \$((P - 1)) > /proc/sys/kernel/ns_last_pid
	"$PYTHON" "$T/innocent-prog.py" < /dev/null > /dev/null 2>&1 &
	I=\$!
	[ "\$I" = "\$P" ] && break
	kill -KILL "\$I"
	wait "\$I" 2>/dev/null
	rm -f "$T/innocent.ready"
	n=\$((n + 1))
	[ \$n -lt 100 ] || break
	sleep 0.01
done
echo \$I > "$T/innocent.pid"
i=0; while [ ! -e "$T/innocent.ready" ] && [ \$i -lt 1000 ]; do i=\$((i + 1)); sleep 0.01; done
echo "\$1" > "$T/swapped"
SH

# A holder whose record names it (--exec: pidlock becomes the command),
# the bare pid on the first line as a classic pidfile has it; its parent
# exits, so the reaper is its parent.
start_holder() {
	rm -f holder.pid innocent.* swapped
	( "$PIDLOCK" --exec --plain-pid x.lock sleep 300 >/dev/null 2>&1 &
	  echo $! > holder.pid )
	wait_until held x.lock
	[ "$(head -n1 x.lock)" = "$(cat holder.pid)" ] ||
		fail "the pidfile does not name the holder"
}

# The swap happened, the innocent has the holder's pid.
check_swapped() {
	[ -e swapped ] || fail "$1: the swap never ran"
	[ "$(cat innocent.pid)" = "$(cat holder.pid)" ] ||
		fail "$1: the innocent got pid $(cat innocent.pid), not $(cat holder.pid)"
}

# Did the innocent get TERM?  A WINCH sent now arrives after any TERM
# already sent (standard signals pending together go lowest first, and
# Python runs its handlers in that order), so the answer is final.
innocent_got_term() {
	local p
	p=$(cat innocent.pid)
	if kill -WINCH "$p" 2>/dev/null; then
		wait_until grep -qx SIGWINCH innocent.got
	fi
	grep -qx SIGTERM innocent.got 2>/dev/null
}

stop_innocent() {
	kill -KILL "$(cat innocent.pid)" 2>/dev/null
	wait_until gone "$(cat innocent.pid)"
}

# --- (a) the naive way --------------------------------------------------
start_holder
P=$(cat holder.pid)
pid=$(head -n1 x.lock)
sh swap.sh naive
kill -TERM "$pid"
check_swapped naive
wait_until test -e innocent.got
grep -qx SIGTERM innocent.got || fail "naive: the innocent got $(cat innocent.got)"
echo "# (a) naive kill -TERM \$(head -n1 pidfile): read pid $P, the holder" \
     "exited, pid $P went to an innocent process, kill signalled it: RED"
pass "the naive kill signals the innocent that got the holder's pid (the harness can fail)"
wait_until gone "$(cat innocent.pid)"

# The hooks below interpose syscall(2) from a preloaded shim: a program
# linked with musl (make check-musl) does not reach it there (the swap
# never runs), so (b) and (c) run in the C library builds only.
bin=$PIDLOCK
[ -x "$(dirname "$PIDLOCK")/.libs/$(basename "$PIDLOCK")" ] &&
	bin=$(dirname "$PIDLOCK")/.libs/$(basename "$PIDLOCK")
if grep -aq 'ld-musl' "$bin"; then
	echo "# SKIP (b), (c): $bin is linked with musl, whose syscall(2)" \
	     "the fault shim does not interpose; (a) ran"
	exit 77
fi

# pidlock --signal TERM with the swap run from the hook named by $1 (an
# environment variable of the fault shim); $2 says where, $3 what the
# fd the hook saw was.
signal_across_swap() {
	local hook=$1 where=$2 P rc
	start_holder
	P=$(cat holder.pid)
	env LD_PRELOAD="$SHIM" "$hook=$T/swap.sh" \
		"$PIDLOCK" --signal TERM x.lock 2> err
	rc=$?
	check_swapped "$where"
	innocent_got_term && fail "$where: pidlock signalled the innocent"
	[ $rc -eq 1 ] || fail "$where: exit $rc, expected 1: $(cat err)"
	echo "# pidlock --signal TERM, the swap $where ($3 $(cat swapped)):" \
	     "pid $P went to an innocent, which got nothing; exit $rc: $(cat err)"
	pass "pidlock --signal never signals the innocent (swap $where)"
	stop_innocent
}

# (b) before its pidfd_open; (c) after the pidfd is open and proven.
signal_across_swap FAULT_BEFORE_PIDFD_OPEN "before pidfd_open" "pidfd_open of"
signal_across_swap FAULT_BEFORE_PIDFD_SEND_SIGNAL \
	"after the pidfd was proven, before pidfd_send_signal" "pidfd"

done_testing
