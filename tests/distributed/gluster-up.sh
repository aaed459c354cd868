#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Bring up a GlusterFS volume on loopback, served by a glusterd of our
# own, and mount it twice: DIR/a and DIR/b are two FUSE clients, each
# with its own connection, lock owners and caches (two "hosts" to the
# brick's lock translator).  See tests/distributed/README.
#
#   gluster-up.sh DIR
#
# Everything of the server lives under DIR (working directory, run
# directory, socket, brick, logs); tests/distributed/gluster-down.sh DIR
# undoes it, whatever part of it was done.  Exit 0 when both mounts are
# up, 77 with the reason on stderr when this machine cannot do it (not
# root, no FUSE, GlusterFS not installed, port 24007 taken), 1 on a
# failure after the start.
#
#   gluster-up.sh DIR remount M
#
# Mount DIR/M (a or b) again, with the same command, once its client
# was killed and the dead mount lazily unmounted (check-distributed's
# killclient part); the server must be up.  Exit 0 when the mount is
# up and sees what the other mount makes, 1 otherwise.
#
# make check-partition (partition.sh) runs the server and each client in
# a network namespace of its own: GLUSTER_NETNS_SERVER, GLUSTER_NETNS_A
# and GLUSTER_NETNS_B name them (ip netns), GLUSTER_HOST is the server's
# address there, and GLUSTER_VOLUME_SET "KEY VALUE;KEY VALUE..." is set
# on the volume before its start (network.ping-timeout and the brick's
# keepalive, which decide when each side gives the other up).  The mounts stay in this mount
# namespace: only the processes' network is another.
#
# make check-restart (restart.sh) sets GLUSTER_REPLICA=N (2 or more) for
# a replica N volume of N bricks on this one host, DIR/brick1 to
# DIR/brickN, each its own glusterfsd; unset or 1, the one brick DIR/brick.
set -u

DIR=${1:?usage: gluster-up.sh DIR [remount M]}
VOL=pidlockdist
# glusterd refuses 127.0.0.1 and localhost as a brick's host.
HOST=${GLUSTER_HOST:-127.0.0.2}
PORT=24007

# in_netns NS COMMAND...: COMMAND in network namespace NS ("" for ours).
in_netns() {
	ns=$1
	shift
	if [ -n "$ns" ]; then
		nsenter --net="/run/netns/$ns" "$@"
	else
		"$@"
	fi
}
client_netns() {
	case $1 in
	a) echo "${GLUSTER_NETNS_A:-}" ;;
	*) echo "${GLUSTER_NETNS_B:-}" ;;
	esac
}

skip() { echo "gluster-up: SKIP: $*" >&2; exit 77; }
fail() { echo "gluster-up: $*" >&2; exit 1; }

mount_client() {	# m: the FUSE client of DIR/m, one "host"
	in_netns "$(client_netns "$1")" \
	glusterfs --volfile-server="$HOST" --volfile-id="$VOL" \
		--pid-file="$DIR/run/client-$1.pid" -l "$DIR/log/client-$1.log" \
		"$DIR/$1" || fail "mount $1: $(tail -3 "$DIR/log/client-$1.log")"
}

wait_mounts() {	# m n: up when a directory made on m is seen on n
	i=0
	until mountpoint -q "$DIR/$1" && mountpoint -q "$DIR/$2" &&
	      mkdir -p "$DIR/$1/.up" && [ -d "$DIR/$2/.up" ]; do
		i=$((i + 1))
		[ "$i" -le 300 ] || fail "the mounts did not come up in 30 s"
		sleep 0.1
	done
	rmdir "$DIR/$1/.up"
}

PATH="$PATH:/usr/sbin:/sbin"
if [ "${2:-}" = remount ]; then
	case ${3:-} in
	a) other=b ;;
	b) other=a ;;
	*) fail "usage: gluster-up.sh DIR remount a|b" ;;
	esac
	! mountpoint -q "$DIR/$3" 2>/dev/null ||
		fail "$DIR/$3 is still mounted (umount -l it first)"
	mount_client "$3"
	wait_mounts "$3" "$other"
	exit 0
fi

[ "$(id -u)" -eq 0 ] || skip "not root (glusterd and its bricks need root)"
for t in glusterd gluster glusterfs; do
	command -v "$t" >/dev/null 2>&1 ||
		skip "$t not installed (glusterfs-server, glusterfs-client; see bootstrap DEPS)"
done
[ -c /dev/fuse ] || skip "no /dev/fuse"
grep -qw fuse /proc/filesystems || modprobe fuse 2>/dev/null ||
	skip "the kernel has no FUSE"
# Another glusterd (the system's) would own the port on every address.
if [ -z "${GLUSTER_NETNS_SERVER:-}" ] && command -v ss >/dev/null 2>&1 &&
   ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q .; then
	skip "port $PORT is in use (a glusterd of the system?)"
fi

REPLICA=${GLUSTER_REPLICA:-1}
case $REPLICA in
''|*[!0-9]*) fail "GLUSTER_REPLICA must be a number" ;;
esac
mkdir -p "$DIR/wd" "$DIR/run" "$DIR/log" "$DIR/a" "$DIR/b" ||
	fail "cannot make $DIR"
if [ "$REPLICA" -gt 1 ]; then
	BRICKS="replica $REPLICA"
	i=1
	while [ "$i" -le "$REPLICA" ]; do
		mkdir -p "$DIR/brick$i" || fail "cannot make $DIR/brick$i"
		BRICKS="$BRICKS $HOST:$DIR/brick$i"
		i=$((i + 1))
	done
else
	mkdir -p "$DIR/brick" || fail "cannot make $DIR/brick"
	BRICKS="$HOST:$DIR/brick"
fi
cat >"$DIR/glusterd.vol" <<VOL || fail "cannot write glusterd.vol"
volume management
    type mgmt/glusterd
    option working-directory $DIR/wd
    option run-directory $DIR/run
    option glusterd-sockfile $DIR/run/glusterd.socket
    option transport-type socket
    option transport.socket.bind-address $HOST
    option transport.socket.listen-port $PORT
    option ping-timeout 0
    option event-threads 1
end-volume
VOL

# -N: in the foreground, so that its pid is ours to stop.
# (nsenter without --fork execs it: $! is glusterd.)
${GLUSTER_NETNS_SERVER:+nsenter --net=/run/netns/$GLUSTER_NETNS_SERVER} \
glusterd -N -f "$DIR/glusterd.vol" -p "$DIR/run/glusterd.pid" \
	-l "$DIR/log/glusterd.log" >"$DIR/log/glusterd.out" 2>&1 &
echo $! >"$DIR/glusterd.pid"

cli() {
	gluster --glusterd-sock="$DIR/run/glusterd.socket" --mode=script \
		--log-file="$DIR/log/cli.log" "$@"
}
i=0
until cli volume list >/dev/null 2>&1; do
	kill -0 "$(cat "$DIR/glusterd.pid")" 2>/dev/null ||
		fail "glusterd exited: $(tail -3 "$DIR/log/glusterd.log")"
	i=$((i + 1))
	[ "$i" -le 300 ] || fail "glusterd did not answer in 30 s"
	sleep 0.1
done
# force: the brick is on the root file system, which glusterd would
# rather not have (and replica bricks all on one host).
# shellcheck disable=SC2086 # BRICKS: words, none with a space (mktemp)
cli volume create "$VOL" $BRICKS force >"$DIR/log/create" 2>&1 ||
	fail "volume create: $(cat "$DIR/log/create")"
# GLUSTER_VOLUME_SET: "KEY VALUE;KEY VALUE...", each set in turn.
old_ifs=$IFS
IFS=';'
for kv in ${GLUSTER_VOLUME_SET:-}; do
	IFS=$old_ifs
	# shellcheck disable=SC2086 # "KEY VALUE": two words
	cli volume set "$VOL" $kv >"$DIR/log/set" 2>&1 ||
		fail "volume set $kv: $(cat "$DIR/log/set")"
done
IFS=$old_ifs
cli volume start "$VOL" >"$DIR/log/start" 2>&1 ||
	fail "volume start: $(cat "$DIR/log/start")"
for m in a b; do
	mount_client "$m"
done
wait_mounts a b
exit 0
