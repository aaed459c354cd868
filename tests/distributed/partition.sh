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
#   PART_VARIANTS  any of: short (network.ping-timeout 10, the brick's
#                  keepalive shortened to give a client up after some
#                  13 s; lease 6 s; heal at +20 s), nolease (the short
#                  volume, no lease), stock (Gluster's defaults: 42 s;
#                  lease 30 s; heal at +70 s), before (the short volume,
#                  A asking pidlock_verify(): it must be seen believing
#                  after B's grant, and the tokens must still refuse its
#                  late writes), ping10 (network.ping-timeout 10 alone,
#                  which leaves the brick's 42 s; lease 6 s; heal at
#                  +50 s), before-stock (before on the stock volume,
#                  heal at +70 s); default: short nolease before
#   PART_KEEP      a directory to copy the logs to
#
# Exit 0 when every variant passed, 1 when one failed, 77 when this
# machine cannot run it (the reason is printed).  Leaves nothing: the
# namespaces, mounts, processes and glusterd's state go in every case.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(pwd)
VARIANTS=${PART_VARIANTS:-short nolease before}

skip() { echo "partition: SKIP: $*" >&2; exit 77; }
die() { echo "partition: $*" >&2; exit 99; }
. "$here/../harness.sh"

PATH="$PATH:/usr/sbin:/sbin"
[ "$(id -u)" -eq 0 ] || skip "not root (namespaces, glusterd)"
for t in ip nsenter glusterd glusterfs; do
	command -v "$t" >/dev/null 2>&1 || skip "$t not installed"
done
# Namespaces of our own: refused in some containers.
unshare -n true 2>/dev/null || skip "cannot make a network namespace here"
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

# variant NAME SETTINGS LEASE_MS HEAL_AFTER: one run, judged.  SETTINGS:
# the volume's, "KEY VALUE;..." ("" for Gluster's own).
variant() {
	name=$1 settings=$2 lease=$3 heal_after=$4 role=${5:-holder}
	# A works on past the heal this long: a client whose own timeout
	# (79 s on the stock volume) ends after the heal reconnects late.
	after_heal=${6:-15}
	VOLDIR="$WORK/vol-$name"
	log="$WORK/logs/$name"
	echo "partition: $name: ${settings:-stock settings}; lease ${lease} ms; heal at +$heal_after s"
	netns_up || { echo "partition: $name: cannot make the namespaces"; return 1; }
	GLUSTER_NETNS_SERVER="$NS"s GLUSTER_NETNS_A="$NS"a GLUSTER_NETNS_B="$NS"b \
	GLUSTER_HOST=10.231.0.1 GLUSTER_VOLUME_SET="$settings" \
		sh "$here/gluster-up.sh" "$VOLDIR" || {
		rc=$?
		[ $rc -eq 77 ] && exit 77
		echo "partition: $name: the volume did not come up"
		return 1
	}
	res="$WORK/resource-$name"
	secs=$((heal_after + after_heal))
	"$PROG" "$role" "$VOLDIR/a/p.lock" "$res" "$lease" "$secs" >"$log.a" 2>&1 &
	pa=$!
	i=0
	until grep -q ' held ' "$log.a" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 100 ] || { echo "partition: $name: A did not get the lock"; return 1; }
		sleep 0.1
	done
	# B holds past the heal: A comes back while B still holds.
	"$PROG" waiter "$VOLDIR/b/p.lock" "$res" $((heal_after + 12)) >"$log.b" 2>&1 &
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
	judge "$name" "$log" "$res" "$t_cut" "$t_heal" "$lease" "$ra" "$rb" "$role"
}

# The verdicts, from the two logs and the resource.
judge() {
	name=$1 log=$2 res=$3 t_cut=$4 t_heal=$5 lease=$6 ra=$7 rb=$8 role=$9
	sort -n "$log.a" "$log.b" >"$log.all"
	awk -v cut="$t_cut" -v heal="$t_heal" -v lease="$lease" -v name="$name" \
	    -v ra="$ra" -v rb="$rb" -v role="$role" '
	function rel(t) { return sprintf("%+.1f s", (t - cut) / 1000) }
	$2 == "A" && $3 == "held" { atok = $4 }
	$2 == "B" && $3 == "held" { bgrant = $1; btok = $4
		printf "  %s  B acquires (token %s)\n", rel($1), $4 }
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
		if (role == "verifier") {
			# The before: pidlock_verify() believes after the grant,
			# and only the tokens keep A'"'"'s late writes out.
			printf "  A (pidlock_verify): %d rounds believed it held after B'"'"'s grant; the resource refused %d of its writes, took %d after B'"'"'s first\n", believed, refused, late
			bad = !(bgrant && believed > 0 && !late && btok > atok)
			if (bad) print "  FAIL: the harness did not see the verifier believe, or the tokens let a late write in"
			printf "partition: %s: %s\n", name, bad ? "FAIL" : "ok (the failure it must show)"
			exit bad
		}
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

# The short volume: the client gives the server up after 10 s of
# silence (network.ping-timeout), the brick the client after some 13 s
# (keepalive probes from 4 s idle, every second, 9 of them; stock: 20 s,
# 2 s, some 42 s in all).
SHORT="network.ping-timeout 10;server.keepalive-time 4;server.keepalive-interval 1;server.tcp-user-timeout 10"

status=0
for v in $VARIANTS; do
	case $v in
	short) variant short "$SHORT" 6000 20 || status=1 ;;
	nolease) variant nolease "$SHORT" 0 20 || status=1 ;;
	stock) variant stock "" 30000 70 || status=1 ;;
	before) variant before "$SHORT" 0 20 verifier || status=1 ;;
	ping10) variant ping10 "network.ping-timeout 10" 6000 50 || status=1 ;;
	before-stock) variant before-stock "" 0 70 verifier 40 || status=1 ;;
	*) die "unknown variant $v (short, nolease, before, stock, ping10, before-stock)" ;;
	esac
done
exit $status
