#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# util-linux's own flock(1) tests with pidlock in flock's place:
# `make check-flock-suite UTIL_LINUX_SRC=DIR', DIR a util-linux source
# tree (git archive v2.42.2 of github util-linux/util-linux, or a
# release tarball).  Not run by make check: it needs those sources
# (tests/cli/flock-compat.sh makes the same calls as checks of ours).
# Skips (77) without UTIL_LINUX_SRC.
#
# The method: a scratch copy of DIR's tests/ (never copied into this
# tree); every script of tests/ts/flock run by util-linux's own harness
# with TS_CMD_FLOCK naming a wrapper that runs this tree's pidlock and
# drops, from its standard error, the one line pidlock(1) writes about a
# busy lock, which flock(1) does not write (pidlock(1), "FLOCK(1)
# COMPATIBILITY": `2>/dev/null' is the documented way to silence it).
# Each sub-test that fails must be one of KNOWN, the differences that
# the same section of pidlock(1) states; any other failure fails this
# script, and so does a run in which no sub-test passed.
set -u
top=$(pwd)
me=flock-suite.sh
src=${UTIL_LINUX_SRC:-}
pidlock=${PIDLOCK:-$top/tools/pidlock}
if [ -z "$src" ]; then
	echo "$me: SKIP: UTIL_LINUX_SRC (a util-linux source tree) is not set"
	exit 77
fi
if [ ! -d "$src/tests/ts/flock" ] || [ ! -f "$src/tests/functions.sh" ]; then
	echo "$me: $src has no tests/ts/flock and tests/functions.sh" >&2
	exit 99
fi
[ -x "$pidlock" ] || { echo "$me: $pidlock not built" >&2; exit 99; }

# The sub-tests that differ on purpose, with the reason.
declare -A KNOWN=(
	[flock/flock-fcntl-vs-flock]="pidlock's default lock is both kernel locks, so an fcntl holder keeps it out"
	[flock/unlock]="--verbose reports go to standard error, in pidlock's words"
	[flock/range-lock]="--start and --length (byte ranges) are not accepted"
)

scratch=$(mktemp -d "${TMPDIR:-/tmp}/flock-suite.XXXXXX") ||
	{ echo "$me: mktemp failed" >&2; exit 99; }
trap 'rm -rf "$scratch"' EXIT
cp -R "$src/tests" "$scratch/tests" || exit 99

# The suite takes flock's first child for the sign that the lock is
# held: pidlock must be the process it started, with no child before
# the lock.  In a build tree tools/pidlock is libtool's script, whose
# sed(1) runs are children: the program itself runs instead.
run_env=
if [ -x "$(dirname "$pidlock")/.libs/pidlock" ] &&
   grep -q 'libtool' "$pidlock" 2>/dev/null; then
	run_env="LD_LIBRARY_PATH=$top/lib/.libs"
	pidlock=$(dirname "$pidlock")/.libs/pidlock
fi

# The wrapper: pidlock, less its busy-lock line on standard error.  The
# filter must not be the wrapper's child either (a process substitution
# is): it reads a FIFO in a process of its own, gone from the wrapper's
# children before pidlock runs.
cat >"$scratch/flock" <<EOF
#!/bin/bash
fifo=\$(mktemp -u "$scratch/stderr.XXXXXX") && mkfifo "\$fifo" || exit 99
( grep -v ': lock is busy, held by ' <"\$fifo" >&2 & )
exec 2>"\$fifo"
rm -f "\$fifo"
exec env $run_env "$pidlock" "\$@"
EOF
chmod +x "$scratch/flock"
lslocks=$(command -v lslocks || echo "$scratch/no-lslocks")

passed=0 failed=0 known=0 rc=0
cd "$scratch" || exit 99
for t in tests/ts/flock/*; do
	[ -f "$t" ] || continue
	name=flock/$(basename "$t")
	out=$(TS_CMD_FLOCK=$scratch/flock TS_CMD_LSLOCKS=$lslocks \
		timeout 300 bash "$t" --nonroot 2>&1)
	status=$?
	echo "$out"
	case $out in
	*SKIPPED*) continue ;;
	esac
	# A script with sub-tests names each failing one, one without names
	# itself; a script that gave up (ts_die) names none: it is its own.
	fails=$(printf '%s\n' "$out" | sed -n 's/.*FAILED (\(flock\/[^)]*\)).*/\1/p')
	[ "$status" = 0 ] || [ -n "$fails" ] || fails=$name
	oks=$(printf '%s\n' "$out" | grep -c '\.\.\. OK')
	passed=$((passed + oks))
	for f in $fails; do
		if [ -n "${KNOWN[$f]:-}" ]; then
			known=$((known + 1))
			echo "$me: $f: a known difference: ${KNOWN[$f]}"
		else
			failed=$((failed + 1))
			echo "$me: $f: FAILED, not a known difference" >&2
			for d in tests/diff/$f tests/diff/$f.err; do
				[ -f "$d" ] && cat "$d" >&2
			done
			rc=1
		fi
	done
done
echo "$me: $passed sub-tests passed, $known known differences, $failed other failures"
[ "$passed" -gt 0 ] || { echo "$me: no sub-test passed" >&2; rc=1; }
exit $rc
