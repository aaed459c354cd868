#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The README's quick start on a pristine Debian 12 root, so that a missing
# install step fails CI instead of passing on a machine where somebody
# installed the package by hand:
#
#   1. apt-get install mmdebstrap, if it is missing
#   2. mmdebstrap --variant=apt bookworm ROOT: essential packages and apt
#   3. git clone of HEAD into ROOT/src (commit first: only HEAD is tried)
#   4. ROOT bind-mounted on itself, as a build chroot's root is; /proc,
#      /sys and /dev mounted inside
#   5. chroot ROOT: cd /src && ./bootstrap demo, then ./bootstrap check
#      (or the commands given as arguments, each one word list)
#
# Run as root, from anywhere in the git checkout.  Environment:
#   FRESH_SUITE   suite to make (default bookworm)
#   FRESH_MIRROR  mirror for mmdebstrap (default: its own, deb.debian.org)
#   FRESH_OUT     directory for the logs (default: a new one under $TMPDIR)
#   KEEP=1        keep the root afterwards (its mounts are undone anyway)
# Exit status: 0 if every command passed, else the first failure's.
set -eu

me=fresh-root.sh
die() {
	echo "$me: $*" >&2
	exit 2
}

[ "$(id -u)" = 0 ] || die "must run as root (mmdebstrap --mode=root, chroot, mount)"
top=$(git -C "$(dirname "$0")" rev-parse --show-toplevel) ||
	die "not in a git checkout"
if [ -n "$(git -C "$top" status --porcelain --untracked-files=no)" ]; then
	echo "$me: note: uncommitted changes are not tried, only HEAD" >&2
fi
suite=${FRESH_SUITE:-bookworm}
out=${FRESH_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/fresh-out.XXXXXX")}
mkdir -p "$out"
root=$(mktemp -d "${TMPDIR:-/tmp}/fresh-root.XXXXXX")

# Everything mounted under $root, deepest first.
mounts_under_root() {
	awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts |
		sort -r
}

cleanup() {
	for m in $(mounts_under_root); do
		umount -l "$m" 2>/dev/null || echo "$me: cannot unmount $m" >&2
	done
	if [ -n "$(mounts_under_root)" ]; then
		# Never rm -rf through a mount: /dev is the host's.
		echo "$me: mounts are left under $root; not removing it" >&2
	elif [ "${KEEP:-0}" = 1 ]; then
		echo "$me: kept $root"
	else
		rm -rf --one-file-system "$root"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! command -v mmdebstrap >/dev/null 2>&1; then
	echo "$me: installing mmdebstrap"
	apt-get update -q >"$out/apt.log" 2>&1 || { cat "$out/apt.log" >&2; die "apt-get update failed"; }
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		mmdebstrap >>"$out/apt.log" 2>&1 || { cat "$out/apt.log" >&2; die "cannot install mmdebstrap"; }
fi

start=$(date +%s)
echo "$me: mmdebstrap $suite (log: $out/mmdebstrap.log)"
# shellcheck disable=SC2086 # no mirror: mmdebstrap's default
mmdebstrap --variant=apt --mode=root "$suite" "$root" ${FRESH_MIRROR:-} \
	</dev/null >"$out/mmdebstrap.log" 2>&1 ||
	{ tail -n 30 "$out/mmdebstrap.log" >&2; die "mmdebstrap failed"; }
[ -s "$root/etc/resolv.conf" ] || cp -L /etc/resolv.conf "$root/etc/resolv.conf"

git clone -q --no-hardlinks "$top" "$root/src"
echo "$me: trying $(git -C "$root/src" log -1 --format='%h %s')"
mount --bind "$root" "$root"
mount --make-private "$root"	# nothing below propagates to the host
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --rbind /dev "$root/dev"
mount --make-rslave "$root/dev"

[ $# -gt 0 ] || set -- "./bootstrap demo" "./bootstrap check"
rc=0
n=0
for cmd in "$@"; do
	n=$((n + 1))
	log=$out/run-$n.log
	t0=$(date +%s)
	echo "$me: chroot: $cmd (log: $log)"
	set +e
	chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 TERM=dumb \
		/bin/sh -c "cd /src && $cmd" </dev/null >"$log" 2>&1
	r=$?
	set -e
	echo "$me: '$cmd' exit $r in $(($(date +%s) - t0)) s;" \
		"$(grep -E '^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR):|^OK$' "$log" | tr -s ' \n' ' ')"
	if [ $r -ne 0 ]; then
		tail -n 60 "$log" | sed 's/^/  /' >&2
		grep -E '^(FAIL|ERROR): ' "$log" | sed 's/^/  /' >&2 || true
		[ $rc -ne 0 ] || rc=$r
	fi
	# Check's skips are not in the totals: show their reasons.
	grep -h '^SKIP' "$root"/src/tests/*.log 2>/dev/null | sort -u | sed 's/^/  /' || true
done
cp "$root/src/test-suite.log" "$out/" 2>/dev/null || true
echo "$me: done in $(($(date +%s) - start)) s, exit $rc; logs in $out"
exit $rc
