# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers for the pidlock(1) tests; sourced by each tests/cli/*.sh.
# The harness runs the tests from the top build directory.

set -u

PIDLOCK=${PIDLOCK:-$PWD/tools/pidlock}
CLI_SRCDIR=$(cd "$(dirname "$0")" && pwd)
TOP_SRCDIR=$(cd "$CLI_SRCDIR/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/pidlock-cli.XXXXXX") || exit 99
# expect's copy of its command's stderr; outside $T, which tests list.
EXPECT_ERR=$T.stderr
BG=""
CHECKS=0

if [ ! -x "$PIDLOCK" ]; then
	echo "no pidlock at $PIDLOCK; build it first" >&2
	exit 99
fi

cleanup() {
	for p in $BG; do
		kill -KILL -- "-$p" "$p" 2>/dev/null
	done
	for f in "$T"/*.cmdpid "$T"/pids/*.cmdpid; do
		[ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
	done
	rm -rf "$T" "$EXPECT_ERR"
}
trap cleanup EXIT

# Says why on stderr, and on stdout too when stderr goes elsewhere (a
# caller's "2> file" around expect, or expect's own capture when a shell
# function it runs fails), so that the log always holds the reason.
fail() {
	local me=$BASHPID out err
	echo "FAIL: $*" >&2
	out=$(stat -L -c %d:%i "/proc/$me/fd/1" 2>/dev/null)
	err=$(stat -L -c %d:%i "/proc/$me/fd/2" 2>/dev/null)
	[ "$out" = "$err" ] || echo "FAIL: $*"
	exit 1
}

pass() {
	CHECKS=$((CHECKS + 1))
	echo "ok $CHECKS - $*"
}

done_testing() {
	echo "# $CHECKS checks passed"
	exit 0
}

# expect RC DESCRIPTION -- COMMAND...: run it, compare the exit status.
# The command's stderr is kept aside: passed on to expect's own stderr
# (the log, or a caller's "2> file") when the status is the one wanted,
# and part of the failure's message when it is not.
expect() {
	local want=$1 what=$2 rc
	shift 3
	"$@" 2> "$EXPECT_ERR"
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		[ -s "$EXPECT_ERR" ] || echo "(nothing)" > "$EXPECT_ERR"
		fail "$what: exit status $rc, expected $want;" \
			"$1 said on stderr: $(cat "$EXPECT_ERR")"
	fi
	cat "$EXPECT_ERR" >&2
	pass "$what"
}

# A peer that holds until it is told to let go, not for a while that a
# loaded machine may outlast: in an sh -c script, "$SH_WAIT_FOR; wait_for
# FILE" returns once FILE exists (touch it to tell), or exits 3 after a
# minute, so that a broken test still ends (and says why).
SH_WAIT_FOR='wait_for() {
	i=0
	while [ ! -e "$1" ]; do
		i=$((i + 1))
		[ "$i" -le 1200 ] || { echo "no $1 after a minute" >&2; exit 3; }
		sleep 0.05
	done
}'
# The same in the test's own subshells: ( ...; wait_for FILE; ... ) &
eval "$SH_WAIT_FOR"

# Remember a background process for cleanup.
track() {
	BG="$BG $1"
}

# wait_until COMMAND...: poll for up to 10 s.
wait_until() {
	local i
	for i in $(seq 200); do
		"$@" && return 0
		sleep 0.05
	done
	fail "timed out waiting for: $*"
}

status_is() {
	"$PIDLOCK" --status "$1" >/dev/null 2>&1
	[ $? -eq "$2" ]
}

held() {
	status_is "$1" 1
}

# Gone, or a zombie nobody reaps (our reparented processes).
gone() {
	[ ! -e "/proc/$1" ] || grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null
}

# key=value from a lock file
field() {
	sed -n "s/^$2=//p" "$1" | tail -n 1
}

# The system's python3 starts faster than a version manager's shim.
if [ -x /usr/bin/python3 ]; then
	PYTHON=/usr/bin/python3
else
	PYTHON=python3
fi

# json_flat FILE: parse FILE as JSON (strict UTF-8) into FILE.flat, one
# "N.key=value" line per key of lock object N; strings raw, the rest JSON.
json_flat() {
	"$PYTHON" -c '
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
for i, l in enumerate(d["locks"]):
    for k, v in l.items():
        print("%d.%s=%s" % (i, k, v if isinstance(v, str) else json.dumps(v)))
' "$1" > "$1.flat" || fail "not valid JSON: $(cat "$1")"
}

# jv FILE N KEY: a value from FILE.flat
jv() {
	sed -n "s/^$2\.$3=//p" "$1.flat"
}

# status_json ARGS...: pidlock --status --json ARGS > j, parsed; the exit
# status in JRC.
status_json() {
	"$PIDLOCK" --status --json "$@" > j
	JRC=$?
	json_flat j
}

# A pid that certainly names no process: a child that has been reaped.
dead_pid() {
	sh -c 'exit 0' &
	local p=$!
	wait "$p"
	echo "$p"
}

# A spec-only lock made the way shell spec lockers make it: noclobber
# (O_EXCL) create, then pid= and timestamp=.
spec_lock() {
	( set -C; printf 'pid=%s\ntimestamp=%s\n' "$2" "$3" > "$1" )
}

# Start pidlock in the background with the signals it forwards at their
# defaults (a non-interactive shell ignores SIGINT and SIGQUIT in
# background jobs; nohup, or a CI runner, may have SIGHUP ignored, which
# pidlock would then rightly not forward), in a process group of its own
# so that cleanup reaches its command too.
start_bg() {
	setsid env --default-signal=INT,QUIT,HUP,USR1,USR2,TERM "$PIDLOCK" "$@" &
	LAST=$!
	track "$LAST"
}

# crash_holder LOCKFILE PIDFILE: pidlock holding LOCKFILE for a command
# that writes its pid to PIDFILE, then both killed with SIGKILL, as a
# crash leaves them: no release, the file as it was.  LAST is pidlock's
# pid; returns once both are gone.
crash_holder() {
	start_bg "$1" sh -c 'echo $$ > "$0"; exec sleep 30' "$2"
	wait_until test -s "$2"
	kill -KILL "$LAST" "$(cat "$2")"
	wait "$LAST" 2>/dev/null
	wait_until gone "$(cat "$2")"
}

# bg_peer COMMAND...: a peer locker in the background, cleaned up likewise.
bg_peer() {
	setsid "$@" &
	LAST=$!
	track "$LAST"
}

# A test that acts as a second user (nobody) and gives files away: root
# (not fakeroot) and setpriv(1), or it is skipped (77).
need_second_user() {
	if [ "$(id -u)" -ne 0 ] || [ -n "${FAKEROOTKEY:-}" ]; then
		echo "SKIP: needs root to act as a second user" >&2
		exit 77
	fi
	command -v setpriv >/dev/null ||
		fail "setpriv (util-linux) is not installed"
}

# shim_preload: sets SHIM to what LD_PRELOAD needs for the fault shim
# (tests/fault/faultshim.c), with a sanitizer's runtimes first where the
# build has them (make check-asan: a program built with AddressSanitizer
# aborts unless its runtime comes first); exits 99 if it is not built.
shim_preload() {
	SHIM=$PWD/tests/fault/.libs/libfaultshim.so
	[ -f "$SHIM" ] || { echo "no $SHIM: make check builds it" >&2; exit 99; }
	case "${SAN_CFLAGS:-}" in
	*address*)
		for rt in libubsan.so libasan.so; do
			f=$(${PY_TEST_CC:-cc} -print-file-name=$rt)
			[ "$f" = "$rt" ] || SHIM="$f $SHIM"
		done
		# The shell commands run with them too.
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
		export ASAN_OPTIONS
		;;
	esac
}
