#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# filelock's own test suite against pidlock.FileLock and its siblings
# (issue 29): `make check-filelock FILELOCK_SRC=DIR', DIR an extracted
# release of filelock (git archive 3.32.3 of github tox-dev/filelock).
# Not run by make check: it needs those sources.  Skips (77) without
# FILELOCK_SRC, pytest-asyncio, pytest-mock or pytest-timeout (filelock's
# ini gives each test 20 s; a test waiting for a call that only
# filelock's code makes would wait forever without it).
#
# The method: a scratch copy of DIR (the tests are never copied into
# this tree); tests/python/filelock_map.py, loaded by a sitecustomize in
# every Python process of the run, makes filelock's public names
# pidlock's and counts the pidlock locks each test builds;
# tests/python/filelock_shim.py, a pytest plugin, deselects the soft,
# strict, lease, marker and Windows cases, skips (with the reason) the
# few tests that cannot be run to an end, and reports; files that test only
# filelock's internals or other lock kinds are not run (LEAVE_OUT); a
# user other than root (nobody) runs it, as root passes permission
# checks; pytest's ini keys that Debian 12's pytest 7.2 and
# pytest-asyncio 0.20 do not know are removed.
# Tracebacks are reported as Python prints them (--tb=native): pytest's
# own rendering parses the test's source with ast, which after some of
# filelock's cancellation tests (test_async_filelock_acquire_cancellation.py)
# fails with CPython 3.11's "SystemError: AST constructor recursion depth
# mismatch" and ends the whole run with an INTERNALERROR.
# Extra arguments go to pytest.  FILELOCK_SHIM_RESULTS=FILE writes one
# line per test: outcome, node id, the builds counted, and the failure's
# last line or the reason it was left out.
set -eu
srcdir=${srcdir:-.}
python=${PYTHON:-python3}
top=$(pwd)
src=${FILELOCK_SRC:-}
if [ -z "$src" ]; then
	echo "filelock-suite.sh: SKIP: FILELOCK_SRC (an extracted filelock release) is not set"
	exit 77
fi
[ -d "$src/tests" ] && [ -d "$src/src/filelock" ] || {
	echo "filelock-suite.sh: $src has no tests/ and src/filelock/" >&2; exit 99; }
for mod in pytest pytest_asyncio pytest_mock pytest_timeout; do
	"$python" -c "import $mod" 2>/dev/null || {
		echo "filelock-suite.sh: SKIP: $python has no $mod"; exit 77; }
done
lib=$top/lib/.libs/libpidlock.so.0
[ -f "$lib" ] || { echo "filelock-suite.sh: $lib not built" >&2; exit 99; }

# Files of other lock kinds, and of filelock's internals only.
LEAVE_OUT="soft_rw test_virtualenv.py test_util.py test_process_identity.py
test_async_soft_contracts.py test_marker_records.py test_soft_lease.py
test_soft_lifetime_warning.py test_soft_stale.py test_strict_soft.py
test_strict_soft_compat.py test_strict_soft_failures.py
test_strict_soft_paths.py test_strict_soft_races.py
test_strict_soft_recovery.py test_strict_soft_stress.py"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/filelock-suite.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cp -R "$src/." "$scratch/fl"
[ -f "$scratch/fl/src/filelock/version.py" ] ||
	printf 'version = "%s"\n__version__ = version\n' \
		"$(basename "$src" | sed 's/^filelock-//')" >"$scratch/fl/src/filelock/version.py"
for f in $LEAVE_OUT; do rm -rf "$scratch/fl/tests/$f"; done
for ini in "$scratch/fl/pyproject.toml" "$scratch/fl/tox.ini" "$scratch/fl/setup.cfg"; do
	[ -f "$ini" ] && sed -i '/verbosity_assertions/d;/asyncio_default_fixture_loop_scope/d' "$ini"
done
for f in filelock_shim.py filelock_map.py; do
	cp "$srcdir/tests/python/$f" "$scratch/"
done
# Every Python process of the run (pytest's, multiprocessing's spawned
# children, the scripts a test runs with sys.executable) maps filelock's
# names at startup: see filelock_sitecustomize.py.
cp "$srcdir/tests/python/filelock_sitecustomize.py" "$scratch/sitecustomize.py"
# Where each process notes the first pidlock lock it builds for a test.
: >"$scratch/builds"
mkdir "$scratch/home" "$scratch/tmp"
results=${FILELOCK_SHIM_RESULTS:-}
[ -z "$results" ] || touch "$results"

run() { "$@"; }
if [ "$(id -u)" = 0 ]; then
	chown -R nobody "$scratch"
	[ -z "$results" ] || chown nobody "$results"
	run() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
fi
cd "$scratch/fl"
# Test paths among the arguments replace the whole tests/ directory.
case " $* " in
*" tests/"*) ;;
*) set -- "$@" tests ;;
esac
run env HOME="$scratch/home" TMPDIR="$scratch/tmp" \
	PIDLOCK_LIBRARY="$lib" FILELOCK_SHIM_RESULTS="$results" \
	FILELOCK_SHIM_BUILDS="$scratch/builds" \
	FILELOCK_SHIM_FILES_LEFT_OUT="$(echo $LEAVE_OUT)" \
	PYTHONPATH="$scratch:$(cd "$top/$srcdir" 2>/dev/null && pwd || echo "$top")/python:$scratch/fl/src" \
	"$python" -B -m pytest -q -p no:cacheprovider -p filelock_shim \
	-o addopts= --tb=native "$@"
