#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Usage: --help, --version, and every malformed command line exits 64.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

"$PIDLOCK" --help > help.out 2>&1
[ $? -eq 0 ] || fail "--help exit status"
grep -q '^Usage:' help.out || fail "--help has no usage"
pass "--help exits 0 with a usage"
"$PIDLOCK" -h | cmp -s - help.out || fail "-h differs from --help"
pass "-h is --help"
"$PIDLOCK" --version > version.out || fail "--version exit status"
grep -Eq '^pidlock \(libpidlock\) [0-9]+\.[0-9]+' version.out ||
	fail "--version says: $(cat version.out)"
"$PIDLOCK" -V | cmp -s - version.out || fail "-V differs from --version"
pass "--version and -V"

# usage64 DESCRIPTION ARGS...: exit 64, a message on stderr, nothing run.
usage64() {
	local what=$1 rc
	shift
	rm -f ran
	"$PIDLOCK" "$@" > out 2> err
	rc=$?
	[ "$rc" -eq 64 ] || fail "$what: exit status $rc, expected 64"
	[ -s err ] || fail "$what: no message"
	grep -q '^pidlock: ' err || fail "$what: message lacks the program name"
	[ ! -e ran ] || fail "$what: the command ran"
	[ ! -e x.lock ] || fail "$what: a lock file was made"
	pass "usage error: $what"
}

usage64 "no arguments"
usage64 "no command" x.lock
usage64 "unknown option" --frobnicate x.lock touch ran
usage64 "unknown short option" -Z x.lock touch ran
usage64 "-w without a value" -w
usage64 "-w not a number" -w abc x.lock touch ran
usage64 "-w negative" -w -1 x.lock touch ran
usage64 "-w trailing junk" -w 1s x.lock touch ran
usage64 "-w not finite" -w inf x.lock touch ran
usage64 "-w too large" -w 99999999999 x.lock touch ran
usage64 "-E above 255" -E 256 x.lock touch ran
usage64 "-E negative" -E -1 x.lock touch ran
usage64 "-E not a number" -E x x.lock touch ran
usage64 "--stale zero" --stale 0 x.lock touch ran
usage64 "--stale fraction" --stale 1.5 x.lock touch ran
usage64 "--stale negative" --stale -5 x.lock touch ran
usage64 "--tag too long" --tag "$(printf '%0256d' 0)" x.lock touch ran
usage64 "-c before LOCKFILE" -c 'touch ran' x.lock
usage64 "-c with two arguments" x.lock -c 'touch ran' extra
usage64 "-c without its argument" x.lock -c
usage64 "--command with two arguments" x.lock --command 'touch ran' extra
usage64 "-- and no command" x.lock --
usage64 "empty lock file name" "" touch ran
usage64 "--flock-only with --fcntl-only" --flock-only --fcntl-only x.lock touch ran
usage64 "--exec with --close" --exec -o x.lock touch ran
usage64 "--status with --list" --status --list x.lock
usage64 "--status with --remove" --status --remove x.lock
usage64 "--status without a file" --status
usage64 "--list without a directory" --list
usage64 "--list with two directories" --list . .
usage64 "--remove without a file" --remove
usage64 "--json without --status" --json x.lock touch ran
usage64 "--json with --remove" --json --remove x.lock
usage64 "--tag with --status" --tag t --status x.lock
usage64 "-n with --status" -n --status x.lock
usage64 "--exec with --list" --exec --list .
usage64 "--keep-file with --remove" --keep-file --remove x.lock
usage64 "--status with an empty name" --status ""
usage64 "--fd without a command" --fd 9
usage64 "--fd with -c and an operand" --fd 9 -c 'touch ran' extra
usage64 "--fd not a number" --fd x touch ran
usage64 "--fd with --status" --fd 9 --status x.lock
usage64 "-c with a lone descriptor" -c 'touch ran' 9
usage64 "-x with -u (-u is a mode of its own)" -x -u 9
usage64 "-n with -u" -n -u 9

usage64 "--mode not octal" --mode 0698 x.lock touch ran
usage64 "--mode with an execute bit" --mode 0755 x.lock touch ran
usage64 "--mode with the setuid bit" --mode 04600 x.lock touch ran
usage64 "--mode empty" --mode "" x.lock touch ran
usage64 "--mode with --status" --mode 0600 --status x.lock

# msg64 PATTERN DESCRIPTION ARGS...: exit 64 with a message that says what
# is allowed, not only what was wrong.
msg64() {
	local pattern=$1 what=$2
	shift 2
	usage64 "$what" "$@"
	grep -q -- "$pattern" err || fail "$what: message: $(cat err)"
	pass "$what: the message gives the allowed values"
}
msg64 "invalid timeout 'abc' (seconds from 0 to 2147483.647, fractions allowed)$" \
	"-w range" -w abc x.lock touch ran
msg64 "invalid timeout '99999999999' (seconds from 0 to 2147483.647" \
	"-w above the limit" -w 99999999999 x.lock touch ran
msg64 "invalid stale timeout '0' (whole seconds from 1 to 4294967295)$" \
	"--stale range" --stale 0 x.lock touch ran
msg64 "tag too long: 256 bytes, at most 255$" \
	"--tag limit" --tag "$(printf '%0256d' 0)" x.lock touch ran
msg64 "invalid conflict exit code '256' (0..255)$" "-E range" -E 256 x.lock touch ran
msg64 "invalid mode '0755' (octal, read and write bits only: 0 to 0666" \
	"--mode range" --mode 0755 x.lock touch ran
msg64 "^pidlock: --list needs a directory$" "--list without a directory" --list
msg64 "^pidlock: --status needs a lock file name$" "--status without a file" --status

# The tool stops at LOCKFILE: the command's options are its own.
expect 0 "options after the command name go to the command" -- \
	"$PIDLOCK" x.lock sh -c 'test "$1" = "-n"' sh -n
# shellcheck disable=SC2046
expect 0 "an option given many times" -- \
	"$PIDLOCK" $(printf -- '-n %.0s' $(seq 100)) $(printf -- '--tag t %.0s' $(seq 100)) x.lock true
expect 0 "the largest -w is accepted" -- "$PIDLOCK" -w 2147483 x.lock true
expect 0 "-E 255 is accepted" -- "$PIDLOCK" -E 255 x.lock true
expect 0 "--mode 0 is accepted" -- "$PIDLOCK" --mode 0 x.lock true
"$PIDLOCK" --mode 0640 x.lock sh -c 'stat -c %a x.lock > mode.out'
[ "$(cat mode.out)" = 640 ] || fail "--mode 0640 made a file of mode $(cat mode.out)"
pass "--mode 0640: the lock file has mode 0640"
"$PIDLOCK" --mode 600 x.lock sh -c 'stat -c %a x.lock > mode.out'
[ "$(cat mode.out)" = 600 ] || fail "--mode 600 made a file of mode $(cat mode.out)"
pass "--mode 600 (no leading zero) is octal too"
done_testing
