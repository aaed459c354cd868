#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# --status against every kind of holder, in text and in JSON checked by
# a real JSON parser; exit 0 free, 1 held, 2 abandoned or stale.
. "$(dirname "$0")/lib.sh"
cd "$T" || exit 99

# js KEY: a key of the first lock object of the last status_json
js() {
	jv j 0 "$1"
}

# Free
expect 0 "free: exit 0" -- "$PIDLOCK" --status free.lock
[ "$("$PIDLOCK" --status free.lock)" = "free.lock: free" ] || fail "free: text"
pass "free: says free"
status_json free.lock
[ "$(js state)" = free ] && [ "$(js pid)" = null ] &&
	[ "$(js exit_status)" = 0 ] || fail "free: $(cat j)"
pass "free: JSON"
expect 66 "a missing directory is an error, not free" -- \
	"$PIDLOCK" --status nodir/x.lock

# A live pidlock holder
start_bg --tag 'backup "db"' live.lock sleep 30
live=$LAST
wait_until held live.lock
"$PIDLOCK" --status live.lock > out
[ $? -eq 1 ] || fail "live: exit status"
pass "live holder: exit 1"
grep -q '^live.lock: held' out || fail "live: $(cat out)"
grep -q "pid: *$live (running)" out || fail "live: pid: $(cat out)"
grep -q 'tag: *backup "db"' out || fail "live: tag: $(cat out)"
grep -q 'since: *[0-9-]* [0-9:]* [-+][0-9]* ([0-9]* s ago)' out || fail "live: since: $(cat out)"
grep -q 'kernel: *flock,fcntl' out || fail "live: kernel: $(cat out)"
pass "live holder: state, pid alive, tag, since when, kernel locks"
status_json live.lock
[ "$(js state)" = held ] || fail "live JSON state: $(js state)"
[ "$(js pid)" = "$live" ] && [ "$(js pid_alive)" = true ] || fail "live JSON pid: $(cat j)"
[ "$(js tag)" = 'backup "db"' ] || fail "live JSON tag: $(js tag)"
[ "$(js kernel_locks)" = '["flock", "fcntl"]' ] || fail "live JSON kernel: $(cat j)"
[ "$(js marker)" = '["flock", "fcntl"]' ] || fail "live JSON marker: $(cat j)"
[ "$(js kernel_pid)" = "$live" ] || fail "live JSON kernel_pid: $(cat j)"
[ "$(js exit_status)" = 1 ] || fail "live JSON exit_status: $(cat j)"
ts=$(field live.lock timestamp)
[ "$(js timestamp)" = "$ts" ] || fail "live JSON timestamp"
[ "$(js since)" = "$(date -u -d "@$ts" +%Y-%m-%dT%H:%M:%SZ)" ] || fail "live JSON since: $(js since)"
age=$(js age)
[ "$age" -ge 0 ] && [ "$age" -le 30 ] || fail "live JSON age: $age"
[ "$(js error)" = null ] || fail "live JSON error"
pass "live holder: JSON"

# A spec-only holder: a file made with noclobber, no kernel lock.
spec_lock spec.lock $$ "$(date +%s)"
expect 1 "spec-only holder: exit 1" -- "$PIDLOCK" --status spec.lock
status_json spec.lock
[ "$(js state)" = held-spec ] && [ "$(js pid)" = $$ ] &&
	[ "$(js pid_alive)" = true ] && [ "$(js kernel_locks)" = '[]' ] &&
	[ "$(js marker)" = '[]' ] || fail "spec-only: $(cat j)"
pass "spec-only holder: held-spec, its pid, no kernel lock"
"$PIDLOCK" --status spec.lock | grep -q '^spec.lock: held-spec' || fail "spec text"
pass "spec-only holder: text"

# An old spec-only file whose process is gone: stale beyond --stale.
dead=$(dead_pid)
spec_lock old.lock "$dead" $(( $(date +%s) - 120 ))
expect 2 "old spec-only file, dead pid, --stale 60: exit 2" -- \
	"$PIDLOCK" --status --stale 60 old.lock
"$PIDLOCK" --status --stale 60 old.lock | grep -q '^old.lock: stale' || fail "stale text"
pass "it says stale"
expect 1 "the same file within the default stale timeout is held" -- \
	"$PIDLOCK" --status old.lock
spec_lock oldlive.lock $$ $(( $(date +%s) - 120 ))
expect 1 "an old spec-only file whose process lives is held" -- \
	"$PIDLOCK" --status --stale 60 oldlive.lock

# A crashed holder: SIGKILL pidlock and its command.
crash_holder crash.lock crash.cmdpid
crash=$LAST
expect 2 "crashed holder's file: exit 2" -- "$PIDLOCK" --status crash.lock
status_json crash.lock
[ "$(js state)" = abandoned ] && [ "$(js pid)" = "$crash" ] &&
	[ "$(js pid_alive)" = false ] && [ "$(js kernel_locks)" = '[]' ] &&
	[ "$(js marker)" = '["flock", "fcntl"]' ] || fail "crashed: $(cat j)"
pass "crashed holder: abandoned, pid gone, no kernel lock"

# Peers that only hold kernel locks.
bg_peer flock flock.lock sleep 30
fl=$LAST
wait_until held flock.lock
status_json flock.lock
[ "$JRC" -eq 1 ] || fail "flock(1) holder: exit status"
[ "$(js state)" = held ] && [ "$(js kernel_locks)" = '["flock"]' ] &&
	[ "$(js kernel_pid)" = "$fl" ] && [ "$(js pid)" = null ] ||
	fail "flock(1) holder: $(cat j)"
pass "flock(1) holder: held, flock, the kernel's pid"
bg_peer with-lock-ex -w wle.lock sleep 30
wait_until held wle.lock
status_json wle.lock
[ "$(js state)" = held ] && [ "$(js kernel_locks)" = '["fcntl"]' ] ||
	fail "with-lock-ex holder: $(cat j)"
pass "with-lock-ex holder: held, fcntl"

# Several files: one document, in order; the exit status is the largest.
status_json free.lock live.lock crash.lock
[ "$JRC" -eq 2 ] || fail "several: exit status"
[ "$(jv j 0 state) $(jv j 1 state) $(jv j 2 state)" = "free held abandoned" ] ||
	fail "several: $(cat j)"
pass "several files: one JSON document, exit status the largest"
expect 1 "free and held: 1" -- "$PIDLOCK" --status free.lock live.lock
"$PIDLOCK" --status free.lock live.lock crash.lock > out
[ "$(grep -c '^[a-z]*\.lock: ' out)" = 3 ] || fail "several: text: $(cat out)"
pass "several files: text"

# Errors
mkdir dir.lock
status_json dir.lock free.lock 2> err
[ "$JRC" -eq 66 ] || fail "a directory: exit status"
grep -q '^pidlock: dir.lock: Is a directory' err || fail "a directory: $(cat err)"
[ "$(js state)" = error ] && [ "$(js error)" = "Is a directory" ] &&
	[ "$(jv j 1 state)" = free ] || fail "a directory: $(cat j)"
pass "an error: its own state in JSON, a message, exit 66"

# Escaping: quotes, backslashes, newlines, non-ASCII, invalid UTF-8.
name=$'we"ird\\\nname\xff.lock'
start_bg --tag $'say "hi" \\ caf\xc3\xa9 \xe2\x9c\x93' "$name" sleep 30
wait_until held "$name"
"$PIDLOCK" --status --json "$name" > j
"$PYTHON" - j <<'PY' || fail "escaping: $(cat j)"
import json, sys
raw = open(sys.argv[1], "rb").read()
d = json.loads(raw.decode("utf-8"))        # strict: must be valid UTF-8
l = d["locks"][0]
assert l["path"] == 'we"ird\\\nname\ufffd.lock', repr(l["path"])
assert l["tag"] == 'say "hi" \\ caf\u00e9 \u2713', repr(l["tag"])
assert l["state"] == "held"
assert sorted(l) == sorted(["path", "state", "exit_status", "pid",
    "pid_alive", "timestamp", "since", "age", "tag", "kernel_locks",
    "kernel_pid", "mode", "holders", "holder_pids", "holder_hidden",
    "marker", "mtime", "error", "host", "foreign"]), sorted(l)
PY
pass "JSON escaping holds for quotes, backslashes, newlines, UTF-8, bad bytes"
"$PIDLOCK" --status "$name" | head -n 1 | LC_ALL=C grep -q '^we"ird\\?name.*\.lock: held' ||
	fail "text output lets control characters through"
pass "text output shows control characters as ?"
"$PYTHON" -m json.tool j > /dev/null || fail "json.tool rejects the output"
pass "python3 -m json.tool accepts it"
done_testing
