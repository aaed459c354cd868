#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# flow.sh KIND DAEMON: the daemon flow of doc/daemon.md, run against the
# real start-stop-daemon (dpkg) and pgrep/pkill (procps).  Run it under
# tests/daemon/reaper, so killed daemons do not linger as zombies.
#
# KIND  example  examples/daemon (pidlock_daemon_open, fork, rebind)
#       pidfile  tests/daemon/bsd-daemon.c switched to <pidlock-pidfile.h>
#       libbsd   the same source built with libbsd, as the reference
#
# Every step below holds for all three kinds, except where KIND says.
set -eu

kind=$1
daemon=$2
ssd=start-stop-daemon

for tool in "$ssd" pgrep pkill; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "flow.sh: $tool is required (dpkg, procps)" >&2; exit 99; }
done
[ -x "$daemon" ] || { echo "flow.sh: no $daemon" >&2; exit 99; }
case $daemon in /*) ;; *) daemon=$PWD/$daemon ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-flow.XXXXXX")
pidfile=$tmp/d.pid
innocent=
cleanup() {
	pid=$(head -n1 "$pidfile" 2>/dev/null || true)
	case $pid in ''|*[!0-9]*) ;; *) kill -9 "$pid" 2>/dev/null || true ;; esac
	[ -z "$innocent" ] || kill -9 "$innocent" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
# The tests ask for 0644, so take the umask out of the picture.
umask 022

step=0
ok() { step=$((step + 1)); echo "ok $step - $kind: $*"; }
fail() { echo "not ok - $kind: $*" >&2; exit 1; }

first_line() { head -n1 "$pidfile" 2>/dev/null || true; }
is_pid() { case $1 in ''|*[!0-9]*) return 1 ;; esac; }

# Alive and not a zombie: what a real init leaves after a kill.
alive() {
	[ -r "/proc/$1/stat" ] || return 1
	state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[ -n "$state" ] && [ "$state" != Z ]
}

# Gone means reaped: kill(pid, 0), which start-stop-daemon and pidofproc
# use, still finds a zombie.  Waits are bounded; nothing measures speed.
wait_gone() {
	i=0
	while [ -e "/proc/$1" ]; do
		i=$((i + 1))
		[ $i -le 500 ] || fail "pid $1 did not go away"
		sleep 0.02
	done
}

# The file names a live process other than the launcher (a daemon(3)
# daemon writes its pid after its parent has exited).
wait_named() {
	i=0
	while :; do
		pid=$(first_line)
		if is_pid "$pid" && [ "$pid" != "$1" ] && alive "$pid"; then
			echo "$pid"
			return 0
		fi
		i=$((i + 1))
		[ $i -le 500 ] || fail "$pidfile never named the daemon"
		sleep 0.02
	done
}

# Start in the foreground the way a shell or an init script does.
start() {
	"$daemon" "$@" "$pidfile" &
	launcher=$!
	wait "$launcher" || fail "start exited with $?"
	if [ "$kind" = example ]; then
		# The parent waited for the rebind: no polling needed.
		pid=$(first_line)
		is_pid "$pid" && [ "$pid" != "$launcher" ] && alive "$pid" ||
			fail "pidfile does not name the daemon when start returns"
		echo "$pid"
	else
		wait_named "$launcher"
	fi
}

# --- a first start ------------------------------------------------------
p1=$(start)
ok "started, pid $p1"

[ "$(stat -c %a "$pidfile")" = 644 ] || fail "mode $(stat -c %a "$pidfile")"
ok "pidfile mode 0644"

if [ "$kind" != libbsd ]; then
	sed -n 2p "$pidfile" | grep -qx "pid=$p1" || fail "no pid=$p1 line"
	grep -q '^timestamp=[0-9][0-9]*$' "$pidfile" || fail "no timestamp= line"
	grep -q '^lock=' "$pidfile" || fail "no lock= line"
	ok "bare pid first, then pid=, timestamp=, lock="
fi

# --- a second instance is refused, in the foreground --------------------
if "$daemon" "$pidfile" 2>"$tmp/err"; then
	fail "second instance started"
fi
grep -q "already running (pid $p1)" "$tmp/err" ||
	fail "second instance said: $(cat "$tmp/err")"
[ "$(first_line)" = "$p1" ] && alive "$p1" || fail "second instance disturbed the first"
ok "second instance refused: $(cat "$tmp/err")"

# --- the classic readers --------------------------------------------------
$ssd --status --pidfile "$pidfile" || fail "start-stop-daemon --status: $?"
ok "start-stop-daemon --status: running"

[ "$(pgrep -F "$pidfile")" = "$p1" ] || fail "pgrep -F"
[ "$(pgrep -L -F "$pidfile")" = "$p1" ] || fail "pgrep -L -F (lock not seen)"
ok "pgrep -F and pgrep -L -F name $p1"

rc=0
$ssd --start --quiet --pidfile "$pidfile" --startas "$daemon" -- "$pidfile" || rc=$?
[ $rc = 1 ] || fail "start-stop-daemon --start while running: $rc"
[ "$(first_line)" = "$p1" ] || fail "start-stop-daemon --start replaced the daemon"
ok "start-stop-daemon --start sees it running"

# --- SIGKILL, then an instant restart ----------------------------------
kill -9 "$p1"
wait_gone "$p1"
[ -e "$pidfile" ] || fail "pidfile vanished with SIGKILL"
rc=0
$ssd --status --pidfile "$pidfile" || rc=$?
[ $rc = 1 ] || fail "start-stop-daemon --status after SIGKILL: $rc, want 1"
rc=0
pgrep -F "$pidfile" >/dev/null || rc=$?
[ $rc = 1 ] || fail "pgrep -F found the dead daemon"
ok "after SIGKILL: file stays, readers see a dead pid"

p2=$(start)
[ "$p2" != "$p1" ] || fail "restart reused pid $p1"
ok "restart at once, pid $p2"

# --- start-stop-daemon --stop -----------------------------------------------
$ssd --stop --quiet --pidfile "$pidfile" --retry TERM/5 || fail "--stop: $?"
wait_gone "$p2"
[ ! -e "$pidfile" ] || fail "pidfile left after a clean stop"
rc=0
$ssd --status --pidfile "$pidfile" || rc=$?
[ $rc = 3 ] || fail "start-stop-daemon --status after stop: $rc, want 3"
ok "start-stop-daemon --stop: daemon gone, file gone"

# --- start-stop-daemon --start, pkill -F -----------------------------------
$ssd --start --quiet --pidfile "$pidfile" --startas "$daemon" -- "$pidfile" ||
	fail "start-stop-daemon --start: $?"
p3=$(wait_named 0)
ok "start-stop-daemon --start: pid $p3"

pkill -F "$pidfile" || fail "pkill -F: $?"
wait_gone "$p3"
[ ! -e "$pidfile" ] || fail "pidfile left after pkill -F"
ok "pkill -F: daemon gone, file gone"

# --- a crash leftover naming a live, innocent process ---------------------
sleep 60 &
innocent=$!
echo "$innocent" >"$pidfile"
touch -d '1 minute ago' "$pidfile"
p4=$(start)
alive "$innocent" || fail "the innocent process died"
ok "unlocked leftover naming a live pid is taken over, pid $p4"
kill "$p4"
wait_gone "$p4"
[ ! -e "$pidfile" ] || fail "pidfile left after SIGTERM"
kill "$innocent"
innocent=

# --- keeping the timestamp fresh (example only) -----------------------------
if [ "$kind" = example ]; then
	for mode in -t ''; do
		# shellcheck disable=SC2086 # $mode is one word or none
		p5=$(start $mode -i 100)
		t0=$(sed -n 's/^timestamp=//p' "$pidfile")
		i=0
		while [ "$(sed -n 's/^timestamp=//p' "$pidfile")" = "$t0" ]; do
			i=$((i + 1))
			[ $i -le 250 ] || fail "timestamp stuck at $t0 (${mode:-main loop})"
			sleep 0.02
		done
		[ "$(first_line)" = "$p5" ] || fail "refresh changed the pid"
		kill "$p5"
		wait_gone "$p5"
		if [ -n "$mode" ]; then by="the thread (-t)"; else by="the main loop"; fi
		ok "timestamp refreshed by $by"
	done
fi

echo "1..$step"
