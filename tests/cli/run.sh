#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Running a command: the record while it runs, the exit status, release,
# and the options that shape the lock file.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

# The command sees the lock file as it is while it runs.
"$PIDLOCK" x.lock sh -c 'cp x.lock seen; echo $PPID > ppid; echo "$@" > args' \
	sh one 'two words'
[ $? -eq 0 ] || fail "plain run failed"
[ "$(field seen pid)" = "$(cat ppid)" ] ||
	fail "pid= is $(field seen pid), not pidlock's pid $(cat ppid)"
pass "the lock file names the pidlock process, the command's parent"
now=$(date +%s)
ts=$(field seen timestamp)
[ "$ts" -ge $((now - 5)) ] && [ "$ts" -le "$now" ] || fail "timestamp=$ts, now $now"
pass "the lock file has a current timestamp"
[ "$(field seen lock)" = "flock,ofd" ] || fail "lock= is $(field seen lock)"
pass "both kernel locks by default"
grep -q '^tag=' seen && fail "tag= without --tag"
[ "$(head -n 1 seen)" = "pid=$(cat ppid)" ] || fail "first line: $(head -n 1 seen)"
pass "no tag and no bare pid line by default"
[ "$(cat args)" = "one two words" ] || fail "arguments: $(cat args)"
pass "the command gets its arguments"
[ ! -e x.lock ] || fail "lock file left after release"
pass "release deletes the lock file"

expect 3 "the command's exit status is passed on" -- "$PIDLOCK" x.lock sh -c 'exit 3'
expect 255 "exit status 255 is passed on" -- "$PIDLOCK" x.lock sh -c 'exit 255'
[ ! -e x.lock ] || fail "lock file left after a failing command"
pass "a failing command releases the lock too"

# -c runs one shell command line with /bin/sh.
"$PIDLOCK" x.lock -c 'echo "$0" > sh0; test -e x.lock && exit 4'
[ $? -eq 4 ] || fail "-c: exit status"
[ "$(cat sh0)" = /bin/sh ] || fail "-c ran $(cat sh0), not /bin/sh"
pass "-c runs the command line with /bin/sh, under the lock"
expect 5 "--command is -c" -- "$PIDLOCK" x.lock --command 'exit 5'
SHELL=/bin/false "$PIDLOCK" x.lock -c 'exit 6'
[ $? -eq 6 ] || fail "-c used \$SHELL"
pass "-c ignores \$SHELL"
expect 7 "-- ends the options before the command" -- \
	"$PIDLOCK" x.lock -- sh -c 'exit 7'

# With stdout and stderr closed, the lock file must not become the
# command's output: they get /dev/null instead.
"$PIDLOCK" x.lock sh -c 'echo junk; echo junk >&2; cp x.lock closed' >&- 2>&-
[ "$(head -n 1 closed)" = "pid=$(field closed pid)" ] && ! grep -q junk closed ||
	fail "closed stdout: the lock file got: $(cat closed)"
pass "closed standard descriptors never alias the lock file"

# --tag, --plain-pid
"$PIDLOCK" --tag 'nightly backup "db"' x.lock cp x.lock tagged
[ "$(field tagged tag)" = 'nightly backup "db"' ] || fail "tag= is $(field tagged tag)"
pass "--tag goes into the lock file"
"$PIDLOCK" --tag "$(printf 'a\tb')" x.lock cp x.lock tagged2
[ "$(field tagged2 tag)" = 'a?b' ] || fail "control character in tag: $(field tagged2 tag)"
pass "--tag: control characters are cleaned"
"$PIDLOCK" --plain-pid x.lock sh -c 'cp x.lock plain; echo $PPID > ppid'
[ "$(head -n 1 plain)" = "$(cat ppid)" ] || fail "first line: $(head -n 1 plain)"
[ "$(field plain pid)" = "$(cat ppid)" ] || fail "--plain-pid lost pid="
pass "--plain-pid writes the bare pid first, and keeps pid="

# --keep-file: the file stays, left for the next locker.
expect 0 "--keep-file run" -- "$PIDLOCK" --keep-file x.lock true
[ -f x.lock ] || fail "--keep-file: the file is gone"
pass "--keep-file leaves the lock file"
[ "$(field x.lock released)" -gt 0 ] && [ "$(field x.lock pid)" = 4194304 ] ||
	fail "--keep-file: no released record: $(cat x.lock)"
pass "--keep-file leaves a record that says the lock was released"
expect 0 "a kept file nobody holds is free" -- "$PIDLOCK" --status x.lock
ino=$(stat -c %i x.lock)
expect 0 "the next locker takes a kept file over" -- "$PIDLOCK" -n x.lock true
[ "$(stat -c %i x.lock 2>/dev/null)" = "$ino" ] || fail "the next locker deleted or replaced it"
expect 0 "and keeps it, free" -- "$PIDLOCK" --status x.lock
rm x.lock

# --flock-only and --fcntl-only: the marker and the kernel's own list.
# takes_only OPTION MARKER KINDS WHAT: under pidlock OPTION, the file's
# lock= marker and the kernel's locks, as --status --json lists them.
takes_only() {
	"$PIDLOCK" "$1" x.lock sh -c 'cp x.lock m; "$0" --status --json x.lock > j' "$PIDLOCK"
	[ "$(field m lock)" = "$2" ] || fail "$1 marker: $(field m lock)"
	json_flat j
	[ "$(jv j 0 kernel_locks)" = "$3" ] || fail "$1 kernel locks: $(cat j)"
	pass "$1 takes only $4"
}
takes_only --flock-only flock '["flock"]' flock
takes_only --fcntl-only ofd '["fcntl"]' "the fcntl lock"
"$PIDLOCK" x.lock sh -c '"$0" --status --json x.lock > j' "$PIDLOCK"
json_flat j
[ "$(jv j 0 kernel_locks)" = '["flock", "fcntl"]' ] ||
	fail "default kernel locks: $(cat j)"
pass "by default the kernel lists both locks"

# --sync: fdatasync(2); the default and --no-sync: none (since 1.4.0);
# of --sync and --no-sync the last one counts.
# (LeakSanitizer cannot run under ptrace: a sanitizer build skips it here.)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
syncs() {	# name, args...: 0 if the run called fdatasync(2)
	t=$1.tr
	shift
	strace -f -e trace=fdatasync -o "$t" "$PIDLOCK" "$@" x.lock true ||
		fail "run under strace: $*"
	grep -q 'fdatasync(' "$t"
}
if command -v strace >/dev/null && strace -o /dev/null true 2>/dev/null; then
	syncs default && fail "fdatasync by default"
	syncs nosync --no-sync && fail "fdatasync with --no-sync"
	syncs sync --sync || fail "no fdatasync with --sync"
	syncs last --sync --no-sync && fail "fdatasync with --sync --no-sync"
	syncs last2 --no-sync --sync || fail "no fdatasync with --no-sync --sync"
	pass "--sync syncs, the default and --no-sync do not, the last counts"
else
	fail "strace cannot trace here; --sync is untested"
fi
done_testing
