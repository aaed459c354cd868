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

# The tool stops at LOCKFILE: the command's options are its own.
expect 0 "options after the command name go to the command" -- \
	"$PIDLOCK" x.lock sh -c 'test "$1" = "-n"' sh -n
# shellcheck disable=SC2046
expect 0 "an option given many times" -- \
	"$PIDLOCK" $(printf -- '-n %.0s' $(seq 100)) $(printf -- '--tag t %.0s' $(seq 100)) x.lock true
expect 0 "the largest -w is accepted" -- "$PIDLOCK" -w 2147483 x.lock true
expect 0 "-E 255 is accepted" -- "$PIDLOCK" -E 255 x.lock true
done_testing
