#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# make check-filesystems: make each file system, then run on it the
# protocol, interop, shared, slot, event-loop and descriptor tests, the
# short torture and a pidlock(1) mix.
# See tests/fs/README.  Run from the top build directory, as root:
#
#   tests/fs/run.sh [FS ...]
#
# FS: ext4 xfs btrfs overlay fuse-overlayfs bindfs bindfs-lockfwd (the
# default list), or one of the extra set-ups: bindfs-hardremove and
# fuse-nameino (each name its own inode, which broke publishing by link
# in 1.0.0).  On bindfs-lockfwd, whose locks do not exclude a second open
# file description, the library must refuse: the mix must see no turn,
# no double hold, and only "No locks available".
#
# Environment:
#   FS_MIX_SECONDS  length of the pidlock(1) mix (8)
#   FS_MIX_PROCS    processes in the mix (4)
#   FS_PARTS        what to run: any of probe tests torture mix
#                   (default: all four)
#   FS_TESTS        the check programs of part "tests" (default: lock,
#                   interop, wait, shared, slots, async and fd)
#   FS_KEEP_LOGS    directory to copy the logs to (default: none)
#   srcdir          the source tree (default: this script's ../..)
#
# Exit status: 0 when every file system that could be made passed (the
# others are reported as SKIP with the reason), 1 when any test failed
# or the mix saw a double hold or an error, 77 when none could be made.
set -u

here=$(cd "$(dirname "$0")" && pwd)
srcdir=${srcdir:-$(cd "$here/../.." && pwd)}
top=$(pwd)
export srcdir

MIX_SECONDS=${FS_MIX_SECONDS:-8}
MIX_PROCS=${FS_MIX_PROCS:-4}
PARTS=${FS_PARTS:-probe tests torture mix}
DEFAULT_FS="ext4 xfs btrfs overlay fuse-overlayfs bindfs bindfs-lockfwd"
# Set-ups where the library must refuse to lock (ENOLCK or ENOTSUP).
REFUSE_FS="bindfs-lockfwd"
IMAGE_SIZE=512M
PROBE="$top/tests/fs/fsprobe"
PROTOCOL_TESTS=${FS_TESTS:-"tests/test-lock tests/test-interop tests/test-wait
 tests/test-shared tests/test-slots tests/test-async tests/test-fd"}
TORTURE_SHORT="short-flock short-fcntl short-spec short-alone short-keepfile
 short-unsafe-flock short-unsafe-rename"

die() { echo "fs: $*" >&2; exit 99; }
. "$here/../harness.sh"

# mkfs.*, losetup and modprobe live in sbin, which a CI shell may lack.
PATH="$PATH:/usr/sbin:/sbin"

[ -x "$PROBE" ] || die "$PROBE is not built (make tests/fs/fsprobe)"
[ -x "$top/tools/pidlock" ] || die "tools/pidlock is not built (make)"
# The mix calls pidlock hundreds of times: skip the libtool wrapper.
if [ -x "$top/tools/.libs/pidlock" ]; then
	PIDLOCK="$top/tools/.libs/pidlock"
	use_built_lib
else
	PIDLOCK="$top/tools/pidlock"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-fs.XXXXXX") || die "mktemp failed"
# Some tests act as nobody: every directory down to the mounts is
# searchable.
chmod 0755 "$WORK" || die "chmod $WORK failed"
RESULTS="$WORK/results"
: >"$RESULTS" || die "cannot write $RESULTS"

# --- clean-up: a stack of commands, run newest first ---------------------
CLEANUP="$WORK/cleanup"
: >"$CLEANUP"
on_cleanup() { printf '%s\n' "$*" >>"$CLEANUP"; }

# Lazy unmount as a last resort: a FUSE daemon or a test may still hold
# the mount busy, and a leftover mount must not outlive the run.
unmount() {
	mountpoint -q "$1" 2>/dev/null || return 0
	umount "$1" 2>/dev/null || fusermount3 -u "$1" 2>/dev/null ||
		umount -l "$1" || echo "fs: could not unmount $1" >&2
}

run_cleanup() {
	[ -s "$CLEANUP" ] || return 0
	tac "$CLEANUP" >"$CLEANUP.run"
	: >"$CLEANUP"
	while IFS= read -r cmd; do
		eval "$cmd" || echo "fs: clean-up failed: $cmd" >&2
	done <"$CLEANUP.run"
	rm -f "$CLEANUP.run"
}

finish() {
	rc=$?
	trap - EXIT INT TERM HUP
	run_cleanup
	finish_work "$rc" "${FS_KEEP_LOGS:-}" "$WORK/logs" fs
}
trap_finish

# --- set-ups: each prints the directory to test, or fails with a reason ---
need_root() {
	[ "$(id -u)" -eq 0 ] || { echo "not root"; return 1; }
}

need_tool() {
	for t; do
		command -v "$t" >/dev/null 2>&1 ||
			{ echo "$t not installed (see bootstrap DEPS)"; return 1; }
	done
}

# A tmpfs of our own, so that lower, upper and source directories sit
# on one known file system whatever /tmp is.
base_tmpfs() {
	mkdir -p "$1" || return 1
	mount -t tmpfs -o size=256m,mode=0755 "fs-test" "$1" ||
		{ echo "cannot mount a tmpfs on $1"; return 1; }
	on_cleanup "unmount '$1'"
}

setup_loop() {	# type mkfs-command...
	type=$1; shift
	need_root || return 1
	need_tool "$1" losetup || return 1
	grep -qw "$type" /proc/filesystems ||
		modprobe "$type" 2>/dev/null ||
		{ echo "the kernel has no $type"; return 1; }
	img="$WORK/$type.img" mnt="$WORK/mnt-$type"
	mkdir -p "$mnt" || return 1
	truncate -s "$IMAGE_SIZE" "$img" || { echo "truncate failed"; return 1; }
	on_cleanup "rm -f '$img'"
	"$@" "$img" >"$WORK/logs/$type.mkfs" 2>&1 ||
		{ echo "$1 failed: $(tail -1 "$WORK/logs/$type.mkfs")"; return 1; }
	mount -o loop "$img" "$mnt" 2>"$WORK/logs/$type.mount" ||
		{ echo "mount -o loop failed: $(tail -1 "$WORK/logs/$type.mount")"; return 1; }
	on_cleanup "unmount '$mnt'"
	chmod 0755 "$mnt" || return 1
	echo "$mnt"
}

setup_overlay() {
	need_root || return 1
	grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
		{ echo "the kernel has no overlay"; return 1; }
	b="$WORK/ovl"
	base_tmpfs "$b" || return 1
	mkdir -p "$b/lower/locks" "$b/upper" "$b/work" "$b/merged" || return 1
	mount -t overlay overlay \
		-o "lowerdir=$b/lower,upperdir=$b/upper,workdir=$b/work" \
		"$b/merged" 2>"$WORK/logs/overlay.mount" ||
		{ echo "mount -t overlay failed: $(tail -1 "$WORK/logs/overlay.mount")"; return 1; }
	on_cleanup "unmount '$b/merged'"
	# The lock directory comes from the lower layer, as /run/lock in
	# a container image does.
	echo "$b/merged/locks"
}

setup_fuse_overlayfs() {
	need_root || return 1
	need_tool fuse-overlayfs fusermount3 || return 1
	[ -c /dev/fuse ] || { echo "no /dev/fuse"; return 1; }
	b="$WORK/fovl"
	base_tmpfs "$b" || return 1
	mkdir -p "$b/lower/locks" "$b/upper" "$b/work" "$b/merged" || return 1
	fuse-overlayfs -o "lowerdir=$b/lower,upperdir=$b/upper,workdir=$b/work" \
		"$b/merged" 2>"$WORK/logs/fuse-overlayfs.mount" ||
		{ echo "fuse-overlayfs failed: $(tail -1 "$WORK/logs/fuse-overlayfs.mount")"; return 1; }
	on_cleanup "unmount '$b/merged'"
	echo "$b/merged/locks"
}

setup_bindfs() {	# name bindfs-options...
	name=$1; shift
	need_root || return 1
	need_tool bindfs fusermount3 || return 1
	[ -c /dev/fuse ] || { echo "no /dev/fuse"; return 1; }
	b="$WORK/$name"
	base_tmpfs "$b" || return 1
	mkdir -p "$b/src" "$b/mnt" || return 1
	bindfs "$@" "$b/src" "$b/mnt" 2>"$WORK/logs/$name.mount" ||
		{ echo "bindfs failed: $(tail -1 "$WORK/logs/$name.mount")"; return 1; }
	on_cleanup "unmount '$b/mnt'"
	echo "$b/mnt"
}

setup_nameino() {
	need_root || return 1
	[ -x "$top/tests/fs/fuse-nameino" ] ||
		{ echo "tests/fs/fuse-nameino not built (needs libfuse3-dev)"; return 1; }
	[ -c /dev/fuse ] || { echo "no /dev/fuse"; return 1; }
	b="$WORK/nameino"
	base_tmpfs "$b" || return 1
	mkdir -p "$b/src" "$b/mnt" || return 1
	"$top/tests/fs/fuse-nameino" "$b/src" "$b/mnt" -o allow_other \
		2>"$WORK/logs/fuse-nameino.mount" ||
		{ echo "fuse-nameino failed: $(tail -1 "$WORK/logs/fuse-nameino.mount")"; return 1; }
	on_cleanup "unmount '$b/mnt'"
	echo "$b/mnt"
}

setup() {
	case $1 in
	ext4)	setup_loop ext4 mkfs.ext4 -q -F ;;
	xfs)	setup_loop xfs mkfs.xfs -q -f ;;
	btrfs)	setup_loop btrfs mkfs.btrfs -q -f ;;
	overlay) setup_overlay ;;
	fuse-overlayfs) setup_fuse_overlayfs ;;
	bindfs)	setup_bindfs bindfs ;;
	# unlink really unlinks, attributes never cached: the link count
	# is right, which shows that locks stay with the name they were
	# taken through (libfuse's high-level API: one node per name).
	bindfs-hardremove) setup_bindfs bindfs-hardremove \
		-o hard_remove,attr_timeout=0,entry_timeout=0 ;;
	# Locks forwarded to the source directory are all taken by the
	# bindfs process: fcntl locks of different openers do not conflict.
	bindfs-lockfwd) setup_bindfs bindfs-lockfwd \
		--enable-lock-forwarding --multithreaded ;;
	# High-level libfuse without use_ino (tests/fs/fuse-nameino.c):
	# st_ino is per name, so a second name is another inode.
	fuse-nameino) setup_nameino ;;
	*)	echo "unknown file system (known: $DEFAULT_FS bindfs-hardremove bindfs-lockfwd fuse-nameino)"
		return 1 ;;
	esac
}

# --- the parts --------------------------------------------------------------
want() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

# One feature as the table shows it: yes, or no.
feature() {
	v=$(sed -n "s/^$1=//p" "$2" | head -1)
	case $v in
	yes*)	echo yes ;;
	"")	echo "?" ;;
	*)	echo no ;;
	esac
}

# Which way pidlock(1) publishes here, read from its system calls.
publish_path() {
	dir=$1 log="$WORK/logs/$2.strace"
	command -v strace >/dev/null 2>&1 || { echo "? (no strace)"; return; }
	strace -f -qq -e trace=openat,open,linkat,link,renameat2 -o "$log" \
		"$PIDLOCK" "$dir/path-probe.lock" true >/dev/null 2>&1 ||
		{ echo "? (strace or pidlock failed)"; return; }
	if grep -q 'renameat2(.*pidlock-tmp-.*RENAME_NOREPLACE) = 0' "$log"; then
		echo "named temp+renameat2"
	elif grep -q 'O_TMPFILE.*= [0-9]' "$log" && grep -q '^[0-9]* *linkat(.*= 0' "$log"; then
		echo "O_TMPFILE+linkat"
	elif grep -q 'path-probe.lock".*O_EXCL.*= [0-9]' "$log"; then
		echo "in place"
	else
		echo "? (see $log)"
	fi
}

run_tests() {	# name dir: the Check binaries, one TMPDIR each
	failed=
	for t in $PROTOCOL_TESTS; do
		b=$(basename "$t")
		log="$WORK/logs/$1.$b.log"
		if [ ! -x "$top/$t" ]; then
			echo "  $b: not built (is check installed?)" | tee -a "$log"
			failed="$failed $b(missing)"
			continue
		fi
		mkdir -p "$2/$b" || return 1
		TMPDIR="$2/$b" "$top/$t" >"$log" 2>&1
		rc=$?
		if [ "$rc" -eq 0 ]; then
			echo "  $b: pass"
		else
			failed="$failed $b"
			echo "  $b: FAIL (exit $rc)"
			# Check prints one line per failed test: file:line:F/E:...
			grep -E ':[FE]:' "$log" | sed 's/^/    /' | head -20
		fi
	done
	TESTS_FAILED="$TESTS_FAILED$failed"
}

run_torture() {
	failed=
	for s in $TORTURE_SHORT; do
		log="$WORK/logs/$1.$s.log"
		mkdir -p "$2/$s" || return 1
		(cd "$top" && TMPDIR="$2/$s" FS_PUBLISH="$3" \
			"${SHELL:-/bin/sh}" "$srcdir/tests/torture/$s.sh") \
			>"$log" 2>&1
		rc=$?
		case $rc in
		0)	echo "  $s: pass" ;;
		77)	echo "  $s: skip" ;;
		*)	failed="$failed $s"
			echo "  $s: FAIL (exit $rc)"
			grep -iE 'fail|error|violat|double|broken' "$log" |
				sed 's/^/    /' | head -10 ;;
		esac
	done
	TESTS_FAILED="$TESTS_FAILED$failed"
}

# The mix: MIX_PROCS pidlock(1) participants (harness.sh's mix_worker),
# their marker on the scratch file system.
run_mix() {	# name dir
	m="$WORK/mix-$1"
	mkdir -p "$m" || return 1
	rm -f "$m/stop"
	i=1
	while [ "$i" -le "$MIX_PROCS" ]; do
		mix_worker "$2/mix.lock" "$m/held" "$m/stop" "$m/w$i" 0.002 \
			-E 75 &
		i=$((i + 1))
	done
	sleep "$MIX_SECONDS"
	: >"$m/stop"
	wait
	mix_tally "$m"/w[0-9]*
	MIX="$T $D $E"
	echo "  mix: $MIX_PROCS x pidlock(1), ${MIX_SECONDS}s: $T turns, $D double holds, $E errors"
	mix_errors "$m"/w*.err | sed 's/^/    /'
	cat "$m"/w*.err >"$WORK/logs/$1.mix.err" 2>/dev/null
}

# --- main ---------------------------------------------------------------------
mkdir -p "$WORK/logs" || die "mkdir failed"
[ $# -gt 0 ] || set -- $DEFAULT_FS
# A misspelt name must not pass as a skip.
for fs; do
	case " $DEFAULT_FS bindfs-hardremove fuse-nameino " in
	*" $fs "*) ;;
	*) die "unknown file system $fs (known: $DEFAULT_FS bindfs-hardremove fuse-nameino)" ;;
	esac
done
bad=0 made=0
for fs; do
	echo "=== $fs"
	dir=$(setup "$fs")
	if [ $? -ne 0 ] || [ -z "$dir" ] || [ ! -d "$dir" ]; then
		echo "  SKIP: ${dir:-setup failed}"
		echo "$fs|skip|$dir" >>"$RESULTS"
		run_cleanup
		continue
	fi
	made=$((made + 1))
	echo "  on $dir ($(stat -f -c %T "$dir"))"
	TESTS_FAILED= MIX="- - -"
	feat="$WORK/logs/$fs.probe"
	: >"$feat"
	if want probe; then
		mkdir -p "$dir/probe" && "$PROBE" "$dir/probe" >"$feat" 2>"$feat.err" ||
			{ echo "  probe FAILED: $(cat "$feat.err")"; TESTS_FAILED=" probe"; }
		sed 's/^/  /' "$feat"
		path=$(publish_path "$dir" "$fs")
		echo "  publish: $path"
	else
		path="-"
	fi
	case " $REFUSE_FS " in *" $fs "*) refuse=1 ;; *) refuse=0 ;; esac
	if [ "$refuse" -eq 1 ]; then
		# Only the refusal is the point here: every try must fail with
		# the error that names the missing property.
		run_mix "$fs" "$dir"
	else
		want tests && run_tests "$fs" "$dir"
		want torture && run_torture "$fs" "$dir" "$path"
		want mix && run_mix "$fs" "$dir"
	fi
	set -- $MIX
	verdict=pass
	if [ "$refuse" -eq 1 ]; then
		others=$(grep -cv 'No locks available\|Operation not supported' \
			"$WORK/logs/$fs.mix.err" 2>/dev/null)
		if [ "$1" -ne 0 ] || [ "$2" -ne 0 ] || [ "$3" -eq 0 ] ||
		   [ "${others:-0}" -ne 0 ]; then
			verdict=FAIL bad=1
		else
			verdict=refused
		fi
	elif [ -n "$TESTS_FAILED" ] || { [ "$2" != - ] && [ "$2" -ne 0 ]; } ||
	   { [ "$3" != - ] && [ "$3" -ne 0 ]; }; then
		verdict=FAIL bad=1
	fi
	echo "$fs|$verdict|$(feature o_tmpfile "$feat")|$(feature ofd "$feat")|$(feature flock "$feat")|$(feature inotify "$feat")|$(feature identity "$feat")/$(feature link_identity "$feat")|$(feature link_lock "$feat")|$(feature nlink_after_unlink "$feat")|$(feature proc_locks "$feat")|$(feature rename_noreplace "$feat")|$path|$1|$2|$3|${TESTS_FAILED# }" >>"$RESULTS"
	run_cleanup
done

echo
echo "file system   | result | O_TMPFILE | OFD | flock | inotify | identity fd/link | lock follows link | nlink after unlink | /proc/locks ids | RENAME_NOREPLACE | publish | turns | double | errors | failed"
while IFS='|' read -r fs verdict rest; do
	if [ "$verdict" = skip ]; then
		printf '%-13s | SKIP: %s\n' "$fs" "$rest"
	else
		printf '%-13s | %-6s | %s\n' "$fs" "$verdict" "$(echo "$rest" | sed 's/|/ | /g')"
	fi
done <"$RESULTS"

[ "$bad" -ne 0 ] && exit 1
[ "$made" -eq 0 ] && exit 77
exit 0
