#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make check-partition: a holder cut off from the file server learns that
# it lost the lock, and a fencing token refuses what it writes late.  See
# tests/distributed/README, "Partition".  Run from the top build
# directory, as root:
#
#   tests/distributed/partition.sh
#
# A GlusterFS server (glusterd and its brick) runs in a network namespace
# of its own; client A's FUSE process in another, behind a router
# namespace; client B's in a third, on the server's side.  Only addresses
# of 10.231.0.0/16 inside these namespaces are used.  A holds the lock;
# B waits in pidlock_acquire(); the router then drops everything between
# A and the server (blackhole routes, no error to anybody), and heals
# PART_HEAL seconds later.  tests/distributed/partition.c does the work
# of A and B and logs it; this script judges the logs:
#
#   1. once B holds the lock, no check of A's that began after B's grant
#      says 0 (A never believes it holds);
#   2. with a lease below the server's timeout, A counts the lock lost
#      before B's grant;
#   3. no check takes longer than its bound (500 ms, and a margin);
#   4. the resource took nothing of A's after B's first write, and B's
#      token is greater than A's.
#
# Environment:
#   PART_VARIANTS  any of: short (network.ping-timeout 10, lease 6 s,
#                  heal at +30 s) stock (Gluster's defaults, 42 s, lease
#                  30 s, heal at +70 s) nolease (the short volume, no
#                  lease); default: short nolease
#   PART_KEEP      a directory to copy the logs to
#
# Exit 0 when every variant passed, 1 when one failed, 77 when this
# machine cannot run it (the reason is printed).  Leaves nothing: the
# namespaces, mounts, processes and glusterd's state go in every case.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(pwd)
VARIANTS=${PART_VARIANTS:-short nolease}

skip() { echo "partition: SKIP: $*" >&2; exit 77; }
die() { echo "partition: $*" >&2; exit 99; }
. "$here/../harness.sh"

PATH="$PATH:/usr/sbin:/sbin"
[ "$(id -u)" -eq 0 ] || skip "not root (namespaces, glusterd)"
for t in ip nsenter glusterd glusterfs; do
	command -v "$t" >/dev/null 2>&1 || skip "$t not installed"
done
PROG="$top/tests/distributed/partition"
[ -x "$PROG" ] || die "$PROG is not built (make tests/distributed/partition)"
if [ -x "$top/tests/distributed/.libs/partition" ]; then
	PROG="$top/tests/distributed/.libs/partition"
	use_built_lib
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-part.XXXXXX") || die "mktemp failed"
mkdir -p "$WORK/logs" || die "mkdir failed"
NS="pl$$"	# pl<pid>s, pl<pid>r, pl<pid>a, pl<pid>b
VOLDIR=

netns_down() {
	for n in s r a b; do
		ip netns del "$NS$n" 2>/dev/null
	done
}
finish() {
	rc=$?
	trap - EXIT INT TERM HUP
	[ -n "$VOLDIR" ] && [ -d "$VOLDIR" ] && {
		cp "$VOLDIR"/log/* "$WORK/logs/" 2>/dev/null
		sh "$here/gluster-down.sh" "$VOLDIR"
	}
	netns_down
	finish_work "$rc" "${PART_KEEP:-}" "$WORK/logs" partition
}
trap finish EXIT
trap 'exit 130' INT TERM HUP

# The network: s (server, 10.231.0.1 on its lo), r (router), a, b.
#   a 10.231.3.2 -- 10.231.3.1 r 10.231.1.2 -- 10.231.1.1 s
#   b 10.231.2.2 -- 10.231.2.1 s
netns_up() {
	for n in s r a b; do
		ip netns add "$NS$n" || return 1
		ip -n "$NS$n" link set lo up || return 1
	done
	ip -n "$NS"s addr add 10.231.0.1/32 dev lo &&
	link "$NS"s sr 10.231.1.1/30 "$NS"r rs 10.231.1.2/30 &&
	link "$NS"r ra 10.231.3.1/30 "$NS"a ar 10.231.3.2/30 &&
	link "$NS"s sb 10.231.2.1/30 "$NS"b bs 10.231.2.2/30 &&
	ip netns exec "$NS"r sysctl -qw net.ipv4.ip_forward=1 &&
	ip -n "$NS"r route add 10.231.0.1/32 via 10.231.1.1 &&
	ip -n "$NS"s route add 10.231.3.0/30 via 10.231.1.2 &&
	ip -n "$NS"a route add default via 10.231.3.1 &&
	ip -n "$NS"b route add default via 10.231.2.1
}
# link NS1 IF1 ADDR1 NS2 IF2 ADDR2: a veth pair between two namespaces.
link() {
	ip link add "$NS$2" netns "$1" type veth peer name "$NS$5" netns "$4" &&
	ip -n "$1" link set "$NS$2" name "$2" &&
	ip -n "$4" link set "$NS$5" name "$5" &&
	ip -n "$1" addr add "$3" dev "$2" && ip -n "$1" link set "$2" up &&
	ip -n "$4" addr add "$6" dev "$5" && ip -n "$4" link set "$5" up
}
cut() {
	ip -n "$NS"r route replace blackhole 10.231.0.1/32 &&
	ip -n "$NS"r route replace blackhole 10.231.3.2/32
}
heal() {
	ip -n "$NS"r route replace 10.231.0.1/32 via 10.231.1.1 &&
	ip -n "$NS"r route del blackhole 10.231.3.2/32
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# variant NAME PING_TIMEOUT LEASE_MS HEAL_AFTER: one run, judged.
variant() {
	name=$1 ping=$2 lease=$3 heal_after=$4
	VOLDIR="$WORK/vol-$name"
	log="$WORK/logs/$name"
	echo "partition: $name: network.ping-timeout $ping, lease ${lease} ms, heal at +$heal_after s"
	netns_up || { echo "partition: $name: cannot make the namespaces"; return 1; }
	GLUSTER_NETNS_SERVER="$NS"s GLUSTER_NETNS_A="$NS"a GLUSTER_NETNS_B="$NS"b \
	GLUSTER_HOST=10.231.0.1 GLUSTER_VOLUME_SET="network.ping-timeout $ping" \
		sh "$here/gluster-up.sh" "$VOLDIR" || {
		rc=$?
		[ $rc -eq 77 ] && exit 77
		echo "partition: $name: the volume did not come up"
		return 1
	}
	res="$WORK/resource-$name"
	secs=$((heal_after + 25))
	"$PROG" holder "$VOLDIR/a/p.lock" "$res" "$lease" "$secs" >"$log.a" 2>&1 &
	pa=$!
	i=0
	until grep -q ' held ' "$log.a" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 100 ] || { echo "partition: $name: A did not get the lock"; return 1; }
		sleep 0.1
	done
	"$PROG" waiter "$VOLDIR/b/p.lock" "$res" 8 >"$log.b" 2>&1 &
	pb=$!
	sleep 3
	t_cut=$(now_ms)
	cut || { echo "partition: $name: cannot cut"; return 1; }
	sleep "$heal_after"
	heal || { echo "partition: $name: cannot heal"; return 1; }
	t_heal=$(now_ms)
	wait "$pa"; ra=$?
	# B waits without a limit: a B that never gets the lock is a failure.
	i=0
	while kill -0 "$pb" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 600 ] || { kill "$pb"; echo "partition: $name: B never got the lock"; }
		sleep 0.1
	done
	wait "$pb"; rb=$?
	sh "$here/gluster-down.sh" "$VOLDIR"
	VOLDIR=
	netns_down
	judge "$name" "$log" "$res" "$t_cut" "$t_heal" "$lease" "$ra" "$rb"
}

# The verdicts, from the two logs and the resource.
judge() {
	name=$1 log=$2 res=$3 t_cut=$4 t_heal=$5 lease=$6 ra=$7 rb=$8
	sort -n "$log.a" "$log.b" >"$log.all"
	awk -v cut="$t_cut" -v heal="$t_heal" -v lease="$lease" -v name="$name" \
	    -v ra="$ra" -v rb="$rb" '
	function rel(t) { return sprintf("%+.1f s", (t - cut) / 1000) }
	$2 == "A" && $3 == "held" { atok = $4 }
	$2 == "B" && $3 == "held" { bgrant = $1; btok = $4
		printf "  %s  B acquires (token %d)\n", rel($1), $4 }
	$2 == "A" && $3 == "check" {
		start = $1 - $5
		if ($5 > maxms) maxms = $5
		if ($4 == 0 && start > cut) lastok = $1
		if ($4 == 0 && bgrant && start > bgrant) believed++
		if ($4 == -37 && !lost) { lost = $1
			printf "  %s  A: pidlock_check() says -ENOLCK\n", rel($1) }
		if ($4 == -110 && !timedout) { timedout = $1
			printf "  %s  A: first -ETIMEDOUT (no answer in 500 ms)\n", rel($1) }
	}
	$2 == "A" && $3 == "wrote" && bfirst { late++ }
	$2 == "A" && $3 == "refused" { refused++ }
	$2 == "B" && $3 == "wrote" && !bfirst { bfirst = $1 }
	$2 == "A" && $3 == "release" { arel = $4 }
	END {
		printf "  %s  the cut;  %s  the heal\n", rel(cut), rel(heal)
		printf "  A: last check saying 0 after the cut at %s; longest check %d ms; A refused by the resource %d times; release %d\n", lastok ? rel(lastok) : "-", maxms, refused, arel
		bad = 0
		if (ra != 0 || rb != 0) { print "  FAIL: A exited " ra ", B " rb; bad = 1 }
		if (!bgrant) { print "  FAIL: B never held"; bad = 1 }
		if (believed) { print "  FAIL: " believed " checks of A said 0 after B'"'"'s grant"; bad = 1 }
		if (lease > 0 && (!lost || lost > bgrant)) { print "  FAIL: with a lease, A did not count the lock lost before B'"'"'s grant"; bad = 1 }
		if (!lost) { print "  FAIL: A never learned it lost the lock"; bad = 1 }
		if (maxms > 700) { print "  FAIL: a check of 500 ms took " maxms " ms"; bad = 1 }
		if (late) { print "  FAIL: the resource took " late " writes of A after B'"'"'s first"; bad = 1 }
		if (btok <= atok) { print "  FAIL: B'"'"'s token " btok " is not above A'"'"'s " atok; bad = 1 }
		printf "partition: %s: %s\n", name, bad ? "FAIL" : "ok"
		exit bad
	}' "$log.all"
}

status=0
for v in $VARIANTS; do
	case $v in
	short) variant short 10 6000 30 || status=1 ;;
	nolease) variant nolease 10 0 30 || status=1 ;;
	stock) variant stock 42 30000 70 || status=1 ;;
	*) die "unknown variant $v (short, nolease, stock)" ;;
	esac
done
exit $status
