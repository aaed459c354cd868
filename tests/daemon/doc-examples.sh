#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The service files of doc/examples, with examples/daemon in them:
#  - systemd-analyze verify finds nothing to say about the unit;
#  - the SysV init script starts, reports (LSB status_of_proc, which reads
#    the first line with pidofproc), stops, and restarts after a SIGKILL;
#  - its restart across the upgrade from a hand-written pidfile stops the
#    legacy daemon (pidlock --stop --legacy-exec) and starts the new one.
# Run under tests/daemon/reaper (see flow-example.sh).
set -eu
top=${srcdir:-.}
daemon=$PWD/examples/daemon
. "$(dirname "$0")/init-test.sh"
init_test_needs doc-examples " (systemd, dpkg)" systemd-analyze \
	start-stop-daemon
init_test_tmp doc
umask 022
fail() { echo "not ok - $*" >&2; exit 1; }

# --- systemd --------------------------------------------------------------
sed -e "s|/usr/sbin/exampled|$daemon|" -e "s|/run/exampled.pid|$pidfile|g" \
	"$top/doc/examples/daemon.service" >"$tmp/exampled.service"
grep -q "^ExecStart=$daemon $pidfile\$" "$tmp/exampled.service" ||
	fail "unit: ExecStart= not as expected"
out=$(cd "$tmp" && systemd-analyze verify --man=no ./exampled.service 2>&1) ||
	fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify: $out"
echo "ok 1 - systemd-analyze verify: Type=forking, PIDFile="

# --- SysV / LSB -------------------------------------------------------------
init() { DAEMON=$daemon PIDFILE=$pidfile PIDLOCK=$PWD/tools/pidlock sh "$top/doc/examples/daemon.init" "$@"; }
alive() { [ -d "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
wait_gone() {
	i=0
	while [ -e "/proc/$1" ]; do	# reaped, not just a zombie
		i=$((i + 1)); [ $i -le 500 ] || fail "pid $1 did not go away"; sleep 0.02
	done
}
status() { rc=0; init status >/dev/null 2>&1 || rc=$?; echo $rc; }

init start >/dev/null || fail "init start"
p1=$(head -n1 "$pidfile")
alive "$p1" || fail "init start: $p1 not running"
[ "$(status)" = 0 ] || fail "init status while running"
init start >/dev/null || fail "init start while running"
[ "$(head -n1 "$pidfile")" = "$p1" ] || fail "second init start replaced $p1"
echo "ok 2 - init start, status 0 (pidofproc read pid $p1), start again is a no-op"

kill -9 "$p1"
wait_gone "$p1"
[ "$(status)" = 1 ] || fail "init status after SIGKILL: want 1 (dead, pidfile exists)"
init start >/dev/null || fail "init start after SIGKILL"
p2=$(head -n1 "$pidfile")
[ "$p2" != "$p1" ] && alive "$p2" || fail "restart after SIGKILL"
echo "ok 3 - after SIGKILL: status 1, start at once (pid $p2)"

init stop >/dev/null || fail "init stop"
wait_gone "$p2"
[ ! -e "$pidfile" ] || fail "init stop left the pidfile"
[ "$(status)" = 3 ] || fail "init status after stop: want 3"
init stop >/dev/null || fail "init stop when stopped"
echo "ok 4 - init stop: daemon and file gone, status 3"

# --- restart across the upgrade from a hand-written pidfile -----------------
# The version before the migration: $tmp/exampled (a copy of sleep(1))
# writes its bare pid itself and holds no lock.  The upgrade replaces
# $tmp/exampled by the new daemon, then restarts: stop must find the old
# one (its executable now "$tmp/exampled (deleted)"), and start the new.
exampled=$tmp/exampled
cp "$(command -v sleep)" "$exampled"
sh -c 'echo $$ > "$0"; exec "$1" 300' "$pidfile" "$exampled" &
old=$!
i=0
until [ "$(head -n1 "$pidfile" 2>/dev/null)" = "$old" ] &&
	grep -q '^Name:[[:space:]]*exampled$' "/proc/$old/status"; do
	i=$((i + 1)); [ $i -le 500 ] || fail "the legacy daemon did not start"; sleep 0.02
done
rm -f "$exampled"
cp "$daemon" "$exampled"
out=$(DAEMON=$exampled PIDFILE=$pidfile PIDLOCK=$PWD/tools/pidlock \
	sh "$top/doc/examples/daemon.init" restart 2>&1) ||
	fail "init restart across the upgrade: $out"
case $out in *failed*) fail "init restart across the upgrade: $out";; esac
wait "$old" || [ $? -eq 143 ] || fail "the legacy daemon did not die of SIGTERM"
p3=$(head -n1 "$pidfile")
[ "$p3" != "$old" ] && alive "$p3" || fail "no new daemon after the restart: $out"
tr '\0' ' ' < "/proc/$p3/cmdline" | grep -q "^$exampled " ||
	fail "pid $p3 is not the new daemon"
DAEMON=$exampled PIDFILE=$pidfile PIDLOCK=$PWD/tools/pidlock \
	sh "$top/doc/examples/daemon.init" stop >/dev/null || fail "init stop after the upgrade"
wait_gone "$p3"
echo "ok 5 - init restart across the upgrade: the legacy daemon (pid $old) stopped, the new one (pid $p3) started"
echo "1..5"
