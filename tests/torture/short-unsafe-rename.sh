#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make check: mix "unsafe-rename" runs until the breakage is shown (30 s at most).
# Publishing in place (make check-notmpfile refuses RENAME_NOREPLACE and
# O_TMPFILE) keeps the path after a contended create, so the rename peer
# waits out a released record instead of racing: nothing to show there.
# A file system where the library publishes in place by itself (bindfs:
# no O_TMPFILE; tests/fs/run.sh says so in FS_PUBLISH) is the same: the
# breakage is shown only if the race comes before the first contended
# create, and CI's filesystems stage saw 30 s go by without it.
if { [ "${FAULT_NORENAME:-}" = 1 ] && [ "${FAULT_NOTMPFILE:-}" = 1 ]; } ||
	[ "${FS_PUBLISH:-}" = "in place" ]; then
	echo "SKIP: the unsafe-rename demonstration needs a path that comes free; in place it stays kept (doc/protocol.md, section 7)"
	exit 77
fi
exec "${SHELL:-/bin/sh}" "${srcdir:-.}/tests/torture/run.sh" --mix unsafe-rename --duration 30
