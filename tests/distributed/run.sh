#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make check-distributed: one lock path on a GlusterFS volume, used
# through two FUSE mounts of it as two hosts would.  See
# tests/distributed/README.  Run from the top build directory, as root:
#
#   tests/distributed/run.sh
#
# Environment:
#   DIST_PARTS        any of: handoff ofdkeep killholder killclient mix
#                     climix specrace spin (default: all)
#   DIST_ROUNDS       rounds of handoff, ofdkeep, killholder and
#                     killclient (8)
#   DIST_MIX_SECONDS  length of each mix (10)
#   DIST_HOLD_MS      the library mix's hold inside the lock (50)
#   DIST_KEEP         a directory to copy the logs to (default: none)
#
# Exit status: 0 when every part passed, 1 when one failed, 77 when the
# volume cannot be brought up here (the reason is printed).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(pwd)
PARTS=${DIST_PARTS:-handoff ofdkeep killholder killclient mix climix specrace spin}
ROUNDS=${DIST_ROUNDS:-8}
MIX_SECONDS=${DIST_MIX_SECONDS:-10}
HOLD_MS=${DIST_HOLD_MS:-50}

die() { echo "distributed: $*" >&2; exit 99; }
. "$here/../harness.sh"

DLOCK="$top/tests/distributed/dlock"
[ -x "$DLOCK" ] || die "$DLOCK is not built (make tests/distributed/dlock)"
LEASE="$top/tests/test-lease"
[ -x "$LEASE" ] || die "$LEASE is not built (make tests/test-lease)"
[ -x "$top/tools/pidlock" ] || die "tools/pidlock is not built (make)"
# The programs run hundreds of times: no libtool wrappers.
if [ -x "$top/tools/.libs/pidlock" ]; then
	PIDLOCK="$top/tools/.libs/pidlock"
	[ -x "$top/tests/distributed/.libs/dlock" ] &&
		DLOCK="$top/tests/distributed/.libs/dlock"
	[ -x "$top/tests/.libs/test-lease" ] &&
		LEASE="$top/tests/.libs/test-lease"
	use_built_lib
else
	PIDLOCK="$top/tools/pidlock"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-dist.XXXXXX") || die "mktemp failed"
VOLDIR="$WORK/vol"
mkdir -p "$WORK/logs" "$WORK/local" || die "mkdir failed"

finish() {
	rc=$?
	trap - EXIT INT TERM HUP
	if [ -d "$VOLDIR" ]; then
		cp "$VOLDIR"/log/* "$WORK/logs/" 2>/dev/null
		sh "$here/gluster-down.sh" "$VOLDIR"
	fi
	finish_work "$rc" "${DIST_KEEP:-}" "$WORK/logs" distributed
}
trap_finish

want() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

now() { date +%s.%N; }
t0=$(now)
sh "$here/gluster-up.sh" "$VOLDIR" 2>"$WORK/up.err"
rc=$?
if [ "$rc" -ne 0 ]; then
	cat "$WORK/up.err" >&2
	[ "$rc" -eq 77 ] && exit 77
	exit 1
fi
echo "distributed: volume up, mounted on $VOLDIR/a and $VOLDIR/b in" \
	"$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }') s"
A="$VOLDIR/a" B="$VOLDIR/b"
FAILED=

since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

part() {	# name command...: run one part, note a failure
	name=$1; shift
	echo "=== $name"
	pt=$(now)
	"$@" 2>&1 | tee "$WORK/logs/$name.log" | sed 's/^/  /'
	# tee's status is not the part's: the part writes its own.
	if [ "$(cat "$WORK/rc")" -ne 0 ]; then
		FAILED="$FAILED $name"
		echo "  $name: FAIL ($(since "$pt"))"
	else
		echo "  $name: pass ($(since "$pt"))"
	fi
}
with_rc() { "$@"; echo $? >"$WORK/rc"; }

# pidlock(1) participants (harness.sh's mix_worker), two per mount,
# their markers on the local scratch directory.
climix() {
	m="$WORK/climix"
	mkdir -p "$m" "$A/climix" || return 1
	for w in a1 a2 b1 b2; do
		case $w in a*) d=$A ;; *) d=$B ;; esac
		mix_worker "$d/climix/mix.lock" "$WORK/local/cli-held" \
			"$m/stop" "$m/$w" 0.05 &
	done
	sleep "$MIX_SECONDS"
	: >"$m/stop"
	wait
	mix_tally "$m/a1" "$m/a2" "$m/b1" "$m/b2"
	echo "climix: 4 x pidlock(1), 2 per mount, ${MIX_SECONDS} s, 50 ms holds: $T turns, $D double holds, $E errors"
	mix_errors "$m"/*.err
	[ "$D" -eq 0 ] && [ "$E" -eq 0 ] && [ "$T" -gt 0 ]
}

# The library holder of killholder, and one round with pidlock(1) as
# the holder: it and its command are killed together (the command keeps
# the lock's descriptor).  The command says on fd 3 that it runs, so
# that the lock is held (dlock killcmd).
killholder() {
	"$DLOCK" killholder "$A/killholder/h.lock" "$B/killholder/h.lock" \
		"$ROUNDS"
	lib=$?
	"$DLOCK" killcmd "$B/killholder/cli.lock" \
		"$PIDLOCK" "$A/killholder/cli.lock" \
		sh -c 'echo x >&3; exec sleep 1000' || return 1
	return "$lib"
}

# The pid of the FUSE client serving $VOLDIR/$1, from its pid file, and
# only while that process is a glusterfs whose arguments name our volume
# and that mount point: no other process is ever killed.
client_pid() {	# a|b
	cpid=$(cat "$VOLDIR/run/client-$1.pid" 2>/dev/null) || return 1
	case $cpid in ''|*[!0-9]*) return 1 ;; esac
	[ "$(cat "/proc/$cpid/comm" 2>/dev/null)" = glusterfs ] || return 1
	cargs=$(tr '\0' '\n' <"/proc/$cpid/cmdline" 2>/dev/null) || return 1
	printf '%s\n' "$cargs" | grep -qFx -e "--volfile-id=pidlockdist" &&
		printf '%s\n' "$cargs" | grep -qFx -e "$VOLDIR/$1" &&
		echo "$cpid"
}

# A crashed host: each round the client of mount a is killed while a
# library holder there holds, a waiter on b must get the lock; then
# the dead mount goes (umount -l) and a comes back with the same
# command (gluster-up.sh remount), for the next round and later parts.
killclient() {
	bad=0
	: >"$WORK/killclient.ms"
	i=0
	while [ "$i" -lt "$ROUNDS" ]; do
		if ! cpid=$(client_pid a); then
			echo "round $i: no glusterfs of ours serves $A"
			return 1
		fi
		if out=$("$DLOCK" killclient "$A/killclient/c.lock.$i" \
			"$B/killclient/c.lock.$i" "$cpid"); then
			printf '%s\n' "$out" |
				sed -n 's/.*kill to grant: \([0-9.]*\) ms$/\1/p' \
				>>"$WORK/killclient.ms"
		else
			printf '%s\n' "$out" | grep -v '^killclient:' |
				sed "s/^round 0:/round $i:/"
			bad=$((bad + 1))
		fi
		# The client is replaced whatever happened: killed here if
		# the round failed before its kill (still ours: checked again).
		[ "$(client_pid a)" = "$cpid" ] && kill -9 "$cpid"
		n=0
		while [ "$(client_pid a)" = "$cpid" ] && [ "$n" -lt 100 ]; do
			sleep 0.1; n=$((n + 1))
		done
		umount -l "$A" || { echo "round $i: umount -l $A failed"; return 1; }
		sh "$here/gluster-up.sh" "$VOLDIR" remount a ||
			{ echo "round $i: $A did not come back"; return 1; }
		i=$((i + 1))
	done
	sort -n "$WORK/killclient.ms" | awk -v r="$ROUNDS" -v bad="$bad" '
		{ v[NR] = $1 }
		END {
			printf "killclient: %d rounds, %d failed", r, bad
			if (NR) printf "; kill to grant: median %.1f ms, max %.1f ms",
				v[int(NR / 2) + 1], v[NR]
			printf "\n"
		}'
	[ "$bad" -eq 0 ]
}

mkdir -p "$A/handoff" "$A/ofdkeep" "$A/mix" "$A/killholder" "$A/killclient" \
	"$A/specrace" ||
	die "mkdir on the volume failed"
want handoff && part handoff with_rc "$DLOCK" handoff \
	"$A/handoff/h.lock" "$B/handoff/h.lock" "$ROUNDS"
want ofdkeep && part ofdkeep with_rc "$DLOCK" ofdkeep \
	"$A/ofdkeep/o.lock" "$B/ofdkeep/o.lock" "$ROUNDS"
want killholder && part killholder with_rc killholder
want killclient && part killclient with_rc killclient
want mix && part mix with_rc "$DLOCK" mix "$MIX_SECONDS" "$HOLD_MS" \
	"$WORK/local/lib-held" "$A/mix/m.lock" "$A/mix/m.lock" \
	"$B/mix/m.lock" "$B/mix/m.lock"
want climix && part climix with_rc climix
# Rule C across clients: a spec-only writer creates the file on b and
# writes 100 ms later; tries on a every 5 ms must never hold (the lease
# test sees only a's own opens, and is not asked on a FUSE client).  The
# grace is 2 s: b's record reaches a's view of the file only once a's
# caches let go (250-350 ms after the write here), and a 200 ms grace
# is then too short, lease or not (doc/protocol.md, rule C's margins).
want specrace && part specrace with_rc "$LEASE" spec-race \
	"$A/specrace/s.lock" "$B/specrace/s.lock" "$ROUNDS" 2000

# --- spin: a wait that keeps finding the file gone ----------------------
# A holder on a is killed, a waiter on b takes its file over and
# releases it (dlock killholder, one round); then a takes the same path
# again (dlock handoff, one round).  a's client may answer from its
# cached lookup for a while: the name "exists" to a create, and is gone
# at each open; each round must still end with the lock.  Whether the
# wait pauses between such tries (acquire.c, again_pause()) is proven by
# tests/fault/test-fault's gone_at_each_open_pauses, which counts the
# tries against the shim's refused opens: here the cached window is
# too rare and short to tell a spin from load (SPIN_ROUNDS rounds took
# 76 to 626 ms of CPU unmutated, 399 to 710 ms with again_pause() never
# pausing), so the part prints its CPU time as a figure, not a bound.
# Counted by perf stat where it can, else by the shell's times.
SPIN_ROUNDS=5
# The rounds, as one command that perf can follow: sh -c SPIN_SH sh
# ROUNDS DLOCK PATH-ON-A PATH-ON-B.
SPIN_SH='i=0
while [ "$i" -lt "$1" ]; do
	"$2" killholder "$3" "$4" 1 >/dev/null || exit 1
	"$2" handoff "$3" "$4" 1 >/dev/null || exit 1
	i=$((i + 1))
done'
spin_count() {	# out: run the rounds, write "cpu_ms" to out
	s="$WORK/spin"
	if perf stat -x, -o "$s.perf" -e task-clock true 2>/dev/null; then
		perf stat -x, -o "$s.perf" -e task-clock sh -c "$SPIN_SH" sh \
			"$SPIN_ROUNDS" "$DLOCK" "$A/spin/s.lock" \
			"$B/spin/s.lock" || return 1
		awk -F, '$3 == "task-clock" { ms = $1 }
			 END { printf "%d\n", ms }' "$s.perf" >"$1"
		return 0
	fi
	( sh -c "$SPIN_SH" sh "$SPIN_ROUNDS" "$DLOCK" "$A/spin/s.lock" \
		"$B/spin/s.lock" || exit 1
	  times ) >"$s.out" || return 1
	tail -1 "$s.out" | tr 'ms' '  ' |
		awk '{ printf "%d\n", ($1 * 60 + $2 + $3 * 60 + $4) * 1000 }' \
		>"$1"
}
spin() {
	mkdir -p "$A/spin" || return 1
	spin_count "$WORK/spin.fig" || { echo "spin: a round failed"; return 1; }
	read -r ms <"$WORK/spin.fig"
	echo "spin: $SPIN_ROUNDS rounds, each ending with the lock: $ms ms CPU"
}
want spin && part spin with_rc spin

echo
echo "distributed: $(since "$t0") from the start"
if [ -n "$FAILED" ]; then
	echo "distributed: FAILED:$FAILED"
	exit 1
fi
echo "distributed: all parts passed"
exit 0
