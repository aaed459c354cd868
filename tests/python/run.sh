#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The Python module's suite (pytest), against the library of this build
# tree: PIDLOCK_LIBRARY names lib/.libs/libpidlock.so.0 and PYTHONPATH
# the module's sources.  Run by make check when configure found python3.
# Needs python3-pytest and python3-filelock (./bootstrap deps installs
# them); without them the suite is skipped (77) with the reason.
set -eu
srcdir=${srcdir:-.}
python=${PYTHON:-python3}
top=$(pwd)
lib=$top/lib/.libs/libpidlock.so.0
[ -f "$lib" ] || { echo "run.sh: $lib not built" >&2; exit 99; }
[ -x "$top/tests/python/layout" ] || { echo "run.sh: tests/python/layout not built" >&2; exit 99; }
for mod in pytest filelock; do
	if ! "$python" -c "import $mod" 2>/dev/null; then
		echo "run.sh: SKIP: $python has no $mod (apt-get install python3-$mod)"
		exit 77
	fi
done

PIDLOCK_LIBRARY=$lib
PYTHONPATH=$(cd "$srcdir" && pwd)/python${PYTHONPATH:+:$PYTHONPATH}
PIDLOCK_TEST_LAYOUT=$top/tests/python/layout
# The fault shim (built by make check) for the tests of a file system
# without flock(2).
PIDLOCK_TEST_FAULTSHIM=$top/tests/fault/.libs/libfaultshim.so
export PIDLOCK_LIBRARY PYTHONPATH PIDLOCK_TEST_LAYOUT PIDLOCK_TEST_FAULTSHIM
# A library built with sanitizers needs their runtimes first in python3.
case "${SAN_CFLAGS:-}" in
*address*)
	pre=
	for rt in libasan.so libubsan.so; do
		f=$(${PY_TEST_CC:-cc} -print-file-name=$rt)
		[ "$f" = "$rt" ] || pre="$pre $f"
	done
	LD_PRELOAD="$pre${LD_PRELOAD:+ $LD_PRELOAD}"
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	export LD_PRELOAD ASAN_OPTIONS
	;;
esac
# Arguments (make check-interrupts): pytest's, in place of the whole suite.
[ $# -gt 0 ] || set -- "$srcdir/tests/python"
exec "$python" -B -m pytest -q -p no:cacheprovider "$@"
