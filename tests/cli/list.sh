#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# --list: the lock files of a directory with their states.
. "$(dirname "$0")/lib.sh"
mkdir "$T/d" && cd "$T/d" || exit 99

start_bg --tag job held.lock sleep 30
held_pid=$LAST
bg_peer flock flock.lock sleep 30
spec_lock spec.lock $$ "$(date +%s)"
spec_lock stale.lock "$(dead_pid)" $(( $(date +%s) - 600 ))
start_bg dead.lock sh -c "echo \$\$ > $T/dead.cmdpid; exec sleep 30"
dead=$LAST
wait_until test -s "$T/dead.cmdpid"
kill -KILL "$dead" "$(cat "$T/dead.cmdpid")"
wait "$dead" 2>/dev/null
echo "some notes" > notes.txt
touch -d '1 hour ago' notes.txt
mkdir subdir.lock
ln -s held.lock link.lock
wait_until held held.lock
wait_until held flock.lock
wait_until gone "$(cat "$T/dead.cmdpid")"

"$PIDLOCK" --list --stale 60 --json . > "$T/j"
[ $? -eq 0 ] || fail "--list exit status"
json_flat "$T/j"
names=""
for i in 0 1 2 3 4 5; do
	names="$names $(jv "$T/j" $i path):$(jv "$T/j" $i state)"
done
[ "$names" = " ./dead.lock:abandoned ./flock.lock:held ./held.lock:held ./notes.txt:not-a-lock-file ./spec.lock:held-spec ./stale.lock:stale" ] ||
	fail "--list found:$names"
[ -z "$(jv "$T/j" 6 path)" ] || fail "--list found more: $(cat "$T/j")"
pass "--list --json: files of every kind with their states, sorted"
pass "--list shows a text file as not-a-lock-file, leaves out directories and symbolic links"
[ "$(jv "$T/j" 3 pid)" = null ] && [ "$(jv "$T/j" 3 pid_alive)" = null ] &&
	[ "$(jv "$T/j" 3 exit_status)" = 65 ] || fail "--list notes.txt: $(cat "$T/j")"
pass "--list --json: notes.txt has no pid and exit status 65"
[ "$(jv "$T/j" 2 pid)" = "$held_pid" ] && [ "$(jv "$T/j" 2 tag)" = job ] &&
	[ "$(jv "$T/j" 2 pid_alive)" = true ] || fail "--list held.lock: $(cat "$T/j")"
pass "--list --json has the same keys as --status"

"$PIDLOCK" --list --stale 60 "$T/d/" > "$T/out" || fail "--list text exit status"
head -n 1 "$T/out" | grep -q '^NAME *STATE *PID *ALIVE *LOCKS *SINCE *TAG$' ||
	fail "--list header: $(head -n 1 "$T/out")"
[ "$(sed 1d "$T/out" | awk '{print $1 ":" $2}' | tr '\n' ' ')" = \
  "dead.lock:abandoned flock.lock:held held.lock:held notes.txt:not-a-lock-file spec.lock:held-spec stale.lock:stale " ] ||
	fail "--list text: $(cat "$T/out")"
grep -q "^held.lock *held *$held_pid *yes *flock,fcntl .* job$" "$T/out" ||
	fail "--list held.lock row: $(grep held.lock "$T/out")"
pass "--list: a table, one row per lock file"

# A -F run SIGKILLed: its exit was its release, the file is free, and
# free names nobody in the table as in --status --json (pid null).
mkdir "$T/f" && cd "$T/f" || exit 99
"$PIDLOCK" -F exec.lock sleep 30 &
p=$!
wait_until held exec.lock
kill -KILL "$p"
wait "$p" 2>/dev/null
"$PIDLOCK" --list . > "$T/out3" || fail "--list after -F"
grep -q '^exec.lock *free *- *- *none *- *$' "$T/out3" ||
	fail "--list of a SIGKILLed -F run: $(cat "$T/out3")"
[ "$("$PIDLOCK" --status --json exec.lock | tr ',' '\n' | grep '"pid":')" = ' "pid": null' ] ||
	fail "--status --json of it: $("$PIDLOCK" --status --json exec.lock)"
pass "--list and --status --json agree: a free file names nobody"
cd "$T/d" || exit 99

mkdir "$T/empty"
"$PIDLOCK" --list --json "$T/empty" > "$T/j2" || fail "empty directory"
json_flat "$T/j2"
[ ! -s "$T/j2.flat" ] || fail "empty directory lists: $(cat "$T/j2")"
pass "an empty directory lists nothing"
expect 66 "--list of a missing directory" -- "$PIDLOCK" --list "$T/none"
expect 66 "--list of a file" -- "$PIDLOCK" --list notes.txt
done_testing
