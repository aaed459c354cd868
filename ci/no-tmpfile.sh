#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Run the library with O_TMPFILE reported as unsupported (EOPNOTSUPP, as
# on a file system without it), so the named temp-file fallback of
# acquire step 1 is what gets tested:
#
#   1. ci/smoke.c, built against this tree's library, under the shim;
#   2. the whole make check, under the shim.
#
# ci/no-tmpfile.c is the LD_PRELOAD shim.  It logs every refusal, and
# each step fails if the library never asked for O_TMPFILE: then the
# shim proved nothing.  Run from a built, configured tree (make
# check-no-tmpfile).  Not for sanitizer builds, whose runtime must be
# preloaded first.
set -eu

me=no-tmpfile.sh
make=${MAKE:-make}
srcdir=${srcdir:-.}
cc=${CC:-cc}

die() {
	echo "$me: $*" >&2
	exit 1
}

[ -f Makefile ] || die "run me from a configured build directory"
[ -e lib/.libs/libpidlock.so ] || die "no lib/.libs/libpidlock.so; run make first"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/libpidlock-notmpfile.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
shim=$tmp/no-tmpfile.so
log=$tmp/refusals

# Plain flags: with _FORTIFY_SOURCE or 64-bit file offsets <fcntl.h>
# would define or rename open() itself.
"$cc" -shared -fPIC -O2 -Wall -Wextra -Werror -U_FORTIFY_SOURCE -U_FILE_OFFSET_BITS \
	-o "$shim" "$srcdir/ci/no-tmpfile.c" -ldl ||
	die "cannot build the shim"

# The shim itself: an O_TMPFILE open must fail with EOPNOTSUPP.
cat >"$tmp/probe.c" <<'EOF'
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	int fd = open(argc > 1 ? argv[1] : ".", O_TMPFILE | O_RDWR, 0600);

	if (fd >= 0 || errno != EOPNOTSUPP) {
		fprintf(stderr, "O_TMPFILE open: fd %d, errno %d\n", fd, errno);
		return 1;
	}
	return 0;
}
EOF
"$cc" -o "$tmp/probe" "$tmp/probe.c" || die "cannot build the probe"
LD_PRELOAD=$shim PIDLOCK_NO_TMPFILE_LOG=$log "$tmp/probe" "$tmp" ||
	die "the shim does not refuse O_TMPFILE"
rm -f "$log"

refusals() {
	if [ -f "$log" ]; then wc -l <"$log"; else echo 0; fi
}

echo "$me: ci/smoke.c with O_TMPFILE refused"
"$cc" -Wall -Wextra -Werror -I"$srcdir/include" -o "$tmp/smoke" "$srcdir/ci/smoke.c" \
	-Llib/.libs -lpidlock || die "cannot build ci/smoke.c"
LD_LIBRARY_PATH=$(pwd)/lib/.libs LD_PRELOAD=$shim PIDLOCK_NO_TMPFILE_LOG=$log \
	"$tmp/smoke" || die "ci/smoke.c failed without O_TMPFILE"
n=$(refusals)
[ "$n" -gt 0 ] || die "the library never tried O_TMPFILE in ci/smoke.c; the fallback went untested"
echo "$me: smoke: $n O_TMPFILE opens refused, fallback used"
rm -f "$log"

echo "$me: make check with O_TMPFILE refused"
LD_PRELOAD=$shim PIDLOCK_NO_TMPFILE_LOG=$log ASAN_OPTIONS=verify_asan_link_order=0 \
	$make check || die "make check failed without O_TMPFILE"
n=$(refusals)
[ "$n" -gt 0 ] || die "no test tried O_TMPFILE; the fallback went untested"
echo "$me: make check: $n O_TMPFILE opens refused, fallback used"
