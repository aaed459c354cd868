#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Run the torture program with the settings of the environment:
#   TORTURE_DURATION, TORTURE_PROCS, TORTURE_KILL_RATE  storm size
#   TORTURE_ARGS      more options for the torture program
#   TORTURE_VALGRIND  non-empty: run every participant under valgrind
# The pidlock tool joins the mixes as soon as tools/pidlock is built.
set -u
top=$(pwd)
torture="$top/tests/torture/torture"
cli=
if [ -x "$top/tools/pidlock" ]; then
	cli="$top/tools/pidlock"
else
	echo "note: tools/pidlock is not built; the mixes run without the CLI"
fi
dur=${TORTURE_DURATION:-6}
procs=${TORTURE_PROCS:-0}
rate=${TORTURE_KILL_RATE:-8}
wrap=
if [ -n "${TORTURE_VALGRIND:-}" ]; then
	# Slower by far: fewer kills, and wider margins (--slow).
	dur=${TORTURE_VALGRIND_DURATION:-8}
	rate=2
	set -- "$@" --slow
	wrap="${LIBTOOL:-$top/libtool} --mode=execute valgrind -q --error-exitcode=99 \
--leak-check=full --errors-for-leak-kinds=definite,indirect \
--trace-children=yes --trace-children-skip=/usr/*,/bin/* \
--suppressions=$(cd "$(dirname "$0")" && pwd)/valgrind.supp"
fi
# shellcheck disable=SC2086
exec $wrap "$torture" --duration "$dur" --procs "$procs" \
	--kill-rate "$rate" --cli "$cli" ${TORTURE_ARGS:-} "$@"
