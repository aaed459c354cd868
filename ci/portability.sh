#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Portability builds of the release tree, each in a scratch directory:
#
#   ci/portability.sh musl    musl-gcc (Debian musl-tools)
#   ci/portability.sh clang   clang -Weverything, less the flags below, -Werror
#
# Run from a configured build directory (make check-musl / check-clang do).
# The tree built is the one "make distdir" makes, so a file missing from
# the tarball fails here too.  KEEP=1 leaves the scratch directory.
set -eu

me=portability.sh
kind=${1:-}
make=${MAKE:-make}
jobs=${JOBS:-2}

# clang -Weverything turns on every warning clang has; these are turned
# off again, each for a reason:
#   -Wno-padded                       reports every padding byte the ABI
#                                     puts in a struct; not a defect, and
#                                     struct pidlock_info's layout is fixed
#                                     by the ABI baseline, not by this.
#   -Wno-declaration-after-statement  a compatibility warning for C89; the
#                                     project is C99/gnu11, where mixing
#                                     declarations and code is standard.
#   -Wno-reserved-macro-identifier    fires on config.h, where autoconf's
#                                     AC_USE_SYSTEM_EXTENSIONS defines the
#                                     feature-test macros (_ALL_SOURCE,
#                                     __EXTENSIONS__, ...); those names are
#                                     reserved so that exactly this may
#                                     define them.
#   -Wno-disabled-macro-expansion     fires on every use of struct
#                                     sigaction's sa_handler, which glibc
#                                     defines as a macro of the same name.
#   -Wno-used-but-marked-unused       Check's START_TEST declares the loop
#                                     index _i unused, and a loop test
#                                     (tcase_add_loop_test) reads it: that
#                                     is Check's documented interface.
CLANG_NO_WARN="-Wno-padded -Wno-declaration-after-statement -Wno-reserved-macro-identifier"
CLANG_NO_WARN="$CLANG_NO_WARN -Wno-disabled-macro-expansion -Wno-used-but-marked-unused"

die() {
	echo "$me: $*" >&2
	exit 1
}

[ -f Makefile ] || die "run me from a configured build directory"
case $kind in
musl) command -v musl-gcc >/dev/null || die "musl-gcc not found (apt-get install musl-tools)" ;;
clang) command -v "${CLANG:-clang}" >/dev/null || die "clang not found (apt-get install clang)" ;;
*) die "usage: $me musl|clang" ;;
esac

top=$(pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/libpidlock-$kind.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then
	trap 'echo "$me: kept $tmp"' EXIT
else
	trap 'rm -rf "$tmp"' EXIT
fi

echo "$me: release tree into $tmp/src"
$make -s distdir distdir="$tmp/src" >"$tmp/distdir.log" 2>&1 ||
	{ cat "$tmp/distdir.log" >&2; die "make distdir failed"; }
mkdir "$tmp/no-pkgconfig"
cd "$tmp/src"

run() {
	echo "$me: $*"
	"$@" >"$tmp/step.log" 2>&1 || {
		tail -n 60 "$tmp/step.log" >&2
		# The failing tests' own logs: the scratch tree goes on exit.
		[ -f test-suite.log ] && sed -n '/^FAIL: \|^ERROR: /,$p' \
			test-suite.log | head -n 200 >&2
		die "failed: $*"
	}
}

# What each build runs of the suite: every test of what it compiled (the
# library through the protocol and unit tests, pidlock(1) through the
# CLI tests, the daemon's programs, the torture with real peers), less
# the tests that read only the source tree (SOURCE_ONLY_TESTS in
# ci/Makemodule.am: manual pages, docs, layering, the mutation table,
# the symbol list), whose verdict no compiler or C library changes; the
# README's `make check` (.ci/run's first stage) runs them.  clang runs
# its tests under the fault shim that refuses O_TMPFILE and
# RENAME_NOREPLACE (make check-notmpfile, ci/Makemodule.am), so that the
# library's fallback create path is run by one compiler's build and the
# suite is not run a sixth time for it; the few tests that never reach
# the create path (NOTMPFILE_PLAIN) run without the shim.  It leaves out
# tests/python/prefix-install.sh, which configures a tree of its own
# with the default compiler (gcc) and so proves nothing of clang.
# shellcheck disable=SC2016 # make expands these, not the shell
skip_musl='$(SOURCE_ONLY_TESTS)'

# The program's ELF interpreter, to prove what libc it was linked with.
interp() {
	readelf -l "$1" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p'
}

# Build ci/smoke.c against the library just built and run it.
smoke() {
	cc=$1
	shift
	run "$cc" "$@" -Iinclude -o "$tmp/smoke" ci/smoke.c -Llib/.libs -lpidlock
	echo "$me: smoke program interpreter: $(interp "$tmp/smoke")"
	LD_LIBRARY_PATH=$tmp/src/lib/.libs "$tmp/smoke"
}

# The command, where the tree has one: libtool leaves the real binary in
# .libs and a wrapper script that sets the library path.
command_check() {
	[ -e tools/pidlock ] || {
		echo "$me: this tree has no tools/pidlock; the command is not built"
		return 0
	}
	bin=tools/pidlock
	[ -x tools/.libs/pidlock ] && bin=tools/.libs/pidlock
	echo "$me: pidlock interpreter: $(interp "$bin")"
	[ "$kind" != musl ] || interp "$bin" | grep -q musl ||
		die "$bin is not linked with musl"
	out=$(tools/pidlock --version) || die "tools/pidlock --version failed"
	echo "$me: tools/pidlock --version: $out"
}

# Test counts from the automake harness, then one line per test.
summary() {
	[ -f test-suite.log ] || return 0
	sed -n 's/^# \(TOTAL\|PASS\|SKIP\|FAIL\|ERROR\): */\1 /p' test-suite.log |
		tr '\n' ' '
	echo
	find . -name '*.trs' | LC_ALL=C sort | while read -r trs; do
		res=$(sed -n 's/^:test-result: //p' "$trs" | head -n 1)
		echo "  $res: ${trs%.trs}"
	done
}

case $kind in
musl)
	# Debian ships Check and libbsd for glibc only; an empty pkg-config
	# path keeps configure from handing their glibc builds to musl, so
	# the unit tests that need Check are not built here.
	run env PKG_CONFIG_LIBDIR="$tmp/no-pkgconfig" \
		./configure CC=musl-gcc --enable-werror --disable-static
	grep -q '^CC = musl-gcc' Makefile || die "configure did not take CC=musl-gcc"
	run $make -j"$jobs"
	readelf -d lib/.libs/libpidlock.so | grep -q 'NEEDED.*\[libc\.so\]' ||
		die "lib/.libs/libpidlock.so is not linked with musl's libc.so"
	echo "$me: libpidlock.so needs: $(readelf -d lib/.libs/libpidlock.so | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
	# No libbsd for musl either: the torture's flock mix gives its slot
	# to the fslock-guard-style peer, and says so in its log.
	run env TORTURE_ALLOW_NO_LIBBSD=1 $make -j"$jobs" check-except \
		SKIP_TESTS="$skip_musl"
	echo "$me: make check without Check (musl): $(summary | head -n 1)"
	summary | tail -n +2
	smoke musl-gcc -Wall -Wextra -Werror
	command_check
	;;
clang)
	cc=${CLANG:-clang}
	cflags="-O2 -g -Weverything $CLANG_NO_WARN"
	# The python3 of this build (PYTHON), whose pytest the suite needs.
	run ./configure CC="$cc" CFLAGS="$cflags" --enable-werror --disable-static \
		${PYTHON:+PYTHON="$PYTHON"}
	echo "$me: $($cc --version | head -n 1)"
	echo "$me: CFLAGS=$cflags -Werror"
	run $make -j"$jobs"
	run $make -j"$jobs" check-notmpfile
	grep 'check-notmpfile:' "$tmp/step.log" | sed "s/^/$me: /"
	echo "$me: make check-notmpfile (clang): $(summary | head -n 1)"
	# shellcheck disable=SC2016 # make expands it, not the shell
	run $make -j"$jobs" check TESTS='$(NOTMPFILE_PLAIN)'
	echo "$me: make check of the rest, without the shim (clang): $(summary | head -n 1)"
	smoke "$cc" $cflags -Werror
	command_check
	;;
esac
echo "$me: $kind build passed"
