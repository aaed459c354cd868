#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Build the Debian packages from the release tree and use them:
#
#   1. make distdir (the tree that make dist packs) in a scratch
#      directory, and the upstream tarball from it there: the build
#      directory's own libpidlock-VERSION.tar.xz is neither read nor
#      rewritten, so nobody who is unpacking it meanwhile sees it cut
#   2. dpkg-buildpackage -us -uc, source and binaries (this runs make
#      check too; with
#      --build-only, as a packager builds; otherwise, as CI, which ran
#      the whole suite on these sources already, the build skips it
#      (nocheck) and make check-built runs in the package's tree the
#      tests whose verdict its hardening flags can change)
#   3. lintian, of the source package and the binaries: no error, no
#      warning and no unused override
#   4. check what each package holds
#   5. apt-get install ./*.deb; build ci/smoke.c, examples/counter.c and
#      the example of pidlock(3) against the installed library with
#      pkg-config and run them; run pidlock --version
#   6. remove the packages again
#
# Run as root from a configured build directory.  Options:
#   --build-only   stop after step 4 (no root needed for that part)
# Environment: KEEP=1 keeps the scratch directory, OUTDIR=DIR copies the
# .debs there, KEEP_INSTALLED=1 leaves the packages installed.
set -eu

me=packages.sh
make=${MAKE:-make}
build_only=0
[ "${1:-}" = --build-only ] && build_only=1

die() {
	echo "$me: $*" >&2
	exit 1
}

need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 not found (apt-get install $2)"
}

[ -f Makefile ] || die "run me from a configured build directory"
need dpkg-buildpackage dpkg-dev
need dh debhelper
need lintian lintian
[ $build_only = 1 ] || [ "$(id -u)" = 0 ] || die "installing needs root (or use --build-only)"

version=$(sed -n 's/^VERSION = //p' Makefile)
[ -n "$version" ] || die "no VERSION in Makefile"
orig=libpidlock_$version.orig.tar.xz

tmp=$(mktemp -d "${TMPDIR:-/tmp}/libpidlock-deb.XXXXXX")
installed=
cleanup() {
	if [ -n "$installed" ] && [ "${KEEP_INSTALLED:-0}" != 1 ]; then
		echo "$me: removing $installed"
		# shellcheck disable=SC2086 # a list of package names
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -q -o DPkg::Lock::Timeout=300 $installed >"$tmp/purge.log" 2>&1 ||
			{ cat "$tmp/purge.log" >&2; echo "$me: could not remove $installed" >&2; }
	fi
	if [ "${KEEP:-0}" = 1 ]; then
		echo "$me: kept $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT

step() {
	echo "$me: $*"
}

# --- 1. the release tree and its tarball ------------------------------------
src=$tmp/libpidlock-$version
step "make distdir into $src"
$make -s distdir distdir="$src" >"$tmp/dist.log" 2>&1 ||
	{ cat "$tmp/dist.log" >&2; die "make distdir failed"; }
[ -d "$src/debian" ] || die "the release tree has no debian/ directory"
# Written under another name, then renamed: a cut file never has the
# tarball's name.
(cd "$tmp" && tar --sort=name --owner=0 --group=0 --numeric-owner \
	-cf - "libpidlock-$version" | xz -T0 -c >"$orig.part") ||
	die "cannot make $orig"
mv "$tmp/$orig.part" "$tmp/$orig"

# Every debian/ file under version control must be in the tarball
# (PKG_DEBIAN_FILES in ci/Makemodule.am).
srcdir=$(sed -n 's/^srcdir = //p' Makefile)
if git -C "${srcdir:-.}" ls-files debian >"$tmp/git-debian" 2>/dev/null && [ -s "$tmp/git-debian" ]; then
	(cd "$src" && find debian -type f | LC_ALL=C sort) >"$tmp/dist-debian"
	LC_ALL=C sort -o "$tmp/git-debian" "$tmp/git-debian"
	missing=$(LC_ALL=C comm -23 "$tmp/git-debian" "$tmp/dist-debian")
	[ -z "$missing" ] || die "not in the tarball (add to PKG_DEBIAN_FILES in ci/Makemodule.am): $missing"
fi
cd "$src"

debversion=$(dpkg-parsechangelog -S Version)
[ "${debversion%-*}" = "$version" ] ||
	die "debian/changelog is at $debversion but the tree is $version: add a changelog entry"

# Without the command in the tree there is no pidlock package to build.
profiles=
if ! grep -Eq '^bin_PROGRAMS *=.*pidlock' Makefile.in; then
	profiles=pkg.libpidlock.nocli
	step "the tree has no pidlock command: building with profile $profiles"
fi

# --- 2. build --------------------------------------------------------------
testlog=$tmp/build.log
if [ $build_only = 0 ]; then
	DEB_BUILD_OPTIONS="nocheck${DEB_BUILD_OPTIONS:+ $DEB_BUILD_OPTIONS}"
	export DEB_BUILD_OPTIONS
	testlog=$tmp/check.log
fi
step "dpkg-buildpackage -us -uc -Jauto${profiles:+ -P$profiles} (log: build.log)"
start=$(date +%s)
if ! dpkg-buildpackage -us -uc -Jauto ${profiles:+-P"$profiles"} >"$tmp/build.log" 2>&1; then
	tail -n 80 "$tmp/build.log" >&2
	die "dpkg-buildpackage failed"
fi
step "built in $(($(date +%s) - start)) s"
if [ $build_only = 0 ]; then
	start=$(date +%s)
	step "make check-built in the package's tree, with its flags (log: check.log)"
	if ! $make -j"$(nproc)" check-built >"$testlog" 2>&1; then
		grep -E '^(FAIL|ERROR): ' "$testlog" >&2 || true
		tail -n 80 "$testlog" >&2
		# The failing tests' own logs: the scratch tree goes on exit.
		[ -f test-suite.log ] && sed -n '/^FAIL: \|^ERROR: /,$p' \
			test-suite.log | head -n 200 >&2
		die "make check-built failed in the package's tree"
	fi
	step "checked in $(($(date +%s) - start)) s"
fi
step "make check said:"
grep -E '^(PASS|FAIL|ERROR|SKIP|XFAIL|XPASS): ' "$testlog" | sed 's/^/  /' || true
grep -E '^# (TOTAL|PASS|SKIP|FAIL|ERROR):' "$testlog" | tr -s ' \n' ' ' | sed 's/^/  /' || true
echo
cd "$tmp"
ls -1 ./*.deb | sed 's/^/  /'
changes=$(ls ./*.changes)

# --- 3. lintian ------------------------------------------------------------
step "lintian $changes"
set +e
lintian --fail-on error,warning --display-info "$changes" >"$tmp/lintian.log" 2>&1
rc=$?
set -e
sed 's/^/  /' "$tmp/lintian.log"
[ $rc -eq 0 ] || die "lintian found errors or warnings (status $rc)"
# An override that nothing needs any more hides nothing, but reads as if
# it did: lintian says so only as information.
! grep -q 'unused-override' "$tmp/lintian.log" ||
	die "lintian: an override is not used any more (remove it)"
step "lintian: no errors, no warnings"

# --- 4. contents ------------------------------------------------------------
contents() {
	dpkg-deb -c "$1"_*.deb | awk '{ print $6 }' | sed 's,^\./,/,'
}

has() {
	pkg=$1
	shift
	for pat in "$@"; do
		contents "$pkg" | grep -Eq "^$pat\$" || die "$pkg lacks $pat"
	done
}

lacks() {
	pkg=$1
	shift
	for pat in "$@"; do
		if contents "$pkg" | grep -Eq "^$pat\$"; then
			die "$pkg must not ship $pat"
		fi
	done
}

ma=/usr/lib/[a-z0-9_]+-linux-[a-z0-9_]+
has libpidlock0 "$ma/libpidlock\\.so\\.[0-9]+" "$ma/libpidlock\\.so\\.[0-9.]+"
lacks libpidlock0 "$ma/libpidlock\\.so" "/usr/include/.*" ".*\\.a" ".*\\.la" "/usr/share/man/.*"
has libpidlock-dev /usr/include/pidlock\\.h "$ma/libpidlock\\.so" "$ma/pkgconfig/libpidlock\\.pc"
lacks libpidlock-dev "$ma/libpidlock\\.so\\.[0-9.]+" ".*\\.a" ".*\\.la" "/usr/bin/.*"
# Every manual page of the tree is in the package its section belongs to.
for page in $(cd "$src" && find man -name '*.[1357]' 2>/dev/null | sort); do
	name=${page##*/}
	sec=${name##*.}
	pkg=libpidlock-dev
	[ "$sec" = 1 ] && pkg=pidlock
	[ -z "$profiles" ] || [ "$pkg" != pidlock ] || continue
	has "$pkg" "/usr/share/man/man$sec/$(echo "$name" | sed 's/[.]/\\./g')\\.gz"
done
pydir=/usr/lib/python3/dist-packages/pidlock
has python3-pidlock "$pydir/__init__\\.py" "$pydir/_lib\\.py" "$pydir/py\\.typed"
lacks python3-pidlock ".*\\.pyc" ".*\\.so.*" "/usr/lib/python3\\.[0-9]+/.*"
# Each package carries the guides of its interface: the command's own and
# the flock(1) migration, the module's and the filelock migration, with
# the fenced resource of doc/fencing.md (dh_compress may gzip them).
docs=/usr/share/doc
has python3-pidlock "$docs/python3-pidlock/python\\.md(\\.gz)?" \
	"$docs/python3-pidlock/migrate-filelock\\.md(\\.gz)?" \
	"$docs/python3-pidlock/examples/fenced_store\\.py"
if [ -z "$profiles" ]; then
	has pidlock /usr/bin/pidlock /usr/share/man/man1/pidlock\\.1\\.gz \
		/usr/share/bash-completion/completions/pidlock \
		"$docs/pidlock/cli\\.md(\\.gz)?" \
		"$docs/pidlock/migrate-flock\\.md(\\.gz)?"
fi
step "package contents are as expected"
if [ -n "${OUTDIR:-}" ]; then
	mkdir -p "$OUTDIR"
	cp ./*.deb "$OUTDIR"/
	step "copied the packages to $OUTDIR"
fi
[ $build_only = 0 ] || exit 0

# --- 5. install and use ----------------------------------------------------
pkgs=$(for d in ./*.deb; do dpkg-deb -f "$d" Package; done | tr '\n' ' ')
for p in $pkgs; do
	if dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		die "$p is already installed; remove it first (apt-get purge $p)"
	fi
done
step "apt-get install ./*.deb"
installed=$pkgs
DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=300 ./*.deb >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log" >&2; die "apt-get install failed"; }
for p in $pkgs; do
	echo "  $(dpkg-query -W -f '${Package} ${Version} ${Status}' "$p")"
done

cd "$src"
step "build and run a program against the installed library"
debian/tests/build-smoke ci/smoke.c

# The programs a user reads first, built the way a user builds them.
flags=$(pkg-config --cflags --libs libpidlock)
if [ -f examples/counter.c ]; then
	step "examples/counter.c against the installed library"
	# shellcheck disable=SC2086 # the flags are words
	cc -Wall -Wextra -Werror -o "$tmp/counter" examples/counter.c $flags
	"$tmp/counter" -p 3 -n 300 -k 3 -d "$tmp"
fi
if [ -f man/extract-example.sed ] && [ -f man/pidlock.3 ]; then
	step "the example of pidlock(3) against the installed library"
	sed -n -f man/extract-example.sed man/pidlock.3 >"$tmp/pidlock-example.c"
	# shellcheck disable=SC2086 # the flags are words
	cc -Wall -Wextra -Werror -o "$tmp/pidlock-example" "$tmp/pidlock-example.c" $flags
	"$tmp/pidlock-example" "$tmp/example.lock"
	[ ! -e "$tmp/example.lock" ] || die "the pidlock(3) example left its lock file"
fi
step "the Python module against the installed library"
/usr/bin/python3 -c 'import os, sys, pidlock
lock = pidlock.Lock(sys.argv[1], tag="packages.sh")
with lock:
    assert pidlock.inspect(sys.argv[1]).tag == "packages.sh"
    try:
        pidlock.Lock(sys.argv[1]).acquire(timeout=0)
        sys.exit("not excluded")
    except pidlock.Busy as busy:
        assert busy.pid == os.getpid() and busy.tag == "packages.sh"
' "$tmp/python.lock" || die "the Python module does not work"
[ ! -e "$tmp/python.lock" ] || die "the Python module left its lock file"
if [ -z "$profiles" ]; then
	step "pidlock --version"
	[ "$(command -v pidlock)" = /usr/bin/pidlock ] || die "pidlock is not /usr/bin/pidlock"
	pidlock --version || die "pidlock --version failed"
	if command -v man >/dev/null; then
		man -w pidlock >/dev/null 2>&1 || die "man cannot find pidlock(1)"
	fi
fi
step "the installed packages work"
