#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make check-restart: a GlusterFS brick dies (kill -9) and is restarted
# while a holder holds.  The brick comes back with no locks: the holder
# must be told, must never take the dropped lock back in silence, and
# must never believe it holds once another host has been granted the
# lock; a waiter in a timed acquire must ride the outage out.  See
# tests/distributed/README, "Restart".  Run from the top build
# directory, as root:
#
#   tests/distributed/restart.sh
#
# The volume is gluster-up.sh's, on loopback (127.0.0.2), with its two
# FUSE mounts a and b as two hosts; tests/distributed/partition does the
# work of the holder A (on a: PIDLOCK_TOKEN, pidlock_check(l, 500) every
# 200 ms, a write to a fenced resource on each 0, one "late" write at its
# end once it has lost the lock) and of B (on b: a timed
# pidlock_acquire(), then the same work), and logs every event; this
# script kills and restarts bricks, logs what it does in the same form,
# and judges the merged log.  The scenarios (RESTART_SCENARIOS):
#
#   brick     one brick; B waits in pidlock_acquire(60000); the brick is
#             killed, and restarted 2 s later (volume start force)
#   nowaiter  one brick, nobody waiting: after the restart A's checks
#             must say -ENOLCK, every one (the dropped lock is not taken
#             back), and a fresh acquirer on b must get the lock
#   paused    nowaiter with A stopped (SIGSTOP) from before the kill
#             until both clients are back: its first question after the
#             restart meets the dropped lock, with no outage answer
#             (-EIO) before it
#   replica   a replica 3 volume, three bricks on this host; B waits in
#             pidlock_acquire(90000); bricks 1, 2 and 3 are killed and
#             restarted one after another, each once both clients are
#             back on the last; no double hold
#
# Verdicts (each scenario): A and B exit 0; B gets the lock, and its
# timed acquire does not fail within its timeout; no check of A's that
# began after B's grant says 0 (A's last 0 began before it: never two
# holders believing at once); once A is told -ENOLCK, every later check
# says it too; no check takes longer than 700 ms (a bound of 500, a
# margin; a check that spans A's stop is not counted); B's token is above
# A's; the resource took no write of A's after B's first, and refused
# A's late write, which must come after B's first write (in replica,
# where B may get the lock only once A lets go, a late write before any
# of B's is taken, rightly, and said so).  One brick: no check of A's begun after the kill says
# 0 (its lock died with the brick), and brick: A is told, -EIO or
# -ENOLCK (which, and when, is printed); nowaiter and paused: every check
# of A's begun once both clients are back says -ENOLCK, at least one.
#
# Environment:
#   RESTART_SCENARIOS  any of: brick nowaiter paused replica (default:
#                      all four)
#   RESTART_KEEP       a directory to copy the logs to
#
# Exit 0 when every scenario passed, 1 when one failed, 77 when this
# machine cannot run it (the reason is printed).  Leaves nothing: mounts,
# processes and glusterd's state go in every case (trap).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(pwd)
SCENARIOS=${RESTART_SCENARIOS:-brick nowaiter paused replica}
VOL=pidlockdist	# gluster-up.sh's

skip() { echo "restart: SKIP: $*" >&2; exit 77; }
die() { echo "restart: $*" >&2; exit 99; }
. "$here/../harness.sh"

PATH="$PATH:/usr/sbin:/sbin"
[ "$(id -u)" -eq 0 ] || skip "not root (glusterd and its bricks need root)"
for t in glusterd gluster glusterfs; do
	command -v "$t" >/dev/null 2>&1 || skip "$t not installed"
done
PROG="$top/tests/distributed/partition"
[ -x "$PROG" ] || die "$PROG is not built (make tests/distributed/partition)"
if [ -x "$top/tests/distributed/.libs/partition" ]; then
	PROG="$top/tests/distributed/.libs/partition"
	use_built_lib
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-restart.XXXXXX") || die "mktemp failed"
mkdir -p "$WORK/logs" || die "mkdir failed"
VOLDIR=
PIDS=	# the programs we started and that may still run

# stop_ours: the programs we started that still run, by pid, each only
# while its command line names our work directory.
stop_ours() {
	for p in $PIDS; do
		if [ -r "/proc/$p/cmdline" ] &&
		   tr '\0' ' ' <"/proc/$p/cmdline" | grep -q -F "$WORK/"; then
			kill -CONT "$p" 2>/dev/null
			kill -9 "$p" 2>/dev/null
		fi
	done
	PIDS=
}

finish() {
	rc=$?
	trap - EXIT INT TERM HUP
	stop_ours
	[ -n "$VOLDIR" ] && [ -d "$VOLDIR" ] && {
		cp "$VOLDIR"/log/* "$WORK/logs/" 2>/dev/null
		sh "$here/gluster-down.sh" "$VOLDIR"
	}
	finish_work "$rc" "${RESTART_KEEP:-}" "$WORK/logs" restart
}
trap_finish

now_ms() { echo $(($(date +%s%N) / 1000000)); }
cli() {
	gluster --glusterd-sock="$VOLDIR/run/glusterd.socket" --mode=script \
		--log-file="$VOLDIR/log/cli.log" "$@"
}
# ev WHAT [VALUE]: the script's own event, in the programs' form.
ev() { echo "$(now_ms) S $1 ${2:-0} 0" >>"$log.s"; }
say() { echo "restart: $name: $*"; }

# brick_pid NAME: the pid of brick DIR/NAME, from its pid file under our
# run directory, if it is alive and its command line names our volume
# directory (as gluster-down.sh's ours()).
brick_pid() {
	for pf in "$VOLDIR/run/vols/$VOL/"*"-$1.pid"; do
		[ -f "$pf" ] || continue
		pid=$(cat "$pf" 2>/dev/null)
		[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] &&
			tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -F "$VOLDIR/$1 " &&
			{ echo "$pid"; return 0; }
	done
	return 1
}

# connects M NAME: how often client M has attached to brick NAME (its
# log says so at each connection, the first and every reconnection).
connects() {
	grep -F "Connected, attached to remote volume" "$VOLDIR/log/client-$1.log" 2>/dev/null |
		grep -c -F "remote_subvol=$VOLDIR/$2}"
}

# kill_brick NAME: SIGKILL, as a crash; the clients' counts first, so
# that restart_brick knows when both are back.
kill_brick() {
	pid=$(brick_pid "$1") || { say "no brick $1 to kill"; return 1; }
	ca=$(connects a "$1") cb=$(connects b "$1")
	kill -9 "$pid" || return 1
	ev kill "$1"
}

# restart_brick NAME: glusterd starts the bricks that are down (start
# force), and we wait until both clients have attached to it again and
# a directory can be made and removed through each mount (the client
# says it attached before it has re-opened its descriptors and told
# the layers above that the brick is up; a stat could be answered from
# the kernel's attribute cache).
restart_brick() {
	ev restart "$1"
	cli volume start "$VOL" force >"$WORK/logs/$name.start" 2>&1 ||
		{ say "volume start force: $(cat "$WORK/logs/$name.start")"; return 1; }
	ev started "$1"
	i=0
	until [ "$(connects a "$1")" -gt "$ca" ] && [ "$(connects b "$1")" -gt "$cb" ] &&
	      mkdir "$VOLDIR/a/.back$i" 2>/dev/null && rmdir "$VOLDIR/a/.back$i" &&
	      mkdir "$VOLDIR/b/.back$i" 2>/dev/null && rmdir "$VOLDIR/b/.back$i"; do
		i=$((i + 1))
		[ $i -le 300 ] || { say "the clients did not come back to $1 in 30 s"; return 1; }
		sleep 0.1
	done
	ev back "$1"
}

# await PID SECONDS: its exit status, or 124 once it had to be killed.
# Reaped, it leaves PIDS (its number may be another's from now on).
await() {
	i=0 st=
	while kill -0 "$1" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt $(($2 * 10)) ]; then
			kill -CONT "$1" 2>/dev/null
			kill -9 "$1" 2>/dev/null
			st=124
			break
		fi
		sleep 0.1
	done
	wait "$1"
	w=$?
	[ -n "$st" ] || st=$w
	PIDS=$(echo " $PIDS " | sed "s/ $1 / /")
	return "$st"
}

# wait_line FILE WORD: FILE has a line with event WORD (10 s at most).
wait_line() {
	i=0
	until grep -q " $2 " "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 100 ] || return 1
		sleep 0.1
	done
}

up() {	# replicas
	VOLDIR="$WORK/vol-$name"
	log="$WORK/logs/$name"
	res="$WORK/resource-$name"
	: >"$log.s"
	GLUSTER_REPLICA=$1 sh "$here/gluster-up.sh" "$VOLDIR" || {
		rc=$?
		[ $rc -eq 77 ] && exit 77
		say "the volume did not come up"
		return 1
	}
}

down() {
	cp "$VOLDIR"/log/* "$WORK/logs/" 2>/dev/null
	for f in "$WORK"/logs/client-?.log "$WORK"/logs/glusterd.log; do
		[ -f "$f" ] && mv "$f" "${f%.log}.$name.log"
	done
	sh "$here/gluster-down.sh" "$VOLDIR"
	VOLDIR=
}

# start_a SECONDS: the holder on a, once it holds.
start_a() {
	"$PROG" holder "$VOLDIR/a/p.lock" "$res" 0 "$1" late >"$log.a" 2>"$log.a.err" &
	pa=$!
	PIDS="$PIDS $pa"
	wait_line "$log.a" held || { say "A did not get the lock"; return 1; }
}

# start_b SECONDS WAIT_MS: the waiter (or fresh acquirer) on b, once it
# is in its acquire.
start_b() {
	"$PROG" waiter "$VOLDIR/b/p.lock" "$res" "$1" "$2" >"$log.b" 2>"$log.b.err" &
	pb=$!
	PIDS="$PIDS $pb"
	wait_line "$log.b" wait || { say "B did not start"; return 1; }
}

# 1. One brick, B waiting.
brick() {
	up 1 || return 2
	# A works on past B's grant (some +3 s) and B's 4 s of work, so
	# that its late write comes after B's writes.
	start_a 16 || return 2
	start_b 4 60000 || return 2
	sleep 2
	kill_brick brick || return 2
	sleep 2
	restart_brick brick || return 2
	await "$pa" 60; ra=$?
	await "$pb" 70; rb=$?
	down
	judge 60000
}

# 2. One brick, nobody waiting; paused: A stopped across the outage.
nowaiter() {
	paused=$1
	up 1 || return 2
	start_a 16 || return 2
	sleep 2
	if [ "$paused" = 1 ]; then
		kill -STOP "$pa" && ev stop A
	fi
	kill_brick brick || return 2
	sleep 2
	restart_brick brick || return 2
	if [ "$paused" = 1 ]; then
		sleep 0.3
		# Logged first: no check of A's can begin before it.
		ev cont A
		kill -CONT "$pa"
	fi
	# A asks some ten times with the brick back; then the fresh acquirer.
	sleep 2
	ev fresh B
	start_b 2 10000 || return 2
	await "$pb" 30; rb=$?
	await "$pa" 60; ra=$?
	down
	judge 10000
}

# 3. Replica 3, B waiting; the bricks restarted one after another.
replica() {
	up 3 || return 2
	# A holds through the three restarts (some 18 s) and a little more,
	# then lets go if it still holds.
	start_a 28 || return 2
	start_b 3 90000 || return 2
	sleep 2
	for n in 1 2 3; do
		kill_brick "brick$n" || return 2
		sleep 2
		restart_brick "brick$n" || return 2
		sleep 1
	done
	await "$pa" 60; ra=$?
	await "$pb" 100; rb=$?
	down
	judge 90000
}

# The verdicts, from the merged log (realtime ms, one event a line).
judge() {
	sort -n -s "$log.a" "$log.b" "$log.s" >"$log.all"
	awk -v kind="$kind" -v ra="$ra" -v rb="$rb" -v bwait="$1" \
	    -v name="$name" -f /dev/stdin "$log.all" "$log.all" <<'AWK'
function en(v) {
	if (v == 0) return "0"
	if (v == -5) return "-EIO"
	if (v == -37) return "-ENOLCK"
	if (v == -110) return "-ETIMEDOUT"
	if (v == -11) return "-EAGAIN"
	if (v == -4) return "-EINTR"
	if (v == -13) return "-EACCES"
	if (v == -107) return "-ENOTCONN"
	if (v == -116) return "-ESTALE"
	return v
}
function rel(t) { return sprintf("%+7.2f s", (t - t0) / 1000) }
# Pass 1: the times the verdicts and the timeline need.
NR == FNR {
	if ($2 == "S" && $3 == "kill" && !t0) t0 = $1
	if ($2 == "S" && $3 == "back") tback = $1
	if ($2 == "S" && $3 == "stop") tstop = $1
	if ($2 == "S" && $3 == "cont") tcont = $1
	if ($2 == "B" && $3 == "held") bgrant = $1
	if ($2 == "B" && $3 == "wrote" && !bfirst) bfirst = $1
	# A's checks in runs of one result.
	if ($3 == "check") {
		w = $2
		if (!(w in cur) || cur[w] != $4) { runs[w]++; cur[w] = $4
			first[w, runs[w]] = $1 - $5 }
		cnt[w, runs[w]]++
		last[w, runs[w]] = $1
		if ($5 > mx[w, runs[w]]) mx[w, runs[w]] = $5
	}
	next
}
FNR == 1 { delete cur; for (w in runs) seen[w] = 0 }
# Pass 2: the timeline, and the counts.
$2 == "S" {
	if ($3 == "kill") printf "  %s  brick %s killed (SIGKILL)\n", rel($1), $4
	else if ($3 == "restart") printf "  %s  volume start force\n", rel($1)
	else if ($3 == "started") printf "  %s  volume start force returned\n", rel($1)
	else if ($3 == "back") printf "  %s  both clients back on %s\n", rel($1), $4
	else if ($3 == "stop") printf "  %s  A stopped (SIGSTOP)\n", rel($1)
	else if ($3 == "cont") printf "  %s  A continued (SIGCONT)\n", rel($1)
	else if ($3 == "fresh") printf "  %s  a fresh acquirer starts on b\n", rel($1)
	next
}
$3 == "check" {
	w = $2
	start = $1 - $5
	if (!(w in cur) || cur[w] != $4) { seen[w]++; cur[w] = $4; r = seen[w]
		printf "  %s  %s: check says %s, %d times until %s (longest %d ms)\n",
			rel(first[w, r]), w, en($4), cnt[w, r], rel(last[w, r]), mx[w, r] }
	if (w != "A") next
	# A check that spans A's stop waited for the stop, not the server.
	spans = tstop && start < tcont && $1 > tstop
	if (!spans && $5 > maxms) maxms = $5
	if (spans) spanned++
	if ($4 == 0) { lastok = start; lastokend = $1 }
	if ($4 == 0 && bgrant && start >= bgrant) believed++
	if ($4 == 0 && start > t0) zeroafterkill++
	if ($4 != 0 && !told && start > t0) { told = $4; ttold = $1 }
	if ($4 == -37 && !lost) lost = $1
	if (lost && $4 != -37) unlost++
	if ((kind == "nowaiter" || kind == "paused") && start >= tback) {
		afterback++
		if ($4 != -37) notlost++
	}
	if (kind == "paused" && tcont && start >= tcont && !aftercont) {
		aftercont = 1; firstcont = $4
		printf "  %s  A: its first check after the restart says %s\n", rel($1), en($4)
	}
	next
}
$2 == "A" && $3 == "held" { atok = $4
	printf "  %s  A holds (token %s)\n", rel($1), $4 }
$2 == "B" && $3 == "wait" {
	printf "  %s  B in pidlock_acquire(%d) on b\n", rel($1), $4 }
$2 == "B" && $3 == "held" { btok = $4
	printf "  %s  B acquires (token %s), after %d ms in its acquire\n", rel($1), $4, $5 }
$2 == "B" && $3 == "acquire" { bfail = $4; bfailms = $5
	printf "  %s  B: pidlock_acquire() fails: %s after %d ms\n", rel($1), en($4), $5 }
$2 == "B" && $3 == "wrote" && $1 == bfirst {
	printf "  %s  B's first write to the resource\n", rel($1) }
$2 == "A" && $3 == "wrote" { lastwrite = $1; if (bfirst && $1 >= bfirst) latetaken++ }
$2 == "A" && $3 == "refused" { refused++ }
$2 == "A" && $3 == "late" { late = 1; latev = $4; tlate = $1
	printf "  %s  A's late write (token %s): %s\n", rel($1), atok, $4 ? "taken" : "refused" }
$3 == "release" { printf "  %s  %s releases: %s\n", rel($1), $2, en($4) }
END {
	printf "  A: last check saying 0 began at %s and ended at %s; told %s at %s; -ENOLCK from %s; longest check %d ms%s; last write taken at %s\n",
		lastok ? rel(lastok) : "-", lastokend ? rel(lastokend) : "-",
		told ? en(told) : "nothing", ttold ? rel(ttold) : "-",
		lost ? rel(lost) : "-", maxms,
		spanned ? " (" spanned " spanning the stop not counted)" : "",
		lastwrite ? rel(lastwrite) : "-"
	bad = 0
	if (ra != 0 || rb != 0) { print "  FAIL: A exited " ra ", B " rb " (124: killed by the hang guard)"; bad = 1 }
	if (!bgrant) { print "  FAIL: B never held"; bad = 1 }
	if (bfail) { print "  FAIL: B's pidlock_acquire(" bwait ") failed with " en(bfail) " after " bfailms " ms, within its timeout: it did not ride the outage out"; bad = 1 }
	if (believed) { print "  FAIL: " believed " checks of A begun after B's grant said 0: two holders believed at once"; bad = 1 }
	if (bgrant && lastok >= bgrant) { print "  FAIL: A's last 0 began after B's grant"; bad = 1 }
	if (unlost) { print "  FAIL: " unlost " checks of A after its -ENOLCK said something else: not lost for good"; bad = 1 }
	if (maxms > 700) { print "  FAIL: a check of 500 ms took " maxms " ms"; bad = 1 }
	if (btok <= atok) { print "  FAIL: B's token " btok " is not above A's " atok; bad = 1 }
	if (latetaken) { print "  FAIL: the resource took " latetaken " writes of A's after B's first"; bad = 1 }
	# The late write puts the tokens to the test only after B's first
	# write: before it, nothing newer has been written, and it is taken.
	if (late && latev && bfirst && tlate >= bfirst) { print "  FAIL: the resource took A's late write, after B's first"; bad = 1 }
	if (kind != "replica" && (!late || !bfirst || tlate < bfirst)) { print "  FAIL: A made no late write after B's first write (the tokens not put to the test)"; bad = 1 }
	if (kind == "replica" && late && (!bfirst || tlate < bfirst)) print "  (A's late write came before any write of B's: taken, rightly, and no test of the tokens)"
	if (kind != "replica" && zeroafterkill) { print "  FAIL: " zeroafterkill " checks of A begun after the kill said 0: the lock died with the brick"; bad = 1 }
	if (kind != "replica" && !lost) { print "  FAIL: A was never told -ENOLCK"; bad = 1 }
	if (kind == "brick" && told != -5 && told != -37) { print "  FAIL: A was not told -EIO or -ENOLCK after the kill (" en(told) ")"; bad = 1 }
	if ((kind == "nowaiter" || kind == "paused") && (!afterback || notlost)) {
		print "  FAIL: of " afterback " checks of A begun with both clients back, " notlost " did not say -ENOLCK (the dropped lock taken back, or not told)"; bad = 1 }
	if (kind == "paused" && firstcont != -37) { print "  FAIL: A's first check after the restart said " en(firstcont); bad = 1 }
	printf "restart: %s: %s\n", name, bad ? "FAIL" : "ok"
	exit bad
}
AWK
}

status=0
for s in $SCENARIOS; do
	name=$s kind=$s ra='' rb=''
	t_start=$(now_ms)
	case $s in
	brick) echo "restart: brick: one brick, B waiting in pidlock_acquire(60000); kill -9, restart 2 s later"
	       brick ;;
	nowaiter) echo "restart: nowaiter: one brick, nobody waiting; kill -9, restart 2 s later, then a fresh acquirer"
		  nowaiter 0 ;;
	paused) echo "restart: paused: nowaiter with A stopped from before the kill until both clients are back"
		nowaiter 1 ;;
	replica) echo "restart: replica: replica 3 on this host, B waiting in pidlock_acquire(90000); bricks 1, 2, 3 killed and restarted in turn"
		 replica ;;
	*) die "unknown scenario $s (brick, nowaiter, paused, replica)" ;;
	esac
	rc=$?
	# 1: the verdicts said FAIL; 2: the scenario could not be run.
	[ $rc -eq 0 ] || status=1
	[ $rc -ge 2 ] && echo "restart: $s: FAIL (the scenario stopped half-way; see above)"
	# A scenario that stopped half-way leaves its programs and volume.
	stop_ours
	[ -n "$VOLDIR" ] && down
	echo "restart: $s took $(( ($(now_ms) - t_start) / 1000 )) s"
done
exit $status
