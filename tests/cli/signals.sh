#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Signals sent to pidlock reach the command; the command's death by a
# signal becomes 128+N.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

# A command that records every forwarded signal but SIGTERM.
cat > catcher.py <<'PY'
import os, signal, sys, time
out = sys.argv[1]
def note(sig, frame):
    with open(out, "a") as f:
        f.write(signal.Signals(sig).name + "\n")
for s in ("SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"):
    signal.signal(getattr(signal, s), note)
with open(out + ".pid", "w") as f:
    f.write(str(os.getpid()))
os.rename(out + ".pid", out + ".cmdpid")
while True:
    time.sleep(1)
PY

start_bg x.lock "$PYTHON" catcher.py got
pl=$LAST
wait_until test -s got.cmdpid
for sig in INT HUP QUIT USR1 USR2; do
	kill -s "$sig" "$pl"
	wait_until grep -qx "SIG$sig" got
	kill -0 "$pl" 2>/dev/null || fail "pidlock died of SIG$sig"
	pass "SIG$sig is forwarded to the command"
done
[ "$(sort got | uniq -d)" = "" ] || fail "a signal arrived twice: $(cat got)"
pass "each signal arrived once"
held x.lock || fail "the lock is not held while the command runs"
kill -s TERM "$pl"
wait "$pl"
rc=$?
[ $rc -eq 143 ] || fail "SIGTERM: pidlock exited $rc, expected 143"
pass "SIGTERM is forwarded; the command's death by it exits 128+15"
[ ! -e x.lock ] || fail "lock file left after the command died of a signal"
pass "the lock is released when the command dies of a signal"

# Killed directly, with a signal nobody forwards.
start_bg x.lock sh -c 'echo $$ > k.cmdpid; exec sleep 30'
pl=$LAST
wait_until test -s k.cmdpid
kill -KILL "$(cat k.cmdpid)"
wait "$pl"
rc=$?
[ $rc -eq 137 ] || fail "SIGKILL of the command: pidlock exited $rc, expected 137"
pass "a command killed by SIGKILL gives 128+9"

# Ignored when pidlock starts (nohup): ignored for both, not forwarded.
( trap '' HUP; exec "$PIDLOCK" y.lock "$PYTHON" catcher.py ign ) &
pl=$!
track $pl
wait_until test -s ign.cmdpid
kill -s HUP "$pl"
kill -s USR1 "$pl"
wait_until grep -qx SIGUSR1 ign
grep -q SIGHUP ign && fail "an ignored SIGHUP was forwarded"
kill -0 "$pl" || fail "pidlock died of an ignored SIGHUP"
pass "a signal ignored at start stays ignored and is not forwarded"
kill -s TERM "$pl"
wait "$pl"
[ $? -eq 143 ] || fail "SIGTERM after the ignored one"

# A command that ignores SIGTERM keeps the lock until it exits.
# It runs until told (touch t.go), however slow the machine.
start_bg x.lock sh -c 'trap "" TERM; echo $$ > t.cmdpid; '"$SH_WAIT_FOR"'
	wait_for t.go; exit 3'
pl=$LAST
wait_until test -s t.cmdpid
kill -s TERM "$pl"
sleep 0.2	# room for a wrong exit; the command is still there
kill -0 "$pl" || fail "pidlock exited although its command ignores SIGTERM"
held x.lock || fail "the lock was released while the command runs"
pass "pidlock waits for a command that ignores the signal, lock held"
touch t.go
wait "$pl"
[ $? -eq 3 ] || fail "exit status after an ignored SIGTERM"
pass "and then passes on its exit status"
done_testing
