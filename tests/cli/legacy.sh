#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# pidlock --stop and --signal with --legacy-exec PATH or --legacy-name NAME
# (issue 28, item 3): a legacy daemon's hand-written pidfile, which no
# kernel lock backs, is stopped only if rule C says its process may be
# the writer and it runs PATH (is called NAME); a reused pid and another
# program are refused and survive.  Also (item 4) what --stop says when
# pidlock was killed and its command, which inherited the lock's
# descriptor, holds the lock still.  Real processes; nothing is timed.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

SLEEP=$(command -v sleep) || fail "no sleep(1)"
# A copy of sleep(1) with an inode of its own: the "daemon" executable.
cp "$SLEEP" exampled || fail "cannot copy sleep(1)"

# legacy_daemon PIDFILE [TRAP]: a daemon of before the migration: it
# writes its bare pid to PIDFILE itself (after it started, as a daemon
# does), then runs ./exampled; TRAP is a trap command run first (trap ''
# TERM: it ignores SIGTERM).  DAEMON is its pid, also in LEGACY_PIDS.
legacy_daemon() {
	rm -f "$1"
	setsid sh -c "${2:-:}; echo \$\$ > \"\$0.tmp\" && mv \"\$0.tmp\" \"\$0\"; \
exec ./exampled 300" "$1" &
	DAEMON=$!
	track "$DAEMON"
	wait_until test -s "$1"
	[ "$(cat "$1")" = "$DAEMON" ] || fail "the pidfile names $(cat "$1"), not $DAEMON"
	wait_until grep -q '^Name:[[:space:]]*exampled$' "/proc/$DAEMON/status"
}

alive() {
	kill -0 "$1" 2>/dev/null && ! gone "$1"
}

# --- usage ----------------------------------------------------------------
expect 64 "--legacy-exec with --wait-free" -- \
	"$PIDLOCK" --wait-free --legacy-exec "$SLEEP" x.pid
expect 64 "--legacy-exec with --status" -- \
	"$PIDLOCK" --status --legacy-exec "$SLEEP" x.pid
expect 64 "--legacy-exec with --slots" -- \
	"$PIDLOCK" --stop --slots 2 --legacy-exec "$SLEEP" x.pid
expect 64 "--legacy-exec ''" -- "$PIDLOCK" --stop --legacy-exec '' x.pid
legacy_daemon long.pid
expect 64 "--legacy-name longer than the kernel's 15 bytes" -- \
	"$PIDLOCK" --stop --legacy-name exampled-with-a-long-name long.pid
kill -KILL "$DAEMON"
wait "$DAEMON" 2>/dev/null

# --- without the flag: refused, and the message names it --------------------
legacy_daemon legacy.pid
"$PIDLOCK" --stop --retry TERM/5/KILL/5 legacy.pid 2> err
rc=$?
[ $rc -eq 3 ] || fail "--stop on a legacy pidfile: exit $rc, not 3: $(cat err)"
grep -q -- "--legacy-exec" err || fail "the refusal names no flag: $(cat err)"
alive "$DAEMON" || fail "the daemon was signalled without the flag"
pass "refused without the flag (exit 3), naming --legacy-exec; alive"

# --- another program, another name: refused, and it survives --------------
"$PIDLOCK" --stop --retry TERM/5/KILL/5 --legacy-exec "$SLEEP" legacy.pid 2> err
rc=$?
[ $rc -eq 3 ] || fail "--legacy-exec of another program: exit $rc: $(cat err)"
grep -q "not $SLEEP" err || fail "no word of what it runs: $(cat err)"
alive "$DAEMON" || fail "a process that runs another program was signalled"
pass "--legacy-exec of another program: refused (exit 3), alive"
expect 3 "--legacy-name of another name" -- \
	"$PIDLOCK" --signal KILL --legacy-name sleep legacy.pid
alive "$DAEMON" || fail "a process of another name was signalled"
pass "--legacy-name of another name: alive"
expect 3 "--legacy-exec right, --legacy-name wrong: both must match" -- \
	"$PIDLOCK" --signal KILL --legacy-exec ./exampled --legacy-name sleep \
	legacy.pid
alive "$DAEMON" || fail "signalled with one of two checks failing"

# --- the daemon itself: stopped, and --stop waits until it is gone ----------
"$PIDLOCK" -v --stop --retry TERM/5/KILL/5 --legacy-exec ./exampled \
	legacy.pid 2> err
rc=$?
[ $rc -eq 0 ] || fail "--stop --legacy-exec: exit $rc: $(cat err)"
gone "$DAEMON" || fail "--stop exited 0 and the daemon is still alive"
wait "$DAEMON"
rc=$?
[ $rc -eq 143 ] || fail "the daemon exited $rc, not by SIGTERM"
pass "--stop --legacy-exec stopped the legacy daemon with SIGTERM, gone at exit 0"
expect 0 "free by rule C once it is gone" -- "$PIDLOCK" -n legacy.pid true

# One that ignores TERM: the schedule goes on to KILL, on the same pidfd.
legacy_daemon legacy.pid "trap '' TERM"
expect 0 "--stop --retry TERM/0.3/KILL/5 --legacy-name escalates" -- \
	"$PIDLOCK" --stop --retry TERM/0.3/KILL/5 --legacy-name exampled legacy.pid
wait "$DAEMON"
rc=$?
[ $rc -eq 137 ] || fail "the daemon exited $rc, not by SIGKILL"
pass "the TERM-ignoring daemon died of SIGKILL"
legacy_daemon legacy.pid "trap '' TERM"
expect 1 "--stop -w 0.3: it ignores TERM, still held at the end" -- \
	"$PIDLOCK" --stop -w 0.3 --legacy-exec ./exampled legacy.pid
alive "$DAEMON" || fail "gone after a TERM it ignores"
expect 0 "--signal KILL --legacy-exec" -- \
	"$PIDLOCK" --signal KILL --legacy-exec ./exampled legacy.pid
wait "$DAEMON"
[ $? -eq 137 ] || fail "--signal KILL did not kill it"
pass "--signal KILL reached it"

# The upgrade replaced the executable: /proc/PID/exe is "PATH (deleted)".
legacy_daemon legacy.pid
rm -f exampled && cp "$SLEEP" exampled || fail "cannot replace ./exampled"
readlink "/proc/$DAEMON/exe" | grep -q ' (deleted)$' ||
	fail "the replaced executable does not read as deleted"
expect 0 "--stop --legacy-exec after the upgrade replaced the file" -- \
	"$PIDLOCK" --stop --retry TERM/5/KILL/5 --legacy-exec "$T/exampled" \
	legacy.pid
wait "$DAEMON"
[ $? -eq 143 ] || fail "the old daemon was not stopped by SIGTERM"
pass "the daemon of the replaced executable was stopped"

# --- a reused pid: started after the file was written, never signalled -----
setsid ./exampled 300 &
innocent=$!
track "$innocent"
echo "$innocent" > reused.pid
touch -d '1 minute ago' reused.pid
wait_until grep -q '^Name:[[:space:]]*exampled$' "/proc/$innocent/status"
"$PIDLOCK" --stop --retry KILL/1 --legacy-exec ./exampled reused.pid 2> err
rc=$?
alive "$innocent" || fail "--stop signalled the process that got the pid later"
[ $rc -eq 0 ] || fail "--stop on a reused pid: exit $rc: $(cat err)"
grep -q "reused pid" err || fail "no word of the reused pid: $(cat err)"
expect 1 "--signal on a reused pid: free, nothing sent" -- \
	"$PIDLOCK" --signal KILL --legacy-exec ./exampled reused.pid
alive "$innocent" || fail "the process that got the pid later was signalled"
pass "a reused pid (started after the file's mtime) survives"
kill -KILL "$innocent"
wait "$innocent" 2>/dev/null

# --- a kernel-lock holder: the flag changes nothing --------------------------
start_bg -F x.lock ./exampled 300
wait_until held x.lock
expect 0 "--stop --legacy-exec on a kernel-lock holder: the proven path" -- \
	"$PIDLOCK" --stop --retry TERM/5/KILL/5 --legacy-exec /nonexistent x.lock
wait "$LAST"
[ $? -eq 143 ] || fail "the kernel-lock holder was not stopped"

# --- item 4: pidlock killed, its command holds the lock ----------------------
start_bg x.lock sh -c 'trap "" TERM; echo $$ > cmd.cmdpid; exec ./exampled 300'
wait_until test -s cmd.cmdpid
cmd=$(cat cmd.cmdpid)
"$PIDLOCK" --stop --retry TERM/0.3/KILL/0.5 x.lock 2> err
rc=$?
[ $rc -eq 1 ] || fail "--stop on a command that ignores TERM: exit $rc: $(cat err)"
grep -q "took the lock since" err && fail "says another took it since: $(cat err)"
grep -q "inherited the lock's descriptor" err || fail "no word of why: $(cat err)"
grep -q "pid $cmd," err || fail "the command's pid $cmd is not named: $(cat err)"
grep -q -- "-F" err || fail "-F is not named: $(cat err)"
pass "--stop says the command inherited the descriptor, names it and -F"
expect 0 "a second --stop finds the command" -- \
	"$PIDLOCK" --stop --retry TERM/0.3/KILL/5 x.lock

done_testing
