#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make check: the short torture, mix "dotlock" (see tests/torture/README).
# Publishing in place (make check-notmpfile refuses RENAME_NOREPLACE and
# O_TMPFILE; bindfs has no O_TMPFILE, and tests/fs/run.sh says so in
# FS_PUBLISH), a create that loses the race for the locks leaves an empty
# file, and the path is kept for good: liblockfile reads a kept record as
# a valid lock for 5 minutes after its mtime, so dotlockfile gets no turn
# (doc/protocol.md, section 7, where such paths are not for liblockfile
# users).  Under check-notmpfile's refusals, beside two busy loops: 5
# runs in 109 ended with the path kept and dotlockfile without a turn.
if { [ "${FAULT_NORENAME:-}" = 1 ] && [ "${FAULT_NOTMPFILE:-}" = 1 ]; } ||
	[ "${FS_PUBLISH:-}" = "in place" ]; then
	echo "SKIP: liblockfile's dotlocks and a path published in place do not mix: it stays kept (doc/protocol.md, section 7)"
	exit 77
fi
exec "${SHELL:-/bin/sh}" "${srcdir:-.}/tests/torture/run.sh" --mix dotlock
