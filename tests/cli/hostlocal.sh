#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Never silently local: on a file system whose locks exclude only this
# host, pidlock refuses to lock, runs nothing, and names the file system
# and what to do; --host-local locks there.  The file system is bindfs
# (FUSE) mounted as "fuse.sshfs", which is what sshfs shows; the tool
# reads only /proc/self/mountinfo.  Skipped without bindfs or FUSE.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

mkdir src mnt
if ! bindfs -o subtype=sshfs src mnt 2>/dev/null; then
	echo "# bindfs or FUSE not available here: skipped"
	exit 77
fi
unmount_then_cleanup() {
	fusermount3 -u "$T/mnt" 2>/dev/null || fusermount -u "$T/mnt" 2>/dev/null
	cleanup
}
trap unmount_then_cleanup EXIT

"$PIDLOCK" mnt/job.lock touch ran > out 2> err
rc=$?
[ $rc -ne 0 ] || fail "locked on fuse.sshfs without --host-local"
[ ! -e ran ] || fail "the command ran on a refused lock"
[ ! -e mnt/job.lock ] || fail "the refused lock file was left behind"
grep -qF "pidlock: mnt/job.lock: No locks available (fuse.sshfs sends no lock to its server: its locks exclude only this host; use --host-local if only this host uses the directory)" err ||
	fail "message: $(cat err)"
pass "fuse.sshfs refused (exit $rc), the file system and --host-local named"

"$PIDLOCK" -n mnt/job.lock true 2> err
[ $? -ne 0 ] && grep -qF -- "--host-local" err ||
	fail "-n: not refused the same way: $(cat err)"
pass "a try (-n) is refused the same way"

expect 0 "--host-local locks there and runs the command" -- \
	"$PIDLOCK" --host-local mnt/job.lock sh -c 'grep -q "^pid=" mnt/job.lock'
[ ! -e mnt/job.lock ] || fail "--host-local: the lock file was not removed"

# A shell's own descriptor (pidlock 9, as flock(1) 9) is refused the
# same way, and holds nothing afterwards.
bash -c "exec 9<>mnt/fd.lock || exit 90; '$PIDLOCK' -n 9 || exit 1" 2> err &&
	fail "descriptor: locked on fuse.sshfs without --host-local"
grep -qF -- "--host-local" err || fail "descriptor: message: $(cat err)"
flock -n mnt/fd.lock true || fail "descriptor: a lock was kept"
grep -q '^released=' mnt/fd.lock ||
	fail "descriptor: the record was not marked released: $(cat mnt/fd.lock)"
pass "a shell's descriptor is refused the same way, its record marked released"
expect 0 "a shell's descriptor with --host-local locks there" -- \
	bash -c "exec 9<>mnt/fd.lock || exit 90; '$PIDLOCK' -n --host-local 9 || exit 1"

# The option is a locking flag: refused where nothing is locked.
"$PIDLOCK" --status --host-local mnt/job.lock > out 2> err
[ $? -eq 64 ] || fail "--status --host-local accepted: $(cat err)"
pass "--host-local is refused with --status"

done_testing
