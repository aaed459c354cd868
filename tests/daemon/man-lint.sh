#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The daemon and pidfile manual pages: every exported pidlock_daemon_* and
# pidlock_pidfile_* function has a page (or a one-line .so alias), and
# mandoc -Tlint -Wwarning says nothing, except its advice against .so
# in the aliases.  Pages are staged as man3/ so the aliases resolve.
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
	if head -n1 "$page" | grep -q '^\.so '; then
		page=$tmp/$(sed 's/^\.so //' "$page")
	fi
	sed -n '/^\.SH SYNOPSIS$/,/^\.SH /p' "$page" | grep -q "[ *]$fn(" ||
		{ echo "$page: no prototype of $fn" >&2; status=1; }
done

cd "$tmp" || exit 99
for page in man3/*; do
	out=$(mandoc -Tlint -Wwarning "$page" 2>&1)
	rc=$?
	if head -n1 "$page" | grep -q '^\.so '; then
		out=$(printf '%s\n' "$out" | grep -v ': WARNING: \.so is fragile, better use ln(1)')
		rc=0
	fi
	if [ -n "$out" ] || [ $rc -ne 0 ]; then
		echo "mandoc -Tlint $page (exit $rc):" >&2
		printf '%s\n' "$out" >&2
		status=1
	fi
done
[ $status = 0 ] && echo "ok - daemon and pidfile manual pages"
exit $status
