#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The Python package installed into a virtual environment, as
# doc/python.md says ("In a virtual environment"): python3 -m venv, then
# the venv's own pip installs $srcdir/python, built by the in-tree
# backend (python/_pidlock_build.py), offline: --no-index, no pip
# configuration (PIP_CONFIG_FILE=/dev/null, no PIP_* variables), so
# nothing but the source tree can serve it.  Then, in the venv's python3:
#  1. pip install DIR: `import pidlock' comes from the venv, loads the
#     build tree's library ($PIDLOCK_LIBRARY), takes and releases a lock;
#     the wheel names no libdir, and its version is configure's;
#  2. --config-settings libdir=DIR: loads DIR/libpidlock.so.0 with no
#     $PIDLOCK_LIBRARY;
#  3. the backend's sdist installs the same way;
#  4. pip install -e DIR runs the module from the source tree.
# The source tree is only read (make distcheck makes it read-only); all
# else is in a scratch directory.  Skipped (77) only without python3 or
# without venv/ensurepip (Debian: apt-get install python3-venv).
set -eu
srcdir=$(cd "${srcdir:-.}" && pwd)
python=${PYTHON:-python3}
top=$(pwd)
me=venv-install.sh
case $python in
:|'') echo "$me: SKIP: configured without python3"; exit 77 ;;
esac
lib=$top/lib/.libs/libpidlock.so.0
[ -f "$lib" ] || { echo "$me: $lib not built" >&2; exit 99; }
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$top/config.h")
[ -n "$version" ] || { echo "$me: no PACKAGE_VERSION in $top/config.h" >&2; exit 99; }
fail() { echo "FAIL: $*" >&2; exit 1; }

t=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-venv.XXXXXX")
trap 'rm -rf "$t"' EXIT
cd "$t"

# Nothing from the caller's pip or Python setup: no index, no find-links,
# no configuration file, no module path.
for v in $(env | sed -n 's/^\(PIP_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset PYTHONPATH PYTHONHOME PYTHONUSERBASE
PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
PIP_NO_CACHE_DIR=1
export PIP_CONFIG_FILE PIP_DISABLE_PIP_VERSION_CHECK PIP_NO_INPUT PIP_NO_CACHE_DIR

if ! "$python" -m venv "$t/v" > venv.out 2>&1; then
	if grep -qi 'ensurepip\|python3-venv\|No module named venv' venv.out; then
		echo "$me: SKIP: $python cannot make a venv with pip (apt-get install python3-venv):"
		tail -n 3 venv.out
		exit 77
	fi
	cat venv.out >&2
	fail "$python -m venv"
fi
vpy=$t/v/bin/python3
[ -x "$t/v/bin/pip" ] || fail "the venv has no pip"

# The sanitizer runtimes first, for an ASan-built library (as run.sh);
# only in the python3 that loads it, not in pip.
pre=
case "${SAN_CFLAGS:-}" in
*address*)
	for rt in libasan.so libubsan.so; do
		f=$(${PY_TEST_CC:-cc} -print-file-name=$rt)
		[ "$f" = "$rt" ] || pre="$pre $f"
	done
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	export ASAN_OPTIONS
	;;
esac
run_py() {	# python3 code args...: the venv's python3, from $t
	LD_PRELOAD="$pre${LD_PRELOAD:+ $LD_PRELOAD}" "$vpy" -c "$@"
}
pip_install() {	# pip install arguments...
	"$t/v/bin/pip" install --no-index "$@" > pip.out 2>&1 ||
		{ cat pip.out >&2; fail "pip install --no-index $*"; }
}

# What each step runs: where pidlock came from, the library loaded, its
# LIBDIR, the distribution's version, and a lock taken and released.
probe='
import importlib.metadata, os, sys
import pidlock, pidlock._lib as l, pidlock._paths as p
lock = pidlock.Lock(sys.argv[1], timeout=0, tag="venv")
with lock:
    held = pidlock.inspect(sys.argv[1]).pid == os.getpid()
print(pidlock.__file__, l.lib._name, repr(p.LIBDIR),
      importlib.metadata.version("libpidlock"), held, lock.locked)
'
check() {	# step-name expected-output [env...]: run the probe
	name=$1 want=$2
	shift 2
	out=$(env "$@" LD_PRELOAD="$pre${LD_PRELOAD:+ $LD_PRELOAD}" "$vpy" -c "$probe" "$t/a.lock" 2>&1) ||
		fail "$name: import pidlock in the venv: $out"
	[ "$out" = "$want" ] || fail "$name: got '$out', want '$want'"
}
site=$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

# bundle=no: the library is built by ok 5 and ok 6 only (each build
# costs about 10 s).
pip_install --config-settings bundle=no "$srcdir/python"
check "pip install" "$site/pidlock/__init__.py $lib '' $version True False" \
	PIDLOCK_LIBRARY="$lib"
echo "ok 1 - pip install --no-index $srcdir/python: pidlock $version in the venv, with \$PIDLOCK_LIBRARY"

pip_install --force-reinstall --config-settings libdir="$top/lib/.libs" "$srcdir/python"
check "libdir" "$site/pidlock/__init__.py $lib '$top/lib/.libs' $version True False" \
	-u PIDLOCK_LIBRARY
echo "ok 2 - --config-settings libdir=$top/lib/.libs: that library, no \$PIDLOCK_LIBRARY"

mkdir sdist
(cd "$srcdir/python" && PYTHONDONTWRITEBYTECODE=1 "$python" -c '
import sys; sys.path.insert(0, ".")
import _pidlock_build as b
print(b.build_sdist(sys.argv[1]))' "$t/sdist") > sdist.out 2>&1 ||
	{ cat sdist.out >&2; fail "the backend's build_sdist"; }
[ "$(cat sdist.out)" = "libpidlock-$version.tar.gz" ] || fail "sdist: $(cat sdist.out)"
pip_install --force-reinstall --config-settings bundle=no "$t/sdist/libpidlock-$version.tar.gz"
check "sdist" "$site/pidlock/__init__.py $lib '' $version True False" \
	PIDLOCK_LIBRARY="$lib"
echo "ok 3 - the sdist libpidlock-$version.tar.gz installs the same"

"$t/v/bin/pip" uninstall -y pidlock > pip.out 2>&1 || { cat pip.out >&2; fail "pip uninstall"; }
pip_install -e "$srcdir/python"
out=$(PIDLOCK_LIBRARY=$lib run_py 'import pidlock, importlib.metadata as m; print(pidlock.__file__, m.version("libpidlock"))' 2>&1) ||
	fail "pip install -e: import pidlock: $out"
[ "$out" = "$srcdir/python/pidlock/__init__.py $version" ] || fail "pip install -e: $out"
echo "ok 4 - pip install -e $srcdir/python: the source tree's module"

# The package's own build of the library (issue 45, item 3): with
# bundle=yes always; by default whenever the system has no library
# that exports every symbol.  No PIDLOCK_LIBRARY: the wheel's own file.
# From the sdist: it carries the C sources.
"$t/v/bin/pip" uninstall -y libpidlock > pip.out 2>&1 || { cat pip.out >&2; fail "pip uninstall"; }
pip_install --config-settings bundle=yes "$t/sdist/libpidlock-$version.tar.gz"
check "bundle=yes" "$site/pidlock/__init__.py $site/pidlock/libpidlock.so.0 '' $version True False" \
	-u PIDLOCK_LIBRARY
ls "$t"/v/lib/python3*/site-packages/libpidlock-"$version".dist-info/WHEEL >/dev/null ||
	fail "no WHEEL"
grep -q '^Tag: py3-none-linux_' "$t"/v/lib/python3*/site-packages/libpidlock-"$version".dist-info/WHEEL ||
	fail "the wheel with a library is not tagged for the platform"
echo "ok 5 - the sdist, bundle=yes: the wheel carries its own libpidlock.so.0, which the module loads"

if "$vpy" -c 'import ctypes; ctypes.CDLL("libpidlock.so.0")' 2>/dev/null; then
	echo "ok 6 # SKIP this machine has a system libpidlock.so.0"
else
	pip_install --force-reinstall "$srcdir/python"
	check "no system library" "$site/pidlock/__init__.py $site/pidlock/libpidlock.so.0 '' $version True False" \
		-u PIDLOCK_LIBRARY
	echo "ok 6 - no system library: pip install builds one into the package"
fi
echo "1..6"
