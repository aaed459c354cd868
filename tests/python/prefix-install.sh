#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A real ./configure --prefix=DIR and make install (not DESTDIR: the
# prefix must be the one the files run from), in a scratch build of
# this source tree; then, with a clean environment (no LD_LIBRARY_PATH,
# no PIDLOCK_LIBRARY), the installed CLI runs and `import pidlock' loads
# the library of that prefix.  Only the library, the CLI and the Python
# module are built and installed, to keep it under a minute.  Then the
# default prefix, staged with DESTDIR: the module must land where the
# target python3 looks (Debian's: dist-packages).
set -eu
srcdir=$(cd "${srcdir:-.}" && pwd)
python=${PYTHON:-python3}
case $python in
:|'') echo "prefix-install.sh: SKIP: configured without python3"; exit 77 ;;
esac
t=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-prefix.XXXXXX")
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A source tree configured in place refuses a second, out-of-tree build:
# configure from a copy of its files (git's list, and what autoreconf
# generated) instead.
src=$srcdir
if [ -f "$srcdir/config.status" ]; then
	[ -e "$srcdir/.git" ] && command -v git >/dev/null ||
		{ echo "prefix-install.sh: SKIP: $srcdir is configured in place and is no git checkout"; exit 77; }
	src=$t/src
	mkdir "$src"
	(cd "$srcdir" && { git ls-files; ls configure aclocal.m4 config.h.in \
		build-aux/* m4/*.m4 2>/dev/null; find . -name Makefile.in; } |
		sort -u | tar -cf - -T -) | (cd "$src" && tar -xf -)
fi
mkdir "$t/build"
cd "$t/build"
"$src/configure" --prefix="$t/prefix" --disable-static PYTHON="$python" \
	CFLAGS=-O0 > configure.out 2>&1 || { tail -20 configure.out; fail "configure"; }
make -j2 lib/libpidlock.la tools/pidlock python/pidlock/_paths.py \
	> make.out 2>&1 || { tail -20 make.out; fail "make"; }
make install-libLTLIBRARIES install-binPROGRAMS install-pidlockpyPYTHON \
	install-nodist_pidlockpyPYTHON > install.out 2>&1 ||
	{ tail -20 install.out; fail "make install"; }
echo "ok 1 - ./configure --prefix=$t/prefix && make install"

site=$(dirname "$(dirname "$(find "$t/prefix" -path '*/pidlock/__init__.py')")")
[ -f "$site/pidlock/_paths.py" ] || fail "no _paths.py installed"
grep -q "LIBDIR = \"$t/prefix/lib\"" "$site/pidlock/_paths.py" ||
	fail "_paths.py names another libdir: $(cat "$site/pidlock/_paths.py")"

env -i PATH=/usr/bin:/bin "$t/prefix/bin/pidlock" -n "$t/a.lock" true ||
	fail "the installed CLI does not run"
echo "ok 2 - the installed pidlock runs with a clean environment"

out=$(env -i PATH=/usr/bin:/bin PYTHONPATH="$site" "$python" -c '
import pidlock, pidlock._lib as l, sys
with pidlock.Lock(sys.argv[1]):
    print(l.lib._name)
' "$t/b.lock" 2>&1) || fail "import pidlock from the prefix: $out"
[ "$out" = "$t/prefix/lib/libpidlock.so.0" ] ||
	fail "loaded $out, not the prefix's library"
echo "ok 3 - import pidlock loads $t/prefix/lib/libpidlock.so.0, no LD_LIBRARY_PATH"

want=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' "$src/configure.ac")
got=$(env -i PATH=/usr/bin:/bin PYTHONPATH="$site" "$python" -c '
import pidlock; print(pidlock.__version__)')
[ "$got" = "$want" ] || fail "pidlock.__version__ is $got, configure.ac says $want"
echo "ok 4 - the installed module's __version__ is configure.ac's ($want)"

# The default prefix (/usr/local), staged under DESTDIR: the module must
# land where this python3 looks for /usr/local's modules (Debian's:
# /usr/local/lib/python3.X/dist-packages, not site-packages).
mkdir "$t/build-default"
cd "$t/build-default"
"$src/configure" --disable-static PYTHON="$python" CFLAGS=-O0 \
	> configure.out 2>&1 || { tail -20 configure.out; fail "configure (default prefix)"; }
make python/pidlock/_paths.py > make.out 2>&1 || { tail -20 make.out; fail "make _paths.py"; }
make install-pidlockpyPYTHON install-nodist_pidlockpyPYTHON DESTDIR="$t/dest" \
	> install.out 2>&1 || { tail -20 install.out; fail "make install DESTDIR"; }
staged=$(find "$t/dest" -path '*/pidlock/__init__.py')
[ -n "$staged" ] || fail "make install DESTDIR put no module under $t/dest"
dir=$(dirname "$(dirname "${staged#"$t/dest"}")")
case $dir in
/usr/local/*) ;;
*) fail "the module went to $dir, outside the prefix /usr/local" ;;
esac
env -i PATH=/usr/bin:/bin "$python" -c '
import sys
sys.exit(sys.argv[1] not in sys.path)' "$dir" ||
	fail "$python does not look in $dir, where make install put the module"
echo "ok 5 - make install (prefix /usr/local) puts the module in $dir, on $python's path"

cd "$t"
rm -f "$t/prefix/lib/libpidlock.so"*
out=$(env -i PATH=/usr/bin:/bin PYTHONPATH="$site" "$python" -c 'import pidlock' 2>&1) &&
	{ echo "ok 6 # SKIP a system-wide libpidlock.so.0 loaded"; exit 0; }
echo "$out" | tail -n 1 | grep -q "^ImportError: pidlock: cannot load.*tried: $t/prefix/lib/libpidlock.so.0 (.*); libpidlock.so.0 (" ||
	fail "the message does not name the paths tried: $out"
echo "ok 6 - the library removed: ImportError naming each path tried"
