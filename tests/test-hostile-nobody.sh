#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Root passes every permission check, so the permission cases of
# test-hostile prove little as root.  Run them again as nobody, with a
# file owned by a third user in a sticky world-writable directory for
# the foreign-owner case (only root can make one).
set -eu

if [ "$(id -u)" -ne 0 ] || [ -n "${FAKEROOTKEY:-}" ]; then
	echo "SKIP: not root (fakeroot is not); test-hostile ran the permission cases as this user"
	exit 77
fi
if ! command -v setpriv >/dev/null 2>&1 || ! id nobody >/dev/null 2>&1; then
	echo "SKIP: needs setpriv(1) and a user nobody"
	exit 77
fi

fixture=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-foreign.XXXXXX")
trap 'rm -rf "$fixture"' EXIT INT TERM
chmod 1777 "$fixture"
printf 'pid=2147483646\ntimestamp=1\nlock=flock,ofd\n' >"$fixture/foreign"
chown 4242:4242 "$fixture/foreign"
chmod 0666 "$fixture/foreign"

# nobody's group is nogroup on Debian, nobody elsewhere: go by number.
as_nobody="setpriv --reuid=$(id -u nobody) --regid=$(id -g nobody) --clear-groups"

# The scratch directories of the cases go to TMPDIR: it must be one
# nobody can write.
tmp=${TMPDIR:-/tmp}
if ! $as_nobody test -w "$tmp"; then
	tmp=/tmp
fi

HOSTILE_FOREIGN_DIR=$fixture TMPDIR=$tmp CK_INCLUDE_TAGS=unprivileged \
	$as_nobody ./tests/test-hostile
