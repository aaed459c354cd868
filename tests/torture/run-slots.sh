#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The semaphore torture (tests/torture/README, mix "slots") with the
# settings of the environment: TORTURE_DURATION, TORTURE_PROCS,
# TORTURE_KILL_RATE, TORTURE_SLOTS (3).  A failing run keeps its
# directory (the journal) and says where it is.
set -u
top=$(pwd)
cli=
if [ -x "$top/tools/pidlock" ]; then
	cli="$top/tools/pidlock"
else
	echo "note: tools/pidlock is not built; the mix runs without the CLI"
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-slots.XXXXXX") || exit 99
"$top/tests/torture/slots-torture" --dir "$dir" --cli "$cli" \
	--slots "${TORTURE_SLOTS:-3}" --duration "${TORTURE_DURATION:-6}" \
	--procs "${TORTURE_PROCS:-8}" --kill-rate "${TORTURE_KILL_RATE:-8}" \
	"$@"
rc=$?
if [ "$rc" -eq 0 ]; then
	rm -rf "$dir"
else
	echo "slots torture failed; its journal is in $dir"
fi
exit "$rc"
