#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# pidlock --signal/--stop --legacy-exec/--legacy-name (issue 35, item 4):
# a legacy pidfile aims a signal only if no user but root, the caller and
# the named process's own user could have written it or replaced it
# (pidlock(1), LEGACY PIDFILES, step 4), unless --legacy-trust-file; a
# deleted executable ("PATH (deleted)") counts only in the caller's own
# mount namespace.  The kit's two init scripts signal nothing through a
# forged pidfile.  Needs root, to act as user nobody and to give files
# away.  Real processes; nothing is timed.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

need_second_user
OTHER=65534	# nobody
chmod 0755 "$T"
# The path as the kernel resolves it: the one the messages name.
TR=$(pwd -P)
SLEEP=$(command -v sleep) || fail "no sleep(1)"
SLEEP=$(readlink -f "$SLEEP")

as_other() {
	setpriv --reuid=$OTHER --regid=$OTHER --clear-groups "$@"
}

alive() {
	kill -0 "$1" 2>/dev/null && ! gone "$1"
}

# victim [NAME CMD...]: root's process (sleep 300 by default), a child
# of this shell, in VICTIM; returns once it is called NAME.
victim() {
	local name=sleep
	if [ $# -gt 0 ]; then
		name=$1
		shift
	else
		set -- "$SLEEP" 300
	fi
	setsid "$@" &
	VICTIM=$!
	track "$VICTIM"
	wait_until grep -q "^Name:[[:space:]]*$name\$" "/proc/$VICTIM/status"
}

# pidfile_by_other FILE: user nobody writes VICTIM's pid to FILE (after
# the victim started: rule C holds, it reads as held-pidfile).
pidfile_by_other() {
	as_other sh -c 'echo "$1" > "$2"' sh "$VICTIM" "$1" ||
		fail "nobody cannot write $1"
	status_is "$1" 1 || fail "$1 does not read as held"
}

# refused WHAT WHY FILE ARGS...: --signal KILL ARGS FILE exits 3, says
# WHY and that nothing was signalled, and the victim lives.
refused() {
	local what=$1 why=$2 file=$3 rc
	shift 3
	"$PIDLOCK" --signal KILL "$@" "$file" 2> err
	rc=$?
	alive "$VICTIM" || fail "$what: root's process was killed: $(cat err)"
	[ $rc -eq 3 ] || fail "$what: exit $rc, not 3: $(cat err)"
	grep -qF -- "$why" err || fail "$what: the refusal does not say \"$why\": $(cat err)"
	grep -q "nothing was signalled" err || fail "$what: $(cat err)"
	pass "$what: refused (exit 3), alive"
}

# signalled WHAT FILE ARGS...: --stop --retry KILL/5 ARGS FILE exits 0
# and the victim died of SIGKILL.
signalled() {
	local what=$1 file=$2 rc
	shift 2
	"$PIDLOCK" --stop --retry KILL/5 "$@" "$file" 2> err
	rc=$?
	[ $rc -eq 0 ] || fail "$what: exit $rc, not 0: $(cat err)"
	wait "$VICTIM"
	rc=$?
	[ $rc -eq 137 ] || fail "$what: the process exited $rc, not by SIGKILL: $(cat err)"
	pass "$what: signalled, gone"
}

expect 64 "--legacy-trust-file without --legacy-exec or --legacy-name" -- \
	"$PIDLOCK" --stop --legacy-trust-file x.pid

OTHER_NAME="$(id -nu $OTHER) (uid $OTHER)"

# --- a directory of nobody's, the file nobody wrote ---------------------------
mkdir theirs && chown $OTHER theirs || fail "cannot give theirs/ away"
victim
pidfile_by_other theirs/daemon.pid
refused "nobody's directory, --legacy-name sleep" \
	"the directory $TR/theirs belongs to $OTHER_NAME, so $OTHER_NAME could have put any pid in the pidfile" \
	theirs/daemon.pid --legacy-name sleep
grep -qF -- "--legacy-trust-file" err || fail "no way forward named: $(cat err)"
pass "the refusal names --legacy-trust-file"
victim
pidfile_by_other theirs/daemon.pid
refused "nobody's directory, --legacy-exec $SLEEP" \
	"the directory $TR/theirs belongs to $OTHER_NAME" "$TR/theirs/daemon.pid" \
	--legacy-exec "$SLEEP"
signalled "nobody's directory, with --legacy-trust-file" theirs/daemon.pid \
	--legacy-name sleep --legacy-trust-file

# root's own file, in root's directory, in nobody's: nobody can rename
# root's directory away and put one of theirs in its place
mkdir theirs/sub
victim
echo "$VICTIM" > theirs/sub/daemon.pid
refused "root's file and directory inside nobody's directory" \
	"the directory $TR/theirs belongs to $OTHER_NAME" theirs/sub/daemon.pid \
	--legacy-name sleep
kill -KILL "$VICTIM"
wait "$VICTIM" 2>/dev/null

# --- a file of nobody's, in root's directory that nobody cannot write ---------
mkdir ours
: > ours/daemon.pid && chown $OTHER ours/daemon.pid || fail "cannot give the file away"
victim
pidfile_by_other ours/daemon.pid
refused "nobody's file, --legacy-name sleep" \
	"the file $TR/ours/daemon.pid belongs to $OTHER_NAME" ours/daemon.pid \
	--legacy-name sleep
victim
pidfile_by_other ours/daemon.pid
refused "nobody's file, --legacy-exec $SLEEP" \
	"the file $TR/ours/daemon.pid belongs to $OTHER_NAME" ours/daemon.pid \
	--legacy-exec "$SLEEP"
signalled "nobody's file, with --legacy-trust-file" ours/daemon.pid \
	--legacy-exec "$SLEEP" --legacy-trust-file

# --- root's 0644 file in root's directory: as before ---------------------------
victim
rm -f ours/daemon.pid && echo "$VICTIM" > ours/daemon.pid
[ "$(stat -c %a:%U ours/daemon.pid)" = 644:root ] || fail "not a 0644 root file"
signalled "root's 0644 file in root's directory, --legacy-name" ours/daemon.pid \
	--legacy-name sleep
victim
echo "$VICTIM" > ours/daemon.pid
signalled "root's 0644 file in root's directory, --legacy-exec" ours/daemon.pid \
	--legacy-exec "$SLEEP"
# ... through a symlink of root's to that directory, as /var/run -> /run
ln -s ours ours-link
victim
echo "$VICTIM" > ours/daemon.pid
signalled "through root's symlink to root's directory" ours-link/daemon.pid \
	--legacy-name sleep

# --- the file's own modes, and the directory's ---------------------------------
victim
echo "$VICTIM" > ours/daemon.pid && chmod 0664 ours/daemon.pid
refused "a group-writable file" \
	"the file $TR/ours/daemon.pid is writable by its group" ours/daemon.pid \
	--legacy-name sleep
chmod 0644 ours/daemon.pid
mkdir open && chmod 0777 open
victim
echo "$VICTIM" > open/daemon.pid
refused "root's file in a world-writable directory without the sticky bit" \
	"the directory $TR/open is writable by everyone and has no sticky bit" \
	open/daemon.pid --legacy-exec "$SLEEP"
# the sticky bit: nobody can replace root's file there (as in /tmp) ...
chmod 1777 open
ln -s . open/here && chown -h $OTHER open/here || fail "cannot give a link away"
victim
echo "$VICTIM" > open/daemon.pid
# ... but nobody's own symlink there is theirs to replace
refused "through nobody's symlink in a sticky directory" \
	"the symlink $TR/open/here belongs to $OTHER_NAME" open/here/daemon.pid \
	--legacy-name sleep
signalled "root's file in a sticky world-writable directory" open/daemon.pid \
	--legacy-name sleep

# --- nobody's file naming nobody's own process: its own user wrote it --------
victim sleep setpriv --reuid=$OTHER --regid=$OTHER --clear-groups "$SLEEP" 300
pidfile_by_other theirs/daemon.pid
signalled "nobody's pidfile naming nobody's own process" theirs/daemon.pid \
	--legacy-name sleep

# --- a deleted executable ------------------------------------------------------
# In this mount namespace: the upgrade replaced it, and it is still
# recognised by the name the caller gives.
cp "$SLEEP" exampled || fail "cannot copy sleep(1)"
victim exampled ./exampled 300
echo "$VICTIM" > ours/daemon.pid
rm -f exampled
readlink "/proc/$VICTIM/exe" | grep -qx "$TR/exampled (deleted)" ||
	fail "/proc/$VICTIM/exe reads $(readlink "/proc/$VICTIM/exe")"
signalled "a deleted executable in this mount namespace" ours/daemon.pid \
	--legacy-exec "$TR/exampled"

# In another mount namespace, another program ran under that name (on a
# tmpfs of its own there, which this namespace never sees) and was
# deleted: its /proc/PID/exe reads just the same.
# ns_victim: VICTIM runs $TR/ns/exampled in a mount namespace of its
# own, from a tmpfs there, and the file is deleted; ours/ns.pid names it.
ns_victim() {
	rm -f ours/ns.pid
	unshare -m --propagation private sh -c '
		mount -t tmpfs tmpfs "$1" && cp "$2" "$1/exampled" || exit 1
		"$1/exampled" 300 &
		echo $! > "$3.tmp" && mv "$3.tmp" "$3" && rm -f "$1/exampled"
		wait' sh "$TR/ns" "$SLEEP" "$TR/ours/ns.pid" &
	track $!
	wait_until test -s ours/ns.pid
	VICTIM=$(cat ours/ns.pid)
	track "$VICTIM"
	# Under a chroot (a buildd, the fresh-root check) the other
	# namespace's mount is outside our root, and its path reads
	# otherwise: the case cannot be made there (returns 1).
	for _ in $(seq 100); do
		readlink "/proc/$VICTIM/exe" | grep -qx "$TR/ns/exampled (deleted)" &&
			return 0
		sleep 0.05
	done
	echo "# /proc/$VICTIM/exe reads $(readlink "/proc/$VICTIM/exe")"
	kill -KILL "$VICTIM"
	return 1
}
mkdir ns
if ! unshare -m --propagation private true 2>/dev/null; then
	echo "# unshare -m refused here: the mount-namespace case is not run"
elif ! ns_victim; then
	echo "# another namespace's path does not read as ours here (a chroot): the mount-namespace case is not run"
else
	[ ! -e ns/exampled ] || fail "the other namespace's tmpfs is seen here"
	refused "a deleted executable in another mount namespace" \
		"in another mount namespace" ours/ns.pid --legacy-exec "$TR/ns/exampled"
	kill -KILL "$VICTIM"
	# a file of that name here, another program: not its inode either
	cp "$SLEEP" ns/exampled
	ns_victim
	refused "... with another file at that path here" \
		"in another mount namespace" ours/ns.pid --legacy-exec "$TR/ns/exampled"
	kill -KILL "$VICTIM"
fi

# --- the kit's init scripts, against a forged pidfile -------------------------
# nobody plants the pid of root's running daemon in a pidfile of theirs;
# stop must signal nothing.
cp "$SLEEP" daemon-bin || fail "cannot copy sleep(1)"
victim daemon-bin "$TR/daemon-bin" 300
pidfile_by_other theirs/forged.pid
if [ -r /lib/lsb/init-functions ]; then
	DAEMON=$TR/daemon-bin PIDFILE=$TR/theirs/forged.pid PIDLOCK=$PIDLOCK \
		sh "$TOP_SRCDIR/doc/examples/daemon.init" stop > out 2>&1 &&
		fail "daemon.init stop succeeded on a forged pidfile: $(cat out)"
	alive "$VICTIM" || fail "daemon.init stop killed the forged pidfile's pid: $(cat out)"
	grep -qF "the directory $TR/theirs belongs to" out ||
		fail "daemon.init stop: no reason given: $(cat out)"
	pass "doc/examples/daemon.init stop signals nothing through a forged pidfile"
	kill -KILL "$VICTIM"
	wait "$VICTIM" 2>/dev/null
	victim daemon-bin "$TR/daemon-bin" 300
	pidfile_by_other theirs/forged.pid
else
	echo "# no /lib/lsb/init-functions: daemon.init is not run"
fi
# OpenRC's stop(), with its paths set and its output functions stubbed.
sed -e "s|/usr/sbin/exampled|$TR/daemon-bin|" \
	-e "s|/run/exampled.pid|$TR/theirs/forged.pid|" \
	"$TOP_SRCDIR/doc/examples/daemon.openrc" > openrc.sh
grep -q "^pidfile=\"$TR/theirs/forged.pid\"" openrc.sh || fail "openrc: pidfile= not set"
PATH=$(dirname "$PIDLOCK"):$PATH sh -c '
	ebegin() { :; }
	eend() { return "$1"; }
	. ./openrc.sh
	stop' > out 2>&1 && fail "daemon.openrc stop succeeded on a forged pidfile: $(cat out)"
alive "$VICTIM" || fail "daemon.openrc stop killed the forged pidfile's pid: $(cat out)"
grep -qF "the directory $TR/theirs belongs to" out ||
	fail "daemon.openrc stop: no reason given: $(cat out)"
pass "doc/examples/daemon.openrc stop signals nothing through a forged pidfile"
kill -KILL "$VICTIM"
wait "$VICTIM" 2>/dev/null

done_testing
