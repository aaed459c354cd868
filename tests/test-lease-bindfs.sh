#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Rule C's writer test on two FUSE mounts of one directory (issue 27.1):
# each bindfs mount is a client of its own, whose kernel side counts only
# its own openers.  A spec-only writer creates the file through mount B
# and writes its record 100 ms later; pidlock_acquire() tries through
# mount A every 5 ms.  The lease test must not be asked there (an open
# through B is invisible to it): the grace holds, and A never holds.
# Root and bindfs are needed: skipped (77) without them.
set -u

top=$(pwd)
. "$(dirname "$0")/harness.sh"
ROUNDS=${LEASE_BINDFS_ROUNDS:-6}
PROG="$top/tests/test-lease"
[ -x "$top/tests/.libs/test-lease" ] && {
	PROG="$top/tests/.libs/test-lease"
	use_built_lib
}

skip() { echo "test-lease-bindfs: SKIP: $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "not root (bindfs mounts)"
command -v bindfs >/dev/null 2>&1 || skip "bindfs not installed"
command -v fusermount3 >/dev/null 2>&1 || skip "fusermount3 not installed"
[ -c /dev/fuse ] || skip "no /dev/fuse"
[ -x "$PROG" ] || { echo "test-lease-bindfs: $PROG not built"; exit 99; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-lease-bindfs.XXXXXX") ||
	{ echo "mktemp failed"; exit 99; }
mkdir -p "$WORK/src" "$WORK/a" "$WORK/b" || exit 99
finish() {
	rc=$?
	trap - EXIT INT TERM HUP
	for m in a b; do
		mountpoint -q "$WORK/$m" 2>/dev/null &&
			{ fusermount3 -u "$WORK/$m" 2>/dev/null ||
			  umount -l "$WORK/$m"; }
	done
	finish_work "$rc"
}
trap_finish

for m in a b; do
	bindfs "$WORK/src" "$WORK/$m" 2>"$WORK/$m.err" ||
		skip "bindfs failed: $(tail -1 "$WORK/$m.err")"
done
"$PROG" spec-race "$WORK/a/race.lock" "$WORK/b/race.lock" "$ROUNDS"
