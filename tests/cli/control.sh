#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# pidlock --signal, --stop and --wait-free (issue 23), with real holders:
# pidlock's own, flock(1)'s, a shared lock's, slots; a pid in a file with
# no kernel lock is never signalled.  Waits are bounded by hang guards
# only; nothing is timed.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

command -v flock >/dev/null || fail "flock is not installed"

# A holder that writes each TERM and HUP it gets to FILE and goes on,
# unless EXIT=N says to exit after the Nth.  Python's handlers, which never
# lose a signal that arrives while one runs.
cat > catcher.py <<'PY'
import os, signal, sys, time
out = sys.argv[1]
got = 0
def note(sig, frame):
    global got
    got += 1
    with open(out, "a") as f:
        f.write(signal.Signals(sig).name[3:] + "\n")
    if got >= int(os.environ.get("EXIT", "0") or 0) > 0:
        sys.exit(0)
for s in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, note)
with open(out + ".pid", "w") as f:
    f.write(str(os.getpid()))
os.rename(out + ".pid", out + ".cmdpid")
while True:
    time.sleep(1)
PY

# lines_are FILE LINE N: FILE has N lines that are LINE, counted at each
# call (a $(...) in wait_until's arguments is counted once, at the start).
lines_are() {
	[ "$(grep -cx "$2" "$1" 2>/dev/null)" -eq "$3" ]
}

# --- usage -------------------------------------------------------------------
expect 64 "--signal with an unknown signal" -- "$PIDLOCK" --signal FOO x.lock
expect 64 "--signal 0 is refused" -- "$PIDLOCK" --signal 0 x.lock
expect 64 "--retry that ends with a signal" -- \
	"$PIDLOCK" --stop --retry TERM/1/KILL x.lock
expect 64 "--retry with an item that is neither" -- \
	"$PIDLOCK" --stop --retry TERM/x x.lock
expect 64 "-w and --retry together" -- "$PIDLOCK" --stop -w 1 --retry 5 x.lock
expect 64 "--signal and a schedule of signals" -- \
	"$PIDLOCK" --stop --signal HUP --retry TERM/1/KILL/1 x.lock
expect 64 "--retry without --stop" -- "$PIDLOCK" --retry 5 --wait-free x.lock
expect 64 "--retry with forever twice" -- \
	"$PIDLOCK" --stop --retry TERM/forever/1/forever/KILL/1 x.lock
expect 64 "--retry with forever last" -- "$PIDLOCK" --stop --retry TERM/1/forever x.lock
expect 64 "--retry whose forever part waits 0 s" -- \
	"$PIDLOCK" --stop --retry TERM/1/forever/HUP/0 x.lock
expect 64 "--stop with two lock files" -- "$PIDLOCK" --stop a.lock b.lock
expect 64 "--stop and --wait-free together" -- "$PIDLOCK" --stop --wait-free x.lock

# --- --signal ----------------------------------------------------------------
expect 1 "--signal on a free lock is refused" -- "$PIDLOCK" --signal TERM x.lock
[ ! -e x.lock ] || fail "--signal created the lock file"

start_bg x.lock "$PYTHON" catcher.py got
wait_until test -s got.cmdpid
expect 0 "--signal HUP reaches the command of a pidlock holder" -- \
	"$PIDLOCK" --signal HUP x.lock
wait_until grep -qx HUP got
expect 0 "--signal SIGHUP (the SIG spelling)" -- "$PIDLOCK" --signal SIGHUP x.lock
wait_until lines_are got HUP 2
expect 0 "--signal 1 (a number)" -- "$PIDLOCK" --signal 1 x.lock
wait_until lines_are got HUP 3
pass "each --signal arrived"
kill -KILL "$(cat got.cmdpid)"
wait "$LAST"
rm -f got got.cmdpid

# The holder itself ignores TERM (-F: the record names it, no wrapper).
start_bg -F x.lock "$PYTHON" catcher.py got
wait_until test -s got.cmdpid

# --- --stop: a holder that ignores TERM, then the escalation ------------------
expect 1 "--stop -w 1 on a holder that ignores TERM fails" -- \
	"$PIDLOCK" --stop -w 1 x.lock
held x.lock || fail "the lock is no longer held after a failed --stop"
grep -qx TERM got || fail "--stop sent no TERM: $(cat got)"
pass "the holder got TERM and still holds the lock"
expect 0 "--stop --retry TERM/1/KILL/5 kills it and says free" -- \
	"$PIDLOCK" --stop --retry TERM/1/KILL/5 x.lock
status_is x.lock 0 || fail "--stop exited 0, the lock is not free"
pass "free after --stop"
wait "$LAST" 2>/dev/null

# A lone timeout: TERM/T/KILL/T.  The lock is held before the shell has
# run its trap: wait for the sleep it execs, which ignores TERM (a TERM
# sent sooner killed the shell, on a busy machine).
"$PIDLOCK" -F x.lock sh -c 'trap "" TERM; exec sleep 300' &
pl=$!
track "$pl"
wait_until held x.lock
wait_until grep -qx sleep "/proc/$pl/comm"
expect 0 "--stop --retry 1 escalates to KILL" -- "$PIDLOCK" --stop --retry 1 x.lock
wait "$pl"
rc=$?
[ $rc -eq 137 ] || fail "the holder exited $rc, not by SIGKILL"
pass "the holder died of SIGKILL"

# forever: the steps after it again and again, until the lock is free.
# The holder notes HUP and two TERMs and exits on the third; a schedule that
# ended would have given up after one TERM (exit 1).
EXIT=4 start_bg -F x.lock "$PYTHON" catcher.py again
wait_until test -s again.cmdpid
expect 0 "--stop --retry HUP/0.1/forever/TERM/0.3 repeats TERM until free" -- \
	"$PIDLOCK" --stop --retry HUP/0.1/forever/TERM/0.3 x.lock
status_is x.lock 0 || fail "--stop exited 0, the lock is not free"
[ "$(grep -cx HUP again)" -eq 1 ] || fail "HUP before forever was repeated: $(cat again)"
[ "$(grep -cx TERM again)" -ge 3 ] || fail "TERM was not repeated: $(cat again)"
pass "the part after forever was repeated, the part before it was not"
wait "$LAST" 2>/dev/null
rm -f again again.cmdpid

# A holder that stops on TERM; --signal picks the signal of --stop.
EXIT=1 start_bg x.lock "$PYTHON" catcher.py got2
wait_until test -s got2.cmdpid
expect 0 "--stop with --signal HUP, -w" -- "$PIDLOCK" --stop --signal HUP -w 0.3 x.lock
grep -qx TERM got2 && fail "--stop --signal HUP sent TERM"
grep -qx HUP got2 || fail "--stop --signal HUP sent no HUP"
pass "--stop --signal HUP sent HUP"
rm -f got2 got2.cmdpid
EXIT=1 start_bg x.lock "$PYTHON" catcher.py got2
wait_until test -s got2.cmdpid
expect 0 "--stop without -w waits until free" -- "$PIDLOCK" --stop x.lock
status_is x.lock 0 || fail "not free after --stop"
expect 0 "--stop on a free lock succeeds" -- "$PIDLOCK" --stop x.lock
"$PIDLOCK" -v --stop x.lock 2> err
grep -q "already free" err || fail "--stop -v on a free lock: $(cat err)"
pass "--stop -v says it was free already"

# --- --stop never signals a holder that came after its look-up --------------
"$PIDLOCK" -F x.lock sh -c 'trap "" TERM; exec sleep 300' &
first=$!
track "$first"
wait_until held x.lock
start_bg -w 60 x.lock "$PYTHON" catcher.py late
late=$LAST
"$PIDLOCK" --stop --retry TERM/0.2/KILL/0.5 x.lock 2> err
rc=$?
wait "$first"
wait_until test -s late.cmdpid
[ $rc -eq 0 ] || [ $rc -eq 1 ] || fail "--stop exited $rc: $(cat err)"
[ ! -e late ] || fail "the later holder was signalled: $(cat late)"
kill -0 "$late" || fail "the later holder is gone"
pass "the holder that took the lock after the look-up got no signal (exit $rc)"
kill -KILL -- "-$late"
wait "$late"

# --- a pid in a file, no kernel lock: never signalled ------------------------
sleep 300 &
innocent=$!
track "$innocent"
echo "$innocent" > daemon.pid
expect 3 "--signal on a bare pid file: the holder cannot be proven" -- \
	"$PIDLOCK" --signal TERM daemon.pid
expect 3 "--stop on a bare pid file" -- "$PIDLOCK" --stop -w 1 daemon.pid
kill -0 "$innocent" || fail "the process the pid file names was signalled"
pass "the process a bare pid file names is alive"
spec_lock spec.lock "$innocent" "$(date +%s)"
expect 3 "--signal on a spec-only record" -- "$PIDLOCK" --signal KILL spec.lock
kill -0 "$innocent" || fail "the process a spec-only record names was killed"
pass "the process a spec-only record names is alive"

# --- --wait-free ---------------------------------------------------------------
expect 0 "--wait-free on a free lock" -- "$PIDLOCK" --wait-free x.lock
start_bg x.lock sleep 300
wait_until held x.lock
expect 1 "--wait-free -w 0.3 on a held lock times out" -- \
	"$PIDLOCK" --wait-free -w 0.3 x.lock
held x.lock || fail "--wait-free took or freed the lock"
pass "still held after --wait-free"
"$PIDLOCK" --wait-free -w 60 x.lock &
waiter=$!
kill -TERM "$LAST"
wait "$waiter"
rc=$?
[ $rc -eq 0 ] || fail "--wait-free after a release: exit $rc"
pass "--wait-free returns 0 after the release"
echo "not a lock" > data
expect 65 "--wait-free on a file that is not a lock file" -- \
	"$PIDLOCK" --wait-free data

# --- flock(1)'s holder --------------------------------------------------------
: > f.lock
touch -d '1 minute ago' f.lock
flock f.lock sleep 300 &
fl=$!
track "$fl"
wait_until held f.lock
expect 0 "--signal TERM finds flock(1)'s holder" -- "$PIDLOCK" --signal TERM f.lock
wait "$fl"
rc=$?
[ $rc -eq 143 ] || fail "flock(1) exited $rc, not by SIGTERM"
pass "flock(1) died of the SIGTERM"
pkill -KILL -f "sleep 300" -P "$fl" 2>/dev/null

# --- shared: every holder -------------------------------------------------------
start_bg -s -F s.lock "$PYTHON" catcher.py s1
wait_until test -s s1.cmdpid
start_bg -s -F s.lock "$PYTHON" catcher.py s2
wait_until test -s s2.cmdpid
expect 0 "--signal HUP on a shared lock" -- "$PIDLOCK" --signal HUP s.lock
wait_until grep -qx HUP s1
wait_until grep -qx HUP s2
pass "both shared holders got it"
expect 1 "--stop -w 0.5 on shared holders that ignore TERM" -- \
	"$PIDLOCK" --stop -w 0.5 s.lock
expect 0 "--stop --retry TERM/0.5/KILL/5 on both" -- \
	"$PIDLOCK" --stop --retry TERM/0.5/KILL/5 s.lock
status_is s.lock 0 || fail "the shared lock is not free"
pass "the shared lock is free"

# --- slots ----------------------------------------------------------------------
start_bg -F --slots 2 q "$PYTHON" catcher.py q1
wait_until test -s q1.cmdpid
expect 0 "--signal with --slots 2, one slot held" -- \
	"$PIDLOCK" --signal HUP --slots 2 q
wait_until grep -qx HUP q1
start_bg -F --slots 2 q "$PYTHON" catcher.py q2
wait_until test -s q2.cmdpid
wait_until grep -qx HUP q1
expect 0 "--signal with --slots 2, both held" -- \
	"$PIDLOCK" --signal HUP --slots 2 q
wait_until lines_are q1 HUP 2
wait_until grep -qx HUP q2
pass "every slot's holder got it"
expect 1 "--wait-free --slots 2 -w 0.3 while held" -- \
	"$PIDLOCK" --wait-free --slots 2 -w 0.3 q
expect 0 "--stop --slots 2 --retry TERM/0.3/KILL/5" -- \
	"$PIDLOCK" --stop --slots 2 --retry TERM/0.3/KILL/5 q
expect 0 "--wait-free --slots 2 once all are free" -- \
	"$PIDLOCK" --wait-free --slots 2 -w 0 q
expect 1 "--signal --slots 2 with every slot free" -- \
	"$PIDLOCK" --signal HUP --slots 2 q

done_testing
