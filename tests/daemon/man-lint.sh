#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The daemon and pidfile manual pages: every exported pidlock_daemon_* and
# pidlock_pidfile_* function has a page (or an alias, man/aliases), and
# mandoc -Tlint -Wwarning says nothing.  Aliases are staged as copies
# of their pages (cp follows the links).
set -u
top=${srcdir:-.}
status=0
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/man3"
cp "$top"/man/pidlock_daemon*.3 "$top"/man/pidlock_pidfile*.3 "$tmp/man3/" || exit 99

for fn in $(sed -n 's/^[[:space:]]*\(pidlock_\(daemon\|pidfile\)_[a-z_]*\);$/\1/p' \
	    "$top/lib/libpidlock.sym"); do
	page=$tmp/man3/$fn.3
	[ -f "$page" ] || { echo "no manual page for $fn" >&2; status=1; continue; }
	sed -n '/^\.SH SYNOPSIS$/,/^\.SH /p' "$page" | grep -q "[ *]$fn(" ||
		{ echo "$page: no prototype of $fn" >&2; status=1; }
done

cd "$tmp" || exit 99
for page in man3/*; do
	out=$(mandoc -Tlint -Wwarning "$page" 2>&1)
	rc=$?
	if [ -n "$out" ] || [ $rc -ne 0 ]; then
		echo "mandoc -Tlint $page (exit $rc):" >&2
		printf '%s\n' "$out" >&2
		status=1
	fi
done
[ $status = 0 ] && echo "ok - daemon and pidfile manual pages"
exit $status
