#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# make check-filesystems: tests/fs/run.sh for each group of file systems,
# the groups side by side:
#
#   ci/filesystems.sh [--all] GROUP...   GROUP: file systems joined by commas
#
# --all: the groups must hold run.sh's default list (DEFAULT_FS), each
# once, so that a file system added there is not left out here.
#
# Each group is its own tests/fs/run.sh (its own scratch directory, loop
# images and mounts; nothing is shared but the built tree, which the
# tests only read), its output kept and shown whole once it ended, in
# the order given, with how long it took.  Run from the top build
# directory, as root; srcdir and the peers' variables as run.sh takes
# them.  Exit status: run.sh's when one group was given; else the first
# failed group's, 77 when every group was skipped, 0 when all passed.
set -u

me=filesystems.sh
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${srcdir:-$(cd "$here/.." && pwd)}
export srcdir
all=0
[ "${1:-}" != --all ] || { all=1; shift; }
[ $# -gt 0 ] || { echo "usage: $me [--all] GROUP..." >&2; exit 64; }
if [ "$all" = 1 ]; then
	want=$(sed -n 's/^DEFAULT_FS="\(.*\)"$/\1/p' "$srcdir/tests/fs/run.sh" |
		tr ' ' '\n' | LC_ALL=C sort | tr '\n' ' ')
	have=$(echo "$*" | tr ', ' '\n\n' | LC_ALL=C sort | tr '\n' ' ')
	[ -n "$want" ] && [ "$want" = "$have" ] || {
		echo "$me: the groups ($have) are not tests/fs/run.sh's default list ($want): fix FS_GROUPS in ci/Makemodule.am" >&2
		exit 99
	}
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-fsgroups.XXXXXX") ||
	{ echo "$me: mktemp failed" >&2; exit 99; }
pids=
stop() {
	# An interrupted run: each run.sh undoes its mounts on TERM.
	for p in $pids; do kill -TERM "$p" 2>/dev/null; done
	wait
	rm -rf "$tmp"
	exit 130
}
trap stop INT TERM HUP

n=0
for g; do
	n=$((n + 1))
	echo "$me: group $n: $(echo "$g" | tr , ' ') (started $(date -u +%H:%M:%S))"
	(
		t0=$(date +%s)
		# shellcheck disable=SC2046 # the group's names are words
		"${SHELL:-/bin/sh}" "$srcdir/tests/fs/run.sh" $(echo "$g" | tr , ' ') &
		c=$!
		trap 'kill -TERM "$c" 2>/dev/null; wait "$c"; exit 143' INT TERM HUP
		wait "$c"
		rc=$?
		echo "$me: group $n: exit $rc in $(($(date +%s) - t0)) s"
		exit $rc
	) >"$tmp/$n.out" 2>&1 &
	pids="$pids $!"
done

rc=0 made=0 i=0
for p in $pids; do
	i=$((i + 1))
	wait "$p"
	r=$?
	echo
	cat "$tmp/$i.out"
	case $r in
	0)	made=1 ;;
	77)	;;
	*)	[ "$rc" -ne 0 ] || rc=$r ;;
	esac
done
rm -rf "$tmp"
[ "$rc" -ne 0 ] && exit "$rc"
[ "$made" -eq 0 ] && exit 77
exit 0
