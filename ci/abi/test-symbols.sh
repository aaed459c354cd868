#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The exported symbols, said three ways, must agree:
#   lib/libpidlock.sym            the linker version script (the source)
#   debian/libpidlock<N>.symbols  generated from it by ci/abi/gen-symbols.sh
#   the built libpidlock.so       what the linker really exported
# and the Debian library package must be named after the soname, and no
# version node may be newer than the package version.
#
# Run by make check (srcdir from the test harness) or by hand from the
# build directory.  "make update-symbols" rewrites the symbols file.
set -eu

srcdir=${srcdir:-.}
builddir=${top_builddir:-.}
lib=$builddir/lib/.libs/libpidlock.so
fail=0

bad() {
	echo "test-symbols: FAIL: $*" >&2
	fail=1
}

if [ ! -e "$lib" ]; then
	echo "test-symbols: no shared library at $lib (static-only build?)" >&2
	exit 99
fi
if ! command -v readelf >/dev/null 2>&1; then
	echo "test-symbols: readelf (binutils) is required" >&2
	exit 99
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-symbols.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

soname=$(readelf -d -W "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
case $soname in
libpidlock.so.[0-9]*) ;;
*) bad "cannot read the soname of $lib (got '$soname')"; exit 1 ;;
esac
package=libpidlock${soname#libpidlock.so.}
symbols=$srcdir/debian/$package.symbols

# 1. The Debian package carries the soname's number.
if ! grep -q "^Package: $package\$" "$srcdir/debian/control"; then
	bad "soname $soname needs a package $package in debian/control (rename the library package and its files)"
fi

# 2. The symbols file is exactly what the version script gives.
if ! "$srcdir/ci/abi/gen-symbols.sh" "$srcdir/lib/libpidlock.sym" "$soname" "$package" >"$tmp/want"; then
	bad "ci/abi/gen-symbols.sh failed on lib/libpidlock.sym"
elif [ ! -r "$symbols" ]; then
	bad "no $symbols; run make update-symbols"
elif ! cmp -s "$tmp/want" "$symbols"; then
	bad "$symbols does not match lib/libpidlock.sym; run make update-symbols"
	diff -u "$symbols" "$tmp/want" >&2 || true
fi

# 3. The library exports exactly the version script's symbols, each with
#    its node as default version, and nothing unversioned.
# The node itself shows up as an absolute symbol named after it.
readelf --dyn-syms -W "$lib" |
	awk '$5 == "GLOBAL" && $7 != "UND" {
		if ($7 == "ABS" && $8 !~ /@/) print $8 "@" $8; else print $8 }' |
	sed 's/@@/@/' | LC_ALL=C sort >"$tmp/exported"
sed -n 's/^ \([^ ]*\) .*/\1/p' "$tmp/want" | LC_ALL=C sort >"$tmp/listed"
if ! cmp -s "$tmp/listed" "$tmp/exported"; then
	bad "$lib exports other symbols than lib/libpidlock.sym lists (- listed only, + exported only):"
	diff "$tmp/listed" "$tmp/exported" | sed -n 's/^</  -/p; s/^>/  +/p' >&2
fi
if grep -v '@' "$tmp/exported" >"$tmp/unversioned"; then
	bad "unversioned exports: $(tr '\n' ' ' <"$tmp/unversioned")"
fi

# 4. A node is named after the release that brings it; one newer than the
#    package would make packages depend on a version that does not exist.
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$builddir/config.h")
if [ -z "$version" ]; then
	bad "no PACKAGE_VERSION in $builddir/config.h"
else
	for minver in $(sed -n 's/^ [^ ]* //p' "$tmp/want" | sort -u); do
		newest=$(printf '%s\n%s\n' "$version" "$minver" | sort -V | tail -n 1)
		[ "$newest" = "$version" ] ||
			bad "a version node belongs to release $minver, newer than $version"
	done
fi

n=$(wc -l <"$tmp/exported")
[ $fail -eq 0 ] || exit 1
echo "test-symbols: $n exported symbols agree with lib/libpidlock.sym and $symbols"
