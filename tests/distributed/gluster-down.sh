#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Undo tests/distributed/gluster-up.sh DIR: unmount both clients (a
# dead one too, whose client was killed), stop the volume's brick and
# our glusterd, remove DIR.  Only processes that
# up started are stopped: each pid comes from a pid file under DIR, and
# is signalled only while its command line still names DIR or our
# volume (a pid reused by another process is left alone).
set -u

DIR=${1:?usage: gluster-down.sh DIR}
VOL=pidlockdist
PATH="$PATH:/usr/sbin:/sbin"

# ours PID: the process is alive and its command line is one of ours.
ours() {
	[ -n "$1" ] && [ -r "/proc/$1/cmdline" ] &&
		tr '\0' ' ' <"/proc/$1/cmdline" | grep -q -e "$DIR" -e "$VOL"
}

stop() {	# pid: TERM, then KILL after 5 s
	ours "$1" || return 0
	kill "$1" 2>/dev/null
	i=0
	while ours "$1" && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	ours "$1" && kill -9 "$1" 2>/dev/null
	return 0
}

pidof_file() { cat "$1" 2>/dev/null; }

# mounted PATH: the mount table says so.  Not mountpoint(1) alone: it
# stats the path, which fails (ENOTCONN) on a mount whose client died.
mounted() {
	awk -v p="$1" '{ m = $2; gsub(/\\040/, " ", m) } m == p { f = 1 }
		END { exit !f }' /proc/self/mounts 2>/dev/null ||
		mountpoint -q "$1" 2>/dev/null
}

for m in a b; do
	if mounted "$DIR/$m"; then
		umount "$DIR/$m" 2>/dev/null || fusermount3 -u "$DIR/$m" 2>/dev/null ||
			umount -l "$DIR/$m" || echo "gluster-down: could not unmount $DIR/$m" >&2
	fi
	stop "$(pidof_file "$DIR/run/client-$m.pid")"
done
# The bricks: their pid files are under our run directory; the socket
# and the log each was told to use are outside DIR, and removed by name.
# A replica volume (GLUSTER_REPLICA) has a self-heal daemon too, whose
# pid file is under the run directory as well: stopped the same way,
# its socket removed (its log, /var/log/glusterfs/glustershd.log, is a
# name every glusterd of this host shares, and stays).
for pf in "$DIR"/run/vols/"$VOL"/*.pid "$DIR"/run/shd/"$VOL"/*.pid; do
	[ -f "$pf" ] || continue
	pid=$(pidof_file "$pf")
	if ours "$pid"; then
		args=$(tr '\0' '\n' <"/proc/$pid/cmdline")
		sock=$(printf '%s\n' "$args" | sed -n '/^-S$/{n;p;}')
		log=$(printf '%s\n' "$args" | sed -n '/^-l$/{n;p;}')
		stop "$pid"
		case $sock in /var/run/gluster/*.socket|/run/gluster/*.socket) rm -f "$sock" ;; esac
		case $log in /var/log/glusterfs/bricks/*.log) rm -f "$log" ;; esac
	fi
done
stop "$(pidof_file "$DIR/glusterd.pid")"
# Empty log directories glusterd made for the volume (rmdir: only empty).
rmdir /var/log/glusterfs/gfproxy/"$VOL" /var/log/glusterfs/snaps/"$VOL" 2>/dev/null
rm -rf "$DIR"
exit 0
