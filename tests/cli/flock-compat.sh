#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Scripts written for flock(1) run with pidlock in its place.  The
# invocations are those that util-linux's own flock tests make (2.38.1's
# tests/ts/misc/flock, and tests/ts/flock/flock, close and unlock of the
# current tree), written again here as checks of ours.  Each is run with
# the installed flock(1) and with pidlock side by side, and their exit
# statuses and whether the command ran are compared.  Options that the
# installed flock(1) does not know (--fcntl, --fd: newer than 2.38) are
# compared with it where it knows them, else checked against the status
# util-linux's suite expects.  Where pidlock differs on purpose, the
# check asserts what pidlock(1), "FLOCK(1) COMPATIBILITY", says.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

FLOCK=${FLOCK:-flock}
command -v "$FLOCK" >/dev/null || fail "flock(1) is not installed"

# both WANT RAN WHAT -- ARGS...: "flock ARGS", then "pidlock ARGS", where
# ARGS names the command `touch ran`: each exits WANT, and has run the
# command if RAN is 1, not if it is 0.  Standard error is kept in
# err.flock and err.pidlock.
both() {
	local want=$1 ran=$2 what=$3
	shift 4
	run_as "$FLOCK" flock "$want" "$ran" "$what" "$@"
	run_as "$PIDLOCK" pidlock "$want" "$ran" "$what" "$@"
	pass "$what: flock(1) and pidlock exit $want"
}

# ours WANT RAN WHAT -- ARGS...: as both, for pidlock alone.
ours() {
	local want=$1 ran=$2 what=$3
	shift 4
	run_as "$PIDLOCK" pidlock "$want" "$ran" "$what" "$@"
	pass "$what: pidlock exits $want"
}

# run_as PROGRAM NAME WANT RAN WHAT ARGS...
run_as() {
	local prog=$1 name=$2 want=$3 ran=$4 what=$5 rc
	shift 5
	rm -f ran
	"$prog" "$@" > "out.$name" 2> "err.$name"
	rc=$?
	[ "$rc" -eq "$want" ] ||
		fail "$what: $name exits $rc, expected $want: $(cat "err.$name")"
	if [ "$ran" = 1 ]; then
		[ -e ran ] || fail "$what: $name did not run the command"
	else
		[ ! -e ran ] || fail "$what: $name ran the command"
	fi
}

# Does the installed flock(1) know OPTION (with the rest of a working
# command line after it)?  2.38 knows neither --fcntl nor --fd.
flock_knows() {
	"$FLOCK" "$@" > /dev/null 2>&1
}
exec 5<>probe.lock
flock_knows --fcntl -n probe.lock true && FLOCK_FCNTL=1 || FLOCK_FCNTL=0
flock_knows --fd 5 true && FLOCK_FD=1 || FLOCK_FD=0
exec 5<&-

# same_or_ours KNOWN WANT RAN WHAT -- ARGS...: both if KNOWN is 1, else
# ours, with util-linux's expected status.
same_or_ours() {
	local known=$1
	shift
	if [ "$known" = 1 ]; then
		both "$@"
	else
		ours "$@"
	fi
}

# holds COMMAND...: COMMAND x.lock sleep 300 in a process group of its
# own, which stop_holder ends (flock(1) passes no signal on to its
# command, whose descriptor holds the lock); returns once it holds.
holds() {
	bg_peer "$@" x.lock sleep 300
	holder=$LAST
	wait_until held x.lock
}

stop_holder() {
	kill -TERM -- "-$holder"
	wait "$holder"
}

# spellings ROUND KNOWN HOLDER...: the spellings against a shared holder,
# as util-linux's suite runs them; KNOWN: 1 if the installed flock(1)
# knows the round's options.
spellings() {
	local round=$1 known=$2 api=()
	shift 2
	[ "$round" = fcntl ] && api=(--fcntl)
	holds "$@"

	same_or_ours "$known" 123 0 "$round: --nonblocking -E 123" -- \
		"${api[@]}" --nonblocking --conflict-exit-code 123 x.lock touch ran
	same_or_ours "$known" 123 0 "$round: --nonblock -E 123 (as 2.38.1's suite spells it)" -- \
		"${api[@]}" --nonblock --conflict-exit-code 123 x.lock touch ran
	same_or_ours "$known" 123 0 "$round: --no-fork --nonblocking -E 123" -- \
		"${api[@]}" --no-fork --nonblocking --conflict-exit-code 123 x.lock touch ran
	same_or_ours "$known" 123 0 "$round: -F -n -E 123" -- \
		"${api[@]}" -F -n -E 123 x.lock touch ran
	same_or_ours "$known" 0 1 "$round: --shared joins the shared holder" -- \
		"${api[@]}" --shared x.lock touch ran
	same_or_ours "$known" 123 0 "$round: --nb --exclusive -E 123" -- \
		"${api[@]}" --nb --exclusive --conflict-exit-code 123 x.lock touch ran
	same_or_ours "$known" 123 0 "$round: -e -n -E 123" -- \
		"${api[@]}" -e -n -E 123 x.lock touch ran
	same_or_ours "$known" 5 0 "$round: --wait 0.3 -E 5 times out" -- \
		"${api[@]}" --wait 0.3 -E 5 x.lock touch ran
	same_or_ours "$known" 5 0 "$round: --timeout 0.3 -E 5 times out" -- \
		"${api[@]}" --timeout 0.3 -E 5 x.lock touch ran
	same_or_ours "$known" 9 0 "$round: -w 0 is -n" -- \
		"${api[@]}" -w 0 -E 9 x.lock touch ran

	# The descriptor form: the shell opened the file on 4.
	exec 4<>x.lock
	same_or_ours "$known" 123 0 "$round: --nonblocking --exclusive -E 123 4" -- \
		"${api[@]}" --nonblocking --exclusive --conflict-exit-code 123 4
	[ ! -e 4 ] || fail "$round: a file named 4 was made"
	same_or_ours "$known" 123 0 "$round: -x -n -E 123 4" -- \
		"${api[@]}" -x -n -E 123 4
	same_or_ours "$known" 1 0 "$round: -e -n 4" -- "${api[@]}" -e -n 4

	# Waiting: both tools wait for the holder, then run.
	waiters "$known" "$round" "${api[@]}" --timeout 60 --conflict-exit-code 5
	exec 4<&-
}

# waiters KNOWN ROUND OPTION...: flock(1) (if KNOWN) and pidlock wait for
# the holder with OPTION...; once it is gone, each runs its command.
waiters() {
	local known=$1 round=$2 wf="" wp
	shift 2
	rm -f ran.flock ran.pidlock
	if [ "$known" = 1 ]; then
		"$FLOCK" "$@" x.lock touch ran.flock &
		wf=$!
		track $wf
	fi
	"$PIDLOCK" "$@" x.lock touch ran.pidlock &
	wp=$!
	track $wp
	sleep 0.3
	gone $wp && fail "$round: pidlock $* did not wait for the holder"
	[ ! -e ran.pidlock ] || fail "$round: pidlock ran while the holder held"
	stop_holder
	wait $wp || fail "$round: pidlock $*: exit $? after the holder left"
	[ -e ran.pidlock ] || fail "$round: pidlock $* did not run the command"
	if [ -n "$wf" ]; then
		wait $wf || fail "$round: flock $*: exit $? after the holder left"
		[ -e ran.flock ] || fail "$round: flock $* did not run the command"
	fi
	pass "$round: $* waits for the holder, then runs"
}

# --- util-linux 2.38.1 misc/flock and the flock(2) round of flock/flock ------
spellings "flock(1) holds" 1 "$FLOCK" --shared
spellings "pidlock holds" 1 "$PIDLOCK" --shared
# --- the fcntl(2) round of flock/flock ----------------------------------------
spellings fcntl "$FLOCK_FCNTL" "$PIDLOCK" --fcntl --shared

# fcntl-vs-flock: flock(1) takes the families as two locks; pidlock's
# lock is one, whichever kernel locks it takes, and a holder of either
# keeps every pidlock out (pidlock(1): --fcntl-only).
holds "$PIDLOCK" --fcntl --shared
run_as "$FLOCK" flock 0 1 "fcntl-vs-flock" -n -x x.lock touch ran
pass "fcntl-vs-flock: flock(1)'s flock(2) lock is not kept out by an OFD read lock"
ours 1 0 "fcntl-vs-flock: pidlock without --fcntl is kept out (one lock)" -- \
	--nonblock --exclusive x.lock touch ran
grep -q 'lock is busy' err.pidlock || fail "fcntl-vs-flock: $(cat err.pidlock)"
stop_holder

# --- -n wins over -w, whichever comes first -----------------------------------
holds "$FLOCK"
for order in "-n -w 300" "-w 300 -n"; do
	for prog in "$FLOCK" "$PIDLOCK"; do
		# shellcheck disable=SC2086
		"$prog" $order -E 7 x.lock touch ran 2>/dev/null &
		p=$!
		track $p
		wait_until gone $p
		wait $p
		rc=$?
		[ $rc -eq 7 ] || fail "$(basename "$prog") $order: exit $rc, expected 7"
	done
	pass "$order: -n wins: flock(1) and pidlock exit 7 without waiting for the holder"
done

# --- the busy message: ours, on standard error only; -q silences it -----------
both 1 0 "-n, busy" -- -n x.lock touch ran
[ ! -s err.flock ] || fail "flock(1) said: $(cat err.flock)"
grep -q '^pidlock: x.lock: lock is busy, held by ' err.pidlock ||
	fail "the busy message: $(cat err.pidlock)"
[ ! -s out.pidlock ] || fail "the busy message went to standard output"
pass "busy: flock(1) is silent, pidlock names the holder on standard error"
ours 0 0 "-q, busy: silent, the command not run" -- -q x.lock touch ran
[ ! -s err.pidlock ] && [ ! -s out.pidlock ] || fail "-q said: $(cat err.pidlock)"
stop_holder

# --- flock/unlock: -x -n --verbose FD, --unlock FD, -x --wait 0 --verbose ------
for prog in "$FLOCK" "$PIDLOCK"; do
	name=$(basename "$prog")
	exec 10<>"u.$name"
	"$prog" --exclusive --nonblock --verbose 10 > "out.$name" 2> "err.$name" ||
		fail "$name --exclusive --nonblock --verbose 10: exit $?"
	"$prog" --unlock 10 || fail "$name --unlock 10: exit $?"
	"$prog" --exclusive --wait 0 --verbose "u.$name" true \
		>> "out.$name" 2>> "err.$name" ||
		fail "$name --exclusive --wait 0 --verbose LOCKFILE true: exit $?"
	exec 10<&-
	pass "$name: -x -n --verbose FD, --unlock FD, -x --wait 0 --verbose LOCKFILE"
done
# --verbose: flock(1) reports on standard output, pidlock on standard error.
grep -q 'getting lock took' out.flock || fail "flock --verbose: $(cat out.flock)"
[ ! -s out.pidlock ] || fail "pidlock --verbose wrote to standard output: $(cat out.pidlock)"
grep -q 'locked through descriptor 10' err.pidlock &&
	grep -q 'locked after' err.pidlock ||
	fail "pidlock --verbose: $(cat err.pidlock)"
pass "--verbose: pidlock reports on standard error, not in the command's output"

# --- descriptors: -s, -u while another holds, a descriptor not open ------------
exec 4<>x.lock
both 0 0 "-x -n 4, nobody holds" -- -x -n 4
both 0 0 "-u 4" -- -u 4
run_as "$FLOCK" flock 0 0 "-s -n 4" -s -n 4
ours 64 0 "-s -n 4: a shared lock on a descriptor is refused" -- -s -n 4
grep -q -- '--shared cannot lock a descriptor.*pidlock -s LOCKFILE COMMAND' err.pidlock ||
	fail "-s 4: $(cat err.pidlock)"
"$FLOCK" -u 4
ours 0 0 "-s -x -n 4: the last of -s and -x counts" -- -s -x -n 4
ours 0 0 "-u 4" -- -u 4
holds "$PIDLOCK"
run_as "$FLOCK" flock 0 0 "-u 4 while another process holds" -u 4
ours 1 0 "-u 4 while another process holds: 1, it did not hold" -- -u 4
grep -q 'does not hold the lock' err.pidlock || fail "-u 4: $(cat err.pidlock)"
ours 0 0 "-E 0 -u 4 while another process holds: flock(1)'s 0" -- -E 0 -u 4
held x.lock || fail "-u 4 of a non-holder let the holder's lock go"
pass "-u 4 of a non-holder: the holder still holds"
stop_holder
exec 4<&-
exec 87<&-
both 65 0 "-n 87, 87 not open" -- -n 87
both 65 0 "-x -n 87, 87 not open" -- -x -n 87
both 65 0 "-u 87, 87 not open" -- -u 87
same_or_ours "$FLOCK_FD" 65 0 "--fd 87 touch ran, 87 not open" -- --fd 87 touch ran

# A descriptor above 1023, which bash opens where the limit of open files
# allows it, as flock(1) takes it.
(
	ulimit -n 4096 2>/dev/null || exit 77
	exec 2000<>big.lock || exit 78
	"$PIDLOCK" -n 2000 || exit 1
	"$FLOCK" -n big.lock true && exit 2
	exit 0
)
case $? in
0) pass "pidlock -n 2000 locks descriptor 2000" ;;
77) pass "descriptor 2000: not checked, the limit of open files stays below" ;;
*) fail "pidlock -n 2000 did not lock descriptor 2000" ;;
esac

# --- flock/close: --fd FD --command, with and without --close ----------------
exec 10<>c.lock
for prog in "$FLOCK" "$PIDLOCK"; do
	name=$(basename "$prog")
	[ "$name" = pidlock ] || [ "$FLOCK_FD" = 1 ] || continue
	expect 65 "$name -x --close --fd 10 --command: the command has no 10" -- \
		"$prog" --exclusive --close --fd 10 --command \
		"$prog --exclusive --nonblock --fd 10 true"
	expect 0 "$name -x --fd 10 --command: the command shares the lock" -- \
		"$prog" --exclusive --fd 10 --command \
		"$prog --exclusive --nonblock --fd 10 true"
done
# The lock stays with the shell's descriptor after the command.
expect 0 "pidlock --fd 10 COMMAND ARG" -- "$PIDLOCK" --fd 10 sh -c 'exit "$0"' 0
[ "$(field c.lock pid)" = $$ ] || fail "--fd 10: the record names $(field c.lock pid), not the shell $$"
expect 1 "after --fd 10 COMMAND, the shell still holds: flock -n fails" -- \
	"$FLOCK" -n c.lock true
expect 3 "--fd 10: the command's exit status" -- \
	"$PIDLOCK" --fd 10 sh -c 'exit 3'
expect 0 "--fd 10 -- COMMAND" -- "$PIDLOCK" --fd 10 -- true
"$PIDLOCK" --fd 10 -F sh -c 'echo $$ > exec.pid' &
p=$!
wait $p || fail "--fd 10 -F: exit $?"
[ "$(cat exec.pid)" = "$p" ] || fail "--fd 10 -F: the command ran as $(cat exec.pid), pidlock was $p"
pass "--fd 10 -F: the command runs in pidlock's place"
"$PIDLOCK" -u 10
exec 10<&-
# -F with a descriptor: the record names the shell, and the close of its
# descriptor, at its exit, is the release (release=exit), as with every
# lock on a shell's descriptor: the file reads free, not abandoned.
bash -c 'exec 10<>c.lock; "$0" --fd 10 -F true; echo $$ > shell.pid' "$PIDLOCK" ||
	fail "bash: --fd 10 -F true"
[ "$(field c.lock pid)" = "$(cat shell.pid)" ] || fail "--fd -F: record: $(cat c.lock)"
[ "$(field c.lock release)" = exit ] || fail "--fd -F: no release=exit: $(cat c.lock)"
status_is c.lock 0 || fail "--fd -F: the shell's exit does not read as its release"
pass "--fd 10 -F: the record names the shell, with release=exit"

# --- -F and --no-fork: the command runs in pidlock's place -------------------
for opt in -F --no-fork --exec; do
	"$PIDLOCK" $opt y.lock sh -c 'echo $$ > exec.pid' &
	p=$!
	wait $p || fail "$opt: exit $?"
	[ "$(cat exec.pid)" = "$p" ] || fail "$opt: the command ran as $(cat exec.pid), pidlock was $p"
	pass "$opt: the command runs in pidlock's place"
done
both 64 0 "-F with -o: refused" -- -F -o y.lock touch ran

# --- other spellings ----------------------------------------------------------
both 0 1 "--wait 5 on a free lock" -- --wait 5 y.lock touch ran
both 0 1 "-x, -e, -s on a free lock" -- -x -e -s y.lock touch ran
both 0 1 "-o, --close" -- -o --close y.lock touch ran
both 0 1 "LOCKFILE -c" -- y.lock -c 'touch ran'
both 0 1 "LOCKFILE --command" -- y.lock --command 'touch ran'
same_or_ours "$FLOCK_FCNTL" 0 1 "--fcntl on a free lock" -- --fcntl y.lock touch ran
exec 11<>y.lock
same_or_ours "$FLOCK_FD" 0 1 "--fd 11 -c" -- --fd 11 -c 'touch ran'
same_or_ours "$FLOCK_FD" 0 1 "--fd 11 --command" -- --fd 11 --command 'touch ran'
"$PIDLOCK" -u 11
exec 11<&-

# --- differences pidlock(1) lists --------------------------------------------
# -c runs /bin/sh, whatever SHELL says.
SHELL=/bin/false expect 3 "pidlock -c: /bin/sh, not \$SHELL" -- \
	"$PIDLOCK" y.lock -c 'exit 3'
# A directory is no lock file for pidlock: 66.
mkdir d
both_dir() {
	run_as "$FLOCK" flock 0 1 "a directory" -n d touch ran
	ours 66 0 "a directory: refused" -- -n d touch ran
}
both_dir
# A file with other data in it (the script that locks itself): 65, the
# file untouched.
printf '#!/bin/sh\necho hello\n' > script
cp script script.orig
run_as "$FLOCK" flock 0 1 "a file with data" -n script touch ran
ours 65 0 "a file with data: refused, nothing changed" -- -n script touch ran
cmp -s script script.orig || fail "pidlock changed the script"
# Create the file, then lock it (the manual's advice for a path shared
# with flock(1)).
: > f.lock
both 0 1 "': > f.lock', then -w 10 f.lock" -- -w 10 f.lock touch ran
: > g.lock
both 0 1 "': > g.lock', then -n g.lock" -- -n g.lock touch ran
done_testing
