#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Errors name the file and the cause, and exit with <sysexits.h> codes.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

# err RC DESCRIPTION PATTERN ARGS...: exit RC, message matches, not run.
err() {
	local want=$1 what=$2 pattern=$3 rc
	shift 3
	rm -f ran
	"$PIDLOCK" "$@" 2> msg
	rc=$?
	[ "$rc" -eq "$want" ] || fail "$what: exit status $rc, expected $want ($(cat msg))"
	grep -q "$pattern" msg || fail "$what: message: $(cat msg)"
	[ ! -e ran ] || fail "$what: the command ran"
	pass "$what"
}

err 66 "a missing directory: 66" '^pidlock: nodir/x.lock: No such file or directory$' \
	nodir/x.lock touch ran
# A directory whose file system makes no files (open(2) with O_CREAT says
# ENOENT there): the message says that, not only "No such file".
err 73 "a directory that makes no files (/proc): 73" \
	'^pidlock: /proc/x.lock: No such file or directory (no file can be made in /proc' \
	/proc/x.lock touch ran
err 73 "an existing file in such a directory (/proc/version): 73" \
	'^pidlock: /proc/version: .*no file can be made in /proc' \
	/proc/version touch ran
if [ "$(id -u)" = 0 ] && [ -d /sys/kernel ]; then
	# sysfs refuses even root, with EACCES: the same hint.
	err 73 "a directory that makes no files (/sys), as root: 73" \
		'^pidlock: /sys/x.lock: Permission denied (no file can be made in /sys' \
		/sys/x.lock touch ran
fi
mkdir dir.lock
err 66 "a directory: 66" '^pidlock: dir.lock: Is a directory$' dir.lock touch ran
touch file
err 66 "a path through a file: 66" '^pidlock: file/x.lock: Not a directory$' \
	file/x.lock touch ran
ln -s target.lock link.lock
err 66 "a symbolic link: 66" '^pidlock: link.lock: .*symbolic link' link.lock touch ran
[ ! -e target.lock ] || fail "the link was followed"
mkfifo fifo.lock
err 66 "a FIFO: 66" '^pidlock: fifo.lock: .*not a regular file' fifo.lock touch ran
echo data > one
ln one two.lock
err 66 "a hard-linked file: 66" '^pidlock: two.lock: .*hard link' two.lock touch ran
[ "$(cat one)" = data ] || fail "the hard-linked file was written"
pass "the hard-linked file is untouched"
mkdir -m 0777 open
chmod 0777 open
err 77 "a world-writable directory without the sticky bit: 77" \
	'^pidlock: open/x.lock: .*sticky bit' open/x.lock touch ran
err 66 "--remove of a symbolic link: 66" 'symbolic link' --remove link.lock
[ -L link.lock ] || fail "--remove deleted the link"

# The command cannot be run: 69, and the lock is released.
err 69 "a missing command: 69" '^pidlock: no-such-command: No such file or directory$' \
	x.lock no-such-command
[ ! -e x.lock ] || fail "lock file left after a missing command"
pass "the lock is released after a missing command"
printf 'echo hi\n' > noexec
chmod 0644 noexec
err 69 "a command that is not executable: 69" 'Permission denied' x.lock ./noexec
[ ! -e x.lock ] || fail "lock file left after a failed exec"
err 69 "--exec, a missing command: 69" 'No such file' --exec x.lock ./no-such-command

# Output that cannot be written is an error, not a success.
for args in "--status x.lock" "--list ." "--help"; do
	# shellcheck disable=SC2086
	"$PIDLOCK" $args > /dev/full 2> msg
	rc=$?
	[ $rc -eq 74 ] || fail "pidlock $args > /dev/full: exit status $rc, expected 74"
	grep -q '^pidlock: write error: No space left on device$' msg ||
		fail "pidlock $args > /dev/full: $(cat msg)"
	pass "pidlock $args to a full device: 74 and a message"
done
# A program that runs (open(2) for writing says ETXTBSY): not a lock
# file, 65, as any other data file, and it stays as it was.
cp "$(command -v sleep)" prog
sum=$(cksum < prog)
./prog 30 &
prog=$!
track "$prog"
running() { [ "$(readlink "/proc/$prog/exe")" = "$T/prog" ]; }
wait_until running
err 65 "a program that runs: 65, not a lock file" \
	'^pidlock: prog: not a lock file' -n prog touch ran
[ "$(cksum < prog)" = "$sum" ] || fail "the running program was changed"
pass "the running program is untouched"
kill "$prog"

done_testing
