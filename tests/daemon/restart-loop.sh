#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# doc/examples/daemon.init with examples/daemon, stopped (pidlock --stop)
# and started again, ROUNDS times (default 10), under tests/daemon/reaper.
# A journal line per round: the old daemon's pid, what the lock was when
# stop returned, the new pid.  Each stop must return with the lock free
# and the old daemon reaped, so each start finds its way clear; an
# innocent process that runs all along, and records every signal it
# gets, must get none.
set -eu
top=${srcdir:-.}
daemon=$PWD/examples/daemon
pidlock=$PWD/tools/pidlock
rounds=${ROUNDS:-10}
. "$(dirname "$0")/init-test.sh"
init_test_needs restart-loop "" start-stop-daemon python3
init_test_tmp restart
umask 022
fail() { echo "not ok - $*" >&2; [ -f "$tmp/journal" ] && cat "$tmp/journal" >&2; exit 1; }
init() { DAEMON=$daemon PIDFILE=$pidfile PIDLOCK=$pidlock sh "$top/doc/examples/daemon.init" "$@"; }
lock_state() { rc=0; "$pidlock" --status "$pidfile" >/dev/null 2>&1 || rc=$?; echo $rc; }

# The innocent: every signal it gets goes to its file.
cat > "$tmp/innocent.py" <<'PY'
import signal, sys, time
out = sys.argv[1]
def note(sig, frame):
    with open(out, "a") as f:
        f.write(signal.Signals(sig).name + "\n")
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGUSR1):
    signal.signal(s, note)
open(out + ".ready", "w").close()
while True:
    time.sleep(1)
PY
python3 "$tmp/innocent.py" "$tmp/innocent.got" &
innocent=$!
i=0
while [ ! -e "$tmp/innocent.got.ready" ]; do
	i=$((i + 1)); [ $i -le 500 ] || fail "the innocent never started"; sleep 0.02
done

init start >/dev/null || fail "first start"
for round in $(seq "$rounds"); do
	old=$(head -n1 "$pidfile")
	[ -d "/proc/$old" ] || fail "round $round: daemon $old is not running"
	rc=0; init stop >/dev/null || rc=$?
	[ $rc -eq 0 ] || fail "round $round: init stop exited $rc"
	# The marker: what the lock was the moment stop returned.
	state=$(lock_state)
	echo "round $round: stop of pid $old returned with the lock state $state" >> "$tmp/journal"
	[ "$state" != 1 ] || fail "round $round: stop returned, the lock still held"
	i=0
	while [ -e "/proc/$old" ]; do	# reaped: gone for good
		i=$((i + 1)); [ $i -le 500 ] || fail "round $round: $old stayed"; sleep 0.02
	done
	init start >/dev/null || fail "round $round: start after stop"
	new=$(head -n1 "$pidfile")
	[ "$new" != "$old" ] && [ -d "/proc/$new" ] ||
		fail "round $round: no new daemon after start ($new)"
	echo "round $round: started pid $new" >> "$tmp/journal"
done
init stop >/dev/null || fail "last stop"
[ ! -e "$tmp/innocent.got" ] || fail "the innocent was signalled: $(cat "$tmp/innocent.got")"
cat "$tmp/journal"
echo "ok 1 - $rounds rounds of init stop (pidlock --stop) and start: each stop returned with the lock free, the innocent got no signal"
echo "1..1"
